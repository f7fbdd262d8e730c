// NIST P-256 (secp256r1; FIPS 186-5, SEC 2 §2.4.2) parameters for the generic field and curve
// templates.
#pragma once
#include "bc/ecmult.cuh"

namespace bc::p256 {

static __device__ __constant__ uint32_t P_MOD[8] = {0xffffffff, 0xffffffff, 0xffffffff, 0x00000000, 0x00000000, 0x00000000, 0x00000001, 0xffffffff};
static __device__ __constant__ uint32_t P_R2[8] = {0x00000003, 0x00000000, 0xffffffff, 0xfffffffb, 0xfffffffe, 0xffffffff, 0xfffffffd, 0x00000004};
static __device__ __constant__ uint32_t N_MOD[8] = {0xfc632551, 0xf3b9cac2, 0xa7179e84, 0xbce6faad, 0xffffffff, 0xffffffff, 0x00000000, 0xffffffff};
static __device__ __constant__ uint32_t N_R2[8] = {0xbe79eea2, 0x83244c95, 0x49bd6fa6, 0x4699799c, 0x2b6bec59, 0x2845b239, 0xf3d95620, 0x66e12d94};
static __device__ __constant__ uint32_t B[8] = {0x27d2604b, 0x3bce3c3e, 0xcc53b0f6, 0x651d06b0, 0x769886bc, 0xb3ebbd55, 0xaa3a93e7, 0x5ac635d8};
static __device__ __constant__ uint32_t G_X[8] = {0xd898c296, 0xf4a13945, 0x2deb33a0, 0x77037d81, 0x63a440f2, 0xf8bce6e5, 0xe12c4247, 0x6b17d1f2};
static __device__ __constant__ uint32_t G_Y[8] = {0x37bf51f5, 0xcbb64068, 0x6b315ece, 0x2bce3357, 0x7c0f9e16, 0x8ee7eb4a, 0xfe1a7f9b, 0x4fe342e2};

// The base field in Montgomery form; p + 1 = 2^256 - 2^224 + 2^192 + 2^96, and -p^-1 = 1 mod 2^32,
// so it reduces by the sparse steps (bc/field.cuh).
struct FpParams {
    static BC_DEVICE const uint32_t* mod() { return P_MOD; }
    static BC_DEVICE const uint32_t* r2() { return P_R2; }
    static constexpr uint32_t INV = 0x00000001;
    static constexpr uint32_t PSEUDO_C0 = 0;
    static constexpr uint32_t SPARSE_ADD = (1u << 3) | (1u << 6) | (1u << 8), SPARSE_SUB = 1u << 7;
};

using Fp = bc::Fp<FpParams>;

// The scalar field, n = the group order (ECDSA's w = 1/s on the device).
struct FnParams {
    static BC_DEVICE const uint32_t* mod() { return N_MOD; }
    static BC_DEVICE const uint32_t* r2() { return N_R2; }
    static constexpr uint32_t INV = 0xee00bc4f;
    static constexpr uint32_t PSEUDO_C0 = 0;
};

using Fn = bc::Fp<FnParams>;

struct Curve {
    using F = Fp;
    static constexpr bool A_IS_ZERO = false;
    static constexpr bool A_IS_MINUS_3 = true;
    static BC_DEVICE F a() { return F::from_u32(3).neg(); }
    static BC_DEVICE F b() { return F::from_plain(B); }
    static BC_DEVICE Affine<Curve> generator() { return Affine<Curve>{F::from_plain(G_X), F::from_plain(G_Y)}; }
};

using Point = Jacobian<Curve>;
using PointAffine = Affine<Curve>;

}  // namespace bc::p256

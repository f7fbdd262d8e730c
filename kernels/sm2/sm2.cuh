// SM2 parameters (GB/T 32918.5, GM/T 0003.5) for the generic field and curve templates.
#pragma once
#include "bc/ecmult.cuh"
#include "bc/h2c.cuh"
#include "bc/sm3.cuh"

namespace bc::sm2 {

static __device__ __constant__ uint32_t P_MOD[8] = {0xffffffff, 0xffffffff, 0x00000000, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xfffffffe};
static __device__ __constant__ uint32_t P_R2[8] = {0x00000003, 0x00000002, 0xffffffff, 0x00000002, 0x00000001, 0x00000001, 0x00000002, 0x00000004};
static __device__ __constant__ uint32_t N_MOD[8] = {0x39d54123, 0x53bbf409, 0x21c6052b, 0x7203df6b, 0xffffffff, 0xffffffff, 0xffffffff, 0xfffffffe};
static __device__ __constant__ uint32_t N_R2[8] = {0x7c114f20, 0x901192af, 0xde6fa2fa, 0x3464504a, 0x3affe0d4, 0x620fc84c, 0xa22b3d3b, 0x1eb5e412};
static __device__ __constant__ uint32_t B[8] = {0x4d940e93, 0xddbcbd41, 0x15ab8f92, 0xf39789f5, 0xcf6509a7, 0x4d5a9e4b, 0x9d9f5e34, 0x28e9fa9e};
static __device__ __constant__ uint32_t G_X[8] = {0x334c74c7, 0x715a4589, 0xf2660be1, 0x8fe30bbf, 0x6a39c994, 0x5f990446, 0x1f198119, 0x32c4ae2c};
static __device__ __constant__ uint32_t G_Y[8] = {0x2139f0a0, 0x02df32e5, 0xc62a4740, 0xd0a9877c, 0x6b692153, 0x59bdcee3, 0xf4f6779c, 0xbc3736a2};

// The base field in Montgomery form; p + 1 = 2^256 - 2^224 - 2^96 + 2^64, and -p^-1 = 1 mod 2^32,
// so it reduces by the sparse steps (bc/field.cuh).
struct FpParams {
    static BC_DEVICE const uint32_t* mod() { return P_MOD; }
    static BC_DEVICE const uint32_t* r2() { return P_R2; }
    static constexpr uint32_t INV = 0x00000001;
    static constexpr uint32_t PSEUDO_C0 = 0;
    static constexpr uint32_t SPARSE_ADD = (1u << 2) | (1u << 8), SPARSE_SUB = (1u << 3) | (1u << 7);
};
// The scalar field, n = the group order.
struct FnParams {
    static BC_DEVICE const uint32_t* mod() { return N_MOD; }
    static BC_DEVICE const uint32_t* r2() { return N_R2; }
    static constexpr uint32_t INV = 0x72350975;
    static constexpr uint32_t PSEUDO_C0 = 0;
};

using Fp = bc::Fp<FpParams>;
using Fn = bc::Fp<FnParams>;

struct Curve {
    using F = Fp;
    static constexpr bool A_IS_ZERO = false;
    static constexpr bool A_IS_MINUS_3 = true;
    static BC_DEVICE F a() { return F::from_u32(3).neg(); }  // a = p - 3
    static BC_DEVICE F b() { return F::from_plain(B); }
    // Simplified SWU: Z = -9 (RFC 9380 Appendix H.2's search for SM2's a and b), and
    // sqrt(-Z^3) = sqrt(729) = 27.
    static BC_DEVICE F sswu_z() { return F::from_u32(9).neg(); }
    static BC_DEVICE F sswu_c2() { return F::from_u32(27); }
    static BC_DEVICE Affine<Curve> generator() { return Affine<Curve>{F::from_plain(G_X), F::from_plain(G_Y)}; }
};

using Point = Jacobian<Curve>;
using PointAffine = Affine<Curve>;

}  // namespace bc::sm2

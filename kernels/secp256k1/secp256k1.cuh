// secp256k1 parameters for the generic field and curve templates (SEC 2, §2.4.1).
#pragma once
#include "bc/curve.cuh"

namespace bc::secp256k1 {

static __device__ __constant__ uint32_t P_MOD[8] = {0xfffffc2f, 0xfffffffe, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff};
static __device__ __constant__ uint32_t P_R2[8] = {0x000e90a1, 0x000007a2, 0x00000001, 0, 0, 0, 0, 0};
static __device__ __constant__ uint32_t N_MOD[8] = {0xd0364141, 0xbfd25e8c, 0xaf48a03b, 0xbaaedce6, 0xfffffffe, 0xffffffff, 0xffffffff, 0xffffffff};
static __device__ __constant__ uint32_t N_R2[8] = {0x67d7d140, 0x896cf214, 0x0e7cf878, 0x741496c2, 0x5bcd07c6, 0xe697f5e4, 0x81c69bc5, 0x9d671cd5};
static __device__ __constant__ uint32_t G_X[8] = {0x16f81798, 0x59f2815b, 0x2dce28d9, 0x029bfcdb, 0xce870b07, 0x55a06295, 0xf9dcbbac, 0x79be667e};
static __device__ __constant__ uint32_t G_Y[8] = {0xfb10d4b8, 0x9c47d08f, 0xa6855419, 0xfd17b448, 0x0e1108a8, 0x5da4fbfc, 0x26a3c465, 0x483ada77};

// The base field, p = 2^256 - 2^32 - 977.
struct FpParams {
    static BC_DEVICE const uint32_t* mod() { return P_MOD; }
    static BC_DEVICE const uint32_t* r2() { return P_R2; }
    static constexpr uint32_t INV = 0xd2253531;
};
// The scalar field, n = the group order.
struct FnParams {
    static BC_DEVICE const uint32_t* mod() { return N_MOD; }
    static BC_DEVICE const uint32_t* r2() { return N_R2; }
    static constexpr uint32_t INV = 0x5588b13f;
};

using Fp = bc::Fp<FpParams>;
using Fn = bc::Fp<FnParams>;

struct Curve {
    using F = Fp;
    static constexpr bool A_IS_ZERO = true;
    static BC_DEVICE F a() { return F::zero(); }
    static BC_DEVICE F b() { return F::from_u32(7); }
    static BC_DEVICE Affine<Curve> generator() { return Affine<Curve>{F::from_plain(G_X), F::from_plain(G_Y)}; }
};

using Point = Jacobian<Curve>;
using PointAffine = Affine<Curve>;

}  // namespace bc::secp256k1

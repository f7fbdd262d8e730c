// secp256k1 parameters for the generic field and curve templates (SEC 2, §2.4.1).
#pragma once
#include "bc/ecmult.cuh"

namespace bc::secp256k1 {

static __device__ __constant__ uint32_t P_MOD[8] = {0xfffffc2f, 0xfffffffe, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff};
static __device__ __constant__ uint32_t N_MOD[8] = {0xd0364141, 0xbfd25e8c, 0xaf48a03b, 0xbaaedce6, 0xfffffffe, 0xffffffff, 0xffffffff, 0xffffffff};
static __device__ __constant__ uint32_t N_R2[8] = {0x67d7d140, 0x896cf214, 0x0e7cf878, 0x741496c2, 0x5bcd07c6, 0xe697f5e4, 0x81c69bc5, 0x9d671cd5};
static __device__ __constant__ uint32_t G_X[8] = {0x16f81798, 0x59f2815b, 0x2dce28d9, 0x029bfcdb, 0xce870b07, 0x55a06295, 0xf9dcbbac, 0x79be667e};
static __device__ __constant__ uint32_t G_Y[8] = {0xfb10d4b8, 0x9c47d08f, 0xa6855419, 0xfd17b448, 0x0e1108a8, 0x5da4fbfc, 0x26a3c465, 0x483ada77};

// The base field, p = 2^256 - 2^32 - 977: reduced by folding, not Montgomery.
struct FpParams {
    static BC_DEVICE const uint32_t* mod() { return P_MOD; }
    static constexpr uint32_t PSEUDO_C0 = 977;

    // p - 2 and (p + 1) / 4 are mostly blocks of ones (223, then 22 after one zero), so
    // libsecp256k1's addition chains over a^(2^k - 1) take 255 and 253 squarings with 15 and 13
    // products, where 4-bit windows take 78 products.
    static constexpr bool POW_CHAINS = true;
    // a^(2^223 - 1) shifted past the zero and the block of 22 ones; also a^3 and a^(2^22 - 1).
    template <class F>
    static BC_DEVICE F blocks(const F& a, F& x2, F& x22) {
        x2 = a.sqr() * a;
        F x3 = x2.sqr() * a;
        F x6 = sqr_n(x3, 3) * x3;
        F x9 = sqr_n(x6, 3) * x3;
        F x11 = sqr_n(x9, 2) * x2;
        x22 = sqr_n(x11, 11) * x11;
        F x44 = sqr_n(x22, 22) * x22;
        F x88 = sqr_n(x44, 44) * x44;
        F x176 = sqr_n(x88, 88) * x88;
        F x220 = sqr_n(x176, 44) * x44;
        F x223 = sqr_n(x220, 3) * x3;
        return sqr_n(x223, 23) * x22;
    }
    // a^(p-2): the low ten bits of p - 2 are 00 0010 1101.
    template <class F>
    static BC_DEVICE F inv(const F& a) {
        F x2, x22;
        F t = blocks(a, x2, x22);
        t = sqr_n(t, 5) * a;
        t = sqr_n(t, 3) * x2;
        return sqr_n(t, 2) * a;
    }
    // a^((p+1)/4): the low eight bits of (p + 1) / 4 are 0000 1100.
    template <class F>
    static BC_DEVICE F sqrt(const F& a) {
        F x2, x22;
        F t = blocks(a, x2, x22);
        t = sqr_n(t, 6) * x2;
        return sqr_n(t, 2);
    }
};
// GLV: lambda is a cube root of unity mod n with lambda (x, y) = (beta x, y), beta a cube root of
// unity mod p. A scalar k splits as k1 + lambda k2 with |k1|, |k2| < 2^128 (the constants of
// libsecp256k1's secp256k1_scalar_split_lambda: k1 = k - lambda k2, k2 = c1 (-b1) + c2 (-b2) with
// c1, c2 = k g1, k g2 / 2^384 rounded).
static __device__ __constant__ uint32_t BETA[8] = {0x719501ee, 0xc1396c28, 0x12f58995, 0x9cf04975, 0xac3434e9, 0x6e64479e, 0x657c0710, 0x7ae96a2b};
static __device__ __constant__ uint32_t MINUS_LAMBDA[8] = {0xb51283cf, 0xe0cfc810, 0x8ec739c2, 0xa880b9fc, 0x77ed9ba4, 0x5ad9e3fd, 0x3fa3cf1f, 0xac9c52b3};
static __device__ __constant__ uint32_t MINUS_B1[8] = {0x0abfe4c3, 0x6f547fa9, 0x010e8828, 0xe4437ed6, 0, 0, 0, 0};
static __device__ __constant__ uint32_t MINUS_B2[8] = {0x3db1562c, 0xd765cda8, 0x0774346d, 0x8a280ac5, 0xfffffffe, 0xffffffff, 0xffffffff, 0xffffffff};
static __device__ __constant__ uint32_t G1[8] = {0x45dbb031, 0xe893209a, 0x71e8ca7f, 0x3daa8a14, 0x9284eb15, 0xe86c90e4, 0xa7d46bcd, 0x3086d221};
static __device__ __constant__ uint32_t G2[8] = {0x8ac47f71, 0x1571b4ae, 0x9df506c6, 0x221208ac, 0x0abfe4c4, 0x6f547fa9, 0x010e8828, 0xe4437ed6};

// The scalar field, n = the group order.
struct FnParams {
    static BC_DEVICE const uint32_t* mod() { return N_MOD; }
    static BC_DEVICE const uint32_t* r2() { return N_R2; }
    static constexpr uint32_t INV = 0x5588b13f;
    static constexpr uint32_t PSEUDO_C0 = 0;
};

using Fp = bc::Fp<FpParams>;
using Fn = bc::Fp<FnParams>;

struct Curve {
    using F = Fp;
    static constexpr bool A_IS_ZERO = true;
    static constexpr bool A_IS_MINUS_3 = false;
    static BC_DEVICE F a() { return F::zero(); }
    static BC_DEVICE F b() { return F::from_u32(7); }
    static BC_DEVICE Affine<Curve> generator() { return Affine<Curve>{F::from_plain(G_X), F::from_plain(G_Y)}; }
};

using Point = Jacobian<Curve>;
using PointAffine = Affine<Curve>;

}  // namespace bc::secp256k1

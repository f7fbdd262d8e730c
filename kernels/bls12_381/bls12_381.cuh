// BLS12-381 parameters for the generic field and curve templates: the 381-bit base field Fq on
// twelve limbs, the scalar field Fr (255 bits) on eight, G1: y^2 = x^3 + 4 over Fq, and G2 over
// Fq2. Both
// fields in Montgomery form with R = 2^(32 N), arkworks' own in-memory representation (Fq with
// R = 2^384, Fr with R = 2^256), so points and scalars cross without conversion.
#pragma once
#include "bc/ecmult.cuh"

namespace bc::bls12_381 {

static __device__ __constant__ uint32_t Q_MOD[12] = {0xffffaaab, 0xb9feffff, 0xb153ffff, 0x1eabfffe, 0xf6b0f624, 0x6730d2a0, 0xf38512bf, 0x64774b84, 0x434bacd7, 0x4b1ba7b6, 0x397fe69a, 0x1a0111ea};
static __device__ __constant__ uint32_t Q_R2[12] = {0x1c341746, 0xf4df1f34, 0x09d104f1, 0x0a76e6a6, 0x4c95b6d5, 0x8de5476c, 0x939d83c0, 0x67eb88a9, 0xb519952d, 0x9a793e85, 0x92cae3aa, 0x11988fe5};
static __device__ __constant__ uint32_t R_MOD[8] = {0x00000001, 0xffffffff, 0xfffe5bfe, 0x53bda402, 0x09a1d805, 0x3339d808, 0x299d7d48, 0x73eda753};
static __device__ __constant__ uint32_t R_R2[8] = {0xf3f29c6d, 0xc999e990, 0x87925c23, 0x2b6cedcb, 0x7254398f, 0x05d31496, 0x9f59ff11, 0x0748d9d9};
static __device__ __constant__ uint32_t G1_X[12] = {0xdb22c6bb, 0xfb3af00a, 0xf97a1aef, 0x6c55e83f, 0x171bac58, 0xa14e3a3f, 0x9774b905, 0xc3688c4f, 0x4fa9ac0f, 0x2695638c, 0x3197d794, 0x17f1d3a7};
static __device__ __constant__ uint32_t G1_Y[12] = {0x46c5e7e1, 0x0caa2329, 0xa2888ae4, 0xd03cc744, 0x2c04b3ed, 0x00db18cb, 0xd5d00af6, 0xfcf5e095, 0x741d8ae4, 0xa09e30ed, 0xe3aaa0f1, 0x08b3f481};

struct FqParams {
    static constexpr int LIMBS = 12;
    static BC_DEVICE const uint32_t* mod() { return Q_MOD; }
    static BC_DEVICE const uint32_t* r2() { return Q_R2; }
    static constexpr uint32_t INV = 0xfffcfffd;
    static constexpr uint32_t PSEUDO_C0 = 0;
    static constexpr bool SPARE_BIT = true;
};
struct FrParams {
    static BC_DEVICE const uint32_t* mod() { return R_MOD; }
    static BC_DEVICE const uint32_t* r2() { return R_R2; }
    static constexpr uint32_t INV = 0xffffffff;
    static constexpr uint32_t PSEUDO_C0 = 0;
    static constexpr bool SPARE_BIT = true;
};

using Fq = bc::Fp<FqParams>;
using Fr = bc::Fp<FrParams>;

struct G1 {
    using F = Fq;
    using Scalar = Fr;
    static constexpr int SCALAR_BITS = 255;
    static constexpr bool A_IS_ZERO = true;
    static constexpr bool A_IS_MINUS_3 = false;
    static BC_DEVICE F a() { return F::zero(); }
    static BC_DEVICE F b() { return F::from_u32(4); }
    static BC_DEVICE Affine<G1> generator() { return Affine<G1>{F::from_plain(G1_X), F::from_plain(G1_Y)}; }
};

// Fq2 = Fq[u]/(u^2 + 1).
using Fq2 = bc::Fp2<Fq>;

// G2: the sextic twist y^2 = x^3 + 4(1 + u) over Fq2, with the same scalars. The MSM needs no b.
struct G2 {
    using F = Fq2;
    using Scalar = Fr;
    static constexpr int SCALAR_BITS = 255;
    static constexpr bool A_IS_ZERO = true;
    static constexpr bool A_IS_MINUS_3 = false;
    static BC_DEVICE F a() { return F::zero(); }
};

using G1Point = Jacobian<G1>;
using G1Affine = Affine<G1>;

}  // namespace bc::bls12_381

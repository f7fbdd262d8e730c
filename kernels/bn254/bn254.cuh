// BN254 (alt_bn128, the curve of Ethereum's precompiles and of circom/snarkjs) for the generic field
// and curve templates: Fq, Fr, Fq2, G1 and G2. Both fields use Montgomery form with R = 2^256, the representation arkworks
// keeps in memory: elements cross the host boundary as arkworks' own limbs, with no conversion.
#pragma once
#include "bc/curve.cuh"

namespace bc::bn254 {

static __device__ __constant__ uint32_t Q_MOD[8] = {0xd87cfd47, 0x3c208c16, 0x6871ca8d, 0x97816a91, 0x8181585d, 0xb85045b6, 0xe131a029, 0x30644e72};
static __device__ __constant__ uint32_t Q_R2[8] = {0x538afa89, 0xf32cfc5b, 0xd44501fb, 0xb5e71911, 0x0a417ff6, 0x47ab1eff, 0xcab8351f, 0x06d89f71};
static __device__ __constant__ uint32_t R_MOD[8] = {0xf0000001, 0x43e1f593, 0x79b97091, 0x2833e848, 0x8181585d, 0xb85045b6, 0xe131a029, 0x30644e72};
static __device__ __constant__ uint32_t R_R2[8] = {0xae216da7, 0x1bb8e645, 0xe35c59e3, 0x53fe3ab1, 0x53bb8085, 0x8c49833d, 0x7f4e44a5, 0x0216d0b1};

// The base field Fq.
struct FqParams {
    static BC_DEVICE const uint32_t* mod() { return Q_MOD; }
    static BC_DEVICE const uint32_t* r2() { return Q_R2; }
    static constexpr uint32_t INV = 0xe4866389;
    static constexpr uint32_t PSEUDO_C0 = 0;
    static constexpr bool SPARE_BIT = true;
};
// The scalar field Fr (the group order r).
struct FrParams {
    static BC_DEVICE const uint32_t* mod() { return R_MOD; }
    static BC_DEVICE const uint32_t* r2() { return R_R2; }
    static constexpr uint32_t INV = 0xefffffff;
    static constexpr uint32_t PSEUDO_C0 = 0;
    static constexpr bool SPARE_BIT = true;
};

using Fq = bc::Fp<FqParams>;
using Fr = bc::Fp<FrParams>;

// G1: y^2 = x^3 + 3 over Fq.
struct G1 {
    using F = Fq;
    using Scalar = Fr;
    static constexpr int SCALAR_BITS = 254;
    static constexpr bool A_IS_ZERO = true;
    static constexpr bool A_IS_MINUS_3 = false;
    static BC_DEVICE F a() { return F::zero(); }
    static BC_DEVICE F b() { return F::from_u32(3); }
};

// Fq2 = Fq[u]/(u^2 + 1).
using Fq2 = bc::Fp2<Fq>;

// G2: the sextic twist y^2 = x^3 + 3/(9 + u) over Fq2, with the same scalars. The MSM needs no b.
struct G2 {
    using F = Fq2;
    using Scalar = Fr;
    static constexpr int SCALAR_BITS = 254;
    static constexpr bool A_IS_ZERO = true;
    static constexpr bool A_IS_MINUS_3 = false;
    static BC_DEVICE F a() { return F::zero(); }
};

}  // namespace bc::bn254

// BN254 kernels: the MSM steps of bc/msm.cuh on G1 and G2, and the NTT steps of bc/ntt.cuh over Fr.
// Scalars are arkworks' Fr limbs (Montgomery form), bases arkworks' affine x, y limbs (infinity
// as zeros), buckets and sums Jacobian.
#include "bn254.cuh"
#include "bc/msm.cuh"
#include "bc/ntt.cuh"

using namespace bc::bn254;

// The scalar steps (digits, scan, scatter) depend on the scalars only and serve both groups; the
// steps that touch points are instantiated once per group.
BC_MSM_SCALAR_STEPS(bn254, G1)
BC_MSM_POINT_STEPS(bn254_g1, G1)
BC_MSM_POINT_STEPS(bn254_g2, G2)

extern "C" __global__ void bn254_ntt_twiddles(const Fr* omega, uint64_t count, Fr* out) {
    bc::ntt::twiddles(omega, count, out);
}

extern "C" __global__ void __launch_bounds__(512) bn254_ntt_pass(Fr* data, uint32_t log_n, uint64_t batch, uint32_t stage0, uint32_t k, const Fr* tw, uint32_t tw_shift, uint32_t inverse, uint32_t mode, const Fr* lo, const Fr* hi, uint32_t lo_bits) {
    bc::ntt::pass(data, log_n, batch, stage0, k, tw, tw_shift, inverse, mode, lo, hi, lo_bits);
}

extern "C" __global__ void bn254_ntt_bitrev(const Fr* in, Fr* out, uint32_t log_n, uint64_t batch, uint32_t mode, const Fr* lo, const Fr* hi, uint32_t lo_bits) {
    bc::ntt::bitrev(in, out, log_n, batch, mode, lo, hi, lo_bits);
}

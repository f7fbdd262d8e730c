// BN254 kernels: the MSM steps of bc/msm.cuh on G1 and G2, and the NTT steps of bc/ntt.cuh over Fr.
// Scalars are arkworks' Fr limbs (Montgomery form), bases arkworks' affine x, y limbs (infinity
// as zeros), buckets and sums Jacobian.
#include "bn254.cuh"
#include "bc/msm.cuh"
#include "bc/ntt.cuh"

using namespace bc::bn254;

extern "C" __global__ void bn254_msm_digits(const uint32_t* scalars, uint64_t n, uint32_t c, uint32_t windows, uint32_t sets, uint32_t* digits, uint32_t* counts) {
    bc::msm::digits<G1>(scalars, n, c, windows, sets, digits, counts);
}

extern "C" __global__ void bn254_msm_scan_tiles(uint32_t* data, uint64_t m, uint32_t tile, uint32_t* totals) {
    bc::msm::scan_tiles(data, m, tile, totals);
}

extern "C" __global__ void bn254_msm_scan_add(uint32_t* data, uint64_t m, uint32_t tile, const uint32_t* offsets) {
    bc::msm::scan_add(data, m, tile, offsets);
}

extern "C" __global__ void bn254_msm_scatter(const uint32_t* digits, uint64_t n, uint32_t c, uint32_t windows, uint32_t sets, uint32_t stride, uint32_t* cursor, uint32_t* entries, uint32_t* keys) {
    bc::msm::scatter(digits, n, c, windows, sets, stride, cursor, entries, keys);
}

// The steps that touch points, once per group: bn254_g1_msm_* and bn254_g2_msm_*. The steps
// before them (digits, scan, scatter) depend on the scalars only and serve both.
#define BN254_MSM_POINT_STEPS(NAME, C)                                                                     \
    extern "C" __global__ void __launch_bounds__(128) bn254_##NAME##_msm_accumulate_points(                 \
        const bc::Affine<C>* bases, const uint32_t* entries, const uint32_t* keys, uint64_t total,           \
        uint32_t slice, bc::Jacobian<C>* buckets, uint32_t* next_keys, bc::Jacobian<C>* next_pts) {          \
        bc::msm::accumulate_points<C>(bases, entries, keys, total, slice, buckets, next_keys, next_pts);     \
    }                                                                                                        \
    extern "C" __global__ void __launch_bounds__(128) bn254_##NAME##_msm_accumulate_partials(               \
        const bc::Jacobian<C>* pts, const uint32_t* keys, uint64_t total, uint32_t slice,                    \
        bc::Jacobian<C>* buckets, uint32_t* next_keys, bc::Jacobian<C>* next_pts) {                          \
        bc::msm::accumulate_partials<C>(pts, keys, total, slice, buckets, next_keys, next_pts);              \
    }                                                                                                        \
    extern "C" __global__ void __launch_bounds__(128) bn254_##NAME##_msm_window_segments(                   \
        const bc::Jacobian<C>* buckets, uint32_t buckets_per_window, uint32_t windows, uint32_t per,         \
        bc::Jacobian<C>* out) {                                                                              \
        bc::msm::window_segments<C>(buckets, buckets_per_window, windows, per, out);                         \
    }                                                                                                        \
    extern "C" __global__ void __launch_bounds__(128) bn254_##NAME##_msm_sum_groups(                        \
        const bc::Jacobian<C>* in, uint64_t groups, uint32_t m, bc::Jacobian<C>* out) {                      \
        bc::msm::sum_groups<C>(in, groups, m, out);                                                          \
    }                                                                                                        \
    extern "C" __global__ void __launch_bounds__(128) bn254_##NAME##_msm_shift_bases(                       \
        const bc::Affine<C>* in, uint64_t n, uint32_t doublings, bc::Affine<C>* out) {                       \
        bc::msm::shift_bases<C, 4>(in, n, doublings, out);                                                   \
    }

BN254_MSM_POINT_STEPS(g1, G1)
BN254_MSM_POINT_STEPS(g2, G2)

extern "C" __global__ void bn254_ntt_twiddles(const Fr* omega, uint64_t count, Fr* out) {
    bc::ntt::twiddles(omega, count, out);
}

extern "C" __global__ void __launch_bounds__(512) bn254_ntt_pass(Fr* data, uint32_t log_n, uint64_t batch, uint32_t stage0, uint32_t k, const Fr* tw, uint32_t tw_shift, uint32_t inverse, uint32_t mode, const Fr* lo, const Fr* hi, uint32_t lo_bits) {
    bc::ntt::pass(data, log_n, batch, stage0, k, tw, tw_shift, inverse, mode, lo, hi, lo_bits);
}

extern "C" __global__ void bn254_ntt_bitrev(const Fr* in, Fr* out, uint32_t log_n, uint64_t batch, uint32_t mode, const Fr* lo, const Fr* hi, uint32_t lo_bits) {
    bc::ntt::bitrev(in, out, log_n, batch, mode, lo, hi, lo_bits);
}

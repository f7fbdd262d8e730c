//! The BN254 MSM and NTT kernels run on the host: the groups' MSM steps (for
//! [`super::msm::window_sums`]) and Fr's transform steps (for [`super::ntt::ntt`]).

use super::msm::MsmSteps;
use super::ntt::NttSteps;

extern "C" {
    fn bn254_msm_digits(
        scalars: *const u32,
        montgomery: u32,
        n: u64,
        first: u32,
        points: u64,
        from: u64,
        to: u64,
        c: u32,
        windows: u32,
        off: u32,
        sets: u32,
        digits: *mut u32,
        counts: *mut u32,
    );
    fn bn254_msm_scan_tiles(data: *mut u32, m: u64, tile: u32, totals: *mut u32);
    fn bn254_msm_scan_add(data: *mut u32, m: u64, tile: u32, offsets: *const u32);
    fn bn254_msm_scatter(
        digits: *const u32,
        n: u64,
        first: u32,
        c: u32,
        windows: u32,
        off: u32,
        sets: u32,
        stride: u32,
        cursor: *mut u32,
        entries: *mut u32,
    );
    fn bn254_g1_msm_accumulate_points(
        bases: *const u32,
        entries: *const u32,
        ends: *const u32,
        buckets_len: u32,
        total: u64,
        slice: u32,
        buckets: *mut u32,
        next_keys: *mut u32,
        next_pts: *mut u32,
    );
    fn bn254_g1_msm_accumulate_partials(
        pts: *const u32,
        keys: *const u32,
        total: u64,
        slice: u32,
        buckets: *mut u32,
        next_keys: *mut u32,
        next_pts: *mut u32,
    );
    fn bn254_g1_msm_add_buckets(acc: *mut u32, more: *const u32, count: u64);
    fn bn254_g1_msm_window_segments(
        buckets: *const u32,
        per_window: u32,
        windows: u32,
        per: u32,
        out: *mut u32,
    );
    fn bn254_g1_msm_sum_groups(input: *const u32, groups: u64, m: u32, out: *mut u32);
    fn bn254_g1_msm_shift_bases(input: *const u32, n: u64, doublings: u32, out: *mut u32);
    fn bn254_g2_msm_accumulate_points(
        bases: *const u32,
        entries: *const u32,
        ends: *const u32,
        buckets_len: u32,
        total: u64,
        slice: u32,
        buckets: *mut u32,
        next_keys: *mut u32,
        next_pts: *mut u32,
    );
    fn bn254_g2_msm_accumulate_partials(
        pts: *const u32,
        keys: *const u32,
        total: u64,
        slice: u32,
        buckets: *mut u32,
        next_keys: *mut u32,
        next_pts: *mut u32,
    );
    fn bn254_g2_msm_add_buckets(acc: *mut u32, more: *const u32, count: u64);
    fn bn254_g2_msm_window_segments(
        buckets: *const u32,
        per_window: u32,
        windows: u32,
        per: u32,
        out: *mut u32,
    );
    fn bn254_g2_msm_sum_groups(input: *const u32, groups: u64, m: u32, out: *mut u32);
    fn bn254_g2_msm_shift_bases(input: *const u32, n: u64, doublings: u32, out: *mut u32);
}

/// G1's MSM kernels.
pub const G1_MSM: MsmSteps = MsmSteps {
    digits: bn254_msm_digits,
    scan_tiles: bn254_msm_scan_tiles,
    scan_add: bn254_msm_scan_add,
    scatter: bn254_msm_scatter,
    accumulate_points: bn254_g1_msm_accumulate_points,
    accumulate_partials: bn254_g1_msm_accumulate_partials,
    add_buckets: bn254_g1_msm_add_buckets,
    window_segments: bn254_g1_msm_window_segments,
    sum_groups: bn254_g1_msm_sum_groups,
    shift_bases: bn254_g1_msm_shift_bases,
};

/// G2's MSM kernels (coordinates in Fq2: c0 then c1).
pub const G2_MSM: MsmSteps = MsmSteps {
    digits: bn254_msm_digits,
    scan_tiles: bn254_msm_scan_tiles,
    scan_add: bn254_msm_scan_add,
    scatter: bn254_msm_scatter,
    accumulate_points: bn254_g2_msm_accumulate_points,
    accumulate_partials: bn254_g2_msm_accumulate_partials,
    add_buckets: bn254_g2_msm_add_buckets,
    window_segments: bn254_g2_msm_window_segments,
    sum_groups: bn254_g2_msm_sum_groups,
    shift_bases: bn254_g2_msm_shift_bases,
};

/// Fr's NTT kernels.
pub const NTT: NttSteps = super::ntt::ntt_steps!(
    bn254_ntt_twiddles,
    bn254_ntt_pass,
    bn254_ntt_bitrev,
    bn254_ntt_mul_sub,
    bn254_ntt_products
);

//! The BN254 MSM and NTT kernels run on the host: the groups' MSM steps (for
//! [`super::msm::window_sums`]) and Fr's transform steps (for [`super::ntt::ntt`]).

use super::msm::MsmSteps;
use super::ntt::NttSteps;

/// G1's MSM kernels.
pub const G1_MSM: MsmSteps = super::msm::msm_steps!(
    bn254_msm_digits, bn254_msm_scan_tiles, bn254_msm_scan_add, bn254_msm_scatter;
    bn254_g1_msm_accumulate_points,
    bn254_g1_msm_accumulate_partials,
    bn254_g1_msm_add_buckets,
    bn254_g1_msm_window_segments,
    bn254_g1_msm_sum_groups,
    bn254_g1_msm_shift_bases,
);

/// G2's MSM kernels (coordinates in Fq2: c0 then c1).
pub const G2_MSM: MsmSteps = super::msm::msm_steps!(
    bn254_msm_digits, bn254_msm_scan_tiles, bn254_msm_scan_add, bn254_msm_scatter;
    bn254_g2_msm_accumulate_points,
    bn254_g2_msm_accumulate_partials,
    bn254_g2_msm_add_buckets,
    bn254_g2_msm_window_segments,
    bn254_g2_msm_sum_groups,
    bn254_g2_msm_shift_bases,
);

/// Fr's NTT kernels.
pub const NTT: NttSteps = super::ntt::ntt_steps!(
    bn254_ntt_twiddles,
    bn254_ntt_pass,
    bn254_ntt_bitrev,
    bn254_ntt_mul_sub,
    bn254_ntt_products
);

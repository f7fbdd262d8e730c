//! The BN254 MSM and NTT kernels run on the host: the groups' MSM steps (for
//! [`super::msm::window_sums`]) and Fr's transform steps (for [`super::ntt::ntt`]).

use super::msm::MsmSteps;
use super::ntt::NttSteps;

/// G1's MSM kernels.
pub const G1_MSM: MsmSteps = super::msm::msm_steps!("bn254", "g1");

/// G2's MSM kernels (coordinates in Fq2: c0 then c1).
pub const G2_MSM: MsmSteps = super::msm::msm_steps!("bn254", "g2");

/// Fr's NTT kernels.
pub const NTT: NttSteps = super::ntt::ntt_steps!("bn254");

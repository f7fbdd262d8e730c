//! The BLS12-381 kernels run on the host: G1's and G2's MSM steps ([`G1_MSM`], [`G2_MSM`], for
//! [`super::msm::window_sums`]; arkworks' Montgomery limbs in and out), Fr's transform steps
//! ([`NTT`], for [`super::ntt::ntt`]), and the checks of the field
//! and the group law (ordinary integers: Fq elements as twelve little-endian 32-bit limbs, scalars
//! eight; affine G1 points x then y, infinity as zeros).

use super::msm::MsmSteps;
use super::ntt::NttSteps;

/// Limbs of an Fq element.
pub const Q: usize = 12;

/// G2's MSM kernels (coordinates in Fq2: c0 then c1).
pub const G2_MSM: MsmSteps = super::msm::msm_steps!("bls12_381", "g2");

/// G1's MSM kernels.
pub const G1_MSM: MsmSteps = super::msm::msm_steps!("bls12_381", "g1");

/// Fr's NTT kernels.
pub const NTT: NttSteps = super::ntt::ntt_steps!("bls12_381");

extern "C" {
    fn bls12_381_fq_ops(a: *const u32, b: *const u32, out: *mut u32, n: u64);
    fn bls12_381_g1_ops(p: *const u32, q: *const u32, out: *mut u32, n: u64);
    fn bls12_381_g1_mul(p: *const u32, k: *const u32, out: *mut u32, n: u64);
}

/// `[a+b, a-b, a*b, a^2, a^-1, -a, a^((q+1)/4)]` modulo q.
pub fn fq_ops(a: &[[u32; Q]], b: &[[u32; Q]]) -> Vec<[[u32; Q]; 7]> {
    assert_eq!(a.len(), b.len());
    let mut out = vec![[[0u32; Q]; 7]; a.len()];
    // SAFETY: 12 limbs in from each input and 84 out per item.
    unsafe {
        bls12_381_fq_ops(
            a.as_ptr().cast(),
            b.as_ptr().cast(),
            out.as_mut_ptr().cast(),
            a.len() as u64,
        )
    };
    out
}

/// Per pair of affine points: P+Q, P+Q (mixed), 2P, P+(-P), P+P as affine points, then
/// on_curve(P), on_curve(Q).
pub fn g1_ops(p: &[[u32; 2 * Q]], q: &[[u32; 2 * Q]]) -> Vec<([[u32; 2 * Q]; 5], bool, bool)> {
    assert_eq!(p.len(), q.len());
    let mut out = vec![[0u32; 10 * Q + 2]; p.len()];
    // SAFETY: 24 limbs in from each input and 122 out per item.
    unsafe {
        bls12_381_g1_ops(
            p.as_ptr().cast(),
            q.as_ptr().cast(),
            out.as_mut_ptr().cast(),
            p.len() as u64,
        )
    };
    out.iter()
        .map(|o| {
            let pts = std::array::from_fn(|j| o[2 * Q * j..2 * Q * (j + 1)].try_into().unwrap());
            (pts, o[10 * Q] != 0, o[10 * Q + 1] != 0)
        })
        .collect()
}

/// `(k_i P_i, k_i G)` as affine points.
pub fn g1_mul(p: &[[u32; 2 * Q]], k: &[[u32; 8]]) -> Vec<[[u32; 2 * Q]; 2]> {
    assert_eq!(p.len(), k.len());
    let mut out = vec![[[0u32; 2 * Q]; 2]; p.len()];
    // SAFETY: 24 + 8 limbs in and 48 out per item.
    unsafe {
        bls12_381_g1_mul(
            p.as_ptr().cast(),
            k.as_ptr().cast(),
            out.as_mut_ptr().cast(),
            p.len() as u64,
        )
    };
    out
}

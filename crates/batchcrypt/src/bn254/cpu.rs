//! The CPU backend: arkworks' Pippenger MSM (`ark-ec`, parallel over rayon's pool), the peer the
//! GPU path is measured against and the fallback where there is no GPU.

use super::{Fr, G1Affine, G1Projective};
use ark_ec::VariableBaseMSM;

/// `sum scalars[i] * bases[i]` on `threads` threads (the pool's when that is all of them).
pub fn msm_g1(bases: &[G1Affine], scalars: &[Fr], threads: usize) -> G1Projective {
    let run = || G1Projective::msm_unchecked(&bases[..scalars.len()], scalars);
    if threads >= crate::backend::cpu::threads() {
        return run();
    }
    match rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
    {
        Ok(pool) => pool.install(run),
        Err(_) => run(),
    }
}

//! The CPU backend: arkworks' Pippenger MSM (`ark-ec`), parallel over rayon's pool: the peer the
//! GPU path is measured against and the fallback where there is no GPU.

use super::{Affine, Group, Projective};
use ark_ec::VariableBaseMSM;

/// `sum scalars[i] * bases[i]` on `threads` threads.
pub fn msm<P: Group>(
    bases: &[Affine<P>],
    scalars: &[P::ScalarField],
    threads: usize,
) -> Projective<P> {
    crate::backend::cpu::on_threads(threads, || {
        Projective::<P>::msm_unchecked(&bases[..scalars.len()], scalars)
    })
}

//! The CPU backend: arkworks' Pippenger MSM (`ark-ec`) and radix-2 FFT (`ark-poly`), parallel over
//! rayon's pool: the peers the GPU path is measured against and the fallback where there is no GPU.

use super::ntt::{Direction, Ntt};
use super::{Affine, Fr, Group, Projective};
use ark_ec::VariableBaseMSM;
use ark_poly::{EvaluationDomain, Radix2EvaluationDomain};

/// `sum scalars[i] * bases[i]` on `threads` threads, on G1 or G2.
pub fn msm<P: Group>(bases: &[Affine<P>], scalars: &[Fr], threads: usize) -> Projective<P> {
    on_threads(threads, || {
        Projective::<P>::msm_unchecked(&bases[..scalars.len()], scalars)
    })
}

/// `t` on each polynomial of `values` (whole polynomials, checked by the caller), on `threads`
/// threads.
pub fn ntt(values: &mut [Fr], t: &Ntt, threads: usize) {
    let domain =
        Radix2EvaluationDomain::<Fr>::new(t.size).expect("size checked against the two-adicity");
    let domain = match t.coset {
        Some(g) => domain.get_coset(g).expect("offset checked non-zero"),
        None => domain,
    };
    on_threads(threads, || {
        let mut buf = Vec::with_capacity(t.size);
        for poly in values.chunks_exact_mut(t.size) {
            buf.clear();
            buf.extend_from_slice(poly);
            match t.direction {
                Direction::Forward => domain.fft_in_place(&mut buf),
                Direction::Inverse => domain.ifft_in_place(&mut buf),
            }
            poly.copy_from_slice(&buf);
        }
    })
}

/// Runs `f` on `threads` threads (rayon's global pool when that is all of them).
fn on_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    if threads >= crate::backend::cpu::threads() {
        return f();
    }
    match rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
    {
        Ok(pool) => pool.install(f),
        Err(_) => f(),
    }
}

//! The CPU backend of the transforms: arkworks' radix-2 FFT (`ark-poly`), parallel over rayon's
//! pool: the peer the GPU path is measured against and the fallback where there is no GPU.

use super::ntt::{Direction, Ntt};
use super::Fr;
use ark_poly::{EvaluationDomain, Radix2EvaluationDomain};

/// `t` on each polynomial of `values` (whole polynomials, checked by the caller), on `threads`
/// threads.
pub fn ntt(values: &mut [Fr], t: &Ntt, threads: usize) {
    let domain =
        Radix2EvaluationDomain::<Fr>::new(t.size).expect("size checked against the two-adicity");
    let domain = match t.coset {
        Some(g) => domain.get_coset(g).expect("offset checked non-zero"),
        None => domain,
    };
    crate::backend::cpu::on_threads(threads, || {
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

//! The CPU backend of the transforms: arkworks' radix-2 FFT (`ark-poly`), parallel over rayon's
//! pool, on the roots of [`super::root_of_unity`]: the peer the GPU path is measured against and
//! the fallback where there is no GPU.

use super::{root_of_unity, Direction, Field, Ntt};
use ark_poly::{EvaluationDomain, Radix2EvaluationDomain};

/// `t` on each polynomial of `values` (whole polynomials, checked by the caller), on `threads`
/// threads.
pub fn ntt<F: Field>(values: &mut [F], t: &Ntt<F>, threads: usize) {
    let mut domain =
        Radix2EvaluationDomain::<F>::new(t.size).expect("size checked against the two-adicity");
    // arkworks' generator of the domain may be another root than snarkjs's (BLS12-381's).
    domain.group_gen = root_of_unity::<F>(t.size as u64).expect("size checked");
    domain.group_gen_inv = domain.group_gen.inverse().expect("a root of unity");
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

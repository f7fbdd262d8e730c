//! Number-theoretic transforms over Fr: what a transform is ([`Ntt`]), and the chain of kernel
//! steps (`kernels/include/bc/ntt.cuh`) written once over [`Kernels`], so that the GPU and the host
//! emulation of the kernels run one sequence.
//!
//! The roots of unity are arkworks' (`Fr::get_root_of_unity`, powers of 5^((r-1)/2^28), the same
//! as snarkjs'), so every backend gives the same evaluations in the same order.

use super::Fr;
use crate::error::{Error, Result};
use ark_ff::FftField;
use ark_ff::Field;

/// log2 of the largest transform: Fr has roots of unity of order up to 2^28.
pub const MAX_LOG_SIZE: u32 = <Fr as FftField>::TWO_ADICITY;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Coefficients to evaluations: `out[i] = p(g w^i)`.
    Forward,
    /// Evaluations to coefficients (the inverse of `Forward` on the same domain).
    Inverse,
}

/// One transform, applied to each polynomial of a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ntt {
    /// Elements per polynomial: a power of two up to 2^28.
    pub size: usize,
    pub direction: Direction,
    /// The coset `g <w>` instead of the subgroup `<w>` of the size-th roots of unity (`None`:
    /// g = 1). Groth16 provers evaluate on a coset where the vanishing polynomial is non-zero.
    pub coset: Option<Fr>,
}

impl Ntt {
    pub fn forward(size: usize) -> Ntt {
        Ntt {
            size,
            direction: Direction::Forward,
            coset: None,
        }
    }

    pub fn inverse(size: usize) -> Ntt {
        Ntt {
            size,
            direction: Direction::Inverse,
            coset: None,
        }
    }

    pub fn on_coset(self, g: Fr) -> Ntt {
        Ntt {
            coset: Some(g),
            ..self
        }
    }

    pub fn log_size(&self) -> u32 {
        self.size.trailing_zeros()
    }

    /// Checks the transform and that `len` elements are whole polynomials; returns how many.
    pub fn batch_of(&self, len: usize) -> Result<usize> {
        if !self.size.is_power_of_two() || self.log_size() > MAX_LOG_SIZE {
            return Err(Error::invalid(format!(
                "NTT size {}: use a power of two from 1 to 2^{MAX_LOG_SIZE}",
                self.size
            )));
        }
        if len % self.size != 0 {
            return Err(Error::invalid(format!(
                "{len} elements are not whole polynomials of {} elements",
                self.size
            )));
        }
        if self.coset.is_some_and(|g| g == Fr::from(0u64)) {
            return Err(Error::invalid(
                "the coset offset is zero; use a non-zero field element",
            ));
        }
        Ok(len / self.size)
    }

    /// Field multiplications, about: n/2 log2 n per polynomial (for the cost model).
    pub fn work(&self, batch: usize) -> u64 {
        (batch as u64) * (self.size as u64 / 2).max(1) * u64::from(self.log_size().max(1))
    }
}

/// Stages per pass for a transform of 2^log_n: as even as possible, each at most the kernel's
/// MAX_PASS_BITS (10), so 2^26 takes passes of 9, 9 and 8 stages.
pub(crate) const MAX_PASS_BITS: u32 = 10;

pub(crate) fn passes(log_n: u32) -> Vec<(u32, u32)> {
    let count = log_n.div_ceil(MAX_PASS_BITS);
    let mut stage = 0;
    (0..count)
        .map(|p| {
            let k = log_n / count + u32::from(p < log_n % count);
            let pass = (stage, k);
            stage += k;
            pass
        })
        .collect()
}

/// How the kernels scale elements as they load (pass 1) or store (the permutation) them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum ScaleMode {
    None = 0,
    /// By the constant lo[0].
    Const = 1,
    /// Element i by lo[i mod 2^lo_bits] * hi[i >> lo_bits].
    Tables = 2,
}

pub(crate) struct Scaling<'a, E> {
    pub mode: ScaleMode,
    pub lo: &'a E,
    pub hi: &'a E,
    pub lo_bits: u32,
}

/// The steps of `kernels/include/bc/ntt.cuh`, on buffers of Fr elements (eight 32-bit limbs each).
pub(crate) trait Kernels {
    type Elems;
    /// Elements given as raw limbs.
    fn upload(&mut self, raw: &[u32]) -> Result<Self::Elems>;
    /// Room for `len` elements, written in full before it is read.
    fn alloc(&mut self, len: u64) -> Result<Self::Elems>;
    fn twiddles(&mut self, omega: &Self::Elems, count: u64, out: &mut Self::Elems) -> Result<()>;
    #[allow(clippy::too_many_arguments)]
    fn pass(
        &mut self,
        data: &mut Self::Elems,
        log_n: u32,
        batch: u64,
        stage0: u32,
        k: u32,
        tw: &Twiddles<Self::Elems>,
        inverse: bool,
        scale: &Scaling<Self::Elems>,
    ) -> Result<()>;
    fn bitrev(
        &mut self,
        input: &Self::Elems,
        out: &mut Self::Elems,
        log_n: u32,
        batch: u64,
        scale: &Scaling<Self::Elems>,
    ) -> Result<()>;
}

/// The powers w^i (i < 2^(log_max - 1)) of the root of unity of order 2^log_max: the twiddle
/// factors of every transform up to that size, in both directions.
pub(crate) struct Twiddles<E> {
    pub log_max: u32,
    pub table: E,
}

impl<E> Twiddles<E> {
    pub fn build<K: Kernels<Elems = E>>(k: &mut K, log_max: u32) -> Result<Twiddles<E>> {
        let log_max = log_max.max(1);
        let omega = Fr::get_root_of_unity(1 << log_max).expect("2^log_max divides r - 1");
        let omega = k.upload(&crate::msm::raw_elements(&[omega]))?;
        let count = 1u64 << (log_max - 1);
        let mut table = k.alloc(count)?;
        k.twiddles(&omega, count, &mut table)?;
        Ok(Twiddles { log_max, table })
    }

    /// How far apart the entries a transform of 2^log_n reads are.
    pub fn shift(&self, log_n: u32) -> u32 {
        self.log_max - log_n
    }
}

/// Runs `t` on `batch` polynomials in `data` (left scrambled) and writes the result to `out`.
/// `tw` must cover the size (log_max >= log size >= 1).
pub(crate) fn transform<K: Kernels>(
    k: &mut K,
    tw: &Twiddles<K::Elems>,
    t: &Ntt,
    batch: u64,
    data: &mut K::Elems,
    out: &mut K::Elems,
) -> Result<()> {
    let log_n = t.log_size();
    debug_assert!(log_n >= 1 && log_n <= tw.log_max);
    // Forward on a coset: coefficient i times g^i as pass 1 loads it. Inverse: output i times
    // n^-1 g^-i as the permutation stores it.
    let inverse = t.direction == Direction::Inverse;
    let (g, c) = if inverse {
        (
            t.coset.map(|g| g.inverse().expect("checked non-zero")),
            Fr::from(t.size as u64).inverse().expect("n < r"),
        )
    } else {
        (t.coset, Fr::from(1u64))
    };
    let lo_bits = log_n.div_ceil(2);
    let tables = match g {
        Some(g) => {
            let (lo, hi) = scale_tables(g, c, log_n, lo_bits);
            Some((
                ScaleMode::Tables,
                k.upload(&crate::msm::raw_elements(&lo))?,
                Some(k.upload(&crate::msm::raw_elements(&hi))?),
            ))
        }
        None if inverse => Some((ScaleMode::Const, k.upload(&crate::msm::raw_elements(&[c]))?, None)),
        None => None,
    };
    let none = Scaling {
        mode: ScaleMode::None,
        lo: &tw.table,
        hi: &tw.table,
        lo_bits: 0,
    };
    let scaling = match &tables {
        Some((mode, lo, hi)) => Scaling {
            mode: *mode,
            lo,
            hi: hi.as_ref().unwrap_or(lo),
            lo_bits,
        },
        None => Scaling { ..none },
    };
    let (first, last) = if inverse {
        (&none, &scaling)
    } else {
        (&scaling, &none)
    };
    for (stage0, bits) in passes(log_n) {
        k.pass(
            data,
            log_n,
            batch,
            stage0,
            bits,
            tw,
            inverse,
            if stage0 == 0 { first } else { &none },
        )?;
    }
    k.bitrev(data, out, log_n, batch, last)
}

/// lo[j] = g^j for j < 2^lo_bits and hi[j] = c g^(j 2^lo_bits) for j < 2^(log_n - lo_bits), so
/// that c g^i = lo[i mod 2^lo_bits] hi[i >> lo_bits].
fn scale_tables(g: Fr, c: Fr, log_n: u32, lo_bits: u32) -> (Vec<Fr>, Vec<Fr>) {
    let powers = |start: Fr, step: Fr, len: usize| {
        std::iter::successors(Some(start), move |x| Some(*x * step))
            .take(len)
            .collect::<Vec<_>>()
    };
    let lo = powers(Fr::from(1u64), g, 1 << lo_bits);
    let hi = powers(c, g.pow([1u64 << lo_bits]), 1 << (log_n - lo_bits));
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_cover_every_stage_once() {
        for log_n in 1..=MAX_LOG_SIZE {
            let p = passes(log_n);
            let mut next = 0;
            for &(stage0, k) in &p {
                assert_eq!(stage0, next);
                assert!((1..=MAX_PASS_BITS).contains(&k));
                next += k;
            }
            assert_eq!(next, log_n);
            assert_eq!(p.len() as u32, log_n.div_ceil(MAX_PASS_BITS));
        }
        assert_eq!(passes(26), vec![(0, 9), (9, 9), (18, 8)]);
    }

    #[test]
    fn scale_tables_give_every_power() {
        let (g, c) = (Fr::from(7u64), Fr::from(11u64));
        let (lo, hi) = scale_tables(g, c, 5, 3);
        for i in 0..32usize {
            assert_eq!(lo[i & 7] * hi[i >> 3], c * g.pow([i as u64]));
        }
    }
}

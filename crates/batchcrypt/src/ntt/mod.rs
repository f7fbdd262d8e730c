//! Number-theoretic transforms over any prime field whose parameters implement [`Field`]: BN254's
//! and BLS12-381's scalar fields (`bn254::Fr`, `bls12_381::Fr`), the heavy steps of a Groth16
//! prover beside the MSMs.
//!
//! What a transform is ([`Ntt`]), and the chain of kernel steps (`kernels/include/bc/ntt.cuh`)
//! written once over [`Kernels`], so that the GPU ([`gpu`]) and the host emulation of the kernels
//! run one sequence. The CPU path ([`cpu`]) is arkworks' radix-2 FFT on all cores, on the same
//! roots. Both give the same evaluations in the same order (tests/ntt.rs); the dispatcher picks
//! one per batch (`engine.ntt(..)`).
//!
//! The roots of unity are snarkjs's: powers of g^((r-1)/2^s) for the field's [`Field::ROOT_BASE`]
//! g, so that a prover's evaluations line up with the points of a snarkjs proving key. On BN254
//! they are arkworks' roots too; on BLS12-381 arkworks takes 7 where snarkjs takes 5.

pub mod cpu;
pub mod gpu;

use crate::backend::cuda::KernelImage;
use crate::backend::Backend;
use crate::dispatch::{Cost, Location, Workload};
use crate::error::{Error, Result};
use crate::msm::Limbs;
use crate::operation::{Operation, Split};
use crate::{Engine, Output};
use ark_ff::{FftField, PrimeField};

/// A field the transforms run over: its arkworks type, its kernels and its cost model's key. A
/// new field is these constants (`impl ntt::Field for bn254::Fr`).
pub trait Field: FftField + PrimeField + Limbs {
    /// The kernels are `<KERNELS>_ntt_twiddles`, `_pass` and `_bitrev`.
    const KERNELS: &'static str;
    /// The generator g whose powers g^((r-1)/n) are the n-th roots of unity of the transforms:
    /// snarkjs's (the field's smallest quadratic non-residue).
    const ROOT_BASE: u64;
    /// The kernel image holding the steps.
    fn image() -> &'static KernelImage;
    /// The transforms as the engine runs them (dispatch, calibration; its key is the cost
    /// model's).
    fn operation() -> &'static Operation;
    /// The same kernels compiled for the host.
    #[cfg(feature = "emulation")]
    fn emulated() -> crate::emulation::ntt::NttSteps;
}

/// log2 of the largest transform over `F` (its two-adicity: 28 on BN254, 32 on BLS12-381).
pub fn max_log_size<F: Field>() -> u32 {
    F::TWO_ADICITY
}

/// The primitive n-th root of unity of the transforms of size n over `F` (`None` where n is not a
/// power of two dividing r - 1).
pub fn root_of_unity<F: Field>(n: u64) -> Option<F> {
    if !n.is_power_of_two() || n.trailing_zeros() > F::TWO_ADICITY {
        return None;
    }
    // g^((r-1)/2^s) (TRACE is (r-1)/2^s), squared s - log n times.
    let mut w = F::from(F::ROOT_BASE).pow(F::TRACE);
    for _ in n.trailing_zeros()..F::TWO_ADICITY {
        w.square_in_place();
    }
    Some(w)
}

/// An [`Operation`] for the transforms over `F` with cost key `key` (batches split across GPUs by
/// whole polynomials).
pub const fn operation<F: Field>(
    key: &'static str,
    primitive: crate::backend::Primitive,
    about: &'static str,
) -> Operation {
    Operation {
        split: Split::Items,
        ..Operation::new(
            key,
            primitive,
            about,
            &[Backend::Arkworks],
            (32, 32, 8),
            calibrate::<F>,
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Coefficients to evaluations: `out[i] = p(g w^i)`.
    Forward,
    /// Evaluations to coefficients (the inverse of `Forward` on the same domain).
    Inverse,
}

/// One transform over `F`, applied to each polynomial of a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ntt<F> {
    /// Elements per polynomial: a power of two up to 2^[`max_log_size`].
    pub size: usize,
    pub direction: Direction,
    /// The coset `g <w>` instead of the subgroup `<w>` of the size-th roots of unity (`None`:
    /// g = 1). Groth16 provers evaluate on a coset where the vanishing polynomial is non-zero.
    pub coset: Option<F>,
}

impl<F: Field> Ntt<F> {
    pub fn forward(size: usize) -> Ntt<F> {
        Ntt {
            size,
            direction: Direction::Forward,
            coset: None,
        }
    }

    pub fn inverse(size: usize) -> Ntt<F> {
        Ntt {
            size,
            direction: Direction::Inverse,
            coset: None,
        }
    }

    pub fn on_coset(self, g: F) -> Ntt<F> {
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
        if !self.size.is_power_of_two() || self.log_size() > max_log_size::<F>() {
            return Err(Error::invalid(format!(
                "NTT size {}: use a power of two from 1 to 2^{}",
                self.size,
                max_log_size::<F>()
            )));
        }
        if !len.is_multiple_of(self.size) {
            return Err(Error::invalid(format!(
                "{len} elements are not whole polynomials of {} elements",
                self.size
            )));
        }
        if self.coset.is_some_and(|g| g.is_zero()) {
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

/// The steps of `kernels/include/bc/ntt.cuh`, on buffers of elements of `F` (its limbs).
pub(crate) trait Kernels<F: Field> {
    type Elems;
    /// Elements given as raw limbs.
    fn upload(&mut self, raw: &[u32]) -> Result<Self::Elems>;
    /// Room for `len` elements, written in full before it is read.
    fn alloc(&mut self, len: u64) -> Result<Self::Elems>;
    fn twiddles(&mut self, omega: &Self::Elems, count: u64, out: &mut Self::Elems) -> Result<()>;
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
    pub fn build<F: Field, K: Kernels<F, Elems = E>>(
        k: &mut K,
        log_max: u32,
    ) -> Result<Twiddles<E>> {
        let log_max = log_max.max(1);
        let omega = root_of_unity::<F>(1 << log_max).expect("2^log_max divides r - 1");
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
pub(crate) fn transform<F: Field, K: Kernels<F>>(
    k: &mut K,
    tw: &Twiddles<K::Elems>,
    t: &Ntt<F>,
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
            F::from(t.size as u64).inverse().expect("n < r"),
        )
    } else {
        (t.coset, F::one())
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
        None if inverse => Some((
            ScaleMode::Const,
            k.upload(&crate::msm::raw_elements(&[c]))?,
            None,
        )),
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
fn scale_tables<F: Field>(g: F, c: F, log_n: u32, lo_bits: u32) -> (Vec<F>, Vec<F>) {
    let powers = |start: F, step: F, len: usize| {
        std::iter::successors(Some(start), move |x| Some(*x * step))
            .take(len)
            .collect::<Vec<_>>()
    };
    let lo = powers(F::one(), g, 1 << lo_bits);
    let hi = powers(c, g.pow([1u64 << lo_bits]), 1 << (log_n - lo_bits));
    (lo, hi)
}

impl Engine {
    /// The transform `t` on each polynomial of `values`, in place (`values.len()` a multiple of
    /// `t.size`), natural order in and out: `engine.ntt(&mut values, &Ntt::forward(n))`.
    pub fn ntt<F: Field>(&self, values: &mut [F], t: &Ntt<F>) -> Result<Output<()>> {
        self.ntts(values, std::slice::from_ref(t))
    }

    /// The transforms `steps` (all of one size) one after another on each polynomial of
    /// `values`, in place: a prover's interpolate-then-evaluate-on-a-coset is one call, and on
    /// the GPU the values cross to it and back once.
    pub fn ntts<F: Field>(&self, values: &mut [F], steps: &[Ntt<F>]) -> Result<Output<()>> {
        let (batch, nothing) = check_steps(values.len(), steps)?;
        let op = F::operation();
        self.run_into(
            op,
            &workload(steps, batch),
            op.cpu,
            values,
            // Whole polynomials to each GPU.
            (1, steps[0].size.max(1)),
            |_, threads, values| {
                if !nothing {
                    for t in steps {
                        cpu::ntt(values, t, threads)
                    }
                }
                Ok(())
            },
            |_, values, _| match nothing {
                true => Ok(()),
                false => gpu::ntt(values, steps),
            },
        )
    }

    /// [`Self::ntts`] on canonical little-endian elements (`4 * F::WORDS` bytes each: a numpy
    /// array of limbs, a file's contents) read from `input` and written to `out`, as many bytes.
    /// The GPU transforms them as they are (see [`gpu::ntt_canonical`]), each checked below the
    /// modulus as it is staged for the crossing, so that a caller holding them so converts and
    /// allocates nothing; the CPU converts them. An element not below the modulus is an input
    /// error naming the first.
    pub fn ntts_canonical<F: Field>(
        &self,
        input: &[u8],
        out: &mut [u8],
        steps: &[Ntt<F>],
    ) -> Result<Output<()>> {
        let values = crate::msm::Scalars::<F>::canonical(input)?;
        if out.len() != input.len() {
            return Err(Error::invalid(format!(
                "{} bytes of output for {} bytes of elements; give as many",
                out.len(),
                input.len()
            )));
        }
        let (batch, nothing) = check_steps(values.len(), steps)?;
        let op = F::operation();
        let bytes = 4 * F::WORDS;
        self.run_into(
            op,
            &workload(steps, batch),
            op.cpu,
            out,
            (bytes, steps[0].size.max(1)),
            |_, threads, out| {
                let mut v = values.to_field()?.into_owned();
                if !nothing {
                    for t in steps {
                        cpu::ntt(&mut v, t, threads)
                    }
                }
                crate::msm::canonical_into(out, &v);
                Ok(())
            },
            |r, out, _| match nothing {
                // The identity: the elements checked and copied.
                true => values
                    .to_field()
                    .map(|_| out.copy_from_slice(&input[r.start * bytes..r.end * bytes])),
                false => gpu::ntt_canonical(input, r, out, steps),
            },
        )
    }

    /// Where the dispatcher puts `steps` on `batch` polynomials, for a caller that makes the
    /// polynomials where they are transformed (a prover: on the GPU [`gpu::products`] and
    /// [`gpu::OnDevice::ntts`], run inside [`crate::dispatch::Plan::on_gpu`]; on the CPU
    /// [`Engine::ntts_on_cpu`]).
    pub(crate) fn ntt_plan<F: Field>(
        &self,
        steps: &[Ntt<F>],
        batch: usize,
    ) -> Result<crate::dispatch::Plan> {
        let op = F::operation();
        self.dispatcher()
            .plan(&workload(steps, batch), op.cpu, op.gpu, op)
    }

    /// `steps` on `values` in place on the CPU, on the threads `plan` gives.
    pub(crate) fn ntts_on_cpu<F: Field>(
        &self,
        plan: &crate::dispatch::Plan,
        values: &mut [F],
        steps: &[Ntt<F>],
    ) -> Result<()> {
        if !check_steps(values.len(), steps)?.1 {
            for t in steps {
                cpu::ntt(values, t, plan.threads)
            }
        }
        Ok(())
    }

    /// The estimated time of `t` on `batch` polynomials on all CPU cores and on the GPU (data
    /// from and back to host memory).
    pub fn ntt_estimates<F: Field>(&self, t: &Ntt<F>, batch: usize) -> [crate::dispatch::Plan; 2] {
        self.dispatcher().estimates(
            &workload(std::slice::from_ref(t), batch),
            Backend::Arkworks,
            F::operation(),
        )
    }
}

/// The polynomials of one call's `steps` (all of one size, dividing the `len` values): their
/// count, and whether there is nothing to transform (no values, or size 1: the identity, times
/// n^-1 = 1 and g^0 = 1).
pub(crate) fn check_steps<F: Field>(len: usize, steps: &[Ntt<F>]) -> Result<(usize, bool)> {
    let first = steps
        .first()
        .ok_or_else(|| Error::invalid("no transforms given"))?;
    let batch = first.batch_of(len)?;
    for t in steps {
        t.batch_of(len)?;
        if t.size != first.size {
            return Err(Error::invalid(format!(
                "transforms of sizes {} and {} in one call; make one call per size",
                first.size, t.size
            )));
        }
    }
    Ok((batch, len == 0 || first.size == 1))
}

/// Elements go to the GPU and come back once; the work is n/2 log n products per polynomial and
/// transform.
fn workload<F: Field>(steps: &[Ntt<F>], batch: usize) -> Workload {
    let t = &steps[0];
    let bytes = 4 * F::WORDS as u64 * (t.size * batch) as u64;
    // Items are elements: one polynomial's stages already spread over every core.
    Workload {
        op: F::operation().key,
        items: (t.size * batch) as u64,
        units: steps.iter().map(|t| t.work(batch)).sum(),
        bytes_in: bytes,
        bytes_out: bytes,
        // The transform's GPU path copies the polynomial up and back in one piece each.
        location: Location::Pageable,
    }
}

/// Measures one backend on forward transforms: 2^10 and 2^16 elements on the GPU; on the CPU the
/// fixed cost from 2^6 and 2^12 on one thread and the rate from 2^14 and 2^18 on all threads
/// (`dispatch::cpu_cost`). A transform's layers are spread over the threads with a
/// synchronisation each, so all threads reach far less than a thread's in-cache rate times their
/// count: with one thread's rate scaled, the model put Groth16's 2^20 transforms on 64 threads
/// at a tenth of their time and chose them over the GPU.
fn calibrate<F: Field>(backend: Backend) -> Result<Cost> {
    use rand::SeedableRng;
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let engine = Engine::measuring(backend);
    let pool = crate::backend::cpu::threads().max(1);
    let mut runner = |t: Ntt<F>, threads: usize| {
        let mut values: Vec<F> = (0..t.size).map(|_| F::rand(&mut rng)).collect();
        let engine = &engine;
        move || -> Result<()> {
            match backend {
                Backend::Arkworks => cpu::ntt(&mut values, &t, threads),
                _ => drop(engine.ntt(&mut values, &t)?),
            }
            Ok(())
        }
    };
    let mut fit = |small: usize, large: usize, threads: usize| {
        let (small, large) = (Ntt::forward(small), Ntt::forward(large));
        let run_small = runner(small, threads);
        let run_large = runner(large, threads);
        crate::dispatch::fit(small.work(1), run_small, large.work(1), run_large)
    };
    if backend.is_gpu() {
        return fit(1 << 10, 1 << 16, 1);
    }
    let one = fit(1 << 6, 1 << 12, 1)?;
    let all = fit(1 << 14, 1 << 18, pool)?;
    Ok(crate::dispatch::cpu_cost(one, all, pool))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bn254::Fr;
    use ark_ff::Field as _;

    #[test]
    fn passes_cover_every_stage_once() {
        for log_n in 1..=32 {
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

    /// BN254's roots are arkworks' (and snarkjs's); BLS12-381's are snarkjs's (5^((r-1)/2^32)),
    /// which arkworks' (7^((r-1)/2^32)) are not.
    #[test]
    fn roots_of_unity() {
        use ark_ff::{FftField, One};
        for log_n in 0..=28 {
            let n = 1u64 << log_n;
            let w = root_of_unity::<Fr>(n).unwrap();
            assert_eq!(Some(w), Fr::get_root_of_unity(n));
        }
        type R = crate::bls12_381::Fr;
        let w = root_of_unity::<R>(1 << 32).unwrap();
        let want: R = "937917089079007706106976984802249742464848817460758522850752807661925904159"
            .parse()
            .unwrap();
        assert_eq!(w, want);
        assert_ne!(Some(w), R::get_root_of_unity(1 << 32));
        assert!(w.pow([1u64 << 31]) == -R::one());
        assert_eq!(root_of_unity::<R>(8).unwrap(), w.pow([1u64 << 29]));
        assert_eq!(root_of_unity::<R>(3), None);
        assert_eq!(root_of_unity::<Fr>(1 << 29), None);
    }

    #[test]
    fn scale_tables_give_every_power() {
        let (g, c) = (Fr::from(7u64), Fr::from(11u64));
        let (lo, hi) = scale_tables::<Fr>(g, c, 5, 3);
        for i in 0..32usize {
            assert_eq!(lo[i & 7] * hi[i >> 3], c * g.pow([i as u64]));
        }
    }
}

//! BN254 (alt_bn128), the pairing curve of circom/snarkjs and Ethereum's precompiles: batched
//! multi-scalar multiplication on G1 and G2 and number-theoretic transforms over Fr, the heavy
//! steps of a Groth16 prover.
//!
//! Types are arkworks' (`ark-bn254`), so a prover built on arkworks passes its data as it is. The
//! GPU path runs the G1 and G2 instantiations of the generic field, curve and MSM templates
//! (`kernels/bn254`, `kernels/include/bc/msm.cuh`); field elements cross to the GPU in arkworks'
//! own Montgomery limbs, with no conversion. The CPU path is arkworks' (MSM, FFT) on all cores.
//! Both give the same group element and the same evaluations (tests/bn254_msm.rs,
//! tests/bn254_ntt.rs); the dispatcher picks one per batch.

pub mod cpu;
pub mod gpu;
pub mod ntt;

/// The groups, as MSM type parameters: `engine.bn254().msm::<G2>(..)`.
pub use ark_bn254::{g1::Config as G1, g2::Config as G2};
pub use ark_bn254::{Fq, Fq2, Fr, G1Affine, G1Projective, G2Affine, G2Projective};
pub use ark_ec::short_weierstrass::{Affine, Projective};

use crate::backend::Backend;
use crate::dispatch::{Cost, Location, Workload};
use crate::error::{Error, Result};
use crate::operation::{Operation, Split, Whole};
use crate::{Engine, Output};
use ark_ec::short_weierstrass::SWCurveConfig;
use ark_ec::AffineRepr;
use std::sync::Arc;

/// Bits of the scalar field's modulus r.
pub const SCALAR_BITS: u32 = 254;

const OP_NTT: &str = "bn254_ntt";

const fn operation(
    key: &'static str,
    about: &'static str,
    item: (u64, u64, u64),
    calibrate: fn(Backend) -> Result<Cost>,
) -> Operation {
    Operation {
        split: Split::No,
        ..Operation::new(
            key,
            crate::backend::Primitive::Bn254,
            about,
            &[Backend::Arkworks],
            item,
            calibrate,
        )
    }
}

/// Multi-scalar multiplication on G1 (bases resident on the GPU).
pub static MSM_G1: Operation = Operation {
    split: Split::Itself,
    ..operation(G1::OP, "BN254 G1 MSM", (32, 0, 1), calibrate::<G1>)
};
/// Multi-scalar multiplication on G2 (bases resident on the GPU).
pub static MSM_G2: Operation = Operation {
    split: Split::Itself,
    ..operation(G2::OP, "BN254 G2 MSM", (32, 0, 1), calibrate::<G2>)
};
/// Number-theoretic transforms over Fr.
pub static NTT: Operation = Operation {
    split: Split::Items,
    ..operation(OP_NTT, "BN254 Fr NTT", (32, 32, 8), calibrate_ntt)
};

/// A BN254 group the MSM runs on: [`G1`] over Fq or [`G2`] over Fq2. Points cross to the kernels as their coordinates' Fq limbs.
pub trait Group: SWCurveConfig<ScalarField = Fr> {
    /// "g1" or "g2": the kernels' names are `bn254_<NAME>_msm_*`.
    const NAME: &'static str;
    /// The cost model's key.
    const OP: &'static str;
    /// Fq elements per coordinate.
    const DEGREE: usize;
    /// A coordinate as 8 * DEGREE words (Montgomery limbs, c0 first).
    fn coordinate_into(x: &Self::BaseField, out: &mut [u32]);
    fn coordinate_from(raw: &[u32]) -> Self::BaseField;
    /// The group's MSM as the engine runs it.
    fn operation() -> &'static Operation;
}

impl Group for G1 {
    const NAME: &'static str = "g1";
    const OP: &'static str = "bn254_msm_g1";
    const DEGREE: usize = 1;
    fn coordinate_into(x: &Fq, out: &mut [u32]) {
        limbs_into(out, &x.0 .0);
    }
    fn coordinate_from(raw: &[u32]) -> Fq {
        Fq::new_unchecked(bigint_from_limbs(raw))
    }
    fn operation() -> &'static Operation {
        &MSM_G1
    }
}

impl Group for G2 {
    const NAME: &'static str = "g2";
    const OP: &'static str = "bn254_msm_g2";
    const DEGREE: usize = 2;
    fn coordinate_into(x: &Fq2, out: &mut [u32]) {
        limbs_into(&mut out[..8], &x.c0.0 .0);
        limbs_into(&mut out[8..], &x.c1.0 .0);
    }
    fn coordinate_from(raw: &[u32]) -> Fq2 {
        Fq2::new(
            Fq::new_unchecked(bigint_from_limbs(&raw[..8])),
            Fq::new_unchecked(bigint_from_limbs(&raw[8..])),
        )
    }
    fn operation() -> &'static Operation {
        &MSM_G2
    }
}

/// 32-bit words of a kernel's Jacobian point (X, Y, Z) on group P.
pub(crate) fn point_words<P: Group>() -> usize {
    24 * P::DEGREE
}

/// Bases prepared for many MSMs (a proving key's queries): kept on the host, and uploaded to GPU
/// memory by the first MSM that runs there, then reused by every later one.
///
/// Fixed bases may also be precomputed ([`Bases::with_precomputation`]): the GPU keeps `copies`
/// copies of them, each the last doubled `c * sets` times, so that an MSM reduces `sets` windows of
/// buckets instead of one per digit window. It costs `copies` times the bases' GPU memory and
/// one pass of doublings on upload; on an H100 it saved 6–15% of the kernel time from 2^20 points
/// up (docs/performance.md), so it is for bases many MSMs reuse, and off unless asked for.
pub struct Bases<P: Group> {
    host: Vec<Affine<P>>,
    /// Copies the GPU precomputes (1: none).
    copies: u32,
    /// The bases in GPU memory, by the set of GPUs that holds them (a bitmask of GPU indices): an
    /// MSM on one GPU keeps them all there; one over several GPUs gives each a contiguous slice.
    resident: std::sync::Mutex<std::collections::HashMap<u64, Arc<Resident<P>>>>,
}

/// Bases in GPU memory: each part is a GPU, the bases it holds (a range of the host's), and
/// their device copy.
pub struct Resident<P: Group> {
    pub parts: Vec<(usize, std::ops::Range<usize>, gpu::DeviceBases<P>)>,
}

impl<P: Group> std::ops::Deref for Resident<P> {
    type Target = gpu::DeviceBases<P>;
    /// The first part: all of the bases where one GPU holds them.
    fn deref(&self) -> &gpu::DeviceBases<P> {
        &self.parts[0].2
    }
}

pub type G1Bases = Bases<G1>;
pub type G2Bases = Bases<G2>;

impl<P: Group> Bases<P> {
    pub fn new(bases: Vec<Affine<P>>) -> Self {
        Bases {
            host: bases,
            copies: 1,
            resident: Default::default(),
        }
    }

    /// Precomputes up to `copies` shifted copies on the GPU (at most one per digit window; 1 is
    /// none). The CPU backend reads the bases as they are.
    pub fn with_precomputation(mut self, copies: u32) -> Self {
        self.copies = copies.max(1);
        self.resident = Default::default(); // made again with the copies
        self
    }

    /// The shape of a GPU MSM of `n` scalars over these bases: with precomputation, the window
    /// and copies chosen for all the bases, so every call reads the same copies.
    pub(crate) fn shape(&self, n: usize) -> Result<crate::msm::Shape> {
        crate::msm::Shape::for_bases(n, self.len(), self.copies, SCALAR_BITS)
    }

    pub fn len(&self) -> usize {
        self.host.len()
    }

    pub fn is_empty(&self) -> bool {
        self.host.is_empty()
    }

    pub fn as_slice(&self) -> &[Affine<P>] {
        &self.host
    }

    /// GPU memory the bases take on the GPUs that hold them, their precomputed copies included.
    pub fn device_bytes(&self) -> u64 {
        self.len() as u64 * (64 * P::DEGREE) as u64 * self.copies as u64
    }

    /// Frees the bases' GPU copies on every GPU (a service evicting a key for another's room);
    /// the next MSM uploads them again. An MSM running now keeps its copy until it ends.
    pub fn release_device(&self) {
        self.resident
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// Whether the bases are in GPU memory already (on some GPUs).
    pub fn is_resident(&self) -> bool {
        !self
            .resident
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
    }

    /// The bases in the current GPU's memory (with their precomputed copies), uploading them
    /// on first use.
    pub fn device(&self) -> Result<Arc<Resident<P>>> {
        self.resident_on(&crate::dispatch::GpuShares::one(
            crate::backend::gpu::current(),
        ))
    }

    /// The bases in the memory of `gpus`, each holding a contiguous slice in proportion to its
    /// share, uploaded (all GPUs at once) on first use for that set.
    pub fn resident_on(&self, gpus: &crate::dispatch::GpuShares) -> Result<Arc<Resident<P>>> {
        let key = gpus.iter().fold(0u64, |m, (g, _)| m | 1 << g);
        let mut held = self.resident.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = held.get(&key) {
            return Ok(r.clone());
        }
        let parts = gpus.split(self.len().max(1), 1);
        let uploaded: Vec<Result<_>> = std::thread::scope(|s| {
            let handles: Vec<_> = parts
                .into_iter()
                .map(|(g, range)| {
                    let range = range.start.min(self.len())..range.end.min(self.len());
                    s.spawn(move || {
                        crate::backend::gpu::run_on(g, || {
                            let len = range.len();
                            let shape = crate::msm::Shape::for_bases(len, len, self.copies, SCALAR_BITS)?;
                            let raw = raw_bases(&self.host[range.clone()]);
                            gpu::DeviceBases::upload(&raw, &shape).map(|b| (g, range, b))
                        })
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        let parts = uploaded
            .into_iter()
            .collect::<Result<Vec<_>>>()
            .map_err(|e| Error::BackendUnavailable {
                backend: "cuda".into(),
                why: e.to_string(),
            })?;
        let r = Arc::new(Resident { parts });
        held.insert(key, r.clone());
        Ok(r)
    }
}

/// Scalars as the kernels read them: arkworks' Montgomery limbs, eight 32-bit words each.
pub(crate) fn raw_scalars(scalars: &[Fr]) -> Vec<u32> {
    let mut out = vec![0u32; 8 * scalars.len()];
    scalars_into(&mut out, scalars);
    out
}

/// [`raw_scalars`] into `dst` (eight words per scalar), on all cores; writes `dst` only (it may
/// be write-combined staging).
pub(crate) fn scalars_into(dst: &mut [u32], scalars: &[Fr]) {
    use rayon::prelude::*;
    dst.par_chunks_exact_mut(8)
        .zip(scalars.par_iter())
        .with_min_len(1 << 12)
        .for_each(|(d, s)| limbs_into(d, &s.0 .0));
}

/// Affine bases as the kernels read them: x, y as Fq limbs, infinity as zeros.
pub(crate) fn raw_bases<P: Group>(bases: &[Affine<P>]) -> Vec<u32> {
    use rayon::prelude::*;
    let w = 8 * P::DEGREE;
    let mut out = vec![0u32; 2 * w * bases.len()];
    out.par_chunks_exact_mut(2 * w)
        .zip(bases.par_iter())
        .with_min_len(1 << 12)
        .for_each(|(d, p)| {
            if !p.infinity {
                P::coordinate_into(&p.x, &mut d[..w]);
                P::coordinate_into(&p.y, &mut d[w..]);
            }
        });
    out
}

fn limbs_into(dst: &mut [u32], src: &[u64; 4]) {
    for (d, s) in dst.chunks_exact_mut(2).zip(src) {
        d[0] = *s as u32;
        d[1] = (*s >> 32) as u32;
    }
}

fn bigint_from_limbs(l: &[u32]) -> ark_ff::BigInt<4> {
    ark_ff::BigInt(std::array::from_fn(|i| {
        u64::from(l[2 * i]) | (u64::from(l[2 * i + 1]) << 32)
    }))
}

/// An element from the kernels' eight limbs (Montgomery form, as arkworks keeps it).
pub(crate) fn fr_from_limbs(l: &[u32]) -> Fr {
    Fr::new_unchecked(bigint_from_limbs(l))
}

/// A kernel's Jacobian point (Fq limbs of X, Y, Z; the same representation as arkworks').
fn from_raw<P: Group>(p: &[u32]) -> Projective<P> {
    use ark_ff::Zero;
    let w = 8 * P::DEGREE;
    let z = P::coordinate_from(&p[2 * w..3 * w]);
    if z.is_zero() {
        return Projective::default();
    }
    Projective::new_unchecked(
        P::coordinate_from(&p[..w]),
        P::coordinate_from(&p[w..2 * w]),
        z,
    )
}

/// `sum_w 2^(c w) S_w` from the window sums S_w (kernel points, one after another).
pub(crate) fn combine_windows<P: Group>(sums: &[u32], c: u32) -> Projective<P> {
    use ark_ff::AdditiveGroup;
    let mut acc = Projective::<P>::default();
    for s in sums.chunks_exact(point_words::<P>()).rev() {
        for _ in 0..c {
            acc.double_in_place();
        }
        acc += from_raw::<P>(s);
    }
    acc
}

/// BN254 batches through an [`Engine`] (`engine.bn254()`).
pub struct Bn254<'e> {
    pub(crate) engine: &'e Engine,
}

impl Bn254<'_> {
    /// `sum scalars[i] * bases[i]` over the first `scalars.len()` bases, on G1 or G2 (an empty
    /// sum is the identity). More scalars than bases is an error.
    pub fn msm<P: Group>(&self, bases: &Bases<P>, scalars: &[Fr]) -> Result<Output<Projective<P>>> {
        if scalars.len() > bases.len() {
            return Err(Error::invalid(format!(
                "{} scalars for {} bases: an MSM needs a base per scalar",
                scalars.len(),
                bases.len()
            )));
        }
        let n = scalars.len();
        let op = P::operation();
        let out = self.engine.run(
            op,
            &workload::<P>(n, bases.is_resident()),
            op.cpu,
            |_, threads| {
                Ok(Whole(match n {
                    0 => Projective::default(),
                    _ => cpu::msm(bases.as_slice(), scalars, threads),
                }))
            },
            // Each GPU of the plan holds a slice of the bases and sums its scalars' share; the
            // partial sums are added.
            |_, gpus| {
                if n == 0 {
                    return Ok(Whole(Projective::default()));
                }
                let resident = bases.resident_on(gpus)?;
                let sums: Vec<Result<Projective<P>>> = std::thread::scope(|s| {
                    let handles: Vec<_> = resident
                        .parts
                        .iter()
                        .filter(|(_, range, _)| range.start < n)
                        .map(|(g, range, held)| {
                            let part = &scalars[range.start..range.end.min(n)];
                            s.spawn(move || {
                                crate::backend::gpu::run_on(*g, || {
                                    let shape = crate::msm::Shape::for_bases(
                                        part.len(),
                                        range.len(),
                                        bases.copies,
                                        SCALAR_BITS,
                                    )?;
                                    Ok(combine_windows::<P>(
                                        &gpu::window_sums(held, part, &shape)?,
                                        shape.c,
                                    ))
                                })
                            })
                        })
                        .collect();
                    handles
                        .into_iter()
                        .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                        .collect()
                });
                let mut total = Projective::<P>::default();
                for s in sums {
                    total += s?;
                }
                Ok(Whole(total))
            },
        )?;
        Ok(out.map(|w| w.0))
    }

    /// The transform `t` on each polynomial of `values`, in place (`values.len()` a multiple of
    /// `t.size`). Natural order in and out, the same evaluations as arkworks' `Radix2EvaluationDomain`.
    pub fn ntt(&self, values: &mut [Fr], t: &ntt::Ntt) -> Result<Output<()>> {
        self.ntts(values, std::slice::from_ref(t))
    }

    /// The transforms `steps` (all of one size) one after another on each polynomial of
    /// `values`, in place: a prover's interpolate-then-evaluate-on-a-coset is one call, and on
    /// the GPU the values cross to it and back once.
    pub fn ntts(&self, values: &mut [Fr], steps: &[ntt::Ntt]) -> Result<Output<()>> {
        let first = steps
            .first()
            .ok_or_else(|| Error::invalid("no transforms given"))?;
        let batch = first.batch_of(values.len())?;
        for t in steps {
            t.batch_of(values.len())?;
            if t.size != first.size {
                return Err(Error::invalid(format!(
                    "transforms of sizes {} and {} in one call; make one call per size",
                    first.size, t.size
                )));
            }
        }
        // Size 1: the identity, times n^-1 = 1 and g^0 = 1.
        let nothing = values.is_empty() || first.size == 1;
        self.engine.run_into(
            &NTT,
            &ntt_workload(steps, batch),
            NTT.cpu,
            values,
            // Whole polynomials to each GPU.
            (1, first.size.max(1)),
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

    /// The estimated time of `t` on `batch` polynomials on all CPU cores and on the GPU (data
    /// from and back to host memory).
    pub fn ntt_estimates(&self, t: &ntt::Ntt, batch: usize) -> [crate::dispatch::Plan; 2] {
        self.engine.dispatcher().estimates(
            &ntt_workload(std::slice::from_ref(t), batch),
            Backend::Arkworks,
            &NTT,
        )
    }

    /// The estimated time of an MSM of `n` points on all CPU cores and on the GPU (bases in GPU
    /// memory), measuring each backend on first use (`batchcrypt calibrate`).
    pub fn estimates<P: Group>(&self, n: usize) -> [crate::dispatch::Plan; 2] {
        self.engine.dispatcher().estimates(
            &workload::<P>(n, true),
            Backend::Arkworks,
            P::operation(),
        )
    }
}

/// The scalars always move; the bases too unless they are in GPU memory already.
fn workload<P: Group>(n: usize, resident: bool) -> Workload {
    let (n64, d) = (n as u64, P::DEGREE as u64);
    Workload {
        op: P::OP,
        items: n64,
        units: n64,
        bytes_in: 32 * n64 + if resident { 0 } else { 64 * d * n64 },
        bytes_out: 96 * d,
        location: Location::Host,
    }
}

/// Elements go to the GPU and come back once; the work is n/2 log n products per polynomial and
/// transform.
fn ntt_workload(steps: &[ntt::Ntt], batch: usize) -> Workload {
    let t = &steps[0];
    let bytes = 32 * (t.size * batch) as u64;
    // Items are elements: one polynomial's stages already spread over every core.
    Workload {
        op: OP_NTT,
        items: (t.size * batch) as u64,
        units: steps.iter().map(|t| t.work(batch)).sum(),
        bytes_in: bytes,
        bytes_out: bytes,
        // The transform's GPU path copies the polynomial up and back in one piece each.
        location: Location::Pageable,
    }
}

/// Deterministic sample points and scalars for calibration, tests and benchmarks: distinct
/// multiples `(1 + i s) G` of the group's generator (consecutive additions in parallel chunks,
/// one batch normalisation) and uniform scalars.
pub fn sample<P: Group>(n: usize, seed: u64) -> (Vec<Affine<P>>, Vec<Fr>) {
    use ark_ec::CurveGroup;
    use ark_ff::UniformRand;
    use rand::SeedableRng;
    use rayon::prelude::*;
    const CHUNK: usize = 1 << 12;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let s = Fr::rand(&mut rng);
    let g = Projective::<P>::from(Affine::<P>::generator());
    let step = g * s;
    let mut proj = vec![Projective::<P>::default(); n];
    proj.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(j, chunk)| {
            let mut p = g * (Fr::from(1u64) + Fr::from((j * CHUNK) as u64) * s);
            for q in chunk {
                *q = p;
                p += step;
            }
        });
    let scalars = (0..n).map(|_| Fr::rand(&mut rng)).collect();
    (Projective::normalize_batch(&proj), scalars)
}

/// Measures one backend: a small and a larger MSM (one thread for the CPU, bases resident on the
/// GPU). Pippenger's cost per point falls as batches grow, so a line through two sizes puts a
/// fixed cost where there is little: the CPU is fitted from 16 points, below where the
/// crossover lies, so that small batches are not sent to the GPU for a fixed cost the CPU does
/// not have.
fn calibrate<P: Group>(backend: Backend) -> Result<Cost> {
    let (small, large) = match backend {
        Backend::Cuda => (1 << 10, 1 << 16),
        _ => (1 << 4, 1 << 10),
    };
    let (points, scalars) = sample::<P>(large, 1);
    let bases = Bases::new(points);
    let engine = Engine::measuring(backend);
    let run = |n: usize| -> Result<()> {
        match backend {
            Backend::Arkworks => drop(cpu::msm(bases.as_slice(), &scalars[..n], 1)),
            _ => drop(engine.bn254().msm(&bases, &scalars[..n])?),
        }
        Ok(())
    };
    crate::dispatch::fit_sizes(small, large, 1, run)
}

/// Measures one backend on forward transforms (one thread for the CPU): 2^10 and 2^16 elements on
/// the GPU, 2^6 and 2^12 on the CPU (from small sizes, as for the MSM).
fn calibrate_ntt(backend: Backend) -> Result<Cost> {
    use ark_ff::UniformRand;
    use rand::SeedableRng;
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let engine = Engine::measuring(backend);
    let mut runner = |t: ntt::Ntt| {
        let mut values: Vec<Fr> = (0..t.size).map(|_| Fr::rand(&mut rng)).collect();
        let engine = &engine;
        move || -> Result<()> {
            match backend {
                Backend::Arkworks => cpu::ntt(&mut values, &t, 1),
                _ => drop(engine.bn254().ntt(&mut values, &t)?),
            }
            Ok(())
        }
    };
    let (small, large) = match backend {
        Backend::Cuda => (ntt::Ntt::forward(1 << 10), ntt::Ntt::forward(1 << 16)),
        _ => (ntt::Ntt::forward(1 << 6), ntt::Ntt::forward(1 << 12)),
    };
    let run_small = runner(small);
    let run_large = runner(large);
    crate::dispatch::fit(small.work(1), run_small, large.work(1), run_large)
}

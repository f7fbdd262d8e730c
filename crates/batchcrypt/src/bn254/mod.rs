//! BN254 (alt_bn128), the pairing curve of circom/snarkjs and Ethereum's precompiles: batched
//! multi-scalar multiplication on G1 and number-theoretic transforms over Fr, the heavy steps of a
//! Groth16 prover.
//!
//! Types are arkworks' (`ark-bn254`), so a prover built on arkworks passes its data as it is. The
//! GPU path runs the G1 instantiation of the generic field, curve and MSM templates
//! (`kernels/bn254`, `kernels/include/bc/msm.cuh`); field elements cross to the GPU in arkworks'
//! own Montgomery limbs, with no conversion. The CPU path is arkworks' (MSM, FFT) on all cores.
//! Both give the same group element and the same evaluations (tests/bn254_msm.rs,
//! tests/bn254_ntt.rs); the dispatcher picks one per batch.

pub mod cpu;
#[cfg(feature = "cuda")]
pub mod gpu;
#[cfg(any(feature = "cuda", feature = "emulation"))]
pub mod msm;
pub mod ntt;

pub use ark_bn254::{Fq, Fr, G1Affine, G1Projective};

use crate::backend::{Backend, BackendChoice};
use crate::dispatch::{Cost, Location, Workload};
use crate::error::{Error, Result};
use crate::{Engine, Output};
use ark_ec::AffineRepr;

/// Bits of the scalar field's modulus r.
pub const SCALAR_BITS: u32 = 254;

const OP_MSM_G1: &str = "bn254_msm_g1";
const OP_NTT: &str = "bn254_ntt";

/// G1 bases prepared for many MSMs (a proving key's queries): kept on the host, and uploaded to
/// GPU memory by the first MSM that runs there, then reused by every later one.
pub struct G1Bases {
    host: Vec<G1Affine>,
    #[cfg(feature = "cuda")]
    device: std::sync::OnceLock<std::result::Result<gpu::DeviceBases, String>>,
}

impl G1Bases {
    pub fn new(bases: Vec<G1Affine>) -> Self {
        G1Bases {
            host: bases,
            #[cfg(feature = "cuda")]
            device: std::sync::OnceLock::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.host.len()
    }

    pub fn is_empty(&self) -> bool {
        self.host.is_empty()
    }

    pub fn as_slice(&self) -> &[G1Affine] {
        &self.host
    }

    /// Whether the bases are in GPU memory already.
    pub fn is_resident(&self) -> bool {
        #[cfg(feature = "cuda")]
        return matches!(self.device.get(), Some(Ok(_)));
        #[cfg(not(feature = "cuda"))]
        false
    }

    /// The bases in GPU memory, uploading them on first use.
    #[cfg(feature = "cuda")]
    pub fn device(&self) -> Result<&gpu::DeviceBases> {
        self.device
            .get_or_init(|| {
                gpu::DeviceBases::upload(&raw_bases(&self.host)).map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|why| Error::BackendUnavailable {
                backend: "cuda".into(),
                why: why.clone(),
            })
    }
}

/// Scalars as the kernels read them: arkworks' Montgomery limbs, eight 32-bit words each.
#[cfg(any(feature = "cuda", feature = "emulation"))]
pub(crate) fn raw_scalars(scalars: &[Fr]) -> Vec<u32> {
    let mut out = vec![0u32; 8 * scalars.len()];
    scalars_into(&mut out, scalars);
    out
}

/// [`raw_scalars`] into `dst` (eight words per scalar), on all cores; writes `dst` only (it may
/// be write-combined staging).
#[cfg(any(feature = "cuda", feature = "emulation"))]
pub(crate) fn scalars_into(dst: &mut [u32], scalars: &[Fr]) {
    use rayon::prelude::*;
    dst.par_chunks_exact_mut(8)
        .zip(scalars.par_iter())
        .with_min_len(1 << 12)
        .for_each(|(d, s)| limbs_into(d, &s.0 .0));
}

/// Affine bases as the kernels read them: x, y in arkworks' Montgomery limbs, infinity as zeros.
#[cfg(any(feature = "cuda", feature = "emulation"))]
pub(crate) fn raw_bases(bases: &[G1Affine]) -> Vec<u32> {
    use rayon::prelude::*;
    let mut out = vec![0u32; 16 * bases.len()];
    out.par_chunks_exact_mut(16)
        .zip(bases.par_iter())
        .with_min_len(1 << 12)
        .for_each(|(d, p)| {
            if !p.infinity {
                limbs_into(&mut d[..8], &p.x.0 .0);
                limbs_into(&mut d[8..], &p.y.0 .0);
            }
        });
    out
}

#[cfg(any(feature = "cuda", feature = "emulation"))]
fn limbs_into(dst: &mut [u32], src: &[u64; 4]) {
    for (d, s) in dst.chunks_exact_mut(2).zip(src) {
        d[0] = *s as u32;
        d[1] = (*s >> 32) as u32;
    }
}

/// An element from the kernels' eight limbs (Montgomery form, as arkworks keeps it).
#[cfg(any(feature = "cuda", feature = "emulation"))]
pub(crate) fn fr_from_limbs(l: &[u32]) -> Fr {
    Fr::new_unchecked(ark_ff::BigInt(std::array::from_fn(|i| {
        u64::from(l[2 * i]) | (u64::from(l[2 * i + 1]) << 32)
    })))
}

/// A kernel's Jacobian point (Montgomery limbs, the same representation as arkworks').
#[cfg(any(feature = "cuda", feature = "emulation"))]
fn from_raw(p: &msm::RawJacobian) -> G1Projective {
    let fq = |l: &[u32]| {
        Fq::new_unchecked(ark_ff::BigInt(std::array::from_fn(|i| {
            u64::from(l[2 * i]) | (u64::from(l[2 * i + 1]) << 32)
        })))
    };
    let z = fq(&p[16..]);
    if z == Fq::from(0u64) {
        return G1Projective::default();
    }
    G1Projective::new_unchecked(fq(&p[..8]), fq(&p[8..16]), z)
}

/// `sum_w 2^(c w) S_w` from the window sums S_w.
#[cfg(any(feature = "cuda", feature = "emulation"))]
pub(crate) fn combine_windows(sums: &[msm::RawJacobian], c: u32) -> G1Projective {
    use ark_ff::AdditiveGroup;
    let mut acc = G1Projective::default();
    for s in sums.iter().rev() {
        for _ in 0..c {
            acc.double_in_place();
        }
        acc += from_raw(s);
    }
    acc
}

/// BN254 batches through an [`Engine`] (`engine.bn254()`).
pub struct Bn254<'e> {
    pub(crate) engine: &'e Engine,
}

impl Bn254<'_> {
    /// `sum scalars[i] * bases[i]` over the first `scalars.len()` bases (an empty sum is the
    /// identity). More scalars than bases is an error.
    pub fn msm_g1(&self, bases: &G1Bases, scalars: &[Fr]) -> Result<Output<G1Projective>> {
        if scalars.len() > bases.len() {
            return Err(Error::invalid(format!(
                "{} scalars for {} bases: an MSM needs a base per scalar",
                scalars.len(),
                bases.len()
            )));
        }
        let n = scalars.len();
        let plan = self.engine.dispatcher().plan(
            &workload(n, bases.is_resident()),
            &[Backend::Arkworks],
            cfg!(feature = "cuda"),
            &calibrate,
        )?;
        if n == 0 {
            return Ok(Output {
                value: G1Projective::default(),
                backend: plan.backend,
                threads: plan.threads,
            });
        }
        let value = match plan.backend {
            Backend::Arkworks => cpu::msm_g1(bases.as_slice(), scalars, plan.threads),
            #[cfg(feature = "cuda")]
            Backend::Cuda => {
                let s = msm::Shape::new(n, SCALAR_BITS)?;
                combine_windows(&gpu::window_sums(bases.device()?, scalars, &s)?, s.c)
            }
            other => {
                return Err(Error::BackendUnavailable {
                    backend: other.name().into(),
                    why: "BN254 MSM runs on arkworks and cuda".into(),
                })
            }
        };
        Ok(Output {
            value,
            backend: plan.backend,
            threads: plan.threads,
        })
    }

    /// The transform `t` on each polynomial of `values`, in place (`values.len()` a multiple of
    /// `t.size`). Natural order in and out, the same evaluations as arkworks' `Radix2EvaluationDomain`.
    pub fn ntt(&self, values: &mut [Fr], t: &ntt::Ntt) -> Result<Output<()>> {
        let batch = t.batch_of(values.len())?;
        let plan = self.engine.dispatcher().plan(
            &ntt_workload(t, batch),
            &[Backend::Arkworks],
            cfg!(feature = "cuda"),
            &calibrate_ntt,
        )?;
        // Size 1: the identity, times n^-1 = 1 and g^0 = 1.
        if values.is_empty() || t.size == 1 {
            return Ok(Output {
                value: (),
                backend: plan.backend,
                threads: plan.threads,
            });
        }
        match plan.backend {
            Backend::Arkworks => cpu::ntt(values, t, plan.threads),
            #[cfg(feature = "cuda")]
            Backend::Cuda => gpu::ntt(values, t)?,
            other => {
                return Err(Error::BackendUnavailable {
                    backend: other.name().into(),
                    why: "BN254 NTT runs on arkworks and cuda".into(),
                })
            }
        }
        Ok(Output {
            value: (),
            backend: plan.backend,
            threads: plan.threads,
        })
    }

    /// The estimated time of `t` on `batch` polynomials on all CPU cores and on the GPU (data
    /// from and back to host memory).
    pub fn ntt_estimates(&self, t: &ntt::Ntt, batch: usize) -> [crate::dispatch::Plan; 2] {
        self.engine.dispatcher().estimates(
            &ntt_workload(t, batch),
            Backend::Arkworks,
            &calibrate_ntt,
        )
    }

    /// The estimated time of an MSM of `n` points on all CPU cores and on the GPU (bases in GPU
    /// memory), measuring each backend on first use (`batchcrypt calibrate`).
    pub fn estimates(&self, n: usize) -> [crate::dispatch::Plan; 2] {
        self.engine
            .dispatcher()
            .estimates(&workload(n, true), Backend::Arkworks, &calibrate)
    }
}

/// The scalars always move; the bases too unless they are in GPU memory already.
fn workload(n: usize, resident: bool) -> Workload {
    let n64 = n as u64;
    Workload {
        op: OP_MSM_G1,
        items: n64,
        units: n64,
        bytes_in: 32 * n64 + if resident { 0 } else { 64 * n64 },
        bytes_out: 96,
        location: Location::Host,
    }
}

/// Elements go to the GPU and come back; the work is n/2 log n products per polynomial.
fn ntt_workload(t: &ntt::Ntt, batch: usize) -> Workload {
    let bytes = 32 * (t.size * batch) as u64;
    // Items are elements: one polynomial's stages already spread over every core.
    Workload {
        op: OP_NTT,
        items: (t.size * batch) as u64,
        units: t.work(batch),
        bytes_in: bytes,
        bytes_out: bytes,
        location: Location::Host,
    }
}

/// Deterministic sample points and scalars for calibration, tests and benchmarks: distinct
/// multiples `(1 + i s) G` of the generator (consecutive additions in parallel chunks, one
/// batch normalisation) and uniform scalars.
pub fn sample(n: usize, seed: u64) -> (Vec<G1Affine>, Vec<Fr>) {
    use ark_ec::CurveGroup;
    use ark_ff::UniformRand;
    use rand::SeedableRng;
    use rayon::prelude::*;
    const CHUNK: usize = 1 << 12;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let s = Fr::rand(&mut rng);
    let g = G1Projective::from(G1Affine::generator());
    let step = g * s;
    let mut proj = vec![G1Projective::default(); n];
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
    (G1Projective::normalize_batch(&proj), scalars)
}

/// Measures one backend: a small and a larger MSM (one thread for the CPU, bases resident on the
/// GPU). Pippenger's cost grows a little slower than linearly; the fit is over the sizes where
/// the crossover lies.
fn calibrate(backend: Backend) -> Result<Cost> {
    let (small, large) = match backend {
        Backend::Cuda => (1 << 10, 1 << 16),
        _ => (1 << 8, 1 << 12),
    };
    let (points, scalars) = sample(large, 1);
    let bases = G1Bases::new(points);
    let engine = Engine::with_backend(BackendChoice::Exact(backend));
    let run = |n: usize| -> Result<()> {
        match backend {
            Backend::Arkworks => drop(cpu::msm_g1(bases.as_slice(), &scalars[..n], 1)),
            _ => drop(engine.bn254().msm_g1(&bases, &scalars[..n])?),
        }
        Ok(())
    };
    crate::dispatch::fit(small as u64, || run(small), large as u64, || run(large))
}

/// Measures one backend on forward transforms of 2^10 and 2^16 elements (one thread for the CPU).
fn calibrate_ntt(backend: Backend) -> Result<Cost> {
    use ark_ff::UniformRand;
    use rand::SeedableRng;
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let engine = Engine::with_backend(BackendChoice::Exact(backend));
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
    let (small, large) = (ntt::Ntt::forward(1 << 10), ntt::Ntt::forward(1 << 16));
    let run_small = runner(small);
    let run_large = runner(large);
    crate::dispatch::fit(small.work(1), run_small, large.work(1), run_large)
}

//! BN254 (alt_bn128), the pairing curve of circom/snarkjs and Ethereum's precompiles: its groups
//! as parameters of the generic MSM ([`crate::msm`]: `engine.msm::<bn254::G1>(..)`), and
//! number-theoretic transforms over Fr, the heavy steps of a Groth16 prover.
//!
//! Types are arkworks' (`ark-bn254`). The GPU path of the transforms runs the generic NTT
//! template (`kernels/include/bc/ntt.cuh`, instantiated in `kernels/bn254`) on arkworks' own
//! Montgomery limbs; the CPU path is arkworks' FFT on all cores. Both give the same evaluations
//! (tests/bn254_ntt.rs); the dispatcher picks one per batch.

pub mod cpu;
pub mod gpu;
pub mod ntt;

/// The groups, as MSM type parameters: `engine.msm::<bn254::G2>(..)`.
pub use ark_bn254::{g1::Config as G1, g2::Config as G2};
pub use ark_bn254::{Fq, Fq2, Fr, G1Affine, G1Projective, G2Affine, G2Projective};
pub use crate::msm::{Affine, Bases, Projective};

use crate::backend::{Backend, Primitive};
use crate::dispatch::{Cost, Location, Workload};
use crate::error::{Error, Result};
use crate::operation::{Operation, Split};
use crate::{Engine, Output};

/// Bits of the scalar field's modulus r.
pub const SCALAR_BITS: u32 = 254;

const OP_NTT: &str = "bn254_ntt";

/// Multi-scalar multiplication on G1 (bases resident on the GPU).
pub static MSM_G1: Operation =
    crate::msm::operation::<G1>("bn254_msm_g1", Primitive::Bn254, "BN254 G1 MSM");
/// Multi-scalar multiplication on G2 (bases resident on the GPU).
pub static MSM_G2: Operation =
    crate::msm::operation::<G2>("bn254_msm_g2", Primitive::Bn254, "BN254 G2 MSM");
/// Number-theoretic transforms over Fr.
pub static NTT: Operation = Operation {
    split: Split::Items,
    ..Operation::new(
        OP_NTT,
        Primitive::Bn254,
        "BN254 Fr NTT",
        &[Backend::Arkworks],
        (32, 32, 8),
        calibrate_ntt,
    )
};

impl crate::msm::Group for G1 {
    const KERNELS: &'static str = "bn254_g1";
    const SCALAR_KERNELS: &'static str = "bn254";
    fn image() -> &'static crate::backend::cuda::KernelImage {
        &crate::kernels::BN254
    }
    fn operation() -> &'static Operation {
        &MSM_G1
    }
    #[cfg(feature = "emulation")]
    fn emulated() -> crate::emulation::msm::MsmSteps {
        crate::emulation::bn254::G1_MSM
    }
}

impl crate::msm::Group for G2 {
    const KERNELS: &'static str = "bn254_g2";
    const SCALAR_KERNELS: &'static str = "bn254";
    fn image() -> &'static crate::backend::cuda::KernelImage {
        &crate::kernels::BN254
    }
    fn operation() -> &'static Operation {
        &MSM_G2
    }
    #[cfg(feature = "emulation")]
    fn emulated() -> crate::emulation::msm::MsmSteps {
        crate::emulation::bn254::G2_MSM
    }
}

pub type G1Bases = Bases<G1>;
pub type G2Bases = Bases<G2>;

/// Transforms over Fr through an [`Engine`] (`engine.bn254()`).
pub struct Bn254<'e> {
    pub(crate) engine: &'e Engine,
}

impl Bn254<'_> {
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

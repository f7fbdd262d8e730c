//! BN254 (alt_bn128), the pairing curve of circom/snarkjs and Ethereum's precompiles: its groups
//! as parameters of the generic MSM ([`crate::msm`]: `engine.msm::<bn254::G1>(..)`) and its
//! scalar field as a parameter of the generic NTT ([`crate::ntt`]: `engine.ntt(&mut frs, ..)`),
//! the heavy steps of a Groth16 prover.
//!
//! Types are arkworks' (`ark-bn254`); the kernels are the generic templates instantiated in
//! `kernels/bn254`, on arkworks' own Montgomery limbs.

pub use crate::msm::{Affine, Bases, Projective};
/// The groups, as MSM type parameters: `engine.msm::<bn254::G2>(..)`.
pub use ark_bn254::{g1::Config as G1, g2::Config as G2};
pub use ark_bn254::{Bn254, Fq, Fq2, Fr, G1Affine, G1Projective, G2Affine, G2Projective};

use crate::backend::Primitive;
use crate::operation::Operation;

/// Bits of the scalar field's modulus r.
pub const SCALAR_BITS: u32 = 254;

/// Multi-scalar multiplication on G1 (bases resident on the GPU).
pub static MSM_G1: Operation =
    crate::msm::operation::<G1>("bn254_msm_g1", Primitive::Bn254, "BN254 G1 MSM");
/// Multi-scalar multiplication on G2 (bases resident on the GPU).
pub static MSM_G2: Operation =
    crate::msm::operation::<G2>("bn254_msm_g2", Primitive::Bn254, "BN254 G2 MSM");
/// Number-theoretic transforms over Fr.
pub static NTT: Operation =
    crate::ntt::operation::<Fr>("bn254_ntt", Primitive::Bn254, "BN254 Fr NTT");

impl crate::ntt::Field for Fr {
    const KERNELS: &'static str = "bn254";
    const ROOT_BASE: u64 = 5;
    fn image() -> &'static crate::backend::cuda::KernelImage {
        &crate::kernels::BN254
    }
    fn operation() -> &'static Operation {
        &NTT
    }
    #[cfg(feature = "emulation")]
    fn emulated() -> crate::emulation::ntt::NttSteps {
        crate::emulation::bn254::NTT
    }
}

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

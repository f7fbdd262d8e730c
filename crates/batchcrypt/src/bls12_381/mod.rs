//! BLS12-381, the pairing curve of Filecoin's, Zcash's and Ethereum's consensus proofs and
//! signatures: its groups as parameters of the generic MSM ([`crate::msm`]:
//! `engine.msm::<bls12_381::G1>(..)`).
//!
//! Types are arkworks' (`ark-bls12-381`), whose MSM is the CPU backend and the reference. The
//! GPU path runs the same field, curve and MSM templates as BN254's over twelve-limb Fq
//! (`kernels/bls12_381`).

pub use ark_bls12_381::{g1::Config as G1, g2::Config as G2};
pub use ark_bls12_381::{Fq, Fq2, Fr, G1Affine, G1Projective, G2Affine, G2Projective};
pub use crate::msm::{Affine, Bases, Projective};

use crate::backend::Primitive;
use crate::operation::Operation;

/// Multi-scalar multiplication on G1 (bases resident on the GPU).
pub static MSM_G1: Operation =
    crate::msm::operation::<G1>("bls12_381_msm_g1", Primitive::Bls12_381, "BLS12-381 G1 MSM");
/// Multi-scalar multiplication on G2 (bases resident on the GPU).
pub static MSM_G2: Operation =
    crate::msm::operation::<G2>("bls12_381_msm_g2", Primitive::Bls12_381, "BLS12-381 G2 MSM");

impl crate::msm::Group for G1 {
    const KERNELS: &'static str = "bls12_381_g1";
    const SCALAR_KERNELS: &'static str = "bls12_381";
    fn image() -> &'static crate::backend::cuda::KernelImage {
        &crate::kernels::BLS12_381
    }
    fn operation() -> &'static Operation {
        &MSM_G1
    }
    #[cfg(feature = "emulation")]
    fn emulated() -> crate::emulation::msm::MsmSteps {
        crate::emulation::bls12_381::G1_MSM
    }
}

impl crate::msm::Group for G2 {
    const KERNELS: &'static str = "bls12_381_g2";
    const SCALAR_KERNELS: &'static str = "bls12_381";
    fn image() -> &'static crate::backend::cuda::KernelImage {
        &crate::kernels::BLS12_381
    }
    fn operation() -> &'static Operation {
        &MSM_G2
    }
    #[cfg(feature = "emulation")]
    fn emulated() -> crate::emulation::msm::MsmSteps {
        crate::emulation::bls12_381::G2_MSM
    }
}

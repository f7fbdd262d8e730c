//! BLS12-381, the pairing curve of Filecoin's, Zcash's and Ethereum's consensus proofs and
//! signatures: its groups as parameters of the generic MSM ([`crate::msm`]:
//! `engine.msm::<bls12_381::G1>(..)`) and its scalar field as a parameter of the generic NTT
//! ([`crate::ntt`]).
//!
//! Types are arkworks' (`ark-bls12-381`), whose MSM and FFT are the CPU backends and the
//! references. The GPU path runs the same field, curve, MSM and NTT templates as BN254's, over
//! twelve-limb Fq (`kernels/bls12_381`). The transforms' roots of unity are snarkjs's (powers of
//! 5), not arkworks' (of 7), so a prover's evaluations match a snarkjs proving key.

pub use crate::msm::{Affine, Bases, Projective};
pub use ark_bls12_381::{g1::Config as G1, g2::Config as G2};
pub use ark_bls12_381::{Bls12_381, Fq, Fq2, Fr, G1Affine, G1Projective, G2Affine, G2Projective};

use crate::backend::Primitive;
use crate::operation::Operation;

/// Multi-scalar multiplication on G1 (bases resident on the GPU).
pub static MSM_G1: Operation =
    crate::msm::operation::<G1>("bls12_381_msm_g1", Primitive::Bls12_381, "BLS12-381 G1 MSM");
/// Multi-scalar multiplication on G2 (bases resident on the GPU).
pub static MSM_G2: Operation =
    crate::msm::operation::<G2>("bls12_381_msm_g2", Primitive::Bls12_381, "BLS12-381 G2 MSM");
/// Number-theoretic transforms over Fr.
pub static NTT: Operation =
    crate::ntt::operation::<Fr>("bls12_381_ntt", Primitive::Bls12_381, "BLS12-381 Fr NTT");

impl crate::ntt::Field for Fr {
    const KERNELS: &'static str = "bls12_381";
    const ROOT_BASE: u64 = 5;
    fn image() -> &'static crate::backend::cuda::KernelImage {
        &crate::kernels::BLS12_381
    }
    fn operation() -> &'static Operation {
        &NTT
    }
    #[cfg(feature = "emulation")]
    fn emulated() -> crate::emulation::ntt::NttSteps {
        crate::emulation::bls12_381::NTT
    }
}

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

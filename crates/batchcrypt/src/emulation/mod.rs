//! The CUDA kernel sources compiled for the host and run on the CPU (feature `emulation`): one
//! "thread" walks each kernel's whole grid-stride loop, so tests check the exact kernel code on
//! machines without a GPU. Inline PTX has a portable twin there; the GPU run covers the PTX.

pub mod secp256k1;
pub mod sm2;
pub mod sha256;
pub mod sm3;

//! batchcrypt: batches of the same cryptographic operation on the fastest hardware present —
//! NVIDIA GPUs through CUDA, and CPU extensions (SHA-NI, AVX2, AVX-512) — behind one API.
//!
//! ```
//! use batchcrypt::{Engine, sha256::Mode};
//! let engine = Engine::new()?;
//! let nodes = vec![7u8; 64 * 1000]; // 1000 merkle nodes
//! let out = engine.sha256().hash_fixed(&nodes, 64, Mode::Double)?;
//! assert_eq!(out.value.len(), 1000);
//! println!("ran on {}", out.backend);
//! # Ok::<(), batchcrypt::Error>(())
//! ```
//!
//! Layout: `backend` (what hardware exists — CPU extensions and every GPU — and how to name it),
//! `dispatch` (which backend, and which GPUs, run a batch), `pipeline` (host↔GPU streaming),
//! `memory` (GPU memory admission, host buffer reuse), one module per primitive (`sha256`,
//! `secp256k1`, `sm2`, `sm3`, `aes`, `bn254`), and the protocols and applications over them:
//! `psi` (ECDH-PSI over SM2), `groth16` (circom/snarkjs proofs), `bitcoin` (block validation).

pub mod aes;
pub mod backend;
pub mod bitcoin;
pub mod bn254;
pub mod dispatch;
#[cfg(feature = "emulation")]
pub mod emulation;
mod error;
pub mod groth16;
pub mod memory;
pub mod messages;
pub mod pipeline;
pub mod psi;
pub mod secp256k1;
pub mod sha256;
pub mod sig;
pub mod sm2;
pub mod sm3;

pub use backend::{Backend, BackendChoice, Primitive};
pub use error::{Error, Result};

/// Kernel images built from `kernels/` by build.rs (each `None`, and `BUILT` false, when the build
/// had no nvcc or the `cuda` feature off; `NOT_BUILT` says which).
pub mod kernels {
    include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
}

use std::sync::OnceLock;

/// A result together with the backend that produced it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output<T> {
    pub value: T,
    pub backend: Backend,
    /// CPU threads used (1 for the GPU).
    pub threads: usize,
}

/// The entry point: holds the backend choice and the dispatcher's measurements.
pub struct Engine {
    dispatcher: dispatch::Dispatcher,
}

impl Engine {
    /// An engine with the choice from `BATCHCRYPT_BACKEND` (default `auto`).
    pub fn new() -> Result<Self> {
        Ok(Self::with_backend(BackendChoice::from_env()?))
    }

    pub fn with_backend(choice: BackendChoice) -> Self {
        Engine {
            dispatcher: dispatch::Dispatcher::new(choice),
        }
    }

    /// An engine that uses only the GPUs `gpus` lists (indices among the process's GPUs, in the
    /// order `batchcrypt info` lists them). Which GPUs the process sees at all is
    /// `BATCHCRYPT_DEVICES`' choice.
    pub fn with_gpus(choice: BackendChoice, gpus: &[usize]) -> Self {
        Engine {
            dispatcher: dispatch::Dispatcher::with_gpus(choice, Some(gpus.to_vec())),
        }
    }

    /// A process-wide engine with the environment's choice (`auto` if the variable is malformed).
    pub fn global() -> &'static Engine {
        static E: OnceLock<Engine> = OnceLock::new();
        E.get_or_init(|| {
            Engine::new().unwrap_or_else(|_| Engine::with_backend(BackendChoice::Auto))
        })
    }

    pub fn dispatcher(&self) -> &dispatch::Dispatcher {
        &self.dispatcher
    }

    pub fn sha256(&self) -> sha256::Sha256<'_> {
        sha256::Sha256 { engine: self }
    }

    pub fn secp256k1(&self) -> secp256k1::Secp256k1<'_> {
        secp256k1::Secp256k1 { engine: self }
    }

    pub fn sm2(&self) -> sm2::Sm2<'_> {
        sm2::Sm2 { engine: self }
    }

    pub fn sm3(&self) -> sm3::Sm3<'_> {
        sm3::Sm3 { engine: self }
    }

    pub fn aes(&self) -> aes::Aes<'_> {
        aes::Aes { engine: self }
    }

    pub fn bn254(&self) -> bn254::Bn254<'_> {
        bn254::Bn254 { engine: self }
    }

    /// Groth16 proofs for circom/snarkjs circuits over BN254.
    pub fn groth16(&self) -> groth16::Groth16<'_> {
        groth16::Groth16 { engine: self }
    }
}

/// A one-paragraph description of the hardware found, for `batchcrypt info` and the benchmarks.
pub fn describe_hardware() -> String {
    let f = backend::cpu::features();
    let mut s = format!(
        "CPU: {} threads; sha-ni={} avx2={} avx512={} aes-ni={} vaes={}\n",
        backend::cpu::threads(),
        f.sha_ni,
        f.avx2,
        f.avx512,
        f.aes_ni,
        f.vaes
    );
    match backend::gpu::infos() {
        Ok(gpus) => {
            for (index, i) in gpus.iter().enumerate() {
                s += &format!(
                    "GPU {index}: {} (device {}, sm_{}{}, {}), {} SMs, {:.1} GiB, {} MHz\n",
                    i.name,
                    i.ordinal,
                    i.compute_capability.0,
                    i.compute_capability.1,
                    i.pci_bus_id,
                    i.multiprocessors,
                    i.total_memory as f64 / (1u64 << 30) as f64,
                    i.clock_khz / 1000
                );
            }
        }
        Err(why) => s += &format!("GPU: none ({why})\n"),
    }
    s
}

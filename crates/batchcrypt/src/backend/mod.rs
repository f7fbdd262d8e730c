//! The backend layer: what implementations exist, what this machine has, and how a caller names one.
//!
//! `cpu` detects instruction-set extensions at run time; `cuda` finds the driver and opens every
//! device the process may use; `gpu` answers for the GPUs in every build (none, and why, without
//! CUDA); `device` names and describes them. Nothing panics when the hardware is missing: absence
//! is an ordinary answer.

pub mod cpu;
pub mod cuda;
pub mod device;
pub mod gpu;
pub mod nvml;

use crate::error::{Error, Result};
use std::fmt;
use std::str::FromStr;

/// One implementation of a primitive. Each primitive supports a subset (see its module).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Backend {
    /// Plain Rust, one item at a time: the reference every other backend is checked against.
    Portable,
    /// x86 SHA extensions; one message, or two interleaved to hide instruction latency.
    ShaNi,
    /// AVX2 multi-buffer: 8 independent messages in the lanes of 256-bit registers.
    Avx2,
    /// AVX-512 multi-buffer: 16 independent messages in the lanes of 512-bit registers.
    Avx512,
    /// NVIDIA GPU through the CUDA driver.
    Cuda,
    /// Bitcoin Core's libsecp256k1 (through the `secp256k1` crate): the CPU reference for secp256k1
    /// signature verification.
    Libsecp256k1,
    /// OpenSSL's libcrypto: the fastest CPU code for AES (AES-NI/VAES assembly), and the CPU
    /// reference for P-256 ECDSA.
    OpenSsl,
    /// arkworks (`ark-ec`): the CPU multi-scalar multiplication on BN254.
    Arkworks,
}

/// A family of operations. Each backend implements some of them; [`Backend::implements`] (from
/// the operation registry, [`crate::operation`]) says which.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Primitive {
    /// SHA-256, SHA256d, merkle roots (module `sha256`).
    Sha256,
    /// secp256k1 ECDSA and BIP340 Schnorr verification (module `secp256k1`).
    Secp256k1,
    /// NIST P-256 ECDSA verification (module `p256`).
    P256,
    /// SM2 scalar multiplication and hash-to-curve (module `sm2`).
    Sm2,
    /// SM3 hashing (module `sm3`).
    Sm3,
    /// Bulk AES-CTR and AES-GCM (module `aes`).
    Aes,
    /// BN254 multi-scalar multiplication and Fr NTTs (module `bn254`).
    Bn254,
    /// BLS12-381 multi-scalar multiplication (module `bls12_381`).
    Bls12_381,
}

impl Primitive {
    pub const ALL: [Primitive; 8] = [
        Primitive::Sha256,
        Primitive::Secp256k1,
        Primitive::P256,
        Primitive::Sm2,
        Primitive::Sm3,
        Primitive::Aes,
        Primitive::Bn254,
        Primitive::Bls12_381,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Primitive::Sha256 => "sha256",
            Primitive::Secp256k1 => "secp256k1",
            Primitive::P256 => "p256",
            Primitive::Sm2 => "sm2",
            Primitive::Sm3 => "sm3",
            Primitive::Aes => "aes",
            Primitive::Bn254 => "bn254",
            Primitive::Bls12_381 => "bls12-381",
        }
    }
}

impl FromStr for Primitive {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let s = s.trim().to_ascii_lowercase();
        Primitive::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Primitive::ALL.iter().map(|p| p.name()).collect();
                Error::invalid(format!(
                    "unknown primitive {s:?}; expected one of: {}",
                    names.join(", ")
                ))
            })
    }
}

impl Backend {
    pub const ALL: [Backend; 8] = [
        Backend::Portable,
        Backend::ShaNi,
        Backend::Avx2,
        Backend::Avx512,
        Backend::Cuda,
        Backend::Libsecp256k1,
        Backend::OpenSsl,
        Backend::Arkworks,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Backend::Portable => "portable",
            Backend::ShaNi => "sha-ni",
            Backend::Avx2 => "avx2",
            Backend::Avx512 => "avx512",
            Backend::Cuda => "cuda",
            Backend::Libsecp256k1 => "libsecp256k1",
            Backend::OpenSsl => "openssl",
            Backend::Arkworks => "arkworks",
        }
    }

    pub fn is_gpu(self) -> bool {
        matches!(self, Backend::Cuda)
    }

    /// Whether this machine and build can run the backend right now, and if not, why.
    pub fn availability(self) -> std::result::Result<(), String> {
        let cpu = cpu::features();
        let need = |ok: bool, what: &str| {
            if ok {
                Ok(())
            } else {
                Err(format!("this CPU lacks {what}"))
            }
        };
        match self {
            Backend::Portable => Ok(()),
            Backend::ShaNi => need(cpu.sha_ni, "the SHA extensions (SHA-NI)"),
            Backend::Avx2 => need(cpu.avx2, "AVX2"),
            Backend::Avx512 => need(cpu.avx512, "AVX-512 (F and BW)"),
            Backend::Cuda => gpu::availability(),
            // Compiled in from source by the `secp256k1-sys` crate: present in every build.
            Backend::Libsecp256k1 => Ok(()),
            // Linked against the system's libcrypto: present in every build.
            Backend::OpenSsl => Ok(()),
            // A Rust dependency: present in every build.
            Backend::Arkworks => Ok(()),
        }
    }

    pub fn is_available(self) -> bool {
        self.availability().is_ok()
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the caller asks for. `Auto` lets the dispatcher's cost model decide per batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BackendChoice {
    #[default]
    Auto,
    /// The fastest CPU backend for the batch; never the GPU.
    Cpu,
    /// The GPU; an error if there is none.
    Gpu,
    /// Exactly this backend; an error if it is unavailable or does not implement the operation.
    Exact(Backend),
}

/// Environment variable that sets the default choice (same syntax as the CLI's `--backend`).
pub const BACKEND_ENV: &str = "BATCHCRYPT_BACKEND";

impl BackendChoice {
    /// The choice named by `BATCHCRYPT_BACKEND`, or `Auto` when it is unset.
    pub fn from_env() -> Result<Self> {
        match std::env::var(BACKEND_ENV) {
            Ok(v) if !v.trim().is_empty() => v
                .parse()
                .map_err(|e: Error| Error::invalid(format!("{BACKEND_ENV}={v:?}: {e}"))),
            _ => Ok(BackendChoice::Auto),
        }
    }
}

pub const CHOICE_HELP: &str =
    "auto, cpu, gpu, portable, sha-ni, avx2, avx512, cuda, libsecp256k1, openssl, arkworks";

impl FromStr for BackendChoice {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let s = s.trim().to_ascii_lowercase();
        Ok(match s.as_str() {
            "auto" => BackendChoice::Auto,
            "cpu" => BackendChoice::Cpu,
            "gpu" => BackendChoice::Gpu,
            other => match Backend::ALL
                .iter()
                .find(|b| b.name() == other || (other == "shani" && **b == Backend::ShaNi))
            {
                Some(b) => BackendChoice::Exact(*b),
                None => {
                    return Err(Error::invalid(format!(
                        "unknown backend {other:?}; expected one of: {CHOICE_HELP}"
                    )))
                }
            },
        })
    }
}

impl fmt::Display for BackendChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendChoice::Auto => f.write_str("auto"),
            BackendChoice::Cpu => f.write_str("cpu"),
            BackendChoice::Gpu => f.write_str("gpu"),
            BackendChoice::Exact(b) => f.write_str(b.name()),
        }
    }
}

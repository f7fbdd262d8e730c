//! Batch verification of secp256k1 signatures: ECDSA (DER or compact, SEC1 keys) and BIP340
//! Schnorr (x-only keys, messages of any length).
//!
//! Every item is parsed once by [`parse`], whose rules decide what is accepted, whatever backend
//! runs the arithmetic afterwards; so all backends give the same verdict on every input. A batch
//! fails as a whole only when it is malformed as a batch (slices of different lengths, no items);
//! a bad item gets the [`Reason`] in its slot and the rest are still checked.
//!
//! Backends: `libsecp256k1` on the CPU ([`cpu`]); the GPU backend plugs in behind the same
//! [`Prepared`] items.

pub mod cpu;
pub(crate) mod gpu;
pub mod parse;

pub use crate::sig::{SigFormat, Verdicts};
pub use parse::{Prepared, Reason, SchnorrPrepared};

use crate::backend::{Backend, BackendChoice, Primitive};
use crate::dispatch::{Cost, Workload};
use crate::error::{Error, Result};
use crate::operation::Operation;
use crate::{Engine, Output};

/// Cost-model keys of the two operations.
pub const OP_ECDSA: &str = "secp256k1-ecdsa";
pub const OP_SCHNORR: &str = "secp256k1-schnorr";

/// ECDSA verification: DER or compact signatures, SEC1 keys, 32-byte message hashes.
pub static ECDSA: Operation = Operation::new(
    OP_ECDSA,
    Primitive::Secp256k1,
    "ECDSA verification (DER or compact signatures, SEC1 keys)",
    CPU_ORDER,
    (32 + 72 + 33, 1, 1),
    |b| calibrate(OP_ECDSA, b),
);

/// BIP340 Schnorr verification: x-only keys, messages of any length.
pub static SCHNORR: Operation = Operation::new(
    OP_SCHNORR,
    Primitive::Secp256k1,
    "BIP340 Schnorr verification (x-only keys)",
    CPU_ORDER,
    (32 + 64 + 32, 1, 1),
    |b| calibrate(OP_SCHNORR, b),
);

/// CPU backends, fastest first.
const CPU_ORDER: &[Backend] = &[Backend::Libsecp256k1];

/// From this many items the CPU cost is measured (once per process, about 400 verifications)
/// before planning: a signature costs as much as tens of kilobytes of hashing, so the dispatcher's
/// by-the-byte guess would keep batches of hundreds of signatures on one thread.
const MEASURE_MIN_ITEMS: usize = 64;

/// ECDSA acceptance rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct EcdsaOptions {
    pub format: SigFormat,
    /// Reject `s > n/2` (BIP62/BIP146 standardness) instead of accepting it as `n - s`.
    pub require_low_s: bool,
}

/// secp256k1 signature verification on an [`Engine`].
pub struct Secp256k1<'e> {
    pub(crate) engine: &'e Engine,
}

impl Secp256k1<'_> {
    /// Verifies ECDSA signature `i` over the 32-byte message hash `hashes[i]` with public key
    /// `pubkeys[i]` (SEC1, 33 or 65 bytes).
    pub fn verify_ecdsa(
        &self,
        hashes: &[[u8; 32]],
        sigs: &[&[u8]],
        pubkeys: &[&[u8]],
        opts: &EcdsaOptions,
    ) -> Result<Output<Verdicts>> {
        let n = crate::sig::batch_len(&[
            ("hashes", hashes.len()),
            ("signatures", sigs.len()),
            ("public keys", pubkeys.len()),
        ])?;
        let bytes_in = 32 * n as u64 + total_len(sigs) + total_len(pubkeys);
        let w = self.workload(&ECDSA, n, bytes_in);
        let out = self.engine.run(
            &ECDSA,
            &w,
            CPU_ORDER,
            |_, threads| {
                Ok(crate::backend::cpu::par_map(1, n, threads, |i| {
                    cpu::verify_ecdsa_encoded(&hashes[i], sigs[i], pubkeys[i], opts)
                }))
            },
            |r, _| {
                gpu::verify(gpu::Scheme::Ecdsa, r.len(), |i| {
                    let i = r.start + i;
                    gpu::ecdsa_item(&hashes[i], sigs[i], pubkeys[i], opts)
                })
            },
        )?;
        Ok(out.map(|results| Verdicts { results }))
    }

    /// Verifies BIP340 signature `i` over `msgs[i]` (any length) with x-only key `pubkeys[i]`.
    pub fn verify_schnorr(
        &self,
        msgs: &[&[u8]],
        sigs: &[[u8; 64]],
        pubkeys: &[[u8; 32]],
    ) -> Result<Output<Verdicts>> {
        let n = crate::sig::batch_len(&[
            ("messages", msgs.len()),
            ("signatures", sigs.len()),
            ("public keys", pubkeys.len()),
        ])?;
        let bytes_in = 96 * n as u64 + total_len(msgs);
        let w = self.workload(&SCHNORR, n, bytes_in);
        let out = self.engine.run(
            &SCHNORR,
            &w,
            CPU_ORDER,
            |_, threads| {
                Ok(crate::backend::cpu::par_map(1, n, threads, |i| {
                    cpu::verify_schnorr_encoded(&sigs[i], &pubkeys[i], msgs[i])
                }))
            },
            |r, _| {
                gpu::verify(gpu::Scheme::Schnorr, r.len(), |i| {
                    let i = r.start + i;
                    gpu::schnorr_item(&sigs[i], &pubkeys[i], msgs[i])
                })
            },
        )?;
        Ok(out.map(|results| Verdicts { results }))
    }

    /// Kernel-only GPU time for ECDSA items (prepared on the host, then resident on the device):
    /// the median of `iters` launches in seconds, and the verdicts. For benchmarks; `verify_ecdsa`
    /// is the API.
    pub fn ecdsa_kernel_seconds(
        &self,
        hashes: &[[u8; 32]],
        sigs: &[&[u8]],
        pubkeys: &[&[u8]],
        opts: &EcdsaOptions,
        iters: usize,
    ) -> Result<(f64, Verdicts)> {
        let n = crate::sig::batch_len(&[
            ("hashes", hashes.len()),
            ("signatures", sigs.len()),
            ("public keys", pubkeys.len()),
        ])?;
        let (t, results) = gpu::time_kernel(
            gpu::Scheme::Ecdsa,
            n,
            |i| gpu::ecdsa_item(&hashes[i], sigs[i], pubkeys[i], opts),
            iters,
        )?;
        Ok((t, Verdicts { results }))
    }

    /// Kernel-only GPU time for BIP340 items, as [`Self::ecdsa_kernel_seconds`].
    pub fn schnorr_kernel_seconds(
        &self,
        msgs: &[&[u8]],
        sigs: &[[u8; 64]],
        pubkeys: &[[u8; 32]],
        iters: usize,
    ) -> Result<(f64, Verdicts)> {
        let n = crate::sig::batch_len(&[
            ("messages", msgs.len()),
            ("signatures", sigs.len()),
            ("public keys", pubkeys.len()),
        ])?;
        let (t, results) = gpu::time_kernel(
            gpu::Scheme::Schnorr,
            n,
            |i| gpu::schnorr_item(&sigs[i], &pubkeys[i], msgs[i]),
            iters,
        )?;
        Ok((t, Verdicts { results }))
    }

    /// The batch as the cost model sees it; from [`MEASURE_MIN_ITEMS`] items the CPU cost is
    /// measured first where the CPU may run it.
    fn workload(&self, op: &'static Operation, n: usize, bytes_in: u64) -> Workload {
        let d = self.engine.dispatcher();
        let may_run_on_cpu = matches!(
            d.choice(),
            BackendChoice::Auto | BackendChoice::Cpu | BackendChoice::Exact(Backend::Libsecp256k1)
        );
        if n >= MEASURE_MIN_ITEMS && may_run_on_cpu {
            // Unmeasurable only if the sample batch itself fails, which leaves the plain estimate.
            let _ = d.cost(op.key, Backend::Libsecp256k1, op);
        }
        op.workload(n as u64, bytes_in, n as u64, n as u64)
    }
}

fn total_len(items: &[&[u8]]) -> u64 {
    items.iter().map(|b| b.len() as u64).sum()
}

fn not_implemented(b: Backend, op: &str) -> Error {
    Error::BackendUnavailable {
        backend: b.name().into(),
        why: format!("operation {op} is not implemented by this backend"),
    }
}

/// Measures one backend on valid signatures (compute only): a small and a larger batch on one
/// thread, fitted by [`crate::dispatch::fit`].
fn calibrate(op: &'static str, backend: Backend) -> Result<Cost> {
    let sample = Sample::new(64);
    let schnorr = op == OP_SCHNORR;
    let valid = |ok: bool| {
        ok.then_some(())
            .ok_or_else(|| Error::invalid("calibration sample failed to verify"))
    };
    match backend {
        Backend::Libsecp256k1 => {
            let (small, large) = (4, sample.hashes.len());
            let run = |n: usize| -> Result<()> {
                valid(match schnorr {
                    true => (0..n).all(|i| {
                        cpu::verify_schnorr_encoded(
                            &sample.schnorr[i],
                            &sample.xonly[i],
                            &sample.hashes[i],
                        )
                        .is_ok()
                    }),
                    false => (0..n).all(|i| {
                        cpu::verify_ecdsa_encoded(
                            &sample.hashes[i],
                            &sample.der[i],
                            &sample.sec1[i],
                            &EcdsaOptions::default(),
                        )
                        .is_ok()
                    }),
                })
            };
            crate::dispatch::fit_sizes(small, large, 1, run)
        }
        // End to end on the device (transfers of these small batches are negligible next to the math).
        Backend::Cuda => {
            const LARGE: usize = 1 << 14;
            let engine = crate::Engine::measuring(Backend::Cuda);
            let m = sample.hashes.len();
            let pick = |n: usize| (0..n).map(|i| i % m);
            let run = |n: usize| -> Result<()> {
                let out = if schnorr {
                    let msgs: Vec<&[u8]> = pick(n).map(|i| sample.hashes[i].as_slice()).collect();
                    let sigs: Vec<[u8; 64]> = pick(n).map(|i| sample.schnorr[i]).collect();
                    let keys: Vec<[u8; 32]> = pick(n).map(|i| sample.xonly[i]).collect();
                    engine.secp256k1().verify_schnorr(&msgs, &sigs, &keys)?
                } else {
                    let hashes: Vec<[u8; 32]> = pick(n).map(|i| sample.hashes[i]).collect();
                    let sigs: Vec<&[u8]> = pick(n).map(|i| sample.der[i].as_slice()).collect();
                    let keys: Vec<&[u8]> = pick(n).map(|i| sample.sec1[i].as_slice()).collect();
                    engine.secp256k1().verify_ecdsa(
                        &hashes,
                        &sigs,
                        &keys,
                        &EcdsaOptions::default(),
                    )?
                };
                valid(out.value.all_valid())
            };
            crate::dispatch::fit_sizes(1, LARGE, 1, run)
        }
        other => Err(not_implemented(other, op)),
    }
}

/// Valid signatures from fixed keys, for measuring.
struct Sample {
    hashes: Vec<[u8; 32]>,
    der: Vec<Vec<u8>>,
    sec1: Vec<[u8; 33]>,
    schnorr: Vec<[u8; 64]>,
    xonly: Vec<[u8; 32]>,
}

impl Sample {
    fn new(n: usize) -> Self {
        use secp256k1::{ecdsa, schnorr, Keypair, Message};
        let mut s = Sample {
            hashes: vec![],
            der: vec![],
            sec1: vec![],
            schnorr: vec![],
            xonly: vec![],
        };
        for i in 0..n as u32 {
            let hash = crate::sha256::digest(&i.to_le_bytes());
            let mut secret = crate::sha256::digest(&hash);
            secret[0] = 0; // below n, and (with overwhelming odds) not zero
            let Ok(keys) = Keypair::from_secret_bytes(secret) else {
                continue;
            };
            let sk = keys.secret_key();
            s.der.push(
                ecdsa::sign(Message::from_digest(hash), &sk)
                    .serialize_der()
                    .to_vec(),
            );
            s.sec1.push(keys.public_key().serialize());
            s.schnorr
                .push(schnorr::sign_no_aux_rand(&hash, &keys).to_byte_array());
            s.xonly.push(keys.x_only_public_key().0.to_byte_array());
            s.hashes.push(hash);
        }
        s
    }
}

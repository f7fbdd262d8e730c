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

pub use crate::ecdsa::EcdsaOptions;
pub use crate::sig::{SigFormat, Verdicts};
pub use parse::{Prepared, Reason, SchnorrPrepared};

use crate::backend::{Backend, Primitive};
use crate::dispatch::Cost;
use crate::error::Result;
use crate::operation::Operation;
use crate::sig::batch::total_len;
use crate::sig::items::{self, device::Kernel, Encoded};
use crate::sig::Sec1Key;
use crate::{Engine, Output};

/// The GPU items of BIP340 `(message, signature, key)` triples, encoded ahead of their batch
/// ([`Secp256k1::verify_schnorr_pre_encoded`]).
pub(crate) fn pre_encode_schnorr(items: &[(&[u8], &[u8; 64], &[u8; 32])]) -> Encoded {
    Encoded::host_items(items.len(), |i| {
        let (msg, sig, key) = items[i];
        gpu::schnorr_item(sig, key, msg)
    })
}

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
    crate::ecdsa::calibrate::<Secp256k1Curve>,
);

/// BIP340 Schnorr verification: x-only keys, messages of any length.
pub static SCHNORR: Operation = Operation::new(
    OP_SCHNORR,
    Primitive::Secp256k1,
    "BIP340 Schnorr verification (x-only keys)",
    CPU_ORDER,
    (32 + 64 + 32, 1, 1),
    calibrate_schnorr,
);

/// CPU backends, fastest first.
const CPU_ORDER: &[Backend] = &[Backend::Libsecp256k1];

/// secp256k1 (SEC 2 §2.4.1) as an ECDSA curve: the GLV kernel on the GPU, libsecp256k1 on the CPU.
pub struct Secp256k1Curve;

impl crate::ecdsa::Curve for Secp256k1Curve {
    const N: [u8; 32] = parse::N;
    const P: [u8; 32] = parse::P;

    fn operation() -> &'static Operation {
        &ECDSA
    }

    fn kernel() -> Kernel {
        gpu::ecdsa_kernel()
    }

    fn cpu_verify(
        hash: &[u8; 32],
        r: &[u8; 32],
        s: &[u8; 32],
        key: &Sec1Key,
    ) -> std::result::Result<(), Reason> {
        cpu::ecdsa_equation(hash, r, s, &parse::on_curve(key)?)
    }

    fn sample(seed: u32) -> ([u8; 32], Vec<u8>, Vec<u8>) {
        use secp256k1::{ecdsa, Message, SecretKey};
        let (hash, secret) = sample_secret(seed);
        let sk = SecretKey::from_secret_bytes(secret).expect("a secret below n");
        let sig = ecdsa::sign(Message::from_digest(hash), &sk)
            .serialize_der()
            .to_vec();
        let key = secp256k1::PublicKey::from_secret_key(&sk)
            .serialize()
            .to_vec();
        (hash, sig, key)
    }

    #[cfg(feature = "emulation")]
    fn emulated() -> crate::emulation::VerifyKernel {
        crate::emulation::secp256k1::ECDSA
    }
}

/// A message hash and a secret key (below n, non-zero with overwhelming odds) from a seed.
pub(crate) fn sample_secret(seed: u32) -> ([u8; 32], [u8; 32]) {
    let hash = crate::sha256::digest(&seed.to_le_bytes());
    let mut secret = crate::sha256::digest(&hash);
    secret[0] = 0;
    (hash, secret)
}

/// secp256k1 signature verification on an [`Engine`].
pub struct Secp256k1<'e> {
    pub(crate) engine: &'e Engine,
}

impl Secp256k1<'_> {
    /// Verifies ECDSA signature `i` over the 32-byte message hash `hashes[i]` with public key
    /// `pubkeys[i]` (SEC1, 33 or 65 bytes): [`crate::ecdsa::Ecdsa::verify`] on secp256k1.
    pub fn verify_ecdsa(
        &self,
        hashes: &[[u8; 32]],
        sigs: &[&[u8]],
        pubkeys: &[&[u8]],
        opts: &EcdsaOptions,
    ) -> Result<Output<Verdicts>> {
        self.engine
            .ecdsa::<Secp256k1Curve>()
            .verify(hashes, sigs, pubkeys, opts)
    }

    /// Verifies BIP340 signature `i` over `msgs[i]` (any length) with x-only key `pubkeys[i]`.
    pub fn verify_schnorr(
        &self,
        msgs: &[&[u8]],
        sigs: &[[u8; 64]],
        pubkeys: &[[u8; 32]],
    ) -> Result<Output<Verdicts>> {
        self.verify_schnorr_with(msgs, sigs, pubkeys, None)
    }

    fn verify_schnorr_with(
        &self,
        msgs: &[&[u8]],
        sigs: &[[u8; 64]],
        pubkeys: &[[u8; 32]],
        pieces: Option<&[&Encoded]>,
    ) -> Result<Output<Verdicts>> {
        let n = crate::sig::batch_len(&[
            ("messages", msgs.len()),
            ("signatures", sigs.len()),
            ("public keys", pubkeys.len()),
        ])?;
        crate::sig::batch::verify(
            self.engine,
            &SCHNORR,
            n,
            96 * n as u64 + total_len(msgs),
            |i| cpu::verify_schnorr_encoded(&sigs[i], &pubkeys[i], msgs[i]),
            &gpu::schnorr_kernel(),
            |i| gpu::schnorr_item(&sigs[i], &pubkeys[i], msgs[i]),
            pieces,
        )
    }

    /// [`Self::verify_schnorr`] with the GPU items encoded ahead ([`pre_encode_schnorr`]):
    /// `pieces` hold exactly these items, in this order.
    pub(crate) fn verify_schnorr_pre_encoded(
        &self,
        msgs: &[&[u8]],
        sigs: &[[u8; 64]],
        pubkeys: &[[u8; 32]],
        pieces: &[&Encoded],
    ) -> Result<Output<Verdicts>> {
        self.verify_schnorr_with(msgs, sigs, pubkeys, Some(pieces))
    }

    /// Kernel-only GPU time for ECDSA items: [`crate::ecdsa::Ecdsa::kernel_seconds`] on secp256k1.
    pub fn ecdsa_kernel_seconds(
        &self,
        hashes: &[[u8; 32]],
        sigs: &[&[u8]],
        pubkeys: &[&[u8]],
        opts: &EcdsaOptions,
        iters: usize,
    ) -> Result<(f64, Verdicts)> {
        self.engine
            .ecdsa::<Secp256k1Curve>()
            .kernel_seconds(hashes, sigs, pubkeys, opts, iters)
    }

    /// Kernel-only GPU time for BIP340 items (prepared on the host, then resident on the device):
    /// the median of `iters` launches in seconds, and the verdicts. For benchmarks;
    /// `verify_schnorr` is the API.
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
        let (t, results) = items::device::time_host_items(
            &gpu::schnorr_kernel(),
            n,
            |i| gpu::schnorr_item(&sigs[i], &pubkeys[i], msgs[i]),
            iters,
        )?;
        Ok((t, Verdicts { results }))
    }
}

/// Measures BIP340 verification on one backend: [`crate::sig::batch::calibrate`].
fn calibrate_schnorr(backend: Backend) -> Result<Cost> {
    let sample: Vec<_> = (0..64).map(schnorr_sample).collect();
    crate::sig::batch::calibrate(
        &SCHNORR,
        backend,
        sample.len(),
        |k| {
            sample[..k]
                .iter()
                .all(|(m, s, key)| cpu::verify_schnorr_encoded(s, key, m).is_ok())
        },
        |engine, n| {
            let pick = || (0..n).map(|i| &sample[i % sample.len()]);
            let msgs: Vec<&[u8]> = pick().map(|s| s.0.as_slice()).collect();
            let sigs: Vec<[u8; 64]> = pick().map(|s| s.1).collect();
            let keys: Vec<[u8; 32]> = pick().map(|s| s.2).collect();
            Ok(engine
                .secp256k1()
                .verify_schnorr(&msgs, &sigs, &keys)?
                .value
                .all_valid())
        },
    )
}

/// A valid BIP340 signature (message, signature, x-only key) from a seed, for measuring.
fn schnorr_sample(seed: u32) -> ([u8; 32], [u8; 64], [u8; 32]) {
    use secp256k1::{schnorr, Keypair};
    let (hash, secret) = sample_secret(seed);
    let keys = Keypair::from_secret_bytes(secret).expect("a secret below n");
    let sig = schnorr::sign_no_aux_rand(&hash, &keys).to_byte_array();
    (hash, sig, keys.x_only_public_key().0.to_byte_array())
}

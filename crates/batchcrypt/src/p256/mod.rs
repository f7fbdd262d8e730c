//! NIST P-256 (secp256r1, prime256v1; FIPS 186-5): ECDSA verification as parameters of
//! [`crate::ecdsa`], the signature of TLS, WebAuthn passkeys and X.509. The GPU runs the generic
//! verification kernel on P-256's parameters (`kernels/p256`); the CPU backend and reference is
//! OpenSSL's libcrypto.
//!
//! ```no_run
//! use batchcrypt::{ecdsa::EcdsaOptions, p256::P256, Engine};
//! # let (hashes, sigs, keys): (Vec<[u8; 32]>, Vec<&[u8]>, Vec<&[u8]>) = (vec![], vec![], vec![]);
//! let engine = Engine::new()?;
//! let out = engine.ecdsa::<P256>().verify(&hashes, &sigs, &keys, &EcdsaOptions::default())?;
//! println!("{} of {} valid, on {}", out.value.valid_count(), out.value.len(), out.backend);
//! # Ok::<(), batchcrypt::Error>(())
//! ```

use crate::backend::{Backend, Primitive};
use crate::ecdsa::Curve;
use crate::operation::Operation;
use crate::sig::items::device::{Kernel, Prepare};
use crate::sig::{hex32, Reason, Sec1Key};
use openssl::ec::EcGroup;
use openssl::nid::Nid;
use std::sync::OnceLock;

/// The curve, as [`crate::Engine::ecdsa`] takes it.
pub struct P256;

/// The group order n, big-endian.
pub const N: [u8; 32] = hex32("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551");
/// The field prime p, big-endian.
pub const P: [u8; 32] = hex32("ffffffff00000001000000000000000000000000ffffffffffffffffffffffff");

/// Entries of the fixed-base table (kernels/p256/p256.cu's `GTable`).
pub(crate) const G_TABLE_LEN: usize = crate::sig::items::WIDE_G_TABLE_LEN;

/// ECDSA verification: DER or compact signatures, SEC1 keys, 32-byte message hashes.
pub static ECDSA: Operation = Operation::new(
    "p256-ecdsa",
    Primitive::P256,
    "P-256 ECDSA verification (DER or compact signatures, SEC1 keys)",
    &[Backend::OpenSsl],
    (32 + 72 + 33, 1, 1),
    crate::ecdsa::calibrate::<P256>,
);

fn group() -> &'static EcGroup {
    static G: OnceLock<EcGroup> = OnceLock::new();
    G.get_or_init(|| EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).expect("OpenSSL has P-256"))
}

impl Curve for P256 {
    const N: [u8; 32] = N;
    const P: [u8; 32] = P;

    fn operation() -> &'static Operation {
        &ECDSA
    }

    fn kernel() -> Kernel {
        Kernel {
            image: &crate::kernels::P256,
            name: "p256_ecdsa_verify",
            table: "p256_g_table",
            table_len: G_TABLE_LEN,
            items_per_thread: 1,
            prepare: Some(Prepare::ecdsa("p256_ecdsa_prepare")),
        }
    }

    fn cpu_verify(
        hash: &[u8; 32],
        r: &[u8; 32],
        s: &[u8; 32],
        key: &Sec1Key,
    ) -> Result<(), Reason> {
        crate::ecdsa::openssl::verify(group(), hash, r, s, key)
    }

    fn sample(seed: u32) -> ([u8; 32], Vec<u8>, Vec<u8>) {
        let (hash, secret) = crate::secp256k1::sample_secret(seed);
        let (sig, key) = crate::ecdsa::openssl::sign(group(), &secret, &hash);
        (hash, sig, key)
    }

    #[cfg(feature = "emulation")]
    fn emulated() -> crate::emulation::VerifyKernel {
        crate::emulation::p256::ECDSA
    }
}

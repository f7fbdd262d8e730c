//! ECDSA on P-256, differential: our CPU backend (OpenSSL under our parsing rules) and the GPU
//! backend's flow (the generic ECDSA items and the P-256 kernel code, compiled for the host)
//! against RustCrypto's p256, on signatures made valid and then edited. All three must give the
//! same verdict, and our two flows the same reason.
#![no_main]

use arbitrary::Arbitrary;
use batchcrypt::ecdsa::EcdsaOptions;
use batchcrypt::p256::{N, P256};
use batchcrypt::sig::SigFormat;
use batchcrypt::Backend;
use batchcrypt_fuzz::{der, edit, engine, negate, Edit};
use libfuzzer_sys::fuzz_target;
use p256::ecdsa::signature::hazmat::{PrehashSigner, PrehashVerifier};
use p256::ecdsa::{Signature, SigningKey, VerifyingKey};

#[derive(Arbitrary, Debug)]
struct Case {
    secret: [u8; 32],
    hash: [u8; 32],
    /// Sign another hash than the one verified.
    signed: Option<[u8; 32]>,
    compressed: bool,
    compact: bool,
    high_s: bool,
    require_low_s: bool,
    sig_edits: Vec<Edit>,
    key_edits: Vec<Edit>,
    /// Replaces the signature outright.
    raw_sig: Option<Vec<u8>>,
}

/// RustCrypto's verdict, with our rules around it: hybrid keys (06/07) are not SEC1 keys for us,
/// and low S only when asked for.
fn rustcrypto(hash: &[u8; 32], sig: &[u8], key: &[u8], o: &EcdsaOptions) -> bool {
    if matches!(key.first(), Some(6 | 7)) {
        return false;
    }
    let Ok(vk) = VerifyingKey::from_sec1_bytes(key) else { return false };
    let sig = match o.format {
        SigFormat::Der => Signature::from_der(sig),
        SigFormat::Compact => Signature::from_slice(sig),
    };
    let Ok(sig) = sig else { return false };
    if o.require_low_s && sig.normalize_s().is_some() {
        return false;
    }
    vk.verify_prehash(hash, &sig).is_ok()
}

fuzz_target!(
init: {
    // The kernel's fixed-base table takes seconds to build: once, before the first input.
    batchcrypt::emulation::p256::ECDSA.table();
},
|c: Case| {
    let sk = SigningKey::from_bytes(&c.secret.into()).unwrap_or_else(|_| SigningKey::from_bytes(&[1; 32].into()).unwrap());
    let key = sk.verifying_key().to_encoded_point(c.compressed).as_bytes().to_vec();
    let signed: Signature = sk.sign_prehash(&c.signed.unwrap_or(c.hash)).expect("signing a 32-byte hash");
    let (r, mut s): ([u8; 32], [u8; 32]) = (signed.r().to_bytes().into(), signed.s().to_bytes().into());
    if c.high_s {
        s = negate(&N, &s);
    }
    let sig = match (c.raw_sig, c.compact) {
        (Some(raw), _) => raw,
        (None, true) => [r, s].concat(),
        (None, false) => der(&r, &s),
    };
    let sig = edit(sig, &c.sig_edits);
    let key = edit(key, &c.key_edits);
    let opts = EcdsaOptions {
        format: if c.compact { SigFormat::Compact } else { SigFormat::Der },
        require_low_s: c.require_low_s,
    };
    let ours = engine(Backend::OpenSsl)
        .ecdsa::<P256>()
        .verify(&[c.hash], &[&sig], &[&key], &opts)
        .expect("a batch of one item cannot fail")
        .value
        .results[0];
    let kernel = batchcrypt::emulation::verify_ecdsa::<P256>(&[c.hash], &[&sig], &[&key], &opts)[0];
    assert_eq!(ours, kernel, "CPU and GPU flows disagree");
    assert_eq!(ours.is_ok(), rustcrypto(&c.hash, &sig, &key, &opts), "RustCrypto's p256 disagrees: ours {ours:?}");
});

//! ECDSA on P-256, differential: our CPU backend (OpenSSL under our parsing rules) and the GPU
//! backend's flow (the generic ECDSA items and the P-256 kernel code, compiled for the host)
//! against RustCrypto's p256, on signatures made valid and then edited. All three must give the
//! same verdict, and our two flows the same reason.
#![no_main]

use batchcrypt::ecdsa::EcdsaOptions;
use batchcrypt::p256::{N, P256};
use batchcrypt::sig::SigFormat;
use batchcrypt::Backend;
use batchcrypt_fuzz::{engine, EcdsaCase};
use libfuzzer_sys::fuzz_target;
use p256::ecdsa::signature::hazmat::{PrehashSigner, PrehashVerifier};
use p256::ecdsa::{Signature, SigningKey, VerifyingKey};

/// RustCrypto's verdict, with our rules around it: a key whose tag we refuse
/// (`refused_key_tag`) is refused, and low S only when asked for.
fn rustcrypto(hash: &[u8; 32], sig: &[u8], key: &[u8], o: &EcdsaOptions) -> bool {
    if batchcrypt_fuzz::refused_key_tag(key) {
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
|c: EcdsaCase| {
    let sk = SigningKey::from_bytes(&c.secret.into()).unwrap_or_else(|_| SigningKey::from_bytes(&[1; 32].into()).unwrap());
    let key = sk.verifying_key().to_encoded_point(c.compressed).as_bytes().to_vec();
    let signed: Signature = sk.sign_prehash(&c.signed_hash()).expect("signing a 32-byte hash");
    let (sig, key, opts) = c.encode(&N, signed.r().to_bytes().into(), signed.s().to_bytes().into(), key);
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

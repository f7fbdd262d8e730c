//! ECDSA on secp256k1, differential: our CPU backend and the GPU backend's flow (its host
//! preparation and the kernel code, compiled for the host) against libsecp256k1 and RustCrypto's
//! k256, on signatures made valid and then edited. All four must give the same verdict, and our
//! two flows the same reason.
#![no_main]

use batchcrypt::secp256k1::parse::N;
use batchcrypt::secp256k1::{EcdsaOptions, SigFormat};
use batchcrypt::Backend;
use batchcrypt_fuzz::{engine, EcdsaCase};
use libfuzzer_sys::fuzz_target;
use secp256k1::{ecdsa, Message, PublicKey, SecretKey};

/// libsecp256k1's verdict, with our rules around it: a key whose tag we refuse
/// (`refused_key_tag`) is refused, and high S is normalised unless low S is required.
fn libsecp256k1(hash: &[u8; 32], sig: &[u8], key: &[u8], o: &EcdsaOptions) -> bool {
    if batchcrypt_fuzz::refused_key_tag(key) {
        return false;
    }
    let Ok(key) = PublicKey::from_slice(key) else { return false };
    let sig = match o.format {
        SigFormat::Der => ecdsa::Signature::from_der(sig),
        SigFormat::Compact => ecdsa::Signature::from_compact(sig),
    };
    let Ok(mut sig) = sig else { return false };
    let low = {
        let mut l = sig;
        l.normalize_s();
        l
    };
    if low != sig && o.require_low_s {
        return false;
    }
    sig.normalize_s();
    ecdsa::verify(&sig, Message::from_digest(*hash), &key).is_ok()
}

fn k256(hash: &[u8; 32], sig: &[u8], key: &[u8], o: &EcdsaOptions) -> bool {
    use k256::ecdsa::signature::hazmat::PrehashVerifier;
    use k256::ecdsa::{Signature, VerifyingKey};
    if batchcrypt_fuzz::refused_key_tag(key) {
        return false;
    }
    let Ok(vk) = VerifyingKey::from_sec1_bytes(key) else { return false };
    let sig = match o.format {
        SigFormat::Der => Signature::from_der(sig),
        SigFormat::Compact => Signature::from_slice(sig),
    };
    let Ok(sig) = sig else { return false };
    let sig = match sig.normalize_s() {
        Some(_) if o.require_low_s => return false,
        Some(low) => low,
        None => sig,
    };
    vk.verify_prehash(hash, &sig).is_ok()
}

fuzz_target!(
init: {
    // The kernel's fixed-base table takes seconds to build: once, before the first input.
    batchcrypt::emulation::secp256k1::g_table();
},
|c: EcdsaCase| {
    let sk = SecretKey::from_secret_bytes(c.secret).unwrap_or(SecretKey::from_secret_bytes([1; 32]).unwrap());
    let key = PublicKey::from_secret_key(&sk);
    let key = if c.compressed { key.serialize().to_vec() } else { key.serialize_uncompressed().to_vec() };
    let signed = sk.sign_ecdsa(Message::from_digest(c.signed_hash())).serialize_compact();
    let (sig, key, opts) = c.encode(&N, signed[..32].try_into().unwrap(), signed[32..].try_into().unwrap(), key);
    let ours = engine(Backend::Libsecp256k1)
        .secp256k1()
        .verify_ecdsa(&[c.hash], &[&sig], &[&key], &opts)
        .expect("a batch of one item cannot fail")
        .value
        .results[0];
    let kernel = batchcrypt::emulation::secp256k1::verify_ecdsa(&[c.hash], &[&sig], &[&key], &opts)[0];
    assert_eq!(ours, kernel, "CPU and GPU flows disagree");
    let lib = libsecp256k1(&c.hash, &sig, &key, &opts);
    assert_eq!(ours.is_ok(), lib, "libsecp256k1 disagrees: ours {ours:?}");
    assert_eq!(ours.is_ok(), k256(&c.hash, &sig, &key, &opts), "k256 disagrees: ours {ours:?}");
});

//! BIP340, differential: our CPU backend and the GPU backend's flow (kernel code compiled for the
//! host) against libsecp256k1 and RustCrypto's k256, on signatures made valid and then edited,
//! over messages of any length.
#![no_main]

use arbitrary::Arbitrary;
use batchcrypt::Backend;
use batchcrypt_fuzz::{edit, engine, Edit};
use libfuzzer_sys::fuzz_target;
use secp256k1::{schnorr, Keypair, XOnlyPublicKey};

#[derive(Arbitrary, Debug)]
struct Case {
    secret: [u8; 32],
    msg: Vec<u8>,
    /// Sign another message than the one verified.
    signed: Option<Vec<u8>>,
    sig_edits: Vec<Edit>,
    key_edits: Vec<Edit>,
    raw_key: Option<[u8; 32]>,
}

fn k256(msg: &[u8], sig: &[u8; 64], key: &[u8; 32]) -> bool {
    use k256::schnorr::{Signature, VerifyingKey};
    let Ok(vk) = VerifyingKey::from_bytes(key) else { return false };
    let Ok(sig) = Signature::try_from(&sig[..]) else { return false };
    vk.verify_raw(msg, &sig).is_ok()
}

fn libsecp256k1(msg: &[u8], sig: &[u8; 64], key: &[u8; 32]) -> bool {
    let Ok(key) = XOnlyPublicKey::from_byte_array(*key) else { return false };
    schnorr::verify(&schnorr::Signature::from_byte_array(*sig), msg, &key).is_ok()
}

/// Exactly `N` bytes: edits that change the length are undone by padding or cutting.
fn fixed<const N: usize>(v: Vec<u8>) -> [u8; N] {
    let mut out = [0u8; N];
    let n = v.len().min(N);
    out[..n].copy_from_slice(&v[..n]);
    out
}

fuzz_target!(
init: {
    // The kernel's fixed-base table takes seconds to build: once, before the first input.
    batchcrypt::emulation::secp256k1::g_table();
},
|c: Case| {
    let kp = Keypair::from_secret_bytes(c.secret).unwrap_or(Keypair::from_secret_bytes([1; 32]).unwrap());
    let signed = c.signed.as_deref().unwrap_or(&c.msg);
    let sig = kp.sign_schnorr_no_aux_rand(signed).to_byte_array();
    let key = c.raw_key.unwrap_or(kp.x_only_public_key().0.to_byte_array());
    let sig: [u8; 64] = fixed(edit(sig.to_vec(), &c.sig_edits));
    let key: [u8; 32] = fixed(edit(key.to_vec(), &c.key_edits));
    let ours = engine(Backend::Libsecp256k1)
        .secp256k1()
        .verify_schnorr(&[&c.msg], &[sig], &[key])
        .expect("a batch of one item cannot fail")
        .value
        .results[0];
    let kernel = batchcrypt::emulation::secp256k1::verify_schnorr(&[&c.msg], &[sig], &[key])[0];
    assert_eq!(ours, kernel, "CPU and GPU flows disagree");
    assert_eq!(ours.is_ok(), libsecp256k1(&c.msg, &sig, &key), "libsecp256k1 disagrees: ours {ours:?}");
    assert_eq!(ours.is_ok(), k256(&c.msg, &sig, &key), "k256 disagrees: ours {ours:?}");
});

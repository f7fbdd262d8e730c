//! SM2 signatures (GM/T 0003 with the user id's Z_A), differential: our CPU backend and the GPU
//! backend's flow (kernel code compiled for the host) against RustCrypto's `sm2`, on signatures
//! made valid and then edited, in DER and compact form.
#![no_main]

use arbitrary::Arbitrary;
use batchcrypt::sig::SigFormat;
use batchcrypt::Backend;
use batchcrypt_fuzz::{der, edit, engine, Edit};
use sm2::elliptic_curve::sec1::ToEncodedPoint;
use libfuzzer_sys::fuzz_target;
use sm2::dsa::signature::{Signer, Verifier};
use sm2::dsa::{Signature, SigningKey, VerifyingKey};

#[derive(Arbitrary, Debug)]
struct Case {
    secret: [u8; 32],
    id: String,
    msg: Vec<u8>,
    signed: Option<Vec<u8>>,
    compact: bool,
    compressed: bool,
    sig_edits: Vec<Edit>,
    key_edits: Vec<Edit>,
}

fn reference(id: &str, msg: &[u8], sig: &[u8], key: &[u8], compact: bool) -> bool {
    if batchcrypt_fuzz::refused_key_tag(key) {
        return false;
    }
    let Ok(vk) = VerifyingKey::from_sec1_bytes(id, key) else { return false };
    // The `sm2` crate has no DER; RustCrypto's DER reader (through k256, whose n is above SM2's)
    // gives the integers, then `sm2` checks their range.
    let rs = if compact {
        sig.to_vec()
    } else {
        match k256::ecdsa::Signature::from_der(sig) {
            Ok(s) => s.to_bytes().to_vec(),
            Err(_) => return false,
        }
    };
    let Ok(sig) = Signature::from_slice(&rs) else { return false };
    vk.verify(msg, &sig).is_ok()
}

fuzz_target!(
init: {
    // The kernel's fixed-base table takes seconds to build: once, before the first input.
    batchcrypt::emulation::sm2::verify_digests(&[[0; 32]], &[&[1; 64]], &[&[2; 33]], SigFormat::Compact);
},
|c: Case| {
    // The id's length in bits must fit 16 bits (ENTL); longer ids are an error of the call.
    if c.id.len() >= 8192 {
        return;
    }
    let Ok(sk) = SigningKey::new(&c.id, &sm2::SecretKey::from_slice(&c.secret).unwrap_or(sm2::SecretKey::from_slice(&[1; 32]).unwrap())) else {
        return;
    };
    let sig: Signature = sk.sign(c.signed.as_deref().unwrap_or(&c.msg));
    let rs = sig.to_bytes();
    let sig = if c.compact { rs.to_vec() } else { der(rs[..32].try_into().unwrap(), rs[32..].try_into().unwrap()) };
    let key = sk.verifying_key().as_affine().to_encoded_point(c.compressed).as_bytes().to_vec();
    let sig = edit(sig, &c.sig_edits);
    let key = edit(key, &c.key_edits);
    let format = if c.compact { SigFormat::Compact } else { SigFormat::Der };
    let ours = engine(Backend::Portable)
        .sm2()
        .verify(&[&c.msg], &[&sig], &[&key], c.id.as_bytes(), format)
        .expect("a batch of one item with a short id cannot fail")
        .value
        .results[0];
    // The kernel flow takes digests: e = SM3(Z_A || M) for the key as parsed.
    let digest = batchcrypt::sm2::verify::parts(&sig, &key, format)
        .ok()
        .and_then(|(_, _, k)| batchcrypt::sm2::cpu::key_xy(&k))
        .map(|xy| batchcrypt::sm2::verify::message_digest(c.id.as_bytes(), &xy, &c.msg).unwrap())
        .unwrap_or([0; 32]);
    let kernel = batchcrypt::emulation::sm2::verify_digests(&[digest], &[&sig], &[&key], format)[0];
    assert_eq!(ours, kernel, "CPU and GPU flows disagree");
    // The key's hex is formatted only when the assertion fails (not on every run).
    assert_eq!(
        ours.is_ok(),
        reference(&c.id, &c.msg, &sig, &key, c.compact),
        "sm2 crate disagrees: ours {ours:?}, key {}",
        key.iter().map(|b| format!("{b:02x}")).collect::<String>()
    );
});

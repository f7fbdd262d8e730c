//! The CPU backend: libsecp256k1 (Bitcoin Core's library, through the `secp256k1` crate) on
//! prepared items, spread over threads in chunks.
//!
//! Items reach libsecp256k1 only after [`parse`](super::parse) accepted them, in the same fixed
//! form the GPU gets (low S, affine key), so the two can only differ in the arithmetic. The crate
//! keeps one verification context per thread.

use super::parse::{self, Prepared, Reason, SchnorrPrepared};
use super::EcdsaOptions;
use secp256k1::{ecdsa, schnorr, Message, PublicKey};

/// The ECDSA equation for one prepared item.
pub fn verify_ecdsa(p: &Prepared) -> Result<(), Reason> {
    // Cannot fail on a prepared item (a key that was on the curve); a failure would be a broken
    // invariant, reported as a mismatch rather than a panic.
    let Some(key) = parse::key_from_affine(&p.pubkey) else {
        debug_assert!(false, "prepared key rejected by libsecp256k1");
        return Err(Reason::SignatureMismatch);
    };
    ecdsa_equation(&p.hash, &p.r, &p.s, &key)
}

/// One ECDSA item from its encodings: our parsing rules, then libsecp256k1 on the key it decoded
/// (no round trip through affine bytes).
pub fn verify_ecdsa_encoded(
    hash: &[u8; 32],
    sig: &[u8],
    pubkey: &[u8],
    opts: &EcdsaOptions,
) -> Result<(), Reason> {
    crate::ecdsa::verify_one::<super::Secp256k1Curve>(hash, sig, pubkey, opts)
}

pub(crate) fn ecdsa_equation(
    hash: &[u8; 32],
    r: &[u8; 32],
    s: &[u8; 32],
    key: &PublicKey,
) -> Result<(), Reason> {
    let mut rs = [0u8; 64];
    rs[..32].copy_from_slice(r);
    rs[32..].copy_from_slice(s);
    // r, s below n after parsing: cannot fail (see above).
    let Ok(sig) = ecdsa::Signature::from_compact(&rs) else {
        debug_assert!(false, "parsed signature rejected by libsecp256k1");
        return Err(Reason::SignatureMismatch);
    };
    ecdsa::verify(&sig, Message::from_digest(*hash), key).map_err(|_| Reason::SignatureMismatch)
}

/// The BIP340 equation for one prepared item and its message.
pub fn verify_schnorr(p: &SchnorrPrepared, msg: &[u8]) -> Result<(), Reason> {
    let Some(key) = parse::key_from_affine(&p.pubkey) else {
        debug_assert!(false, "prepared key rejected by libsecp256k1");
        return Err(Reason::SignatureMismatch);
    };
    schnorr_equation(&p.r, &p.s, &key, msg)
}

/// One BIP340 item from its encodings, as [`verify_ecdsa_encoded`].
pub fn verify_schnorr_encoded(sig: &[u8; 64], pubkey: &[u8; 32], msg: &[u8]) -> Result<(), Reason> {
    let (r, s, key) = parse::schnorr_parts(sig, pubkey)?;
    schnorr_equation(&r, &s, &parse::on_curve(&key)?, msg)
}

fn schnorr_equation(r: &[u8; 32], s: &[u8; 32], key: &PublicKey, msg: &[u8]) -> Result<(), Reason> {
    let mut sig = [0u8; 64];
    sig[..32].copy_from_slice(r);
    sig[32..].copy_from_slice(s);
    let (xonly, _) = key.x_only_public_key();
    schnorr::verify(&schnorr::Signature::from_byte_array(sig), msg, &xonly)
        .map_err(|_| Reason::SignatureMismatch)
}

//! The CPU backend: libsecp256k1 (Bitcoin Core's library, through the `secp256k1` crate) on
//! prepared items, spread over threads in chunks.
//!
//! Items reach libsecp256k1 only after [`parse`](super::parse) accepted them, in the same fixed
//! form the GPU gets (low S, affine key), so the two can only differ in the arithmetic. The crate
//! keeps one verification context per thread.

use super::parse::{self, Prepared, Reason, SchnorrPrepared};
use rayon::prelude::*;
use secp256k1::{ecdsa, schnorr, Message};

/// The ECDSA equation for one prepared item.
pub fn verify_ecdsa(p: &Prepared) -> Result<(), Reason> {
    let mut rs = [0u8; 64];
    rs[..32].copy_from_slice(&p.r);
    rs[32..].copy_from_slice(&p.s);
    // Both cannot fail on a prepared item (r, s below n; a key that was on the curve); a failure
    // would be a broken invariant, reported as a mismatch rather than a panic.
    let (Ok(sig), Some(key)) = (ecdsa::Signature::from_compact(&rs), parse::key_from_affine(&p.pubkey)) else {
        debug_assert!(false, "prepared item rejected by libsecp256k1");
        return Err(Reason::SignatureMismatch);
    };
    ecdsa::verify(&sig, Message::from_digest(p.hash), &key).map_err(|_| Reason::SignatureMismatch)
}

/// The BIP340 equation for one prepared item and its message.
pub fn verify_schnorr(p: &SchnorrPrepared, msg: &[u8]) -> Result<(), Reason> {
    let Some(key) = parse::key_from_affine(&p.pubkey) else {
        debug_assert!(false, "prepared key rejected by libsecp256k1");
        return Err(Reason::SignatureMismatch);
    };
    let mut sig = [0u8; 64];
    sig[..32].copy_from_slice(&p.r);
    sig[32..].copy_from_slice(&p.s);
    let (xonly, _) = key.x_only_public_key();
    schnorr::verify(&schnorr::Signature::from_byte_array(sig), msg, &xonly).map_err(|_| Reason::SignatureMismatch)
}

/// `f(i)` for `i` in `0..n`, in order, on `threads` threads: a few chunks per thread, so one slow
/// chunk does not hold the others back.
pub(crate) fn par_map<T: Send>(n: usize, threads: usize, f: impl Fn(usize) -> T + Sync + Send) -> Vec<T> {
    if threads <= 1 {
        return (0..n).map(f).collect();
    }
    let chunk = n.div_ceil(threads * 4).max(1);
    (0..n).into_par_iter().with_min_len(chunk).map(f).collect()
}

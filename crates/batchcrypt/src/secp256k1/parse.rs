//! Strict parsing and range checks of signatures and public keys, shared by every backend.
//!
//! Accepting or rejecting an encoding is a consensus question in Bitcoin: two verifiers that differ
//! on one odd encoding split. So no backend parses for itself. Each item goes through the functions
//! here once, and a backend only sees a [`Prepared`] item (fixed-size big-endian integers that are
//! already in range) or the [`Reason`] it failed. libsecp256k1 is used only for what is pure
//! arithmetic (is this point on the curve, what is its y); every accept/reject rule is written out
//! here, in the order the checks run:
//!
//! 1. the signature encoding: strict DER as BIP66 defines it, or 64-byte compact `r || s`;
//! 2. `r`, then `s`, in `[1, n-1]` (ECDSA) — for Schnorr `r < p` and `s < n`;
//! 3. ECDSA high S (`s > n/2`): rejected under `require_low_s`, else replaced by `n - s` (the
//!    equation holds for `s` exactly when it holds for `n - s`, which is how Bitcoin Core's
//!    consensus path accepts old high-S signatures);
//! 4. the public key: SEC1 compressed (02/03) or uncompressed (04) — hybrid (06/07), infinity and
//!    any other length or prefix are rejected — with coordinates below p, on the curve.

use super::{EcdsaOptions, Secp256k1Curve};
use crate::sig::{self, below, hex32, split, sub};
pub use crate::sig::{Reason, Sec1Key};
use secp256k1::PublicKey;
use std::sync::OnceLock;

/// The group order n, big-endian.
pub const N: [u8; 32] = hex32("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141");
/// n / 2 rounded down: the largest low S.
pub const HALF_N: [u8; 32] = crate::ecdsa::half(&N);
/// The field prime p, big-endian.
pub const P: [u8; 32] = hex32("fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2f");

/// An ECDSA item ready for any backend: in range, low S, the key as an affine point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prepared {
    /// `r` in `[1, n-1]`, big-endian.
    pub r: [u8; 32],
    /// `s` in `[1, n/2]` (a high S was replaced by `n - s`), big-endian.
    pub s: [u8; 32],
    /// The public key as affine `x || y`, big-endian, on the curve.
    pub pubkey: [u8; 64],
    /// The message hash as given (not reduced modulo n), big-endian.
    pub hash: [u8; 32],
}

/// A BIP340 item ready for any backend. The challenge needs the message, which stays with the
/// caller: see [`schnorr_challenge`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchnorrPrepared {
    /// The x coordinate of R, below p.
    pub r: [u8; 32],
    /// `s` below n.
    pub s: [u8; 32],
    /// The public key lifted to the point with even y, affine `x || y`.
    pub pubkey: [u8; 64],
}

/// Checks an ECDSA item and brings it into the form every backend takes.
pub fn prepare_ecdsa(
    hash: &[u8; 32],
    sig: &[u8],
    pubkey: &[u8],
    opts: &EcdsaOptions,
) -> Result<Prepared, Reason> {
    let (r, s, key) = ecdsa_parts(sig, pubkey, opts)?;
    Ok(Prepared {
        r,
        s,
        pubkey: affine(&on_curve(&key)?),
        hash: *hash,
    })
}

/// The signature's `(r, s)` and the key's coordinates, with every rule but the curve equation
/// applied (the GPU backend checks that one itself).
pub fn ecdsa_parts(
    sig: &[u8],
    pubkey: &[u8],
    opts: &EcdsaOptions,
) -> Result<([u8; 32], [u8; 32], Sec1Key), Reason> {
    crate::ecdsa::parts::<Secp256k1Curve>(sig, pubkey, opts)
}

/// Checks a BIP340 item (the message may have any length; it takes no part in the checks).
pub fn prepare_schnorr(sig: &[u8; 64], pubkey: &[u8; 32]) -> Result<SchnorrPrepared, Reason> {
    let (r, s, key) = schnorr_parts(sig, pubkey)?;
    Ok(SchnorrPrepared {
        r,
        s,
        pubkey: affine(&on_curve(&key)?),
    })
}

/// A BIP340 signature's `(r, s)` and the key's coordinates, every rule but the curve equation.
pub fn schnorr_parts(
    sig: &[u8; 64],
    pubkey: &[u8; 32],
) -> Result<([u8; 32], [u8; 32], Sec1Key), Reason> {
    let (r, s) = split(sig);
    if !below(&r, &P) {
        return Err(Reason::ROutOfRange);
    }
    if !below(&s, &N) {
        return Err(Reason::SOutOfRange);
    }
    sig::field_element(pubkey, &P)?;
    Ok((
        r,
        s,
        Sec1Key::Compressed {
            x: *pubkey,
            odd: false,
        },
    ))
}

/// The BIP340 challenge `e = int(hash_BIP0340/challenge(r || x(P) || msg)) mod n`, big-endian.
pub fn schnorr_challenge(r: &[u8; 32], px: &[u8; 32], msg: &[u8]) -> [u8; 32] {
    use crate::sha256::Midstate;
    // The tag's two hashes fill the first block, whose state is shared by every challenge.
    static PREFIX: OnceLock<Midstate> = OnceLock::new();
    let prefix = PREFIX.get_or_init(|| {
        let tag = crate::sha256::digest(b"BIP0340/challenge");
        Midstate::new(&[tag, tag].concat())
    });
    // Bitcoin's messages are 32 bytes: on the stack.
    let mut buf = [0u8; 128];
    let e = if msg.len() <= 64 {
        buf[..32].copy_from_slice(r);
        buf[32..64].copy_from_slice(px);
        buf[64..64 + msg.len()].copy_from_slice(msg);
        prefix.digest(&buf[..64 + msg.len()])
    } else {
        prefix.digest(&[r, px, msg].concat())
    };
    // e < 2^256 < 2n, so one subtraction reduces it.
    if below(&e, &N) {
        e
    } else {
        sub(&e, &N)
    }
}

/// The signature's `(r, s)` after the encoding, range and low-S rules, with S made low.
pub fn ecdsa_signature(sig: &[u8], opts: &EcdsaOptions) -> Result<([u8; 32], [u8; 32]), Reason> {
    crate::ecdsa::signature::<Secp256k1Curve>(sig, opts)
}

/// A SEC1 public key's coordinates: compressed or uncompressed, nothing else, below p.
pub fn sec1_key(pk: &[u8]) -> Result<Sec1Key, Reason> {
    sig::sec1_key(pk, &P)
}

/// The point with these coordinates (libsecp256k1 does the arithmetic: a square root for a
/// compressed key, the curve equation for an uncompressed one).
pub(crate) fn on_curve(key: &Sec1Key) -> Result<PublicKey, Reason> {
    let point = match *key {
        Sec1Key::Compressed { x, odd } => {
            let mut sec1 = [0u8; 33];
            sec1[0] = if odd { 0x03 } else { 0x02 };
            sec1[1..].copy_from_slice(&x);
            PublicKey::from_byte_array_compressed(sec1)
        }
        Sec1Key::Uncompressed { x, y } => {
            let mut sec1 = [0x04; 65];
            sec1[1..33].copy_from_slice(&x);
            sec1[33..].copy_from_slice(&y);
            PublicKey::from_byte_array_uncompressed(sec1)
        }
    };
    point.map_err(|_| Reason::PublicKeyNotOnCurve)
}

/// Rebuilds the library's key from a prepared affine point (no square root: a cheap curve check).
pub(crate) fn key_from_affine(xy: &[u8; 64]) -> Option<PublicKey> {
    let mut sec1 = [0u8; 65];
    sec1[0] = 0x04;
    sec1[1..].copy_from_slice(xy);
    PublicKey::from_byte_array_uncompressed(sec1).ok()
}

fn affine(key: &PublicKey) -> [u8; 64] {
    let sec1 = key.serialize_uncompressed();
    let mut xy = [0u8; 64];
    xy.copy_from_slice(&sec1[1..]);
    xy
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_agree() {
        // n = 2 * (n/2) + 1 and p > n.
        let mut twice = [0u8; 32];
        let mut carry = 0u16;
        for i in (0..32).rev() {
            let v = 2 * HALF_N[i] as u16 + carry;
            twice[i] = v as u8;
            carry = v >> 8;
        }
        twice[31] += 1;
        assert_eq!(twice, N);
        assert!(below(&N, &P));
    }
}

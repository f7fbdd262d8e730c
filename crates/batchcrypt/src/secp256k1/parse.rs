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

use super::{EcdsaOptions, SigFormat};
use secp256k1::PublicKey;
use std::cmp::Ordering;
use std::sync::OnceLock;

/// The group order n, big-endian.
pub const N: [u8; 32] = hex32("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141");
/// n / 2 rounded down: the largest low S.
pub const HALF_N: [u8; 32] = hex32("7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0");
/// The field prime p, big-endian.
pub const P: [u8; 32] = hex32("fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2f");

/// Why one item of a batch did not verify. A malformed item is not an error of the batch: its slot
/// holds the reason and the other items are still checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum Reason {
    /// The signature is not strict DER (BIP66): bad tags or lengths, a negative or non-minimally
    /// encoded integer, an integer over 33 bytes, or bytes after the sequence.
    #[error("signature is not strict DER")]
    BadDer,
    /// A compact signature that is not 64 bytes.
    #[error("compact signature must be 64 bytes")]
    BadLength,
    #[error("signature r is zero")]
    RZero,
    /// ECDSA `r >= n`; Schnorr `r >= p`.
    #[error("signature r is out of range")]
    ROutOfRange,
    #[error("signature s is zero")]
    SZero,
    /// `s >= n`.
    #[error("signature s is out of range")]
    SOutOfRange,
    /// `s > n/2` while low S is required (BIP62/BIP146).
    #[error("signature s is high (above n/2) and low S is required")]
    HighS,
    /// Wrong length or prefix: not 33 bytes with 02/03 or 65 bytes with 04 (hybrid 06/07 included).
    #[error("public key encoding is not SEC1 compressed or uncompressed")]
    BadPublicKeyEncoding,
    /// A coordinate is not below the field prime p.
    #[error("public key coordinate is not below the field prime")]
    PublicKeyOutOfRange,
    /// The coordinates are field elements but not a point of the curve (or, for an x alone, no
    /// point has that x).
    #[error("public key is not a point on the curve")]
    PublicKeyNotOnCurve,
    /// Everything is well formed and the verification equation is false.
    #[error("signature does not match the message and public key")]
    SignatureMismatch,
}

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

/// A SEC1 public key after the encoding and range rules, before any curve arithmetic (which
/// decides whether a point has these coordinates).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sec1Key {
    /// `x` and the parity of `y` (02/03, or a BIP340 x-only key with even y).
    Compressed { x: [u8; 32], odd: bool },
    /// Both coordinates (04).
    Uncompressed { x: [u8; 32], y: [u8; 32] },
}

/// Checks an ECDSA item and brings it into the form every backend takes.
pub fn prepare_ecdsa(hash: &[u8; 32], sig: &[u8], pubkey: &[u8], opts: &EcdsaOptions) -> Result<Prepared, Reason> {
    let (r, s, key) = ecdsa_parts(sig, pubkey, opts)?;
    Ok(Prepared { r, s, pubkey: affine(&on_curve(&key)?), hash: *hash })
}

/// The signature's `(r, s)` and the key's coordinates, with every rule but the curve equation
/// applied (the GPU backend checks that one itself).
pub fn ecdsa_parts(sig: &[u8], pubkey: &[u8], opts: &EcdsaOptions) -> Result<([u8; 32], [u8; 32], Sec1Key), Reason> {
    let (r, s) = ecdsa_signature(sig, opts)?;
    Ok((r, s, sec1_key(pubkey)?))
}

/// Checks a BIP340 item (the message may have any length; it takes no part in the checks).
pub fn prepare_schnorr(sig: &[u8; 64], pubkey: &[u8; 32]) -> Result<SchnorrPrepared, Reason> {
    let (r, s, key) = schnorr_parts(sig, pubkey)?;
    Ok(SchnorrPrepared { r, s, pubkey: affine(&on_curve(&key)?) })
}

/// A BIP340 signature's `(r, s)` and the key's coordinates, every rule but the curve equation.
pub fn schnorr_parts(sig: &[u8; 64], pubkey: &[u8; 32]) -> Result<([u8; 32], [u8; 32], Sec1Key), Reason> {
    let (r, s) = split(sig);
    if !below(&r, &P) {
        return Err(Reason::ROutOfRange);
    }
    if !below(&s, &N) {
        return Err(Reason::SOutOfRange);
    }
    field_element(pubkey)?;
    Ok((r, s, Sec1Key::Compressed { x: *pubkey, odd: false }))
}

/// The BIP340 challenge `e = int(hash_BIP0340/challenge(r || x(P) || msg)) mod n`, big-endian.
pub fn schnorr_challenge(r: &[u8; 32], px: &[u8; 32], msg: &[u8]) -> [u8; 32] {
    static TAG: OnceLock<[u8; 32]> = OnceLock::new();
    let tag = TAG.get_or_init(|| crate::sha256::digest(b"BIP0340/challenge"));
    let mut data = Vec::with_capacity(128 + msg.len());
    for part in [&tag[..], &tag[..], r, px, msg] {
        data.extend_from_slice(part);
    }
    let e = crate::sha256::digest(&data);
    // e < 2^256 < 2n, so one subtraction reduces it.
    if below(&e, &N) {
        e
    } else {
        sub(&e, &N)
    }
}

/// The signature's `(r, s)` after the encoding, range and low-S rules, with S made low.
pub fn ecdsa_signature(sig: &[u8], opts: &EcdsaOptions) -> Result<([u8; 32], [u8; 32]), Reason> {
    let (r, s) = match opts.format {
        SigFormat::Der => parse_der(sig)?,
        SigFormat::Compact => {
            let sig: &[u8; 64] = sig.try_into().map_err(|_| Reason::BadLength)?;
            let (r, s) = split(sig);
            (Some(r), Some(s))
        }
    };
    let r = scalar(r, Reason::RZero, Reason::ROutOfRange)?;
    let s = scalar(s, Reason::SZero, Reason::SOutOfRange)?;
    if below(&HALF_N, &s) {
        if opts.require_low_s {
            return Err(Reason::HighS);
        }
        return Ok((r, sub(&N, &s)));
    }
    Ok((r, s))
}

/// A SEC1 public key's coordinates: compressed or uncompressed, nothing else, below p.
pub fn sec1_key(pk: &[u8]) -> Result<Sec1Key, Reason> {
    let coord = |b: &[u8]| -> Result<[u8; 32], Reason> {
        field_element(b)?;
        Ok(b.try_into().expect("32 bytes"))
    };
    match (pk.len(), pk.first()) {
        (33, Some(&prefix @ (0x02 | 0x03))) => Ok(Sec1Key::Compressed { x: coord(&pk[1..33])?, odd: prefix == 0x03 }),
        (65, Some(0x04)) => Ok(Sec1Key::Uncompressed { x: coord(&pk[1..33])?, y: coord(&pk[33..65])? }),
        _ => Err(Reason::BadPublicKeyEncoding),
    }
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

fn field_element(x: &[u8]) -> Result<(), Reason> {
    if x.cmp(&P[..]) == Ordering::Less {
        Ok(())
    } else {
        Err(Reason::PublicKeyOutOfRange)
    }
}

/// An integer as a signature encodes it: `None` when it does not fit in 256 bits.
type Encoded = Option<[u8; 32]>;

/// An encoded integer of the signature, required in `[1, n-1]`.
fn scalar(v: Encoded, zero: Reason, out_of_range: Reason) -> Result<[u8; 32], Reason> {
    let v = v.ok_or(out_of_range)?;
    if v == [0; 32] {
        Err(zero)
    } else if below(&v, &N) {
        Ok(v)
    } else {
        Err(out_of_range)
    }
}

/// Strict DER `SEQUENCE { INTEGER r, INTEGER s }` as BIP66 checks it (without the sighash byte).
/// An integer too large for 256 bits is `None` (out of range, not malformed).
fn parse_der(sig: &[u8]) -> Result<(Encoded, Encoded), Reason> {
    // 6 bytes of tags and lengths plus two integers of 1 to 33 bytes.
    if !(8..=72).contains(&sig.len()) || sig[0] != 0x30 || sig[1] as usize != sig.len() - 2 {
        return Err(Reason::BadDer);
    }
    let (r, rest) = der_integer(&sig[2..])?;
    let (s, rest) = der_integer(rest)?;
    if !rest.is_empty() {
        return Err(Reason::BadDer);
    }
    Ok((r, s))
}

/// One DER INTEGER at the start of `b`: its value and the bytes after it.
fn der_integer(b: &[u8]) -> Result<(Encoded, &[u8]), Reason> {
    let [0x02, len, rest @ ..] = b else { return Err(Reason::BadDer) };
    // Lengths here are below 128, so only the short form is DER; a long form fails the bound.
    let len = *len as usize;
    if len == 0 || len > 33 || len > rest.len() {
        return Err(Reason::BadDer);
    }
    let (v, rest) = rest.split_at(len);
    let negative = v[0] & 0x80 != 0;
    let needless_zero = len > 1 && v[0] == 0 && v[1] & 0x80 == 0;
    if negative || needless_zero {
        return Err(Reason::BadDer);
    }
    // A 33-byte integer fits only behind its sign byte.
    if len == 33 && v[0] != 0 {
        return Ok((None, rest));
    }
    let digits = &v[len.saturating_sub(32)..];
    let mut out = [0u8; 32];
    out[32 - digits.len()..].copy_from_slice(digits);
    Ok((Some(out), rest))
}

fn split(sig: &[u8; 64]) -> ([u8; 32], [u8; 32]) {
    let mut r = [0u8; 32];
    let mut s = [0u8; 32];
    r.copy_from_slice(&sig[..32]);
    s.copy_from_slice(&sig[32..]);
    (r, s)
}

/// `a < b` for big-endian integers of equal width.
fn below(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a < b
}

/// `a - b` for big-endian 256-bit integers, `a >= b`.
fn sub(a: &[u8; 32], b: &[u8; 32]) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut borrow = 0u16;
    for i in (0..32).rev() {
        let d = (a[i] as u16).wrapping_sub(b[i] as u16).wrapping_sub(borrow);
        out[i] = d as u8;
        borrow = (d >> 8) & 1;
    }
    out
}

const fn hex32(s: &str) -> [u8; 32] {
    const fn nibble(c: u8) -> u8 {
        match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => panic!("not a lower-case hex digit"),
        }
    }
    let s = s.as_bytes();
    assert!(s.len() == 64);
    let mut out = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        out[i] = nibble(s[2 * i]) << 4 | nibble(s[2 * i + 1]);
        i += 1;
    }
    out
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

    #[test]
    fn subtraction_borrows_across_bytes() {
        let mut one = [0u8; 32];
        one[31] = 1;
        let mut want = [0xffu8; 32];
        want[0] = 0;
        let mut top = [0u8; 32];
        top[0] = 1;
        assert_eq!(sub(&top, &one), want);
        assert_eq!(sub(&N, &N), [0; 32]);
    }

    #[test]
    fn der_integers() {
        assert_eq!(der_integer(&[2, 1, 5, 9]), Ok((Some(hex32_tail(&[5])), &[9u8][..])));
        assert_eq!(der_integer(&[2, 2, 0, 0x80]), Ok((Some(hex32_tail(&[0x80])), &[][..])));
        assert_eq!(der_integer(&[2, 2, 0, 0x7f]), Err(Reason::BadDer)); // needless zero
        assert_eq!(der_integer(&[2, 1, 0x80]), Err(Reason::BadDer)); // negative
        assert_eq!(der_integer(&[2, 0]), Err(Reason::BadDer));
        assert_eq!(der_integer(&[2, 3, 1, 2]), Err(Reason::BadDer)); // truncated
        assert_eq!(der_integer(&[3, 1, 1]), Err(Reason::BadDer));
        let mut big = vec![2, 33, 1];
        big.extend([0u8; 32]);
        assert_eq!(der_integer(&big), Ok((None, &[][..])));
    }

    fn hex32_tail(v: &[u8]) -> [u8; 32] {
        let mut out = [0u8; 32];
        out[32 - v.len()..].copy_from_slice(v);
        out
    }
}

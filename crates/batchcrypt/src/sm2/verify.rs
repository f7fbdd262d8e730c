//! SM2 signature verification (GB/T 32918.2 / GM/T 0003.2 §7.1), scheme rules shared by every
//! backend:
//!
//! 1. the signature: strict DER (GM/T 0009) or compact `r || s`, with `r` and `s` in `[1, n-1]`;
//! 2. the public key: SEC1 compressed or uncompressed, coordinates below p (the curve equation is
//!    the backend's: the GPU decompresses and checks keys itself);
//! 3. `e = SM3(Z_A || M)` with `Z_A = SM3(ENTL || ID || a || b || x_G || y_G || x_A || y_A)`,
//!    or a digest the caller computed that way;
//! 4. `t = r + s mod n`, which must not be zero; `R = s·G + t·P_A`, which must not be the point
//!    at infinity (OpenSSL rejects it too: it has no x); valid iff `(e + x(R)) mod n == r`.
//!
//! The CPU backend verifies an [`Item`]: `u1 = s`, `u2 = t` and `r' = r - e mod n`, and tests
//! `x(R) mod n == r'` — the shape of ECDSA's test. The GPU gets the parsed `r`, `s`, key and `e`
//! (or the message, which it hashes) and makes the same item itself (`kernels/sm2`), so it runs
//! the generic verification of `bc/verify.cuh`.

use super::N;
use crate::error::{Error, Result};
use crate::sig::{self, hex32, Reason, Sec1Key, SigFormat};
use sm2::elliptic_curve::ops::Reduce;
use sm2::elliptic_curve::PrimeField;
use sm2::Scalar;

/// The field prime p, big-endian.
pub const P: [u8; 32] = hex32("fffffffeffffffffffffffffffffffffffffffff00000000ffffffffffffffff");
const A: [u8; 32] = hex32("fffffffeffffffffffffffffffffffffffffffff00000000fffffffffffffffc");
const B: [u8; 32] = hex32("28e9fa9e9d9f5e344d5a9e4bcf6509a7f39789f515ab8f92ddbcbd414d940e93");
const GX: [u8; 32] = hex32("32c4ae2c1f1981195f9904466a39c9948fe30bbff2660be1715a4589334c74c7");
const GY: [u8; 32] = hex32("bc3736a2f4f6779c59bdcee36b692153d0a9877cc62a474002df32e52139f0a0");

/// The distinguishing identifier GM/T 0009 specifies when the parties agree on none.
pub const DEFAULT_ID: &[u8] = b"1234567812345678";

/// `Z_A` for a signer's identifier and public key (`x || y`, big-endian). ENTL is the ID's length
/// in bits in two bytes, so IDs are at most 8191 bytes.
pub fn za(id: &[u8], key_xy: &[u8; 64]) -> Result<[u8; 32]> {
    Ok(Za::new(id)?.za(key_xy))
}

/// `Z_A` and message digests for many keys under one identifier. What precedes the key in
/// `Z_A`'s input (ENTL, the ID, the curve's a, b and G: at least 130 bytes) is hashed once: each
/// key then costs two of SM3's compressions instead of four or more.
#[derive(Clone)]
pub struct Za {
    prefix: crate::sm3::Hasher,
}

impl Za {
    /// An error for an ID over 8191 bytes.
    pub fn new(id: &[u8]) -> Result<Za> {
        let mut prefix = crate::sm3::Hasher::default();
        for part in [&entl(id)?.to_be_bytes()[..], id, &A, &B, &GX, &GY] {
            prefix.update(part);
        }
        Ok(Za { prefix })
    }

    /// `Z_A` of the key `x || y`.
    pub fn za(&self, key_xy: &[u8; 64]) -> [u8; 32] {
        let mut h = self.prefix.clone();
        h.update(key_xy);
        h.finish()
    }

    /// `e = SM3(Z_A || M)`.
    pub fn message_digest(&self, key_xy: &[u8; 64], msg: &[u8]) -> [u8; 32] {
        crate::sm3::digest_parts(&[&self.za(key_xy), msg])
    }
}

/// ENTL: the ID's length in bits, or an error for an ID over 8191 bytes.
pub fn entl(id: &[u8]) -> Result<u16> {
    u16::try_from(id.len() * 8).map_err(|_| {
        Error::invalid(format!(
            "an SM2 distinguishing ID of {} bytes is over the 8191-byte limit",
            id.len()
        ))
    })
}

/// The digest `e = SM3(Z_A || M)` the signature covers.
pub fn message_digest(id: &[u8], key_xy: &[u8; 64], msg: &[u8]) -> Result<[u8; 32]> {
    Ok(Za::new(id)?.message_digest(key_xy, msg))
}

/// The signature's `(r, s)` and the key's coordinates, every rule but the curve equation.
pub fn parts(
    signature: &[u8],
    pubkey: &[u8],
    format: SigFormat,
) -> std::result::Result<([u8; 32], [u8; 32], Sec1Key), Reason> {
    let (r, s) = sig::signature_scalars(signature, format, &N)?;
    Ok((r, s, sig::sec1_key(pubkey, &P)?))
}

/// One item in the form every backend verifies: valid iff `R = u1·G + u2·key` is finite and
/// `x(R) mod n == r` (integers big-endian, below n).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Item {
    pub u1: [u8; 32],
    pub u2: [u8; 32],
    pub key: Sec1Key,
    pub r: [u8; 32],
}

pub(crate) fn scalar(b: &[u8; 32]) -> Scalar {
    // r and s are below n after parsing.
    Scalar::from_repr((*b).into()).unwrap()
}

/// The item for digest `e` (reduced mod n, as GM/T 0003 takes the hash as an integer).
pub fn item(
    e: &[u8; 32],
    signature: &[u8],
    pubkey: &[u8],
    format: SigFormat,
) -> std::result::Result<Item, Reason> {
    let (r, s, key) = parts(signature, pubkey, format)?;
    item_from_parts(e, &r, &s, key)
}

/// The item for digest `e` from what [`parts`] returned.
pub fn item_from_parts(
    e: &[u8; 32],
    r: &[u8; 32],
    s: &[u8; 32],
    key: Sec1Key,
) -> std::result::Result<Item, Reason> {
    let (r, s) = (scalar(r), scalar(s));
    let t = r + s;
    if bool::from(t.is_zero()) {
        return Err(Reason::SignatureMismatch);
    }
    let e = <Scalar as Reduce<sm2::U256>>::reduce_bytes(&(*e).into());
    Ok(Item {
        u1: s.to_repr().into(),
        u2: t.to_repr().into(),
        key,
        r: (r - e).to_repr().into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The prefix hashed once gives the digest of the whole input, whatever the ID's length puts
    /// at the block boundaries.
    #[test]
    fn za_from_the_shared_prefix_equals_the_one_shot_digest() {
        let key: [u8; 64] = std::array::from_fn(|i| (i * 37 + 11) as u8);
        for len in [0, 1, 2, 15, 16, 17, 61, 62, 63, 64, 65, 126, 200] {
            let id: Vec<u8> = (0..len).map(|i| (i * 5 + 3) as u8).collect();
            let mut whole = ((len * 8) as u16).to_be_bytes().to_vec();
            for part in [&id[..], &A, &B, &GX, &GY, &key] {
                whole.extend_from_slice(part);
            }
            let z = crate::sm3::digest(&whole);
            let za = Za::new(&id).unwrap();
            assert_eq!(za.za(&key), z, "ID of {len} bytes");
            let msg = b"message digest";
            assert_eq!(
                za.message_digest(&key, msg),
                crate::sm3::digest(&[&z[..], msg].concat())
            );
        }
        assert!(Za::new(&vec![0; 8192]).is_err());
    }
}

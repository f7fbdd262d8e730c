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
//! Every backend gets the same [`Item`]: `u1 = s`, `u2 = t` and `r' = r - e mod n`, and tests
//! `x(R) mod n == r'` — the shape of ECDSA's test, so the GPU runs the generic verification items
//! of `bc/verify.cuh`.

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
    Ok(crate::sm3::digest_parts(&[
        &entl(id)?.to_be_bytes(),
        id,
        &A,
        &B,
        &GX,
        &GY,
        key_xy,
    ]))
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
    Ok(crate::sm3::digest_parts(&[&za(id, key_xy)?, msg]))
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

fn scalar(b: &[u8; 32]) -> Scalar {
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

/// Signs digest `e` with private key `d` and the explicit nonce `k` (GM/T 0003.2 §6.1, steps
/// A4–A7), as compact `r || s`; `None` when `k` gives r = 0, r + k = n or s = 0 (take another
/// k), or `d` or `k` is not in `[1, n-1]` (d = n - 1 has no signature). For published example
/// values and sample data: a real signer's nonce must be secret, uniform and never reused.
pub fn sign_digest_with_nonce(d: &[u8; 32], k: &[u8; 32], e: &[u8; 32]) -> Option<[u8; 64]> {
    let in_range = |v: &[u8; 32]| *v != [0; 32] && *v < N;
    if !in_range(d) || !in_range(k) {
        return None;
    }
    let (d, k) = (scalar(d), scalar(k));
    let x1 = super::cpu::mul_base(&[k.to_repr().into()], 1)[0];
    let x1: [u8; 32] = x1[..32].try_into().unwrap();
    let e = <Scalar as Reduce<sm2::U256>>::reduce_bytes(&(*e).into());
    let r = e + <Scalar as Reduce<sm2::U256>>::reduce_bytes(&x1.into());
    let inv = Option::<Scalar>::from((Scalar::ONE + d).invert())?;
    let s = inv * (k - r * d);
    if bool::from(r.is_zero()) || bool::from((r + k).is_zero()) || bool::from(s.is_zero()) {
        return None;
    }
    let mut out = [0u8; 64];
    out[..32].copy_from_slice(&r.to_repr());
    out[32..].copy_from_slice(&s.to_repr());
    Some(out)
}

/// Writes items `first..first + reasons.len()` (`make(i)`) as GPU verification items into `dst`,
/// and each item's failure on the host into `reasons`.
pub(crate) fn encode_block(
    dst: &mut [u8],
    reasons: &mut [Option<Reason>],
    first: usize,
    make: &(impl Fn(usize) -> std::result::Result<Item, Reason> + Sync),
) {
    use crate::sig::items::{self, ITEM_BYTES};
    for (k, (out, reason)) in dst
        .chunks_exact_mut(ITEM_BYTES)
        .zip(reasons.iter_mut())
        .enumerate()
    {
        match make(first + k) {
            Ok(it) => {
                items::encode(out, &it.u1, &it.u2, &it.key, &it.r);
                *reason = None;
            }
            Err(why) => {
                items::skip(out);
                *reason = Some(why);
            }
        }
    }
}

/// Valid signatures (compact) over distinct digests from a few fixed keys (uncompressed), for
/// measuring and benchmarks.
#[derive(Clone, Debug, Default)]
pub struct Sample {
    pub digests: Vec<[u8; 32]>,
    pub sigs: Vec<[u8; 64]>,
    pub keys: Vec<[u8; 65]>,
}

impl Sample {
    /// `n` signatures by `min(n, 256)` keys, made on all cores.
    pub fn new(n: usize) -> Self {
        use rayon::prelude::*;
        let secret = |i: usize, what: &[u8]| {
            let mut d = crate::sm3::digest_parts(&[what, &(i as u64).to_le_bytes()]);
            d[0] &= 0x7f; // below n, and (with overwhelming odds) not zero
            d
        };
        let keys: Vec<[u8; 32]> = (0..n.clamp(1, 256)).map(|i| secret(i, b"key")).collect();
        let public: Vec<[u8; 65]> = super::cpu::mul_base(&keys, crate::backend::cpu::threads())
            .iter()
            .map(|xy| {
                let mut k = [4u8; 65];
                k[1..].copy_from_slice(xy);
                k
            })
            .collect();
        let (digests, (sigs, keys)): (Vec<_>, (Vec<_>, Vec<_>)) = (0..n)
            .into_par_iter()
            .filter_map(|i| {
                let e = secret(i, b"digest");
                let sig = sign_digest_with_nonce(&keys[i % keys.len()], &secret(i, b"nonce"), &e)?;
                Some((e, (sig, public[i % public.len()])))
            })
            .unzip();
        Sample {
            digests,
            sigs,
            keys,
        }
    }

    /// Item `i mod len` for the verification backends.
    pub fn item(&self, i: usize) -> std::result::Result<Item, Reason> {
        let i = i % self.sigs.len();
        item(
            &self.digests[i],
            &self.sigs[i],
            &self.keys[i],
            SigFormat::Compact,
        )
    }

    /// `n` items cycling through the sample, as [`super::Sm2::verify_digests`] takes them.
    pub fn batch(&self, n: usize) -> (Vec<[u8; 32]>, Vec<&[u8]>, Vec<&[u8]>) {
        let m = self.sigs.len();
        (
            (0..n).map(|i| self.digests[i % m]).collect(),
            (0..n).map(|i| &self.sigs[i % m][..]).collect(),
            (0..n).map(|i| &self.keys[i % m][..]).collect(),
        )
    }
}

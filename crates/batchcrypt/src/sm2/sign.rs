//! SM2 signing (GM/T 0003.2 §6.1) with an explicit nonce: for published example values and the
//! sample data of measurements, tests and benchmarks. Not a signer for secrets.

use super::verify::{item, scalar, Item};
use super::N;
use crate::sig::{Reason, SigFormat};
use sm2::elliptic_curve::ops::Reduce;
use sm2::elliptic_curve::PrimeField;
use sm2::Scalar;

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

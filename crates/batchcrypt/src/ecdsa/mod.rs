//! ECDSA verification (SEC 1 v2 §4.1.4), generic over the curve.
//!
//! A curve is its parameters ([`Curve`]): n and p, its scalar field for the host's algebra, its
//! verification kernel and its CPU reference. Everything else is written once, here: the
//! signature encodings (strict DER, compact), the range and low-S rules, SEC1 keys, the GPU items
//! (e and s, of which the curve's preparation kernel makes u1 = e/s and u2 = r/s), the dispatch
//! and the measurement. secp256k1 ([`crate::secp256k1::Secp256k1Curve`]) and P-256
//! ([`crate::p256::P256`]) are its instances.
//!
//! Every item is parsed once by [`parts`], whatever backend runs the arithmetic afterwards, so
//! every backend gives the same verdict on every input. A batch fails as a whole only when it is
//! malformed as a batch (slices of different lengths, no items); a bad item gets its [`Reason`]
//! and the rest are still checked.

pub(crate) mod openssl;

use crate::backend::Backend;
use crate::dispatch::Cost;
use crate::error::Result;
use crate::operation::Operation;
use crate::sig::batch::total_len;
use crate::sig::items::{self, device::Kernel, Encoded, HostItem};
use crate::sig::order::Order;
use crate::sig::{self, below, Reason, Sec1Key, SigFormat, Verdicts};
use crate::{Engine, Output};
use std::marker::PhantomData;

/// A curve ECDSA runs on: its parameters and where its arithmetic lives.
pub trait Curve: Send + Sync + 'static {
    /// The group order n, big-endian.
    const N: [u8; 32];
    /// The field prime p, big-endian.
    const P: [u8; 32];
    /// n, for the host's part of the GPU items.
    const ORDER: Order = Order::new(&Self::N);
    /// The operation batches run as: its cost key and CPU backends.
    fn operation() -> &'static Operation;
    /// The verification kernel (`bc::verify` items, x(R) mod n == r) with its preparation
    /// (u1 = e/s, u2 = r/s on the device) and its fixed-base table.
    fn kernel() -> Kernel;
    /// The CPU backend on one item that passed [`parts`]: `PublicKeyNotOnCurve` when no point has
    /// the key's coordinates, `SignatureMismatch` when the equation is false.
    fn cpu_verify(
        hash: &[u8; 32],
        r: &[u8; 32],
        s: &[u8; 32],
        key: &Sec1Key,
    ) -> std::result::Result<(), Reason>;
    /// A valid signature for measuring: (hash, DER signature, SEC1 key), from a key and message
    /// derived from `seed`.
    fn sample(seed: u32) -> ([u8; 32], Vec<u8>, Vec<u8>);
    /// The kernel code compiled for the host (feature `emulation`).
    #[cfg(feature = "emulation")]
    fn emulated() -> crate::emulation::VerifyKernel;
}

/// ECDSA acceptance rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct EcdsaOptions {
    pub format: SigFormat,
    /// Reject `s > n/2` (Bitcoin's BIP62/BIP146 standardness) instead of accepting it as `n - s`.
    pub require_low_s: bool,
}

/// n / 2 rounded down: the largest low S.
pub const fn half(n: &[u8; 32]) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        out[i] = n[i] >> 1 | if i > 0 { n[i - 1] << 7 } else { 0 };
        i += 1;
    }
    out
}

/// The signature's `(r, s)` after the encoding, range and low-S rules, with S made low (the
/// equation holds for `s` exactly when it holds for `n - s`).
pub fn signature<C: Curve>(
    sig: &[u8],
    opts: &EcdsaOptions,
) -> std::result::Result<([u8; 32], [u8; 32]), Reason> {
    let (r, s) = sig::signature_scalars(sig, opts.format, &C::N)?;
    if below(&half(&C::N), &s) {
        if opts.require_low_s {
            return Err(Reason::HighS);
        }
        return Ok((r, sig::sub(&C::N, &s)));
    }
    Ok((r, s))
}

/// The signature's `(r, s)` and the key's coordinates, every rule but the curve equation (which
/// the backend's arithmetic decides: the GPU decompresses and checks keys itself).
pub fn parts<C: Curve>(
    sig: &[u8],
    pubkey: &[u8],
    opts: &EcdsaOptions,
) -> std::result::Result<([u8; 32], [u8; 32], Sec1Key), Reason> {
    let (r, s) = signature::<C>(sig, opts)?;
    Ok((r, s, sig::sec1_key(pubkey, &C::P)?))
}

/// One item on the CPU backend: our rules, then the curve's CPU arithmetic.
pub fn verify_one<C: Curve>(
    hash: &[u8; 32],
    sig: &[u8],
    pubkey: &[u8],
    opts: &EcdsaOptions,
) -> std::result::Result<(), Reason> {
    let (r, s, key) = parts::<C>(sig, pubkey, opts)?;
    C::cpu_verify(hash, &r, &s, &key)
}

/// The GPU item: e and s, of which the device's preparation makes u1 = e/s and u2 = r/s (the
/// hash reduced mod n, as SEC 1 takes it for a 256-bit n).
pub(crate) fn item<C: Curve>(
    hash: &[u8; 32],
    sig: &[u8],
    pubkey: &[u8],
    opts: &EcdsaOptions,
) -> std::result::Result<HostItem, Reason> {
    let (r, s, key) = parts::<C>(sig, pubkey, opts)?;
    let o = &C::ORDER;
    Ok(HostItem {
        a: o.reduce_be(hash),
        b: o.reduce_be(&s),
        key,
        r,
    })
}

/// A batch's hashes, signatures and keys, item by item.
pub(crate) type Columns<'a> = (Vec<[u8; 32]>, Vec<&'a [u8]>, Vec<&'a [u8]>);

/// The GPU items of `(hash, signature, key)` triples, encoded ahead of their batch
/// ([`Ecdsa::verify_pre_encoded`]).
pub(crate) fn pre_encode<C: Curve>(
    items: &[(&[u8; 32], &[u8], &[u8])],
    opts: &EcdsaOptions,
) -> Encoded {
    Encoded::host_items(items.len(), |i| {
        let (hash, sig, key) = items[i];
        item::<C>(hash, sig, key, opts)
    })
}

/// ECDSA verification on curve `C` on an [`Engine`]: [`Engine::ecdsa`].
pub struct Ecdsa<'e, C> {
    pub(crate) engine: &'e Engine,
    pub(crate) curve: PhantomData<C>,
}

impl<C: Curve> Ecdsa<'_, C> {
    /// Verifies signature `i` over the 32-byte message hash `hashes[i]` with public key
    /// `pubkeys[i]` (SEC1, 33 or 65 bytes).
    pub fn verify(
        &self,
        hashes: &[[u8; 32]],
        sigs: &[&[u8]],
        pubkeys: &[&[u8]],
        opts: &EcdsaOptions,
    ) -> Result<Output<Verdicts>> {
        let n = batch_len(hashes, sigs, pubkeys)?;
        let bytes_in = 32 * n as u64 + total_len(sigs) + total_len(pubkeys);
        sig::batch::verify(
            self.engine,
            C::operation(),
            n,
            bytes_in,
            |i| verify_one::<C>(&hashes[i], sigs[i], pubkeys[i], opts),
            &C::kernel(),
            |i| item::<C>(&hashes[i], sigs[i], pubkeys[i], opts),
            None,
        )
    }

    /// [`Self::verify`] of the `n` items that `pieces` hold, encoded ahead ([`pre_encode`]), in
    /// order. The batch's (hash, signature, key) columns are asked of `columns` only if the
    /// dispatcher keeps the batch on the CPU: gathering them costs the GPU path a pass over data
    /// it no longer reads.
    pub(crate) fn verify_pre_encoded<'a>(
        &self,
        n: usize,
        pieces: &[&Encoded],
        opts: &EcdsaOptions,
        columns: impl Fn() -> Columns<'a> + Sync,
    ) -> Result<Output<Verdicts>> {
        if n == 0 {
            return Err(crate::error::Error::EmptyBatch);
        }
        let cols = std::sync::OnceLock::new();
        let cols = || cols.get_or_init(&columns);
        sig::batch::verify(
            self.engine,
            C::operation(),
            n,
            C::operation().typical(n as u64).bytes_in,
            |i| {
                let (h, s, k) = cols();
                verify_one::<C>(&h[i], s[i], k[i], opts)
            },
            &C::kernel(),
            |i| {
                let (h, s, k) = cols();
                item::<C>(&h[i], s[i], k[i], opts)
            },
            Some(pieces),
        )
    }

    /// Whether a batch of `n` signatures would run on a GPU now.
    pub(crate) fn plans_gpu(&self, n: usize) -> bool {
        sig::batch::plans_gpu(self.engine, C::operation(), n)
    }

    /// Kernel-only GPU time (items prepared on the host, then resident on the device): the median
    /// of `iters` launches in seconds, and the verdicts. For benchmarks; [`Self::verify`] is the
    /// API.
    pub fn kernel_seconds(
        &self,
        hashes: &[[u8; 32]],
        sigs: &[&[u8]],
        pubkeys: &[&[u8]],
        opts: &EcdsaOptions,
        iters: usize,
    ) -> Result<(f64, Verdicts)> {
        let n = batch_len(hashes, sigs, pubkeys)?;
        let (t, results) = items::device::time_host_items(
            &C::kernel(),
            n,
            |i| item::<C>(&hashes[i], sigs[i], pubkeys[i], opts),
            iters,
        )?;
        Ok((t, Verdicts { results }))
    }
}

fn batch_len(hashes: &[[u8; 32]], sigs: &[&[u8]], pubkeys: &[&[u8]]) -> Result<usize> {
    sig::batch_len(&[
        ("hashes", hashes.len()),
        ("signatures", sigs.len()),
        ("public keys", pubkeys.len()),
    ])
}

/// Measures one backend on valid signatures: [`sig::batch::calibrate`].
pub(crate) fn calibrate<C: Curve>(backend: Backend) -> Result<Cost> {
    let sample: Vec<_> = (0..64).map(C::sample).collect();
    let opts = EcdsaOptions::default();
    sig::batch::calibrate(
        C::operation(),
        backend,
        sample.len(),
        |k| {
            sample[..k]
                .iter()
                .all(|(h, s, key)| verify_one::<C>(h, s, key, &opts).is_ok())
        },
        |engine, n| {
            let pick = || (0..n).map(|i| &sample[i % sample.len()]);
            let hashes: Vec<[u8; 32]> = pick().map(|s| s.0).collect();
            let sigs: Vec<&[u8]> = pick().map(|s| s.1.as_slice()).collect();
            let keys: Vec<&[u8]> = pick().map(|s| s.2.as_slice()).collect();
            Ok(engine
                .ecdsa::<C>()
                .verify(&hashes, &sigs, &keys, &opts)?
                .value
                .all_valid())
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Items encoded ahead give the verdicts of the same batch verified from its columns, on
    /// the CPU backend (which asks for the columns) and, where there is one, on the GPU (which
    /// copies the encoded items).
    #[test]
    fn pre_encoded_items_give_the_verdicts_of_the_columns() {
        use crate::secp256k1::Secp256k1Curve as C;
        let mut items: Vec<_> = (0..40).map(C::sample).collect();
        items[3].0[0] ^= 1; // another message
        items[7].1[10] ^= 0x40; // a changed signature (or its encoding)
        items[11].2 = vec![9; 33]; // not a key
        let opts = EcdsaOptions::default();
        let hashes: Vec<[u8; 32]> = items.iter().map(|i| i.0).collect();
        let sigs: Vec<&[u8]> = items.iter().map(|i| i.1.as_slice()).collect();
        let keys: Vec<&[u8]> = items.iter().map(|i| i.2.as_slice()).collect();
        let triples: Vec<_> = (0..items.len())
            .map(|i| (&hashes[i], sigs[i], keys[i]))
            .collect();
        let (a, b) = triples.split_at(17);
        let (a, b) = (pre_encode::<C>(a, &opts), pre_encode::<C>(b, &opts));
        let mut choices = vec![crate::backend::BackendChoice::Cpu];
        if crate::backend::Backend::Cuda.availability().is_ok() {
            choices.push(crate::backend::BackendChoice::Gpu);
        }
        for choice in choices {
            let engine = Engine::with_backend(choice);
            let want = engine
                .ecdsa::<C>()
                .verify(&hashes, &sigs, &keys, &opts)
                .unwrap();
            let got = engine
                .ecdsa::<C>()
                .verify_pre_encoded(items.len(), &[&a, &b], &opts, || {
                    (hashes.clone(), sigs.clone(), keys.clone())
                })
                .unwrap();
            assert_eq!(got.value, want.value, "{choice:?}");
            assert_eq!(got.backend, want.backend);
            assert!(!want.value.results[3].is_ok() && !want.value.results[7].is_ok());
            assert!(!want.value.results[11].is_ok() && want.value.results[12].is_ok());
        }
    }

    #[test]
    fn half_of_n() {
        let n = crate::secp256k1::parse::N;
        // n = 2 * (n/2) + 1 for an odd n.
        let h = half(&n);
        let mut twice = [0u8; 32];
        let mut carry = 0u16;
        for i in (0..32).rev() {
            let v = 2 * h[i] as u16 + carry;
            twice[i] = v as u8;
            carry = v >> 8;
        }
        twice[31] += 1;
        assert_eq!(twice, n);
    }
}

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
pub type Columns<'a> = (Vec<[u8; 32]>, Vec<&'a [u8]>, Vec<&'a [u8]>);

/// ECDSA items encoded for the GPU ahead of their batch, with the rules they were read under.
/// Whoever receives items (a Bitcoin window's interpreter tasks, a service's request handlers)
/// encodes them as they come, on its own thread, and a batch of many
/// ([`Ecdsa::verify_encoded`]) then only copies them. An item that breaks a rule keeps its
/// [`Reason`] and is skipped by the kernel.
pub struct EncodedItems<C> {
    items: Encoded,
    opts: EcdsaOptions,
    curve: PhantomData<C>,
}

impl<C: Curve> EncodedItems<C> {
    /// Items `item(0..n)`, each a (message hash, signature, SEC1 key), read under `opts`.
    pub fn new<'a>(
        n: usize,
        opts: &EcdsaOptions,
        item: impl Fn(usize) -> (&'a [u8; 32], &'a [u8], &'a [u8]) + Sync,
    ) -> Self {
        Self::encode(n, opts, item, false)
    }

    /// [`Self::new`], the items in a block of the page-locked pool where it has one idle (never
    /// without a GPU: [`crate::backend::gpu::page_locked_now`]). A batch whose pieces all lie
    /// there, each of a multiple of 4 items, is joined on the GPU, reading them in place, instead
    /// of copied into staging by the batch's thread: for a server that encodes each request as
    /// it arrives.
    pub fn page_locked<'a>(
        n: usize,
        opts: &EcdsaOptions,
        item: impl Fn(usize) -> (&'a [u8; 32], &'a [u8], &'a [u8]) + Sync,
    ) -> Self {
        Self::encode(n, opts, item, true)
    }

    fn encode<'a>(
        n: usize,
        opts: &EcdsaOptions,
        item: impl Fn(usize) -> (&'a [u8; 32], &'a [u8], &'a [u8]) + Sync,
        page_locked: bool,
    ) -> Self {
        let make = |i| {
            let (hash, sig, key) = item(i);
            self::item::<C>(hash, sig, key, opts)
        };
        EncodedItems {
            items: if page_locked {
                Encoded::host_items_page_locked(n, make)
            } else {
                Encoded::host_items(n, make)
            },
            opts: *opts,
            curve: PhantomData,
        }
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
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

    /// [`Self::verify`] of the items `pieces` hold, back to back, under the rules they were
    /// encoded with (every piece's the same). The batch's (hash, signature, key) columns, the
    /// same items in order, are asked of `columns` only if the dispatcher keeps the batch on the
    /// CPU: gathering them costs the GPU path a pass over data it no longer reads.
    pub fn verify_encoded<'a>(
        &self,
        pieces: &[&EncodedItems<C>],
        columns: impl Fn() -> Columns<'a> + Sync,
    ) -> Result<Output<Verdicts>> {
        let n = pieces.iter().map(|p| p.len()).sum();
        if n == 0 {
            return Err(crate::error::Error::EmptyBatch);
        }
        let opts = pieces[0].opts;
        if pieces.iter().any(|p| p.opts != opts) {
            return Err(crate::error::Error::invalid(
                "items encoded under different rules cannot share a batch",
            ));
        }
        let inner: Vec<&Encoded> = pieces.iter().map(|p| &p.items).collect();
        let cols = std::sync::OnceLock::new();
        let cols = || cols.get_or_init(&columns);
        sig::batch::verify(
            self.engine,
            C::operation(),
            n,
            C::operation().typical(n as u64).bytes_in,
            |i| {
                let (h, s, k) = cols();
                verify_one::<C>(&h[i], s[i], k[i], &opts)
            },
            &C::kernel(),
            |i| {
                let (h, s, k) = cols();
                item::<C>(&h[i], s[i], k[i], &opts)
            },
            Some(&inner),
        )
    }

    /// Whether a batch of `n` signatures would run on a GPU now: worth [`EncodedItems`] where
    /// the caller can encode its items before the batch forms.
    pub fn plans_gpu(&self, n: usize) -> bool {
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
    fn encoded_items_give_the_verdicts_of_the_columns() {
        use crate::secp256k1::Secp256k1Curve as C;
        let mut items: Vec<_> = (0..40).map(C::sample).collect();
        items[3].0[0] ^= 1; // another message
        items[7].1[10] ^= 0x40; // a changed signature (or its encoding)
        items[11].2 = vec![9; 33]; // not a key
        let opts = EcdsaOptions::default();
        let hashes: Vec<[u8; 32]> = items.iter().map(|i| i.0).collect();
        let sigs: Vec<&[u8]> = items.iter().map(|i| i.1.as_slice()).collect();
        let keys: Vec<&[u8]> = items.iter().map(|i| i.2.as_slice()).collect();
        let at = |i: usize| (&hashes[i], sigs[i], keys[i]);
        let gpu = crate::backend::Backend::Cuda.availability().is_ok();
        if gpu {
            // A slab of the pool's smallest blocks, so the page-locked pieces below get blocks
            // (the pool grows on another thread when it has none idle).
            drop(crate::backend::gpu::page_locked(4096));
        }
        // Pieces in ordinary memory are copied into staging; page-locked pieces of whole
        // 16-byte words (multiples of 4 items) are joined on the GPU, others copied too.
        let encode = |from: usize, n: usize, page_locked: bool| {
            let at = |i| at(from + i);
            if page_locked {
                EncodedItems::<C>::page_locked(n, &opts, at)
            } else {
                EncodedItems::<C>::new(n, &opts, at)
            }
        };
        let split = |k, page_locked| {
            (
                encode(0, k, page_locked),
                encode(k, items.len() - k, page_locked),
            )
        };
        let mut choices = vec![crate::backend::BackendChoice::Cpu];
        if gpu {
            choices.push(crate::backend::BackendChoice::Gpu);
        }
        for (k, page_locked) in [(17, false), (16, true), (17, true)] {
            let (a, b) = split(k, page_locked);
            assert_eq!(a.items.is_page_locked(), gpu && page_locked);
            for &choice in &choices {
                let engine = Engine::with_backend(choice);
                let want = engine
                    .ecdsa::<C>()
                    .verify(&hashes, &sigs, &keys, &opts)
                    .unwrap();
                let got = engine
                    .ecdsa::<C>()
                    .verify_encoded(&[&a, &b], || (hashes.clone(), sigs.clone(), keys.clone()))
                    .unwrap();
                assert_eq!(got.value, want.value, "{choice:?}, {k}, {page_locked}");
                assert_eq!(got.backend, want.backend);
                assert!(want.value.results[3].is_err() && want.value.results[7].is_err());
                assert!(want.value.results[11].is_err() && want.value.results[12].is_ok());
            }
        }
    }

    /// Pieces read under different rules (here low S required in one) are refused as a batch,
    /// rather than verified under one piece's rules.
    #[test]
    fn encoded_items_of_different_rules_do_not_share_a_batch() {
        use crate::secp256k1::Secp256k1Curve as C;
        let (hash, sig, key) = C::sample(1);
        let at = |_| (&hash, sig.as_slice(), key.as_slice());
        let plain = EcdsaOptions::default();
        let low_s = EcdsaOptions {
            require_low_s: true,
            ..plain
        };
        let (a, b) = (
            EncodedItems::<C>::new(2, &plain, at),
            EncodedItems::<C>::new(2, &low_s, at),
        );
        let engine = Engine::with_backend(crate::backend::BackendChoice::Cpu);
        let columns = || (vec![hash; 4], vec![&sig[..]; 4], vec![&key[..]; 4]);
        let e = engine.ecdsa::<C>().verify_encoded(&[&a, &b], columns);
        assert!(e.is_err());
        let ok = engine
            .ecdsa::<C>()
            .verify_encoded(&[&a, &a], columns)
            .unwrap();
        assert!(ok.value.all_valid());
        assert!(engine.ecdsa::<C>().verify_encoded(&[], columns).is_err());
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

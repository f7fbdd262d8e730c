//! Batches of independent messages, each under its own key and IV, nonce or tweak: network
//! records, per-file or per-object keys, sectors of many volumes. The messages lie in one buffer
//! ([`Messages`]: equal lengths back to back, or offsets); results go to an output buffer of the
//! same layout. Keys are one per message or one for all; IVs, nonces and tweaks are one per
//! message (reusing a CTR or GCM IV under one key gives the keystream away).
//!
//! The CPU backends spread the messages over all cores: OpenSSL with one cipher context per
//! worker, re-keyed per message, or RustCrypto. CTR and GCM batches also run on the GPU
//! (`kernels/aes/aes_batch.cu`, laid out by [`device`]): messages go up in chunks with their raw
//! keys and counter blocks or nonces, and each GPU thread expands its message's key itself; GCM's
//! tags come back with the output. XTS batches stay on the CPU so far.

use super::cpu::{ctr_cipher, gcm_cipher, ossl, portable_stream, xts_cipher};
use super::gcm::Gcm;
use super::gf128::ghash;
use super::xts::{self, XtsKey};
use super::{Aes, Key, Tag, CPU_ORDER};
use crate::backend::Backend;
use crate::dispatch::{Cost, Location, Workload};
use crate::error::{Error, Result};
use crate::messages::Messages;
use crate::operation::{Join, Operation, Split};
use crate::Output;
use openssl::cipher::CipherRef;
use openssl::cipher_ctx::CipherCtx;
use rayon::prelude::*;

const OP_CTR: &str = "aes_ctr_batch";
const OP_GCM: &str = "aes_gcm_batch";
const OP_XTS: &str = "aes_xts_batch";
/// The same operations on short messages (at most `SHORT_MAX` bytes on average), measured
/// apart: there the per-message set-up outweighs the bytes, and the backends rank differently
/// (RustCrypto re-keys faster than OpenSSL, which wins on longer messages).
const OP_CTR_SHORT: &str = "aes_ctr_batch_short";
const OP_GCM_SHORT: &str = "aes_gcm_batch_short";
const OP_XTS_SHORT: &str = "aes_xts_batch_short";
const SHORT_MAX: u64 = 256;

/// Many messages, each under its own key: they run on one GPU (a batch's chunks already overlap
/// copies and kernels).
const fn batch_operation(
    key: &'static str,
    about: &'static str,
    item_bytes: u64,
    calibrate: fn(Backend) -> Result<Cost>,
) -> Operation {
    let item = (item_bytes, item_bytes, item_bytes.div_ceil(16));
    Operation {
        split: Split::No,
        ..Operation::new(
            key,
            crate::backend::Primitive::Aes,
            about,
            &CPU_ORDER,
            item,
            calibrate,
        )
    }
}

pub static CTR_BATCH: Operation = batch_operation(OP_CTR, "AES-CTR, many messages", 1024, |b| {
    calibrate(OP_CTR, b)
});
pub static GCM_BATCH: Operation = batch_operation(OP_GCM, "AES-GCM, many messages", 1024, |b| {
    calibrate(OP_GCM, b)
});
pub static XTS_BATCH: Operation = batch_operation(OP_XTS, "AES-XTS, many data units", 1024, |b| {
    calibrate(OP_XTS, b)
});
pub static CTR_BATCH_SHORT: Operation =
    batch_operation(OP_CTR_SHORT, "AES-CTR, many short messages", 64, |b| {
        calibrate(OP_CTR_SHORT, b)
    });
pub static GCM_BATCH_SHORT: Operation =
    batch_operation(OP_GCM_SHORT, "AES-GCM, many short messages", 64, |b| {
        calibrate(OP_GCM_SHORT, b)
    });
pub static XTS_BATCH_SHORT: Operation =
    batch_operation(OP_XTS_SHORT, "AES-XTS, many short data units", 64, |b| {
        calibrate(OP_XTS_SHORT, b)
    });

fn calibration_len(op: &str) -> usize {
    match op {
        OP_CTR_SHORT | OP_GCM_SHORT | OP_XTS_SHORT => 64,
        _ => 1024,
    }
}

/// `v` holds one entry per message, or (where `one_for_all`) one for every message.
fn check_count<T>(what: &str, v: &[T], n: usize, one_for_all: bool) -> Result<()> {
    if v.len() == n || (one_for_all && v.len() == 1) {
        return Ok(());
    }
    Err(Error::invalid(if one_for_all {
        format!(
            "{} {what} for {n} messages: pass one per message, or one for all",
            v.len()
        )
    } else {
        format!("{} {what} for {n} messages: pass one per message", v.len())
    }))
}

fn nth<T>(v: &[T], i: usize) -> &T {
    &v[if v.len() == 1 { 0 } else { i }]
}

/// Runs `f(worker context, message index, input, output)` for every message on the plan's
/// threads; results in message order.
fn each<T: Send + Default + Clone>(
    msgs: &Messages<'_>,
    output: &mut [u8],
    threads: usize,
    f: impl Fn(&mut Worker, usize, &[u8], &mut [u8]) -> Result<T> + Sync + Send,
) -> Result<Vec<T>> {
    thread_local! {
        /// Each thread's OpenSSL context, kept across messages and batches.
        static WORKER: std::cell::RefCell<Worker> = std::cell::RefCell::new(Worker::default());
    }
    // Tasks of TASK consecutive messages, each owning the output bytes its messages span and the
    // slots of their results: a slice per message, listed on one thread, cost a tenth of a
    // 2^22-message batch.
    const TASK: usize = 1024;
    let n = msgs.count();
    let mut results = vec![T::default(); n];
    let mut pieces = Vec::with_capacity(n.div_ceil(TASK));
    let mut rest = output;
    let mut at = 0;
    for a in (0..n).step_by(TASK) {
        let (start, end) = (msgs.range(a).start, msgs.range((a + TASK).min(n) - 1).end);
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(start - at);
        let (piece, tail) = tail.split_at_mut(end - start);
        pieces.push((a, piece));
        rest = tail;
        at = end;
    }
    let run = |((a, piece), slots): ((usize, &mut [u8]), &mut [T])| -> Result<()> {
        WORKER.with_borrow_mut(|w| {
            let (mut rest, mut at) = (piece, msgs.range(a).start);
            for (i, slot) in (a..).zip(slots) {
                let r = msgs.range(i);
                let (_, tail) = std::mem::take(&mut rest).split_at_mut(r.start - at);
                let (m, tail) = tail.split_at_mut(r.len());
                *slot = f(w, i, msgs.get(i), m)?;
                rest = tail;
                at = r.end;
            }
            Ok(())
        })
    };
    if threads <= 1 {
        pieces
            .into_iter()
            .zip(results.chunks_mut(TASK))
            .try_for_each(run)?;
    } else {
        pieces
            .into_par_iter()
            .zip(results.par_chunks_mut(TASK))
            .try_for_each(run)?;
    }
    Ok(results)
}

/// A worker's OpenSSL context, and the cipher and direction it was last set up for.
#[derive(Default)]
struct Worker {
    ctx: Option<CipherCtx>,
    set: Option<(openssl::nid::Nid, bool)>,
}

/// The worker's context for `cipher`, made on first use. The cipher is set only when it (or the
/// direction) changes: re-keying alone skips OpenSSL 3's algorithm fetch, which takes a lock
/// that all workers contend for.
fn context<'c>(w: &'c mut Worker, cipher: &CipherRef, decrypt: bool) -> Result<&'c mut CipherCtx> {
    let c = match &mut w.ctx {
        Some(c) => c,
        slot => slot.insert(CipherCtx::new().map_err(ossl)?),
    };
    if w.set != Some((cipher.nid(), decrypt)) {
        if decrypt {
            c.decrypt_init(Some(cipher), None, None)
        } else {
            c.encrypt_init(Some(cipher), None, None)
        }
        .map_err(ossl)?;
        w.set = Some((cipher.nid(), decrypt));
    }
    Ok(c)
}

fn workload(op: &'static str, msgs: &Messages<'_>) -> Workload {
    let blocks: u64 = match *msgs {
        Messages::Fixed { len, count, .. } => (len as u64).div_ceil(16) * count as u64,
        _ => (0..msgs.count())
            .map(|i| (msgs.range(i).len() as u64).div_ceil(16))
            .sum(),
    };
    Workload {
        op,
        items: msgs.count() as u64,
        units: blocks.max(1),
        bytes_in: msgs.bytes(),
        bytes_out: msgs.bytes(),
        location: Location::Host,
    }
}

impl Aes<'_> {
    /// A batch of `op` over `msgs` on the backend the engine picks, its results in `output`
    /// (laid out as the messages): `cpu(backend, threads, output)` or `gpu(output)` on one GPU.
    fn run_batch<T: Join>(
        &self,
        op: &'static Operation,
        msgs: &Messages<'_>,
        output: &mut [u8],
        cpu: impl FnOnce(Backend, usize, &mut [u8]) -> Result<T>,
        gpu: impl Fn(&mut [u8]) -> Result<T> + Sync,
    ) -> Result<Output<T>> {
        let w = workload(op.key, msgs);
        self.engine
            .run_into(op, &w, &CPU_ORDER, output, (1, 1), cpu, |_, out, _| {
                gpu(out)
            })
    }

    /// The operation of a batch of `base` (CTR, GCM or XTS): measured apart on short messages.
    fn batch_op(&self, base: &'static str, msgs: &Messages<'_>) -> &'static Operation {
        let short = msgs.bytes() <= SHORT_MAX * msgs.count() as u64;
        match (base, short) {
            (OP_CTR, false) => &CTR_BATCH,
            (OP_CTR, true) => &CTR_BATCH_SHORT,
            (OP_GCM, false) => &GCM_BATCH,
            (OP_GCM, true) => &GCM_BATCH_SHORT,
            (_, false) => &XTS_BATCH,
            (_, true) => &XTS_BATCH_SHORT,
        }
    }

    /// CTR over each message: message i under `keys[i]` (or the one key) from counter block
    /// `ivs[i]`, counted as in [`Aes::ctr`]. Encryption and decryption are the same call.
    pub fn ctr_batch(
        &self,
        keys: &[Key],
        ivs: &[[u8; 16]],
        msgs: &Messages<'_>,
        output: &mut [u8],
    ) -> Result<Output<()>> {
        let n = msgs.count();
        check_count("keys", keys, n, true)?;
        check_count("IVs", ivs, n, false)?;
        super::check_lengths(msgs.data(), output)?;
        let op = self.batch_op(OP_CTR, msgs);
        self.run_batch(
            op,
            msgs,
            output,
            |backend, threads, output| {
                each(msgs, output, threads, |ctx, i, a, b| {
                    ctr_one(backend, ctx, nth(keys, i), &ivs[i], a, b)
                })
                .map(drop)
            },
            |output| super::gpu::ctr_batch(keys, ivs, msgs, output),
        )
    }

    /// GCM encryption of each message under its key and 12-byte nonce, with `aads[i]` (or no
    /// AAD when `aads` is empty) authenticated; returns the tags in message order.
    pub fn gcm_encrypt_batch(
        &self,
        keys: &[Key],
        nonces: &[[u8; 12]],
        aads: &[&[u8]],
        msgs: &Messages<'_>,
        output: &mut [u8],
    ) -> Result<Output<Vec<Tag>>> {
        let op = self.gcm_batch_checks(keys, nonces, aads, msgs, output)?;
        self.run_batch(
            op,
            msgs,
            output,
            |backend, threads, output| {
                each(msgs, output, threads, |ctx, i, a, b| {
                    let aad = aads.get(i).copied().unwrap_or_default();
                    gcm_one(backend, ctx, nth(keys, i), &nonces[i], aad, a, b, None)
                })
            },
            |output| super::gpu::gcm_batch(keys, nonces, aads, msgs, output, false),
        )
    }

    /// GCM decryption of each message, checking `tags[i]` (16 bytes). Returns one verdict per
    /// message: `false` for a message that failed authentication, whose output is zeroed; the
    /// others are decrypted. A malformed request (counts, lengths) is an error and leaves the
    /// whole output zeroed.
    pub fn gcm_decrypt_batch(
        &self,
        keys: &[Key],
        nonces: &[[u8; 12]],
        aads: &[&[u8]],
        msgs: &Messages<'_>,
        output: &mut [u8],
        tags: &[Tag],
    ) -> Result<Output<Vec<bool>>> {
        let run = |output: &mut [u8]| -> Result<Output<Vec<bool>>> {
            check_count("tags", tags, msgs.count(), false)?;
            let op = self.gcm_batch_checks(keys, nonces, aads, msgs, output)?;
            self.run_batch(
                op,
                msgs,
                output,
                |backend, threads, output| {
                    each(msgs, output, threads, |ctx, i, a, b| {
                        let aad = aads.get(i).copied().unwrap_or_default();
                        let r = gcm_one(
                            backend,
                            ctx,
                            nth(keys, i),
                            &nonces[i],
                            aad,
                            a,
                            b,
                            Some(&tags[i]),
                        );
                        match r {
                            Ok(_) => Ok(true),
                            Err(Error::AuthenticationFailed) => {
                                b.fill(0);
                                Ok(false)
                            }
                            Err(e) => Err(e),
                        }
                    })
                },
                // The kernels decrypt every message and give the tag of its ciphertext; a message
                // whose tag differs is zeroed before its output is released.
                |output| {
                    let got = super::gpu::gcm_batch(keys, nonces, aads, msgs, output, true)?;
                    Ok((0..msgs.count())
                        .map(|i| {
                            let good = super::gcm::check_tag(&got[i], &tags[i]).is_ok();
                            if !good {
                                output[msgs.range(i)].fill(0);
                            }
                            good
                        })
                        .collect())
                },
            )
        };
        run(output).inspect_err(|_| output.fill(0))
    }

    fn gcm_batch_checks(
        &self,
        keys: &[Key],
        nonces: &[[u8; 12]],
        aads: &[&[u8]],
        msgs: &Messages<'_>,
        output: &[u8],
    ) -> Result<&'static Operation> {
        let n = msgs.count();
        check_count("keys", keys, n, true)?;
        check_count("nonces", nonces, n, false)?;
        if !aads.is_empty() {
            check_count("AADs", aads, n, false)?;
        }
        super::check_lengths(msgs.data(), output)?;
        for i in 0..n {
            super::gcm::check_len(msgs.range(i).len())?;
        }
        Ok(self.batch_op(OP_GCM, msgs))
    }

    /// XTS encryption of each message as one data unit (16 bytes to 16 MiB, ciphertext stealing
    /// for a partial last block) under its key and tweak.
    pub fn xts_encrypt_batch(
        &self,
        keys: &[XtsKey],
        tweaks: &[[u8; 16]],
        msgs: &Messages<'_>,
        output: &mut [u8],
    ) -> Result<Output<()>> {
        self.xts_batch(keys, tweaks, msgs, output, false)
    }

    /// XTS decryption of each message, the inverse of [`Aes::xts_encrypt_batch`].
    pub fn xts_decrypt_batch(
        &self,
        keys: &[XtsKey],
        tweaks: &[[u8; 16]],
        msgs: &Messages<'_>,
        output: &mut [u8],
    ) -> Result<Output<()>> {
        self.xts_batch(keys, tweaks, msgs, output, true)
    }

    fn xts_batch(
        &self,
        keys: &[XtsKey],
        tweaks: &[[u8; 16]],
        msgs: &Messages<'_>,
        output: &mut [u8],
        decrypt: bool,
    ) -> Result<Output<()>> {
        let n = msgs.count();
        check_count("keys", keys, n, true)?;
        check_count("tweaks", tweaks, n, false)?;
        super::check_lengths(msgs.data(), output)?;
        // Equal-length messages pass or fail together.
        let checked = if msgs.fixed_len() { n.min(1) } else { n };
        for i in 0..checked {
            let len = msgs.range(i).len();
            xts::check(len.max(16), len)
                .map_err(|e| Error::invalid(format!("message {i}: {e}")))?;
        }
        let op = self.batch_op(OP_XTS, msgs);
        self.run_batch(
            op,
            msgs,
            output,
            |backend, threads, output| {
                each(msgs, output, threads, |ctx, i, a, b| {
                    xts_one(backend, ctx, nth(keys, i), &tweaks[i], a, b, decrypt)
                })
                .map(drop)
            },
            |output| super::gpu::xts_batch(keys, tweaks, msgs, output, decrypt),
        )
    }
}

fn ctr_one(
    backend: Backend,
    ctx: &mut Worker,
    key: &Key,
    iv: &[u8; 16],
    input: &[u8],
    output: &mut [u8],
) -> Result<()> {
    match backend {
        Backend::OpenSsl => {
            let c = context(ctx, ctr_cipher(key), false)?;
            c.encrypt_init(None, Some(key.bytes()), Some(iv))
                .map_err(ossl)?;
            c.cipher_update(input, Some(output)).map_err(ossl)?;
        }
        _ => portable_stream(key, iv, false, input, output),
    }
    Ok(())
}

/// One XTS message (one data unit): OpenSSL through the worker's context, re-keyed.
fn xts_one(
    backend: Backend,
    ctx: &mut Worker,
    key: &XtsKey,
    tweak: &[u8; 16],
    input: &[u8],
    output: &mut [u8],
    decrypt: bool,
) -> Result<()> {
    if backend != Backend::OpenSsl {
        return xts::cpu(backend, key, tweak, input.len(), input, output, decrypt, 1);
    }
    let (k1, k2) = (key.data.bytes(), key.tweak.bytes());
    let mut both = [0u8; 64];
    both[..k1.len()].copy_from_slice(k1);
    both[k1.len()..k1.len() + k2.len()].copy_from_slice(k2);
    let both = &both[..k1.len() + k2.len()];
    let c = context(ctx, xts_cipher(&key.data), decrypt)?;
    if decrypt {
        c.decrypt_init(None, Some(both), Some(tweak))
    } else {
        c.encrypt_init(None, Some(both), Some(tweak))
    }
    .map_err(ossl)?;
    c.cipher_update(input, Some(output)).map_err(ossl)?;
    Ok(())
}

/// One GCM message; with `check`, decryption against that tag (AuthenticationFailed on a
/// mismatch, the output then unspecified: the caller zeroes it).
fn gcm_one(
    backend: Backend,
    ctx: &mut Worker,
    key: &Key,
    nonce: &[u8; 12],
    aad: &[u8],
    input: &[u8],
    output: &mut [u8],
    check: Option<&Tag>,
) -> Result<Tag> {
    match backend {
        Backend::OpenSsl => {
            let c = context(ctx, gcm_cipher(key), check.is_some())?;
            let mut tag = [0u8; 16];
            match check {
                None => {
                    c.encrypt_init(None, Some(key.bytes()), Some(nonce))
                        .map_err(ossl)?;
                    if !aad.is_empty() {
                        c.cipher_update(aad, None).map_err(ossl)?;
                    }
                    c.cipher_update(input, Some(output)).map_err(ossl)?;
                    c.cipher_final(&mut []).map_err(ossl)?;
                    c.tag(&mut tag).map_err(ossl)?;
                }
                Some(t) => {
                    c.decrypt_init(None, Some(key.bytes()), Some(nonce))
                        .map_err(ossl)?;
                    if !aad.is_empty() {
                        c.cipher_update(aad, None).map_err(ossl)?;
                    }
                    c.cipher_update(input, Some(output)).map_err(ossl)?;
                    c.set_tag(t).map_err(ossl)?;
                    c.cipher_final(&mut [])
                        .map_err(|_| Error::AuthenticationFailed)?;
                    tag = *t;
                }
            }
            Ok(tag)
        }
        _ => {
            let g = Gcm::new(key, nonce)?;
            portable_stream(key, &g.first_counter(), true, input, output);
            let ct = if check.is_some() { input } else { &*output };
            let tag = g.tag(aad, ghash(g.h, ct), input.len() as u64);
            if let Some(t) = check {
                super::gcm::check_tag(&tag, t)?;
            }
            Ok(tag)
        }
    }
}

/// Measures one backend over batches of 1 KiB or (for the short-message operations) 64-byte
/// messages: a CPU backend on all of the pool's threads (16 and 512 KiB of messages per thread),
/// reported per thread, so that the estimate for a large batch is what all cores reach together
/// (about a third of the thread count times one thread's rate for 64-byte CTR on a 16-thread
/// host); the GPU end to end from host memory over 16 and 256 MiB of messages (its rate grows with
/// the batch: 64-byte CTR ran 108 M messages/s at 64 MiB and 186 at 256 MiB, and a fit through
/// 16 KiB and 64 MiB kept 2^22 messages on the CPU at 118).
fn calibrate(op: &'static str, backend: Backend) -> Result<Cost> {
    let len = calibration_len(op);
    let scale = 1024 / len;
    let pool = match backend {
        Backend::Cuda => 1,
        _ => crate::backend::cpu::threads().max(1),
    };
    // The large run is 64 MiB of messages on the CPU (256 on the GPU): out of cache, as the
    // batches the choice matters for are (on 8 MiB in cache the CPU looked 2x faster than it
    // streams 2^22 short messages).
    let (small, large) = match backend {
        Backend::Cuda => (16_384 * scale, 262_144 * scale),
        _ => (16 * scale * pool, (512 * scale * pool).max(65_536 * scale)),
    };
    let data = vec![0x5au8; len * large];
    let mut out = vec![0u8; data.len()];
    // A key per message, as in the batches measured (one shared key stays in cache and made the
    // CPU look faster); everything a run takes is made before the timing.
    let keys: Vec<Key> = (0..large)
        .map(|i| {
            let mut k = [7u8; 16];
            k[..8].copy_from_slice(&(i as u64).to_le_bytes());
            Key::Aes128(k)
        })
        .collect();
    let xts_key = XtsKey::new(&[[7u8; 16], [8u8; 16]].concat())?;
    let xts_keys = match op {
        OP_XTS | OP_XTS_SHORT if backend == Backend::Cuda => vec![xts_key.clone(); large],
        _ => Vec::new(),
    };
    let ivs = vec![[3u8; 16]; large];
    let nonces = vec![[3u8; 12]; large];
    let run = |n: usize, out: &mut [u8]| -> Result<()> {
        let msgs = Messages::fixed(&data[..n * len], len)?;
        if backend == Backend::Cuda {
            let out = &mut out[..n * len];
            return match op {
                OP_CTR | OP_CTR_SHORT => super::gpu::ctr_batch(&keys[..n], &ivs[..n], &msgs, out),
                OP_GCM | OP_GCM_SHORT => {
                    super::gpu::gcm_batch(&keys[..n], &nonces[..n], &[], &msgs, out, false)
                        .map(|_| ())
                }
                _ => super::gpu::xts_batch(&xts_keys[..n], &ivs[..n], &msgs, out, false),
            };
        }
        each(&msgs, &mut out[..n * len], pool, |ctx, i, a, b| match op {
            OP_CTR | OP_CTR_SHORT => ctr_one(backend, ctx, &keys[i], &ivs[i], a, b),
            OP_GCM | OP_GCM_SHORT => {
                gcm_one(backend, ctx, &keys[i], &nonces[i], &[], a, b, None).map(|_| ())
            }
            _ => xts_one(backend, ctx, &xts_key, &ivs[i], a, b, false),
        })
        .map(|_| ())
    };
    let c = crate::dispatch::fit_sizes(small, large, (len / 16) as u64, |n| run(n, &mut out))?;
    Ok(Cost {
        per_unit_s: c.per_unit_s * pool as f64,
        ..c
    })
}

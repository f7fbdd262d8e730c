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
use crate::dispatch::{Cost, Location, Plan, Workload};
use crate::error::{Error, Result};
use crate::messages::Messages;
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

/// The operation measured on short messages, and the message length each is measured on.
fn short(op: &'static str) -> &'static str {
    match op {
        OP_CTR => OP_CTR_SHORT,
        OP_GCM => OP_GCM_SHORT,
        _ => OP_XTS_SHORT,
    }
}

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
    fn batch_plan(&self, op: &'static str, msgs: &Messages<'_>) -> Result<Plan> {
        let gpu = true;
        let op = match msgs.bytes() <= SHORT_MAX * msgs.count() as u64 {
            true => short(op),
            false => op,
        };
        let calibrate = |b: Backend| calibrate(op, b);
        self.engine
            .dispatcher()
            .plan(&workload(op, msgs), &CPU_ORDER, gpu, &calibrate)
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
        let plan = self.batch_plan(OP_CTR, msgs)?;
        match plan.backend {
            Backend::Cuda => plan.on_gpu(|| super::gpu::ctr_batch(keys, ivs, msgs, output))?,
            backend => {
                each(msgs, output, plan.threads, |ctx, i, a, b| {
                    ctr_one(backend, ctx, nth(keys, i), &ivs[i], a, b)
                })?;
            }
        }
        Ok(Output {
            value: (),
            backend: plan.backend,
            threads: plan.threads,
        })
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
        let plan = self.gcm_batch_checks(keys, nonces, aads, msgs, output)?;
        let tags = match plan.backend {
            Backend::Cuda => {
                plan.on_gpu(|| super::gpu::gcm_batch(keys, nonces, aads, msgs, output, false))?
            }
            backend => each(msgs, output, plan.threads, |ctx, i, a, b| {
                let aad = aads.get(i).copied().unwrap_or_default();
                gcm_one(backend, ctx, nth(keys, i), &nonces[i], aad, a, b, None)
            })?,
        };
        Ok(Output {
            value: tags,
            backend: plan.backend,
            threads: plan.threads,
        })
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
        let run = |output: &mut [u8]| -> Result<(Plan, Vec<bool>)> {
            check_count("tags", tags, msgs.count(), false)?;
            let plan = self.gcm_batch_checks(keys, nonces, aads, msgs, output)?;
            if plan.backend == Backend::Cuda {
                // The kernels decrypt every message and give the tag of its ciphertext; a
                // message whose tag differs is zeroed before its output is released.
                let got =
                    plan.on_gpu(|| super::gpu::gcm_batch(keys, nonces, aads, msgs, output, true))?;
                let ok: Vec<bool> = (0..msgs.count())
                    .map(|i| {
                        let good = super::gcm::check_tag(&got[i], &tags[i]).is_ok();
                        if !good {
                            output[msgs.range(i)].fill(0);
                        }
                        good
                    })
                    .collect();
                return Ok((plan, ok));
            }
            let ok = each(msgs, output, plan.threads, |ctx, i, a, b| {
                let aad = aads.get(i).copied().unwrap_or_default();
                let r = gcm_one(
                    plan.backend,
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
            })?;
            Ok((plan, ok))
        };
        let (plan, ok) = run(output).inspect_err(|_| output.fill(0))?;
        Ok(Output {
            value: ok,
            backend: plan.backend,
            threads: plan.threads,
        })
    }

    fn gcm_batch_checks(
        &self,
        keys: &[Key],
        nonces: &[[u8; 12]],
        aads: &[&[u8]],
        msgs: &Messages<'_>,
        output: &[u8],
    ) -> Result<Plan> {
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
        self.batch_plan(OP_GCM, msgs)
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
        let plan = self.batch_plan(OP_XTS, msgs)?;
        match plan.backend {
            Backend::Cuda => {
                plan.on_gpu(|| super::gpu::xts_batch(keys, tweaks, msgs, output, decrypt))?
            }
            backend => {
                each(msgs, output, plan.threads, |ctx, i, a, b| {
                    xts_one(backend, ctx, nth(keys, i), &tweaks[i], a, b, decrypt)
                })?;
            }
        }
        Ok(Output {
            value: (),
            backend: plan.backend,
            threads: plan.threads,
        })
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
#[allow(clippy::too_many_arguments)]
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

/// How the GPU batch kernels (`kernels/aes/aes_batch.cu`) take messages: in chunks of
/// consecutive messages, each uploaded as one buffer of sections (16-byte aligned): counter
/// blocks (CTR, 16 bytes per message), nonces (GCM, 12) or first tweaks E_K2(tweak) (XTS, 16),
/// key records (per-message keys only: for CTR and GCM the raw key in 32 bytes, then its length
/// as a little-endian u32; for XTS the data key's round keys, then the rounds), byte offsets and
/// first thread items (offsets form only: n + 1 little-endian u64 each), AAD offsets and bytes
/// (GCM with AADs), then the message bytes. The kernels byte-swap counter blocks, nonces and keys
/// themselves, so those sections are plain copies. A chunk's download is its message bytes, then
/// (GCM) a tag per message; after them on the device, GCM's scratch: each thread item's GHASH sum
/// and each message's H and E_K(J0).
pub(crate) mod device {
    use super::{Key, Messages, XtsKey};
    use std::ops::Range;

    /// Blocks per GPU thread item (`SEG_BLOCKS` of the kernels).
    pub(crate) const SEG_BLOCKS: u64 = 16;
    /// Bytes of a CTR or GCM key record: the raw key in 32, then its length as a little-endian
    /// u32 (the kernels expand it).
    pub(crate) const KEY_RECORD: usize = 36;
    /// Bytes of an XTS key record: the data key's round keys (60 words), then the rounds.
    pub(crate) const XTS_KEY_RECORD: usize = 256;
    /// Upload bytes per chunk of the GPU path: about an eighth of the batch, so that the staging,
    /// upload, kernel and download of different chunks overlap, within these bounds (a message
    /// longer than the upper one is a chunk of its own).
    pub(crate) const MIN_CHUNK_BYTES: usize = 4 << 20;
    pub(crate) const MAX_CHUNK_BYTES: usize = 64 << 20;

    /// `Batch` of kernels/aes/aes_batch.cu.
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub(crate) struct BatchParams {
        pub(crate) rk: [u32; 60],
        pub(crate) rounds: u32,
        pub(crate) decrypt: u32,
        pub(crate) messages: u64,
        pub(crate) len: u64,
        pub(crate) segments: u64,
    }

    /// Which kernels run a batch.
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub(crate) enum Mode {
        Ctr,
        /// Tags and scratch; with the messages' AADs when there are any.
        Gcm,
        Xts,
    }

    /// What a batch carries per message besides its bytes.
    #[derive(Clone, Copy)]
    pub(crate) struct Layout<'a> {
        pub(crate) mode: Mode,
        /// Counter block (16), nonce (12) or first tweak (16) bytes.
        pub(crate) iv_len: usize,
        /// Bytes of a key record per message; 0: one key for all, in the parameters.
        pub(crate) key_record: usize,
        pub(crate) aads: &'a [&'a [u8]],
    }

    impl Layout<'_> {
        pub(crate) fn gcm(&self) -> bool {
            self.mode == Mode::Gcm
        }
    }

    /// How a batch's keys reach the kernels: the one key's schedule in the parameters, or a
    /// record per message (`records(i, rec)` writes message i's, `key_record` bytes).
    pub(crate) struct Keys<'a> {
        pub(crate) one: Option<([u32; 60], u32)>,
        pub(crate) records: Box<dyn Fn(usize, &mut [u8]) + Sync + 'a>,
    }

    /// A CTR or GCM batch's layout and keys: the raw keys as records (the kernels expand them),
    /// or the one key's schedule.
    pub(crate) fn raw_keys<'a>(
        mode: Mode,
        keys: &'a [Key],
        aads: &'a [&'a [u8]],
    ) -> (Layout<'a>, Keys<'a>) {
        let l = Layout {
            mode,
            iv_len: if mode == Mode::Gcm { 12 } else { 16 },
            key_record: if keys.len() == 1 { 0 } else { KEY_RECORD },
            aads,
        };
        let k = Keys {
            one: (keys.len() == 1).then(|| keys[0].round_keys()),
            records: Box::new(move |i, rec| {
                let b = keys[i].bytes();
                rec.fill(0);
                rec[..b.len()].copy_from_slice(b);
                rec[32..36].copy_from_slice(&(b.len() as u32).to_le_bytes());
            }),
        };
        (l, k)
    }

    /// An XTS batch's layout, each message's first tweak E_K2(tweak), and its keys: the data
    /// key's schedule (the inverse cipher's when decrypting) as records, or the one key's.
    pub(crate) fn xts_keys<'a>(
        keys: &'a [XtsKey],
        tweaks: &[[u8; 16]],
        decrypt: bool,
    ) -> (Layout<'static>, Vec<[u8; 16]>, Keys<'a>) {
        use rayon::prelude::*;
        let nth = move |i: usize| &keys[if keys.len() == 1 { 0 } else { i }];
        let first = tweaks
            .par_iter()
            .enumerate()
            .map(|(i, t)| nth(i).tweak.encrypt_block(*t))
            .collect();
        let l = Layout {
            mode: Mode::Xts,
            iv_len: 16,
            key_record: if keys.len() == 1 { 0 } else { XTS_KEY_RECORD },
            aads: &[],
        };
        let schedule = move |i: usize| match decrypt {
            true => nth(i).data.inverse_round_keys(),
            false => nth(i).data.round_keys(),
        };
        let k = Keys {
            one: (keys.len() == 1).then(|| schedule(0)),
            records: Box::new(move |i, rec| {
                let (rk, rounds) = schedule(i);
                rec.fill(0);
                for (w, r) in rec.chunks_exact_mut(4).zip(rk) {
                    w.copy_from_slice(&r.to_le_bytes());
                }
                rec[240..244].copy_from_slice(&rounds.to_le_bytes());
            }),
        };
        (l, first, k)
    }

    /// One chunk: messages `first..first + count`, the sections' places in its upload and
    /// download, and the byte range its messages span in the batch's buffer.
    pub(crate) struct Chunk {
        first: usize,
        count: usize,
        keys_at: Option<usize>,
        offsets_at: Option<(usize, usize)>,
        aads_at: Option<(usize, usize)>,
        data_at: usize,
        pub(crate) in_bytes: usize,
        pub(crate) data: Range<usize>,
        pub(crate) segments: u64,
        /// Where the tags start in the download (GCM).
        pub(crate) tags_at: usize,
        pub(crate) out_bytes: usize,
        pub(crate) scratch_bytes: usize,
    }

    /// The kernels' pointer arguments, as addresses into a chunk's upload at `input` and its
    /// download (and scratch) at `output` (0 for a section the chunk lacks).
    pub(crate) struct Pointers {
        pub(crate) ivs: u64,
        pub(crate) keys: u64,
        pub(crate) offsets: u64,
        pub(crate) segments: u64,
        pub(crate) aad_offsets: u64,
        pub(crate) aad: u64,
        pub(crate) data: u64,
        pub(crate) out: u64,
        pub(crate) tags: u64,
        pub(crate) sums: u64,
        pub(crate) per_message: u64,
    }

    /// Thread items of a message: every message has one, an empty one too (GCM's first item
    /// leaves the message's H and E_K(J0)).
    fn items(len: usize) -> u64 {
        (len as u64).div_ceil(16 * SEG_BLOCKS).max(1)
    }

    fn up16(x: usize) -> usize {
        x.next_multiple_of(16)
    }

    impl Layout<'_> {
        /// Bytes message `i` adds to a chunk's upload, about.
        fn upload(&self, msgs: &Messages<'_>, i: usize) -> usize {
            let aad = self.aads.get(i).map_or(0, |a| 8 + a.len());
            self.iv_len
                + msgs.range(i).len()
                + aad
                + self.key_record
                + if msgs.fixed_len() { 0 } else { 16 }
        }

        /// What every message adds to an upload, when that is the same for all (equal lengths,
        /// no AADs).
        fn uniform(&self, msgs: &Messages<'_>) -> Option<usize> {
            (msgs.fixed_len() && self.aads.is_empty() && msgs.count() > 0)
                .then(|| self.upload(msgs, 0))
        }
    }

    /// The GPU path's chunks for a batch.
    pub(crate) fn gpu_chunks(msgs: &Messages<'_>, l: &Layout<'_>) -> Vec<Chunk> {
        let total: usize = match l.uniform(msgs) {
            Some(each) => each * msgs.count(),
            None => (0..msgs.count()).map(|i| l.upload(msgs, i)).sum(),
        };
        chunks(
            msgs,
            l,
            total.div_ceil(8).clamp(MIN_CHUNK_BYTES, MAX_CHUNK_BYTES),
        )
    }

    /// Chunks of consecutive messages whose uploads take at most about `max_bytes` each (or one
    /// longer message).
    pub(crate) fn chunks(msgs: &Messages<'_>, l: &Layout<'_>, max_bytes: usize) -> Vec<Chunk> {
        let n = msgs.count();
        if let Some(each) = l.uniform(msgs) {
            // Equal messages: equal chunks, without a pass over millions of them.
            let per = (max_bytes / each.max(1)).max(1);
            return (0..n)
                .step_by(per)
                .map(|first| Chunk::new(msgs, l, first, per.min(n - first)))
                .collect();
        }
        let mut v = Vec::new();
        let mut first = 0;
        while first < n {
            let mut bytes = l.upload(msgs, first);
            let mut end = first + 1;
            while end < n {
                let more = l.upload(msgs, end);
                if bytes + more > max_bytes {
                    break;
                }
                bytes += more;
                end += 1;
            }
            v.push(Chunk::new(msgs, l, first, end - first));
            first = end;
        }
        v
    }

    impl Chunk {
        pub(crate) fn new(
            msgs: &Messages<'_>,
            l: &Layout<'_>,
            first: usize,
            count: usize,
        ) -> Chunk {
            let mut at = up16(l.iv_len * count);
            let keys_at = (l.key_record > 0).then(|| {
                let k = at;
                at = up16(at + l.key_record * count);
                k
            });
            let offsets_at = (!msgs.fixed_len()).then(|| {
                let o = at;
                at += 16 * (count + 1);
                (o, o + 8 * (count + 1))
            });
            let aads_at = (l.gcm() && !l.aads.is_empty()).then(|| {
                let o = at;
                let bytes: usize = l.aads[first..first + count].iter().map(|a| a.len()).sum();
                at = up16(at + 8 * (count + 1) + bytes);
                (o, o + 8 * (count + 1))
            });
            let data = msgs.range(first).start..msgs.range(first + count - 1).end;
            let segments = match msgs.fixed_len() {
                true => items(msgs.range(first).len()) * count as u64,
                false => (first..first + count)
                    .map(|i| items(msgs.range(i).len()))
                    .sum(),
            };
            let tags_at = up16(data.len());
            let (out_bytes, scratch_bytes) = match l.gcm() {
                true => (tags_at + 16 * count, 16 * segments as usize + 32 * count),
                false => (data.len(), 0),
            };
            Chunk {
                first,
                count,
                keys_at,
                offsets_at,
                aads_at,
                data_at: at,
                in_bytes: at + data.len(),
                segments,
                tags_at,
                out_bytes,
                scratch_bytes,
                data,
            }
        }

        /// Writes the chunk's upload into `dst` (`in_bytes` long) on all cores: the staging
        /// buffer is the pipeline's, and filling it is host time no other chunk overlaps with.
        /// `ivs`: the counter blocks, nonces or first tweaks, `iv_len` bytes each, back to back;
        /// key records from `keys` (per-message keys only).
        pub(crate) fn stage(
            &self,
            msgs: &Messages<'_>,
            l: &Layout<'_>,
            ivs: &[u8],
            keys: &Keys<'_>,
            dst: &mut [u8],
        ) {
            use crate::backend::cpu::par_copy;
            use rayon::prelude::*;
            const PIECE: usize = 4096;
            let range = self.first..self.first + self.count;
            par_copy(
                &mut dst[..l.iv_len * self.count],
                &ivs[l.iv_len * self.first..l.iv_len * range.end],
            );
            if let Some(k) = self.keys_at {
                let size = l.key_record;
                dst[k..k + size * self.count]
                    .par_chunks_mut(size * PIECE)
                    .enumerate()
                    .for_each(|(piece, part)| {
                        for (j, rec) in part.chunks_exact_mut(size).enumerate() {
                            (keys.records)(range.start + piece * PIECE + j, rec);
                        }
                    });
            }
            let put = |dst: &mut [u8], at: usize, v: u64| {
                dst[at..at + 8].copy_from_slice(&v.to_le_bytes())
            };
            if let Some((o, s)) = self.offsets_at {
                let base = self.data.start;
                let mut seg = 0u64;
                for j in 0..=self.count {
                    let off = match j < self.count {
                        true => msgs.range(self.first + j).start,
                        false => self.data.end,
                    };
                    put(dst, o + 8 * j, (off - base) as u64);
                    put(dst, s + 8 * j, seg);
                    if j < self.count {
                        seg += items(msgs.range(self.first + j).len());
                    }
                }
            }
            if let Some((o, b)) = self.aads_at {
                let mut at = 0usize;
                for j in 0..=self.count {
                    put(dst, o + 8 * j, at as u64);
                    if j < self.count {
                        let a = l.aads[self.first + j];
                        dst[b + at..b + at + a.len()].copy_from_slice(a);
                        at += a.len();
                    }
                }
            }
            par_copy(
                &mut dst[self.data_at..self.in_bytes],
                &msgs.data()[self.data.clone()],
            );
        }

        /// The kernels' parameters (with the one key for all messages, if there is one).
        pub(crate) fn params(
            &self,
            msgs: &Messages<'_>,
            keys: &Keys<'_>,
            decrypt: bool,
        ) -> BatchParams {
            let (rk, rounds) = keys.one.unwrap_or(([0; 60], 0));
            BatchParams {
                rk,
                rounds,
                decrypt: decrypt as u32,
                messages: self.count as u64,
                len: match msgs {
                    Messages::Fixed { len, .. } => *len as u64,
                    Messages::Var { .. } => 0,
                },
                segments: self.segments,
            }
        }

        pub(crate) fn pointers(&self, input: u64, output: u64) -> Pointers {
            let at = |x: Option<usize>| x.map_or(0, |x| input + x as u64);
            let sums = up16(self.out_bytes) as u64;
            Pointers {
                ivs: input,
                keys: at(self.keys_at),
                offsets: at(self.offsets_at.map(|o| o.0)),
                segments: at(self.offsets_at.map(|o| o.1)),
                aad_offsets: at(self.aads_at.map(|o| o.0)),
                aad: at(self.aads_at.map(|o| o.1)),
                data: input + self.data_at as u64,
                out: output,
                tags: output + self.tags_at as u64,
                sums: output + sums,
                per_message: output + sums + 16 * self.segments,
            }
        }

        /// The chunk's tags in its download.
        pub(crate) fn tags<'o>(&self, out: &'o [u8]) -> &'o [u8] {
            &out[self.tags_at..self.tags_at + 16 * self.count]
        }

        pub(crate) fn messages(&self) -> Range<usize> {
            self.first..self.first + self.count
        }
    }
}

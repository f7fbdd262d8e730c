//! Batches of independent messages, each under its own key and IV, nonce or tweak: network
//! records, per-file or per-object keys, sectors of many volumes. The messages lie in one buffer
//! ([`Messages`]: equal lengths back to back, or offsets); results go to an output buffer of the
//! same layout. Keys are one per message or one for all; IVs, nonces and tweaks are one per
//! message (reusing a CTR or GCM IV under one key gives the keystream away).
//!
//! The CPU backends spread the messages over all cores: OpenSSL with one cipher context per
//! worker, re-keyed per message, or RustCrypto. (The GPU kernels take one message at a time so
//! far; batches stay on the CPU.)

use super::cpu::{ctr_cipher, gcm_cipher, ossl, portable_stream};
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
fn each<T: Send>(
    msgs: &Messages<'_>,
    output: &mut [u8],
    threads: usize,
    f: impl Fn(&mut Worker, usize, &[u8], &mut [u8]) -> Result<T> + Sync + Send,
) -> Result<Vec<T>> {
    thread_local! {
        /// Each thread's OpenSSL context, kept across messages and batches.
        static WORKER: std::cell::RefCell<Worker> = std::cell::RefCell::new(Worker::default());
    }
    let outs = msgs.split_mut(output);
    let run = |(i, o): (usize, &mut [u8])| WORKER.with_borrow_mut(|w| f(w, i, msgs.get(i), o));
    if threads <= 1 {
        return outs.into_iter().enumerate().map(run).collect();
    }
    outs.into_par_iter()
        .enumerate()
        .with_min_len(64)
        .map(run)
        .collect()
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
    let blocks: u64 = (0..msgs.count())
        .map(|i| (msgs.range(i).len() as u64).div_ceil(16))
        .sum();
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
        let calibrate = |b: Backend| calibrate(op, b);
        self.engine
            .dispatcher()
            .plan(&workload(op, msgs), &CPU_ORDER, false, &calibrate)
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
        each(msgs, output, plan.threads, |ctx, i, a, b| {
            ctr_one(plan.backend, ctx, nth(keys, i), &ivs[i], a, b)
        })?;
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
        let tags = each(msgs, output, plan.threads, |ctx, i, a, b| {
            let aad = aads.get(i).copied().unwrap_or_default();
            gcm_one(plan.backend, ctx, nth(keys, i), &nonces[i], aad, a, b, None)
        })?;
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
        for i in 0..n {
            let len = msgs.range(i).len();
            xts::check(len.max(16), len)
                .map_err(|e| Error::invalid(format!("message {i}: {e}")))?;
        }
        let plan = self.batch_plan(OP_XTS, msgs)?;
        each(msgs, output, plan.threads, |_, i, a, b| {
            xts::cpu(
                plan.backend,
                nth(keys, i),
                &tweaks[i],
                a.len(),
                a,
                b,
                decrypt,
                1,
            )
        })?;
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

/// Measures one CPU backend on one thread over batches of 1 KiB messages (16 and 512 of them).
fn calibrate(op: &'static str, backend: Backend) -> Result<Cost> {
    const LEN: usize = 1024;
    let (small, large) = (16usize, 512usize);
    let data = vec![0x5au8; LEN * large];
    let mut out = vec![0u8; data.len()];
    let key = Key::Aes128([7; 16]);
    let xts_key = XtsKey::new(&[[7u8; 16], [8u8; 16]].concat())?;
    let ivs = vec![[3u8; 16]; large];
    let run = |n: usize, out: &mut [u8]| -> Result<()> {
        let msgs = Messages::fixed(&data[..n * LEN], LEN)?;
        each(&msgs, &mut out[..n * LEN], 1, |ctx, i, a, b| match op {
            OP_CTR => ctr_one(backend, ctx, &key, &ivs[i], a, b),
            OP_GCM => gcm_one(backend, ctx, &key, &[3; 12], &[], a, b, None).map(|_| ()),
            _ => xts::cpu(backend, &xts_key, &ivs[i], LEN, a, b, false, 1),
        })
        .map(|_| ())
    };
    let out = std::cell::RefCell::new(&mut out);
    crate::dispatch::fit(
        (small * LEN / 16) as u64,
        || run(small, &mut out.borrow_mut()),
        (large * LEN / 16) as u64,
        || run(large, &mut out.borrow_mut()),
    )
}

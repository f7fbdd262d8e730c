//! The CPU backends: RustCrypto's `aes` + `ctr` + `ghash` (portable, with AES-NI and carry-less
//! multiply detected at run time) and OpenSSL's libcrypto (AES-NI/VAES assembly, GCM stitched with
//! GHASH). Both cut a buffer into segments that run on all cores.
//!
//! OpenSSL offers no GCM call that starts mid-message, so a segment's GCM runs as its own GCM
//! invocation whose pre-counter block is chosen to be the segment's: with a 16-byte IV,
//! J0' = GHASH(IV' || [0]_64 || [128]_64) = IV'·H^2 ⊕ L·H, so IV' = (J0' ⊕ L·H)·H^-2. Its tag then
//! yields the segment's GHASH sum: T' = E_K(J0') ⊕ Y_s·H ⊕ [len]·H.

use super::gcm::{add128, add32, Gcm};
use super::gf128::{ghash, Gf128};
use super::Key;
use crate::backend::Backend;
use crate::error::{Error, Result};
use ctr::cipher::{KeyIvInit, StreamCipher};
use openssl::cipher::{Cipher, CipherRef};
use openssl::cipher_ctx::CipherCtx;

/// Bytes per CPU segment at most: large enough to amortize a cipher context, small enough that
/// the GHASH pass of the portable backend finds the segment in cache.
pub const SEG_BYTES: usize = 256 << 10;
/// Bytes per CPU segment at least: a buffer of a few MiB or less is cut into one segment per
/// thread (at 256 KiB a 1 MiB buffer would keep only four threads busy), but not finer than this.
pub const MIN_SEG_BYTES: usize = 32 << 10;

/// The segment size for `len` bytes on `threads` threads: a multiple of `MIN_SEG_BYTES` (so
/// of every block size) from `MIN_SEG_BYTES` to `SEG_BYTES`.
pub fn seg_bytes(len: usize, threads: usize) -> usize {
    len.div_ceil(threads.max(1))
        .next_multiple_of(MIN_SEG_BYTES)
        .clamp(MIN_SEG_BYTES, SEG_BYTES)
}

pub(crate) fn ossl(e: openssl::error::ErrorStack) -> Error {
    Error::Library {
        library: "OpenSSL",
        message: e.to_string(),
    }
}

/// Runs `f(segment index, input segment, output segment)` over the buffer in segments of `seg`
/// bytes, on all pool threads when `threads > 1`; results in segment order. Each result goes to
/// its own slot (collecting `Result`s through rayon builds and joins lists, which costs more
/// than a 64 KiB segment at 1 MiB on 16 cores).
fn segments<T: Send + Default + Clone>(
    input: &[u8],
    output: &mut [u8],
    seg: usize,
    threads: usize,
    f: impl Fn(usize, &[u8], &mut [u8]) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    use rayon::prelude::*;
    let mut slots = vec![T::default(); input.len().div_ceil(seg)];
    let run = |((i, (a, b)), slot): (_, &mut T)| -> Result<()> {
        *slot = f(i, a, b)?;
        Ok(())
    };
    if threads <= 1 {
        input
            .chunks(seg)
            .zip(output.chunks_mut(seg))
            .enumerate()
            .zip(slots.iter_mut())
            .try_for_each(run)?;
    } else {
        input
            .par_chunks(seg)
            .zip(output.par_chunks_mut(seg))
            .enumerate()
            .zip(slots.par_iter_mut())
            .try_for_each(run)?;
    }
    Ok(slots)
}

/// CTR (SP 800-38A, 128-bit counter) from counter block `iv`.
pub fn ctr(
    backend: Backend,
    key: &Key,
    iv: &[u8; 16],
    input: &[u8],
    output: &mut [u8],
    threads: usize,
) -> Result<()> {
    let seg = seg_bytes(input.len(), threads);
    let seg_blocks = (seg / 16) as u64;
    segments(input, output, seg, threads, |i, a, b| {
        let counter = add128(iv, i as u64 * seg_blocks);
        match backend {
            Backend::OpenSsl => openssl_stream(ctr_cipher(key), key, &counter, a, b),
            _ => {
                portable_stream(key, &counter, false, a, b);
                Ok(())
            }
        }
    })
    .map(|_| ())
}

/// GCM's counter mode over the buffer; returns the GHASH of the ciphertext alone (the input when
/// decrypting, the output when encrypting). The caller forms the tag ([`Gcm::tag`]).
pub fn gcm(
    backend: Backend,
    g: &Gcm,
    input: &[u8],
    output: &mut [u8],
    decrypt: bool,
    threads: usize,
) -> Result<Gf128> {
    let blocks = (input.len() as u64).div_ceil(16);
    let first = g.first_counter();
    let seg = seg_bytes(input.len(), threads);
    let seg_blocks = (seg / 16) as u64;
    let segs = match backend {
        Backend::OpenSsl => {
            let o = OpenSslGcm::new(g);
            segments(input, output, seg, threads, |i, a, b| {
                o.segment(&add32(&first, i as u64 * seg_blocks), a, b, decrypt)
            })?
        }
        _ => segments(input, output, seg, threads, |i, a, b| {
            portable_stream(&g.key, &add32(&first, i as u64 * seg_blocks), true, a, b);
            Ok(ghash(g.h, if decrypt { a } else { b }))
        })?,
    };
    Ok(super::gcm::combine(g.h, &segs, seg_blocks, blocks))
}

fn apply<C: KeyIvInit + StreamCipher>(
    key: &[u8],
    counter: &[u8; 16],
    input: &[u8],
    output: &mut [u8],
) {
    let mut c = C::new_from_slices(key, counter).expect("key and counter sizes are fixed by Key");
    c.apply_keystream_b2b(input, output)
        .expect("input and output have equal lengths");
}

/// RustCrypto's counter mode: `inc32` for GCM (last 32 bits), else the 128-bit counter.
pub(crate) fn portable_stream(
    key: &Key,
    counter: &[u8; 16],
    inc32: bool,
    input: &[u8],
    output: &mut [u8],
) {
    use ctr::{Ctr128BE, Ctr32BE};
    match (key, inc32) {
        (Key::Aes128(k), false) => apply::<Ctr128BE<aes::Aes128>>(k, counter, input, output),
        (Key::Aes256(k), false) => apply::<Ctr128BE<aes::Aes256>>(k, counter, input, output),
        (Key::Aes128(k), true) => apply::<Ctr32BE<aes::Aes128>>(k, counter, input, output),
        (Key::Aes256(k), true) => apply::<Ctr32BE<aes::Aes256>>(k, counter, input, output),
    }
}

/// OpenSSL 3 looks a legacy cipher (`Cipher::aes_128_gcm()`…) up in its provider store at every
/// initialisation, under a lock all threads share; at 1 MiB on 16 cores that look-up is a good
/// part of each segment. A cipher fetched once per process skips it (the legacy one stays the
/// fallback if fetching fails).
fn fetched(
    slot: usize,
    name: &'static str,
    legacy: fn() -> &'static CipherRef,
) -> &'static CipherRef {
    use std::sync::OnceLock;
    static FETCHED: [OnceLock<Option<Cipher>>; 6] = [const { OnceLock::new() }; 6];
    FETCHED[slot]
        .get_or_init(|| Cipher::fetch(None, name, None).ok())
        .as_deref()
        .unwrap_or_else(legacy)
}

pub(crate) fn ctr_cipher(key: &Key) -> &'static CipherRef {
    match key {
        Key::Aes128(_) => fetched(0, "AES-128-CTR", Cipher::aes_128_ctr),
        Key::Aes256(_) => fetched(1, "AES-256-CTR", Cipher::aes_256_ctr),
    }
}

pub(crate) fn gcm_cipher(key: &Key) -> &'static CipherRef {
    match key {
        Key::Aes128(_) => fetched(2, "AES-128-GCM", Cipher::aes_128_gcm),
        Key::Aes256(_) => fetched(3, "AES-256-GCM", Cipher::aes_256_gcm),
    }
}

pub(crate) fn xts_cipher(key: &Key) -> &'static CipherRef {
    match key {
        Key::Aes128(_) => fetched(4, "AES-128-XTS", Cipher::aes_128_xts),
        Key::Aes256(_) => fetched(5, "AES-256-XTS", Cipher::aes_256_xts),
    }
}

fn openssl_stream(
    cipher: &CipherRef,
    key: &Key,
    iv: &[u8; 16],
    input: &[u8],
    output: &mut [u8],
) -> Result<()> {
    let mut ctx = CipherCtx::new().map_err(ossl)?;
    ctx.encrypt_init(Some(cipher), Some(key.bytes()), Some(iv))
        .map_err(ossl)?;
    ctx.cipher_update(input, Some(output)).map_err(ossl)?;
    Ok(())
}

/// Per-call constants of the OpenSSL GCM segments (see the module).
struct OpenSslGcm<'a> {
    g: &'a Gcm,
    h_inv: Gf128,
    h_inv2: Gf128,
    /// [0]_64 || [128]_64 times H: the length block of a 16-byte IV, weighted.
    iv_len_h: Gf128,
    /// E_K(0^96 || 1): the pre-counter block of the all-zero 12-byte IV the GMAC pass uses.
    e_zero_j0: Gf128,
}

impl<'a> OpenSslGcm<'a> {
    fn new(g: &'a Gcm) -> Self {
        let h_inv = g.h.inv();
        let mut zero_j0 = [0u8; 16];
        zero_j0[15] = 1;
        OpenSslGcm {
            g,
            h_inv,
            h_inv2: h_inv * h_inv,
            iv_len_h: Gf128(128) * g.h,
            e_zero_j0: Gf128::from_block(&g.key.encrypt_block(zero_j0)),
        }
    }

    /// Encrypts or decrypts one segment whose first counter block is `counter`; returns Y_s.
    fn segment(
        &self,
        counter: &[u8; 16],
        input: &[u8],
        output: &mut [u8],
        decrypt: bool,
    ) -> Result<Gf128> {
        let key = &self.g.key;
        let cipher = gcm_cipher(key);
        let j0 = add32(counter, u32::MAX as u64); // inc32 of J0' is the segment's first counter
        let iv = ((Gf128::from_block(&j0) ^ self.iv_len_h) * self.h_inv2).to_block();
        let bits = input.len() as u64 * 8;
        let mut tag = [0u8; 16];
        let mut ctx = CipherCtx::new().map_err(ossl)?;
        if decrypt {
            // GHASH of the ciphertext first, as GMAC over it (AAD only, zero IV):
            // T = E_K(0^96 || 1) ⊕ Y_s·H ⊕ ([len]_64 || [0]_64)·H.
            ctx.encrypt_init(Some(cipher), Some(key.bytes()), Some(&[0u8; 12]))
                .map_err(ossl)?;
            ctx.cipher_update(input, None).map_err(ossl)?;
            ctx.cipher_final(&mut []).map_err(ossl)?;
            ctx.tag(&mut tag).map_err(ossl)?;
            let y = ((Gf128::from_block(&tag) ^ self.e_zero_j0) * self.h_inv)
                ^ Gf128((bits as u128) << 64);
            let mut ctx = CipherCtx::new().map_err(ossl)?;
            ctx.decrypt_init(Some(cipher), None, None).map_err(ossl)?;
            ctx.set_iv_length(16).map_err(ossl)?;
            ctx.decrypt_init(None, Some(key.bytes()), Some(&iv))
                .map_err(ossl)?;
            ctx.cipher_update(input, Some(output)).map_err(ossl)?;
            return Ok(y);
        }
        ctx.encrypt_init(Some(cipher), None, None).map_err(ossl)?;
        ctx.set_iv_length(16).map_err(ossl)?;
        ctx.encrypt_init(None, Some(key.bytes()), Some(&iv))
            .map_err(ossl)?;
        ctx.cipher_update(input, Some(output)).map_err(ossl)?;
        ctx.cipher_final(&mut []).map_err(ossl)?;
        ctx.tag(&mut tag).map_err(ossl)?;
        let e_j0 = Gf128::from_block(&key.encrypt_block(j0));
        Ok(((Gf128::from_block(&tag) ^ e_j0) * self.h_inv) ^ Gf128(bits as u128))
    }
}

//! Streams of any length: raw CTR (byte for byte what `openssl enc -aes-128-ctr` writes) and the
//! chunked, authenticated GCM file format documented in docs/aes-file-format.md.
//!
//! The GCM format cuts the plaintext into chunks, each sealed with its own IV (a random 8-byte
//! prefix and the chunk's index) and with the header, the index and a last-chunk flag as
//! associated data — the STREAM construction. A reordered, dropped, duplicated or modified chunk
//! fails its tag; a stream cut at a chunk boundary lacks the flagged last chunk. Decryption writes
//! a chunk's plaintext only after its tag checks.

use super::{Aes, Key};
use crate::error::{Error, Result};
use std::io::{Read, Write};

/// The file's first bytes.
pub const MAGIC: &[u8; 8] = b"BCAESGCM";
pub const VERSION: u8 = 1;
pub const HEADER_LEN: usize = 20;
/// Default chunk: 2^24 bytes (16 MiB), large enough to keep every core or the GPU busy.
pub const DEFAULT_CHUNK_LOG2: u8 = 24;
/// The chunk sizes the format allows: 2^12 (4 KiB) to 2^30 (1 GiB).
pub const MIN_CHUNK_LOG2: u8 = 12;
pub const MAX_CHUNK_LOG2: u8 = 30;
const TAG: usize = 16;

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(n)
}

/// CTR over a stream from counter block `iv`; `progress` gets the bytes done so far.
pub fn ctr(
    aes: &Aes,
    key: &Key,
    iv: &[u8; 16],
    mut input: impl Read,
    mut output: impl Write,
    mut progress: impl FnMut(u64),
) -> Result<u64> {
    const CHUNK: usize = 1 << 24; // a multiple of 16, so each chunk starts on a block
    let (mut buf, mut out) = (vec![0u8; CHUNK], vec![0u8; CHUNK]);
    let mut done = 0u64;
    loop {
        let n = read_full(&mut input, &mut buf)?;
        if n == 0 {
            break;
        }
        aes.ctr(
            key,
            &super::gcm::add128(iv, done / 16),
            &buf[..n],
            &mut out[..n],
        )?;
        output.write_all(&out[..n])?;
        done += n as u64;
        progress(done);
        if n < CHUNK {
            break;
        }
    }
    output.flush()?;
    Ok(done)
}

fn header(key: &Key, chunk_log2: u8, prefix: &[u8; 8]) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(MAGIC);
    h[8] = VERSION;
    h[9] = (key.bits() / 64) as u8; // 2: AES-128, 4: AES-256
    h[10] = chunk_log2;
    h[12..].copy_from_slice(prefix);
    h
}

fn chunk_iv(prefix: &[u8; 8], index: u64) -> Result<[u8; 12]> {
    let index = u32::try_from(index).map_err(|_| {
        Error::invalid("the stream has more than 2^32 chunks: use a larger chunk size")
    })?;
    let mut iv = [0u8; 12];
    iv[..8].copy_from_slice(prefix);
    iv[8..].copy_from_slice(&index.to_be_bytes());
    Ok(iv)
}

fn chunk_aad(header: &[u8; HEADER_LEN], index: u64, last: bool) -> [u8; HEADER_LEN + 9] {
    let mut a = [0u8; HEADER_LEN + 9];
    a[..HEADER_LEN].copy_from_slice(header);
    a[HEADER_LEN..HEADER_LEN + 8].copy_from_slice(&index.to_be_bytes());
    a[HEADER_LEN + 8] = last as u8;
    a
}

/// Encrypts a stream into the chunked GCM format with chunks of 2^`chunk_log2` bytes and a fresh
/// random IV prefix; returns the plaintext bytes.
pub fn seal(
    aes: &Aes,
    key: &Key,
    chunk_log2: u8,
    mut input: impl Read,
    mut output: impl Write,
    mut progress: impl FnMut(u64),
) -> Result<u64> {
    if !(MIN_CHUNK_LOG2..=MAX_CHUNK_LOG2).contains(&chunk_log2) {
        return Err(Error::invalid(format!(
            "chunk size 2^{chunk_log2} is out of range: use 2^12 (4 KiB) to 2^30 (1 GiB)"
        )));
    }
    let prefix: [u8; 8] = rand::random();
    let head = header(key, chunk_log2, &prefix);
    output.write_all(&head)?;
    let chunk = 1usize << chunk_log2;
    // One byte of look-ahead tells whether a full chunk is the last.
    let mut buf = vec![0u8; chunk + 1];
    let mut out = vec![0u8; chunk];
    let mut have = read_full(&mut input, &mut buf)?;
    let (mut index, mut done) = (0u64, 0u64);
    loop {
        let last = have <= chunk;
        let n = have.min(chunk);
        let tag = aes
            .gcm_encrypt(
                key,
                &chunk_iv(&prefix, index)?,
                &chunk_aad(&head, index, last),
                &buf[..n],
                &mut out[..n],
            )?
            .value;
        output.write_all(&out[..n])?;
        output.write_all(&tag)?;
        done += n as u64;
        progress(done);
        if last {
            break;
        }
        buf.copy_within(chunk..chunk + 1, 0);
        have = 1 + read_full(&mut input, &mut buf[1..])?;
        index += 1;
    }
    output.flush()?;
    Ok(done)
}

/// Decrypts the chunked GCM format; returns the plaintext bytes. A chunk that fails its tag
/// stops the stream before any of its plaintext is written.
pub fn open(
    aes: &Aes,
    key: &Key,
    input: impl Read,
    output: impl Write,
    progress: impl FnMut(u64),
) -> Result<u64> {
    open_within(aes, key, MAX_CHUNK_LOG2, input, output, progress)
}

/// [`open`] for a stream from someone else: one whose header names chunks over
/// 2^`max_chunk_log2` bytes (the memory it takes to decrypt) is refused before any is allocated.
pub fn open_within(
    aes: &Aes,
    key: &Key,
    max_chunk_log2: u8,
    mut input: impl Read,
    mut output: impl Write,
    mut progress: impl FnMut(u64),
) -> Result<u64> {
    let mut head = [0u8; HEADER_LEN];
    let got = read_full(&mut input, &mut head)?;
    if got < HEADER_LEN || &head[..8] != MAGIC {
        return Err(Error::Corrupt("not a batchcrypt GCM stream (the header is missing or wrong); CTR output has no header: decrypt it with --mode ctr".into()));
    }
    if head[8] != VERSION {
        return Err(Error::Corrupt(format!(
            "format version {} is not supported (this build reads version {VERSION})",
            head[8]
        )));
    }
    if head[9] as usize * 64 != key.bits() {
        return Err(Error::invalid(format!(
            "the stream was encrypted with AES-{}, but the key is AES-{}",
            head[9] as usize * 64,
            key.bits()
        )));
    }
    let chunk_log2 = head[10];
    if !(MIN_CHUNK_LOG2..=MAX_CHUNK_LOG2).contains(&chunk_log2) || head[11] != 0 {
        return Err(Error::Corrupt(
            "the header is damaged (chunk size or reserved byte)".into(),
        ));
    }
    if chunk_log2 > max_chunk_log2 {
        return Err(Error::invalid(format!(
            "the stream's chunks are 2^{chunk_log2} bytes, over the 2^{max_chunk_log2} accepted here"
        )));
    }
    let prefix: [u8; 8] = head[12..].try_into().unwrap();
    let sealed = (1usize << chunk_log2) + TAG;
    let mut buf = vec![0u8; sealed + 1];
    let mut out = vec![0u8; 1 << chunk_log2];
    let mut have = read_full(&mut input, &mut buf)?;
    let (mut index, mut done) = (0u64, 0u64);
    loop {
        let last = have <= sealed;
        let n = have.min(sealed);
        if n < TAG {
            return Err(Error::Corrupt(format!(
                "the stream is truncated: chunk {index} is missing or cut short"
            )));
        }
        let (ct, tag) = buf[..n].split_at(n - TAG);
        let m = ct.len();
        match aes.gcm_decrypt(key, &chunk_iv(&prefix, index)?, &chunk_aad(&head, index, last), ct, &mut out[..m], tag) {
            Ok(_) => {}
            Err(Error::AuthenticationFailed) if last => {
                return Err(Error::Corrupt(format!(
                    "chunk {index} failed authentication: wrong key, modified data, or the stream was truncated (nothing of this chunk was written)"
                )))
            }
            Err(Error::AuthenticationFailed) => {
                return Err(Error::Corrupt(format!("chunk {index} failed authentication: wrong key or modified data (nothing of this chunk was written)")))
            }
            Err(e) => return Err(e),
        }
        output.write_all(&out[..m])?;
        done += m as u64;
        progress(done);
        if last {
            break;
        }
        buf.copy_within(sealed..sealed + 1, 0);
        have = 1 + read_full(&mut input, &mut buf[1..])?;
        index += 1;
    }
    output.flush()?;
    Ok(done)
}

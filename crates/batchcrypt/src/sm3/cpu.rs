//! The CPU backend: RustCrypto's `sm3`, one message per task over the thread pool.

use super::Digest;
use sm3::{Digest as _, Sm3};

pub fn digest(msg: &[u8]) -> Digest {
    Sm3::digest(msg).into()
}

/// The digest of the concatenation of `parts`.
pub fn digest_parts(parts: &[&[u8]]) -> Digest {
    let mut h = Sm3::new();
    parts.iter().for_each(|p| h.update(p));
    h.finalize().into()
}

/// `count` messages of `len` bytes on `threads` threads.
pub fn hash_fixed(data: &[u8], len: usize, count: usize, threads: usize) -> Vec<Digest> {
    crate::backend::cpu::par_map(256, count, threads, |i| {
        digest(&data[i * len..(i + 1) * len])
    })
}

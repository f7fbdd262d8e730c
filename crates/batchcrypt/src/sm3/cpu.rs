//! The CPU backend: RustCrypto's `sm3`, one message per task over the thread pool.

use super::Digest;
use sm3::{Digest as _, Sm3};

pub fn digest(msg: &[u8]) -> Digest {
    Sm3::digest(msg).into()
}

/// The digest of the concatenation of `parts`.
pub fn digest_parts(parts: &[&[u8]]) -> Digest {
    let mut h = Hasher::default();
    parts.iter().for_each(|p| h.update(p));
    h.finish()
}

/// An SM3 computation in progress. Cloned after a prefix many messages share, it hashes that
/// prefix once for all of them.
#[derive(Clone, Default)]
pub struct Hasher(Sm3);

impl Hasher {
    pub fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    pub fn finish(self) -> Digest {
        self.0.finalize().into()
    }
}

/// `count` messages of `len` bytes on `threads` threads.
pub fn hash_fixed(data: &[u8], len: usize, count: usize, threads: usize) -> Vec<Digest> {
    crate::backend::cpu::par_map(256, count, threads, |i| {
        digest(&data[i * len..(i + 1) * len])
    })
}

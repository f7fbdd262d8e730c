//! SM3 (GB/T 32905-2016, GM/T 0004-2012), the Chinese national hash: 256-bit digests over 64-byte
//! blocks with SHA-256's padding. One message on the CPU ([`digest`]), and batches of equal-length
//! messages on the CPU (RustCrypto's `sm3` over all cores) or the GPU (`kernels/sm3`), chosen by
//! the dispatcher. SM2 uses it for message digests and hashing to the curve.

pub mod cpu;
pub mod gpu;

use crate::backend::{Backend, Primitive};
use crate::dispatch::Cost;
use crate::error::{Error, Result};
use crate::operation::Operation;
use crate::{Engine, Output};

pub type Digest = [u8; 32];

pub use cpu::Hasher;

/// Batches of equal-length messages.
pub static FIXED: Operation = Operation::new(
    "sm3_fixed",
    Primitive::Sm3,
    "SM3 of equal-length messages",
    &[Backend::Portable],
    (64, 32, 2),
    calibrate,
);

/// The SM3 digest of one message.
pub fn digest(msg: &[u8]) -> Digest {
    cpu::digest(msg)
}

/// The SM3 digest of the concatenation of `parts` (no copy).
pub fn digest_parts(parts: &[&[u8]]) -> Digest {
    cpu::digest_parts(parts)
}

/// Compression-function calls for a message of `len` bytes (padding adds 9 bytes at least).
fn blocks(len: usize) -> u64 {
    (len as u64 + 9).div_ceil(64)
}

/// Batch SM3 through an [`Engine`] (`engine.sm3()`).
pub struct Sm3<'e> {
    pub(crate) engine: &'e Engine,
}

impl Sm3<'_> {
    /// The digests of `data.len() / len` messages of `len` bytes each, back to back.
    pub fn hash_fixed(&self, data: &[u8], len: usize) -> Result<Output<Vec<Digest>>> {
        if len == 0 && data.is_empty() {
            return Err(Error::invalid(
                "zero-length messages need a count: use hash_fixed_count",
            ));
        }
        self.hash_fixed_count(data, len, data.len().checked_div(len).unwrap_or(0))
    }

    /// `count` messages of `len` bytes (possibly zero) from `data`.
    pub fn hash_fixed_count(
        &self,
        data: &[u8],
        len: usize,
        count: usize,
    ) -> Result<Output<Vec<Digest>>> {
        if count == 0 {
            return Err(Error::EmptyBatch);
        }
        if len.checked_mul(count) != Some(data.len()) {
            return Err(Error::invalid(format!(
                "{} bytes do not hold {count} messages of {len} bytes",
                data.len()
            )));
        }
        let w = FIXED.workload(
            count as u64,
            data.len() as u64,
            32 * count as u64,
            count as u64 * blocks(len),
        );
        self.engine.run(
            &FIXED,
            &w,
            FIXED.cpu,
            |_, threads| Ok(cpu::hash_fixed(data, len, count, threads)),
            |r, _| gpu::hash_fixed(&data[r.start * len..r.end * len], len, r.len()),
        )
    }
}

/// Measures one backend on 64-byte messages: a small and a large batch, fitted per block.
fn calibrate(backend: Backend) -> Result<Cost> {
    let data = vec![0x5au8; 64 << 14];
    let run = |n: usize| -> Result<()> {
        let engine = Engine::measuring(backend);
        engine.sm3().hash_fixed(&data[..64 * n], 64).map(|_| ())
    };
    let (small, large) = (16, 1 << 14);
    // Two compressions per 64-byte message.
    crate::dispatch::fit_sizes(small, large, 2, run)
}

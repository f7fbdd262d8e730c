//! Bitcoin merkle roots: each level pairs adjacent hashes (the last one with itself when the level
//! is odd) and hashes each 64-byte pair with SHA256d. Every level is one batch, so large levels
//! run on the GPU and the small top levels on the CPU, as the dispatcher decides.

use super::{Digest, Mode, Sha256};
use crate::error::{Error, Result};
use crate::Output;

impl Sha256<'_> {
    /// The merkle root of `txids` (internal byte order, as in blocks). Reports the backend that
    /// hashed the largest level.
    pub fn merkle_root(&self, txids: &[Digest]) -> Result<Output<Digest>> {
        if txids.is_empty() {
            return Err(Error::EmptyBatch);
        }
        let mut level: Vec<Digest> = txids.to_vec();
        let mut first: Option<(crate::Backend, usize, Vec<usize>)> = None;
        while level.len() > 1 {
            if level.len() % 2 == 1 {
                level.push(*level.last().unwrap());
            }
            let out = self.hash_fixed(level.as_flattened(), 64, Mode::Double)?;
            first.get_or_insert((out.backend, out.threads, out.gpus));
            level = out.value;
        }
        let (backend, threads, gpus) = first.unwrap_or((crate::Backend::Portable, 1, Vec::new()));
        Ok(Output {
            value: level[0],
            backend,
            threads,
            gpus,
        })
    }
}

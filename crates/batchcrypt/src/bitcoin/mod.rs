//! Bitcoin: blocks and transactions as Bitcoin Core parses them ([`tx`]), the script interpreter
//! ([`script`]) with its signature hashes ([`sighash`]) and signature checks behind an interface
//! ([`checker`]), so that a block's checks are deferred and verified as one batch ([`batch`]), and
//! block and chain validation on top ([`validate`], [`chain`]), consensus-exact: what Core accepts,
//! nothing more or less.

pub mod batch;
pub mod block;
pub mod chain;
pub mod checker;
pub mod script;
pub mod sighash;
pub mod spent;
pub mod store;
pub mod tx;
pub mod txs;
pub mod validate;

pub use tx::{parse_block, parse_tx, Block, Header, OutPoint, SpentOutput, Tx, TxIn, TxOut};

use crate::error::Result;
use crate::sha256::{Digest, Mode};
use crate::{Engine, Output};

impl Block<'_> {
    /// The merkle root the header commits to (internal byte order).
    pub fn header_merkle_root(&self) -> Digest {
        self.header[36..68].try_into().unwrap()
    }

    /// All txids as one variable-length SHA256d batch.
    pub fn txids(&self, engine: &Engine) -> Result<Output<Vec<Digest>>> {
        let mut data = Vec::with_capacity(self.txs.iter().map(|t| t.txid_preimage.len()).sum());
        let mut offsets = Vec::with_capacity(self.txs.len() + 1);
        offsets.push(0u64);
        for t in &self.txs {
            data.extend_from_slice(&t.txid_preimage);
            offsets.push(data.len() as u64);
        }
        engine.sha256().hash_var(&data, &offsets, Mode::Double)
    }

    /// The merkle root computed from the transactions.
    pub fn compute_merkle_root(&self, engine: &Engine) -> Result<Digest> {
        let txids = self.txids(engine)?.value;
        Ok(engine.sha256().merkle_root(&txids)?.value)
    }

    /// The block hash (SHA256d of the header), in internal byte order.
    pub fn hash(&self) -> Digest {
        crate::sha256::digest_double(self.header)
    }
}

/// A hash in the byte order block explorers print (reversed).
pub fn display_hash(d: &Digest) -> String {
    d.iter().rev().map(|b| format!("{b:02x}")).collect()
}

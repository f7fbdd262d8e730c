//! Bitcoin block parsing, as far as batch hashing needs it: the header, each transaction's bytes,
//! and its txid preimage (the serialization without witness data). Truncated or malformed input is
//! an error naming the offset, never a panic.

use crate::error::{Error, Result};
use crate::sha256::{Digest, Mode};
use crate::{Engine, Output};
use std::borrow::Cow;

/// A parsed block borrowing the raw bytes.
#[derive(Debug)]
pub struct Block<'a> {
    pub header: &'a [u8; 80],
    pub txs: Vec<Tx<'a>>,
}

/// One transaction: its full serialization and its txid preimage.
#[derive(Debug)]
pub struct Tx<'a> {
    pub raw: &'a [u8],
    /// `raw` itself for legacy transactions; rebuilt without marker, flag and witnesses for segwit.
    pub txid_preimage: Cow<'a, [u8]>,
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| {
                Error::invalid(format!(
                    "block truncated: {what} needs {n} bytes at offset {} but {} remain",
                    self.pos,
                    self.buf.len() - self.pos
                ))
            })?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.take(1, what)?[0])
    }

    /// Bitcoin's CompactSize integer.
    fn varint(&mut self, what: &str) -> Result<u64> {
        Ok(match self.u8(what)? {
            0xfd => u16::from_le_bytes(self.take(2, what)?.try_into().unwrap()) as u64,
            0xfe => u32::from_le_bytes(self.take(4, what)?.try_into().unwrap()) as u64,
            0xff => u64::from_le_bytes(self.take(8, what)?.try_into().unwrap()),
            b => b as u64,
        })
    }

    /// A count that must fit in the remaining bytes at `min_size` bytes per element.
    fn count(&mut self, what: &str, min_size: usize) -> Result<usize> {
        let at = self.pos;
        let n = self.varint(what)?;
        let remaining = (self.buf.len() - self.pos) as u64;
        if n.saturating_mul(min_size as u64) > remaining {
            return Err(Error::invalid(format!(
                "{what} {n} at offset {at} exceeds the {remaining} bytes left"
            )));
        }
        Ok(n as usize)
    }

    fn var_bytes(&mut self, what: &str) -> Result<&'a [u8]> {
        let n = self.count(what, 1)?;
        self.take(n, what)
    }
}

/// Parses a raw block (network serialization).
pub fn parse_block(raw: &[u8]) -> Result<Block<'_>> {
    let mut r = Reader { buf: raw, pos: 0 };
    let header: &[u8; 80] = r.take(80, "header")?.try_into().unwrap();
    let n = r.count("transaction count", 60)?;
    if n == 0 {
        return Err(Error::invalid("block has no transactions"));
    }
    let mut txs = Vec::with_capacity(n);
    for i in 0..n {
        txs.push(parse_tx(&mut r).map_err(|e| Error::invalid(format!("transaction {i}: {e}")))?);
    }
    if r.pos != raw.len() {
        return Err(Error::invalid(format!(
            "{} trailing bytes after the last transaction",
            raw.len() - r.pos
        )));
    }
    Ok(Block { header, txs })
}

fn parse_tx<'a>(r: &mut Reader<'a>) -> Result<Tx<'a>> {
    let start = r.pos;
    r.take(4, "version")?;
    let mut segwit = false;
    // BIP144: a zero input count followed by flag 1 marks witness serialization.
    if r.buf.get(r.pos) == Some(&0) && r.buf.get(r.pos + 1) == Some(&1) {
        segwit = true;
        r.take(2, "segwit marker")?;
    }
    let body_start = r.pos;
    let n_in = r.count("input count", 41)?;
    for _ in 0..n_in {
        r.take(36, "outpoint")?;
        r.var_bytes("scriptSig")?;
        r.take(4, "sequence")?;
    }
    let n_out = r.count("output count", 9)?;
    for _ in 0..n_out {
        r.take(8, "value")?;
        r.var_bytes("scriptPubKey")?;
    }
    let body_end = r.pos;
    if segwit {
        for _ in 0..n_in {
            let items = r.count("witness item count", 1)?;
            for _ in 0..items {
                r.var_bytes("witness item")?;
            }
        }
    }
    let lock = r.take(4, "locktime")?;
    let raw = &r.buf[start..r.pos];
    let txid_preimage = if segwit {
        let mut v = Vec::with_capacity(body_end - body_start + 8);
        v.extend_from_slice(&r.buf[start..start + 4]);
        v.extend_from_slice(&r.buf[body_start..body_end]);
        v.extend_from_slice(lock);
        Cow::Owned(v)
    } else {
        Cow::Borrowed(raw)
    };
    Ok(Tx { raw, txid_preimage })
}

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

//! Transactions and blocks in Bitcoin's network serialization, parsed as Bitcoin Core parses them:
//! compact sizes must be canonical and at most 0x02000000, the segwit marker and flag (BIP144) are
//! read exactly as Core reads them (an all-empty witness is an error, unknown flags are errors).
//! Every field borrows the raw bytes; truncated or malformed input is an error naming the offset,
//! never a panic.

use crate::error::{Error, Result};
use crate::sha256::Digest;
use std::borrow::Cow;

/// Core's MAX_SIZE: the largest compact size a deserializer accepts.
const MAX_SIZE: u64 = 0x0200_0000;

/// A reference to an output: the txid (internal byte order) and the output's index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OutPoint {
    pub txid: Digest,
    pub vout: u32,
}

impl OutPoint {
    /// The coinbase's outpoint: a zero txid and index 0xffffffff.
    pub fn is_null(&self) -> bool {
        self.txid == [0; 32] && self.vout == u32::MAX
    }
}

/// One input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxIn<'a> {
    pub prevout: OutPoint,
    pub script_sig: &'a [u8],
    pub sequence: u32,
    /// The witness stack (BIP141), empty for inputs without one.
    pub witness: Vec<&'a [u8]>,
}

/// One output of a transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxOut<'a> {
    /// Satoshis. Read as Core reads it (a signed 64-bit integer); range checks come later.
    pub value: i64,
    pub script_pubkey: &'a [u8],
}

/// An output that an input spends, with what the spent-output data says of its creation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpentOutput {
    pub value: i64,
    pub script_pubkey: Vec<u8>,
    /// Height of the block that created it, where the data gives it.
    pub height: Option<u32>,
    /// Whether a coinbase created it, where the data gives it.
    pub coinbase: Option<bool>,
    /// The median time past (BIP113) of the block before the one that created it, where known:
    /// what BIP68's time-based locks count from.
    pub time: Option<u32>,
}

impl SpentOutput {
    pub fn new(value: i64, script_pubkey: Vec<u8>) -> Self {
        SpentOutput {
            value,
            script_pubkey,
            height: None,
            coinbase: None,
            time: None,
        }
    }

    pub fn as_txout(&self) -> TxOut<'_> {
        TxOut {
            value: self.value,
            script_pubkey: &self.script_pubkey,
        }
    }
}

/// A parsed transaction borrowing its serialization.
#[derive(Clone, Debug)]
pub struct Tx<'a> {
    /// The full serialization (with witnesses where present).
    pub raw: &'a [u8],
    pub version: i32,
    pub inputs: Vec<TxIn<'a>>,
    pub outputs: Vec<TxOut<'a>>,
    pub lock_time: u32,
    /// `raw` itself for transactions without witness; rebuilt without marker, flag and witnesses
    /// otherwise. Its SHA256d is the txid.
    pub txid_preimage: Cow<'a, [u8]>,
}

impl Tx<'_> {
    /// Whether the transaction was serialized with witness data.
    pub fn has_witness(&self) -> bool {
        self.inputs.iter().any(|i| !i.witness.is_empty())
    }

    pub fn is_coinbase(&self) -> bool {
        self.inputs.len() == 1 && self.inputs[0].prevout.is_null()
    }

    /// The txid (internal byte order).
    pub fn txid(&self) -> Digest {
        crate::sha256::digest_double(&self.txid_preimage)
    }

    /// The wtxid (BIP141): the hash of the full serialization.
    pub fn wtxid(&self) -> Digest {
        crate::sha256::digest_double(self.raw)
    }

    /// Size without witness data.
    pub fn stripped_size(&self) -> usize {
        self.txid_preimage.len()
    }

    /// BIP141 weight: three times the stripped size plus the full size.
    pub fn weight(&self) -> u64 {
        3 * self.stripped_size() as u64 + self.raw.len() as u64
    }
}

/// A parsed block borrowing the raw bytes.
#[derive(Debug)]
pub struct Block<'a> {
    pub header: &'a [u8; 80],
    pub txs: Vec<Tx<'a>>,
    /// The whole serialization.
    pub raw: &'a [u8],
}

/// The 80-byte header's fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub version: i32,
    pub prev_block: Digest,
    pub merkle_root: Digest,
    pub time: u32,
    pub bits: u32,
    pub nonce: u32,
}

impl Header {
    pub fn parse(h: &[u8; 80]) -> Header {
        let u32_at = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().unwrap());
        Header {
            version: u32_at(0) as i32,
            prev_block: h[4..36].try_into().unwrap(),
            merkle_root: h[36..68].try_into().unwrap(),
            time: u32_at(68),
            bits: u32_at(72),
            nonce: u32_at(76),
        }
    }
}

pub(crate) struct Reader<'a> {
    pub(crate) buf: &'a [u8],
    pub(crate) pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub(crate) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| {
                Error::invalid(format!(
                    "truncated: {what} needs {n} bytes at offset {} but {} remain",
                    self.pos,
                    self.buf.len() - self.pos
                ))
            })?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    pub(crate) fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        Ok(self.take(N, what)?.try_into().unwrap())
    }

    pub(crate) fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.take(1, what)?[0])
    }

    pub(crate) fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    pub(crate) fn i64(&mut self, what: &str) -> Result<i64> {
        Ok(i64::from_le_bytes(self.array(what)?))
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Bitcoin's CompactSize integer, canonical (the shortest form) as Core requires.
    pub(crate) fn compact_size(&mut self, what: &str) -> Result<u64> {
        let at = self.pos;
        let (v, min) = match self.u8(what)? {
            0xfd => (u16::from_le_bytes(self.array(what)?) as u64, 0xfd),
            0xfe => (u32::from_le_bytes(self.array(what)?) as u64, 0x1_0000),
            0xff => (u64::from_le_bytes(self.array(what)?), 0x1_0000_0000),
            b => (b as u64, 0),
        };
        if v < min {
            return Err(Error::invalid(format!(
                "non-canonical compact size for {what} at offset {at}"
            )));
        }
        Ok(v)
    }

    /// A count that must fit in the remaining bytes at `min_size` bytes per element.
    pub(crate) fn count(&mut self, what: &str, min_size: usize) -> Result<usize> {
        let at = self.pos;
        let n = self.compact_size(what)?;
        if n > MAX_SIZE {
            return Err(Error::invalid(format!(
                "{what} {n} at offset {at} is over the limit of {MAX_SIZE}"
            )));
        }
        let remaining = self.remaining() as u64;
        if n.saturating_mul(min_size as u64) > remaining {
            return Err(Error::invalid(format!(
                "truncated: {what} {n} at offset {at} exceeds the {remaining} bytes left"
            )));
        }
        Ok(n as usize)
    }

    pub(crate) fn var_bytes(&mut self, what: &str) -> Result<&'a [u8]> {
        let n = self.count(what, 1)?;
        self.take(n, what)
    }
}

/// Parses a raw block (network serialization); every byte must belong to it.
pub fn parse_block(raw: &[u8]) -> Result<Block<'_>> {
    let mut r = Reader::new(raw);
    let header: &[u8; 80] = r.take(80, "header")?.try_into().unwrap();
    let n = r.count("transaction count", 10)?;
    if n == 0 {
        return Err(Error::invalid("block has no transactions"));
    }
    let mut txs = Vec::with_capacity(n);
    for i in 0..n {
        txs.push(read_tx(&mut r).map_err(|e| Error::invalid(format!("transaction {i}: {e}")))?);
    }
    if r.pos != raw.len() {
        return Err(Error::invalid(format!(
            "{} trailing bytes after the last transaction",
            raw.len() - r.pos
        )));
    }
    Ok(Block { header, txs, raw })
}

/// Parses one transaction; every byte must belong to it.
pub fn parse_tx(raw: &[u8]) -> Result<Tx<'_>> {
    let mut r = Reader::new(raw);
    let tx = read_tx(&mut r)?;
    if r.pos != raw.len() {
        return Err(Error::invalid(format!(
            "{} trailing bytes after the transaction",
            raw.len() - r.pos
        )));
    }
    Ok(tx)
}

fn read_inputs<'a>(r: &mut Reader<'a>, n: usize) -> Result<Vec<TxIn<'a>>> {
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let txid = r.array("outpoint")?;
        let vout = r.u32("outpoint index")?;
        let script_sig = r.var_bytes("scriptSig")?;
        let sequence = r.u32("sequence")?;
        v.push(TxIn {
            prevout: OutPoint { txid, vout },
            script_sig,
            sequence,
            witness: Vec::new(),
        });
    }
    Ok(v)
}

fn read_outputs<'a>(r: &mut Reader<'a>) -> Result<Vec<TxOut<'a>>> {
    let n = r.count("output count", 9)?;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let value = r.i64("value")?;
        let script_pubkey = r.var_bytes("scriptPubKey")?;
        v.push(TxOut {
            value,
            script_pubkey,
        });
    }
    Ok(v)
}

/// Core's UnserializeTransaction, with witnesses allowed.
pub(crate) fn read_tx<'a>(r: &mut Reader<'a>) -> Result<Tx<'a>> {
    let start = r.pos;
    let version = r.u32("version")? as i32;
    let mut body_start = r.pos;
    let n_in = r.count("input count", 41)?;
    let mut inputs = read_inputs(r, n_in)?;
    let mut flags = 0u8;
    let outputs;
    if n_in == 0 {
        // An empty input list, or BIP144's marker: a flag byte follows.
        flags = r.u8("segwit flag")?;
        if flags != 0 {
            body_start = r.pos;
            let n_in = r.count("input count", 41)?;
            inputs = read_inputs(r, n_in)?;
            outputs = read_outputs(r)?;
        } else {
            outputs = Vec::new();
        }
    } else {
        outputs = read_outputs(r)?;
    }
    let body_end = r.pos;
    if flags & 1 != 0 {
        flags ^= 1;
        for input in &mut inputs {
            let items = r.count("witness item count", 1)?;
            input.witness.reserve_exact(items);
            for _ in 0..items {
                input.witness.push(r.var_bytes("witness item")?);
            }
        }
        if inputs.iter().all(|i| i.witness.is_empty()) {
            return Err(Error::invalid(
                "superfluous witness record (all witnesses empty)",
            ));
        }
    }
    if flags != 0 {
        return Err(Error::invalid(
            "unknown transaction optional data (segwit flag)",
        ));
    }
    let lock = r.take(4, "locktime")?;
    let raw = &r.buf[start..r.pos];
    let segwit = body_start != start + 4;
    let txid_preimage = if segwit {
        let mut v = Vec::with_capacity(body_end - body_start + 8);
        v.extend_from_slice(&r.buf[start..start + 4]);
        v.extend_from_slice(&r.buf[body_start..body_end]);
        v.extend_from_slice(lock);
        Cow::Owned(v)
    } else {
        Cow::Borrowed(raw)
    };
    Ok(Tx {
        raw,
        version,
        inputs,
        outputs,
        lock_time: u32::from_le_bytes(lock.try_into().unwrap()),
        txid_preimage,
    })
}

/// The length of a CompactSize integer's encoding.
pub fn compact_size_len(n: u64) -> usize {
    match n {
        0..=0xfc => 1,
        0xfd..=0xffff => 3,
        0x1_0000..=0xffff_ffff => 5,
        _ => 9,
    }
}

/// Appends a CompactSize integer (Core's WriteCompactSize).
pub fn write_compact_size(out: &mut Vec<u8>, n: u64) {
    match n {
        0..=0xfc => out.push(n as u8),
        0xfd..=0xffff => {
            out.push(0xfd);
            out.extend_from_slice(&(n as u16).to_le_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(0xfe);
            out.extend_from_slice(&(n as u32).to_le_bytes());
        }
        _ => {
            out.push(0xff);
            out.extend_from_slice(&n.to_le_bytes());
        }
    }
}

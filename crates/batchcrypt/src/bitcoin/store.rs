//! A Bitcoin Core `blocks/` directory: the blocks in `blk*.dat` and their undo data (the outputs
//! their inputs spend) in `rev*.dat`.
//!
//! Both kinds of file are sequences of records: the 4-byte network magic, a 4-byte little-endian
//! size, then the payload; a rev record's payload (a `CBlockUndo`) is followed by a 32-byte
//! checksum, SHA256d(previous block's hash || payload). Core preallocates files, so zero bytes
//! where a record would start end the file. Since Core 28, `xor.dat` holds an 8-byte key and every
//! byte of blk and rev files is stored XORed with `key[offset % 8]`; no file, or a zero key, means
//! no obfuscation.
//!
//! Core writes a block's undo record to the rev file with the block's blk file number, when it
//! connects the block, so within a file the order is height order while blk files hold blocks in
//! arrival order. Nothing in a rev record names its block: it is found by the checksum, which
//! commits to the previous block's hash ([`BlocksDir::undo_index`],
//! [`BlocksDir::spent_outputs_for`]).

use super::spent::{read_block_undo, within};
use super::tx::{Block, Reader, SpentOutput};
use crate::error::{Error, Result};
use crate::sha256::{digest_double, Digest};
use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Record header: magic and size.
const HEADER: usize = 8;
/// A rev record's checksum after the payload.
const CHECKSUM: usize = 32;

/// The network magic ("message start") that begins every record, by Core's chain name:
/// "main", "test" (testnet3), "testnet4", "signet" (the default signet) and "regtest".
pub fn network_magic(name: &str) -> Option<[u8; 4]> {
    match name {
        "main" | "mainnet" => Some([0xf9, 0xbe, 0xb4, 0xd9]),
        "test" | "testnet" | "testnet3" => Some([0x0b, 0x11, 0x09, 0x07]),
        "testnet4" => Some([0x1c, 0x16, 0x3f, 0x28]),
        "signet" => Some([0x0a, 0x03, 0xcf, 0x40]),
        "regtest" => Some([0xfa, 0xbf, 0xb5, 0xda]),
        _ => None,
    }
}

/// A Bitcoin Core `blocks/` directory, read-only.
#[derive(Clone, Debug)]
pub struct BlocksDir {
    dir: PathBuf,
    magic: [u8; 4],
    xor_key: [u8; 8],
}

/// Where a block's undo payload lies: rev file number, byte offset of the payload (after the
/// record header) and its length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UndoLocation {
    pub file: u32,
    pub offset: u64,
    pub len: u32,
}

/// A block of the directory's best chain ([`BlocksDir::chain`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainBlock {
    /// The block's hash, internal byte order.
    pub hash: Digest,
    /// Counted from the genesis block when the directory holds it; else from the height the
    /// first block's coinbase states (BIP34), `None` where it states none.
    pub height: Option<u32>,
    /// The `blk*.dat` file number, the block's offset in it (after the record header) and its
    /// length.
    pub file: u32,
    pub offset: u64,
    pub len: u32,
}

/// The positions in `chain` (from [`BlocksDir::chain`]) of its blocks from height `from` on, at
/// most `count`. Without `from`, every block but a genesis block (which spends nothing and has
/// no undo record). Heights must be known to name `from`; one past the tip gives none.
pub fn chain_range(
    chain: &[ChainBlock],
    from: Option<u32>,
    count: Option<usize>,
) -> Result<std::ops::Range<usize>> {
    let start = match (from, chain.first()) {
        (_, None) => 0,
        (None, Some(first)) => usize::from(first.height == Some(0)),
        (Some(from), Some(first)) => {
            let base = first.height.ok_or_else(|| {
                Error::invalid(
                    "the directory's chain does not start at the genesis block and its first \
                     block's coinbase states no height (before BIP34), so heights are unknown: \
                     give no start height",
                )
            })?;
            let tip = base as u64 + chain.len() as u64 - 1;
            if from < base || from as u64 > tip + 1 {
                return Err(Error::invalid(format!(
                    "height {from} is outside the directory's chain, heights {base} to {tip}"
                )));
            }
            (from - base) as usize
        }
    };
    Ok(start..start + (chain.len() - start).min(count.unwrap_or(usize::MAX)))
}

/// One record of a rev file, de-obfuscated.
#[derive(Clone, Debug)]
pub struct UndoRecord {
    pub location: UndoLocation,
    /// The serialized `CBlockUndo`.
    pub data: Vec<u8>,
    /// SHA256d(previous block hash || data).
    pub checksum: Digest,
}

impl UndoRecord {
    /// Whether this is the undo record of the block whose parent is `prev_block_hash`.
    pub fn matches(&self, prev_block_hash: &Digest) -> bool {
        checksum(prev_block_hash, &self.data) == self.checksum
    }

    /// The number of `CTxUndo` the payload starts with, if it can be read: a cheap filter
    /// before the checksum.
    fn tx_count(&self) -> Option<u64> {
        Reader::new(&self.data).compact_size("CTxUndo count").ok()
    }

    pub fn parse(&self) -> Result<Vec<Vec<SpentOutput>>> {
        parse_payload(&self.data, &self.location)
    }
}

/// Block hash → its undo record, for the blocks of the directory whose undo was found.
#[derive(Clone, Debug, Default)]
pub struct UndoIndex {
    map: HashMap<Digest, UndoLocation>,
}

impl UndoIndex {
    /// The undo location of the block with this hash (internal byte order).
    pub fn get(&self, block_hash: &Digest) -> Option<&UndoLocation> {
        self.map.get(block_hash)
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

impl BlocksDir {
    /// Opens the directory for the network with this magic (see [`network_magic`]) and reads its
    /// `xor.dat` key, if any.
    pub fn open(path: impl AsRef<Path>, magic: [u8; 4]) -> Result<BlocksDir> {
        let dir = path.as_ref().to_path_buf();
        if !dir.is_dir() {
            return Err(Error::invalid(format!(
                "{} is not a directory",
                dir.display()
            )));
        }
        let xor_path = dir.join("xor.dat");
        let xor_key = match std::fs::read(&xor_path) {
            Ok(key) => <[u8; 8]>::try_from(key.as_slice()).map_err(|_| {
                Error::invalid(format!(
                    "{} holds {} bytes; the key is 8",
                    xor_path.display(),
                    key.len()
                ))
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => [0; 8],
            Err(e) => return Err(io_error(&xor_path, e)),
        };
        Ok(BlocksDir {
            dir,
            magic,
            xor_key,
        })
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The obfuscation key (all zero: none).
    pub fn xor_key(&self) -> [u8; 8] {
        self.xor_key
    }

    /// The numbers of the `blk*.dat` files present, ascending (a pruned node lacks the first).
    pub fn blk_files(&self) -> Result<Vec<u32>> {
        self.file_numbers("blk")
    }

    /// The numbers of the `rev*.dat` files present, ascending.
    pub fn rev_files(&self) -> Result<Vec<u32>> {
        self.file_numbers("rev")
    }

    /// Every block in file order: `(file number, offset of the block in the file, raw block)`,
    /// the offset being where the block itself starts (after the record header), as in Core's
    /// block index. Iteration stops after the first error.
    pub fn blocks(&self) -> Blocks<'_> {
        Blocks {
            dir: self,
            files: None,
            next_file: 0,
            current: None,
            failed: false,
        }
    }

    /// All blocks, as [`BlocksDir::blocks`] yields them.
    pub fn read_blocks(&self) -> Result<Vec<(u32, u64, Vec<u8>)>> {
        self.blocks().collect()
    }

    /// The best chain of the blocks in the directory, in order: from the block whose parent is
    /// absent (the genesis block, or the first block a pruned node kept) along parent links,
    /// taking the longest branch at forks. Reads each blk file once and keeps only the headers;
    /// [`BlocksDir::read_block`] reads a block. Empty when the directory holds no block.
    pub fn chain(&self) -> Result<Vec<ChainBlock>> {
        let mut blocks = Vec::new();
        for file in self.blk_files()? {
            blocks.extend(self.block_summaries(file)?);
        }
        let order = best_chain(&blocks);
        let base = match order.first().map(|&k| &blocks[k]) {
            None => return Ok(Vec::new()),
            Some(b) if b.prev == [0; 32] => Some(0),
            Some(b) => {
                let first = ChainBlock {
                    hash: b.hash,
                    height: None,
                    file: b.file,
                    offset: b.offset,
                    len: b.len,
                };
                let raw = self.read_block(&first)?;
                super::block::bip34_height(&super::parse_block(&raw)?)
            }
        };
        Ok(order
            .iter()
            .enumerate()
            .map(|(i, &k)| {
                let b = &blocks[k];
                ChainBlock {
                    hash: b.hash,
                    height: base.and_then(|h: u32| h.checked_add(i as u32)),
                    file: b.file,
                    offset: b.offset,
                    len: b.len,
                }
            })
            .collect())
    }

    /// The raw block at `at` (from [`BlocksDir::chain`]).
    pub fn read_block(&self, at: &ChainBlock) -> Result<Vec<u8>> {
        self.read_at("blk", at.file, at.offset, at.len)
    }

    /// The records of `rev{file}.dat`, in file order.
    pub fn undo_records(&self, file: u32) -> Result<Vec<UndoRecord>> {
        let name = file_name("rev", file);
        let raw = self.read_raw(&name)?;
        let mut records = Vec::new();
        let mut pos = 0;
        while let Some(rec) = self.next_record(&name, &raw, pos, CHECKSUM)? {
            pos = rec.end;
            records.push(UndoRecord {
                location: UndoLocation {
                    file,
                    offset: rec.offset as u64,
                    len: rec.payload.len() as u32,
                },
                data: rec.payload,
                // next_record read exactly CHECKSUM trailer bytes.
                checksum: rec.trailer.try_into().unwrap_or([0; 32]),
            });
        }
        Ok(records)
    }

    /// Finds the undo record of every block in the blk files, reading each blk and rev file
    /// once. A block's record is looked for in the rev file with its blk file's number, where
    /// Core writes it; blocks without one (the genesis block, blocks not connected, pruned
    /// files) are not in the index.
    ///
    /// Matching costs one checksum per record when records follow the chain (the usual case: the
    /// next record is the child of the last one matched); otherwise the unmatched blocks with the
    /// record's transaction count are tried in file order.
    pub fn undo_index(&self) -> Result<UndoIndex> {
        let mut index = UndoIndex::default();
        let revs = self.rev_files()?;
        for file in self.blk_files()? {
            if revs.binary_search(&file).is_err() {
                continue;
            }
            let blocks = self.block_summaries(file)?;
            let records = self.undo_records(file)?;
            match_records(&blocks, &records, &mut index.map);
        }
        Ok(index)
    }

    /// Reads and parses the undo payload at `location` (from [`UndoIndex::get`]).
    pub fn read_undo(&self, location: &UndoLocation) -> Result<Vec<Vec<SpentOutput>>> {
        parse_payload(&self.read_undo_payload(location)?, location)
    }

    /// The undo payload at `location` unparsed: a `CBlockUndo`, as
    /// [`parse_core_block_undo`](super::spent::parse_core_block_undo) reads it.
    pub fn read_undo_payload(&self, location: &UndoLocation) -> Result<Vec<u8>> {
        self.read_at("rev", location.file, location.offset, location.len)
    }

    /// `len` bytes at `offset` of file `prefix{file}.dat`, de-obfuscated.
    fn read_at(&self, prefix: &str, file: u32, offset: u64, len: u32) -> Result<Vec<u8>> {
        let path = self.dir.join(file_name(prefix, file));
        let mut bytes = vec![0u8; len as usize];
        let mut f = File::open(&path).map_err(|e| io_error(&path, e))?;
        f.seek(SeekFrom::Start(offset))
            .and_then(|_| f.read_exact(&mut bytes))
            .map_err(|e| io_error(&path, e))?;
        self.unxor(&mut bytes, offset);
        Ok(bytes)
    }

    /// The undo data of one block (one `Vec` per transaction after the coinbase), found by
    /// scanning the rev files in order until a record's checksum matches the block's parent;
    /// `None` if no record does. For many blocks, [`BlocksDir::undo_index`] reads less.
    pub fn spent_outputs_for(&self, block: &Block<'_>) -> Result<Option<Vec<Vec<SpentOutput>>>> {
        let prev = prev_hash(block.header);
        let txs = block.txs.len().saturating_sub(1) as u64;
        for file in self.rev_files()? {
            for rec in self.undo_records(file)? {
                if rec.tx_count() == Some(txs) && rec.matches(&prev) {
                    return rec.parse().map(Some);
                }
            }
        }
        Ok(None)
    }

    fn file_numbers(&self, prefix: &str) -> Result<Vec<u32>> {
        let entries = std::fs::read_dir(&self.dir).map_err(|e| io_error(&self.dir, e))?;
        let mut numbers = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io_error(&self.dir, e))?;
            let name = entry.file_name();
            let number = name
                .to_str()
                .and_then(|n| n.strip_prefix(prefix))
                .and_then(|n| n.strip_suffix(".dat"))
                .filter(|d| d.len() >= 5 && d.bytes().all(|c| c.is_ascii_digit()))
                .and_then(|d| d.parse::<u32>().ok());
            numbers.extend(number);
        }
        numbers.sort_unstable();
        Ok(numbers)
    }

    /// A file's bytes as stored (still obfuscated).
    fn read_raw(&self, name: &str) -> Result<Vec<u8>> {
        let path = self.dir.join(name);
        std::fs::read(&path).map_err(|e| io_error(&path, e))
    }

    /// Undoes the obfuscation of `bytes`, which start at `offset` in their file.
    fn unxor(&self, bytes: &mut [u8], offset: u64) {
        if self.xor_key == [0; 8] {
            return;
        }
        for (i, b) in bytes.iter_mut().enumerate() {
            *b ^= self.xor_key[((offset + i as u64) % 8) as usize];
        }
    }

    fn unxored(&self, raw: &[u8], offset: usize) -> Vec<u8> {
        let mut v = raw.to_vec();
        self.unxor(&mut v, offset as u64);
        v
    }

    /// The record at `pos` of a file's raw bytes, with `trailer` bytes after its payload; `None`
    /// at the end of the file or of its data (zero bytes where a magic would be).
    fn next_record(
        &self,
        name: &str,
        raw: &[u8],
        pos: usize,
        trailer: usize,
    ) -> Result<Option<FileRecord>> {
        let rest = &raw[pos.min(raw.len())..];
        let magic_raw = &rest[..rest.len().min(4)];
        let magic = self.unxored(magic_raw, pos);
        // Preallocated space is zero on disk; also accept zeros that were obfuscated with the
        // rest of the file. No network's magic is zero.
        if magic_raw.iter().all(|&b| b == 0) || magic.iter().all(|&b| b == 0) {
            return Ok(None);
        }
        if rest.len() < HEADER {
            return Err(Error::invalid(format!(
                "{name}: truncated record header at offset {pos} ({} bytes left)",
                rest.len()
            )));
        }
        if magic != self.magic {
            return Err(Error::invalid(format!(
                "{name}: wrong magic {} at offset {pos} (expected {})",
                hex(&magic),
                hex(&self.magic)
            )));
        }
        let size_bytes = self.unxored(&rest[4..HEADER], pos + 4);
        let size = u32::from_le_bytes([size_bytes[0], size_bytes[1], size_bytes[2], size_bytes[3]]);
        let needed = size as usize + trailer;
        if rest.len() - HEADER < needed {
            return Err(Error::invalid(format!(
                "{name}: truncated record at offset {pos}: it needs {needed} bytes after its \
                 header but {} remain",
                rest.len() - HEADER
            )));
        }
        let offset = pos + HEADER;
        let end = offset + needed;
        Ok(Some(FileRecord {
            offset,
            payload: self.unxored(&raw[offset..offset + size as usize], offset),
            trailer: self.unxored(&raw[offset + size as usize..end], offset + size as usize),
            end,
        }))
    }

    /// Hash, parent and transaction count of each block of `blk{file}.dat`, from the header and
    /// the count after it: all that matching undo records needs.
    fn block_summaries(&self, file: u32) -> Result<Vec<BlockSummary>> {
        let name = file_name("blk", file);
        let raw = self.read_raw(&name)?;
        let mut out = Vec::new();
        let mut pos = 0;
        while let Some(rec) = self.next_record(&name, &raw, pos, 0)? {
            pos = rec.end;
            let context = format!("{name}: block at offset {}", rec.offset);
            out.push(summarize_block(&rec.payload, file, rec.offset).map_err(within(context))?);
        }
        Ok(out)
    }
}

/// Iterator over the blocks of a [`BlocksDir`]: see [`BlocksDir::blocks`].
pub struct Blocks<'a> {
    dir: &'a BlocksDir,
    /// The blk file numbers, listed on the first call to `next`.
    files: Option<Vec<u32>>,
    next_file: usize,
    /// The file being read: its number, name, raw bytes and the position of the next record.
    current: Option<(u32, String, Vec<u8>, usize)>,
    failed: bool,
}

impl Iterator for Blocks<'_> {
    type Item = Result<(u32, u64, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let item = self.advance().transpose();
        self.failed = matches!(item, Some(Err(_)));
        item
    }
}

impl Blocks<'_> {
    fn advance(&mut self) -> Result<Option<(u32, u64, Vec<u8>)>> {
        if self.files.is_none() {
            self.files = Some(self.dir.blk_files()?);
        }
        let files = self.files.as_deref().unwrap_or_default();
        loop {
            if let Some((file, name, raw, pos)) = &mut self.current {
                if let Some(rec) = self.dir.next_record(name, raw, *pos, 0)? {
                    *pos = rec.end;
                    return Ok(Some((*file, rec.offset as u64, rec.payload)));
                }
                self.current = None;
            }
            let Some(&file) = files.get(self.next_file) else {
                return Ok(None);
            };
            self.next_file += 1;
            let name = file_name("blk", file);
            let raw = self.dir.read_raw(&name)?;
            self.current = Some((file, name, raw, 0));
        }
    }
}

/// What [`BlocksDir::next_record`] found.
struct FileRecord {
    /// Where the payload starts in the file.
    offset: usize,
    payload: Vec<u8>,
    trailer: Vec<u8>,
    /// Where the next record starts.
    end: usize,
}

struct BlockSummary {
    hash: Digest,
    prev: Digest,
    /// Transactions after the coinbase: the undo record's CTxUndo count.
    txs: u64,
    /// Where the block lies: blk file number, offset (after the record header), length.
    file: u32,
    offset: u64,
    len: u32,
}

/// Records each record's block into `index`: first the child of the block matched last, then
/// the unmatched blocks with the same transaction count.
fn match_records(
    blocks: &[BlockSummary],
    records: &[UndoRecord],
    index: &mut HashMap<Digest, UndoLocation>,
) {
    let mut children: HashMap<Digest, Vec<usize>> = HashMap::new();
    let mut by_tx_count: HashMap<u64, Vec<usize>> = HashMap::new();
    for (i, b) in blocks.iter().enumerate() {
        children.entry(b.prev).or_default().push(i);
        by_tx_count.entry(b.txs).or_default().push(i);
    }
    let mut matched = vec![false; blocks.len()];
    // Per transaction count, how many blocks at the front of its list are known to be matched.
    let mut skip: HashMap<u64, usize> = HashMap::new();
    let mut last: Option<usize> = None;
    for rec in records {
        let Some(txs) = rec.tx_count() else { continue };
        let fits =
            |i: &usize| !matched[*i] && blocks[*i].txs == txs && rec.matches(&blocks[*i].prev);
        let next_in_chain = last
            .and_then(|l| children.get(&blocks[l].hash))
            .and_then(|c| c.iter().copied().find(|i| fits(i)));
        let found = next_in_chain.or_else(|| {
            let list = by_tx_count.get(&txs)?;
            let start = skip.entry(txs).or_default();
            while *start < list.len() && matched[list[*start]] {
                *start += 1;
            }
            list[*start..].iter().copied().find(|i| fits(i))
        });
        if let Some(i) = found {
            matched[i] = true;
            index.entry(blocks[i].hash).or_insert(rec.location);
            last = Some(i);
        }
    }
}

fn summarize_block(raw: &[u8], file: u32, offset: usize) -> Result<BlockSummary> {
    let mut r = Reader::new(raw);
    let header: [u8; 80] = r.array("block header")?;
    let txs = r.compact_size("transaction count")?;
    Ok(BlockSummary {
        hash: digest_double(&header),
        prev: prev_hash(&header),
        txs: txs.saturating_sub(1),
        file,
        offset: offset as u64,
        len: raw.len() as u32,
    })
}

/// `blocks` in chain order: from the block whose parent is absent (the genesis block, or the
/// first block a pruned node kept) along parent links, the longest branch at forks (the most
/// blocks, not the most work: the directory holds no stale branch longer than the best one
/// in practice, and work would need every header's target checked).
fn best_chain(blocks: &[BlockSummary]) -> Vec<usize> {
    let by_hash: HashMap<Digest, usize> = blocks
        .iter()
        .enumerate()
        .map(|(k, b)| (b.hash, k))
        .collect();
    let mut children: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut roots = Vec::new();
    for (k, b) in blocks.iter().enumerate() {
        match by_hash.get(&b.prev) {
            Some(&p) if p != k => children.entry(p).or_default().push(k),
            _ => roots.push(k),
        }
    }
    // Depth of the longest branch below each block, children before parents (no recursion: a
    // chain is a million blocks deep).
    let mut order = Vec::with_capacity(blocks.len());
    let mut stack = roots.clone();
    while let Some(k) = stack.pop() {
        order.push(k);
        stack.extend(children.get(&k).into_iter().flatten());
    }
    let mut depth = vec![0usize; blocks.len()];
    for &k in order.iter().rev() {
        depth[k] = 1 + children
            .get(&k)
            .map_or(0, |c| c.iter().map(|&c| depth[c]).max().unwrap_or(0));
    }
    let Some(&root) = roots.iter().max_by_key(|&&r| depth[r]) else {
        return Vec::new();
    };
    let mut chain = vec![root];
    while let Some(c) = children.get(chain.last().expect("not empty")) {
        chain.push(*c.iter().max_by_key(|&&c| depth[c]).expect("a child"));
    }
    chain
}

fn parse_payload(payload: &[u8], at: &UndoLocation) -> Result<Vec<Vec<SpentOutput>>> {
    let context = format!(
        "{} undo record at offset {}",
        file_name("rev", at.file),
        at.offset
    );
    let mut r = Reader::new(payload);
    let undo = read_block_undo(&mut r).map_err(within(&context))?;
    if r.remaining() != 0 {
        return Err(Error::invalid(format!(
            "{context}: {} bytes after the block undo data",
            r.remaining()
        )));
    }
    Ok(undo)
}

/// Core's undo checksum: SHA256d of the previous block's hash and the payload.
fn checksum(prev_block_hash: &Digest, payload: &[u8]) -> Digest {
    let mut buf = Vec::with_capacity(32 + payload.len());
    buf.extend_from_slice(prev_block_hash);
    buf.extend_from_slice(payload);
    digest_double(&buf)
}

fn prev_hash(header: &[u8; 80]) -> Digest {
    let mut d = [0u8; 32];
    d.copy_from_slice(&header[4..36]);
    d
}

fn file_name(prefix: &str, n: u32) -> String {
    format!("{prefix}{n:05}.dat")
}

fn io_error(path: &Path, e: std::io::Error) -> Error {
    Error::Io(std::io::Error::new(
        e.kind(),
        format!("{}: {e}", path.display()),
    ))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

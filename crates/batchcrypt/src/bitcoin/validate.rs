//! Consensus checks of transactions and blocks that need no signature: Bitcoin Core's
//! CheckTransaction, CheckBlock and the input checks of ConnectBlock (amounts, maturity, lock
//! times, sigop cost), each failure named with Core's reject reason.

use super::script::{sigops, Flags};
use super::{SpentOutput, Tx};
use std::collections::HashSet;

pub const COIN: i64 = 100_000_000;
pub const MAX_MONEY: i64 = 21_000_000 * COIN;
pub const MAX_BLOCK_WEIGHT: u64 = 4_000_000;
pub const MAX_BLOCK_SIGOPS_COST: u64 = 80_000;
pub const WITNESS_SCALE_FACTOR: u64 = 4;
pub const COINBASE_MATURITY: u32 = 100;

pub fn money_range(v: i64) -> bool {
    (0..=MAX_MONEY).contains(&v)
}

/// Core's CheckTransaction: the checks that need no context. The error is Core's reject reason.
pub fn check_transaction(tx: &Tx) -> Result<(), &'static str> {
    if tx.inputs.is_empty() {
        return Err("bad-txns-vin-empty");
    }
    if tx.outputs.is_empty() {
        return Err("bad-txns-vout-empty");
    }
    if tx.stripped_size() as u64 * WITNESS_SCALE_FACTOR > MAX_BLOCK_WEIGHT {
        return Err("bad-txns-oversize");
    }
    let mut total: i64 = 0;
    for out in &tx.outputs {
        if out.value < 0 {
            return Err("bad-txns-vout-negative");
        }
        if out.value > MAX_MONEY {
            return Err("bad-txns-vout-toolarge");
        }
        total += out.value;
        if !money_range(total) {
            return Err("bad-txns-txouttotal-toolarge");
        }
    }
    // Most transactions have a few inputs: compared pairwise, without a set to fill.
    let duplicate = if tx.inputs.len() <= 8 {
        let ins = &tx.inputs;
        (1..ins.len()).any(|j| ins[..j].iter().any(|i| i.prevout == ins[j].prevout))
    } else {
        let mut seen = HashSet::with_capacity(tx.inputs.len());
        tx.inputs.iter().any(|i| !seen.insert(i.prevout))
    };
    if duplicate {
        return Err("bad-txns-inputs-duplicate");
    }
    if tx.is_coinbase() {
        if !(2..=100).contains(&tx.inputs[0].script_sig.len()) {
            return Err("bad-cb-length");
        }
    } else if tx.inputs.iter().any(|i| i.prevout.is_null()) {
        return Err("bad-txns-prevout-null");
    }
    Ok(())
}

/// Legacy sigops of a transaction (Core's GetLegacySigOpCount): every scriptSig and
/// scriptPubKey, CHECKMULTISIG counted as 20.
pub fn legacy_sigops(tx: &Tx) -> u64 {
    let ins: u64 = tx
        .inputs
        .iter()
        .map(|i| sigops::count(i.script_sig, false) as u64)
        .sum();
    let outs: u64 = tx
        .outputs
        .iter()
        .map(|o| sigops::count(o.script_pubkey, false) as u64)
        .sum();
    ins + outs
}

/// Core's GetTransactionSigOpCost: legacy sigops times 4, P2SH sigops times 4 (with P2SH on),
/// witness sigops once.
pub fn sigop_cost(tx: &Tx, spent: &[SpentOutput], flags: Flags) -> u64 {
    let mut cost = legacy_sigops(tx) * WITNESS_SCALE_FACTOR;
    if tx.is_coinbase() {
        return cost;
    }
    for (input, prev) in tx.inputs.iter().zip(spent) {
        if flags.has(Flags::P2SH) && super::script::is_p2sh(&prev.script_pubkey) {
            cost += sigops::p2sh_count(&prev.script_pubkey, input.script_sig) as u64
                * WITNESS_SCALE_FACTOR;
        }
        cost += sigops::witness_count(input.script_sig, &prev.script_pubkey, &input.witness, flags)
            as u64;
    }
    cost
}

/// The chains whose rules we know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Network {
    Main,
    Test,
    Regtest,
}

impl Network {
    /// The name [`FromStr`](std::str::FromStr) reads and Core's chain name: "main", "test",
    /// "regtest".
    pub fn name(self) -> &'static str {
        match self {
            Network::Main => "main",
            Network::Test => "test",
            Network::Regtest => "regtest",
        }
    }
}

impl std::str::FromStr for Network {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "main" | "mainnet" => Ok(Network::Main),
            "test" | "testnet" | "testnet3" => Ok(Network::Test),
            "regtest" => Ok(Network::Regtest),
            _ => Err(format!("unknown network {s:?}: use main, test or regtest")),
        }
    }
}

/// Consensus parameters of a network (Core's chainparams), as far as validation needs them.
pub struct Params {
    pub bip34_height: u32,
    pub bip65_height: u32,
    pub bip66_height: u32,
    pub csv_height: u32,
    pub segwit_height: u32,
    pub subsidy_halving_interval: u32,
    /// The proof-of-work limit as a big-endian 256-bit number.
    pub pow_limit: [u8; 32],
    /// Blocks validated with other script flags than the rest (display-order hash, flags).
    pub script_flag_exceptions: &'static [(&'static str, Flags)],
}

const fn pow_limit(first_bytes: [u8; 4], leading_zero_bytes: usize) -> [u8; 32] {
    let mut l = [0xffu8; 32];
    let mut i = 0;
    while i < leading_zero_bytes {
        l[i] = 0;
        i += 1;
    }
    let _ = first_bytes;
    l
}

impl Network {
    pub fn params(self) -> Params {
        match self {
            Network::Main => Params {
                bip34_height: 227_931,
                bip65_height: 388_381,
                bip66_height: 363_725,
                csv_height: 419_328,
                segwit_height: 481_824,
                subsidy_halving_interval: 210_000,
                pow_limit: pow_limit([0; 4], 4),
                script_flag_exceptions: &[
                    (
                        "00000000000002dc756eebf4f49723ed8d30cc28a5f108eb94b1ba88ac4f9c22",
                        Flags::NONE,
                    ),
                    (
                        "0000000000000000000f14c35b2d841e986ab5441de8c585d5ffe55ea1e395ad",
                        Flags(Flags::P2SH.0 | Flags::WITNESS.0),
                    ),
                ],
            },
            Network::Test => Params {
                bip34_height: 21_111,
                bip65_height: 581_885,
                bip66_height: 330_776,
                csv_height: 770_112,
                segwit_height: 834_624,
                subsidy_halving_interval: 210_000,
                pow_limit: pow_limit([0; 4], 4),
                script_flag_exceptions: &[(
                    "00000000dd30457c001f4095d208cc1296b0eed002427aa599874af7a432b105",
                    Flags::NONE,
                )],
            },
            Network::Regtest => Params {
                bip34_height: 1,
                bip65_height: 1,
                bip66_height: 1,
                csv_height: 1,
                segwit_height: 0,
                subsidy_halving_interval: 150,
                pow_limit: {
                    let mut l = [0xffu8; 32];
                    l[0] = 0x7f;
                    l
                },
                script_flag_exceptions: &[],
            },
        }
    }
}

impl Params {
    /// Core's GetBlockScriptFlags: P2SH, WITNESS and TAPROOT everywhere (but the exception
    /// blocks), DERSIG, CLTV, CSV and NULLDUMMY from their activation heights.
    pub fn script_flags(&self, height: u32, block_hash_display: &str) -> Flags {
        let mut f = Flags::P2SH | Flags::WITNESS | Flags::TAPROOT;
        if let Some((_, ex)) = self
            .script_flag_exceptions
            .iter()
            .find(|(h, _)| *h == block_hash_display)
        {
            f = *ex;
        }
        if height >= self.bip66_height {
            f = f | Flags::DERSIG;
        }
        if height >= self.bip65_height {
            f = f | Flags::CHECKLOCKTIMEVERIFY;
        }
        if height >= self.csv_height {
            f = f | Flags::CHECKSEQUENCEVERIFY;
        }
        if height >= self.segwit_height {
            f = f | Flags::NULLDUMMY;
        }
        f
    }

    /// The coinbase reward before fees (50 BTC halved every interval).
    pub fn subsidy(&self, height: u32) -> i64 {
        let halvings = height / self.subsidy_halving_interval;
        if halvings >= 64 {
            0
        } else {
            (50 * COIN) >> halvings
        }
    }
}

/// Core's CheckProofOfWork: the compact target is positive, not over the limit, and the block
/// hash (internal byte order) is at most the target.
pub fn check_proof_of_work(hash: &[u8; 32], bits: u32, limit: &[u8; 32]) -> bool {
    let exponent = (bits >> 24) as usize;
    let mantissa = bits & 0x007f_ffff;
    let negative = mantissa != 0 && bits & 0x0080_0000 != 0;
    if negative || mantissa == 0 {
        return false;
    }
    // target = mantissa * 256^(exponent-3), as a big-endian 32-byte number (overflow fails).
    let mut target = [0u8; 32];
    let m = mantissa.to_be_bytes(); // [0, b1, b2, b3]
    for (k, &b) in m[1..].iter().enumerate() {
        // Byte k of the mantissa (most significant first) has weight 256^(exponent-1-k).
        let weight = exponent as isize - 1 - k as isize;
        if b == 0 {
            continue;
        }
        if weight < 0 {
            continue;
        }
        if weight >= 32 {
            return false;
        }
        target[31 - weight as usize] = b;
    }
    if target == [0u8; 32] || target > *limit {
        return false;
    }
    let mut h = *hash;
    h.reverse();
    h <= target
}

/// Core's IsFinalTx.
pub fn is_final(tx: &Tx, height: u32, cutoff_time: i64) -> bool {
    let lock = tx.lock_time as i64;
    if lock == 0 {
        return true;
    }
    let limit = if lock < 500_000_000 {
        height as i64
    } else {
        cutoff_time
    };
    lock < limit || tx.inputs.iter().all(|i| i.sequence == u32::MAX)
}

/// A block's verdict: Core's reject reason, and where it applies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockError {
    pub reason: String,
    pub tx: Option<usize>,
    pub input: Option<usize>,
}

impl BlockError {
    pub(crate) fn block(reason: impl Into<String>) -> Self {
        BlockError {
            reason: reason.into(),
            tx: None,
            input: None,
        }
    }
    pub(crate) fn tx_reason(t: usize, reason: impl Into<String>) -> Self {
        Self::tx(t, reason)
    }
    fn tx(t: usize, reason: impl Into<String>) -> Self {
        BlockError {
            reason: reason.into(),
            tx: Some(t),
            input: None,
        }
    }
}

impl std::fmt::Display for BlockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)?;
        if let Some(t) = self.tx {
            write!(f, " (transaction {t}")?;
            if let Some(i) = self.input {
                write!(f, ", input {i}")?;
            }
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// The merkle root of `leaves` and whether a level had two equal adjacent hashes (CVE-2012-2459:
/// a block whose last transactions repeat has the same root as one without the repeat).
pub fn merkle_root(leaves: &[[u8; 32]]) -> ([u8; 32], bool) {
    let mut level = leaves.to_vec();
    let mut mutated = false;
    if level.is_empty() {
        return ([0; 32], false);
    }
    let mut pair = [0u8; 64];
    while level.len() > 1 {
        mutated |= level.chunks_exact(2).any(|p| p[0] == p[1]);
        if level.len() % 2 == 1 {
            level.push(*level.last().unwrap());
        }
        level = level
            .chunks_exact(2)
            .map(|p| {
                pair[..32].copy_from_slice(&p[0]);
                pair[32..].copy_from_slice(&p[1]);
                crate::sha256::digest_double(&pair)
            })
            .collect();
    }
    (level[0], mutated)
}

/// The witness commitment output of the coinbase (the last one that matches), if any.
fn witness_commitment_index(coinbase: &Tx) -> Option<usize> {
    coinbase.outputs.iter().rposition(|o| {
        let s = o.script_pubkey;
        s.len() >= 38 && s[..6] == [0x6a, 0x24, 0xaa, 0x21, 0xa9, 0xed]
    })
}

/// Core's CheckBlock (after the header's proof of work): merkle root and its mutation, size,
/// coinbase placement, every transaction's CheckTransaction, legacy sigops.
pub fn check_block(block: &super::Block, txids: &[[u8; 32]]) -> Result<(), BlockError> {
    let (root, mutated) = merkle_root(txids);
    if root != block.header_merkle_root() {
        return Err(BlockError::block("bad-txnmrklroot"));
    }
    if mutated {
        return Err(BlockError::block("bad-txns-duplicate"));
    }
    let stripped: u64 = 80
        + super::tx::compact_size_len(block.txs.len() as u64) as u64
        + block
            .txs
            .iter()
            .map(|t| t.stripped_size() as u64)
            .sum::<u64>();
    if block.txs.is_empty()
        || block.txs.len() as u64 * WITNESS_SCALE_FACTOR > MAX_BLOCK_WEIGHT
        || stripped * WITNESS_SCALE_FACTOR > MAX_BLOCK_WEIGHT
    {
        return Err(BlockError::block("bad-blk-length"));
    }
    if !block.txs[0].is_coinbase() {
        return Err(BlockError::tx(0, "bad-cb-missing"));
    }
    if let Some(t) = block.txs.iter().skip(1).position(|t| t.is_coinbase()) {
        return Err(BlockError::tx(t + 1, "bad-cb-multiple"));
    }
    for (t, tx) in block.txs.iter().enumerate() {
        check_transaction(tx).map_err(|r| BlockError::tx(t, r))?;
    }
    let sigops: u64 = block.txs.iter().map(legacy_sigops).sum();
    if sigops * WITNESS_SCALE_FACTOR > MAX_BLOCK_SIGOPS_COST {
        return Err(BlockError::block("bad-blk-sigops"));
    }
    Ok(())
}

/// Block weight (BIP141): every transaction's weight plus the header and count, times four.
pub fn block_weight(block: &super::Block) -> u64 {
    let count = super::tx::compact_size_len(block.txs.len() as u64) as u64;
    (80 + count) * WITNESS_SCALE_FACTOR + block.txs.iter().map(|t| t.weight()).sum::<u64>()
}

/// Core's ContextualCheckBlock: lock-time finality, the BIP34 height in the coinbase, the
/// witness commitment, weight. `cutoff_time`: the previous block's median time past once CSV is
/// active (BIP113), else the block's own time; None where it is unknown, which leaves
/// time-locked transactions unchecked (reported by the caller).
pub fn contextual_check_block(
    block: &super::Block,
    wtxids: &dyn Fn() -> Vec<[u8; 32]>,
    params: &Params,
    height: u32,
    cutoff_time: Option<i64>,
) -> Result<(), BlockError> {
    for (t, tx) in block.txs.iter().enumerate() {
        let time_locked = tx.lock_time >= 500_000_000;
        let cutoff = match (time_locked, cutoff_time) {
            (true, None) => continue,
            (_, c) => c.unwrap_or(0),
        };
        if !is_final(tx, height, cutoff) {
            return Err(BlockError::tx(t, "bad-txns-nonfinal"));
        }
    }
    if height >= params.bip34_height {
        let mut expect = Vec::new();
        match height {
            0 => expect.push(0),
            1..=16 => expect.push(0x50 + height as u8),
            _ => super::script::push_data(&mut expect, &super::script::num::encode(height as i64)),
        }
        if !block.txs[0].inputs[0].script_sig.starts_with(&expect) {
            return Err(BlockError::tx(0, "bad-cb-height"));
        }
    }
    let commitment = if height >= params.segwit_height {
        witness_commitment_index(&block.txs[0])
    } else {
        None
    };
    match commitment {
        Some(pos) => {
            let w = &block.txs[0].inputs[0].witness;
            if w.len() != 1 || w[0].len() != 32 {
                return Err(BlockError::tx(0, "bad-witness-nonce-size"));
            }
            let mut leaves = wtxids();
            leaves[0] = [0; 32];
            let (root, _) = merkle_root(&leaves);
            let mut pre = root.to_vec();
            pre.extend_from_slice(w[0]);
            let c = crate::sha256::digest_double(&pre);
            if block.txs[0].outputs[pos].script_pubkey[6..38] != c {
                return Err(BlockError::block("bad-witness-merkle-match"));
            }
        }
        None => {
            if let Some(t) = block.txs.iter().position(|t| t.has_witness()) {
                return Err(BlockError::tx(t, "unexpected-witness"));
            }
        }
    }
    if block_weight(block) > MAX_BLOCK_WEIGHT {
        return Err(BlockError::block("bad-blk-weight"));
    }
    Ok(())
}

/// What BIP68 needs to know of time: the median time past of the block before this one, and of
/// the block before each spent coin's block (by the coin's height). None where unknown.
pub trait MedianTimes {
    fn prev_mtp(&self) -> Option<i64>;
    /// Median time past of the block at `height`.
    fn mtp_at(&self, height: u32) -> Option<i64>;
}

/// A lone block whose caller may know the median time past of the block before it (BIP113's
/// cutoff and BIP68's "now"); a spent coin's own time comes with it ([`SpentOutput::time`]).
/// `PrevMedianTime(None)`, no chain history: BIP113, BIP68 time locks and the header's
/// time-too-old stay unchecked.
pub struct PrevMedianTime(pub Option<i64>);

impl MedianTimes for PrevMedianTime {
    fn prev_mtp(&self) -> Option<i64> {
        self.0
    }
    fn mtp_at(&self, _: u32) -> Option<i64> {
        None
    }
}

/// Core's ContextualCheckBlockHeader on time: a block's time must be after the median time past
/// of the block before it, where that is known.
pub fn time_too_old(block_time: u32, prev_mtp: Option<i64>) -> Option<String> {
    prev_mtp.filter(|&m| block_time as i64 <= m).map(|m| {
        format!("time-too-old (block time {block_time} is not after the median time past {m})")
    })
}

/// Why a rule could not be checked with the data given.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unchecked {
    /// Spent outputs without creation heights: coinbase maturity and BIP68 height locks.
    CoinHeights,
    /// No median time past: BIP113 finality of time-locked transactions, BIP68 time locks.
    MedianTime,
}

impl std::fmt::Display for Unchecked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Unchecked::CoinHeights => {
                "coinbase maturity and BIP68 height locks (the spent-output data has no creation heights)"
            }
            Unchecked::MedianTime => {
                "BIP113 time-lock finality and BIP68 time locks (no median time past for this block)"
            }
        })
    }
}

/// Core's CheckTxInputs and SequenceLocks for one non-coinbase transaction: its fee.
pub fn check_tx_inputs(
    tx: &Tx,
    spent: &[SpentOutput],
    height: u32,
    enforce_bip68: bool,
    times: &dyn MedianTimes,
    unchecked: &mut std::collections::HashSet<Unchecked>,
) -> Result<i64, &'static str> {
    let mut value_in: i64 = 0;
    for s in spent {
        match (s.coinbase, s.height) {
            (Some(true), Some(h)) if height.saturating_sub(h) < COINBASE_MATURITY => {
                return Err("bad-txns-premature-spend-of-coinbase")
            }
            (None, _) | (Some(true), None) => {
                unchecked.insert(Unchecked::CoinHeights);
            }
            _ => {}
        }
        if !money_range(s.value) {
            return Err("bad-txns-inputvalues-outofrange");
        }
        value_in += s.value;
        if !money_range(value_in) {
            return Err("bad-txns-inputvalues-outofrange");
        }
    }
    let value_out: i64 = tx.outputs.iter().map(|o| o.value).sum();
    if value_in < value_out {
        return Err("bad-txns-in-belowout");
    }
    let fee = value_in - value_out;
    if !money_range(fee) {
        return Err("bad-txns-fee-outofrange");
    }
    if enforce_bip68 && (tx.version as u32) >= 2 {
        let (mut min_height, mut min_time) = (-1i64, -1i64);
        for (input, s) in tx.inputs.iter().zip(spent) {
            let seq = input.sequence as i64;
            if seq & (1 << 31) != 0 {
                continue;
            }
            let Some(coin_height) = s.height else {
                unchecked.insert(Unchecked::CoinHeights);
                continue;
            };
            if seq & (1 << 22) != 0 {
                let Some(coin_time) = s
                    .time
                    .map(i64::from)
                    .or_else(|| times.mtp_at(coin_height.max(1) - 1))
                else {
                    unchecked.insert(Unchecked::MedianTime);
                    continue;
                };
                min_time = min_time.max(coin_time + ((seq & 0xffff) << 9) - 1);
            } else {
                min_height = min_height.max(coin_height as i64 + (seq & 0xffff) - 1);
            }
        }
        if min_height >= height as i64 {
            return Err("bad-txns-nonfinal");
        }
        if min_time >= 0 {
            match times.prev_mtp() {
                Some(t) if min_time >= t => return Err("bad-txns-nonfinal"),
                Some(_) => {}
                None => {
                    unchecked.insert(Unchecked::MedianTime);
                }
            }
        }
    }
    Ok(fee)
}

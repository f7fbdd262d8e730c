//! A run of blocks validated in order, the UTXO set built as it goes: the header rules that need
//! the chain (linkage, median time past, the difficulty each block must carry), every block rule,
//! and the scripts of a window of blocks verified as one batch.

use super::batch::verify_scripts;
use super::block::{precheck_block, script_jobs, BlockContext, BlockReport};
use super::script::Flags;
use super::validate::{MedianTimes, Network, Params};
use super::{parse_block, Header, OutPoint, SpentOutput};
use crate::error::{Error, Result};
use crate::sha256::Digest;
use crate::Engine;
use num_bigint::BigUint;
use std::collections::HashMap;

/// The blocks of one window and the script batch they shared.
#[derive(Debug)]
pub struct WindowReport {
    /// One report per block connected, the last one invalid if the run stopped there.
    pub blocks: Vec<BlockReport>,
    /// None when no script ran: none to run, or (chain mode) a block failed before them.
    pub scripts: Option<super::batch::ScriptReport>,
}

/// What the chain keeps of each connected header.
#[derive(Clone, Copy, Debug)]
struct HeaderInfo {
    hash: Digest,
    time: u32,
    bits: u32,
}

/// The state a chain validation carries from block to block.
pub struct ChainState {
    pub network: Network,
    params: Params,
    utxo: HashMap<OutPoint, SpentOutput>,
    /// Connected headers by height, from `base_height` on.
    headers: Vec<HeaderInfo>,
    base_height: u32,
    /// Whether the headers go back to the genesis block (so every header rule can be checked).
    from_genesis: bool,
}

/// Genesis headers: (hash in display order, time, bits).
fn genesis(network: Network) -> (&'static str, u32, u32) {
    match network {
        Network::Main => (
            "000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f",
            1_231_006_505,
            0x1d00_ffff,
        ),
        Network::Test => (
            "000000000933ea01ad0ee984209779baaec3ced90fa3f408719526f8d77f4943",
            1_296_688_602,
            0x1d00_ffff,
        ),
        Network::Regtest => (
            "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206",
            1_296_688_602,
            0x207f_ffff,
        ),
    }
}

pub(crate) fn from_display(hex_hash: &str) -> Digest {
    let mut d: Digest = hex::decode(hex_hash).unwrap().try_into().unwrap();
    d.reverse();
    d
}

/// Median of up to the last 11 header times ending at index `i`.
fn median_time(headers: &[HeaderInfo], i: usize) -> i64 {
    let from = i.saturating_sub(10);
    let mut t: Vec<u32> = headers[from..=i].iter().map(|h| h.time).collect();
    t.sort_unstable();
    t[t.len() / 2] as i64
}

struct Times<'c> {
    chain: &'c ChainState,
}

impl MedianTimes for Times<'_> {
    fn prev_mtp(&self) -> Option<i64> {
        let c = self.chain;
        // Only a full 11-block window (or one reaching back to genesis) gives Core's value.
        (c.from_genesis || c.headers.len() >= 11)
            .then(|| median_time(&c.headers, c.headers.len() - 1))
    }
    fn mtp_at(&self, height: u32) -> Option<i64> {
        let c = self.chain;
        let i = height.checked_sub(c.base_height)? as usize;
        (i < c.headers.len() && (c.from_genesis || i >= 10)).then(|| median_time(&c.headers, i))
    }
}

fn compact_to_target(bits: u32) -> BigUint {
    let exp = bits >> 24;
    let mant = BigUint::from(bits & 0x007f_ffff);
    if exp <= 3 {
        mant >> (8 * (3 - exp))
    } else {
        mant << (8 * (exp - 3))
    }
}

fn target_to_compact(t: &BigUint) -> u32 {
    let bytes = t.to_bytes_be();
    let mut size = if t.bits() == 0 { 0 } else { bytes.len() as u32 };
    let mut mant: u32 = if size <= 3 {
        (t.to_u64_digits().first().copied().unwrap_or(0) as u32) << (8 * (3 - size))
    } else {
        (t >> (8 * (size - 3)))
            .to_u64_digits()
            .first()
            .copied()
            .unwrap_or(0) as u32
    };
    if mant & 0x0080_0000 != 0 {
        mant >>= 8;
        size += 1;
    }
    mant | size << 24
}

impl ChainState {
    /// A chain at its genesis block (whose output is unspendable and not in the UTXO set).
    pub fn at_genesis(network: Network) -> ChainState {
        let (hash, time, bits) = genesis(network);
        ChainState {
            network,
            params: network.params(),
            utxo: HashMap::new(),
            headers: vec![HeaderInfo {
                hash: from_display(hash),
                time,
                bits,
            }],
            base_height: 0,
            from_genesis: true,
        }
    }

    pub fn height(&self) -> u32 {
        self.base_height + self.headers.len() as u32 - 1
    }

    pub fn tip(&self) -> Digest {
        self.headers.last().unwrap().hash
    }

    pub fn utxo_count(&self) -> usize {
        self.utxo.len()
    }

    /// Core's GetNextWorkRequired for the block after the tip, where the chain knows enough.
    fn required_bits(&self, header: &Header) -> Option<u32> {
        const INTERVAL: u32 = 2016;
        const SPACING: i64 = 600;
        const TIMESPAN: i64 = 14 * 24 * 3600;
        let last = self.headers.last()?;
        let next = self.height() + 1;
        let limit_bits = target_to_compact(&BigUint::from_bytes_be(&self.params.pow_limit));
        let min_difficulty = matches!(self.network, Network::Test | Network::Regtest);
        if !next.is_multiple_of(INTERVAL) {
            if min_difficulty {
                if header.time as i64 > last.time as i64 + 2 * SPACING {
                    return Some(limit_bits);
                }
                let mut i = self.headers.len() - 1;
                loop {
                    let h = self.base_height + i as u32;
                    if h.is_multiple_of(INTERVAL) || self.headers[i].bits != limit_bits {
                        return Some(self.headers[i].bits);
                    }
                    if i == 0 {
                        return self.from_genesis.then_some(self.headers[0].bits);
                    }
                    i -= 1;
                }
            }
            return Some(last.bits);
        }
        if self.network == Network::Regtest {
            return Some(last.bits);
        }
        let first = (next - INTERVAL).checked_sub(self.base_height)? as usize;
        let span = (last.time as i64 - self.headers.get(first)?.time as i64)
            .clamp(TIMESPAN / 4, TIMESPAN * 4);
        let mut t = compact_to_target(last.bits) * BigUint::from(span as u64)
            / BigUint::from(TIMESPAN as u64);
        let limit = BigUint::from_bytes_be(&self.params.pow_limit);
        if t > limit {
            t = limit;
        }
        Some(target_to_compact(&t))
    }

    /// Connects a window of blocks in order; the scripts of all of them form one batch. Stops at
    /// the first invalid block: its report is the last one returned, and the state holds the
    /// blocks before it.
    pub fn connect(&mut self, engine: &Engine, raws: &[Vec<u8>]) -> Result<WindowReport> {
        let blocks = raws
            .iter()
            .enumerate()
            .map(|(k, r)| {
                parse_block(r)
                    .map_err(|e| Error::invalid(format!("block {} after the tip: {e}", k + 1)))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut reports: Vec<BlockReport> = Vec::new();
        let mut spent_all: Vec<Vec<Vec<SpentOutput>>> = Vec::new();
        let saved_headers = self.headers.len();
        let mut undo: Vec<(OutPoint, Option<SpentOutput>)> = Vec::new();
        let mut marks = Vec::new();
        let mut failed = None;
        for block in &blocks {
            marks.push(undo.len());
            let header = Header::parse(block.header);
            let height = self.height() + 1;
            let hash = block.hash();
            let header_error = if header.prev_block != self.tip() {
                Some(format!(
                    "block {} does not extend the chain: its parent is {}, the tip at height {} is {}",
                    super::display_hash(&hash),
                    super::display_hash(&header.prev_block),
                    self.height(),
                    super::display_hash(&self.tip())
                ))
            } else if self
                .required_bits(&header)
                .is_some_and(|b| b != header.bits)
            {
                Some("bad-diffbits".to_string())
            } else {
                None
            };
            // Spent outputs from the UTXO set; outputs of the block's earlier transactions count.
            let mut per_tx: Vec<Vec<SpentOutput>> = vec![Vec::new()];
            let mut missing = None;
            for (t, tx) in block.txs.iter().enumerate() {
                if t > 0 {
                    let mut s = Vec::with_capacity(tx.inputs.len());
                    for (i, input) in tx.inputs.iter().enumerate() {
                        match self.utxo.remove(&input.prevout) {
                            Some(coin) => {
                                undo.push((input.prevout, Some(coin.clone())));
                                s.push(coin);
                            }
                            None => {
                                missing.get_or_insert((t, i));
                                s.push(SpentOutput::new(0, Vec::new()));
                            }
                        }
                    }
                    per_tx.push(s);
                }
                let txid = tx.txid();
                for (vout, o) in tx.outputs.iter().enumerate() {
                    // Provably unspendable outputs never enter Core's UTXO set.
                    if o.script_pubkey.first() == Some(&0x6a)
                        || o.script_pubkey.len() > super::script::MAX_SCRIPT_SIZE
                    {
                        continue;
                    }
                    let op = OutPoint {
                        txid,
                        vout: vout as u32,
                    };
                    let coin = SpentOutput {
                        value: o.value,
                        script_pubkey: o.script_pubkey.to_vec(),
                        height: Some(height),
                        coinbase: Some(t == 0),
                        time: None,
                    };
                    let previous = self.utxo.insert(op, coin);
                    undo.push((op, previous));
                }
            }
            let refs: Vec<&[SpentOutput]> = per_tx.iter().map(|v| v.as_slice()).collect();
            let times = Times { chain: self };
            let ctx = BlockContext {
                network: self.network,
                height: Some(height),
                times: &times,
                check_pow: true,
            };
            let mut report = precheck_block(block, &refs, &ctx)?;
            // The header is accepted before the block: its errors come first.
            let fail =
                |reason: String, tx, input| super::validate::BlockError { reason, tx, input };
            if let Some(e) = header_error {
                report.verdict = Err(fail(e, None, None));
            } else if let Some((t, i)) = missing {
                // Unless an earlier transaction, or the block as a whole, failed first.
                let earlier = matches!(&report.verdict, Err(e) if e.tx.is_none_or(|et| et < t));
                if !earlier {
                    report.verdict = Err(fail(
                        "bad-txns-inputs-missingorspent".into(),
                        Some(t),
                        Some(i),
                    ));
                }
            }
            // BIP30 (an unspent output overwritten) cannot happen once BIP34 heights make txids
            // unique; before that Core allows exactly two historical exceptions.
            if report.verdict.is_err() {
                let mark = *marks.last().unwrap();
                self.rollback(undo.split_off(mark), saved_headers + reports.len());
                marks.pop();
                failed = Some(report);
                break;
            }
            reports.push(report);
            self.headers.push(HeaderInfo {
                hash,
                time: header.time,
                bits: header.bits,
            });
            spent_all.push(per_tx);
        }
        // One batch for the scripts of the whole window.
        let jobs: Vec<_> = blocks
            .iter()
            .take(reports.len())
            .zip(&spent_all)
            .zip(&reports)
            .flat_map(|((b, s), r)| {
                let refs: Vec<&[SpentOutput]> = s.iter().map(|v| v.as_slice()).collect();
                script_jobs(b, &refs, r.flags)
            })
            .collect();
        if jobs.is_empty() {
            reports.extend(failed);
            return Ok(WindowReport {
                blocks: reports,
                scripts: None,
            });
        }
        let scripts = verify_scripts(engine, &jobs)?;
        let mut first = 0;
        for k in 0..reports.len() {
            let n = blocks[k].txs.len() - 1;
            reports[k].set_script_verdicts(&scripts.verdicts[first..first + n]);
            first += n;
            if reports[k].verdict.is_err() {
                self.rollback(undo.split_off(marks[k]), saved_headers + k);
                reports.truncate(k + 1);
                return Ok(WindowReport {
                    blocks: reports,
                    scripts: Some(scripts),
                });
            }
        }
        reports.extend(failed);
        Ok(WindowReport {
            blocks: reports,
            scripts: Some(scripts),
        })
    }

    fn rollback(&mut self, undo: Vec<(OutPoint, Option<SpentOutput>)>, headers: usize) {
        for (op, previous) in undo.into_iter().rev() {
            match previous {
                Some(coin) => self.utxo.insert(op, coin),
                None => self.utxo.remove(&op),
            };
        }
        self.headers.truncate(headers);
    }
}

/// Blocks validated each with the outputs it spends given (undo data), no UTXO set: every rule
/// but those that need the chain's history; the scripts of all of them in one batch.
pub fn verify_with_spent(
    engine: &Engine,
    network: Network,
    blocks: &[(&super::Block<'_>, &[SpentOutput], Option<u32>)],
) -> Result<WindowReport> {
    use rayon::prelude::*;
    let t0 = std::time::Instant::now();
    // Each block's spent outputs per transaction, its script rules, and whether its scripts may
    // run before its checks.
    let per_block: Vec<(Vec<&[SpentOutput]>, Flags, bool)> = blocks
        .par_iter()
        .map(|(block, spent, height)| {
            let per_tx = super::block::spent_per_tx(block, spent)?;
            let (_, flags) = super::block::height_and_flags(block, network, *height)?;
            let bounded = super::block::within_script_limits(block, &per_tx, flags);
            Ok((per_tx, flags, bounded))
        })
        .collect::<Result<_>>()?;
    let jobs: Vec<_> = blocks
        .iter()
        .zip(&per_block)
        .filter(|(_, (.., bounded))| *bounded)
        .flat_map(|((b, ..), (per_tx, flags, _))| script_jobs(b, per_tx, *flags))
        .collect();
    // Without a UTXO set the blocks are independent: their checks run side by side, and beside
    // the scripts of every block within the limits that bound them (the verdict of a block that
    // fails a check is that failure; its scripts' work is lost, which only an invalid block
    // costs).
    let (checked, scripts) = rayon::join(
        || {
            let checked = blocks
                .par_iter()
                .zip(&per_block)
                .map(|((block, _, height), (per_tx, ..))| {
                    let times = super::validate::PrevMedianTime(None);
                    let ctx = BlockContext {
                        network,
                        height: *height,
                        times: &times,
                        check_pow: true,
                    };
                    precheck_block(block, per_tx, &ctx)
                })
                .collect::<Result<Vec<BlockReport>>>();
            if crate::pipeline::tracing() {
                eprintln!(
                    "bitcoin blocks: {} blocks checked but their scripts in {:.1} ms",
                    blocks.len(),
                    t0.elapsed().as_secs_f64() * 1e3
                );
            }
            checked
        },
        || {
            (!jobs.is_empty())
                .then(|| verify_scripts(engine, &jobs))
                .transpose()
        },
    );
    let mut reports = checked?;
    let scripts = scripts?;
    if let Some(scripts) = &scripts {
        let mut first = 0;
        for (k, r) in reports.iter_mut().enumerate() {
            if !per_block[k].2 {
                // Its checks failed: a block past the limits has no script verdicts.
                debug_assert!(r.verdict.is_err());
                continue;
            }
            let n = blocks[k].0.txs.len() - 1;
            if r.verdict.is_ok() {
                r.set_script_verdicts(&scripts.verdicts[first..first + n]);
            }
            first += n;
        }
    }
    Ok(WindowReport {
        blocks: reports,
        scripts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_targets_round_trip() {
        for bits in [0x1d00_ffffu32, 0x207f_ffff, 0x1b04_04cb, 0x1715_a35c] {
            assert_eq!(target_to_compact(&compact_to_target(bits)), bits);
        }
    }
}

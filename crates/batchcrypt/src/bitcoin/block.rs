//! One block validated with the outputs its inputs spend: the context-free checks, the
//! contextual ones the data allows, every input's amounts and lock times, the sigop cost, and
//! every script, the signatures of the whole block in one batch.

use super::batch::{verify_scripts, InputFailure, ScriptReport, TxJob};
use super::script::Flags;
use super::validate::*;
use super::{display_hash, Block, Header, SpentOutput};
use crate::error::{Error, Result};
use crate::Engine;
use rayon::prelude::*;
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// What is known of a block's place in its chain.
pub struct BlockContext<'h> {
    pub network: Network,
    /// The block's height; None reads it from the coinbase (BIP34), which blocks before BIP34's
    /// activation do not carry.
    pub height: Option<u32>,
    /// Median times past for BIP113 and BIP68 (chain mode knows them; a lone block does not).
    pub times: &'h dyn MedianTimes,
    /// Check the header's proof of work against its own target.
    pub check_pow: bool,
}

/// Everything a validation found out, valid or not.
#[derive(Debug)]
pub struct BlockReport {
    pub hash: String,
    pub height: u32,
    pub flags: Flags,
    pub verdict: std::result::Result<(), BlockError>,
    pub txs: usize,
    pub inputs: usize,
    pub weight: u64,
    pub sigop_cost: u64,
    pub fees: i64,
    /// Rules the given data could not decide (the verdict holds for every other rule).
    pub unchecked: Vec<Unchecked>,
    pub scripts: Option<ScriptReport>,
    /// Parse to here: txids, merkle root and the context-free checks; inputs; scripts.
    pub structure_time: Duration,
    pub inputs_time: Duration,
    pub scripts_time: Duration,
}

/// The height a BIP34 coinbase states (its first push as a script number).
pub fn bip34_height(block: &Block) -> Option<u32> {
    let ss = block.txs.first()?.inputs.first()?.script_sig;
    let op = super::script::Ops::new(ss).next()?.ok()?;
    let n = match op.opcode {
        0x51..=0x60 => (op.opcode - 0x50) as i64,
        0x00 => 0,
        _ => super::script::num::decode(op.data, false, 8).ok()?,
    };
    u32::try_from(n).ok()
}

/// Splits the block's spent outputs (one per non-coinbase input, in block order) per transaction.
pub fn spent_per_tx<'s>(block: &Block, spent: &'s [SpentOutput]) -> Result<Vec<&'s [SpentOutput]>> {
    let needed: usize = block.txs.iter().skip(1).map(|t| t.inputs.len()).sum();
    if spent.len() != needed {
        return Err(Error::invalid(format!(
            "the spent-output data has {} records but the block's non-coinbase inputs number {needed}: \
             is it the data of this block?",
            spent.len()
        )));
    }
    let mut out = vec![&spent[..0]];
    let mut at = 0;
    for t in block.txs.iter().skip(1) {
        out.push(&spent[at..at + t.inputs.len()]);
        at += t.inputs.len();
    }
    Ok(out)
}

/// Validates `block` (parsed from its raw bytes) spending `spent` (one output per non-coinbase
/// input, in block order).
pub fn verify_block(
    engine: &Engine,
    block: &Block,
    spent: &[SpentOutput],
    ctx: &BlockContext<'_>,
) -> Result<BlockReport> {
    let per_tx = spent_per_tx(block, spent)?;
    let mut report = precheck_block(block, &per_tx, ctx)?;
    if report.verdict.is_ok() {
        let t = Instant::now();
        let jobs = script_jobs(block, &per_tx, report.flags);
        let scripts = verify_scripts(engine, &jobs)?;
        report.set_script_verdicts(&scripts.verdicts);
        report.scripts = Some(scripts);
        report.scripts_time = t.elapsed();
    }
    Ok(report)
}

/// The scripts of every non-coinbase transaction of a block.
pub(crate) fn script_jobs<'t, 'a>(
    block: &'t Block<'a>,
    per_tx: &[&'t [SpentOutput]],
    flags: Flags,
) -> Vec<TxJob<'t, 'a>> {
    block
        .txs
        .iter()
        .enumerate()
        .skip(1)
        .map(|(t, tx)| TxJob {
            tx,
            spent: per_tx[t],
            flags,
        })
        .collect()
}

impl BlockReport {
    /// Takes the verdicts of this block's scripts (one per transaction after the coinbase).
    pub(crate) fn set_script_verdicts(
        &mut self,
        verdicts: &[std::result::Result<(), InputFailure>],
    ) {
        if let Some((j, f)) = verdicts
            .iter()
            .enumerate()
            .find_map(|(j, v)| v.err().map(|f| (j, f)))
        {
            self.verdict = Err(BlockError {
                reason: format!("mandatory-script-verify-flag-failed ({})", f.error),
                tx: Some(j + 1),
                input: Some(f.input),
            });
        }
    }
}

/// The block's height (given, or stated by its coinbase) and the script rules in force there.
pub fn height_and_flags(
    block: &Block,
    network: Network,
    height: Option<u32>,
) -> Result<(u32, Flags)> {
    let height = height.or_else(|| bip34_height(block)).ok_or_else(|| {
        Error::invalid(
            "the block's height is unknown: its coinbase does not state it (before BIP34); pass it",
        )
    })?;
    let flags = network
        .params()
        .script_flags(height, &display_hash(&block.hash()));
    Ok((height, flags))
}

/// Whether the block keeps to the limits that bound its scripts' work: its weight and its sigop
/// cost. A block past them fails its checks whatever its scripts say; its scripts must not run
/// before those checks (a hostile block would choose their cost).
pub fn within_script_limits(block: &Block, per_tx: &[&[SpentOutput]], flags: Flags) -> bool {
    block_weight(block) <= MAX_BLOCK_WEIGHT
        && block
            .txs
            .iter()
            .zip(per_tx)
            .try_fold(0u64, |cost, (tx, spent)| {
                let cost = cost + sigop_cost(tx, spent, flags);
                (cost <= MAX_BLOCK_SIGOPS_COST).then_some(cost)
            })
            .is_some()
}

/// Every check of a block but its scripts: header proof of work, CheckBlock, ContextualCheckBlock,
/// the inputs' amounts and lock times, sigop cost, the coinbase's claim.
pub fn precheck_block(
    block: &Block,
    per_tx: &[&[SpentOutput]],
    ctx: &BlockContext<'_>,
) -> Result<BlockReport> {
    let t0 = Instant::now();
    let params = ctx.network.params();
    let hash = display_hash(&block.hash());
    let (height, flags) = height_and_flags(block, ctx.network, ctx.height)?;
    let inputs: usize = block.txs.iter().map(|t| t.inputs.len()).sum();
    let mut report = BlockReport {
        hash,
        height,
        flags,
        verdict: Ok(()),
        txs: block.txs.len(),
        inputs,
        weight: block_weight(block),
        sigop_cost: 0,
        fees: 0,
        unchecked: Vec::new(),
        scripts: None,
        structure_time: Duration::ZERO,
        inputs_time: Duration::ZERO,
        scripts_time: Duration::ZERO,
    };
    let fail = |mut r: BlockReport, e: BlockError, t0: Instant| {
        r.verdict = Err(e);
        r.structure_time = t0.elapsed();
        Ok(r)
    };

    let header = Header::parse(block.header);
    if ctx.check_pow && !check_proof_of_work(&block.hash(), header.bits, &params.pow_limit) {
        return fail(
            report,
            BlockError {
                reason: "high-hash".into(),
                tx: None,
                input: None,
            },
            t0,
        );
    }
    // Core's ContextualCheckBlockHeader: the time after the median time past, where known, then
    // versions below those BIP34, BIP66 and BIP65 signalled.
    if let Some(e) = time_too_old(header.time, ctx.times.prev_mtp()) {
        return fail(report, BlockError::block(e), t0);
    }
    let version_floor = [
        (params.bip34_height, 2),
        (params.bip66_height, 3),
        (params.bip65_height, 4),
    ];
    if version_floor
        .iter()
        .any(|&(h, v)| height >= h && header.version < v)
    {
        let e = BlockError {
            reason: format!("bad-version(0x{:08x})", header.version),
            tx: None,
            input: None,
        };
        return fail(report, e, t0);
    }
    let txids: Vec<[u8; 32]> = block.txs.par_iter().map(|t| t.txid()).collect();
    if let Err(e) = check_block(block, &txids) {
        return fail(report, e, t0);
    }
    let cutoff = if height >= params.csv_height {
        ctx.times.prev_mtp()
    } else {
        Some(header.time as i64)
    };
    // A transaction without witnesses serializes alike both ways: its wtxid is its txid.
    let wtxids = || {
        block
            .txs
            .par_iter()
            .zip(&txids)
            .map(|(t, id)| {
                if t.raw.len() == t.stripped_size() {
                    *id
                } else {
                    t.wtxid()
                }
            })
            .collect::<Vec<_>>()
    };
    if let Err(e) = contextual_check_block(block, &wtxids, &params, height, cutoff) {
        return fail(report, e, t0);
    }
    let mut unchecked = HashSet::new();
    if cutoff.is_none() && block.txs.iter().any(|t| t.lock_time >= 500_000_000) {
        unchecked.insert(Unchecked::MedianTime);
    }
    report.structure_time = t0.elapsed();

    // Inputs: amounts, maturity, BIP68, sigop cost, then the coinbase's claim.
    let t1 = Instant::now();
    let enforce_bip68 = height >= params.csv_height;
    let mut cost = 0u64;
    for (t, tx) in block.txs.iter().enumerate() {
        if t > 0 {
            match check_tx_inputs(
                tx,
                per_tx[t],
                height,
                enforce_bip68,
                ctx.times,
                &mut unchecked,
            ) {
                Ok(fee) => {
                    report.fees += fee;
                    if !money_range(report.fees) {
                        report.verdict = Err(BlockError {
                            reason: "bad-txns-accumulated-fee-outofrange".into(),
                            tx: Some(t),
                            input: None,
                        });
                        break;
                    }
                }
                Err(reason) => {
                    report.verdict = Err(BlockError {
                        reason: reason.into(),
                        tx: Some(t),
                        input: None,
                    });
                    break;
                }
            }
        }
        cost += sigop_cost(tx, per_tx[t], flags);
        if cost > MAX_BLOCK_SIGOPS_COST {
            report.verdict = Err(BlockError {
                reason: "bad-blk-sigops".into(),
                tx: Some(t),
                input: None,
            });
            break;
        }
    }
    report.sigop_cost = cost;
    let claimed: i64 = block.txs[0].outputs.iter().map(|o| o.value).sum();
    if report.verdict.is_ok() && claimed > report.fees + params.subsidy(height) {
        report.verdict = Err(BlockError::tx_reason(0, "bad-cb-amount"));
    }
    report.unchecked = unchecked.into_iter().collect();
    report.unchecked.sort_by_key(|u| *u as u8);
    report.inputs_time = t1.elapsed();
    Ok(report)
}

//! Transactions outside blocks, as a mempool or a wallet backend checks them: each with the
//! outputs it spends and its rules, all of a run verified as one batch.

use super::batch::{verify_scripts, ScriptReport, TxJob};
use super::script::Flags;
use super::validate::{
    check_transaction, check_tx_inputs, is_final, money_range, PrevMedianTime, Unchecked,
};
use super::{parse_tx, SpentOutput, Tx};
use crate::error::Result;
use crate::Engine;

/// One transaction to check.
#[derive(Clone, Debug)]
pub struct LooseTx {
    /// The serialized transaction (with witnesses).
    pub raw: Vec<u8>,
    /// The outputs its inputs spend, one per input.
    pub spent: Vec<SpentOutput>,
    pub flags: Flags,
    /// The block it would be mined in, where the caller knows the chain's tip: then the checks
    /// that depend on the chain run too, as Core's mempool runs them.
    pub next: Option<NextBlock>,
}

/// The block a loose transaction would be mined in: the one after the chain's tip. Given it,
/// the transaction must be final there (its lock time, against the tip's median time past:
/// BIP113), may spend a coinbase output only 100 blocks on, and, under CHECKSEQUENCEVERIFY's
/// rules, its inputs' relative lock times (BIP68) must have passed; the spent outputs must then
/// carry their creation heights and coinbase flags (and their times, for time-based locks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NextBlock {
    /// Its height: the tip's plus one.
    pub height: u32,
    /// The tip's median time past.
    pub prev_mtp: i64,
}

impl NextBlock {
    /// From a request's two optional fields: both (the tip known) or neither; one alone is an
    /// error, which its caller prefixes with the fields' names.
    pub fn given(
        height: Option<u32>,
        prev_mtp: Option<i64>,
    ) -> std::result::Result<Option<NextBlock>, &'static str> {
        match (height, prev_mtp) {
            (Some(height), Some(prev_mtp)) => Ok(Some(NextBlock { height, prev_mtp })),
            (None, None) => Ok(None),
            _ => Err("give both (the chain's tip known) or neither"),
        }
    }
}

/// A transaction's verdict: Ok, or the failing input (where one is to blame) and the reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxRejection {
    pub input: Option<usize>,
    pub reason: String,
}

/// Checks each transaction: its encoding, Core's CheckTransaction, the spent amounts against the
/// outputs, where its next block is given the checks against the chain ([`NextBlock`]), and
/// every input's scripts (all signatures of the run in one batch).
pub fn verify_transactions(
    engine: &Engine,
    txs: &[LooseTx],
) -> Result<(
    Vec<std::result::Result<(), TxRejection>>,
    Option<ScriptReport>,
)> {
    let reject = |input: Option<usize>, reason: String| Err(TxRejection { input, reason });
    let mut verdicts = Vec::with_capacity(txs.len());
    let mut parsed: Vec<(usize, Tx)> = Vec::new();
    for (k, item) in txs.iter().enumerate() {
        let tx = match parse_tx(&item.raw) {
            Ok(tx) => tx,
            Err(e) => {
                verdicts.push(reject(None, format!("undecodable transaction: {e}")));
                continue;
            }
        };
        let v = precheck(&tx, &item.spent).and_then(|()| match item.next {
            Some(next) => against_chain(&tx, &item.spent, item.flags, next),
            None => Ok(()),
        });
        if v.is_ok() {
            parsed.push((k, tx));
        }
        verdicts.push(v);
    }
    if parsed.is_empty() {
        return Ok((verdicts, None));
    }
    let jobs: Vec<TxJob> = parsed
        .iter()
        .map(|(k, tx)| TxJob {
            tx,
            spent: &txs[*k].spent,
            flags: txs[*k].flags,
        })
        .collect();
    let report = verify_scripts(engine, &jobs)?;
    for ((k, _), v) in parsed.iter().zip(&report.verdicts) {
        if let Err(f) = v {
            verdicts[*k] = reject(Some(f.input), format!("script failed: {}", f.error));
        }
    }
    Ok((verdicts, Some(report)))
}

fn precheck(tx: &Tx, spent: &[SpentOutput]) -> std::result::Result<(), TxRejection> {
    let reject = |input, reason: &str| {
        Err(TxRejection {
            input,
            reason: reason.to_string(),
        })
    };
    if let Err(r) = check_transaction(tx) {
        return reject(None, r);
    }
    if tx.is_coinbase() {
        return reject(None, "coinbase: only valid as a block's first transaction");
    }
    if spent.len() != tx.inputs.len() {
        return reject(
            None,
            &format!(
                "{} spent outputs given for {} inputs",
                spent.len(),
                tx.inputs.len()
            ),
        );
    }
    let mut value_in = 0i64;
    for (i, s) in spent.iter().enumerate() {
        value_in = value_in.saturating_add(s.value);
        if !money_range(s.value) || !money_range(value_in) {
            return reject(Some(i), "bad-txns-inputvalues-outofrange");
        }
    }
    let value_out: i64 = tx.outputs.iter().map(|o| o.value).sum();
    if value_in < value_out {
        return reject(None, "bad-txns-in-belowout");
    }
    Ok(())
}

/// Core's mempool checks against the chain, for the block after the tip: IsFinalTx, then
/// CheckTxInputs (coinbase maturity) and the sequence locks. A rule the spent outputs' data
/// cannot decide refuses the transaction, naming what is missing, rather than passing it.
fn against_chain(
    tx: &Tx,
    spent: &[SpentOutput],
    flags: Flags,
    next: NextBlock,
) -> std::result::Result<(), TxRejection> {
    let reject = |reason: String| {
        Err(TxRejection {
            input: None,
            reason,
        })
    };
    if !is_final(tx, next.height, next.prev_mtp) {
        return reject("bad-txns-nonfinal: its lock time has not passed".into());
    }
    let mut unchecked = std::collections::HashSet::new();
    let bip68 = flags.has(Flags::CHECKSEQUENCEVERIFY);
    let times = PrevMedianTime(Some(next.prev_mtp));
    if let Err(r) = check_tx_inputs(tx, spent, next.height, bip68, &times, &mut unchecked) {
        return reject(r.into());
    }
    // The tip's time is given: a time left unchecked is a spent output's (BIP68's time locks).
    let missing: Vec<String> = [Unchecked::CoinHeights, Unchecked::MedianTime]
        .iter()
        .filter(|u| unchecked.contains(u))
        .map(|u| match u {
            Unchecked::MedianTime => "BIP68 time locks (a spent output has no time)".into(),
            u => u.to_string(),
        })
        .collect();
    if !missing.is_empty() {
        return reject(format!(
            "cannot be checked against the chain: {}",
            missing.join("; ")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BackendChoice;

    /// A transaction of one input (an empty script signature) and one output, spending an
    /// output locked by `OP_1`: its scripts pass, so a verdict is the chain's rules alone.
    fn tx(version: i32, sequence: u32, lock_time: u32) -> Vec<u8> {
        let mut t = version.to_le_bytes().to_vec();
        t.push(1);
        t.extend([7u8; 32]);
        t.extend(0u32.to_le_bytes());
        t.push(0);
        t.extend(sequence.to_le_bytes());
        t.push(1);
        t.extend(4_000i64.to_le_bytes());
        t.extend([1, 0x51]);
        t.extend(lock_time.to_le_bytes());
        t
    }

    fn coin(height: Option<u32>, coinbase: Option<bool>, time: Option<u32>) -> SpentOutput {
        let mut o = SpentOutput::new(5_000, vec![0x51]);
        (o.height, o.coinbase, o.time) = (height, coinbase, time);
        o
    }

    /// The verdict on `raw` spending `spent` under `flags`, mined at `next` (height, tip MTP).
    fn verdict(
        raw: Vec<u8>,
        spent: SpentOutput,
        flags: Flags,
        next: Option<(u32, i64)>,
    ) -> std::result::Result<(), String> {
        let engine = Engine::with_backend(BackendChoice::Cpu);
        let item = LooseTx {
            raw,
            spent: vec![spent],
            flags,
            next: next.map(|(height, prev_mtp)| NextBlock { height, prev_mtp }),
        };
        let (mut v, _) = verify_transactions(&engine, &[item]).unwrap();
        v.pop().unwrap().map_err(|r| r.reason)
    }

    fn refused(v: std::result::Result<(), String>, reason: &str) {
        let r = v.expect_err(reason);
        assert!(r.starts_with(reason), "{r}");
    }

    const ALL: Flags = Flags::CONSENSUS;
    const FINAL: u32 = u32::MAX;

    #[test]
    fn without_the_chain_only_the_transaction_is_checked() {
        let young_coinbase = coin(Some(100), Some(true), None);
        assert_eq!(verdict(tx(2, 10, 300), young_coinbase, ALL, None), Ok(()));
    }

    #[test]
    fn a_coinbase_output_is_spent_100_blocks_on() {
        let c = coin(Some(100), Some(true), None);
        let at = |h| verdict(tx(1, FINAL, 0), c.clone(), ALL, Some((h, 0)));
        refused(at(199), "bad-txns-premature-spend-of-coinbase");
        assert_eq!(at(200), Ok(()));
        // Another transaction's output may be spent in the next block.
        let c = coin(Some(100), Some(false), None);
        assert_eq!(verdict(tx(1, FINAL, 0), c, ALL, Some((101, 0))), Ok(()));
    }

    #[test]
    fn a_lock_time_must_have_passed_unless_every_input_is_final() {
        let c = || coin(Some(10), Some(false), None);
        let by_height = |h, seq| verdict(tx(1, seq, 300), c(), ALL, Some((h, 0)));
        refused(by_height(300, FINAL - 1), "bad-txns-nonfinal");
        assert_eq!(by_height(301, FINAL - 1), Ok(()));
        assert_eq!(by_height(300, FINAL), Ok(()));
        // A time lock counts against the tip's median time past (BIP113).
        let t = 600_000_000;
        let by_time = |mtp| verdict(tx(1, FINAL - 1, t), c(), ALL, Some((1_000, mtp)));
        refused(by_time(i64::from(t)), "bad-txns-nonfinal");
        assert_eq!(by_time(i64::from(t) + 1), Ok(()));
    }

    #[test]
    fn relative_locks_hold_under_checksequenceverify() {
        // Ten blocks after the coin's (BIP68): mined at 110 at the earliest.
        let c = || coin(Some(100), Some(false), None);
        let at = |version, h, flags| verdict(tx(version, 10, 0), c(), flags, Some((h, 0)));
        refused(at(2, 109, ALL), "bad-txns-nonfinal");
        assert_eq!(at(2, 110, ALL), Ok(()));
        // Not before version 2, nor without CSV's rules, nor with the lock disabled (bit 31).
        assert_eq!(at(1, 109, ALL), Ok(()));
        assert_eq!(at(2, 109, ALL - Flags::CHECKSEQUENCEVERIFY), Ok(()));
        let disabled = tx(2, 10 | 1 << 31, 0);
        assert_eq!(verdict(disabled, c(), ALL, Some((109, 0))), Ok(()));
        // 1,024 seconds (two units of 512) after the coin's time.
        let seq = 1 << 22 | 2;
        let time = 1_000_000u32;
        let c = coin(Some(100), Some(false), Some(time));
        let at = |mtp| verdict(tx(2, seq, 0), c.clone(), ALL, Some((200, mtp)));
        refused(at(i64::from(time) + 1023), "bad-txns-nonfinal");
        assert_eq!(at(i64::from(time) + 1024), Ok(()));
    }

    #[test]
    fn what_the_spent_outputs_cannot_decide_is_refused_and_named() {
        let no_height = coin(None, None, None);
        let r = verdict(tx(1, FINAL, 0), no_height, ALL, Some((200, 0)));
        refused(r.clone(), "cannot be checked against the chain");
        assert!(r.unwrap_err().contains("no creation heights"));
        let no_time = coin(Some(100), Some(false), None);
        let r = verdict(tx(2, 1 << 22 | 2, 0), no_time, ALL, Some((200, 0)));
        assert!(r.unwrap_err().contains("BIP68 time locks"));
    }
}

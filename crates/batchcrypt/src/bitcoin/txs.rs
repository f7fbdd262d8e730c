//! Transactions outside blocks, as a mempool or a wallet backend checks them: each with the
//! outputs it spends and its rules, all of a run verified as one batch.

use super::batch::{verify_scripts, ScriptReport, TxJob};
use super::script::Flags;
use super::validate::{check_transaction, money_range};
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
}

/// A transaction's verdict: Ok, or the failing input (where one is to blame) and the reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxRejection {
    pub input: Option<usize>,
    pub reason: String,
}

/// Checks each transaction: its encoding, Core's CheckTransaction, the spent amounts against the
/// outputs, and every input's scripts (all signatures of the run in one batch).
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
        let v = precheck(&tx, &item.spent);
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

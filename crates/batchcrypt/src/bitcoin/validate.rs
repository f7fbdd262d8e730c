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
    let mut seen = HashSet::with_capacity(tx.inputs.len());
    if tx.inputs.iter().any(|i| !seen.insert(i.prevout)) {
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
    let ins: u64 = tx.inputs.iter().map(|i| sigops::count(i.script_sig, false) as u64).sum();
    let outs: u64 = tx.outputs.iter().map(|o| sigops::count(o.script_pubkey, false) as u64).sum();
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

//! The script interpreter against Bitcoin Core's (libbitcoinconsensus): one input of a
//! transaction, the outputs it spends and a set of consensus flags; both must give the same
//! verdict. Input: `u32 LE flags | u8 input index | u8 count, then each spent output (8-byte LE
//! amount, compact-size script) | the transaction`. Seeds carry real signatures, so edits reach
//! the signature checks as well as the opcodes.
#![no_main]

use batchcrypt::bitcoin::checker::{CpuVerifier, TxChecker};
use batchcrypt::bitcoin::script::{verify_script, Flags};
use batchcrypt::bitcoin::sighash::Precomputed;
use batchcrypt::bitcoin::{parse_tx, TxOut};
use libfuzzer_sys::fuzz_target;

/// The oracle, as the differential test uses it.
#[path = "../../crates/batchcrypt/tests/common/consensus.rs"]
mod consensus;
use consensus::{core_verdict, CORE_FLAGS};

/// Reads the spent outputs; `None` when the bytes end early.
fn spent(mut b: &[u8]) -> Option<(Vec<(i64, &[u8])>, &[u8])> {
    let n = *b.first()? as usize;
    b = &b[1..];
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let value = i64::from_le_bytes(b.get(..8)?.try_into().ok()?);
        let len = *b.get(8)? as usize;
        let (len, skip) = match len {
            0xfd => (u16::from_le_bytes(b.get(9..11)?.try_into().ok()?) as usize, 11),
            0xfe | 0xff => return None,
            l => (l, 9),
        };
        out.push((value, b.get(skip..skip + len)?));
        b = &b[skip + len..];
    }
    Some((out, b))
}

fuzz_target!(|data: &[u8]| {
    let Some((head, rest)) = data.split_first_chunk::<5>() else { return };
    let mut flags = Flags(0);
    let mut core = 0u32;
    let bits = u32::from_le_bytes(head[..4].try_into().unwrap());
    for (k, (ours, theirs)) in CORE_FLAGS.iter().enumerate() {
        if bits >> k & 1 == 1 {
            flags = flags | *ours;
            core |= theirs;
        }
    }
    // Core asserts that WITNESS comes with P2SH, and that TAPROOT comes with WITNESS.
    if flags.has(Flags::WITNESS) && !flags.has(Flags::P2SH) || flags.has(Flags::TAPROOT) && !flags.has(Flags::WITNESS) {
        return;
    }
    let Some((outs, raw)) = spent(rest) else { return };
    let Ok(tx) = parse_tx(raw) else { return };
    if outs.len() != tx.inputs.len() || tx.inputs.is_empty() {
        return;
    }
    let i = head[4] as usize % tx.inputs.len();
    let spent: Vec<TxOut> = outs.iter().map(|&(value, script_pubkey)| TxOut { value, script_pubkey }).collect();
    let pre = Precomputed::with_spent(&tx, spent.iter().copied());
    let mut checker = TxChecker::new(&tx, i, spent[i].value, &pre, CpuVerifier);
    let input = &tx.inputs[i];
    let ours = verify_script(input.script_sig, spent[i].script_pubkey, &input.witness, flags, &mut checker);

    // Refused before any script ran (a transaction Core does not deserialize the same way, an
    // amount out of range): nothing to compare.
    let Ok(theirs) = core_verdict(raw, &spent, i, core) else { return };
    assert_eq!(ours.is_ok(), theirs, "ours {ours:?}, libbitcoinconsensus {theirs}, flags {}", flags.names());
});

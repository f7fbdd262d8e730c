//! A raw block and the outputs it spends (bcoin's undo records), through the whole validation:
//! parsing, proof of work, the context-free and contextual checks, amounts, sigops, and every
//! script with its signatures, checked in batches; the verdict must name the same first failing
//! input as running each input on its own with its signatures checked at once.
//!
//! Input: `u16 LE length of the undo data | mode | height / 1000 | undo data | block`; the mode
//! picks the network (its value mod 3), whether the proof of work is checked (bit 6) and whether
//! the height is given or read from the coinbase (bit 7).
#![no_main]

use batchcrypt::bitcoin::block::{spent_per_tx, verify_block, BlockContext};
use batchcrypt::bitcoin::checker::{CpuVerifier, TxChecker};
use batchcrypt::bitcoin::script::verify_script;
use batchcrypt::bitcoin::sighash::Precomputed;
use batchcrypt::bitcoin::spent::parse_bcoin_undo;
use batchcrypt::bitcoin::validate::{Network, PrevMedianTime};
use batchcrypt::bitcoin::parse_block;
use batchcrypt::Backend;
use batchcrypt_fuzz::engine;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((head, rest)) = data.split_first_chunk::<4>() else { return };
    let (undo_len, mode) = (u16::from_le_bytes([head[0], head[1]]) as usize, head[2]);
    if rest.len() < undo_len {
        return;
    }
    let (undo, raw) = rest.split_at(undo_len);
    let Ok(spent) = parse_bcoin_undo(undo) else { return };
    let Ok(block) = parse_block(raw) else { return };
    // What the parser kept must serialize back to the same bytes: txids cover exactly the input.
    let _ = block.hash();
    let ctx = BlockContext {
        network: [Network::Regtest, Network::Test, Network::Main][mode as usize % 3],
        height: (mode & 0x80 == 0).then_some(head[3] as u32 * 1000),
        times: &PrevMedianTime(None),
        check_pow: mode & 0x40 != 0,
    };
    let Ok(report) = verify_block(engine(Backend::Libsecp256k1), &block, &spent, &ctx) else { return };
    if report.scripts.is_none() {
        return; // stopped before the scripts
    }
    // The batched, deferred signature checks against every input run on its own with its
    // signatures checked at once: the first failing input must be the same.
    let per_tx = spent_per_tx(&block, &spent).unwrap();
    let mut first_failure = None;
    'txs: for (t, tx) in block.txs.iter().enumerate().skip(1) {
        let pre = Precomputed::new(tx, Some(per_tx[t]));
        for (i, input) in tx.inputs.iter().enumerate() {
            let mut checker = TxChecker::new(tx, i, per_tx[t][i].value, &pre, CpuVerifier);
            let spk = &per_tx[t][i].script_pubkey;
            if verify_script(input.script_sig, spk, &input.witness, report.flags, &mut checker).is_err() {
                first_failure = Some((t, i));
                break 'txs;
            }
        }
    }
    let batched = report.verdict.as_ref().err().and_then(|e| Some((e.tx?, e.input?)));
    assert_eq!(batched, first_failure, "batched verdict {:?}", report.verdict);
});

//! The spent-output formats a block is validated with: Bitcoin Core's rev*.dat block undo data
//! (which must survive a round trip through our encoder), bcoin's undo records and Floresta's JSON. The first
//! byte picks the format.
#![no_main]

use batchcrypt::bitcoin::spent::{encode_core_block_undo, parse_bcoin_undo, parse_core_block_undo, parse_floresta_json};
use batchcrypt::bitcoin::validate::MAX_MONEY;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&kind, rest)) = data.split_first() else { return };
    match kind % 3 {
        0 => {
            if let Ok(undo) = parse_core_block_undo(rest) {
                // Amounts decompress with Core's wrapping arithmetic, so only those in range
                // (all that a valid block can spend) survive a round trip unchanged; scripts,
                // heights and coinbase flags always do.
                let again = parse_core_block_undo(&encode_core_block_undo(&undo)).expect("our own encoding parses");
                assert_eq!(again.len(), undo.len());
                for (a, b) in undo.iter().zip(&again) {
                    assert_eq!(a.len(), b.len());
                    for (a, b) in a.iter().zip(b) {
                        if (0..=MAX_MONEY).contains(&a.value) {
                            assert_eq!(a, b, "a round trip changed a spent output");
                        } else {
                            assert_eq!((&a.script_pubkey, a.height, a.coinbase), (&b.script_pubkey, b.height, b.coinbase));
                        }
                    }
                }
            }
        }
        1 => {
            let _ = parse_bcoin_undo(rest);
        }
        _ => {
            if let Ok(text) = std::str::from_utf8(rest) {
                let _ = parse_floresta_json(text);
            }
        }
    }
});

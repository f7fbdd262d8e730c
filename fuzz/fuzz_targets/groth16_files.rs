//! The Groth16 file readers: snarkjs's .zkey proving keys, circom's .wtns witnesses and .r1cs
//! constraint systems (the first byte picks the reader). Every length, count and section offset
//! comes from the file: a reader must refuse a bad one with an error, never index past the data
//! or allocate what the file merely claims. What parses must serialize back to the same bytes
//! where the format has one encoding (.wtns, .r1cs).
#![no_main]

use batchcrypt::groth16::{ProvingKey, R1cs, Witness};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&kind, rest)) = data.split_first() else { return };
    match kind % 3 {
        0 => {
            let _ = ProvingKey::parse(rest);
        }
        1 => {
            if let Ok(w) = Witness::parse(rest) {
                let again = Witness::parse(&w.to_bytes()).expect("our own encoding parses");
                assert_eq!(again.to_bytes(), w.to_bytes());
            }
        }
        _ => {
            if let Ok(r) = R1cs::parse(rest) {
                let again = R1cs::parse(&r.to_bytes()).expect("our own encoding parses");
                assert_eq!(again.to_bytes(), r.to_bytes());
            }
        }
    }
});

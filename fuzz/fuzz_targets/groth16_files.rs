//! The Groth16 file readers: snarkjs's .zkey proving keys, circom's .wtns witnesses and .r1cs
//! constraint systems, over BN254 and BLS12-381 (the first byte picks the reader and the curve).
//! Every length, count and section offset comes from the file: a reader must refuse a bad one
//! with an error, never index past the data or allocate what the file merely claims. What parses
//! must serialize back to the same bytes where the format has one encoding (.wtns, .r1cs).
#![no_main]

use batchcrypt::groth16::{AnyProvingKey, CurveId, R1cs, Witness};
use libfuzzer_sys::fuzz_target;

/// A witness over `F` that parses re-encodes to itself.
fn witness<F: batchcrypt::ntt::Field>(data: &[u8]) {
    if let Ok(w) = Witness::<F>::parse(data) {
        let again = Witness::<F>::parse(&w.to_bytes()).expect("our own encoding parses");
        assert_eq!(again.to_bytes(), w.to_bytes());
    }
}

/// A constraint system over `F` that parses re-encodes to itself.
fn r1cs<F: batchcrypt::ntt::Field>(data: &[u8]) {
    if let Ok(r) = R1cs::<F>::parse(data) {
        let again = R1cs::<F>::parse(&r.to_bytes()).expect("our own encoding parses");
        assert_eq!(again.to_bytes(), r.to_bytes());
    }
}

fuzz_target!(|data: &[u8]| {
    use batchcrypt::{bls12_381, bn254};
    let Some((&kind, rest)) = data.split_first() else { return };
    match kind % 5 {
        // The curve from the header, then that curve's reader.
        0 => {
            let _ = CurveId::of_bytes(rest);
            let _ = AnyProvingKey::parse(rest);
        }
        1 => witness::<bn254::Fr>(rest),
        2 => r1cs::<bn254::Fr>(rest),
        3 => witness::<bls12_381::Fr>(rest),
        _ => r1cs::<bls12_381::Fr>(rest),
    }
});

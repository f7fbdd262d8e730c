//! SM3: the standard's examples (GB/T 32905-2016 Appendix A), and every backend — with the kernel
//! code itself run on the CPU under feature `emulation` — against RustCrypto's `sm3` on random
//! lengths across block boundaries.

use ::sm3::Digest as _;
use batchcrypt::{sm3, Primitive};

mod common;

#[test]
fn standard_examples() {
    // Example 1: "abc"; example 2: "abcd" repeated 16 times (two blocks after padding).
    assert_eq!(
        hex::encode(sm3::digest(b"abc")),
        "66c7f0f462eeedd9d1f2d46bdc10e4e24167c4875cf2f7a2297da02b8f4ba8e0"
    );
    assert_eq!(
        hex::encode(sm3::digest(&b"abcd".repeat(16))),
        "debe9ff92275b8a138604889c18e5a4d6fdb70e5387e5765293dcba39c0c5732"
    );
}

#[test]
fn every_backend_matches_the_reference() {
    for len in [0usize, 1, 3, 55, 56, 63, 64, 65, 119, 120, 128, 1000] {
        let n = 300;
        let data = common::Rng(len as u64 + 1).bytes(len * n);
        let want: Vec<[u8; 32]> = (0..n)
            .map(|i| ::sm3::Sm3::digest(&data[i * len..(i + 1) * len]).into())
            .collect();
        for b in common::backends(Primitive::Sm3) {
            let got = common::engine(b)
                .sm3()
                .hash_fixed_count(&data, len, n)
                .unwrap();
            assert_eq!(got.backend, b);
            assert!(got.value == want, "backend {b}, length {len}");
        }
    }
}

#[test]
fn bad_batches_are_errors() {
    let e = common::engine(batchcrypt::Backend::Portable);
    assert!(matches!(
        e.sm3().hash_fixed_count(&[], 0, 0),
        Err(batchcrypt::Error::EmptyBatch)
    ));
    assert!(e.sm3().hash_fixed_count(&[0; 10], 3, 3).is_err());
    assert!(e.sm3().hash_fixed(&[], 0).is_err());
}

#[cfg(feature = "emulation")]
#[test]
fn kernel_matches_the_reference() {
    let mut rng = common::Rng(77);
    let msgs: Vec<Vec<u8>> = (0..400)
        .map(|i| {
            let len = if i < 200 { i } else { rng.below(5000) as usize };
            rng.bytes(len)
        })
        .collect();
    let refs: Vec<&[u8]> = msgs.iter().map(|m| m.as_slice()).collect();
    for (m, got) in msgs.iter().zip(batchcrypt::emulation::sm3::hash(&refs)) {
        assert_eq!(
            got,
            <[u8; 32]>::from(::sm3::Sm3::digest(m)),
            "length {}",
            m.len()
        );
    }
}

//! A real mainnet block: txids as one variable-length SHA256d batch, the merkle root against the
//! header, on every backend; and truncated blocks rejected with a clear error.

mod common;
use batchcrypt::bitcoin::{display_hash, parse_block};
use batchcrypt::Primitive;
use common::{backends, engine, read_shared};

#[test]
fn block_413567_merkle_root_matches_header() {
    let Some(raw) = read_shared("block413567.raw") else {
        return;
    };
    let block = parse_block(&raw).unwrap();
    assert_eq!(block.txs.len(), 1557);
    assert_eq!(
        display_hash(&block.hash()),
        "0000000000000000025aff8be8a55df8f89c77296db6198f272d6577325d4069"
    );
    let mut all = Vec::new();
    for b in backends(Primitive::Sha256) {
        let e = engine(b);
        let txids = block.txids(&e).unwrap();
        assert_eq!(txids.backend, b);
        let root = e.sha256().merkle_root(&txids.value).unwrap();
        assert_eq!(root.value, block.header_merkle_root(), "backend {b}");
        all.push(txids.value);
    }
    assert!(all.windows(2).all(|w| w[0] == w[1]));
}

#[test]
fn truncated_and_padded_blocks_are_errors() {
    let Some(raw) = read_shared("block413567.raw") else {
        return;
    };
    for cut in [0, 79, 80, 81, 1000, raw.len() / 2, raw.len() - 1] {
        let err = parse_block(&raw[..cut]).unwrap_err().to_string();
        assert!(
            err.contains("truncated") || err.contains("exceeds"),
            "cut at {cut}: {err}"
        );
    }
    let mut longer = raw.clone();
    longer.push(0);
    assert!(parse_block(&longer)
        .unwrap_err()
        .to_string()
        .contains("trailing"));
}

/// Merkle trees small enough to check by hand: one leaf is its own root; odd levels duplicate.
#[test]
fn small_merkle_trees() {
    use batchcrypt::sha256::digest_double;
    let leaves: Vec<[u8; 32]> = (0..5u8).map(|i| [i; 32]).collect();
    let pair = |a: &[u8; 32], b: &[u8; 32]| digest_double(&[a.as_slice(), b.as_slice()].concat());
    let l1 = [
        pair(&leaves[0], &leaves[1]),
        pair(&leaves[2], &leaves[3]),
        pair(&leaves[4], &leaves[4]),
    ];
    let l2 = [pair(&l1[0], &l1[1]), pair(&l1[2], &l1[2])];
    let root = pair(&l2[0], &l2[1]);
    for b in backends(Primitive::Sha256) {
        let e = engine(b);
        assert_eq!(
            e.sha256().merkle_root(&leaves[..1]).unwrap().value,
            leaves[0]
        );
        assert_eq!(
            e.sha256().merkle_root(&leaves).unwrap().value,
            root,
            "backend {b}"
        );
    }
}

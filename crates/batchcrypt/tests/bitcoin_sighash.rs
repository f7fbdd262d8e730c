//! Signature hashes against published vectors: every case of Bitcoin Core's sighash.json through
//! the legacy hash, the worked examples of BIP143 through the segwit v0 hash, and BIP341's wallet
//! vectors (intermediate hashes, messages and hashes of every key-path input) through the taproot
//! hash; plus the taproot cases Core rejects. Core's data files come from the shared test data
//! (skipped with a note when absent, as the other tests do).

mod common;
use batchcrypt::bitcoin::sighash::{self, Precomputed};
use batchcrypt::bitcoin::{parse_tx, SpentOutput};
use common::read_shared;
use serde_json::Value;

fn unhex(s: &str) -> Vec<u8> {
    hex::decode(s).unwrap_or_else(|e| panic!("bad hex {s:?}: {e}"))
}

fn json(name: &str) -> Option<Value> {
    read_shared(name).map(|raw| serde_json::from_slice(&raw).expect("valid JSON"))
}

#[test]
fn core_sighash_json_legacy() {
    let Some(cases) = json("bitcoin/core/sighash.json") else {
        return;
    };
    let mut n = 0;
    // The first row is a comment naming the columns.
    for case in cases.as_array().unwrap().iter().skip(1) {
        let c = case.as_array().unwrap();
        assert_eq!(c.len(), 5, "{case}");
        let raw = unhex(c[0].as_str().unwrap());
        let tx = parse_tx(&raw).unwrap_or_else(|e| panic!("{e}: {case}"));
        let script = unhex(c[1].as_str().unwrap());
        let input = c[2].as_u64().unwrap() as usize;
        let hash_type = i32::try_from(c[3].as_i64().unwrap()).unwrap();
        // Core prints uint256 byte-reversed.
        let mut want = unhex(c[4].as_str().unwrap());
        want.reverse();
        assert_eq!(
            sighash::legacy(&tx, input, &script, hash_type).to_vec(),
            want,
            "case {n}: {case}"
        );
        n += 1;
    }
    assert_eq!(n, 500);
}

#[test]
fn legacy_single_without_output_signs_one() {
    // BIP143's Native P2WSH example has two inputs and one output.
    let raw = unhex(P2WSH_TX);
    let tx = parse_tx(&raw).unwrap();
    let mut one = [0u8; 32];
    one[0] = 1;
    assert_eq!(sighash::legacy(&tx, 1, &[0x51], 3), one);
    assert_eq!(sighash::legacy(&tx, 1, &[0x51], 0x83), one);
    assert_ne!(sighash::legacy(&tx, 0, &[0x51], 3), one);
}

const P2WSH_TX: &str = "0100000002fe3dc9208094f3ffd12645477b3dc56f60ec4fa8e6f5d67c565d1c6b9216b36e0000000000ffffffff0815cf020f013ed6cf91d29f4202e8a58726b1ac6c79da47c23d1bee0a6925f80000000000ffffffff0100f2052a010000001976a914a30741f8145e5acadf23f751864167f32e0963f788ac00000000";

/// BIP143's examples: (unsigned tx, input, scriptCode without its length byte, amount,
/// hash type, sigHash).
const BIP143: &[(&str, usize, &str, i64, i32, &str)] = &[
    // Native P2WPKH.
    (
        "0100000002fff7f7881a8099afa6940d42d1e7f6362bec38171ea3edf433541db4e4ad969f0000000000eeffffffef51e1b804cc89d182d279655c3aa89e815b1b309fe287d9b2b55d57b90ec68a0100000000ffffffff02202cb206000000001976a9148280b37df378db99f66f85c95a783a76ac7a6d5988ac9093510d000000001976a9143bde42dbee7e4dbe6a21b2d50ce2f0167faa815988ac11000000",
        1,
        "76a9141d0f172a0ecb48aee1be1f2687d2963ae33f71a188ac",
        600_000_000,
        1,
        "c37af31116d1b27caf68aae9e3ac82f1477929014d5b917657d0eb49478cb670",
    ),
    // P2SH-P2WPKH.
    (
        "0100000001db6b1b20aa0fd7b23880be2ecbd4a98130974cf4748fb66092ac4d3ceb1a54770100000000feffffff02b8b4eb0b000000001976a914a457b684d7f0d539a46a45bbc043f35b59d0d96388ac0008af2f000000001976a914fd270b1ee6abcaea97fea7ad0402e8bd8ad6d77c88ac92040000",
        0,
        "76a91479091972186c449eb1ded22b78e40d009bdf008988ac",
        1_000_000_000,
        1,
        "64f3b0f4dd2bb3aa1ce8566d220cc74dda9df97d8490cc81d89d735c92e59fb6",
    ),
    // Native P2WSH, SINGLE with no output at the input: hashOutputs is zero (no ONE bug).
    // The whole witnessScript, OP_CODESEPARATOR included...
    (
        P2WSH_TX,
        1,
        "21026dccc749adc2a9d0d89497ac511f760f45c47dc5ed9cf352a58ac706453880aeadab210255a9626aebf5e29c0e6538428ba0d1dcf6ca98ffdf086aa8ced5e0d0215ea465ac",
        4_900_000_000,
        3,
        "82dde6e4f1e94d02c2b7ad03d2115d691f48d064e9d52f58194a6637e4194391",
    ),
    // ...and what follows the executed separator.
    (
        P2WSH_TX,
        1,
        "210255a9626aebf5e29c0e6538428ba0d1dcf6ca98ffdf086aa8ced5e0d0215ea465ac",
        4_900_000_000,
        3,
        "fef7bd749cce710c5c052bd796df1af0d935e59cea63736268bcbe2d2134fc47",
    ),
    // SINGLE|ANYONECANPAY, an unexecuted separator kept in the scriptCode.
    (
        "0100000002e9b542c5176808107ff1df906f46bb1f2583b16112b95ee5380665ba7fcfc0010000000000ffffffff80e68831516392fcd100d186b3c2c7b95c80b53c77e77c35ba03a66b429a2a1b0000000000ffffffff0280969800000000001976a914de4b231626ef508c9a74a8517e6783c0546d6b2888ac80969800000000001976a9146648a8cd4531e1ec47f35916de8e259237294d1e88ac00000000",
        0,
        "0063ab68210392972e2eb617b2388771abe27235fd5ac44af8e61693261550447a4c3e39da98ac",
        16_777_215,
        0x83,
        "e9071e75e25b8a1e298a72f0d2e9f4f95a0f5cdf86a533cda597eb402ed13b3a",
    ),
    (
        "0100000002e9b542c5176808107ff1df906f46bb1f2583b16112b95ee5380665ba7fcfc0010000000000ffffffff80e68831516392fcd100d186b3c2c7b95c80b53c77e77c35ba03a66b429a2a1b0000000000ffffffff0280969800000000001976a914de4b231626ef508c9a74a8517e6783c0546d6b2888ac80969800000000001976a9146648a8cd4531e1ec47f35916de8e259237294d1e88ac00000000",
        1,
        "68210392972e2eb617b2388771abe27235fd5ac44af8e61693261550447a4c3e39da98ac",
        16_777_215,
        0x83,
        "cd72f1f1a433ee9df816857fad88d8ebd97e09a75cd481583eb841c330275e54",
    ),
    // No FindAndDelete: the signature inside the witnessScript stays.
    (
        "010000000169c12106097dc2e0526493ef67f21269fe888ef05c7a3a5dacab38e1ac8387f14c1d000000ffffffff0101000000000000000000000000",
        0,
        "ad4830450220487fb382c4974de3f7d834c1b617fe15860828c7f96454490edd6d891556dcc9022100baf95feb48f845d5bfc9882eb6aeefa1bc3790e39f59eaa46ff7f15ae626c53e01",
        200_000,
        1,
        "71c9cd9b2869b9c70b01b1f0360c148f42dee72297db312638df136f43311f23",
    ),
];

/// BIP143's P2SH-P2WSH 6-of-6 multisig, signed with all six hash types.
const P2SH_P2WSH_TX: &str = "010000000136641869ca081e70f394c6948e8af409e18b619df2ed74aa106c1ca29787b96e0100000000ffffffff0200e9a435000000001976a914389ffce9cd9ae88dcc0631e88a821ffdbe9bfe2688acc0832f05000000001976a9147480a33f950689af511e6e84c138dbbd3c3ee41588ac00000000";
const P2SH_P2WSH_SCRIPT: &str = "56210307b8ae49ac90a048e9b53357a2354b3334e9c8bee813ecb98e99a7e07e8c3ba32103b28f0c28bfab54554ae8c658ac5c3e0ce6e79ad336331f78c428dd43eea8449b21034b8113d703413d57761b8b9781957b8c0ac1dfe69f492580ca4195f50376ba4a21033400f6afecb833092a9a21cfdf1ed1376e58c5d1f47de74683123987e967a8f42103a6d48b1131e94ba04d9737d61acdaa1322008af9602b3b14862c07a1789aac162102d8b661b0b3302ee2f162b09e07a55ad5dfbe673a9f01d9f0c19617681024306b56ae";
const P2SH_P2WSH: &[(i32, &str)] = &[
    (
        0x01,
        "185c0be5263dce5b4bb50a047973c1b6272bfbd0103a89444597dc40b248ee7c",
    ),
    (
        0x02,
        "e9733bc60ea13c95c6527066bb975a2ff29a925e80aa14c213f686cbae5d2f36",
    ),
    (
        0x03,
        "1e1f1c303dc025bd664acb72e583e933fae4cff9148bf78c157d1e8f78530aea",
    ),
    (
        0x81,
        "2a67f03e63a6a422125878b40b82da593be8d4efaafe88ee528af6e5a9955c6e",
    ),
    (
        0x82,
        "781ba15f3779d5542ce8ecb5c18716733a5ee42a6f51488ec96154934e2c890a",
    ),
    (
        0x83,
        "511e8e52ed574121fc1b654970395502128263f62662e076dc6baf05c2e6a99b",
    ),
];

#[test]
fn bip143_examples() {
    for &(raw, input, script, amount, hash_type, want) in BIP143 {
        let raw = unhex(raw);
        let tx = parse_tx(&raw).unwrap();
        let pre = Precomputed::new(&tx, None);
        let got = sighash::segwit_v0(&tx, &pre, input, &unhex(script), amount, hash_type);
        assert_eq!(
            hex::encode(got),
            want,
            "input {input} hash type {hash_type:#x}"
        );
    }
    let raw = unhex(P2SH_P2WSH_TX);
    let tx = parse_tx(&raw).unwrap();
    let pre = Precomputed::new(&tx, None);
    let script = unhex(P2SH_P2WSH_SCRIPT);
    for &(hash_type, want) in P2SH_P2WSH {
        let got = sighash::segwit_v0(&tx, &pre, 0, &script, 987_654_321, hash_type);
        assert_eq!(hex::encode(got), want, "hash type {hash_type:#x}");
    }
}

#[test]
fn bip143_intermediate_hashes() {
    // From BIP143's Native P2WPKH example.
    let raw = unhex(BIP143[0].0);
    let tx = parse_tx(&raw).unwrap();
    let pre = Precomputed::new(&tx, None);
    assert_eq!(
        hex::encode(pre.tx_hashes(&tx).hash_prevouts),
        "96b827c8483d4e9b96712b6713a7b68d6e8003a781feba36c31143470b4efd37"
    );
    assert_eq!(
        hex::encode(pre.tx_hashes(&tx).hash_sequence),
        "52b0a642eea2fb7ae638c36f6252b6750293dbe574a806984b8e4d8548339a3b"
    );
    assert_eq!(
        hex::encode(pre.tx_hashes(&tx).hash_outputs),
        "863ef3e1a92afbfdb97f31ad0fc7683ee943e9abcf2501590ff8f6551f47e5e5"
    );
    assert!(!pre.has_spent_outputs());
}

/// BIP341's wallet vectors: the transaction, its spent outputs and the precomputed hashes.
fn bip341_key_path() -> Option<(Vec<u8>, Vec<SpentOutput>, Value)> {
    let vectors = json("bitcoin/core/bip341_wallet_vectors.json")?;
    let cases = vectors["keyPathSpending"].as_array().unwrap();
    assert_eq!(cases.len(), 1);
    let case = cases[0].clone();
    let raw = unhex(case["given"]["rawUnsignedTx"].as_str().unwrap());
    let spent = case["given"]["utxosSpent"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            SpentOutput::new(
                u["amountSats"].as_i64().unwrap(),
                unhex(u["scriptPubKey"].as_str().unwrap()),
            )
        })
        .collect();
    Some((raw, spent, case))
}

#[test]
fn bip341_key_path_vectors() {
    let Some((raw, spent, case)) = bip341_key_path() else {
        return;
    };
    let tx = parse_tx(&raw).unwrap();
    let pre = Precomputed::new(&tx, Some(&spent));
    assert!(pre.has_spent_outputs());
    let mid = &case["intermediary"];
    let hex_of = |name: &str| mid[name].as_str().unwrap().to_string();
    assert_eq!(
        hex::encode(pre.tx_hashes(&tx).sha_prevouts),
        hex_of("hashPrevouts")
    );
    assert_eq!(
        hex::encode(pre.tx_hashes(&tx).sha_sequences),
        hex_of("hashSequences")
    );
    assert_eq!(
        hex::encode(pre.tx_hashes(&tx).sha_outputs),
        hex_of("hashOutputs")
    );
    assert_eq!(
        hex::encode(pre.sha_amounts().unwrap()),
        hex_of("hashAmounts")
    );
    assert_eq!(
        hex::encode(pre.sha_scriptpubkeys().unwrap()),
        hex_of("hashScriptPubkeys")
    );

    // The same from TxOuts.
    let from_txouts = Precomputed::with_spent(&tx, spent.iter().map(SpentOutput::as_txout));
    assert_eq!(from_txouts.sha_amounts(), pre.sha_amounts());
    assert_eq!(from_txouts.sha_scriptpubkeys(), pre.sha_scriptpubkeys());

    let inputs = case["inputSpending"].as_array().unwrap();
    assert_eq!(inputs.len(), 7);
    for spend in inputs {
        let input = spend["given"]["txinIndex"].as_u64().unwrap() as usize;
        let hash_type = spend["given"]["hashType"].as_u64().unwrap() as u8;
        let want = &spend["intermediary"];
        let msg = sighash::taproot_message(&tx, &pre, input, hash_type, None, None).unwrap();
        assert_eq!(
            hex::encode(&msg),
            want["sigMsg"].as_str().unwrap(),
            "input {input}"
        );
        let hash = sighash::taproot(&tx, &pre, input, hash_type, None, None).unwrap();
        assert_eq!(
            hex::encode(hash),
            want["sigHash"].as_str().unwrap(),
            "input {input}"
        );
        assert_eq!(hash, sighash::tagged_hash("TapSighash", &[&msg]));
    }
}

#[test]
fn taproot_failures_match_core() {
    let Some((raw, spent, _)) = bip341_key_path() else {
        return;
    };
    let tx = parse_tx(&raw).unwrap();
    let pre = Precomputed::new(&tx, Some(&spent));
    // Missing spent outputs.
    let bare = Precomputed::new(&tx, None);
    assert_eq!(sighash::taproot(&tx, &bare, 0, 0, None, None), None);
    // Hash types outside 0x00-0x03 and 0x81-0x83.
    for hash_type in (0u8..=255).filter(|h| !matches!(h, 0..=3 | 0x81..=0x83)) {
        assert_eq!(
            sighash::taproot(&tx, &pre, 0, hash_type, None, None),
            None,
            "{hash_type:#x}"
        );
    }
    // SINGLE with no output at the input (two outputs, nine inputs).
    assert_eq!(tx.outputs.len(), 2);
    for hash_type in [0x03, 0x83] {
        assert!(sighash::taproot(&tx, &pre, 1, hash_type, None, None).is_some());
        assert_eq!(sighash::taproot(&tx, &pre, 2, hash_type, None, None), None);
    }
    // Every valid hash type gives a distinct hash.
    let mut all: Vec<_> = [0u8, 1, 2, 3, 0x81, 0x82, 0x83]
        .iter()
        .map(|&h| sighash::taproot(&tx, &pre, 1, h, None, None).unwrap())
        .collect();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 7);
}

#[test]
fn taproot_annex_and_tapscript_fields() {
    let Some((raw, spent, _)) = bip341_key_path() else {
        return;
    };
    let tx = parse_tx(&raw).unwrap();
    let pre = Precomputed::new(&tx, Some(&spent));
    let annex = [0x50, 1, 2, 3];
    let leaf_hash = [7u8; 32];
    let key_path = sighash::taproot_message(&tx, &pre, 4, 1, None, None).unwrap();
    let full =
        sighash::taproot_message(&tx, &pre, 4, 1, Some(&annex), Some((&leaf_hash, 5))).unwrap();
    // Epoch, hash type, version, locktime, five hashes, then spend_type.
    let at = 1 + 1 + 4 + 4 + 5 * 32;
    assert_eq!(key_path[at], 0);
    assert_eq!(full[at], 3, "spend_type: tapscript (2) + annex (1)");
    assert_eq!(full[..at], key_path[..at]);
    // Input index, then sha_annex (over the annex with its length), the tapleaf hash, the key
    // version and the code separator position.
    let mut tail = 4u32.to_le_bytes().to_vec();
    let mut annex_ser = vec![annex.len() as u8];
    annex_ser.extend(annex);
    tail.extend(batchcrypt::sha256::digest(&annex_ser));
    tail.extend(leaf_hash);
    tail.push(0);
    tail.extend(5u32.to_le_bytes());
    assert_eq!(full[at + 1..], tail[..]);
    assert_eq!(key_path.len(), at + 1 + 4);
    let with_annex_only = sighash::taproot_message(&tx, &pre, 4, 1, Some(&annex), None).unwrap();
    assert_eq!(with_annex_only[at], 1);
    let leaf_only =
        sighash::taproot_message(&tx, &pre, 4, 1, None, Some((&leaf_hash, !0))).unwrap();
    assert_eq!(leaf_only[at], 2);
    assert_eq!(leaf_only[leaf_only.len() - 4..], [0xff; 4]);
}

#[test]
fn tagged_hash_known_value() {
    // BIP340's challenge hash is SHA256(SHA256(tag) || SHA256(tag) || msg); check against the
    // definition with the sha2 crate.
    use sha2::{Digest as _, Sha256};
    for tag in ["TapLeaf", "TapBranch", "TapTweak", "TapSighash", "other"] {
        let t = Sha256::digest(tag.as_bytes());
        let want: [u8; 32] = Sha256::new()
            .chain_update(t)
            .chain_update(t)
            .chain_update(b"abc")
            .chain_update(b"def")
            .finalize()
            .into();
        assert_eq!(sighash::tagged_hash(tag, &[b"abc", b"def"]), want, "{tag}");
    }
}

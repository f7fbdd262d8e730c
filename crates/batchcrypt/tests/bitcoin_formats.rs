//! Spent-output formats against the shared block data (bcoin .undo, Floresta .spent.json), Core's
//! compressed undo records by round trip, and a Bitcoin Core blocks/ directory written here (with
//! and without the xor.dat key) read back block by block with its undo data.

mod common;
use batchcrypt::bitcoin::spent::{
    encode_core_block_undo, flatten_block_undo, parse_bcoin_undo, parse_core_block_undo,
    parse_floresta_json,
};
use batchcrypt::bitcoin::store::{chain_range, network_magic, BlocksDir};
use batchcrypt::bitcoin::{parse_block, Block, SpentOutput};
use batchcrypt::sha256::digest_double;
use common::read_shared;
use std::path::{Path, PathBuf};

/// The blocks with a bcoin .undo file.
const UNDO_BLOCKS: [&str; 8] = [
    "mainnet-300025",
    "testnet3-1087400",
    "testnet3-928816",
    "testnet3-928828",
    "testnet3-928831",
    "testnet3-928848",
    "testnet3-928849",
    "testnet3-928927",
];

const COIN: i64 = 100_000_000;

/// A block's name, raw bytes and .undo bytes.
type Pair = (&'static str, Vec<u8>, Vec<u8>);

/// Each block with its .undo; `None` (with a note) when the data is absent.
fn undo_pairs() -> Option<Vec<Pair>> {
    UNDO_BLOCKS
        .iter()
        .map(|name| {
            let raw = read_shared(&format!("bitcoin/blocks/{name}.raw"))?;
            let undo = read_shared(&format!("bitcoin/blocks/{name}.undo"))?;
            Some((*name, raw, undo))
        })
        .collect()
}

fn non_coinbase_inputs(block: &Block) -> usize {
    block.txs[1..].iter().map(|t| t.inputs.len()).sum()
}

/// Every transaction after the coinbase spends at least what it creates: checks that the spent
/// amounts line up with the inputs. Returns the fees.
fn fees(block: &Block, spent: &[SpentOutput]) -> i64 {
    let mut coins = spent.iter();
    let mut total = 0;
    for (i, tx) in block.txs[1..].iter().enumerate() {
        let inputs: i64 = coins.by_ref().take(tx.inputs.len()).map(|c| c.value).sum();
        let outputs: i64 = tx.outputs.iter().map(|o| o.value).sum();
        assert!(inputs >= outputs, "tx {}: {inputs} < {outputs}", i + 1);
        total += inputs - outputs;
    }
    total
}

/// Splits a block's flat spent list into one Vec per transaction after the coinbase.
fn group_by_tx(block: &Block, spent: &[SpentOutput]) -> Vec<Vec<SpentOutput>> {
    let mut rest = spent;
    block.txs[1..]
        .iter()
        .map(|tx| {
            let (these, more) = rest.split_at(tx.inputs.len());
            rest = more;
            these.to_vec()
        })
        .collect()
}

#[test]
fn bcoin_undo_has_one_record_per_input() {
    let Some(pairs) = undo_pairs() else { return };
    for (name, raw, undo) in &pairs {
        let block = parse_block(raw).unwrap();
        let spent = parse_bcoin_undo(undo).unwrap();
        assert_eq!(spent.len(), non_coinbase_inputs(&block), "{name}");
        assert!(spent.iter().all(|s| s.height.is_none() && s.time.is_none()));
        let fee = fees(&block, &spent);
        if *name == "mainnet-300025" {
            // README: total reward 2,507,773,345 sat, the subsidy being 25 BTC.
            let reward: i64 = block.txs[0].outputs.iter().map(|o| o.value).sum();
            assert_eq!(reward, 2_507_773_345);
            assert_eq!(fee, reward - 25 * COIN);
            assert_eq!(spent.len(), 1427);
        }
    }
}

#[test]
fn floresta_json_has_one_record_per_input() {
    let (Some(raw), Some(json)) = (
        read_shared("bitcoin/blocks/mainnet-367891.raw"),
        read_shared("bitcoin/blocks/mainnet-367891.spent.json"),
    ) else {
        return;
    };
    let block = parse_block(&raw).unwrap();
    let spent = parse_floresta_json(std::str::from_utf8(&json).unwrap()).unwrap();
    assert_eq!(spent.len(), 20_817);
    assert_eq!(spent.len(), non_coinbase_inputs(&block));
    fees(&block, &spent);
    let block_time = u32::from_le_bytes(block.header[68..72].try_into().unwrap());
    for s in &spent {
        assert!(s.height.unwrap() <= 367_891);
        assert_eq!(s.coinbase, Some(false));
        // A median time past, which lags the block's own time.
        assert!(s.time.unwrap() < block_time);
    }
    assert_eq!(spent[0].height, Some(367_868));
    assert_eq!(spent[0].time, Some(1_438_395_847));
    assert_eq!(spent[0].value, 27_986_602);

    // Through Core's format and back, heights and coinbase flags included.
    let grouped = group_by_tx(&block, &spent);
    let decoded = parse_core_block_undo(&encode_core_block_undo(&grouped)).unwrap();
    let untimed = |v: &[SpentOutput]| -> Vec<SpentOutput> {
        v.iter()
            .map(|s| SpentOutput {
                time: None,
                ..s.clone()
            })
            .collect()
    };
    assert_eq!(
        flatten_block_undo(&block, decoded).unwrap(),
        untimed(&spent)
    );
}

#[test]
fn truncated_spent_data_is_an_error() {
    let Some(pairs) = undo_pairs() else { return };
    let (_, raw, undo) = &pairs[1];
    // Inside the first record's amount or script, and inside the last record.
    for cut in [1, 7, 8, 9, 20, undo.len() - 1] {
        let err = parse_bcoin_undo(&undo[..cut]).unwrap_err().to_string();
        assert!(
            err.contains("truncated") || err.contains("exceeds"),
            "cut {cut}: {err}"
        );
        assert!(err.contains("record"), "{err}");
    }
    // A cut between records parses; only the block shows that inputs are missing.
    let block = parse_block(raw).unwrap();
    let spent = parse_bcoin_undo(undo).unwrap();
    let first_len = 8 + 1 + spent[0].script_pubkey.len();
    let short =
        parse_bcoin_undo(&undo[..undo.len() - (8 + 1 + spent.last().unwrap().script_pubkey.len())]);
    assert_eq!(short.unwrap().len(), spent.len() - 1);
    assert_eq!(parse_bcoin_undo(&undo[..first_len]).unwrap().len(), 1);

    // Every proper prefix of a Core record is an error.
    let core = encode_core_block_undo(&group_by_tx(&block, &spent));
    for cut in 0..core.len() {
        assert!(parse_core_block_undo(&core[..cut]).is_err(), "cut {cut}");
    }
    let mut longer = core.clone();
    longer.push(0);
    assert!(parse_core_block_undo(&longer)
        .unwrap_err()
        .to_string()
        .contains("trailing"));

    if let Some(json) = read_shared("bitcoin/blocks/mainnet-367891.spent.json") {
        let text = std::str::from_utf8(&json).unwrap();
        for cut in [0, 1, 100, text.len() / 2, text.len() - 1] {
            assert!(parse_floresta_json(&text[..cut]).is_err(), "cut {cut}");
        }
    }
}

/// A coin made by hand.
fn coin(value: i64, script: Vec<u8>, height: u32, coinbase: bool) -> SpentOutput {
    SpentOutput {
        value,
        script_pubkey: script,
        height: Some(height),
        coinbase: Some(coinbase),
        time: None,
    }
}

fn p2pk(key: &[u8]) -> Vec<u8> {
    [&[key.len() as u8][..], key, &[0xac]].concat()
}

/// Public keys of the secret keys 1, 2, 3, ...: both parities of y come up.
fn keys(n: u8) -> Vec<secp256k1::PublicKey> {
    (1..=n)
        .map(|i| {
            let mut sk = [0u8; 32];
            sk[31] = i;
            secp256k1::PublicKey::from_secret_key(
                &secp256k1::SecretKey::from_secret_bytes(sk).unwrap(),
            )
        })
        .collect()
}

#[test]
fn core_undo_round_trip_of_special_scripts() {
    let keys = keys(6);
    let mut tx = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        tx.push(coin(
            i as i64,
            p2pk(&k.serialize_uncompressed()),
            100 + i as u32,
            i % 2 == 0,
        ));
        tx.push(coin(COIN, p2pk(&k.serialize()), 1, true));
    }
    let parities: Vec<u8> = keys.iter().map(|k| k.serialize()[0]).collect();
    assert!(parities.contains(&2) && parities.contains(&3));
    // An "uncompressed key" off the curve is kept whole, as are other scripts.
    let mut off_curve = keys[0].serialize_uncompressed();
    off_curve[64] ^= 1;
    let p2pkh = [&[0x76, 0xa9, 20][..], &[7; 20], &[0x88, 0xac]].concat();
    let p2sh = [&[0xa9, 20][..], &[9; 20], &[0x87]].concat();
    let others = vec![
        coin(0, p2pk(&off_curve), 5, false),
        coin(1, p2pkh.clone(), 0, false), // height 0: no version byte
        coin(21_000_000 * COIN, p2sh.clone(), 0x7fff_ffff, true),
        coin(50 * COIN, Vec::new(), 3, false),
        coin(7, vec![0x51; 10_000], 3, false),
        coin(8, p2pkh[..24].to_vec(), 3, false),
        coin(9, [&[0x04], &off_curve[..], &[0xac]].concat(), 3, false),
    ];
    let undo = vec![tx, Vec::new(), others];
    let bytes = encode_core_block_undo(&undo);
    assert_eq!(parse_core_block_undo(&bytes).unwrap(), undo);

    // A compressed P2PK key takes 33 bytes plus a one-byte code; P2PKH 21 bytes.
    let one = |c: SpentOutput| encode_core_block_undo(&[vec![c]]);
    let p2pkh_coin = one(coin(COIN, p2pkh, 120_891, false));
    // count, count, VARINT(241782) = 8d df 76, version 0, amount 9, script code 0, hash.
    assert_eq!(&p2pkh_coin[..7], [1, 1, 0x8d, 0xdf, 0x76, 0, 9]);
    assert_eq!(p2pkh_coin.len(), 7 + 21);
    assert_eq!(
        one(coin(0, p2pk(&keys[0].serialize()), 0, false)).len(),
        2 + 1 + 1 + 33
    );
    assert_eq!(
        one(coin(0, p2pk(&keys[0].serialize_uncompressed()), 0, false)).len(),
        2 + 1 + 1 + 33
    );

    // Over MAX_SCRIPT_SIZE: Core reads past it and keeps OP_RETURN.
    let big = vec![coin(5, vec![0x51; 10_001], 9, false)];
    let decoded = parse_core_block_undo(&encode_core_block_undo(&[big])).unwrap();
    assert_eq!(decoded, [vec![coin(5, vec![0x6a], 9, false)]]);

    // A key that is not on the curve in the compressed uncompressed-key form is an error.
    let mut bad = one(coin(0, p2pk(&keys[0].serialize_uncompressed()), 0, false));
    let x_at = 5; // counts, height code, amount, script code
    assert!(bad[x_at - 1] == 4 || bad[x_at - 1] == 5);
    bad[x_at..x_at + 32].copy_from_slice(&[0xff; 32]); // x above p
    let err = parse_core_block_undo(&bad).unwrap_err().to_string();
    assert!(
        err.contains("not on the curve") && err.contains("CTxUndo 0"),
        "{err}"
    );

    // Counts beyond the data are refused before any allocation.
    let err = parse_core_block_undo(&[0xfe, 0xff, 0xff, 0xff, 0x01])
        .unwrap_err()
        .to_string();
    assert!(err.contains("exceeds") || err.contains("limit"), "{err}");
}

#[test]
fn network_magics() {
    assert_eq!(network_magic("main"), Some([0xf9, 0xbe, 0xb4, 0xd9]));
    assert_eq!(network_magic("test"), Some([0x0b, 0x11, 0x09, 0x07]));
    assert_eq!(network_magic("testnet4"), Some([0x1c, 0x16, 0x3f, 0x28]));
    assert_eq!(network_magic("signet"), Some([0x0a, 0x03, 0xcf, 0x40]));
    assert_eq!(network_magic("regtest"), Some([0xfa, 0xbf, 0xb5, 0xda]));
    assert_eq!(network_magic("nope"), None);
}

/// A fresh directory under the system temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!(
            "batchcrypt-blocks-{}-{tag}-{:?}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const MAGIC: [u8; 4] = [0xfa, 0xbf, 0xb5, 0xda];

/// A blk or rev file: records of magic, size, payload (and trailer), obfuscated with `key`, then
/// preallocated zeros as Core leaves them (not obfuscated).
fn write_records(path: &Path, records: &[(Vec<u8>, Vec<u8>)], key: Option<[u8; 8]>) {
    let mut f = Vec::new();
    for (payload, trailer) in records {
        f.extend_from_slice(&MAGIC);
        f.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        f.extend_from_slice(payload);
        f.extend_from_slice(trailer);
    }
    if let Some(k) = key {
        for (i, b) in f.iter_mut().enumerate() {
            *b ^= k[i % 8];
        }
    }
    f.resize(f.len() + 4096, 0);
    std::fs::write(path, f).unwrap();
}

/// The test blocks in two blk files (5 + 3), their undo in the rev files of the same numbers in
/// reverse order; returns, per block, the spent outputs with the heights given to them.
fn write_blocks_dir(dir: &Path, pairs: &[Pair], key: Option<[u8; 8]>) -> Vec<Vec<SpentOutput>> {
    if let Some(k) = key {
        std::fs::write(dir.join("xor.dat"), k).unwrap();
    }
    let mut expected = Vec::new();
    for (file, range) in [(0, 0..5), (1, 5..pairs.len())] {
        let mut blk = Vec::new();
        let mut rev = Vec::new();
        for (b, (_, raw, undo)) in pairs[range].iter().enumerate() {
            let block = parse_block(raw).unwrap();
            let spent: Vec<SpentOutput> = parse_bcoin_undo(undo)
                .unwrap()
                .into_iter()
                .enumerate()
                .map(|(i, s)| SpentOutput {
                    height: Some(1000 * b as u32 + i as u32),
                    coinbase: Some(i % 3 == 0),
                    ..s
                })
                .collect();
            let payload = encode_core_block_undo(&group_by_tx(&block, &spent));
            let prev = &block.header[4..36];
            let checksum = digest_double(&[prev, &payload[..]].concat());
            blk.push((raw.clone(), Vec::new()));
            rev.push((payload, checksum.to_vec()));
            expected.push(spent);
        }
        rev.reverse();
        write_records(&dir.join(format!("blk{file:05}.dat")), &blk, key);
        write_records(&dir.join(format!("rev{file:05}.dat")), &rev, key);
    }
    expected
}

fn check_blocks_dir(tag: &str, key: Option<[u8; 8]>) {
    let Some(pairs) = undo_pairs() else { return };
    let tmp = TempDir::new(tag);
    let expected = write_blocks_dir(&tmp.0, &pairs, key);
    let dir = BlocksDir::open(&tmp.0, MAGIC).unwrap();
    assert_eq!(dir.xor_key(), key.unwrap_or([0; 8]));

    let blocks = dir.read_blocks().unwrap();
    assert_eq!(blocks.len(), pairs.len());
    let mut offset = 8u64;
    for (i, ((file, at, raw), (_, want, _))) in blocks.iter().zip(&pairs).enumerate() {
        if i == 5 {
            offset = 8;
        }
        assert_eq!((*file, *at), (u32::from(i >= 5), offset));
        assert_eq!(raw, want);
        offset += raw.len() as u64 + 8;
    }

    let index = dir.undo_index().unwrap();
    assert_eq!(index.len(), pairs.len());
    for ((_, raw, _), want) in pairs.iter().zip(&expected) {
        let block = parse_block(raw).unwrap();
        let location = index.get(&block.hash()).unwrap();
        let undo = dir.read_undo(location).unwrap();
        assert_eq!(&flatten_block_undo(&block, undo).unwrap(), want);
    }
    // One block on its own, found by scanning.
    let last = parse_block(&pairs[7].1).unwrap();
    let undo = dir.spent_outputs_for(&last).unwrap().unwrap();
    assert_eq!(
        flatten_block_undo(&last, undo.clone()).unwrap(),
        expected[7]
    );

    // Counts that do not fit the block are errors.
    let first = parse_block(&pairs[0].1).unwrap();
    let err = flatten_block_undo(&first, undo).unwrap_err().to_string();
    assert!(err.contains("transactions after the coinbase"), "{err}");

    // A block whose parent has no undo record here.
    let mut orphan = pairs[1].1.clone();
    orphan[4] ^= 1;
    assert!(dir
        .spent_outputs_for(&parse_block(&orphan).unwrap())
        .unwrap()
        .is_none());

    // The wrong network's magic is an error that says where.
    let main = BlocksDir::open(&tmp.0, network_magic("main").unwrap()).unwrap();
    let err = main.read_blocks().unwrap_err().to_string();
    assert!(
        err.contains("blk00000.dat") && err.contains("wrong magic") && err.contains("offset 0"),
        "{err}"
    );
    assert!(main.undo_index().is_err());
}

#[test]
fn blocks_dir_without_obfuscation() {
    check_blocks_dir("plain", None);
}

#[test]
fn blocks_dir_with_xor_key() {
    check_blocks_dir(
        "xor",
        Some([0x5a, 0x13, 0xf0, 0x00, 0x01, 0x80, 0xc3, 0x7e]),
    );
}

#[test]
fn blocks_dir_errors() {
    let Some(pairs) = undo_pairs() else { return };
    let tmp = TempDir::new("errors");
    let (_, raw, _) = &pairs[1];
    // A record cut short (no preallocated zeros after it).
    let mut f = MAGIC.to_vec();
    f.extend_from_slice(&(raw.len() as u32).to_le_bytes());
    f.extend_from_slice(&raw[..raw.len() - 1]);
    std::fs::write(tmp.0.join("blk00000.dat"), &f).unwrap();
    let dir = BlocksDir::open(&tmp.0, MAGIC).unwrap();
    let err = dir.read_blocks().unwrap_err().to_string();
    assert!(err.contains("truncated record at offset 0"), "{err}");
    // A header cut short.
    std::fs::write(tmp.0.join("blk00000.dat"), &f[..6]).unwrap();
    let err = dir.read_blocks().unwrap_err().to_string();
    assert!(err.contains("truncated record header"), "{err}");
    // An empty or all-zero file holds no blocks.
    std::fs::write(tmp.0.join("blk00000.dat"), [0u8; 100]).unwrap();
    assert!(dir.read_blocks().unwrap().is_empty());
    // The iterator stops after an error.
    std::fs::write(tmp.0.join("blk00000.dat"), [1u8; 100]).unwrap();
    let mut it = dir.blocks();
    assert!(it.next().unwrap().is_err());
    assert!(it.next().is_none());
    // xor.dat must hold 8 bytes.
    std::fs::write(tmp.0.join("xor.dat"), [1u8; 7]).unwrap();
    assert!(BlocksDir::open(&tmp.0, MAGIC)
        .unwrap_err()
        .to_string()
        .contains("xor.dat"));
}

/// Blocks with only a coinbase all have the same undo payload (no CTxUndo): only the checksum,
/// through the parent's hash, tells their records apart. A chain of such blocks, the records
/// mostly in chain order (the fast path) with two out of place.
#[test]
fn undo_index_tells_identical_records_apart() {
    let tmp = TempDir::new("chain");
    let mut headers = Vec::new();
    let mut prev = [0u8; 32];
    for i in 0..50u32 {
        let mut h = [0u8; 80];
        h[..4].copy_from_slice(&1u32.to_le_bytes());
        h[4..36].copy_from_slice(&prev);
        h[76..80].copy_from_slice(&i.to_le_bytes());
        prev = digest_double(&h);
        headers.push(h);
    }
    // Only what the index reads: a header and a transaction count of one.
    let blk: Vec<(Vec<u8>, Vec<u8>)> = headers
        .iter()
        .map(|h| ([&h[..], &[1]].concat(), Vec::new()))
        .collect();
    let mut order: Vec<usize> = (0..50).collect();
    order.swap(3, 40);
    order.swap(10, 11);
    let rev: Vec<(Vec<u8>, Vec<u8>)> = order
        .iter()
        .map(|&i| {
            (
                vec![0],
                digest_double(&[&headers[i][4..36], &[0]].concat()).to_vec(),
            )
        })
        .collect();
    write_records(&tmp.0.join("blk00000.dat"), &blk, None);
    write_records(&tmp.0.join("rev00000.dat"), &rev, None);

    let dir = BlocksDir::open(&tmp.0, MAGIC).unwrap();
    let index = dir.undo_index().unwrap();
    assert_eq!(index.len(), 50);
    for (k, &i) in order.iter().enumerate() {
        let loc = index.get(&digest_double(&headers[i])).unwrap();
        assert_eq!(
            (loc.file, loc.offset, loc.len),
            (0, 8 + 41 * k as u64, 1),
            "block {i}"
        );
        assert!(dir.read_undo(loc).unwrap().is_empty());
    }
}

/// A block of one coinbase transaction whose script states `height` (BIP34), on `prev`.
fn block_on(prev: &[u8; 32], height: u32, tag: u8) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend(1u32.to_le_bytes());
    b.extend(prev);
    b.extend([tag; 32]); // merkle root: not checked by the store; tells a fork's blocks apart
    b.extend([0u8; 12]);
    b.push(1); // one transaction
    b.extend(1u32.to_le_bytes());
    b.push(1);
    b.extend([0u8; 32]);
    b.extend(u32::MAX.to_le_bytes());
    let h = height.to_le_bytes();
    b.extend([5, 4, h[0], h[1], h[2], h[3]]); // the height pushed as a 4-byte number
    b.extend(u32::MAX.to_le_bytes());
    b.push(1);
    b.extend(0u64.to_le_bytes());
    b.push(0);
    b.extend(0u32.to_le_bytes());
    b
}

fn header_hash(raw: &[u8]) -> [u8; 32] {
    digest_double(&raw[..80])
}

/// The chain order of a directory whose blocks lie out of order over two files, with a shorter
/// fork; heights from genesis, or from the first block's coinbase where the start is pruned;
/// ranges by height.
#[test]
fn chain_orders_blocks_by_parent_links() {
    // 30 blocks from a genesis block, and a fork of 2 blocks on block 10.
    let mut main: Vec<Vec<u8>> = vec![block_on(&[0; 32], 0, 0)];
    for h in 1..30 {
        main.push(block_on(&header_hash(&main[h - 1]), h as u32, 0));
    }
    let fork1 = block_on(&header_hash(&main[10]), 11, 1);
    let fork2 = block_on(&header_hash(&fork1), 12, 1);
    let check = |tag: &str, first: usize| {
        let tmp = TempDir::new(tag);
        let mut stored: Vec<&Vec<u8>> = main[first..].iter().collect();
        stored.swap(2, 17);
        stored.swap(0, 9);
        stored.insert(5, &fork2);
        stored.insert(12, &fork1);
        let recs: Vec<(Vec<u8>, Vec<u8>)> = stored.iter().map(|b| ((*b).clone(), vec![])).collect();
        write_records(&tmp.0.join("blk00000.dat"), &recs[..11], Some([7; 8]));
        write_records(&tmp.0.join("blk00003.dat"), &recs[11..], Some([7; 8]));
        std::fs::write(tmp.0.join("xor.dat"), [7u8; 8]).unwrap();
        let dir = BlocksDir::open(&tmp.0, MAGIC).unwrap();
        let chain = dir.chain().unwrap();
        assert_eq!(chain.len(), 30 - first, "{tag}");
        for (i, b) in chain.iter().enumerate() {
            let h = first + i;
            assert_eq!(b.hash, header_hash(&main[h]), "{tag} {h}");
            assert_eq!(b.height, Some(h as u32));
            assert_eq!(&dir.read_block(b).unwrap(), &main[h]);
        }
        chain
    };
    let chain = check("genesis", 0);
    assert_eq!(chain_range(&chain, None, None).unwrap(), 1..30);
    assert_eq!(chain_range(&chain, Some(0), Some(2)).unwrap(), 0..2);
    assert_eq!(chain_range(&chain, Some(5), Some(3)).unwrap(), 5..8);
    assert_eq!(chain_range(&chain, Some(28), Some(10)).unwrap(), 28..30);
    assert_eq!(chain_range(&chain, Some(30), None).unwrap(), 30..30);
    let err = chain_range(&chain, Some(31), None).unwrap_err().to_string();
    assert!(err.contains("heights 0 to 29"), "{err}");

    // Pruned: the chain starts at block 12, whose coinbase says so.
    let chain = check("pruned", 12);
    assert_eq!(chain_range(&chain, None, Some(2)).unwrap(), 0..2);
    assert_eq!(chain_range(&chain, Some(20), Some(1)).unwrap(), 8..9);
    assert!(chain_range(&chain, Some(11), None).is_err());
    assert!(chain_range(&[], Some(3), None).unwrap().is_empty());
}

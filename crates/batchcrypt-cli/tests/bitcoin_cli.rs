//! `batchcrypt bitcoin ...` as a process: a valid block exits 0 and says VALID, a changed spent
//! script exits 1 naming the input, the regtest chain validates, and verify-tx answers one JSON
//! line per transaction.

use batchcrypt_testdata::shared_folder;
use std::process::{Command, Output, Stdio};

fn bin() -> Command {
    Command::new(
        std::env::var_os("BATCHCRYPT_BIN")
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_batchcrypt").into()),
    )
}

fn out(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn verify_block_valid_and_invalid() {
    let Some(d) = shared_folder("bitcoin/blocks") else {
        return;
    };
    let o = bin()
        .args(["bitcoin", "verify-block"])
        .arg(d.join("testnet3-1087400.raw"))
        .arg("--spent")
        .arg(d.join("testnet3-1087400.undo"))
        .args(["--network", "test"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", out(&o));
    let text = out(&o);
    assert!(text.contains("verdict    VALID"), "{text}");
    assert!(text.contains("sigop cost 1298"), "{text}");

    // The first record's script changed in its middle: tx 1, input 0 fails.
    let mut undo = std::fs::read(d.join("testnet3-1087400.undo")).unwrap();
    let len = undo[8] as usize;
    undo[9 + len / 2] ^= 1;
    let tmp = std::env::temp_dir().join(format!("bc-btc-cli-{}.undo", std::process::id()));
    std::fs::write(&tmp, &undo).unwrap();
    let o = bin()
        .args(["bitcoin", "verify-block"])
        .arg(d.join("testnet3-1087400.raw"))
        .arg("--spent")
        .arg(&tmp)
        .args(["--network", "test"])
        .output()
        .unwrap();
    std::fs::remove_file(&tmp).ok();
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert!(
        out(&o).contains("INVALID: mandatory-script-verify-flag-failed"),
        "{}",
        out(&o)
    );
    assert!(out(&o).contains("(transaction 1, input 0)"), "{}", out(&o));

    // A spent-output file of another block is a clear error, not a verdict.
    let o = bin()
        .args(["bitcoin", "verify-block"])
        .arg(d.join("testnet3-1087400.raw"))
        .arg("--spent")
        .arg(d.join("testnet3-928816.undo"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        out(&o).contains("is it the data of this block?"),
        "{}",
        out(&o)
    );
}

#[test]
fn verify_chain_regtest() {
    let Some(d) = shared_folder("bitcoin/blocks") else {
        return;
    };
    let o = bin()
        .args([
            "bitcoin",
            "verify-chain",
            "--network",
            "regtest",
            "--quiet",
            "--window",
            "50",
            "--hex",
        ])
        .arg(d.join("regtest-chain-206.hex"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", out(&o));
    assert!(out(&o).contains("VALID: 206 blocks"), "{}", out(&o));
}

#[test]
fn verify_tx_json_lines() {
    // A P2PKH spend from Core's tx_valid data is too long to inline; use a segwit-free case:
    // an anyone-can-spend output (OP_1) spent by an empty scriptSig, then the same with OP_0.
    let tx = "0100000001000000000000000000000000000000000000000000000000000000000000000001000000000000000001e803000000000000015100000000";
    let lines = format!(
        "{{\"tx\":\"{tx}\",\"spent\":[{{\"value\":2000,\"script_pubkey\":\"51\"}}]}}\n\
         {{\"tx\":\"{tx}\",\"spent\":[{{\"value\":2000,\"script_pubkey\":\"00\"}}],\"flags\":\"P2SH\"}}\n\
         {{\"tx\":\"{tx}\",\"spent\":[{{\"value\":10,\"script_pubkey\":\"51\"}}]}}\n\
         {{\"tx\":\"{tx}\",\"spent\":[{{\"value\":2000,\"script_pubkey\":\"51\",\"height\":150,\"coinbase\":true}}],\"next_height\":200,\"tip_mtp\":1700000000}}\n\
         {{\"tx\":\"{tx}\",\"spent\":[{{\"value\":2000,\"script_pubkey\":\"51\",\"height\":150,\"coinbase\":true}}],\"next_height\":250,\"tip_mtp\":1700000000}}\n"
    );
    let o = verify_tx(&lines);
    assert!(o.status.success(), "{}", out(&o));
    let v: Vec<serde_json::Value> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(v.len(), 5);
    assert_eq!(v[0]["valid"], true, "{v:?}");
    assert_eq!(v[1]["valid"], false);
    assert_eq!(v[1]["input"], 0);
    assert_eq!(v[1]["reason"], "script failed: EVAL_FALSE");
    assert_eq!(v[2]["reason"], "bad-txns-in-belowout");
    // Against the chain: a coinbase output 50 blocks old is not yet spendable, 100 blocks old is.
    assert_eq!(v[3]["reason"], "bad-txns-premature-spend-of-coinbase");
    assert_eq!(v[4]["valid"], true, "{v:?}");
    // A bad flag name is an error that says which names exist; a tip half given says what to give.
    for (line, says) in [
        (
            format!("{{\"tx\":\"{tx}\",\"spent\":[],\"flags\":\"P2SH,NOPE\"}}\n"),
            "unknown script flag \"NOPE\"",
        ),
        (
            format!("{{\"tx\":\"{tx}\",\"spent\":[],\"next_height\":200}}\n"),
            "give both (the chain's tip known) or neither",
        ),
    ] {
        let o = verify_tx(&line);
        assert!(!o.status.success());
        assert!(out(&o).contains(says), "{}", out(&o));
    }
}

/// `batchcrypt bitcoin verify-tx` given `lines` on its standard input.
fn verify_tx(lines: &str) -> Output {
    use std::io::Write;
    let mut child = bin()
        .args(["bitcoin", "verify-tx", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(lines.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// The regtest genesis block (mainnet's with regtest's time, bits and nonce).
fn regtest_genesis() -> Vec<u8> {
    hex::decode(concat!(
        "0100000000000000000000000000000000000000000000000000000000000000000000003ba3edfd7a7b12b27ac72c3e",
        "67768f617fc81bc3888a51323a9fb8aa4b1e5e4adae5494dffff7f20020000000101000000010000000000000000000000",
        "000000000000000000000000000000000000000000ffffffff4d04ffff001d0104455468652054696d65732030332f4a61",
        "6e2f32303039204368616e63656c6c6f72206f6e206272696e6b206f66207365636f6e64206261696c6f757420666f72",
        "2062616e6b73ffffffff0100f2052a01000000434104678afdb0fe5548271967f1a67130b7105cd6a828e03909a67962",
        "e0ea1f61deb649f6bc3f4cef38c4f35504e51ec112de5c384df7ba0b8d578a4c702b6bf11d5fac00000000"
    ))
    .unwrap()
}

/// Records of magic, size, payload (and a trailer), XORed with `key` by file offset.
fn write_records(path: &std::path::Path, records: &[(Vec<u8>, Vec<u8>)], key: [u8; 8]) {
    let mut f = Vec::new();
    for (payload, trailer) in records {
        f.extend([0xfa, 0xbf, 0xb5, 0xda]);
        f.extend((payload.len() as u32).to_le_bytes());
        f.extend(payload);
        f.extend(trailer);
    }
    for (i, b) in f.iter_mut().enumerate() {
        *b ^= key[i % 8];
    }
    std::fs::write(path, f).unwrap();
}

#[test]
fn verify_chain_from_a_core_blocks_directory() {
    use batchcrypt::bitcoin::{parse_block, spent::encode_core_block_undo, OutPoint, SpentOutput};
    let Some(d) = shared_folder("bitcoin/blocks") else {
        return;
    };
    let text = std::fs::read_to_string(d.join("regtest-chain-206.hex")).unwrap();
    let mut raws = vec![regtest_genesis()];
    raws.extend(
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| hex::decode(l.trim()).unwrap()),
    );
    let genesis = parse_block(&raws[0]).unwrap();
    assert_eq!(
        batchcrypt::bitcoin::display_hash(&genesis.hash()),
        "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206"
    );
    // Each block's undo record (its spent coins per transaction) from a UTXO set kept here.
    let mut utxo: std::collections::HashMap<OutPoint, SpentOutput> = Default::default();
    let mut revs = Vec::new();
    for (h, raw) in raws.iter().enumerate() {
        let b = parse_block(raw).unwrap();
        let mut undo = Vec::new();
        for (t, tx) in b.txs.iter().enumerate() {
            if t > 0 {
                undo.push(
                    tx.inputs
                        .iter()
                        .map(|i| utxo.remove(&i.prevout).unwrap())
                        .collect::<Vec<_>>(),
                );
            }
            for (v, o) in tx.outputs.iter().enumerate() {
                let mut coin = SpentOutput::new(o.value, o.script_pubkey.to_vec());
                coin.height = Some(h as u32);
                coin.coinbase = Some(t == 0);
                utxo.insert(
                    OutPoint {
                        txid: tx.txid(),
                        vout: v as u32,
                    },
                    coin,
                );
            }
        }
        if h > 0 {
            let payload = encode_core_block_undo(&undo);
            let checksum =
                batchcrypt::sha256::digest_double(&[&b.header[4..36], &payload[..]].concat());
            revs.push((payload, checksum.to_vec()));
        }
    }
    let dir = std::env::temp_dir().join(format!("bc-btc-blocks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key = [0x5a, 0x11, 0, 0x80, 7, 0xff, 0x33, 0x01];
    std::fs::write(dir.join("xor.dat"), key).unwrap();
    // Blocks out of order across two files (as a node that downloaded them in parallel writes).
    let mut order: Vec<usize> = (0..raws.len()).collect();
    order.swap(3, 50);
    order.swap(100, 7);
    let recs: Vec<(Vec<u8>, Vec<u8>)> = order.iter().map(|&k| (raws[k].clone(), vec![])).collect();
    write_records(&dir.join("blk00000.dat"), &recs[..120], key);
    write_records(&dir.join("blk00001.dat"), &recs[120..], key);
    write_records(&dir.join("rev00000.dat"), &revs[..119], key);
    write_records(&dir.join("rev00001.dat"), &revs[119..], key);

    let run = |extra: &[&str]| {
        let o = bin()
            .args([
                "bitcoin",
                "verify-chain",
                "--network",
                "regtest",
                "--quiet",
                "--blocks-dir",
            ])
            .arg(&dir)
            .args(extra)
            .output()
            .unwrap();
        (o.status.success(), out(&o))
    };
    let (ok, text) = run(&[]);
    assert!(
        ok && text.contains("VALID: 206 blocks"),
        "UTXO mode: {text}"
    );
    let (ok, text) = run(&["--use-undo", "--window", "7"]);
    assert!(
        ok && text.contains("VALID: 206 blocks"),
        "undo mode: {text}"
    );
    let (ok, text) = run(&["--use-undo", "--from", "100", "--count", "10"]);
    assert!(
        ok && text.contains("VALID: 10 blocks") && text.contains("height 109"),
        "a range: {text}"
    );
    // --from alone takes the spent outputs from the undo records too.
    let (ok, text) = run(&["--from", "200"]);
    assert!(
        ok && text.contains("VALID: 7 blocks") && text.contains("height 206"),
        "a range to the tip: {text}"
    );
    let (ok, text) = run(&["--from", "300"]);
    assert!(
        !ok && text.contains("outside the directory's chain, heights 0 to 206"),
        "past the tip: {text}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

//! The script interpreter against Bitcoin Core's own test data: every script_tests.json case
//! gives its expected error, every tx_valid.json transaction verifies and every tx_invalid.json
//! one fails, and every taproot-era case of script_assets_dev.jsonl verifies with its success
//! witness and fails with its failure witness, under the consensus flag sets Core tries.

mod common;
use batchcrypt::bitcoin::checker::{CpuVerifier, TxChecker};
use batchcrypt::bitcoin::script::{asm, verify_script, Flags, ScriptError};
use batchcrypt::bitcoin::sighash::Precomputed;
use batchcrypt::bitcoin::validate::check_transaction;
use batchcrypt::bitcoin::{parse_tx, SpentOutput, Tx};
use serde_json::Value;

fn json(name: &str) -> Option<Value> {
    let raw = common::read_shared(name)?;
    Some(serde_json::from_slice(&raw).expect("valid JSON"))
}

/// Core's FillFlags: CLEANSTACK needs WITNESS, WITNESS needs P2SH.
fn fill_flags(f: Flags) -> Flags {
    let mut f = f;
    if f.has(Flags::CLEANSTACK) {
        f = f | Flags::WITNESS;
    }
    if f.has(Flags::WITNESS) {
        f = f | Flags::P2SH;
    }
    f
}

/// Core's TrimFlags: without P2SH no WITNESS, without WITNESS no CLEANSTACK.
fn trim_flags(f: Flags) -> Flags {
    let mut f = f;
    if !f.has(Flags::P2SH) {
        f = f - Flags::WITNESS;
    }
    if !f.has(Flags::WITNESS) {
        f = f - Flags::CLEANSTACK;
    }
    f
}

fn verify_input(tx: &Tx, spent: &[SpentOutput], i: usize, flags: Flags) -> Result<(), ScriptError> {
    let pre = Precomputed::new(tx, Some(spent));
    let mut checker = TxChecker::new(tx, i, spent[i].value, &pre, CpuVerifier);
    let input = &tx.inputs[i];
    verify_script(
        input.script_sig,
        &spent[i].script_pubkey,
        &input.witness,
        flags,
        &mut checker,
    )
}

fn write_tx(
    version: i32,
    ins: &[([u8; 32], u32, Vec<u8>, Vec<Vec<u8>>)],
    outs: &[(i64, Vec<u8>)],
) -> Vec<u8> {
    use batchcrypt::bitcoin::tx::write_compact_size as cs;
    let segwit = ins.iter().any(|i| !i.3.is_empty());
    let mut v = version.to_le_bytes().to_vec();
    if segwit {
        v.extend([0, 1]);
    }
    cs(&mut v, ins.len() as u64);
    for (txid, vout, script_sig, _) in ins {
        v.extend(txid);
        v.extend(vout.to_le_bytes());
        cs(&mut v, script_sig.len() as u64);
        v.extend(script_sig);
        v.extend(u32::MAX.to_le_bytes());
    }
    cs(&mut v, outs.len() as u64);
    for (value, spk) in outs {
        v.extend(value.to_le_bytes());
        cs(&mut v, spk.len() as u64);
        v.extend(spk);
    }
    if segwit {
        for (.., wit) in ins {
            cs(&mut v, wit.len() as u64);
            for w in wit {
                cs(&mut v, w.len() as u64);
                v.extend(w);
            }
        }
    }
    v.extend(0u32.to_le_bytes());
    v
}

/// The output key and control block of a one-leaf tree with internal key G (the secret key 1),
/// as Core's script_tests build `#TAPROOTOUTPUT#` and `#CONTROLBLOCK#`.
fn one_leaf_taproot(leaf_script: &[u8]) -> ([u8; 32], Vec<u8>) {
    use secp256k1::{Scalar, XOnlyPublicKey};
    let g: [u8; 32] =
        hex::decode("79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798")
            .unwrap()
            .try_into()
            .unwrap();
    let leaf = batchcrypt::bitcoin::script::tapleaf_hash(0xc0, leaf_script);
    let tweak = batchcrypt::bitcoin::sighash::tagged_hash("TapTweak", &[&g, &leaf]);
    let (q, parity) = XOnlyPublicKey::from_byte_array(g)
        .unwrap()
        .add_tweak(&Scalar::from_be_bytes(tweak).unwrap())
        .unwrap();
    let mut control = vec![0xc0 | parity.to_u8()];
    control.extend(g);
    (q.to_byte_array(), control)
}

#[test]
fn script_tests_json() {
    let Some(tests) = json("bitcoin/core/script_tests.json") else {
        return;
    };
    let (mut ran, mut failures) = (0, Vec::new());
    for case in tests.as_array().unwrap() {
        let case = case.as_array().unwrap();
        let mut pos = 0;
        let mut witness: Vec<Vec<u8>> = Vec::new();
        let mut amount = 0i64;
        let mut leaf: Option<Vec<u8>> = None;
        if let Some(w) = case[0].as_array() {
            for item in &w[..w.len() - 1] {
                let s = item.as_str().unwrap();
                if let Some(script) = s.strip_prefix("#SCRIPT#") {
                    witness.push(asm::parse(script).unwrap());
                } else if s == "#CONTROLBLOCK#" {
                    leaf = witness.last().cloned();
                    witness.push(one_leaf_taproot(witness.last().unwrap()).1);
                } else {
                    witness.push(hex::decode(s).unwrap());
                }
            }
            amount = (w[w.len() - 1].as_f64().unwrap() * 1e8).round() as i64;
            pos = 1;
        }
        if case.len() < 4 + pos {
            assert_eq!(case.len(), 1, "bad test {case:?}");
            continue;
        }
        let script_sig = asm::parse(case[pos].as_str().unwrap()).unwrap();
        let spk_text = case[pos + 1].as_str().unwrap();
        // `#TAPROOTOUTPUT#` stands for the output key of the one-leaf tree of the last witness item.
        let spk = match spk_text.split_once("#TAPROOTOUTPUT#") {
            Some((head, tail)) => {
                let mut s = asm::parse(head).unwrap();
                s.extend(one_leaf_taproot(leaf.as_ref().expect("a #CONTROLBLOCK# first")).0);
                s.extend(asm::parse(tail).unwrap());
                s
            }
            None => asm::parse(spk_text).unwrap(),
        };
        let flags = Flags::parse(case[pos + 2].as_str().unwrap()).unwrap();
        let flags = if flags.has(Flags::CLEANSTACK) {
            fill_flags(flags)
        } else {
            flags
        };
        let want = case[pos + 3].as_str().unwrap();

        // Core's crediting and spending transactions.
        let credit = write_tx(
            1,
            &[([0; 32], u32::MAX, vec![0, 0], vec![])],
            &[(amount, spk.clone())],
        );
        let credit_txid = parse_tx(&credit).unwrap().txid();
        let spend = write_tx(
            1,
            &[(credit_txid, 0, script_sig.clone(), witness.clone())],
            &[(amount, vec![])],
        );
        let tx = parse_tx(&spend).unwrap();
        let spent = [SpentOutput::new(amount, spk)];
        let got = verify_input(&tx, &spent, 0, flags)
            .err()
            .unwrap_or(ScriptError::Ok);
        ran += 1;
        if got.name() != want {
            failures.push(format!("got {got}, want {want}: {case:?}"));
        }
    }
    assert!(ran > 1000, "only {ran} cases");
    assert!(
        failures.is_empty(),
        "{} of {ran} script_tests cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

struct TxCase {
    tx_hex: String,
    prevouts: Vec<(([u8; 32], u32), Vec<u8>, i64)>,
    flags: String,
}

fn tx_cases(name: &str) -> Vec<TxCase> {
    let Some(tests) = json(name) else {
        return vec![];
    };
    let mut out = Vec::new();
    for case in tests.as_array().unwrap() {
        let case = case.as_array().unwrap();
        let Some(inputs) = case[0].as_array() else {
            continue;
        };
        let prevouts = inputs
            .iter()
            .map(|i| {
                let i = i.as_array().unwrap();
                let mut txid: [u8; 32] = hex::decode(i[0].as_str().unwrap())
                    .unwrap()
                    .try_into()
                    .unwrap();
                txid.reverse();
                let vout = i[1].as_i64().unwrap() as u32;
                let spk = asm::parse(i[2].as_str().unwrap()).unwrap();
                let amount = i.get(3).map_or(0, |v| v.as_i64().unwrap());
                ((txid, vout), spk, amount)
            })
            .collect();
        out.push(TxCase {
            tx_hex: case[1].as_str().unwrap().to_string(),
            prevouts,
            flags: case[2].as_str().unwrap().to_string(),
        });
    }
    out
}

/// Each input's scripts under `flags`: the first failure, or Ok.
fn run_tx(case: &TxCase, tx: &Tx, flags: Flags) -> Result<(), (usize, ScriptError)> {
    let spent: Vec<SpentOutput> = tx
        .inputs
        .iter()
        .map(|i| {
            let (_, spk, amount) = case
                .prevouts
                .iter()
                .find(|(op, ..)| *op == (i.prevout.txid, i.prevout.vout))
                .expect("prevout listed");
            SpentOutput::new(*amount, spk.clone())
        })
        .collect();
    for i in 0..tx.inputs.len() {
        verify_input(tx, &spent, i, flags).map_err(|e| (i, e))?;
    }
    Ok(())
}

#[test]
fn tx_valid_json() {
    let cases = tx_cases("bitcoin/core/tx_valid.json");
    let mut failures = Vec::new();
    for case in &cases {
        let raw = hex::decode(&case.tx_hex).unwrap();
        let tx = parse_tx(&raw).unwrap();
        assert_eq!(check_transaction(&tx), Ok(()), "{}", case.tx_hex);
        let excluded = Flags::parse(&case.flags).unwrap();
        let flags = Flags::ALL - excluded;
        assert_eq!(fill_flags(flags), flags, "bad test flags {}", case.flags);
        if let Err(e) = run_tx(case, &tx, flags) {
            failures.push(format!("{e:?} excluded {}: {}", case.flags, case.tx_hex));
        }
        // Removing flags never invalidates a valid transaction: try each single removal.
        for bit in 0..21 {
            let fewer = trim_flags(flags - Flags(1 << bit));
            if let Err(e) = run_tx(case, &tx, fewer) {
                failures.push(format!("{e:?} without bit {bit}: {}", case.tx_hex));
            }
        }
    }
    assert!(cases.is_empty() || cases.len() > 100);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn tx_invalid_json() {
    let cases = tx_cases("bitcoin/core/tx_invalid.json");
    let mut failures = Vec::new();
    for case in &cases {
        let raw = hex::decode(&case.tx_hex).unwrap();
        let tx = match parse_tx(&raw) {
            Ok(tx) => tx,
            Err(e) => {
                // Core's deserializer throws too; the case must then be BADTX.
                if case.flags != "BADTX" {
                    failures.push(format!("unparsable ({e}) but not BADTX: {}", case.tx_hex));
                }
                continue;
            }
        };
        if check_transaction(&tx).is_err() {
            if case.flags != "BADTX" {
                failures.push(format!(
                    "CheckTransaction failed but not BADTX: {}",
                    case.tx_hex
                ));
            }
            continue;
        }
        if case.flags == "BADTX" {
            failures.push(format!("BADTX passed CheckTransaction: {}", case.tx_hex));
            continue;
        }
        let flags = Flags::parse(&case.flags).unwrap();
        if run_tx(case, &tx, flags).is_ok() {
            failures.push(format!("verified under {}: {}", case.flags, case.tx_hex));
        }
    }
    assert!(cases.is_empty() || cases.len() > 80);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Core's ALL_CONSENSUS_FLAGS: every combination of the consensus flags where WITNESS implies
/// P2SH and TAPROOT implies WITNESS.
fn consensus_flag_sets() -> Vec<Flags> {
    let bits = [
        Flags::P2SH,
        Flags::DERSIG,
        Flags::NULLDUMMY,
        Flags::CHECKLOCKTIMEVERIFY,
        Flags::CHECKSEQUENCEVERIFY,
        Flags::WITNESS,
        Flags::TAPROOT,
    ];
    (0..1u32 << bits.len())
        .map(|m| {
            bits.iter()
                .enumerate()
                .filter(|(i, _)| m >> i & 1 == 1)
                .fold(Flags::NONE, |a, (_, f)| a | *f)
        })
        .filter(|f| {
            (!f.has(Flags::WITNESS) || f.has(Flags::P2SH))
                && (!f.has(Flags::TAPROOT) || f.has(Flags::WITNESS))
        })
        .collect()
}

fn txout(hex_str: &str) -> SpentOutput {
    let b = hex::decode(hex_str).unwrap();
    let value = i64::from_le_bytes(b[..8].try_into().unwrap());
    // One-byte or 0xfd lengths are all the data holds.
    let (len, at) = if b[8] == 0xfd {
        (u16::from_le_bytes([b[9], b[10]]) as usize, 11)
    } else {
        (b[8] as usize, 9)
    };
    assert_eq!(b.len(), at + len);
    SpentOutput::new(value, b[at..].to_vec())
}

#[test]
fn script_assets() {
    let Some(raw) = common::read_shared("bitcoin/script-assets/script_assets_dev.jsonl") else {
        return;
    };
    let sets = consensus_flag_sets();
    let (mut cases, mut failures) = (0, Vec::new());
    for line in std::str::from_utf8(&raw)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
    {
        let t: Value = serde_json::from_str(line).unwrap();
        let tx_raw = hex::decode(t["tx"].as_str().unwrap()).unwrap();
        let spent: Vec<SpentOutput> = t["prevouts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| txout(p.as_str().unwrap()))
            .collect();
        let idx = t["index"].as_u64().unwrap() as usize;
        let test_flags = Flags::parse(t["flags"].as_str().unwrap()).unwrap();
        let fin = t.get("final").and_then(Value::as_bool).unwrap_or(false);
        let comment = t["comment"].as_str().unwrap_or("");
        cases += 1;
        for (which, expect) in [("success", true), ("failure", false)] {
            let Some(w) = t.get(which) else { continue };
            let script_sig = hex::decode(w["scriptSig"].as_str().unwrap()).unwrap();
            let witness: Vec<Vec<u8>> = w["witness"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| hex::decode(x.as_str().unwrap()).unwrap())
                .collect();
            // The case's transaction with this input's scriptSig and witness put in.
            let v = rebuild(&parse_tx(&tx_raw).unwrap(), idx, &script_sig, &witness);
            let tx = parse_tx(&v).unwrap();
            for &flags in &sets {
                let applies = if expect {
                    fin || flags.0 & test_flags.0 == flags.0
                } else {
                    flags.0 & test_flags.0 == test_flags.0
                };
                if !applies {
                    continue;
                }
                let got = verify_input(&tx, &spent, idx, flags);
                if got.is_ok() != expect {
                    failures.push(format!(
                        "{which} under {}: got {got:?} ({comment})",
                        flags.names()
                    ));
                    break;
                }
            }
        }
    }
    assert!(cases == 0 || cases > 1000, "only {cases} cases");
    assert!(
        failures.is_empty(),
        "{} of {cases} cases differ:\n{}",
        failures.len(),
        failures[..failures.len().min(40)].join("\n")
    );
}

/// The taproot-era cases through the batch path (`batch::verify_scripts`): every success witness
/// verifies and every failure witness fails under the case's own flags, the ECDSA and BIP340
/// checks of all cases in one batch, on every backend.
#[test]
fn script_assets_as_one_batch() {
    use batchcrypt::bitcoin::batch::{verify_scripts, TxJob};
    let Some(raw) = common::read_shared("bitcoin/script-assets/script_assets_dev.jsonl") else {
        return;
    };
    let mut cases = Vec::new(); // (tx bytes, spent, input, flags, expected)
    for line in std::str::from_utf8(&raw)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
    {
        let t: Value = serde_json::from_str(line).unwrap();
        let base_raw = hex::decode(t["tx"].as_str().unwrap()).unwrap();
        let base = parse_tx(&base_raw).unwrap();
        let spent: Vec<SpentOutput> = t["prevouts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| txout(p.as_str().unwrap()))
            .collect();
        let idx = t["index"].as_u64().unwrap() as usize;
        let flags = Flags::parse(t["flags"].as_str().unwrap()).unwrap();
        for (which, ok) in [("success", true), ("failure", false)] {
            let Some(w) = t.get(which) else { continue };
            let script_sig = hex::decode(w["scriptSig"].as_str().unwrap()).unwrap();
            let witness: Vec<Vec<u8>> = w["witness"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| hex::decode(x.as_str().unwrap()).unwrap())
                .collect();
            cases.push((
                rebuild(&base, idx, &script_sig, &witness),
                spent.clone(),
                idx,
                flags,
                ok,
            ));
        }
    }
    if cases.is_empty() {
        return;
    }
    let txs: Vec<Tx> = cases.iter().map(|c| parse_tx(&c.0).unwrap()).collect();
    let jobs: Vec<TxJob> = txs
        .iter()
        .zip(&cases)
        .map(|(tx, c)| TxJob {
            tx,
            spent: &c.1,
            flags: c.3,
        })
        .collect();
    // Where each case's input lands among all inputs.
    let mut at = Vec::new();
    let mut n = 0;
    for (tx, c) in txs.iter().zip(&cases) {
        at.push(n + c.2);
        n += tx.inputs.len();
    }
    for b in common::backends(batchcrypt::Primitive::Secp256k1) {
        let report = verify_scripts(&common::engine(b), &jobs).unwrap();
        assert!(
            report.schnorr_checks > 100,
            "BIP340 checks batched: {}",
            report.schnorr_checks
        );
        let wrong: Vec<String> = cases
            .iter()
            .zip(&at)
            .filter(|(c, &k)| report.input_verdicts[k].is_ok() != c.4)
            .map(|(c, &k)| format!("expected {} got {:?}", c.4, report.input_verdicts[k]))
            .collect();
        assert!(
            wrong.is_empty(),
            "{} of {} cases differ on {b}: {:?}",
            wrong.len(),
            cases.len(),
            &wrong[..wrong.len().min(5)]
        );
    }
}

/// `base` with input `idx`'s scriptSig and witness replaced.
fn rebuild(base: &Tx, idx: usize, script_sig: &[u8], witness: &[Vec<u8>]) -> Vec<u8> {
    use batchcrypt::bitcoin::tx::write_compact_size as cs;
    let ins: Vec<(batchcrypt::bitcoin::OutPoint, u32, Vec<u8>, Vec<Vec<u8>>)> = base
        .inputs
        .iter()
        .enumerate()
        .map(|(i, inp)| {
            if i == idx {
                (
                    inp.prevout,
                    inp.sequence,
                    script_sig.to_vec(),
                    witness.to_vec(),
                )
            } else {
                (
                    inp.prevout,
                    inp.sequence,
                    inp.script_sig.to_vec(),
                    inp.witness.iter().map(|x| x.to_vec()).collect(),
                )
            }
        })
        .collect();
    let segwit = ins.iter().any(|i| !i.3.is_empty());
    let mut v = base.version.to_le_bytes().to_vec();
    if segwit {
        v.extend([0, 1]);
    }
    cs(&mut v, ins.len() as u64);
    for (op, seq, ss, _) in &ins {
        v.extend(op.txid);
        v.extend(op.vout.to_le_bytes());
        cs(&mut v, ss.len() as u64);
        v.extend(ss);
        v.extend(seq.to_le_bytes());
    }
    cs(&mut v, base.outputs.len() as u64);
    for o in &base.outputs {
        v.extend(o.value.to_le_bytes());
        cs(&mut v, o.script_pubkey.len() as u64);
        v.extend(o.script_pubkey);
    }
    if segwit {
        for (.., wit) in &ins {
            cs(&mut v, wit.len() as u64);
            for x in wit {
                cs(&mut v, x.len() as u64);
                v.extend(x);
            }
        }
    }
    v.extend(base.lock_time.to_le_bytes());
    v
}

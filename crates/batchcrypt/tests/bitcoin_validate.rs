//! Real blocks validated end to end on every backend: each is valid, its sigop cost and weight
//! are the published totals, and it is refused, with the failing input named, after a one-bit
//! change to a signature, to an amount a signature covers, or to a spent script.

mod common;
use batchcrypt::bitcoin::block::{spent_per_tx, verify_block, BlockContext, BlockReport};
use batchcrypt::bitcoin::script::Flags;
use batchcrypt::bitcoin::spent::read_spent_file;
use batchcrypt::bitcoin::validate::sigop_cost;
use batchcrypt::bitcoin::validate::{Network, PrevMedianTime};
use batchcrypt::bitcoin::{parse_block, script, SpentOutput};
use batchcrypt::{BackendChoice, Engine, Primitive};

struct Case {
    name: &'static str,
    network: Network,
    spent_ext: &'static str,
    /// (sigop cost, weight) from the data's README, where published.
    totals: Option<(u64, u64)>,
}

const CASES: &[Case] = &[
    Case {
        name: "mainnet-300025",
        network: Network::Main,
        spent_ext: "undo",
        totals: None,
    },
    Case {
        name: "mainnet-367891",
        network: Network::Main,
        spent_ext: "spent.json",
        totals: None,
    },
    Case {
        name: "testnet3-928816",
        network: Network::Test,
        spent_ext: "undo",
        totals: Some((9_109, 3_568_200)),
    },
    Case {
        name: "testnet3-928828",
        network: Network::Test,
        spent_ext: "undo",
        totals: Some((23_236, 2_481_560)),
    },
    Case {
        name: "testnet3-928831",
        network: Network::Test,
        spent_ext: "undo",
        totals: Some((10_035, 3_992_382)),
    },
    Case {
        name: "testnet3-928848",
        network: Network::Test,
        spent_ext: "undo",
        totals: Some((11_319, 3_992_537)),
    },
    Case {
        name: "testnet3-928849",
        network: Network::Test,
        spent_ext: "undo",
        totals: Some((9_137, 3_682_105)),
    },
    Case {
        name: "testnet3-928927",
        network: Network::Test,
        spent_ext: "undo",
        totals: Some((10_015, 3_992_391)),
    },
    Case {
        name: "testnet3-1087400",
        network: Network::Test,
        spent_ext: "undo",
        totals: Some((1_298, 193_331)),
    },
];

fn load(c: &Case) -> Option<(Vec<u8>, Vec<SpentOutput>)> {
    let raw = common::read_shared(&format!("bitcoin/blocks/{}.raw", c.name))?;
    let path = common::shared_data(&format!("bitcoin/blocks/{}.{}", c.name, c.spent_ext))?;
    let block = parse_block(&raw).unwrap();
    let spent = read_spent_file(&path, &block).unwrap();
    Some((raw, spent))
}

fn validate(
    engine: &Engine,
    raw: &[u8],
    spent: &[SpentOutput],
    net: Network,
    pow: bool,
) -> BlockReport {
    let block = parse_block(raw).unwrap();
    let ctx = BlockContext {
        network: net,
        height: None,
        times: &PrevMedianTime(None),
        check_pow: pow,
    };
    verify_block(engine, &block, spent, &ctx).unwrap()
}

#[test]
fn real_blocks_are_valid_on_every_backend() {
    for b in common::backends(Primitive::Secp256k1) {
        // The signature backend named; everything else follows from it (CPU or GPU).
        let engine = Engine::with_backend(if b == batchcrypt::Backend::Cuda {
            BackendChoice::Gpu
        } else {
            BackendChoice::Cpu
        });
        for c in CASES {
            let Some((raw, spent)) = load(c) else {
                continue;
            };
            let r = validate(&engine, &raw, &spent, c.network, true);
            assert_eq!(r.verdict, Ok(()), "{} on {b}", c.name);
            if let Some((cost, weight)) = c.totals {
                assert_eq!(
                    (r.sigop_cost, r.weight),
                    (cost, weight),
                    "{} sigop cost and weight",
                    c.name
                );
            }
            let s = r.scripts.as_ref().unwrap();
            assert_eq!(
                s.inputs,
                r.inputs - 1,
                "{}: every non-coinbase input's scripts ran",
                c.name
            );
            for backend in [s.ecdsa_backend, s.schnorr_backend].into_iter().flatten() {
                assert_eq!(
                    backend, b,
                    "{}: the batch ran on the backend asked for",
                    c.name
                );
            }
        }
    }
}

#[test]
fn block_300025_totals() {
    let c = &CASES[0];
    let Some((raw, spent)) = load(c) else { return };
    let r = validate(
        &Engine::with_backend(batchcrypt::BackendChoice::Cpu),
        &raw,
        &spent,
        c.network,
        true,
    );
    assert_eq!(r.verdict, Ok(()));
    // bcoin's published 5,280 is the sigop cost of the transactions that spend (its test skips
    // the coinbase); Core's block total adds the coinbase's own P2PKH output: 4 more.
    let block = parse_block(&raw).unwrap();
    let per_tx = spent_per_tx(&block, &spent).unwrap();
    let flags = Flags::P2SH | Flags::WITNESS;
    let spending: u64 = block
        .txs
        .iter()
        .zip(&per_tx)
        .skip(1)
        .map(|(tx, s)| sigop_cost(tx, s, flags))
        .sum();
    assert_eq!(spending, 5_280);
    assert_eq!(r.sigop_cost, 5_280 + sigop_cost(&block.txs[0], &[], flags));
    assert_eq!(sigop_cost(&block.txs[0], &[], flags), 4);
    let block = parse_block(&raw).unwrap();
    let reward: i64 = block.txs[0].outputs.iter().map(|o| o.value).sum();
    assert_eq!(reward, 2_507_773_345);
    assert_eq!(r.fees + 25 * 100_000_000, reward);
}

/// The previous block's median time past, where the caller knows it: a header at or before it
/// is time-too-old (Core's ContextualCheckBlockHeader), one after it is checked as without it,
/// and the time rules it decides are not reported unchecked.
#[test]
fn a_known_median_time_past_decides_the_header_time() {
    use batchcrypt::bitcoin::validate::Unchecked;
    let c = &CASES[2];
    let Some((raw, spent)) = load(c) else { return };
    let engine = Engine::with_backend(BackendChoice::Cpu);
    let block = parse_block(&raw).unwrap();
    let time = batchcrypt::bitcoin::Header::parse(block.header).time as i64;
    let run = |mtp: i64| {
        let ctx = BlockContext {
            network: c.network,
            height: None,
            times: &PrevMedianTime(Some(mtp)),
            check_pow: true,
        };
        verify_block(&engine, &block, &spent, &ctx).unwrap()
    };
    for mtp in [time, time + 600] {
        let e = run(mtp).verdict.unwrap_err();
        assert!(
            e.reason.starts_with("time-too-old") && e.tx.is_none(),
            "{e}"
        );
    }
    let r = run(time - 1);
    assert_eq!(r.verdict, Ok(()));
    assert!(
        !r.unchecked.contains(&Unchecked::MedianTime),
        "{:?}",
        r.unchecked
    );
}

/// Recomputes the witness commitment and the merkle root after a change, so that only the
/// change itself can make the block invalid (the proof of work is then not checked).
fn reseal(raw: &[u8]) -> Vec<u8> {
    let block = parse_block(raw).unwrap();
    let mut out = raw.to_vec();
    let cb = &block.txs[0];
    if let Some(pos) = cb.outputs.iter().rposition(|o| {
        o.script_pubkey.len() >= 38 && o.script_pubkey[..6] == [0x6a, 0x24, 0xaa, 0x21, 0xa9, 0xed]
    }) {
        let mut leaves: Vec<[u8; 32]> = block.txs.iter().map(|t| t.wtxid()).collect();
        leaves[0] = [0; 32];
        let (root, _) = batchcrypt::bitcoin::validate::merkle_root(&leaves);
        let mut pre = root.to_vec();
        pre.extend_from_slice(cb.inputs[0].witness[0]);
        let c = batchcrypt::sha256::digest_double(&pre);
        let at = cb.outputs[pos].script_pubkey.as_ptr() as usize - raw.as_ptr() as usize + 6;
        out[at..at + 32].copy_from_slice(&c);
    }
    let block = parse_block(&out).unwrap();
    let txids: Vec<[u8; 32]> = block.txs.iter().map(|t| t.txid()).collect();
    let (root, _) = batchcrypt::bitcoin::validate::merkle_root(&txids);
    out[36..68].copy_from_slice(&root);
    out
}

/// Offset of a slice inside the buffer it borrows from.
fn offset(inner: &[u8], outer: &[u8]) -> usize {
    inner.as_ptr() as usize - outer.as_ptr() as usize
}

/// The first push of a script (the signature of a P2PKH or multisig scriptSig).
fn first_push(script: &[u8]) -> Option<&[u8]> {
    script::Ops::new(script)
        .filter_map(Result::ok)
        .map(|op| op.data)
        .find(|d| d.len() >= 9)
}

#[test]
fn one_bit_changes_are_refused_at_the_input() {
    let engine = Engine::with_backend(batchcrypt::BackendChoice::Auto);
    for c in CASES {
        let Some((raw, spent)) = load(c) else {
            continue;
        };
        let block = parse_block(&raw).unwrap();
        // A few inputs spread over the block, each with a signature we can find.
        let mut k = 0usize; // index into spent
        let mut picked = Vec::new();
        for (t, tx) in block.txs.iter().enumerate().skip(1) {
            for (i, input) in tx.inputs.iter().enumerate() {
                let sig = input
                    .witness
                    .first()
                    .copied()
                    .filter(|w| w.len() >= 9)
                    .or_else(|| first_push(input.script_sig));
                if let Some(sig) = sig {
                    if (t * 31 + i) % 97 == 0 || picked.is_empty() {
                        picked.push((t, i, k, offset(sig, &raw) + 10, !input.witness.is_empty()));
                    }
                }
                k += 1;
            }
        }
        picked.truncate(4);
        assert!(!picked.is_empty(), "{}: no signature found", c.name);
        for &(t, i, k, sig_at, segwit) in &picked {
            let named = |r: &BlockReport, what: &str| {
                let e = r
                    .verdict
                    .as_ref()
                    .expect_err(&format!("{}: {what} of tx {t} input {i} accepted", c.name));
                assert_eq!(
                    (e.tx, e.input),
                    (Some(t), Some(i)),
                    "{}: {what}: {e}",
                    c.name
                );
                assert!(
                    e.reason.starts_with("mandatory-script-verify-flag-failed"),
                    "{}: {what}: {e}",
                    c.name
                );
            };
            // A signature bit.
            let mut m = raw.clone();
            m[sig_at] ^= 0x10;
            let r = validate(&engine, &reseal(&m), &spent, c.network, false);
            named(&r, "signature bit");
            // A spent script bit (the last byte: a hash, a key or an opcode).
            let mut s = spent.clone();
            let n = s[k].script_pubkey.len();
            s[k].script_pubkey[n / 2] ^= 0x01;
            let r = validate(&engine, &raw, &s, c.network, true);
            named(&r, "spent script bit");
            // A signed amount: only segwit signatures cover it; raise it so the fee only grows.
            if segwit {
                let mut s = spent.clone();
                let v = s[k].value;
                s[k].value = v | (1i64 << (!v).trailing_zeros().min(40));
                let r = validate(&engine, &raw, &s, c.network, true);
                named(&r, "amount bit");
            }
        }
    }
}

/// A window larger than one segment of the script batches (its signatures verified while the
/// next segment's scripts run): valid as a whole, every check counted once, and a changed
/// spent script in the last block, in the last segment, refused at its input.
#[test]
fn a_window_of_several_segments_gives_every_verdict() {
    use batchcrypt::bitcoin::chain::verify_with_spent;
    let big: Vec<&Case> = CASES
        .iter()
        .filter(|c| c.network == Network::Test && c.name != "testnet3-928828")
        .collect();
    let loaded: Vec<(Vec<u8>, Vec<SpentOutput>)> = big.iter().filter_map(|c| load(c)).collect();
    if loaded.len() != big.len() {
        return;
    }
    let inputs: usize = loaded.iter().map(|(_, s)| s.len()).sum();
    assert!(
        inputs > 40_000,
        "{inputs} inputs: not more than one segment"
    );
    // The last block's last input, the script it spends changed (the block's header stays
    // valid: proof of work is checked here).
    let (raw, spent) = loaded.last().unwrap();
    let last = parse_block(raw).unwrap();
    let (t, i) = (
        last.txs.len() - 1,
        last.txs.last().unwrap().inputs.len() - 1,
    );
    let mut changed = spent.clone();
    let spk = &mut changed.last_mut().unwrap().script_pubkey;
    let n = spk.len();
    spk[n / 2] ^= 0x01;

    for b in common::backends(Primitive::Secp256k1) {
        let engine = Engine::with_backend(if b == batchcrypt::Backend::Cuda {
            BackendChoice::Gpu
        } else {
            BackendChoice::Cpu
        });
        let one_by_one: usize = loaded
            .iter()
            .zip(&big)
            .map(|((raw, spent), c)| {
                let r = validate(&engine, raw, spent, c.network, true);
                r.scripts.unwrap().ecdsa_checks
            })
            .sum();
        for mutate in [false, true] {
            let blocks: Vec<_> = loaded
                .iter()
                .map(|(raw, _)| parse_block(raw).unwrap())
                .collect();
            let items: Vec<_> = blocks
                .iter()
                .zip(&loaded)
                .enumerate()
                .map(|(k, (b, (_, s)))| {
                    let s = if mutate && k == loaded.len() - 1 {
                        &changed
                    } else {
                        s
                    };
                    (b, s.as_slice(), None)
                })
                .collect();
            let w = verify_with_spent(&engine, Network::Test, &items).unwrap();
            let verdicts: Vec<_> = w.blocks.iter().map(|r| r.verdict.clone()).collect();
            let (ok, last) = verdicts.split_at(verdicts.len() - 1);
            assert!(ok.iter().all(|v| v.is_ok()), "{b}: {ok:?}");
            if mutate {
                let e = last[0].as_ref().expect_err("the changed signature passed");
                assert_eq!((e.tx, e.input), (Some(t), Some(i)), "{b}: {e}");
            } else {
                assert_eq!(last[0], Ok(()), "{b}");
                let s = w.scripts.unwrap();
                assert_eq!(s.inputs, inputs, "{b}: every input ran once");
                assert_eq!(s.ecdsa_checks, one_by_one, "{b}: every check batched once");
            }
        }
    }
}

/// testnet3-928828 holds over a thousand multisig inputs whose signatures match later keys: the
/// pairs their loops may try are batched with the first run, so their reruns find every answer
/// known and no second batch runs.
#[test]
fn multisig_pairs_are_batched_with_the_first_run() {
    let c = CASES.iter().find(|c| c.name == "testnet3-928828").unwrap();
    let Some((raw, spent)) = load(c) else {
        return;
    };
    for b in common::backends(Primitive::Secp256k1) {
        let engine = Engine::with_backend(if b == batchcrypt::Backend::Cuda {
            BackendChoice::Gpu
        } else {
            BackendChoice::Cpu
        });
        let r = validate(&engine, &raw, &spent, c.network, true);
        assert_eq!(r.verdict, Ok(()), "{b}");
        let s = r.scripts.unwrap();
        assert!(
            s.replayed_inputs > 1000,
            "{b}: {} reruns",
            s.replayed_inputs
        );
        assert_eq!((s.rounds, s.replay_cpu_checks), (1, 0), "{b}");
    }
}

/// A block past the weight limit is refused and its scripts never run: they run beside a
/// block's checks only within the limits that bound their work (a hostile block would choose
/// it).
#[test]
fn a_block_past_the_limits_is_refused_without_running_its_scripts() {
    use batchcrypt::bitcoin::chain::verify_with_spent;
    let case = CASES.iter().find(|c| c.name == "testnet3-928831").unwrap();
    let Some((raw, spent)) = load(case) else {
        return;
    };
    let block = parse_block(&raw).unwrap();
    // The block (3,992,382 weight units) with copies of its heaviest transaction appended until
    // it weighs more than 4,000,000.
    let (k, extra) = block
        .txs
        .iter()
        .enumerate()
        .skip(1)
        .max_by_key(|(_, t)| t.weight())
        .unwrap();
    let weight = batchcrypt::bitcoin::validate::block_weight(&block);
    let copies = (4_000_000 - weight) / extra.weight() + 1;
    let mut big = raw[..80].to_vec();
    batchcrypt::bitcoin::tx::write_compact_size(
        &mut big,
        (block.txs.len() + copies as usize) as u64,
    );
    for t in block
        .txs
        .iter()
        .chain(std::iter::repeat_n(extra, copies as usize))
    {
        big.extend_from_slice(t.raw);
    }
    let first: usize = block.txs[1..k].iter().map(|t| t.inputs.len()).sum();
    let mut big_spent = spent.clone();
    for _ in 0..copies {
        big_spent.extend_from_slice(&spent[first..first + extra.inputs.len()]);
    }
    let parsed = parse_block(&big).unwrap();
    // The limits, on the original block and on the heavier one (its merkle root is now wrong
    // too, which its checks find first: what matters is that no script of it runs).
    let limits = |b: &batchcrypt::bitcoin::Block, s: &[SpentOutput]| {
        let per_tx = spent_per_tx(b, s).unwrap();
        let (_, flags) =
            batchcrypt::bitcoin::block::height_and_flags(b, Network::Test, None).unwrap();
        batchcrypt::bitcoin::block::within_script_limits(b, &per_tx, flags)
    };
    assert!(limits(&block, &spent));
    assert!(!limits(&parsed, &big_spent));
    for b in common::backends(Primitive::Secp256k1) {
        let engine = Engine::with_backend(if b == batchcrypt::Backend::Cuda {
            BackendChoice::Gpu
        } else {
            BackendChoice::Cpu
        });
        let w = verify_with_spent(&engine, Network::Test, &[(&parsed, &big_spent, None)]).unwrap();
        assert!(
            w.blocks[0].verdict.is_err(),
            "{b}: a block past the limits passed"
        );
        assert!(w.scripts.is_none(), "{b}: its scripts ran");
    }
}

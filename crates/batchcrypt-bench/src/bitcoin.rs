//! Bitcoin block validation end to end (parse, block rules, scripts, sighashes, signatures) over
//! the real test blocks repeated to a re-sync's batch size, against Bitcoin Core's
//! libbitcoinconsensus per input on all cores, and against libsecp256k1 alone on the same
//! signatures; and one block's latency on each backend.

use crate::report::{label, time, Report};
use batchcrypt::bitcoin::batch::{signature_checks, TxJob};
use batchcrypt::bitcoin::block::spent_per_tx;
use batchcrypt::bitcoin::chain::verify_with_spent;
use batchcrypt::bitcoin::spent::read_spent_file;
use batchcrypt::bitcoin::validate::Network;
use batchcrypt::bitcoin::{parse_block, SpentOutput};
use batchcrypt::{Backend, BackendChoice, Engine};
use rayon::prelude::*;
use std::path::PathBuf;

const GROUP: &str = "bitcoin";
const BLOCKS: &[(&str, &str, Network)] = &[
    ("mainnet-300025", "undo", Network::Main),
    ("mainnet-367891", "spent.json", Network::Main),
    ("testnet3-928816", "undo", Network::Test),
    ("testnet3-928828", "undo", Network::Test),
    ("testnet3-928831", "undo", Network::Test),
    ("testnet3-928848", "undo", Network::Test),
    ("testnet3-928849", "undo", Network::Test),
    ("testnet3-928927", "undo", Network::Test),
    ("testnet3-1087400", "undo", Network::Test),
];

fn data_dir() -> PathBuf {
    std::env::var_os("BATCHCRYPT_SHARED_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("../shared/data"))
        .join("bitcoin/blocks")
}

struct Loaded {
    name: &'static str,
    network: Network,
    raw: Vec<u8>,
    spent: Vec<SpentOutput>,
    inputs: usize,
}

fn load() -> anyhow::Result<Vec<Loaded>> {
    let dir = data_dir();
    BLOCKS
        .iter()
        .map(|&(name, ext, network)| {
            let raw = std::fs::read(dir.join(format!("{name}.raw"))).map_err(|e| {
                anyhow::anyhow!(
                    "{}: {e} (set BATCHCRYPT_SHARED_DATA)",
                    dir.join(name).display()
                )
            })?;
            let block = parse_block(&raw)?;
            let spent = read_spent_file(&dir.join(format!("{name}.{ext}")), &block)?;
            let inputs = block.txs.iter().skip(1).map(|t| t.inputs.len()).sum();
            Ok(Loaded {
                name,
                network,
                raw: raw.clone(),
                spent,
                inputs,
            })
        })
        .collect()
}

/// Where the wall time of a run went, summed over its windows.
#[derive(Default, Clone, Copy)]
struct Stages {
    parse: f64,
    validation: f64,
    scripts: f64,
    signatures: f64,
    replay: f64,
}

impl std::fmt::Display for Stages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "parse {:.1} ms, validation {:.1} ms: in it interpreter and sighashes {:.1} ms, \
             signature batches {:.1} ms (the two overlap), replays {:.1} ms",
            self.parse * 1e3,
            self.validation * 1e3,
            self.scripts * 1e3,
            self.signatures * 1e3,
            self.replay * 1e3
        )
    }
}

/// Validates `set` (indices into `blocks`) in windows of `window` blocks; panics unless all valid.
fn validate_all(
    engine: &Engine,
    blocks: &[Loaded],
    set: &[usize],
    window: usize,
    stages: &mut Stages,
) -> Option<Backend> {
    let mut ran = None;
    *stages = Stages::default();
    // Windows hold one network's blocks (activation heights are per network).
    let runs = set.chunk_by(|&a, &b| blocks[a].network == blocks[b].network);
    for w in runs.flat_map(|r| r.chunks(window)) {
        let t = std::time::Instant::now();
        let parsed: Vec<_> = w
            .par_iter()
            .map(|&k| parse_block(&blocks[k].raw).unwrap())
            .collect();
        stages.parse += t.elapsed().as_secs_f64();
        let net = blocks[w[0]].network;
        let items: Vec<_> = parsed
            .iter()
            .zip(w)
            .map(|(b, &k)| (b, blocks[k].spent.as_slice(), None))
            .collect();
        let t = std::time::Instant::now();
        let r = verify_with_spent(engine, net, &items).unwrap();
        stages.validation += t.elapsed().as_secs_f64();
        assert!(
            r.blocks.iter().all(|b| b.verdict.is_ok()),
            "a test block failed"
        );
        if let Some(s) = &r.scripts {
            ran = ran.or(s.ecdsa_backend);
            stages.scripts += s.scripts_time.as_secs_f64();
            stages.signatures += s.signatures_time.as_secs_f64();
            stages.replay += s.replay_time.as_secs_f64();
        }
        // A parsed block is many small vectors: freed on all cores, as they were made.
        drop(items);
        parsed.into_par_iter().for_each(drop);
    }
    ran
}

const TARGET: usize = 1 << 20;
const QUICK_TARGET: usize = 1 << 16;
const STRESS_BLOCK: &str = "mainnet-367891";
const WITHOUT_STRESS: &str = "the test blocks but mainnet-367891";

/// Group `bitcoin-resync`: the re-sync workload alone, the test blocks but the stress block
/// (a shorter run than `bitcoin`, whose stress case keeps the peer busy for minutes).
pub fn run_resync(rep: &mut Report, quick: bool) -> anyhow::Result<()> {
    let blocks = load()?;
    let without: Vec<usize> = (0..blocks.len())
        .filter(|&k| blocks[k].name != STRESS_BLOCK)
        .collect();
    let target = if quick { QUICK_TARGET } else { TARGET };
    run_case(rep, quick, &blocks, &without, target, WITHOUT_STRESS)
}

pub fn run(rep: &mut Report, quick: bool) -> anyhow::Result<()> {
    let blocks = load()?;
    let target = if quick { QUICK_TARGET } else { TARGET };
    let all: Vec<usize> = (0..blocks.len()).collect();
    // mainnet-367891 holds one transaction of 20,000 inputs (840 kB): libbitcoinconsensus parses
    // the whole transaction again for every input, so it is measured with and without it.
    let without: Vec<usize> = all
        .iter()
        .copied()
        .filter(|&k| blocks[k].name != STRESS_BLOCK)
        .collect();
    for (title, subset) in [("the test blocks", &all), (WITHOUT_STRESS, &without)] {
        run_case(rep, quick, &blocks, subset, target, title)?;
    }
    // One block's latency on each backend, and the dispatcher's pick.
    let k = blocks.iter().position(|b| b.name == STRESS_BLOCK).unwrap();
    let one = [k];
    let lcase = format!(
        "{} ({} inputs), one block",
        blocks[k].name, blocks[k].inputs
    );
    rep.header("Bitcoin block validation, one block's latency");
    for choice in [BackendChoice::Cpu, BackendChoice::Gpu, BackendChoice::Auto] {
        if choice == BackendChoice::Gpu && Backend::Cuda.availability().is_err() {
            continue;
        }
        let engine = Engine::with_backend(choice);
        let mut ran = None;
        let mut stages = Stages::default();
        let t = time(if quick { 3 } else { 15 }, || {
            ran = validate_all(&engine, &blocks, &one, 1, &mut stages)
        });
        let name = match choice {
            BackendChoice::Cpu => "batchcrypt, signatures on the CPU".to_string(),
            BackendChoice::Gpu => "batchcrypt, signatures on the GPU".to_string(),
            _ => label(
                "batchcrypt auto",
                choice,
                ran.unwrap_or(Backend::Libsecp256k1),
            ),
        };
        rep.add(
            GROUP,
            &lcase,
            &name,
            blocks[k].inputs as u64,
            blocks[k].raw.len() as u64,
            t,
            Some("batchcrypt, signatures on the CPU"),
        );
        println!("    {name}: {:.2} ms (last run: {stages})", t * 1e3);
    }
    Ok(())
}

/// The flags libbitcoinconsensus takes.
const SUPPORTED: u32 = bitcoinconsensus::VERIFY_P2SH
    | bitcoinconsensus::VERIFY_DERSIG
    | bitcoinconsensus::VERIFY_NULLDUMMY
    | bitcoinconsensus::VERIFY_CHECKLOCKTIMEVERIFY
    | bitcoinconsensus::VERIFY_CHECKSEQUENCEVERIFY
    | bitcoinconsensus::VERIFY_WITNESS
    | bitcoinconsensus::VERIFY_TAPROOT;

/// One input for libbitcoinconsensus: the spending transaction, its spent outputs, the index.
struct PeerInput<'b> {
    tx: &'b [u8],
    spent: &'b [SpentOutput],
    index: usize,
    flags: u32,
}

fn run_case(
    rep: &mut Report,
    quick: bool,
    blocks: &[Loaded],
    subset: &[usize],
    target: usize,
    title: &str,
) -> anyhow::Result<()> {
    let per_round: usize = subset.iter().map(|&k| blocks[k].inputs).sum();
    let rounds = target.div_ceil(per_round);
    // Each network's blocks together, repeated.
    let mut set = Vec::new();
    for net in [Network::Main, Network::Test] {
        for _ in 0..rounds {
            set.extend(subset.iter().copied().filter(|&k| blocks[k].network == net));
        }
    }
    let inputs: usize = set.iter().map(|&k| blocks[k].inputs).sum();
    let bytes: usize = set.iter().map(|&k| blocks[k].raw.len()).sum();
    let case = format!("{} x{rounds}: {inputs} inputs", title);
    rep.header(&format!(
        "Bitcoin block validation, end to end: {case} ({} threads)",
        batchcrypt::backend::cpu::threads()
    ));
    let reps = if quick { 1 } else { 3 };

    // The blocks parsed once for the peers (their own parsing is not what is compared).
    let parsed: Vec<_> = blocks
        .iter()
        .map(|b| parse_block(&b.raw).unwrap())
        .collect();
    let per_tx: Vec<Vec<&[SpentOutput]>> = blocks
        .iter()
        .zip(&parsed)
        .map(|(b, p)| spent_per_tx(p, &b.spent).unwrap())
        .collect();
    let flags: Vec<batchcrypt::bitcoin::script::Flags> = blocks
        .iter()
        .zip(&parsed)
        .map(|(b, p)| {
            let h = batchcrypt::bitcoin::block::bip34_height(p).unwrap_or(0);
            b.network
                .params()
                .script_flags(h, &batchcrypt::bitcoin::display_hash(&p.hash()))
        })
        .collect();

    // Peer: libbitcoinconsensus, one call per input, all inputs spread over all cores.
    let mut peer_inputs = Vec::with_capacity(inputs);
    for &k in &set {
        for (t, tx) in parsed[k].txs.iter().enumerate().skip(1) {
            for index in 0..tx.inputs.len() {
                peer_inputs.push(PeerInput {
                    tx: tx.raw,
                    spent: per_tx[k][t],
                    index,
                    flags: flags[k].0 & SUPPORTED,
                });
            }
        }
    }
    // One timed run, no warm-up: the peer takes minutes over the stress block.
    let once = |f: &mut dyn FnMut()| {
        let t = std::time::Instant::now();
        f();
        t.elapsed().as_secs_f64()
    };
    let t_peer = once(&mut || {
        let ok: usize = peer_inputs
            .par_iter()
            .map(|p| {
                let utxos: Vec<bitcoinconsensus::Utxo> = p
                    .spent
                    .iter()
                    .map(|s| bitcoinconsensus::Utxo {
                        script_pubkey: s.script_pubkey.as_ptr(),
                        script_pubkey_len: s.script_pubkey.len() as u32,
                        value: s.value,
                    })
                    .collect();
                let s = &p.spent[p.index];
                bitcoinconsensus::verify_with_flags(
                    &s.script_pubkey,
                    s.value as u64,
                    p.tx,
                    Some(&utxos),
                    p.index,
                    p.flags,
                )
                .is_ok() as usize
            })
            .sum();
        assert_eq!(
            ok, inputs,
            "libbitcoinconsensus refused an input of a valid block"
        );
    });
    const PEER: &str = "libbitcoinconsensus per input (all cores)";
    rep.add(
        GROUP,
        &case,
        PEER,
        inputs as u64,
        bytes as u64,
        t_peer,
        None,
    );

    // Peer: libsecp256k1 alone on the signatures the blocks hold (no scripts, no sighashes).
    let (mut ecdsa, mut schnorr) = (Vec::new(), Vec::new());
    for &k in &set {
        let jobs: Vec<TxJob> = parsed[k]
            .txs
            .iter()
            .enumerate()
            .skip(1)
            .map(|(t, tx)| TxJob {
                tx,
                spent: per_tx[k][t],
                flags: flags[k],
            })
            .collect();
        let (e, s) = signature_checks(&jobs);
        ecdsa.extend(e);
        schnorr.extend(s);
    }
    let sigs = ecdsa.len() + schnorr.len();
    let t_secp = time(reps, || {
        let n: usize = ecdsa
            .par_iter()
            .map(|(m, s, k)| {
                let key = secp256k1::PublicKey::from_slice(k);
                let sig = secp256k1::ecdsa::Signature::from_compact(s);
                matches!((key, sig), (Ok(k), Ok(s)) if secp256k1::ecdsa::verify(&s, secp256k1::Message::from_digest(*m), &k).is_ok()) as usize
            })
            .sum::<usize>()
            + schnorr
                .par_iter()
                .map(|(m, s, k)| {
                    secp256k1::XOnlyPublicKey::from_byte_array(*k)
                        .is_ok_and(|k| secp256k1::schnorr::verify(&secp256k1::schnorr::Signature::from_byte_array(*s), m, &k).is_ok()) as usize
                })
                .sum::<usize>();
        std::hint::black_box(n);
    });
    const SECP: &str = "libsecp256k1 alone, its signatures only";
    rep.add(
        GROUP,
        &case,
        SECP,
        inputs as u64,
        bytes as u64,
        t_secp,
        None,
    );
    println!(
        "    ({sigs} signature checks: {} ECDSA, {} BIP340)",
        ecdsa.len(),
        schnorr.len()
    );

    // Ours, end to end (parse, every block rule, scripts, sighashes, signatures).
    for choice in [BackendChoice::Cpu, BackendChoice::Gpu, BackendChoice::Auto] {
        if choice == BackendChoice::Gpu && Backend::Cuda.availability().is_err() {
            continue;
        }
        let engine = Engine::with_backend(choice);
        let mut ran = None;
        let mut stages = Stages::default();
        let t = time(reps, || {
            ran = validate_all(&engine, blocks, &set, 64, &mut stages)
        });
        let name = match choice {
            BackendChoice::Cpu => "batchcrypt, signatures on the CPU".to_string(),
            BackendChoice::Gpu => "batchcrypt, signatures on the GPU".to_string(),
            _ => label(
                "batchcrypt auto",
                choice,
                ran.unwrap_or(Backend::Libsecp256k1),
            ),
        };
        rep.add(
            GROUP,
            &case,
            &name,
            inputs as u64,
            bytes as u64,
            t,
            Some(PEER),
        );
        println!(
            "    {name}: {:.2}x libsecp256k1 alone on the same signatures (last run: {stages})",
            t_secp / t
        );
    }
    Ok(())
}

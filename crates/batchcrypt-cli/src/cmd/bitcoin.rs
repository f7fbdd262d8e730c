//! `batchcrypt bitcoin ...`: block, chain and transaction validation, consensus-exact, with the
//! signature checks batched (on the GPU where the dispatcher finds it faster).

use anyhow::{bail, Context, Result};
use batchcrypt::bitcoin::batch::ScriptReport;
use batchcrypt::bitcoin::block::{verify_block, BlockContext, BlockReport};
use batchcrypt::bitcoin::chain::{verify_with_spent, ChainState, WindowReport};
use batchcrypt::bitcoin::script::Flags;
use batchcrypt::bitcoin::spent::{flatten_block_undo, read_spent_file};
use batchcrypt::bitcoin::store::{chain_range, network_magic, BlocksDir, ChainBlock};
use batchcrypt::bitcoin::txs::{verify_transactions, LooseTx, NextBlock};
use batchcrypt::bitcoin::validate::{Network, PrevMedianTime};
use batchcrypt::bitcoin::{display_hash, parse_block, SpentOutput};
use batchcrypt::Engine;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

// The variants name the subcommands (`verify-block`, ...).
#[allow(clippy::enum_variant_names)]
#[derive(clap::Subcommand)]
pub enum Command {
    /// Validate one block with the outputs it spends; print the verdict and where each stage ran.
    #[command(
        name = "verify-block",
        after_help = "Examples:\n  batchcrypt bitcoin verify-block mainnet-300025.raw --spent mainnet-300025.undo\n  batchcrypt bitcoin verify-block b.raw --spent b.spent.json --network main\n  batchcrypt bitcoin verify-block b.raw --spent b.rev --height 800000 --backend gpu\n\nSPENT formats, by extension: .undo (bcoin: per non-coinbase input, 8-byte amount, script), \
.spent.json (Floresta: txout, is_coinbase, creation_height, creation_time), .rev (one Bitcoin Core \
undo record, CBlockUndo). Exit status 0 when valid, 1 when invalid, 2 on bad input."
    )]
    VerifyBlock(BlockArgs),
    /// Validate a run of blocks in order, building the UTXO set as it goes (or from Core's undo data).
    #[command(
        name = "verify-chain",
        after_help = "Examples:\n  batchcrypt bitcoin verify-chain --hex regtest-chain-206.hex --network regtest\n  batchcrypt bitcoin verify-chain --blocks-dir ~/.bitcoin/blocks\n  batchcrypt bitcoin verify-chain --blocks-dir ~/.bitcoin/testnet3/blocks --network test --use-undo --from 2000000 --count 1000\n\n\
With --blocks-dir the blocks are put in chain order by their parent links (forks: the longest \
branch). From the genesis block the UTXO set is built as blocks connect; with --use-undo or --from (or \
when the directory does not reach back to genesis) each block's spent outputs come from the \
rev*.dat undo records instead, so a range is checked without the blocks before it."
    )]
    VerifyChain(ChainArgs),
    /// Verify loose transactions (JSON lines in, one JSON verdict per line out), all as one batch.
    #[command(
        name = "verify-tx",
        after_help = "Input, one JSON object per line:\n  {\"tx\": \"<hex>\", \"spent\": [{\"value\": <sat>, \"script_pubkey\": \"<hex>\"}, ...], \"flags\": \"P2SH,WITNESS,...\"}\n\
`flags` is optional: every consensus rule of today's tip by default (P2SH, DERSIG, \
CHECKLOCKTIMEVERIFY, CHECKSEQUENCEVERIFY, WITNESS, NULLDUMMY, TAPROOT). Where the chain's tip \
is known, add \"next_height\" (the tip's height plus one) and \"tip_mtp\" (its median time past) \
to check the transaction against the chain as a mempool does: its lock time, coinbase maturity \
and BIP68 relative locks. Each spent output then gives \"height\" (of the block that created it) \
and \"coinbase\" (true or false), and \"time\" (the median time past of the block before it) \
where an input has a time-based relative lock:\n  {\"tx\": \"...\", \"spent\": [{\"value\": 5000, \
\"script_pubkey\": \"51\", \"height\": 800000, \"coinbase\": false}], \"next_height\": 800150, \
\"tip_mtp\": 1690000000}\nOutput, one line per transaction, in order:\n  {\"line\": 1, \"txid\": \"...\", \"valid\": false, \"input\": 0, \"reason\": \"script failed: EQUALVERIFY\"}"
    )]
    VerifyTx(TxArgs),
}

#[derive(clap::Args)]
pub struct BlockArgs {
    /// The block in network serialization (binary, or hex if the file is hex text).
    pub(crate) block: PathBuf,
    /// The outputs its inputs spend (.undo, .spent.json or .rev; see below).
    #[arg(long)]
    pub(crate) spent: PathBuf,
    /// The block's height (read from the coinbase when omitted; blocks before BIP34 need it).
    #[arg(long)]
    pub(crate) height: Option<u32>,
    /// main, test (testnet3) or regtest: which activation heights apply.
    #[arg(long, default_value = "main")]
    pub(crate) network: Network,
    /// Skip the header's proof-of-work check (for blocks built for tests).
    #[arg(long)]
    pub(crate) no_pow: bool,
    /// The median time past of the block before this one (Unix seconds), where known: with it
    /// BIP113 finality of time-locked transactions, BIP68 time locks (given the spent coins'
    /// times, as .spent.json has them) and the header's time-too-old are checked; without it
    /// they are reported unchecked.
    #[arg(long, value_name = "SECONDS")]
    pub(crate) median_time_past: Option<u32>,
}

#[derive(clap::Args)]
pub struct ChainArgs {
    /// A file of blocks, one hex-encoded block a line, in order from the block after genesis.
    #[arg(long, conflicts_with = "blocks_dir")]
    hex: Option<PathBuf>,
    /// A Bitcoin Core blocks/ directory (blk*.dat, rev*.dat, xor.dat).
    #[arg(long)]
    blocks_dir: Option<PathBuf>,
    /// main, test (testnet3) or regtest.
    #[arg(long, default_value = "main")]
    network: Network,
    /// Take spent outputs from the rev*.dat undo records instead of building the UTXO set.
    #[arg(long, requires = "blocks_dir")]
    use_undo: bool,
    /// First height to validate (implies --use-undo: the blocks before it are not connected).
    #[arg(long, requires = "blocks_dir")]
    from: Option<u32>,
    /// Validate at most this many blocks.
    #[arg(long)]
    count: Option<usize>,
    /// Blocks whose signatures are verified as one batch (more: larger GPU batches, more memory).
    #[arg(long, default_value_t = 64)]
    window: usize,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

#[derive(clap::Args)]
pub struct TxArgs {
    /// JSON lines (or - for standard input).
    #[arg(default_value = "-")]
    pub(crate) input: String,
}

pub fn run(engine: &Engine, cmd: &Command) -> Result<()> {
    match cmd {
        Command::VerifyBlock(a) => verify_block_cmd(engine, a),
        Command::VerifyChain(a) => verify_chain_cmd(engine, a),
        Command::VerifyTx(a) => verify_tx_cmd(engine, a),
    }
}

/// A block file: raw bytes, or hex text.
pub(crate) fn read_block_file(path: &PathBuf) -> Result<Vec<u8>> {
    let raw = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let text = raw.trim_ascii();
    if !text.is_empty() && text.iter().all(|b| b.is_ascii_hexdigit()) {
        return hex::decode(text).with_context(|| format!("{}: odd-length hex", path.display()));
    }
    Ok(raw)
}

fn backend_line(s: &ScriptReport) -> String {
    let b = |x: Option<batchcrypt::Backend>| x.map_or(String::new(), |b| b.to_string());
    format!(
        "{}; {} rounds ({} inputs ran again), {} checks on the CPU after them",
        signature_counts(
            s.ecdsa_checks as u64,
            &b(s.ecdsa_backend),
            s.schnorr_checks as u64,
            &b(s.schnorr_backend)
        ),
        s.rounds,
        s.replayed_inputs,
        s.replay_cpu_checks
    )
}

/// The signature checks of a block and the backends that ran them ("" where none ran), as the
/// local and the served reports print them.
pub(crate) fn signature_counts(ecdsa: u64, on: &str, schnorr: u64, schnorr_on: &str) -> String {
    let b = |x: &str| if x.is_empty() { "-" } else { x }.to_string();
    format!(
        "ECDSA {ecdsa} on {}, BIP340 {schnorr} on {}",
        b(on),
        b(schnorr_on)
    )
}

/// A block's stages, as the local and the served reports print them.
pub(crate) fn stages_line(structure: Duration, inputs: Duration, scripts: Duration) -> String {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    format!(
        "stages     structure {:.2} ms (CPU), inputs {:.2} ms (CPU), scripts {:.2} ms",
        ms(structure),
        ms(inputs),
        ms(scripts)
    )
}

fn print_block_report(r: &BlockReport, total: Duration) {
    println!("block      {} (height {})", r.hash, r.height);
    println!("rules      {}", r.flags.names());
    println!(
        "size       {} txs, {} inputs, weight {}, sigop cost {}, fees {} sat",
        r.txs, r.inputs, r.weight, r.sigop_cost, r.fees
    );
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{}",
        stages_line(r.structure_time, r.inputs_time, r.scripts_time)
    );
    if let Some(s) = &r.scripts {
        println!(
            "scripts    interpreter and sighashes {:.2} ms on {} CPU threads, signatures {:.2} ms, replays {:.2} ms",
            ms(s.scripts_time),
            batchcrypt::backend::cpu::threads(),
            ms(s.signatures_time),
            ms(s.replay_time)
        );
        println!("signatures {}", backend_line(s));
    }
    println!(
        "throughput {:.0} inputs/s ({:.2} ms in all)",
        r.inputs as f64 / total.as_secs_f64(),
        ms(total)
    );
    for u in &r.unchecked {
        println!("unchecked  {u}");
    }
    match &r.verdict {
        Ok(()) => println!("verdict    VALID"),
        Err(e) => println!("verdict    INVALID: {e}"),
    }
}

fn verify_block_cmd(engine: &Engine, a: &BlockArgs) -> Result<()> {
    let raw = read_block_file(&a.block)?;
    let block = parse_block(&raw).with_context(|| format!("parsing {}", a.block.display()))?;
    let spent = read_spent_file(&a.spent, &block)
        .with_context(|| format!("reading spent outputs from {}", a.spent.display()))?;
    let t = Instant::now();
    let ctx = BlockContext {
        network: a.network,
        height: a.height,
        times: &PrevMedianTime(a.median_time_past.map(i64::from)),
        check_pow: !a.no_pow,
    };
    let r = verify_block(engine, &block, &spent, &ctx)?;
    print_block_report(&r, t.elapsed());
    if r.verdict.is_err() {
        std::process::exit(1);
    }
    Ok(())
}

fn progress(total: Option<u64>, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = match total {
        Some(n) => ProgressBar::new(n),
        None => ProgressBar::new_spinner(),
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{bar:40}] {pos}/{len} blocks, {per_sec}  {msg}",
        )
        .unwrap()
        .progress_chars("=> "),
    );
    bar
}

struct Tally {
    blocks: usize,
    inputs: usize,
    start: Instant,
}

impl Tally {
    /// Counts a window; the first invalid block ends the run.
    fn add(&mut self, w: &WindowReport, bar: &ProgressBar) -> Result<()> {
        for b in &w.blocks {
            if let Err(e) = &b.verdict {
                bar.abandon();
                println!("block      {} (height {})", b.hash, b.height);
                println!("verdict    INVALID: {e}");
                println!("checked    {} blocks valid before it", self.blocks);
                std::process::exit(1);
            }
            self.blocks += 1;
            self.inputs += b.inputs;
        }
        bar.inc(w.blocks.len() as u64);
        let secs = self.start.elapsed().as_secs_f64();
        let mut msg = format!("{:.0} inputs/s", self.inputs as f64 / secs);
        if let Some(s) = &w.scripts {
            msg += &format!(
                " (signatures on {})",
                s.ecdsa_backend
                    .or(s.schnorr_backend)
                    .map_or("-".into(), |b| b.to_string())
            );
        }
        bar.set_message(msg);
        Ok(())
    }

    fn finish(&self, bar: &ProgressBar, tip: Option<(u32, String)>) {
        bar.finish_and_clear();
        let secs = self.start.elapsed().as_secs_f64();
        if let Some((h, hash)) = tip {
            println!("tip        {hash} (height {h})");
        }
        println!(
            "verdict    VALID: {} blocks, {} inputs in {:.2} s ({:.1} blocks/s, {:.0} inputs/s)",
            self.blocks,
            self.inputs,
            secs,
            self.blocks as f64 / secs,
            self.inputs as f64 / secs
        );
    }
}

fn verify_chain_cmd(engine: &Engine, a: &ChainArgs) -> Result<()> {
    let mut tally = Tally {
        blocks: 0,
        inputs: 0,
        start: Instant::now(),
    };
    if let Some(path) = &a.hex {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let mut raws = Vec::new();
        for (n, line) in text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .enumerate()
        {
            raws.push(
                hex::decode(line)
                    .with_context(|| format!("{}: line {} is not hex", path.display(), n + 1))?,
            );
        }
        raws.truncate(a.count.unwrap_or(usize::MAX));
        let bar = progress(Some(raws.len() as u64), a.quiet);
        let mut state = ChainState::at_genesis(a.network);
        for w in raws.chunks(a.window.max(1)) {
            tally.add(&state.connect(engine, w)?, &bar)?;
        }
        tally.finish(&bar, Some((state.height(), display_hash(&state.tip()))));
        return Ok(());
    }
    let Some(dir) = &a.blocks_dir else {
        bail!("give --hex FILE or --blocks-dir DIR (see --help)");
    };
    let magic = network_magic(a.network.name()).expect("a known network");
    let store =
        BlocksDir::open(dir, magic).with_context(|| format!("opening {}", dir.display()))?;
    eprintln!("reading the block headers in {} ...", dir.display());
    let chain = store.chain()?;
    if chain.is_empty() {
        bail!("no blocks in {}", dir.display());
    }
    let read = |w: &[ChainBlock]| -> batchcrypt::Result<Vec<Vec<u8>>> {
        w.iter().map(|b| store.read_block(b)).collect()
    };
    let starts_at_genesis = chain[0].hash == ChainState::at_genesis(a.network).tip();
    if starts_at_genesis && !a.use_undo && a.from.is_none() {
        let selected = &chain[1..];
        let selected = &selected[..selected.len().min(a.count.unwrap_or(usize::MAX))];
        let bar = progress(Some(selected.len() as u64), a.quiet);
        let mut state = ChainState::at_genesis(a.network);
        for w in selected.chunks(a.window.max(1)) {
            tally.add(&state.connect(engine, &read(w)?)?, &bar)?;
        }
        tally.finish(&bar, Some((state.height(), display_hash(&state.tip()))));
        return Ok(());
    }
    // Undo mode: each block's spent outputs from its undo record, so any range stands alone.
    eprintln!("matching the undo records in {} ...", dir.display());
    let undo = store.undo_index()?;
    let selected = &chain[chain_range(&chain, a.from, a.count)?];
    let bar = progress(Some(selected.len() as u64), a.quiet);
    let mut last = None;
    for w in selected.chunks(a.window.max(1)) {
        let raws = read(w)?;
        let blocks: Vec<_> = raws
            .par_iter()
            .map(|raw| parse_block(raw))
            .collect::<batchcrypt::Result<_>>()?;
        let mut spent: Vec<Vec<SpentOutput>> = Vec::new();
        for (b, at) in blocks.iter().zip(w) {
            let loc = undo.get(&at.hash).with_context(|| {
                format!(
                    "no undo record for block {} in {}: the node has not connected it or its rev \
                     file is pruned (from genesis, run without --use-undo and --from)",
                    display_hash(&at.hash),
                    dir.display()
                )
            })?;
            spent.push(flatten_block_undo(b, store.read_undo(loc)?)?);
        }
        let items: Vec<_> = blocks
            .iter()
            .zip(&spent)
            .zip(w)
            .map(|((b, s), at)| (b, s.as_slice(), at.height))
            .collect();
        let report = verify_with_spent(engine, a.network, &items)?;
        if let Some(b) = report.blocks.last() {
            last = Some((b.height, b.hash.clone()));
        }
        tally.add(&report, &bar)?;
    }
    tally.finish(&bar, last);
    Ok(())
}

/// The transactions of `verify-tx`'s input, one JSON object a line.
pub(crate) fn read_txs(a: &TxArgs) -> Result<Vec<LooseTx>> {
    let reader: Box<dyn BufRead> = if a.input == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::io::BufReader::new(
            std::fs::File::open(&a.input).with_context(|| format!("opening {}", a.input))?,
        ))
    };
    let mut items = Vec::new();
    for (n, line) in reader.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        items.push(parse_tx_line(&line).with_context(|| format!("line {}", n + 1))?);
    }
    if items.is_empty() {
        bail!("no transactions in the input: one JSON object a line (see --help)");
    }
    Ok(items)
}

/// `verify-tx`'s output: a JSON line per transaction, in order, with the failing input (where
/// one is to blame) and the reason. Gives how many are valid.
pub(crate) fn print_tx_verdicts<'r>(
    items: &[LooseTx],
    verdicts: impl Iterator<Item = std::result::Result<(), (Option<u64>, &'r str)>>,
) -> Result<usize> {
    let mut out = std::io::stdout().lock();
    let mut valid = 0;
    for (k, (item, v)) in items.iter().zip(verdicts).enumerate() {
        let txid = batchcrypt::bitcoin::parse_tx(&item.raw)
            .map(|t| display_hash(&t.txid()))
            .ok();
        let mut o = serde_json::json!({ "line": k + 1, "txid": txid, "valid": v.is_ok() });
        match v {
            Ok(()) => valid += 1,
            Err((input, reason)) => {
                o["input"] = serde_json::json!(input);
                o["reason"] = serde_json::json!(reason);
            }
        }
        writeln!(out, "{o}")?;
    }
    Ok(valid)
}

fn verify_tx_cmd(engine: &Engine, a: &TxArgs) -> Result<()> {
    let items = read_txs(a)?;
    let t = Instant::now();
    let (verdicts, report) = verify_transactions(engine, &items)?;
    let elapsed = t.elapsed();
    let verdicts = verdicts.iter().map(|v| match v {
        Ok(()) => Ok(()),
        Err(e) => Err((e.input.map(|i| i as u64), e.reason.as_str())),
    });
    let valid = print_tx_verdicts(&items, verdicts)?;
    eprintln!(
        "{} transactions ({} valid) in {:.2} ms{}",
        items.len(),
        valid,
        elapsed.as_secs_f64() * 1e3,
        report
            .as_ref()
            .map_or(String::new(), |r| format!("; {}", backend_line(r)))
    );
    Ok(())
}

fn parse_tx_line(line: &str) -> Result<LooseTx> {
    let v: serde_json::Value = serde_json::from_str(line).context("not JSON")?;
    let raw = hex::decode(v["tx"].as_str().context("\"tx\" (hex) missing")?)
        .context("\"tx\" is not hex")?;
    let spent = v["spent"]
        .as_array()
        .context("\"spent\" (an array of {value, script_pubkey}) missing")?
        .iter()
        .map(|s| -> Result<SpentOutput> {
            let value = s["value"]
                .as_i64()
                .context("spent output without an integer \"value\" (satoshis)")?;
            let spk = hex::decode(
                s["script_pubkey"]
                    .as_str()
                    .context("spent output without \"script_pubkey\" (hex)")?,
            )
            .context("\"script_pubkey\" is not hex")?;
            let mut o = SpentOutput::new(value, spk);
            o.height = optional_u32(s, "height")?;
            o.coinbase = match s.get("coinbase") {
                None | Some(serde_json::Value::Null) => None,
                Some(c) => Some(c.as_bool().context("\"coinbase\" is not true or false")?),
            };
            o.time = optional_u32(s, "time")?;
            Ok(o)
        })
        .collect::<Result<Vec<_>>>()?;
    let flags = match v.get("flags").and_then(|f| f.as_str()) {
        Some(f) => Flags::parse(f).map_err(anyhow::Error::msg)?,
        None => Flags::CONSENSUS,
    };
    let tip_mtp = match v.get("tip_mtp") {
        None | Some(serde_json::Value::Null) => None,
        Some(t) => Some(
            t.as_i64()
                .context("\"tip_mtp\" is not an integer (seconds)")?,
        ),
    };
    let next = NextBlock::given(optional_u32(&v, "next_height")?, tip_mtp)
        .map_err(|e| anyhow::anyhow!("\"next_height\" and \"tip_mtp\": {e}"))?;
    Ok(LooseTx {
        raw,
        spent,
        flags,
        next,
    })
}

/// The unsigned 32-bit integer at `key` of a JSON object, if present.
fn optional_u32(v: &serde_json::Value, key: &str) -> Result<Option<u32>> {
    match v.get(key) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(n) => Ok(Some(
            n.as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .with_context(|| format!("\"{key}\" is not an unsigned 32-bit integer"))?,
        )),
    }
}

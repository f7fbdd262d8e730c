//! `batchcrypt client ...`: calls to a running `batchcrypt serve`.

use anyhow::{bail, Context, Result};
use batchcrypt::secp256k1::SigFormat;
use batchcrypt_serve::client::{
    column, ecdsa_request, schnorr_request, sm2_request, verdicts, Client, JobOptions, Options,
    PackedColumns, SharedMemory, Streamable,
};
use batchcrypt_serve::proto::{
    AesMode, AesStart, Column, EcdsaCurve, EchoRequest, HashAlgorithm, HashReply, HashRequest,
    JobState, Network, VerifyBlockRequest, VerifyReply,
};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::{BufRead, IsTerminal};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(clap::Args)]
#[command(
    about = "Call a running `batchcrypt serve`",
    after_help = "Examples:\n  batchcrypt client health\n  batchcrypt client ping --count 10000\n  batchcrypt client hash --double --lines ids.txt\n  batchcrypt client --per-request 4096 hash --lines ids.txt\n  batchcrypt client --shared-memory hash --double --lines ids.txt   (a server on this machine started with --shared-memory)\n  batchcrypt client --frames /run/batchcrypt.frames hash --double --lines ids.txt   (a server on this machine started with --frames-socket /run/batchcrypt.frames)\n  batchcrypt client verify-ecdsa sigs.txt\n  batchcrypt client verify-sm2 --id alice@example sigs.txt\n  batchcrypt client encrypt --key-file k.hex -i backup.tar -o backup.tar.bcg\n  batchcrypt client verify-block block.raw --spent block.undo\n  batchcrypt client verify-tx txs.jsonl\n  batchcrypt client register circuit.zkey --name transfer\n  batchcrypt client prove CIRCUIT_ID witness.wtns proof.json public.json\n  batchcrypt client submit CIRCUIT_ID witness.wtns --priority 5\n  batchcrypt client wait JOB_ID proof.json public.json\n  batchcrypt client trace JOB_ID trace.json"
)]
pub struct Args {
    /// The server's address: `host:port`, or `unix:PATH` for the Unix socket of a server on
    /// this machine (`batchcrypt serve --unix-socket PATH`).
    #[arg(
        long,
        global = true,
        env = "BATCHCRYPT_SERVER",
        default_value = "127.0.0.1:7700"
    )]
    server: String,
    /// Bearer token (also BATCHCRYPT_TOKEN).
    #[arg(long, global = true, env = "BATCHCRYPT_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// PEM certificate of the authority that signed the server's TLS certificate.
    #[arg(long, global = true)]
    tls_ca: Option<PathBuf>,
    /// Items per request for `hash` and `verify-*`: a file's lines go to the server in requests
    /// of this many over one stream (several in flight, each batched with other clients'), and
    /// results print in order as their replies come.
    #[arg(long, global = true, default_value_t = 16384, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    per_request: usize,
    /// For `hash` and `verify-*` with a server on this machine started with `--shared-memory`:
    /// the file's items (and the digests) pass through one shared-memory region in DIR
    /// (default /dev/shm, the server's default) instead of the connection, which then carries
    /// only where they lie. Written `--shared-memory` or `--shared-memory=DIR`.
    #[arg(long, global = true, value_name = "DIR", num_args = 0..=1, require_equals = true, default_missing_value = batchcrypt_serve::shared::DEFAULT_DIR)]
    shared_memory: Option<PathBuf>,
    /// For `hash` and `verify-*` with a server on this machine started with `--frames-socket
    /// PATH`: the requests go over that socket in plain frames instead of gRPC (the other
    /// commands, and registering shared memory, still use --server).
    #[arg(long, global = true, value_name = "PATH")]
    frames: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Whether the server is up and serving.
    Health,
    /// Round trips that compute nothing (the Echo call): what the link and the server's
    /// handling of a message cost, apart from any batch. Prints latency and rate.
    Ping {
        /// Round trips, one after another over one stream.
        #[arg(long, default_value_t = 1000, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        count: usize,
        /// Bytes sent each time (a request of 256 SHA256d messages is 16,384).
        #[arg(long, default_value_t = 16384)]
        bytes: usize,
        /// Bytes asked back each time, at most 1 MiB (256 digests are 8,192).
        #[arg(long, default_value_t = 8192)]
        reply_bytes: u32,
    },
    /// SHA-256 (or SHA256d, SM3) of each line of a file, one digest per line, in hex (the same
    /// digests as `batchcrypt sha256 --lines`).
    Hash {
        /// The file: each line (without its newline, `\n` or `\r\n`; empty lines too) is a
        /// message.
        #[arg(long)]
        lines: PathBuf,
        /// Double SHA-256 (Bitcoin's SHA256d).
        #[arg(long, conflicts_with = "sm3")]
        double: bool,
        /// SM3 (GB/T 32905) instead of SHA-256.
        #[arg(long)]
        sm3: bool,
    },
    /// ECDSA: lines of `HASH SIGNATURE PUBKEY` in hex (DER signatures unless --compact); prints
    /// `valid` or `invalid: reason` per line.
    VerifyEcdsa {
        /// The signatures, a line each (blank lines are skipped).
        file: PathBuf,
        /// Signatures as 64 bytes, r then s (IEEE P1363), instead of DER.
        #[arg(long)]
        compact: bool,
        /// The curve: secp256k1 or p256 (NIST P-256).
        #[arg(long, default_value = "secp256k1", value_parser = ["secp256k1", "p256"])]
        curve: String,
    },
    /// BIP340: lines of `MESSAGE SIGNATURE XONLY_PUBKEY` in hex.
    VerifySchnorr {
        /// The signatures, a line each (blank lines are skipped).
        file: PathBuf,
    },
    /// SM2 (GB/T 32918): lines of `MESSAGE SIGNATURE PUBKEY` in hex (DER signatures unless
    /// --compact).
    VerifySm2 {
        /// The signatures, a line each (blank lines are skipped).
        file: PathBuf,
        /// Signatures as 64 bytes, r then s, instead of DER.
        #[arg(long)]
        compact: bool,
        /// The signers' distinguishing identifier, as text (GM/T 0009's default unless given).
        #[arg(long, default_value = "1234567812345678")]
        id: String,
    },
    /// Encrypt on the server: the same formats as `batchcrypt encrypt` (GCM chunks of at most
    /// 2^26 bytes there), streamed both ways.
    Encrypt(crate::cmd::aes::Args),
    /// Decrypt on the server what `encrypt` (local or served) wrote; a file output appears only
    /// once every chunk has authenticated.
    Decrypt(crate::cmd::aes::Args),
    /// Validate a Bitcoin block with the outputs it spends on the server (as `batchcrypt bitcoin
    /// verify-block`; exit status 0 when valid, 1 when invalid).
    VerifyBlock(crate::cmd::bitcoin::BlockArgs),
    /// Verify loose Bitcoin transactions on the server, batched with other clients' (JSON lines
    /// in and out, as `batchcrypt bitcoin verify-tx`).
    VerifyTx(crate::cmd::bitcoin::TxArgs),
    /// Register a circuit's proving key; prints its id.
    Register {
        /// The circuit's proving key, as snarkjs writes it (`.zkey`, BN254 or BLS12-381).
        zkey: PathBuf,
        /// A name for the circuit, used in the server's messages about it.
        #[arg(long, default_value = "")]
        name: String,
    },
    /// Prove and wait: writes proof.json and public.json as snarkjs does. Across a restart of
    /// the server the job is found again, not run twice.
    Prove {
        /// The circuit's id, as `register` printed it.
        circuit: String,
        /// The witness, as circom's generator writes it (`.wtns`).
        witness: PathBuf,
        /// Where the proof goes.
        #[arg(default_value = "proof.json")]
        proof: PathBuf,
        /// Where the public signals go.
        #[arg(default_value = "public.json")]
        public: PathBuf,
        #[command(flatten)]
        job: Queueing,
    },
    /// Queue a proof and print the job's id without waiting (then `wait`, `job`, `cancel`).
    Submit {
        /// The circuit's id, as `register` printed it.
        circuit: String,
        /// The witness, as circom's generator writes it (`.wtns`).
        witness: PathBuf,
        #[command(flatten)]
        job: Queueing,
        /// Resubmitting with the same id returns the same job.
        #[arg(long, default_value = "")]
        request_id: String,
    },
    /// Wait for a job and write its proof.
    Wait {
        /// The job's id, as `submit` printed it.
        job: String,
        /// Where the proof goes.
        #[arg(default_value = "proof.json")]
        proof: PathBuf,
        /// Where the public signals go.
        #[arg(default_value = "public.json")]
        public: PathBuf,
    },
    /// A job's state.
    Job {
        /// The job's id, as `submit` printed it.
        job: String,
    },
    /// Cancel a job.
    Cancel {
        /// The job's id, as `submit` printed it.
        job: String,
    },
    /// Write a finished job's stages as a Chrome/Perfetto trace.
    Trace {
        /// The job's id, as `submit` printed it.
        job: String,
        /// The trace file (open it in ui.perfetto.dev or chrome://tracing).
        output: PathBuf,
    },
}

/// How a proof is queued.
#[derive(clap::Args)]
struct Queueing {
    /// Higher runs first; equal priorities run in the order submitted.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    priority: i32,
    /// If the job has not started within this many seconds, it ends as expired instead of
    /// running (a job that has started is not stopped).
    #[arg(long, value_name = "SECONDS", value_parser = seconds, allow_negative_numbers = true)]
    deadline: Option<Duration>,
}

impl Queueing {
    fn options(&self) -> JobOptions {
        JobOptions::queued(self.priority, self.deadline)
    }
}

/// A number of seconds, fractions allowed.
fn seconds(s: &str) -> Result<Duration, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    Duration::try_from_secs_f64(v).map_err(|_| format!("{s}: give a number of seconds, 0 or more"))
}

fn hex_lines(file: &PathBuf, fields: usize) -> Result<Vec<Vec<Vec<u8>>>> {
    let f = std::fs::File::open(file).with_context(|| format!("opening {}", file.display()))?;
    let mut out = Vec::new();
    for (n, line) in std::io::BufReader::new(f).lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let parts = line
            .split_whitespace()
            .map(hex::decode)
            .collect::<Result<Vec<_>, _>>()
            .with_context(|| format!("{}:{}: not hex", file.display(), n + 1))?;
        if parts.len() != fields {
            bail!("{}:{}: expected {fields} hex fields", file.display(), n + 1);
        }
        out.push(parts);
    }
    Ok(out)
}

/// Sends `requests` (of `total` items) over one stream (or the frames socket), printing each
/// reply with `print` (which gives the items it held) as it comes, in order.
async fn print_replies<Q: Streamable>(
    c: &mut Client,
    requests: impl Iterator<Item = Q>,
    total: usize,
    per: usize,
    mut print: impl FnMut(Q::Reply) -> usize,
) -> Result<()> {
    let progress = progress(total, per);
    c.each_reply(requests, |reply| progress.inc(print(reply) as u64))
        .await?;
    progress.finish_and_clear();
    Ok(())
}

/// Prints a verification reply's verdicts, `valid` or `invalid: reason`, one line an item.
fn print_verdicts(reply: VerifyReply) -> usize {
    let v = verdicts(reply);
    for r in &v {
        match r {
            Ok(()) => println!("valid"),
            Err(why) => println!("invalid: {why}"),
        }
    }
    v.len()
}

/// Items answered of a run's `total`, on stderr while it is a terminal and the run spans
/// several requests of `per`.
fn progress(total: usize, per: usize) -> ProgressBar {
    if total <= per || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total as u64);
    bar.set_style(
        ProgressStyle::with_template("{pos:>10}/{len} items [{bar:40}] {per_sec} eta {eta}")
            .unwrap()
            .progress_chars("=> "),
    );
    bar
}

/// The item ranges of `n` items cut into requests of `per`.
fn requests(n: usize, per: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    (0..n).step_by(per).map(move |s| s..(s + per).min(n))
}

/// The requests, sent as they are or, with `--shared-memory` (`dir`), with their columns moved
/// into one new region registered with the server, `extra` bytes left after them (where
/// digests go), and where those begin.
async fn maybe_shared<'a, Q: PackedColumns + 'a>(
    c: &mut Client,
    dir: Option<&Path>,
    requests: impl Iterator<Item = Q> + 'a,
    extra: u64,
) -> Result<(
    Box<dyn Iterator<Item = Q> + 'a>,
    Option<(SharedMemory, u64)>,
)> {
    let Some(dir) = dir else {
        return Ok((Box::new(requests), None));
    };
    let mut requests: Vec<Q> = requests.collect();
    let size = requests.iter_mut().map(|r| r.packed_bytes()).sum::<u64>() + extra;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let name = format!("client-{}-{nanos}", std::process::id());
    let region = c
        .shared_memory(dir, &name, size.max(1))
        .await
        .context("--shared-memory: is the server on this machine, started with --shared-memory on the same directory?")?;
    let mut at = 0;
    for r in &mut requests {
        at = region
            .share(r, at)
            .with_context(|| format!("writing shared memory in {}", dir.display()))?;
    }
    Ok((Box::new(requests.into_iter()), Some((region, at))))
}

/// Unregisters the region [`maybe_shared`] made, if it made one, and removes its file.
async fn release(c: &mut Client, shared: Option<(SharedMemory, u64)>) -> Result<()> {
    if let Some((region, _)) = shared {
        c.release_shared_memory(region).await?;
    }
    Ok(())
}

fn write_proof(
    reply: &batchcrypt_serve::proto::ProofReply,
    proof: &std::path::Path,
    public: &std::path::Path,
) -> Result<()> {
    let job = reply.job.clone().unwrap_or_default();
    let state = JobState::try_from(job.state).unwrap_or(JobState::Failed);
    if state != JobState::Done {
        bail!(
            "job {} is {}: {}",
            job.job_id,
            state.as_str_name().to_lowercase(),
            job.error
        );
    }
    batchcrypt::output::write(proof, &reply.proof_json)?;
    batchcrypt::output::write(public, &reply.public_json)?;
    eprintln!(
        "job {}: proof in {}, public signals in {}",
        job.job_id,
        proof.display(),
        public.display()
    );
    Ok(())
}

pub fn run(a: &Args) -> Result<()> {
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async {
        let options = Options {
            token: a.token.clone(),
            tls_ca: match &a.tls_ca {
                Some(p) => {
                    Some(std::fs::read(p).with_context(|| format!("reading {}", p.display()))?)
                }
                None => None,
            },
            max_message_bytes: None,
            frames: a.frames.clone(),
        };
        let mut c = Client::connect_with(&a.server, options)
            .await
            .map_err(anyhow::Error::msg)?;
        let per = a.per_request;
        match &a.command {
            Command::Health => {
                let ok = c.ready().await?;
                println!("{}", if ok { "serving" } else { "not serving" });
                if !ok {
                    std::process::exit(1);
                }
            }
            Command::Ping {
                count,
                bytes,
                reply_bytes,
            } => {
                let request = EchoRequest {
                    payload: vec![0u8; *bytes].into(),
                    reply_bytes: *reply_bytes,
                };
                let mut stream = c.echo_stream().await?;
                let mut lat = Vec::with_capacity(*count);
                let t = std::time::Instant::now();
                for _ in 0..*count {
                    let sent = std::time::Instant::now();
                    let reply = stream.call(request.clone()).await?;
                    lat.push(sent.elapsed().as_secs_f64() * 1e3);
                    if reply.payload.len() != *reply_bytes as usize {
                        bail!("the server replied {} bytes, not {reply_bytes}", reply.payload.len());
                    }
                }
                let secs = t.elapsed().as_secs_f64();
                lat.sort_by(f64::total_cmp);
                let at = |p: f64| lat[((lat.len() - 1) as f64 * p) as usize];
                println!(
                    "{count} round trips of {bytes} bytes up and {reply_bytes} down in {secs:.3} s: {:.0}/s, latency p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
                    *count as f64 / secs,
                    at(0.5),
                    at(0.99),
                    at(1.0)
                );
            }
            Command::Hash { lines, double, sm3 } => {
                let text =
                    std::fs::read(lines).with_context(|| format!("reading {}", lines.display()))?;
                let msgs: Vec<&[u8]> = crate::cmd::sha256::lines(&text).collect();
                let alg = match (double, sm3) {
                    (_, true) => HashAlgorithm::Sm3,
                    (true, _) => HashAlgorithm::Sha256d,
                    _ => HashAlgorithm::Sha256,
                };
                let n = msgs.len();
                let packed: Vec<Column> =
                    requests(n, per).map(|r| column(&msgs[r])).collect();
                drop(msgs);
                drop(text);
                let sent = packed.into_iter().map(move |col| HashRequest {
                    algorithm: alg as i32,
                    messages: Vec::new(),
                    messages_packed: Some(col),
                    digests_to: None,
                });
                let dir = a.shared_memory.as_deref();
                let (sent, shared) = maybe_shared(&mut c, dir, sent, 32 * n as u64).await?;
                // Digests go to the region after the messages, each request's at its items'
                // place; each reply then says only that they are there.
                let sent = sent.zip(requests(n, per)).map(|(mut r, items)| {
                    if let Some((region, at)) = &shared {
                        let span = 32 * items.start as u64..32 * items.end as u64;
                        r.digests_to = Some(region.span(at + span.start, span.end - span.start));
                    }
                    r
                });
                let mut printed = 0;
                let mut failed = None;
                let print = |reply: HashReply| {
                    let digests = match &shared {
                        None => reply.packed_digests.to_vec(),
                        Some((region, at)) => {
                            let mut d = vec![0u8; 32 * per.min(n - printed)];
                            if let Err(e) = region.read_at(&mut d, at + 32 * printed as u64) {
                                failed.get_or_insert(e);
                            }
                            d
                        }
                    };
                    for d in digests.chunks(32) {
                        println!("{}", hex::encode(d));
                    }
                    printed += digests.len() / 32;
                    digests.len() / 32
                };
                print_replies(&mut c, sent, n, per, print).await?;
                if let Some(e) = failed {
                    bail!("reading the digests from shared memory: {e}");
                }
                release(&mut c, shared).await?;
            }
            Command::VerifyEcdsa {
                file,
                compact,
                curve,
            } => {
                let rows = hex_lines(file, 3)?;
                let hashes = rows
                    .iter()
                    .map(|r| <[u8; 32]>::try_from(r[0].as_slice()))
                    .collect::<Result<Vec<_>, _>>()
                    .context("every message hash must be 32 bytes")?;
                let sigs: Vec<&[u8]> = rows.iter().map(|r| r[1].as_slice()).collect();
                let keys: Vec<&[u8]> = rows.iter().map(|r| r[2].as_slice()).collect();
                let format = if *compact {
                    SigFormat::Compact
                } else {
                    SigFormat::Der
                };
                let curve = match curve.as_str() {
                    "p256" => EcdsaCurve::P256,
                    _ => EcdsaCurve::Secp256k1,
                };
                let sent = requests(rows.len(), per).map(|r| {
                    ecdsa_request(curve, &hashes[r.clone()], &sigs[r.clone()], &keys[r], format, false)
                });
                let dir = a.shared_memory.as_deref();
                let (sent, shared) = maybe_shared(&mut c, dir, sent, 0).await?;
                print_replies(&mut c, sent, rows.len(), per, print_verdicts).await?;
                release(&mut c, shared).await?;
            }
            Command::VerifySchnorr { file } => {
                let rows = hex_lines(file, 3)?;
                let col = |k: usize| rows.iter().map(|r| r[k].as_slice()).collect::<Vec<_>>();
                let (msgs, sigs, keys) = (col(0), col(1), col(2));
                let sent = requests(rows.len(), per)
                    .map(|r| schnorr_request(&msgs[r.clone()], &sigs[r.clone()], &keys[r]));
                let dir = a.shared_memory.as_deref();
                let (sent, shared) = maybe_shared(&mut c, dir, sent, 0).await?;
                print_replies(&mut c, sent, rows.len(), per, print_verdicts).await?;
                release(&mut c, shared).await?;
            }
            Command::VerifySm2 { file, compact, id } => {
                let rows = hex_lines(file, 3)?;
                let col = |k: usize| rows.iter().map(|r| r[k].as_slice()).collect::<Vec<_>>();
                let (msgs, sigs, keys) = (col(0), col(1), col(2));
                let format = if *compact {
                    SigFormat::Compact
                } else {
                    SigFormat::Der
                };
                let sent = requests(rows.len(), per).map(|r| {
                    let (m, s, k) = (&msgs[r.clone()], &sigs[r.clone()], &keys[r]);
                    sm2_request(m, s, k, id.as_bytes(), format)
                });
                let dir = a.shared_memory.as_deref();
                let (sent, shared) = maybe_shared(&mut c, dir, sent, 0).await?;
                print_replies(&mut c, sent, rows.len(), per, print_verdicts).await?;
                release(&mut c, shared).await?;
            }
            Command::Encrypt(args) | Command::Decrypt(args) => {
                use crate::cmd::aes::{iv, key_bytes, transform, Mode};
                let (mode, iv) = match args.mode {
                    Mode::Gcm => (AesMode::GcmChunked, Vec::new()),
                    Mode::Ctr => (AesMode::Ctr, iv(args)?.to_vec()),
                };
                let start = AesStart {
                    key: key_bytes(args)?.into(),
                    mode: mode as i32,
                    decrypt: matches!(a.command, Command::Decrypt(_)),
                    iv: iv.into(),
                    chunk_log2: args.chunk_log2.into(),
                };
                // The call runs on this thread, writing the output as its replies come.
                tokio::task::block_in_place(|| {
                    transform(args, |input, output, tick| {
                        let mut done = 0;
                        let call = c.aes(start, input, |data| {
                            output.write_all(data)?;
                            done += data.len() as u64;
                            tick(done);
                            Ok(())
                        });
                        let (_, written) = tokio::runtime::Handle::current().block_on(call)?;
                        Ok(written)
                    })
                })?;
            }
            Command::VerifyBlock(b) => {
                let raw = crate::cmd::bitcoin::read_block_file(&b.block)?;
                let block = batchcrypt::bitcoin::parse_block(&raw)
                    .with_context(|| format!("parsing {}", b.block.display()))?;
                let spent = batchcrypt::bitcoin::spent::read_spent_file(&b.spent, &block)
                    .with_context(|| format!("reading spent outputs from {}", b.spent.display()))?;
                let request = VerifyBlockRequest {
                    spent: spent.iter().map(Into::into).collect(),
                    block: raw.into(),
                    network: Network::from(b.network) as i32,
                    height: b.height.unwrap_or(0),
                    skip_proof_of_work: b.no_pow,
                    median_time_past: b.median_time_past,
                };
                let r = c.verify_block(request).await?;
                println!("block      {} (height {})", r.hash, r.height);
                println!("rules      {}", r.rules);
                println!(
                    "size       {} txs, {} inputs, weight {}, sigop cost {}, fees {} sat",
                    r.transactions, r.inputs, r.weight, r.sigop_cost, r.fees
                );
                let us = Duration::from_micros;
                use crate::cmd::bitcoin::{signature_counts, stages_line};
                println!(
                    "{} (in the server)",
                    stages_line(us(r.structure_us), us(r.inputs_us), us(r.scripts_us))
                );
                println!(
                    "signatures {}",
                    signature_counts(
                        r.ecdsa_checks,
                        &r.ecdsa_backend,
                        r.schnorr_checks,
                        &r.schnorr_backend
                    )
                );
                for u in &r.unchecked {
                    println!("unchecked  {u}");
                }
                if !r.valid {
                    println!("verdict    INVALID: {}", r.reason);
                    std::process::exit(1);
                }
                println!("verdict    VALID");
            }
            Command::VerifyTx(t) => {
                use crate::cmd::bitcoin::{print_tx_verdicts, read_txs};
                let items = read_txs(t)?;
                let verdicts = c.verify_transactions(&items).await?;
                let verdicts = verdicts.iter().map(|v| match v.valid {
                    true => Ok(()),
                    false => Err((u64::try_from(v.input).ok(), v.reason.as_str())),
                });
                let valid = print_tx_verdicts(&items, verdicts)?;
                eprintln!("{} transactions ({valid} valid)", items.len());
            }
            Command::Register { zkey, name } => {
                let bytes =
                    std::fs::read(zkey).with_context(|| format!("reading {}", zkey.display()))?;
                let r = c.register(bytes, name).await?;
                eprintln!(
                    "circuit ({}): {} signals, domain 2^{}; GPU memory: key {} MiB, each proof {} MiB",
                    r.curve,
                    r.signals,
                    r.constraints_domain.trailing_zeros(),
                    r.key_bytes >> 20,
                    r.proof_bytes >> 20
                );
                println!("{}", r.circuit_id);
            }
            Command::Prove {
                circuit,
                witness,
                proof,
                public,
                job,
            } => {
                let w = std::fs::read(witness)
                    .with_context(|| format!("reading {}", witness.display()))?;
                let reply = c.prove(circuit, w, job.options()).await?;
                write_proof(&reply, proof, public)?;
            }
            Command::Submit {
                circuit,
                witness,
                job,
                request_id,
            } => {
                let w = std::fs::read(witness)
                    .with_context(|| format!("reading {}", witness.display()))?;
                println!(
                    "{}",
                    c.submit(circuit, w, request_id, job.options())
                        .await?
                        .job_id
                );
            }
            Command::Wait { job, proof, public } => {
                let reply = c.wait(job, false).await?;
                write_proof(&reply, proof, public)?;
            }
            Command::Job { job } | Command::Cancel { job } => {
                let j = if matches!(a.command, Command::Cancel { .. }) {
                    c.raw()
                        .cancel_job(batchcrypt_serve::proto::JobRef {
                            job_id: job.clone(),
                        })
                        .await?
                        .into_inner()
                } else {
                    c.job(job).await?
                };
                let state = JobState::try_from(j.state).unwrap_or(JobState::Failed);
                println!(
                    "{} {} attempts={}{}",
                    j.job_id,
                    state.as_str_name().to_lowercase(),
                    j.attempts,
                    if j.error.is_empty() {
                        String::new()
                    } else {
                        format!(" error: {}", j.error)
                    }
                );
            }
            Command::Trace { job, output } => {
                let t = c
                    .raw()
                    .job_trace(batchcrypt_serve::proto::JobRef {
                        job_id: job.clone(),
                    })
                    .await?
                    .into_inner();
                batchcrypt::output::write(output, t.chrome_trace_json)?;
                eprintln!("trace in {} (open it in ui.perfetto.dev)", output.display());
            }
        }
        Ok(())
    })
}

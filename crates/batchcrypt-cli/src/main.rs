//! `batchcrypt`: the command-line face of the library. Each subcommand is a thin layer in `cmd/`.

mod cmd;

/// The allocator: a server's connections allocate and free each message's buffers, and glibc's
/// per-thread arenas grew and trimmed their heaps on that churn (page faults and `mprotect` in the
/// connection threads' profile); mimalloc keeps its pages for the next message.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use anyhow::Result;
use batchcrypt::{BackendChoice, Engine};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "batchcrypt",
    version,
    about = "Batch cryptography on NVIDIA GPUs and CPU extensions",
    long_about = "Runs batches of the same cryptographic operation on the fastest hardware present: \
an NVIDIA GPU through CUDA, or CPU extensions (SHA-NI, AVX2, AVX-512). By default a cost model \
measured on this machine picks the backend per batch; --backend forces one.\n\n\
Start with `batchcrypt info` (what hardware was found) and `batchcrypt demo` (every primitive on \
built-in data, on every backend, checked against each other, with a throughput table).",
    after_help = "Examples:\n  batchcrypt demo\n  batchcrypt sha256 --double file1 file2\n  batchcrypt sha256 --lines ids.txt --backend gpu\n  batchcrypt merkle block.raw\n  batchcrypt bitcoin verify-block block.raw --spent block.undo\n  batchcrypt psi --listen 127.0.0.1:7766 --input mine.txt --output common.txt\n  batchcrypt encrypt --key-file k.hex -i backup.tar -o backup.tar.bcg\n  batchcrypt decrypt --key-file k.hex -i backup.tar.bcg -o backup.tar\n  batchcrypt prove circuit.zkey witness.wtns proof.json public.json\n  batchcrypt serve\n  batchcrypt client hash --lines ids.txt\n  BATCHCRYPT_BACKEND=cpu batchcrypt demo"
)]
struct Cli {
    /// Backend: auto, cpu, gpu, or one of portable, sha-ni, avx2, avx512, cuda, libsecp256k1, openssl.
    #[arg(long, short = 'b', global = true, env = batchcrypt::backend::BACKEND_ENV, default_value = "auto")]
    backend: BackendChoice,
    /// GPUs to use: all (default), none, or driver ordinals such as 0,2 (`batchcrypt info` lists
    /// them). A batch large enough is split over all of them in proportion to their measured speed.
    #[arg(long, global = true, env = batchcrypt::backend::gpu::DEVICES_ENV, value_name = "all|none|0,1,..")]
    devices: Option<batchcrypt::backend::gpu::DeviceSelection>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run every primitive on built-in data on every backend present, check they agree, print throughput.
    Demo(cmd::demo::Args),
    /// Show the CPU features and every GPU found, and which backends can run.
    Info,
    /// SHA-256 (or SHA256d) of files, or of each line of a file as one batch.
    Sha256(cmd::sha256::Args),
    /// Bitcoin validation, consensus-exact: blocks, chains and loose transactions.
    #[command(subcommand)]
    Bitcoin(cmd::bitcoin::Command),
    /// Merkle root and txids of a raw Bitcoin block, checked against its header.
    Merkle(cmd::merkle::Args),
    /// Measure the cost model on this machine, show where the CPU/GPU crossover lies, and save it
    /// so that later processes start from it instead of measuring on first use.
    Calibrate(cmd::calibrate::Args),
    /// Private set intersection with a peer over TCP (ECDH-PSI over SM2).
    Psi(cmd::psi::Args),
    /// Encrypt a file or stream with AES-128/256: authenticated chunked GCM (default) or raw CTR.
    Encrypt(cmd::aes::Args),
    /// Decrypt what `encrypt` wrote (GCM: each chunk is authenticated before it is written).
    Decrypt(cmd::aes::Args),
    /// Groth16 proof for a circom circuit (snarkjs's .zkey and a .wtns in, proof.json and public.json out).
    Prove(cmd::groth16::ProveArgs),
    /// Development Groth16 proving key for a circom circuit, for tests and benchmarks only.
    #[command(name = "groth16-setup")]
    Groth16Setup(cmd::groth16::SetupArgs),
    /// Many Groth16 proofs on one key: jobs from standard input, run concurrently, with a waterfall trace.
    #[command(name = "prove-server")]
    ProveServer(cmd::groth16::ServerArgs),
    /// Serve over gRPC to many clients: small requests merged into GPU batches, proofs queued durably.
    Serve(cmd::serve::Args),
    /// Call a running `batchcrypt serve`.
    Client(cmd::client::Args),
}

fn main() {
    let cli = Cli::parse();
    if let Some(d) = &cli.devices {
        // Read when the GPUs are first opened, later in this single-threaded start.
        std::env::set_var(batchcrypt::backend::gpu::DEVICES_ENV, d.to_string());
    }
    let engine = Engine::with_backend(cli.backend);
    let result: Result<()> = match cli.command {
        Command::Demo(a) => cmd::demo::run(&a),
        Command::Info => cmd::info::run(),
        Command::Sha256(a) => cmd::sha256::run(&engine, &a),
        Command::Merkle(a) => cmd::merkle::run(&engine, &a),
        Command::Bitcoin(c) => cmd::bitcoin::run(&engine, &c),
        Command::Calibrate(a) => cmd::calibrate::run(&Engine::calibrating(cli.backend), &a),
        Command::Psi(a) => cmd::psi::run(&engine, &a),
        Command::Encrypt(a) => cmd::aes::run(&engine, &a, false),
        Command::Decrypt(a) => cmd::aes::run(&engine, &a, true),
        Command::Prove(a) => cmd::groth16::prove(&engine, &a),
        Command::Groth16Setup(a) => cmd::groth16::setup(&a),
        Command::ProveServer(a) => cmd::groth16::serve(engine, &a),
        Command::Serve(a) => cmd::serve::run(engine, &a),
        Command::Client(a) => cmd::client::run(&a),
    };
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

//! `batchcrypt serve`: the daemon (crates/batchcrypt-serve) with its settings from the command line.

use anyhow::{Context, Result};
use batchcrypt::Engine;
use batchcrypt_serve::batcher::BatchConfig;
use batchcrypt_serve::ServerConfig;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[derive(clap::Args)]
#[command(
    about = "Serve batchcrypt over gRPC to many clients: small requests merged into GPU batches, proofs queued durably",
    long_about = "One daemon owns the machine's GPUs and serves many clients over gRPC (the API is \
crates/batchcrypt-serve/proto/batchcrypt/v1/batchcrypt.proto; docs/service.md explains it). \
Requests of the same operation from every client are merged into one batch (--max-delay-ms, \
--max-batch), so a wallet sending 200 signatures gets a GPU's throughput. Proofs: register a \
circuit's .zkey once, then submit witnesses; jobs are kept in --data so none accepted is lost if \
the server stops, and admitted by the GPU memory they need (--gpu-memory).\n\n\
It listens on loopback unless told otherwise; elsewhere it wants --tls-cert, --tls-key and --token. \
Ctrl-C or SIGTERM stops it gracefully: calls in flight and running proofs finish first.",
    after_help = "Examples:\n  batchcrypt serve\n  batchcrypt serve --unix-socket /run/batchcrypt.sock    (then: batchcrypt client --server unix:/run/batchcrypt.sock health)\n  batchcrypt serve --frames-socket /run/batchcrypt.frames    (for local programs sending many small requests)\n  batchcrypt serve --listen 0.0.0.0:7700 --tls-cert server.pem --tls-key server.key --token-file token.txt\n  batchcrypt client health\n  batchcrypt client hash --lines ids.txt\n  curl -s 127.0.0.1:7701/metrics"
)]
pub struct Args {
    /// Address for gRPC.
    #[arg(long, default_value = "127.0.0.1:7700")]
    listen: SocketAddr,
    /// Also serve on this Unix socket, for clients on this machine (`batchcrypt client --server
    /// unix:PATH`): calls skip the TCP stack. Its owner and group may connect; no TLS.
    #[arg(long, value_name = "PATH")]
    unix_socket: Option<PathBuf>,
    /// Also serve the batched operations (verification, hashing, the PSI multiplications) on
    /// this Unix socket in plain length-prefixed frames instead of gRPC: the cheapest way for a
    /// program on this machine to send many small requests (docs/service.md, "Frames"; clients:
    /// Rust's `Client` with `Options::frames` or `FramesClient`, Python's `Client(address,
    /// frames=PATH)`). Its owner and group may connect.
    #[arg(long, value_name = "PATH")]
    frames_socket: Option<PathBuf>,
    /// Let clients on this machine pass their data through shared memory instead of the
    /// connection: files named batchcrypt-* in DIR (default /dev/shm) that they create and
    /// register. For many small requests it spares both ends the connection's copies.
    #[arg(long, value_name = "DIR", num_args = 0..=1, default_missing_value = batchcrypt_serve::shared::DEFAULT_DIR)]
    shared_memory: Option<PathBuf>,
    /// Address for Prometheus metrics (`/metrics`), or `none`.
    #[arg(long, default_value = "127.0.0.1:7701")]
    metrics_listen: String,
    /// Where the proof queue and uploaded keys are kept.
    #[arg(
        long,
        env = "BATCHCRYPT_SERVE_DATA",
        default_value = "batchcrypt-serve-data"
    )]
    data: PathBuf,
    /// Under load, how long a request may wait for others to join its batch.
    #[arg(long, default_value_t = BatchConfig::default().max_delay.as_secs_f64() * 1e3)]
    max_delay_ms: f64,
    /// Items at which a batch stops gathering.
    #[arg(long, default_value_t = BatchConfig::default().max_items)]
    max_batch: usize,
    /// Items at which a hash batch (SHA-256, SHA256d, SM3) stops gathering: smaller than
    /// --max-batch, as a hash costs little and smaller batches overlap better.
    #[arg(long, default_value_t = BatchConfig::default().max_hash_items)]
    max_hash_batch: usize,
    /// Batches of one operation running at once.
    #[arg(long, default_value_t = BatchConfig::default().in_flight as u32, value_parser = clap::value_parser!(u32).range(1..=64))]
    in_flight: u32,
    /// Proofs running at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=256))]
    workers: u32,
    /// GPU memory for resident proving keys and running proofs, in MiB (default: the smallest
    /// GPU's measured budget).
    #[arg(long, value_name = "MIB")]
    gpu_memory: Option<u64>,
    /// Bearer token clients must send (also BATCHCRYPT_TOKEN).
    #[arg(long, env = "BATCHCRYPT_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// File holding the bearer token (its first line).
    #[arg(long, conflicts_with = "token")]
    token_file: Option<PathBuf>,
    /// PEM certificate chain for TLS.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// PEM private key for TLS.
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Listen beyond loopback without TLS or a token (only on a network you trust).
    #[arg(long)]
    allow_insecure: bool,
    /// Largest request, in MiB.
    #[arg(long, default_value_t = 64)]
    max_message_mib: usize,
    /// Most items in one request.
    #[arg(long, default_value_t = 1 << 20)]
    max_request_items: usize,
    /// Requests per second per client address (0: no limit).
    #[arg(long, default_value_t = 0)]
    rate_limit: u32,
    /// Threads serving the connections (default: one per core); each connection stays on one.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    io_threads: Option<u32>,
}

pub fn run(engine: Engine, a: &Args) -> Result<()> {
    let mut c = ServerConfig::new(a.data.clone());
    c.listen = a.listen;
    c.unix_socket = a.unix_socket.clone();
    c.frames_socket = a.frames_socket.clone();
    c.shared_memory = a.shared_memory.clone();
    c.metrics = match a.metrics_listen.as_str() {
        "none" => None,
        m => Some(m.parse().with_context(|| format!("--metrics-listen {m}"))?),
    };
    c.batch = BatchConfig {
        max_delay: Duration::from_secs_f64(a.max_delay_ms.max(0.0) / 1e3),
        max_items: a.max_batch.max(1),
        max_hash_items: a.max_hash_batch.max(1),
        in_flight: a.in_flight as usize,
        ..BatchConfig::default()
    };
    c.prover.workers = a.workers as usize;
    if let Some(m) = a.gpu_memory {
        c.prover.memory = m << 20;
    }
    // Test hook: each proof holds this long after it starts (stopping the server mid-proof).
    if let Some(ms) = std::env::var("BATCHCRYPT_SERVE_HOLD_MS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        c.prover.hold = Duration::from_millis(ms);
    }
    c.token = match (&a.token, &a.token_file) {
        (Some(t), _) => Some(t.clone()),
        (None, Some(f)) => Some(
            std::fs::read_to_string(f)
                .with_context(|| format!("reading {}", f.display()))?
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_string(),
        ),
        (None, None) => None,
    };
    c.tls = a.tls_cert.clone().zip(a.tls_key.clone());
    c.allow_insecure = a.allow_insecure;
    c.max_message_bytes = a.max_message_mib << 20;
    c.max_request_items = a.max_request_items;
    c.rate_limit = a.rate_limit;
    if let Some(n) = a.io_threads {
        c.io_threads = n as usize;
    }

    // Connections are served on threads of their own (--io-threads); this runtime forms the
    // batches and runs the metrics listener.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let running = batchcrypt_serve::start(Arc::new(engine), c)
            .await
            .map_err(anyhow::Error::msg)?;
        eprintln!(
            "batchcrypt serve: gRPC on {}{}{}{}; data in {}{}{}",
            running.addr,
            running
                .unix_socket
                .as_ref()
                .map(|p| format!(" and unix:{}", p.display()))
                .unwrap_or_default(),
            running
                .frames_socket
                .as_ref()
                .map(|p| format!(", frames on {}", p.display()))
                .unwrap_or_default(),
            running
                .metrics_addr
                .map(|m| format!(", metrics on http://{m}/metrics"))
                .unwrap_or_default(),
            a.data.display(),
            a.shared_memory
                .as_ref()
                .map(|d| format!("; shared memory in {}", d.display()))
                .unwrap_or_default(),
            if running.requeued > 0 {
                format!(
                    "; {} proof jobs interrupted by a stop queued again",
                    running.requeued
                )
            } else {
                String::new()
            }
        );
        running
            .until(async {
                let mut term =
                    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                        .expect("SIGTERM handler");
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
                eprintln!(
                    "batchcrypt serve: stopping; calls in flight and running proofs finish first"
                );
            })
            .await
            .map_err(anyhow::Error::msg)
    })
}

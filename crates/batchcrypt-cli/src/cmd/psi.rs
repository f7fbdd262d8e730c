//! `batchcrypt psi`: one party of an ECDH-PSI run over TCP (see docs/psi.md).

use anyhow::{Context, Result};
use batchcrypt::psi::{self, ItemFile, Multiplier, Progress, Stage};
use batchcrypt::Engine;
use batchcrypt_serve::client::{Client, Options, ServedMultiplier};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use std::net::TcpListener;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
#[command(
    long_about = "Private set intersection (ECDH-PSI over SM2, semi-honest): two parties learn which \
identifiers they have in common and nothing else about each other's items. Run one process per \
party: one with --listen, the other with --connect. Each reads its set from a text file (one \
identifier per line, no duplicates, no empty lines) and writes the common items to --output \
(written in full at the end, or not at all).\n\n\
Items are hashed to the curve (RFC 9380, SM3, simplified SWU) and blinded with a fresh secret key \
on the backend chosen by --backend (each side chooses its own), or on a running `batchcrypt serve` \
with --server. The protocol is in docs/psi.md.",
    after_help = "Example (two terminals, or two machines):\n  batchcrypt psi --listen 0.0.0.0:7766 --input alice.txt --output common.txt\n  batchcrypt psi --connect alice-host:7766 --input bob.txt --output common.txt --backend cpu\n  batchcrypt psi --connect alice-host:7766 --input bob.txt --output common.txt --server 127.0.0.1:7700"
)]
pub struct Args {
    /// Wait for the peer on this address (host:port), at most --timeout seconds.
    #[arg(long, conflicts_with = "connect", required_unless_present = "connect")]
    listen: Option<String>,
    /// Connect to the peer at this address (host:port); retried until --timeout.
    #[arg(long)]
    connect: Option<String>,
    /// This party's set: one identifier per line.
    #[arg(long, short)]
    input: PathBuf,
    /// Where to write the intersection (this party's lines, in input order).
    #[arg(long, short)]
    output: PathBuf,
    /// Items per message and per batch.
    #[arg(long, default_value_t = 1 << 18)]
    chunk: usize,
    /// Seconds to wait for the peer (to connect, and between messages).
    #[arg(long, default_value_t = 300)]
    timeout: u64,
    /// No progress bars.
    #[arg(long)]
    quiet: bool,
    /// Hash and multiply on a running `batchcrypt serve` (host:port, or unix:PATH) instead of in
    /// this process: for a machine whose GPUs that server owns. This run's secret key goes to the
    /// server with each request: use a server you trust (over TLS when it is elsewhere).
    #[arg(long, value_name = "ADDRESS")]
    server: Option<String>,
    /// With --server: the server's bearer token (also BATCHCRYPT_TOKEN).
    #[arg(long, env = "BATCHCRYPT_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// With --server: PEM certificate of the authority that signed the server's TLS certificate.
    #[arg(long)]
    tls_ca: Option<PathBuf>,
}

struct Bars {
    bars: [ProgressBar; 3],
}

impl Bars {
    fn new(own: u64, quiet: bool) -> Self {
        let multi = MultiProgress::new();
        if quiet {
            multi.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        }
        let style =
            ProgressStyle::with_template("{prefix:>22} [{bar:40}] {pos}/{len} ({per_sec}, {eta})")
                .unwrap()
                .progress_chars("=> ");
        let mk = |name: &str, len: u64| {
            multi.add(
                ProgressBar::new(len)
                    .with_style(style.clone())
                    .with_prefix(name.to_string()),
            )
        };
        Bars {
            bars: [
                mk("own items blinded", own),
                mk("peer items blinded", 0),
                mk("own results received", own),
            ],
        }
    }
}

impl Progress for Bars {
    fn update(&self, stage: Stage, done: u64, total: u64) {
        let b = &self.bars[stage as usize];
        b.set_length(total);
        b.set_position(done);
    }
}

/// The server's multiplications, with the runtime that drives its connection.
struct Served {
    multiplier: ServedMultiplier,
    _runtime: tokio::runtime::Runtime,
}

fn served(a: &Args, address: &str) -> Result<Served> {
    let runtime = tokio::runtime::Runtime::new()?;
    let tls_ca = match &a.tls_ca {
        Some(p) => Some(std::fs::read(p).with_context(|| format!("reading {}", p.display()))?),
        None => None,
    };
    let options = Options {
        token: a.token.clone(),
        tls_ca,
        ..Options::default()
    };
    let client = runtime
        .block_on(Client::connect_with(address, options))
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("--server {address}: is `batchcrypt serve` running there?"))?;
    Ok(Served {
        multiplier: ServedMultiplier::new(client, runtime.handle().clone()),
        _runtime: runtime,
    })
}

pub fn run(engine: &Engine, a: &Args) -> Result<()> {
    let items = ItemFile::open(&a.input)?;
    let served = a.server.as_deref().map(|s| served(a, s)).transpose()?;
    let multiplier: &dyn Multiplier = match &served {
        Some(s) => &s.multiplier,
        None => engine,
    };
    let timeout = Duration::from_secs(a.timeout.max(1));
    let stream = match (&a.listen, &a.connect) {
        (Some(addr), _) => {
            let l = TcpListener::bind(addr).with_context(|| format!("cannot listen on {addr}"))?;
            eprintln!(
                "{} items; waiting for the peer on {}",
                items.count(),
                l.local_addr()?
            );
            psi::accept(&l, timeout)?
        }
        (None, Some(addr)) => psi::connect(addr, timeout, |e| {
            eprintln!("waiting for the peer at {addr} ({e})")
        })?,
        (None, None) => anyhow::bail!("give --listen ADDR or --connect ADDR"),
    };
    let cfg = psi::Config {
        chunk: a.chunk,
        timeout,
        ..psi::Config::default()
    };
    let bars = Bars::new(items.count(), a.quiet);
    let t = Instant::now();
    let out = psi::run(stream, &items, multiplier, &cfg, &bars)?;
    for b in &bars.bars {
        b.finish();
    }
    items.write_subset(&out.matched, &a.output)?;
    eprintln!(
        "{} of our {} items are in the peer's set of {} ({:.2} s); written to {}",
        out.matched.len(),
        out.own_count,
        out.peer_count,
        t.elapsed().as_secs_f64(),
        a.output.display()
    );
    Ok(())
}

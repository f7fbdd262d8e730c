//! The service under load, in one process with its baseline: a server on loopback and many
//! clients, against one large library batch of the same items.
//!
//! Batched operations: C clients (1,000; 100 with --quick) each send a request of 256 ECDSA
//! signatures (and, separately, 256 SHA256d messages of 64 bytes, packed), wait for the reply and
//! send the next, without pause, once over TCP (loopback) and once over the server's Unix socket,
//! as calls and over a stream per client (SHA256d also in requests 16 times larger), the streams
//! also with the clients sharing a connection per client thread, and the same streams over TCP
//! and the Unix socket from a lean gRPC client (HTTP/2 through the `h2` crate, each request
//! encoded once, as gRPC load generators send: [`h2load`]), and from a client that writes
//! HTTP/2's frames itself over the Unix socket, one task per client thread driving its
//! connection's streams, as nghttp2's h2load does ([`wire`]: the clients' CPU, taken from the
//! server's cores here, cut further); and over the server's frames socket (the same messages
//! without HTTP/2), a connection per client and one per client thread;
//! then open loops, each client sending on schedule whatever the replies: ECDSA calls over TCP at
//! half the rate just served, SHA256d over streams at half their served rate, and both
//! operations over gRPC streams (the library's client over TCP, the lean one over TCP and the
//! Unix socket, the frame-writing one) and over frames at 0.7x, 0.8x and 0.9x of the
//! library's own rate (`BATCHCRYPT_BENCH_LOADS`); last, SHA256d's requests echoed over
//! streams and frames (the same bytes each way, nothing
//! batched or computed: the most the link, the clients and the server's handling of a message
//! carry). A closed loop's served rate counts the requests completed in a window (400 ms, 100
//! with --quick, `BATCHCRYPT_BENCH_WINDOW_MS`, and at least ten times the library's batch) that
//! opens once the clients' first requests have settled (100 ms, 20, at least two batches) and
//! closes before any client stops, so all C clients are at work throughout it (each case also
//! prints its whole loop's rate, the first requests' burst and the last replies included); the baseline is one library call on the C × 256 items of a round, the median of
//! [`BASELINE_REPS`] timings. Latency is
//! each request's, send to reply. With C × 256 items always outstanding, Little's law makes a
//! closed loop's mean latency that many items over the throughput. Open loops send on schedule
//! until the same window has closed and count, as closed loops do, the requests answered in it
//! and their latencies (each also prints its whole loop's rate).
//!
//! The server runs as `batchcrypt serve` does (its connections on threads of their own, its
//! batches on a small runtime), in this process, or with `BATCHCRYPT_BENCH_SERVE_BIN` naming a
//! `batchcrypt` binary as that binary's `batchcrypt serve` in a process of its own, optionally on
//! CPUs of its own (`BATCHCRYPT_BENCH_SERVER_CPUS`, `BATCHCRYPT_BENCH_CLIENT_CPUS`: [`target`]);
//! the clients run on threads of theirs, each client's connection and calls on one; both have a
//! thread per core (of their CPUs) unless `BATCHCRYPT_BENCH_SERVER_THREADS` or
//! `BATCHCRYPT_BENCH_CLIENT_THREADS` say otherwise.
//! `BATCHCRYPT_BENCH_IN_FLIGHT` sets the batches of one operation the server runs at once,
//! `BATCHCRYPT_BENCH_MAX_DELAY_MS` the longest a batch gathers, `BATCHCRYPT_BENCH_MAX_ITEMS`
//! and `BATCHCRYPT_BENCH_MAX_HASH_ITEMS` the items at which a batch, a hash batch, stops
//! gathering, `BATCHCRYPT_BENCH_ONLY` the cases that run (for sweeps; every run prints what it
//! was given). Each closed loop also prints how many cores each group of threads kept busy
//! (the server's, the clients', the library's pools), which says whether the host's CPU bounds
//! it, and each loop, closed or open, the cores' time a virtual machine's hypervisor took from
//! it (steal), which says whether the host's neighbours did.
//!
//! Proofs: 64 clients prove on three circuits of different sizes at once (the chain circuit at
//! three domains, development keys), with a GPU memory budget that holds two of the three keys,
//! so keys are evicted and uploaded again: proofs/s, latency per circuit, evictions, peak GPU
//! memory and failures.

mod calls;
mod h2load;
mod loops;
mod observe;
mod proofs;
mod target;
mod wire;

use crate::report::{times, Report};
use batchcrypt::secp256k1::{EcdsaOptions, SigFormat};
use batchcrypt::sha256::{Messages, Mode};
use batchcrypt::{Backend, BackendChoice, Engine};
use batchcrypt_serve::client::{ecdsa_request, Client};
use batchcrypt_serve::frames::Framed;
use batchcrypt_serve::proto::{EcdsaCurve, VerifyEcdsaRequest};
use batchcrypt_serve::shards::Shards;
use batchcrypt_serve::FramesClient;
use batchcrypt_serve::ServerConfig;
use calls::{
    ecdsa_checked, framed_call, sha256d_call, stream_call, wire_check, wire_loads, wire_requests,
    Duplex, EcdsaStreams, Echoes, Sha256dStreams, SharedSha256d, Streamed, PER_REQUEST,
};
use h2load::H2Conn;
use loops::{
    closed_loop, latencies, open_loop, open_loop_streams, percentile, Conn, Done, Measured, Paced,
    Window, GROUP,
};
use observe::{cpu_between, stages, stages_between, steal_seconds, steal_since, thread_cpu};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Runs of the library's one batch whose median every served rate is a ratio to. A SHA256d
/// batch of 256,000 takes 2-3 ms, and the median of five moved between 86 and 133 M/s from run
/// to run of one process on one host (docs/performance.md), taking the goal's 0.7x with it.
const BASELINE_REPS: usize = 41;

/// The library's one batch of `items`, timed [`BASELINE_REPS`] times (`f` runs it and says on
/// which backend), with the spread of its rate printed: its median seconds, and the backends it
/// ran on (with their counts where the dispatcher's choice changed between runs).
fn library_batch(items: usize, mut f: impl FnMut() -> Backend) -> (f64, String) {
    let mut ran = std::collections::BTreeMap::<&str, usize>::new();
    let v = times(BASELINE_REPS, || *ran.entry(f().name()).or_default() += 1);
    let rate = |p: f64| items as f64 / percentile(&v, p) / 1e6;
    println!(
        "  the library's batch over {} runs: median {:.2} M/s, 10th to 90th percentile {:.2}-{:.2}",
        v.len(),
        rate(0.5),
        rate(0.9),
        rate(0.1)
    );
    // Counted over every run, the warm-up one too.
    let all: usize = ran.values().sum();
    let on = match ran.len() {
        1 => ran.into_keys().collect(),
        _ => (ran.iter())
            .map(|(b, k)| format!("{b} {k} of {all}"))
            .collect::<Vec<_>>()
            .join(", "),
    };
    (percentile(&v, 0.5), on)
}

/// One client per connection where the open-files limit allows, else clients share connections.
/// Room is kept for a connection per client over each of the four transports.
async fn connect_clients(addr: &str, clients: usize, on: &Shards) -> anyhow::Result<Vec<Conn>> {
    let addr = addr.to_string();
    connect_each(clients, on, move || {
        let addr = addr.clone();
        async move { Client::connect(&addr).await }
    })
    .await
}

/// One frames connection per client where the open-files limit allows ([`connect_clients`]).
async fn connect_frames(
    path: &std::path::Path,
    clients: usize,
    on: &Shards,
) -> anyhow::Result<Vec<Conn<FramesClient>>> {
    let path = path.to_path_buf();
    connect_each(clients, on, move || {
        let path = path.clone();
        async move { FramesClient::connect(&path, None).await }
    })
    .await
}

/// `clients` clients, each connected by `connect` on its client thread where the open-files
/// limit allows a connection each, else sharing them.
async fn connect_each<C, F, Fut>(
    clients: usize,
    on: &Shards,
    connect: F,
) -> anyhow::Result<Vec<Conn<C>>>
where
    C: Clone + Send + 'static,
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<C, String>> + Send + 'static,
{
    // Two descriptors per loopback connection, in one process with its server; five transports.
    let limit = batchcrypt_serve::raise_open_files(10 * clients as u64 + 512);
    let conns = clients.min(((limit.saturating_sub(256)) / 10).max(1) as usize);
    let mut pool = Vec::with_capacity(conns);
    for i in 0..conns {
        // A connection's tasks live on the runtime it was made on: its client's thread.
        let rt = on.handle(i).clone();
        let client = rt.spawn(connect()).await?;
        pool.push(Conn {
            client: client.map_err(anyhow::Error::msg)?,
            rt,
        });
    }
    if conns < clients {
        println!("  ({clients} clients over {conns} connections: the open-files limit is {limit})");
    }
    Ok((0..clients).map(|c| pool[c % conns].clone()).collect())
}

/// `conns`' clients (connection `i` made on client thread `i`, see [`connect_clients`]) over
/// the first connection of each of `threads` threads: client `c` on thread `c % threads`.
fn share_per_thread<C: Clone>(conns: &[Conn<C>], threads: usize) -> Vec<Conn<C>> {
    let k = threads.clamp(1, conns.len().max(1));
    (0..conns.len()).map(|c| conns[c % k].clone()).collect()
}

/// The frame-writing client's transport, as the labels name it.
const WIRE: &str =
    "Unix socket, a frame-writing gRPC client, a stream per client, a connection per client thread";

/// The frame-writing gRPC client ([`wire`]) over the Unix socket: a connection per client thread,
/// client `c` on thread `c % threads` (as [`share_per_thread`] shares the others), each
/// connection's streams driven by one task on its thread.
struct Wire<'a> {
    socket: std::path::PathBuf,
    on: &'a Shards,
    clients: usize,
}

/// A thread's connection and its clients, between the warm-up and the loop.
type Warmed = Vec<(tokio::runtime::Handle, wire::Connection, Vec<usize>)>;

impl Wire<'_> {
    /// A fresh connection per client thread, each client's stream answering one request (the
    /// connections, the server's buffers and calibration warmed as the other cases' are).
    async fn warmed<S: Streamed>(&self, calls: &S, requests: &Arc<Vec<bytes::Bytes>>) -> Warmed {
        let k = self.on.len().clamp(1, self.clients);
        let mut tasks = Vec::with_capacity(k);
        for i in 0..k {
            let clients: Vec<usize> = (i..self.clients).step_by(k).collect();
            let (socket, calls, requests) = (self.socket.clone(), calls.clone(), requests.clone());
            let rt = self.on.handle(i).clone();
            tasks.push(rt.clone().spawn(async move {
                let mut conn = wire::Connection::unix(&socket).await.expect("connected");
                let now = Instant::now();
                let loads = wire_loads(&clients, &requests, |_| now);
                let pace = wire::Pace::Closed {
                    until: now + Duration::from_secs(60),
                };
                conn.drive(S::METHOD, loads, pace, 1, &mut wire_check(&calls))
                    .await
                    .expect("served");
                (rt, conn, clients)
            }));
        }
        let mut warmed = Vec::with_capacity(k);
        for t in tasks {
            warmed.push(t.await.expect("warm-up task"));
        }
        warmed
    }

    /// Every client's requests over `warmed` from one start: closed through `w`'s window, or
    /// every `interval` (the clients' phases spread over one) through it. The start and each
    /// request's answer.
    async fn run<S: Streamed>(
        warmed: Warmed,
        calls: &S,
        requests: &Arc<Vec<bytes::Bytes>>,
        w: Window,
        interval: Option<Duration>,
    ) -> (Instant, Vec<wire::Answered>) {
        let n = requests.len();
        let t = Instant::now();
        let (pace, rounds) = match interval {
            None => (wire::Pace::Closed { until: t + w.end() }, w.most),
            Some(every) => (wire::Pace::Every(every), w.rounds(every)),
        };
        let start = move |c: usize| match interval {
            None => t,
            Some(every) => t + every.mul_f64(c as f64 / n as f64),
        };
        let tasks: Vec<_> = warmed
            .into_iter()
            .map(|(rt, mut conn, clients)| {
                let (calls, requests) = (calls.clone(), requests.clone());
                rt.spawn(async move {
                    let loads = wire_loads(&clients, &requests, start);
                    let mut check = wire_check(&calls);
                    conn.drive(S::METHOD, loads, pace, rounds, &mut check)
                        .await
                        .expect("served")
                })
            })
            .collect();
        let mut answered = Vec::new();
        for task in tasks {
            answered.extend(task.await.expect("client task"));
        }
        (t, answered)
    }

    /// A closed loop of `calls` over [`WIRE`] (`suffix` added to its name), reported as
    /// [`Closed::run`] reports; the mean seconds between a client's requests.
    #[allow(clippy::too_many_arguments)]
    async fn closed<S: Streamed>(
        &self,
        closed: &Closed,
        rep: &mut Report,
        case: &str,
        base: &str,
        suffix: &str,
        bytes_per_item: u64,
        calls: &S,
        op: &str,
    ) -> f64 {
        let transport = format!("{WIRE}{suffix}");
        if !chosen(&format!(
            "served over {transport}, {} clients",
            closed.clients
        )) {
            return f64::NAN;
        }
        let requests = wire_requests(calls, closed.clients);
        let warmed = self.warmed(calls, &requests).await;
        let w = closed.window;
        let measured = async {
            let (t, answered) = Wire::run(warmed, calls, &requests, w, None).await;
            let (mut lat, mut batch) = (Vec::new(), 0u64);
            for a in answered.iter().filter(|a| w.holds(a.done - t)) {
                lat.push((a.done - a.sent).as_secs_f64());
                batch += a.check;
            }
            Measured::new(t, w, lat, batch, answered.len())
        };
        (closed)
            .measure(rep, case, base, &transport, bytes_per_item, op, measured)
            .await
    }

    /// The open loop of `calls` over [`WIRE`] at `at`'s load, reported as the other open loops,
    /// and how long after they were due the requests answered in the window were queued to be
    /// written: what of their latency the client itself (and the windows) took.
    async fn paced<S: Streamed>(
        &self,
        at: &AtLoad<'_>,
        rep: &mut Report,
        case: &str,
        base: &str,
        calls: &S,
    ) {
        let label = format!("served over {WIRE}, {}", at.at);
        if !chosen(&label) {
            return;
        }
        let requests = wire_requests(calls, at.closed.clients);
        let warmed = self.warmed(calls, &requests).await;
        let (w, interval) = (at.closed.window, at.interval);
        let late = std::cell::Cell::new(Vec::new());
        let paced = async {
            let (t, answered) = Wire::run(warmed, calls, &requests, w, Some(interval)).await;
            late.set(
                (answered.iter())
                    .filter(|a| w.holds(a.done - t))
                    .map(|a| (a.queued - a.sent).as_secs_f64())
                    .collect(),
            );
            let done = (answered.iter())
                .map(|a| Done {
                    at: a.done - t,
                    lat: (a.done - a.sent).as_secs_f64(),
                })
                .collect();
            Paced {
                secs: t.elapsed().as_secs_f64(),
                done,
                interval,
                window: w,
            }
        };
        (at.closed)
            .paced(rep, case, base, &label, at.bytes_per_item, at.op, paced)
            .await;
        let (p50, p99, max) = latencies(late.take());
        println!(
            "  the client's sends: queued p50 {p50:.2} ms, p99 {p99:.2} ms, max {max:.1} ms after they were due (its own delay and the windows', within the latencies above)"
        );
    }
}

/// The parts of the group, each also a group of its own (`serve-ecdsa`, `serve-sha256d`,
/// `serve-proofs`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Part {
    All,
    Ecdsa,
    Sha256d,
    Proofs,
}

/// A sweep's setting from the environment variable `var`, printed when given.
fn setting(var: &str) -> Option<usize> {
    let n = std::env::var(var).ok()?.parse().ok()?;
    println!("  ({var}={n})");
    Some(n)
}

/// Whether the case `label` runs: `BATCHCRYPT_BENCH_ONLY`, when set, lists (separated by `;`)
/// the words of which a label must contain one, such as `frames, a connection per client,` or
/// `echoed` (the library's batch always runs).
fn chosen(label: &str) -> bool {
    static ONLY: std::sync::OnceLock<Option<Vec<String>>> = std::sync::OnceLock::new();
    let only = ONLY.get_or_init(|| {
        let v = std::env::var("BATCHCRYPT_BENCH_ONLY").ok()?;
        println!("  (BATCHCRYPT_BENCH_ONLY={v})");
        Some(v.split(';').map(str::to_owned).collect())
    });
    only.as_ref()
        .is_none_or(|words| words.iter().any(|w| label.contains(w.as_str())))
}

/// Threads from the environment variable `var`, else one per core.
fn threads(var: &str) -> usize {
    setting(var).unwrap_or_else(|| std::thread::available_parallelism().map_or(4, |n| n.get()))
}

/// A multi-threaded runtime of `n` threads called `name` (for [`thread_cpu`]).
fn runtime(n: usize, name: &str) -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .thread_name(name)
        .worker_threads(n)
        .enable_all()
        .build()?)
}

pub fn run(rep: &mut Report, quick: bool, part: Part) -> anyhow::Result<()> {
    // The server runs as `batchcrypt serve` does: its connections on threads of their own, its
    // batches on a small runtime (here, or in a process of its own: [`target`]). The clients run
    // on threads of their own too; this runtime only starts and times them.
    let server_threads = threads("BATCHCRYPT_BENCH_SERVER_THREADS");
    let start_clients =
        || Shards::start(threads("BATCHCRYPT_BENCH_CLIENT_THREADS"), "bench-client");
    let client_shards = match target::setting_cpus("BATCHCRYPT_BENCH_CLIENT_CPUS")? {
        Some(cpus) => {
            println!("  (the clients' threads on CPUs {cpus}: BATCHCRYPT_BENCH_CLIENT_CPUS)");
            cpus.around(start_clients)??
        }
        None => start_clients()?,
    };
    if let Some(mode) = observe::huge_pages() {
        println!("  (transparent huge pages: {mode})");
    }
    let rt = runtime(2, "bench-main")?;
    let server_rt = runtime(2, "serve")?;
    let engine = Arc::new(Engine::with_backend(BackendChoice::Auto));
    let has = |p: Part| part == Part::All || part == p;
    rt.block_on(async {
        if has(Part::Ecdsa) || has(Part::Sha256d) {
            batched(
                rep,
                server_rt.handle(),
                server_threads,
                &client_shards,
                engine.clone(),
                quick,
                has(Part::Ecdsa),
                has(Part::Sha256d),
            )
            .await?;
        }
        if has(Part::Proofs) {
            proofs::proofs(rep, server_rt.handle(), engine, quick).await?;
        }
        Ok(())
    })
}

/// The batched operations' closed and open loops against one library batch.
async fn batched(
    rep: &mut Report,
    server_rt: &tokio::runtime::Handle,
    server_threads: usize,
    client_shards: &Shards,
    engine: Arc<Engine>,
    quick: bool,
    ecdsa: bool,
    sha256d: bool,
) -> anyhow::Result<()> {
    let data = std::env::temp_dir().join(format!("batchcrypt-bench-serve-{}", std::process::id()));
    std::fs::create_dir_all(&data)?;
    let mut config = ServerConfig::new(data.clone());
    config.listen = "127.0.0.1:0".parse()?;
    config.metrics = Some("127.0.0.1:0".parse()?);
    config.unix_socket = Some(data.join("serve.sock"));
    config.frames_socket = Some(data.join("frames.sock"));
    config.io_threads = server_threads;
    // Memory where the system has it (/dev/shm), else the data directory's file system.
    let shared_dir = Some(std::path::PathBuf::from(
        batchcrypt_serve::shared::DEFAULT_DIR,
    ))
    .filter(|d| d.is_dir())
    .unwrap_or_else(|| data.clone());
    config.shared_memory = Some(shared_dir.clone());
    if let Some(n) = setting("BATCHCRYPT_BENCH_IN_FLIGHT") {
        config.batch.in_flight = n;
    }
    if let Some(ms) = setting("BATCHCRYPT_BENCH_MAX_DELAY_MS") {
        config.batch.max_delay = Duration::from_millis(ms as u64);
    }
    if let Some(n) = setting("BATCHCRYPT_BENCH_MAX_ITEMS") {
        config.batch.max_items = n;
    }
    if let Some(n) = setting("BATCHCRYPT_BENCH_MAX_HASH_ITEMS") {
        config.batch.max_hash_items = n;
    }
    let clients = if quick { 100 } else { 1000 };
    let n = clients * PER_REQUEST;
    // The dispatcher measures each backend once, on first use: here, before a server and its
    // thousands of connections share the host, whose CPU time while they settle would count
    // against the backends measured then (and the baseline would run on the one measured least
    // disturbed, not the fastest).
    if sha256d {
        engine.sha256().estimates(n, 64, Mode::Double)?;
    }
    if ecdsa {
        use batchcrypt::dispatch::Location;
        engine.estimates(&batchcrypt::secp256k1::ECDSA, n as u64, Location::Host);
    }
    let server = target::Target::start(engine.clone(), server_rt, config, &data).await?;
    if let Some(apart) = server.apart() {
        println!("  (the server in a process of its own, {apart}: BATCHCRYPT_BENCH_SERVE_BIN)");
    }
    // Closed loops: a settling time, then a window long enough for many rounds of every client.
    let (settle, measure) = if quick { (20, 100) } else { (100, 400) };
    let window = Window {
        settle: Duration::from_millis(settle),
        measure: Duration::from_millis(
            setting("BATCHCRYPT_BENCH_WINDOW_MS").map_or(measure, |ms| ms as u64),
        ),
        most: 100_000,
    };
    // Every client has a connection over TCP (loopback) and one over the Unix socket.
    let tcp = connect_clients(&server.addr.to_string(), clients, client_shards).await?;
    let unix_addr = format!("unix:{}", server.unix_socket.display());
    let unix = connect_clients(&unix_addr, clients, client_shards).await?;
    // The same clients sharing one connection per client thread (each still with a stream of its
    // own), as a process's callers share its channel: a connection's frames then cross in one
    // system call where a connection per client makes one each.
    let shared_tcp = share_per_thread(&tcp, client_shards.len());
    let shared_unix = share_per_thread(&unix, client_shards.len());
    // And a frames connection each (the same messages without HTTP/2), or one per client thread.
    let frames = connect_frames(&server.frames_socket, clients, client_shards).await?;
    let shared_frames = share_per_thread(&frames, client_shards.len());
    // And a lean gRPC client's connection each over TCP ([`h2load`]) and over the Unix socket,
    // or one per client thread: the same server, its clients' own CPU cut.
    let server_addr = server.addr;
    let lean = connect_each(clients, client_shards, move || H2Conn::tcp(server_addr)).await?;
    let shared_lean = share_per_thread(&lean, client_shards.len());
    let socket = Arc::new(server.unix_socket.clone());
    let lean_unix = connect_each(clients, client_shards, move || {
        let socket = socket.clone();
        async move { H2Conn::unix(&socket).await }
    })
    .await?;
    let shared_lean_unix = share_per_thread(&lean_unix, client_shards.len());
    let lean_over = [
        ("TCP, a lean gRPC client, a stream per client", &lean),
        (
            "TCP, a lean gRPC client, a stream per client, a connection per client thread",
            &shared_lean,
        ),
        (
            "Unix socket, a lean gRPC client, a stream per client",
            &lean_unix,
        ),
        (
            "Unix socket, a lean gRPC client, a stream per client, a connection per client thread",
            &shared_lean_unix,
        ),
    ];
    let framed_over = [
        ("frames, a connection per client", &frames),
        ("frames, a connection per client thread", &shared_frames),
    ];
    // The cases over a stream per client, for each operation.
    let streamed_over = [
        ("TCP, a stream per client", &tcp),
        ("Unix socket, a stream per client", &unix),
        (
            "TCP, a stream per client, a connection per client thread",
            &shared_tcp,
        ),
        (
            "Unix socket, a stream per client, a connection per client thread",
            &shared_unix,
        ),
    ];
    // And the frame-writing client over the Unix socket, a connection per client thread.
    let wire = Wire {
        socket: server.unix_socket.clone(),
        on: client_shards,
        clients,
    };
    let closed = Closed {
        metrics: server.metrics,
        server_pid: server.pid(),
        clients,
        per_request: PER_REQUEST,
        window,
    };
    let paces = Paces {
        tcp: &tcp,
        shared_tcp: &shared_tcp,
        lean: [
            ("TCP", [&lean, &shared_lean]),
            ("Unix socket", [&lean_unix, &shared_lean_unix]),
        ],
        frames: &frames,
        wire: &wire,
        loads: Paces::loads(),
    };

    if ecdsa {
        rep.header(&format!(
            "service: {clients} clients x {PER_REQUEST} ECDSA signatures (closed loops counted over at least {} ms after at least {settle} ms, open loops the same), against one batch of {n}",
            window.measure.as_millis()
        ));
        let b = Arc::new(crate::secp256k1::batch(n));
        let case = format!("ECDSA verify, {clients} x {PER_REQUEST} (DER, packed)");
        let sigs: Vec<&[u8]> = b.sigs.iter().map(|v| v.as_slice()).collect();
        let keys: Vec<&[u8]> = b.keys.iter().map(|v| v.as_slice()).collect();
        let opts = EcdsaOptions::default();
        let (s, ran) = library_batch(n, || {
            let o = engine
                .secp256k1()
                .verify_ecdsa(&b.hashes, &sigs, &keys, &opts)
                .unwrap();
            assert!(o.value.all_valid());
            o.backend
        });
        let base = format!("one batch of {n}, library (ran {ran})");
        let closed = closed.rounds_of(s);
        rep.add(GROUP, &case, &base, n as u64, 0, s, None);
        // Each client's request, packed once: a remote client's packing costs the server
        // nothing, and here clients share the server's cores.
        let requests: Arc<Vec<VerifyEcdsaRequest>> = Arc::new(
            (0..clients)
                .map(|c| {
                    let r = c * PER_REQUEST..(c + 1) * PER_REQUEST;
                    ecdsa_request(
                        EcdsaCurve::Secp256k1,
                        &b.hashes[r.clone()],
                        &b.sigs[r.clone()],
                        &b.keys[r],
                        SigFormat::Der,
                        false,
                    )
                })
                .collect(),
        );
        let call = {
            let requests = requests.clone();
            move |mut client: Client, c: usize| {
                let request = requests[c].clone();
                async move {
                    let v = client.raw().verify_ecdsa(request).await.expect("served");
                    ecdsa_checked(v.into_inner())
                }
            }
        };
        let cycle = closed
            .run(
                rep,
                &case,
                &base,
                "TCP",
                &tcp,
                0,
                call.clone(),
                "verify_ecdsa",
            )
            .await;
        closed
            .run(
                rep,
                &case,
                &base,
                "Unix socket",
                &unix,
                0,
                call.clone(),
                "verify_ecdsa",
            )
            .await;
        // The same requests over one stream per client: a message each way per request.
        let ecdsa = EcdsaStreams(requests.clone());
        let over = (&streamed_over[..], &lean_over[..], &framed_over[..]);
        closed
            .run_over(
                rep,
                &case,
                &base,
                over,
                "",
                0,
                ecdsa.clone(),
                "verify_ecdsa",
            )
            .await;
        (wire.closed(&closed, rep, &case, &base, "", 0, &ecdsa, "verify_ecdsa")).await;
        // The same clients paced at half the rate just served over TCP: latency when the
        // server keeps up.
        let label = "served over TCP, open loop at half that rate";
        if chosen(label) && cycle.is_finite() {
            let interval = Duration::from_secs_f64(2.0 * cycle);
            let paced = open_loop(tcp.clone(), closed.window, interval, call).await;
            paced.report(rep, &case, &base, label, PER_REQUEST, 0);
        }
        // Paced at fractions of the library's own rate (the goal's throughput and above): the
        // latency while the server sustains it.
        let (calls, op) = (EcdsaStreams(requests), "verify_ecdsa");
        paces.run(rep, &case, &base, closed, s, calls, 0, op).await;
    }

    if sha256d {
        rep.header(&format!(
            "service: {clients} clients x {PER_REQUEST} SHA256d of 64 bytes (closed loops counted over at least {} ms after at least {settle} ms, open loops the same), against one batch of {n}",
            window.measure.as_millis()
        ));
        let msgs: Arc<Vec<u8>> = Arc::new((0..n * 64).map(|i| (i * 7 % 251) as u8).collect());
        let case = format!("SHA256d-64, {clients} x {PER_REQUEST}");
        let (s, ran) = library_batch(n, || {
            let m = Messages::fixed(&msgs, 64).unwrap();
            engine.sha256().hash(&m, Mode::Double).unwrap().backend
        });
        let base = format!("one batch of {n}, library (ran {ran})");
        let closed = closed.rounds_of(s);
        rep.add(GROUP, &case, &base, n as u64, (64 * n) as u64, s, None);
        let all = bytes::Bytes::from(msgs.to_vec());
        // Requests of 256, then the same items in requests 16 times larger.
        let big = PER_REQUEST * 16;
        let larger = Closed {
            clients: n / big,
            per_request: big,
            ..closed
        };
        for shape in [closed, larger] {
            let call = sha256d_call(all.clone(), shape.per_request);
            for (transport, conns) in [("TCP", &tcp), ("Unix socket", &unix)] {
                shape
                    .run(
                        rep,
                        &case,
                        &base,
                        transport,
                        conns,
                        64,
                        call.clone(),
                        "hash",
                    )
                    .await;
            }
        }
        // Requests of 256 over one stream per client.
        let streams = Sha256dStreams {
            all,
            per: closed.per_request,
        };
        let over = (&streamed_over[..], &lean_over[..], &framed_over[..]);
        let cycles = closed
            .run_over(rep, &case, &base, over, "", 64, streams.clone(), "hash")
            .await;
        let streamed_cycle = cycles[0];
        (wire.closed(&closed, rep, &case, &base, "", 64, &streams, "hash")).await;
        // The same streams paced at half the rate just served over TCP.
        let label = "served over TCP, a stream per client, open loop at half that rate";
        if chosen(label) && streamed_cycle.is_finite() {
            let interval = Duration::from_secs_f64(2.0 * streamed_cycle);
            let paced = open_loop_streams(tcp.clone(), closed.window, interval, streams.clone());
            closed
                .paced(rep, &case, &base, label, 64, "hash", paced)
                .await;
        }
        // Paced at fractions of the library's own rate.
        let (calls, op) = (streams.clone(), "hash");
        paces.run(rep, &case, &base, closed, s, calls, 64, op).await;
        // The same streams with their bytes in shared memory: a region per client.
        let mut regions = Vec::with_capacity(closed.clients);
        for (c, conn) in tcp.iter().enumerate() {
            let (mut client, dir) = (conn.client.clone(), shared_dir.clone());
            let name = format!("bench-{}-{c}", std::process::id());
            let size = 96 * closed.per_request as u64;
            let region = conn
                .rt
                .spawn(async move { client.shared_memory(&dir, &name, size).await })
                .await??;
            regions.push(region);
        }
        let m = Messages::fixed(&msgs, 64)?;
        let expected = engine.sha256().hash(&m, Mode::Double)?.value;
        let shared = SharedSha256d {
            streams: streams.clone(),
            regions: Arc::new(regions),
            expected: bytes::Bytes::from(expected.into_iter().flatten().collect::<Vec<u8>>()),
        };
        // Not from the lean client, which sends the bytes it encoded once: here each request
        // writes its messages first.
        let (suffix, without_lean) = (", bytes in shared memory", (over.0, &[][..], over.2));
        closed
            .run_over(rep, &case, &base, without_lean, suffix, 64, shared, "hash")
            .await;
        // The same bytes echoed, nothing batched or hashed: the most these clients, links and
        // threads carry, against which the served rates above are what the work adds.
        let (suffix, echoes) = (", echoed without work", Echoes(streams.clone()));
        closed
            .run_over(rep, &case, &base, over, suffix, 64, echoes.clone(), "echo")
            .await;
        (wire.closed(&closed, rep, &case, &base, suffix, 64, &echoes, "echo")).await;
    }
    drop((tcp, unix, shared_tcp, shared_unix, frames, shared_frames));
    drop((lean, shared_lean, lean_unix, shared_lean_unix));
    server.stop().await?;
    let _ = std::fs::remove_dir_all(&data);
    Ok(())
}

/// Open loops at loads given as fractions of the library's rate (`BATCHCRYPT_BENCH_LOADS`,
/// comma-separated; 0.7, 0.8 and 0.9 by default), each over a gRPC stream per client and over a
/// frames connection per client, and over gRPC streams sharing a connection per client thread (as
/// a process's callers share its channel), each from the library's client and from the lean one:
/// whether the latency goal holds at the goal's throughput and how far above it.
struct Paces<'a> {
    tcp: &'a [Conn],
    shared_tcp: &'a [Conn],
    /// The lean client's connections over each transport: one per client, one per client thread.
    lean: [(&'a str, [&'a [Conn<H2Conn>]; 2]); 2],
    frames: &'a [Conn<FramesClient>],
    wire: &'a Wire<'a>,
    loads: Vec<f64>,
}

impl Paces<'_> {
    fn loads() -> Vec<f64> {
        let given = std::env::var("BATCHCRYPT_BENCH_LOADS").ok();
        if let Some(v) = &given {
            println!("  (BATCHCRYPT_BENCH_LOADS={v})");
        }
        given
            .as_deref()
            .unwrap_or("0.7,0.8,0.9")
            .split(',')
            .filter_map(|w| w.trim().parse().ok())
            .filter(|&l: &f64| l > 0.0)
            .collect()
    }

    /// Each load's open loops of `calls`, the library taking `round` seconds on the items of one
    /// round of every client; prints the server's stages for `op` over each.
    #[allow(clippy::too_many_arguments)]
    async fn run<S>(
        &self,
        rep: &mut Report,
        case: &str,
        base: &str,
        closed: Closed,
        round: f64,
        calls: S,
        bytes_per_item: u64,
        op: &str,
    ) where
        S: Streamed,
        S::Q: Framed<Reply = S::R>,
    {
        for &load in &self.loads {
            let interval = Duration::from_secs_f64(round / load);
            let at = format!("open loop at {load}x the library's rate");
            let paced = AtLoad {
                closed,
                interval,
                at: &at,
                bytes_per_item,
                op,
            };
            let library = [self.tcp, self.shared_tcp];
            paced
                .streams(rep, case, base, "TCP", "", library, &calls)
                .await;
            for (over, lean) in self.lean {
                let client = " a lean gRPC client,";
                paced
                    .streams(rep, case, base, over, client, lean, &calls)
                    .await;
            }
            self.wire.paced(&paced, rep, case, base, &calls).await;
            let label = format!("served over frames, a connection per client, {at}");
            if chosen(&label) {
                let call = framed_call(calls.clone());
                let paced = open_loop(self.frames.to_vec(), closed.window, interval, call);
                closed
                    .paced(rep, case, base, &label, bytes_per_item, op, paced)
                    .await;
            }
        }
    }
}

/// One load's open loops: their window, the clients' interval, the load's words in the labels,
/// what the report counts and the server's operation.
struct AtLoad<'a> {
    closed: Closed,
    interval: Duration,
    at: &'a str,
    bytes_per_item: u64,
    op: &'a str,
}

impl AtLoad<'_> {
    /// Over gRPC streams on transport `over` from one client (`client`, the words naming it in
    /// the labels), with a connection per client and one per client thread.
    #[allow(clippy::too_many_arguments)]
    async fn streams<S: Streamed, C: Duplex<S>>(
        &self,
        rep: &mut Report,
        case: &str,
        base: &str,
        over: &str,
        client: &str,
        [per_client, per_thread]: [&[Conn<C>]; 2],
        calls: &S,
    ) {
        let (at, window) = (self.at, self.closed.window);
        for (sharing, conns) in [
            ("", per_client),
            (" a connection per client thread,", per_thread),
        ] {
            let label = format!("served over {over},{client} a stream per client,{sharing} {at}");
            if chosen(&label) {
                let paced = open_loop_streams(conns.to_vec(), window, self.interval, calls.clone());
                (self.closed)
                    .paced(rep, case, base, &label, self.bytes_per_item, self.op, paced)
                    .await;
            }
        }
    }
}

/// A closed loop of `clients` measured over `window`, reported against the library's batch.
#[derive(Clone, Copy)]
struct Closed {
    metrics: Option<std::net::SocketAddr>,
    /// The server's process where it runs apart from the clients' ([`target`]).
    server_pid: Option<u32>,
    clients: usize,
    per_request: usize,
    window: Window,
}

impl Closed {
    /// Runs the open loop `paced` (not started until awaited) and reports it, with the server's
    /// stages for `op` over it.
    #[allow(clippy::too_many_arguments)]
    async fn paced(
        &self,
        rep: &mut Report,
        case: &str,
        base: &str,
        label: &str,
        bytes_per_item: u64,
        op: &str,
        paced: impl std::future::Future<Output = Paced>,
    ) {
        let before = stages(self.metrics, op).await;
        let (steal, t) = (steal_seconds(), Instant::now());
        let paced = paced.await;
        let steal = steal_since(steal, t.elapsed().as_secs_f64());
        paced.report(rep, case, base, label, self.per_request, bytes_per_item);
        let after = stages(self.metrics, op).await;
        println!("  {}", stages_between(&before, &after));
        print!("{steal}");
    }

    /// The same with a window of at least ten rounds and settling of at least two, a round
    /// taking `round` seconds (where the library's batch of a round is slow, as on a CPU).
    fn rounds_of(self, round: f64) -> Closed {
        let round = Duration::from_secs_f64(round);
        let window = Window {
            settle: self.window.settle.max(2 * round),
            measure: self.window.measure.max(10 * round),
            ..self.window
        };
        Closed { window, ..self }
    }

    /// One warm-up request per client, then the closed loop over `conns` measured in the window;
    /// prints latency, the batches the server formed and its stages for `op` over the loop;
    /// returns the mean seconds between a client's requests (NaN when `BATCHCRYPT_BENCH_ONLY` skips it).
    async fn run<C, F, Fut>(
        &self,
        rep: &mut Report,
        case: &str,
        base: &str,
        transport: &str,
        conns: &[Conn<C>],
        bytes_per_item: u64,
        call: F,
        op: &str,
    ) -> f64
    where
        C: Clone + Send + 'static,
        F: Fn(C, usize) -> Fut + Clone + Send + 'static,
        Fut: std::future::Future<Output = u64> + Send,
    {
        let label = format!("served over {transport}, {} clients", self.clients);
        if !chosen(&label) {
            return f64::NAN;
        }
        let conns = conns[..self.clients].to_vec();
        // Warm-up: connections, calibration, the server's buffers.
        let warm = Window {
            most: 1,
            ..self.window
        };
        closed_loop(conns.clone(), warm, call.clone()).await;
        let measured = closed_loop(conns, self.window, call);
        (self.measure(rep, case, base, transport, bytes_per_item, op, measured)).await
    }

    /// Runs closed loop `measured` (not started until awaited) and reports it over `transport`
    /// against the library's batch: its latency, the batches formed, the whole loop's rate, the
    /// server's stages for `op` and the cores busy over it; the mean seconds between a client's
    /// requests.
    #[allow(clippy::too_many_arguments)]
    async fn measure(
        &self,
        rep: &mut Report,
        case: &str,
        base: &str,
        transport: &str,
        bytes_per_item: u64,
        op: &str,
        measured: impl std::future::Future<Output = Measured>,
    ) -> f64 {
        let before = stages(self.metrics, op).await;
        let (cpu, steal) = (thread_cpu(self.server_pid), steal_seconds());
        let m = measured.await;
        let cpu = cpu_between(&cpu, &thread_cpu(self.server_pid), m.wall);
        let steal = steal_since(steal, m.wall);
        let after = stages(self.metrics, op).await;
        let label = format!("served over {transport}, {} clients", self.clients);
        let requests = m.lat.len();
        let items = (requests * self.per_request) as u64;
        rep.add(
            GROUP,
            case,
            &label,
            items,
            bytes_per_item * items,
            m.secs,
            Some(base),
        );
        // The mean time between a client's requests: by Little's law, the latency's mean when
        // every client always has one outstanding.
        let cycle = m.secs * self.clients as f64 / requests.max(1) as f64;
        let (p50, p99, max) = latencies(m.lat);
        // The whole loop too: the clients' first requests in a burst, and the last ones with
        // fewer clients left to batch.
        let whole = (m.all * self.per_request) as f64 / m.wall / 1e6;
        println!(
            "  {transport}: {requests} requests in {:.0} ms; latency per request p50 {p50:.1} ms, p99 {p99:.1} ms, max {max:.1} ms; mean batch formed {:.0} items; Little's law {:.1} ms; the whole loop (first request to last reply) {whole:.1} M items/s",
            1e3 * m.secs,
            m.mean_batch,
            1e3 * cycle
        );
        println!("  {}", stages_between(&before, &after));
        println!("  {cpu}");
        print!("{steal}");
        cycle
    }
}

/// The transports a closed loop runs over: gRPC streams from the library's client, then from the
/// lean one, then frames, each named and with its clients' connections.
type Over<'a> = (
    &'a [(&'a str, &'a Vec<Conn>)],
    &'a [(&'a str, &'a Vec<Conn<H2Conn>>)],
    &'a [(&'a str, &'a Vec<Conn<FramesClient>>)],
);

impl Closed {
    /// [`Closed::run`] of `calls` over each transport of `over` (each stream case with streams
    /// of its own), each named with `suffix` added; each one's mean seconds between a client's requests, in
    /// that order.
    async fn run_over<S>(
        &self,
        rep: &mut Report,
        case: &str,
        base: &str,
        over: Over<'_>,
        suffix: &str,
        bytes_per_item: u64,
        calls: S,
        op: &str,
    ) -> Vec<f64>
    where
        S: Streamed,
        S::Q: Framed<Reply = S::R>,
    {
        let (clients, b) = (self.clients, bytes_per_item);
        let streamed = || stream_call(clients, calls.clone());
        let mut secs = self
            .run_each(rep, case, base, over.0, suffix, b, streamed, op)
            .await;
        let streamed = || stream_call(clients, calls.clone());
        secs.extend(
            self.run_each(rep, case, base, over.1, suffix, b, streamed, op)
                .await,
        );
        let framed = || framed_call(calls.clone());
        secs.extend(
            self.run_each(rep, case, base, over.2, suffix, b, framed, op)
                .await,
        );
        secs
    }

    /// [`Closed::run`] over each transport of `list`, with a call `call` makes for each.
    #[allow(clippy::too_many_arguments)]
    async fn run_each<C, F, Fut>(
        &self,
        rep: &mut Report,
        case: &str,
        base: &str,
        list: &[(&str, &Vec<Conn<C>>)],
        suffix: &str,
        bytes_per_item: u64,
        call: impl Fn() -> F,
        op: &str,
    ) -> Vec<f64>
    where
        C: Clone + Send + 'static,
        F: Fn(C, usize) -> Fut + Clone + Send + 'static,
        Fut: std::future::Future<Output = u64> + Send,
    {
        let mut secs = Vec::new();
        for (transport, conns) in list {
            let t = format!("{transport}{suffix}");
            let c = call();
            secs.push(
                self.run(rep, case, base, &t, conns, bytes_per_item, c, op)
                    .await,
            );
        }
        secs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_batch_says_every_backend_it_ran_on() {
        let (_, one) = library_batch(1, || Backend::Cuda);
        assert_eq!(one, "cuda");
        // The dispatcher's choice changing between runs (every third on the CPU, of 41 timed
        // runs and the warm-up).
        let mut k = 0;
        let (_, both) = library_batch(1, || {
            k += 1;
            if k % 3 == 0 {
                Backend::Avx512
            } else {
                Backend::Cuda
            }
        });
        assert_eq!(both, "avx512 14 of 42, cuda 28 of 42");
    }
}

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
//! it.
//!
//! Proofs: 64 clients prove on three circuits of different sizes at once (the chain circuit at
//! three domains, development keys), with a GPU memory budget that holds two of the three keys,
//! so keys are evicted and uploaded again: proofs/s, latency per circuit, evictions, peak GPU
//! memory and failures.

mod h2load;
mod target;
mod wire;

use crate::report::{times, Report};
use batchcrypt::secp256k1::{EcdsaOptions, SigFormat};
use batchcrypt::sha256::{Messages, Mode};
use batchcrypt::{BackendChoice, Engine};
use batchcrypt_serve::client::Stream;
use batchcrypt_serve::client::{ecdsa_request, Client, JobOptions};
use batchcrypt_serve::frames::Framed;
use batchcrypt_serve::proto::{
    EcdsaCurve, EchoReply, EchoRequest, HashAlgorithm, HashReply, HashRequest, VerifyEcdsaRequest,
    VerifyReply,
};
use batchcrypt_serve::shards::Shards;
use batchcrypt_serve::FramesClient;
use batchcrypt_serve::ServerConfig;
use h2load::H2Conn;
use std::sync::Arc;
use std::time::{Duration, Instant};

const GROUP: &str = "serve";
const PER_REQUEST: usize = 256;
/// Runs of the library's one batch whose median every served rate is a ratio to. A SHA256d
/// batch of 256,000 takes 2-3 ms, and the median of five moved between 86 and 133 M/s from run
/// to run of one process on one host (docs/performance.md), taking the goal's 0.7x with it.
const BASELINE_REPS: usize = 41;

/// The library's one batch of `items`, timed [`BASELINE_REPS`] times: its median seconds, with
/// the spread of its rate printed.
fn library_batch(items: usize, f: impl FnMut()) -> f64 {
    let v = times(BASELINE_REPS, f);
    let rate = |p: f64| items as f64 / percentile(&v, p) / 1e6;
    println!(
        "  the library's batch over {} runs: median {:.2} M/s, 10th to 90th percentile {:.2}-{:.2}",
        v.len(),
        rate(0.5),
        rate(0.9),
        rate(0.1)
    );
    percentile(&v, 0.5)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Latencies in ms: (p50, p99, max); NaN for none.
fn latencies(mut v: Vec<f64>) -> (f64, f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    v.sort_by(f64::total_cmp);
    (
        1e3 * percentile(&v, 0.5),
        1e3 * percentile(&v, 0.99),
        1e3 * v[v.len() - 1],
    )
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

/// A client's connection and the thread (a single-threaded runtime) its calls run on: clients
/// are spread over threads as separate client processes would be over cores, each connection's
/// tasks on one thread.
#[derive(Clone)]
struct Conn<C = Client> {
    client: C,
    rt: tokio::runtime::Handle,
}

/// A closed loop's measure: how long it runs and, after the clients' first requests have settled,
/// the window over which completions are counted.
#[derive(Clone, Copy)]
struct Window {
    /// From the clients' start to the window's start: the burst of every client's first request
    /// and the pipeline's filling, which a sustained load does not have.
    settle: Duration,
    /// The window: requests completed in it are counted, and their latencies.
    measure: Duration,
    /// At most this many requests per client (a bound on the count as well as on the time).
    most: usize,
}

impl Window {
    /// When the window closes, from the loop's start.
    fn end(&self) -> Duration {
        self.settle + self.measure
    }

    /// Whether a request answered `at` after the loop's start is counted: closed and open loops
    /// count by the same rule.
    fn holds(&self, at: Duration) -> bool {
        at >= self.settle && at < self.end()
    }

    /// An open loop's rounds at `interval`: enough for every client to send until the window
    /// closes, at most `most`.
    fn rounds(&self, interval: Duration) -> usize {
        let through = self.end().as_secs_f64();
        let rounds = (through / interval.as_secs_f64()).ceil() as usize + 1;
        rounds.min(self.most)
    }
}

/// What a closed loop measured: the window's seconds, the latencies of the requests completed in
/// it (so items = latencies × items per request), and the mean items per batch formed for them.
struct Measured {
    secs: f64,
    /// The whole loop's wall time, settling and the last replies included.
    wall: f64,
    /// Requests completed over the whole loop.
    all: usize,
    lat: Vec<f64>,
    mean_batch: f64,
}

/// Every client sends its request, waits for the reply and sends the next, from the start until
/// the window ends (or `most` requests each); counts the requests completed within the window. A
/// request in flight when the window ends is awaited (the next case starts with nothing pending)
/// but not counted, so all clients are at work throughout the window: none has finished early
/// and left the server fewer to batch, as a fixed count of rounds per client ends.
async fn closed_loop<C, F, Fut>(clients: Vec<Conn<C>>, w: Window, call: F) -> Measured
where
    C: Clone + Send + 'static,
    F: Fn(C, usize) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = u64> + Send,
{
    let start = Instant::now();
    let to = start + w.end();
    let tasks: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(c, Conn { client, rt })| {
            let call = call.clone();
            rt.spawn(async move {
                let (mut lat, mut batch, mut all) = (Vec::new(), 0u64, 0usize);
                for _ in 0..w.most {
                    let s = Instant::now();
                    if s >= to {
                        break;
                    }
                    let b = call(client.clone(), c).await;
                    let done = Instant::now();
                    all += 1;
                    if w.holds(done - start) {
                        lat.push((done - s).as_secs_f64());
                        batch += b;
                    }
                }
                (lat, batch, all)
            })
        })
        .collect();
    let (mut lat, mut batch, mut all) = (Vec::new(), 0u64, 0);
    for t in tasks {
        let (l, b, a) = t.await.expect("client task");
        lat.extend(l);
        batch += b;
        all += a;
    }
    Measured::new(start, w, lat, batch, all)
}

impl Measured {
    /// A closed loop started at `start` over window `w`, its clients' work done: the latencies
    /// and batch sizes of the requests answered in the window, and every request answered.
    fn new(start: Instant, w: Window, lat: Vec<f64>, batch: u64, all: usize) -> Measured {
        let (from, to) = (start + w.settle, start + w.end());
        // Bounded by `most`, the clients may all stop before the window ends.
        let secs = (to.min(Instant::now()) - from.min(to)).as_secs_f64();
        Measured {
            secs,
            wall: start.elapsed().as_secs_f64(),
            all,
            mean_batch: batch as f64 / lat.len().max(1) as f64,
            lat,
        }
    }
}

/// Open loop: each client sends a request every `interval` (the clients' phases spread evenly
/// over one interval) until `w`'s window has closed, whether or not its earlier ones were
/// answered.
async fn open_loop<C, F, Fut>(
    clients: Vec<Conn<C>>,
    w: Window,
    interval: Duration,
    call: F,
) -> Paced
where
    C: Clone + Send + 'static,
    F: Fn(C, usize) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = u64> + Send + 'static,
{
    let t = Instant::now();
    let (n, rounds) = (clients.len(), w.rounds(interval));
    let tasks: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(c, Conn { client, rt })| {
            let call = call.clone();
            rt.spawn(async move {
                let start = tokio::time::Instant::now() + interval.mul_f64(c as f64 / n as f64);
                let mut sent = Vec::with_capacity(rounds);
                for r in 0..rounds {
                    tokio::time::sleep_until(start + interval * r as u32).await;
                    let (call, client) = (call.clone(), client.clone());
                    sent.push(tokio::spawn(async move {
                        let s = Instant::now();
                        call(client, c).await;
                        Done::since(t, s)
                    }));
                }
                let mut done = Vec::with_capacity(rounds);
                for h in sent {
                    done.push(h.await.expect("request task"));
                }
                done
            })
        })
        .collect();
    Paced::gather(t, tasks, interval, w).await
}

/// A request of an open loop: when its reply came (from the loop's start) and its latency in
/// seconds.
struct Done {
    at: Duration,
    lat: f64,
}

impl Done {
    /// A request sent at `sent`, its reply in now, of a loop started at `t`.
    fn since(t: Instant, sent: Instant) -> Done {
        let now = Instant::now();
        Done {
            at: now - t,
            lat: (now - sent).as_secs_f64(),
        }
    }
}

/// Open loop over a stream per client: client `c` opens its stream, then sends its request every
/// `interval` (the clients' phases spread evenly over one interval) until `w`'s window has
/// closed, without waiting for replies, while reading and checking them as they come (each
/// latency from the request's send to its reply).
async fn open_loop_streams<S: Streamed, C: Duplex<S>>(
    clients: Vec<Conn<C>>,
    w: Window,
    interval: Duration,
    calls: S,
) -> Paced {
    let n = clients.len();
    let mut streams = Vec::with_capacity(n);
    for (c, Conn { client, rt }) in clients.into_iter().enumerate() {
        let calls = calls.clone();
        let opened = rt.spawn(async move { client.open(&calls, c).await });
        streams.push((opened.await.expect("stream"), rt));
    }
    let (t, rounds) = (Instant::now(), w.rounds(interval));
    let tasks: Vec<_> = streams
        .into_iter()
        .enumerate()
        .map(|(c, ((mut tx, mut replies), rt))| {
            let calls = calls.clone();
            rt.spawn(async move {
                let start = tokio::time::Instant::now() + interval.mul_f64(c as f64 / n as f64);
                let (sent_tx, mut sent) = tokio::sync::mpsc::unbounded_channel();
                let sending = async {
                    for r in 0..rounds {
                        tokio::time::sleep_until(start + interval * r as u32).await;
                        let _ = sent_tx.send(Instant::now());
                        C::send(&mut tx, &calls, c).await;
                    }
                };
                let reading = async {
                    let mut done = Vec::with_capacity(rounds);
                    for _ in 0..rounds {
                        calls.check(c, C::reply(&mut replies).await);
                        let at = sent.recv().await.expect("sent before its reply");
                        done.push(Done::since(t, at));
                    }
                    done
                };
                tokio::join!(sending, reading).1
            })
        })
        .collect();
    Paced::gather(t, tasks, interval, w).await
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

/// Each client's request of `calls` as gRPC frames it, encoded once.
fn wire_requests<S: Streamed>(calls: &S, clients: usize) -> Arc<Vec<bytes::Bytes>> {
    Arc::new(
        (0..clients)
            .map(|c| h2load::framed(&calls.request(c)))
            .collect(),
    )
}

/// A stream per client of `clients`, each starting at `start(c)`.
fn wire_loads(
    clients: &[usize],
    requests: &[bytes::Bytes],
    start: impl Fn(usize) -> Instant,
) -> Vec<wire::Load> {
    (clients.iter())
        .map(|&c| wire::Load {
            client: c,
            request: requests[c].clone(),
            start: start(c),
        })
        .collect()
}

/// A reply's check for the frame-writing client: decoded and checked as every case's replies.
fn wire_check<S: Streamed>(calls: &S) -> impl FnMut(usize, bytes::Bytes) -> Result<u64, String> {
    let calls = calls.clone();
    move |c, message| {
        let reply = <S::R as prost::Message>::decode(message).map_err(|e| e.to_string())?;
        Ok(calls.check(c, reply))
    }
}

/// Client `c`'s SHA256d request: its `per` 64-byte messages of `all`, packed (one buffer per
/// request, not a field per message).
fn sha256d_request(all: &bytes::Bytes, per: usize, c: usize) -> HashRequest {
    HashRequest {
        algorithm: HashAlgorithm::Sha256d as i32,
        messages: Vec::new(),
        messages_packed: Some(batchcrypt_serve::proto::Column {
            data: messages_of(all, per, c),
            width: 64,
            ends: Vec::new(),
            shared: None,
        }),
        digests_to: None,
    }
}

/// Client `c`'s `per` 64-byte messages of `all`, back to back.
fn messages_of(all: &bytes::Bytes, per: usize, c: usize) -> bytes::Bytes {
    all.slice(c * per * 64..(c + 1) * per * 64)
}

/// Checks a reply to a request of `per` messages; its batch's size.
fn sha256d_checked(r: HashReply, per: usize) -> u64 {
    assert_eq!(r.packed_digests.len(), 32 * per);
    r.batch_items
}

/// Checks a reply to an ECDSA request (every signature valid); its batch's size.
fn ecdsa_checked(v: VerifyReply) -> u64 {
    assert!(v.valid.iter().all(|&ok| ok) && v.valid.len() == PER_REQUEST);
    v.batch_items
}

/// Requests of one operation over a stream per client: how a client opens its stream, client
/// `c`'s request, and the check of a reply (giving the batch it was served in).
trait Streamed: Clone + Send + Sync + 'static {
    type Q: prost::Message + Send + 'static;
    type R: prost::Message + Default + Send + 'static;
    /// The service's gRPC method, for clients that speak HTTP/2 themselves ([`h2load`]).
    const METHOD: &'static str;
    fn open(c: Client) -> impl std::future::Future<Output = Stream<Self::Q, Self::R>> + Send;
    fn request(&self, c: usize) -> Self::Q;
    fn check(&self, c: usize, r: Self::R) -> u64;
}

/// Each client's ECDSA request, built once.
#[derive(Clone)]
struct EcdsaStreams(Arc<Vec<VerifyEcdsaRequest>>);

impl Streamed for EcdsaStreams {
    type Q = VerifyEcdsaRequest;
    type R = VerifyReply;
    const METHOD: &'static str = "VerifyEcdsaStream";
    async fn open(mut c: Client) -> Stream<VerifyEcdsaRequest, VerifyReply> {
        c.verify_ecdsa_stream().await.expect("stream opens")
    }
    fn request(&self, c: usize) -> VerifyEcdsaRequest {
        self.0[c].clone()
    }
    fn check(&self, _: usize, r: VerifyReply) -> u64 {
        ecdsa_checked(r)
    }
}

/// Requests of `per` SHA256d messages each, cut from one buffer.
#[derive(Clone)]
struct Sha256dStreams {
    all: bytes::Bytes,
    per: usize,
}

impl Streamed for Sha256dStreams {
    type Q = HashRequest;
    type R = HashReply;
    const METHOD: &'static str = "HashStream";
    async fn open(mut c: Client) -> Stream<HashRequest, HashReply> {
        c.hash_stream().await.expect("stream opens")
    }
    fn request(&self, c: usize) -> HashRequest {
        sha256d_request(&self.all, self.per, c)
    }
    fn check(&self, _: usize, r: HashReply) -> u64 {
        sha256d_checked(r, self.per)
    }
}

/// Echoes of the SHA256d streams' requests: the same bytes sent, as many back as their digests,
/// nothing computed. What the service serves at most with this link, clients and threads.
#[derive(Clone)]
struct Echoes(Sha256dStreams);

impl Streamed for Echoes {
    type Q = EchoRequest;
    type R = EchoReply;
    const METHOD: &'static str = "Echo";
    async fn open(mut c: Client) -> Stream<EchoRequest, EchoReply> {
        c.echo_stream().await.expect("stream opens")
    }
    fn request(&self, c: usize) -> EchoRequest {
        EchoRequest {
            payload: messages_of(&self.0.all, self.0.per, c),
            reply_bytes: (32 * self.0.per) as u32,
        }
    }
    fn check(&self, _: usize, r: EchoReply) -> u64 {
        assert_eq!(r.payload.len(), 32 * self.0.per);
        0
    }
}

/// The SHA256d streams' requests with their bytes in shared memory: client `c` writes its
/// messages into its region (as it would produce them there), the request names them and where
/// the digests go, and the check reads the digests back and compares them with the library's.
#[derive(Clone)]
struct SharedSha256d {
    streams: Sha256dStreams,
    regions: Arc<Vec<batchcrypt_serve::client::SharedMemory>>,
    /// The library's digests of every client's messages, back to back.
    expected: bytes::Bytes,
}

impl Streamed for SharedSha256d {
    type Q = HashRequest;
    type R = HashReply;
    const METHOD: &'static str = Sha256dStreams::METHOD;
    async fn open(c: Client) -> Stream<HashRequest, HashReply> {
        Sha256dStreams::open(c).await
    }
    fn request(&self, c: usize) -> HashRequest {
        let (r, len) = (&self.regions[c], 64 * self.streams.per as u64);
        r.write_at(&messages_of(&self.streams.all, self.streams.per, c), 0)
            .expect("messages written");
        batchcrypt_serve::client::shared_hash_request(
            HashAlgorithm::Sha256d,
            r.span(0, len),
            64,
            r.span(len, len / 2),
        )
    }
    fn check(&self, c: usize, r: HashReply) -> u64 {
        let per = self.streams.per;
        let mut digests = vec![0u8; 32 * per];
        self.regions[c]
            .read_at(&mut digests, 64 * per as u64)
            .expect("digests read");
        assert!(digests[..] == self.expected[32 * per * c..32 * per * (c + 1)]);
        assert!(r.packed_digests.is_empty() && r.digests.is_empty());
        r.batch_items
    }
}

/// A client's unary SHA256d call ([`sha256d_request`]); the reply's batch size.
fn sha256d_call(
    all: bytes::Bytes,
    per: usize,
) -> impl Fn(Client, usize) -> std::pin::Pin<Box<dyn std::future::Future<Output = u64> + Send>>
       + Clone
       + Send
       + Sync
       + 'static {
    move |mut client: Client, c: usize| {
        let request = sha256d_request(&all, per, c);
        Box::pin(async move {
            let r = client
                .raw()
                .hash(request)
                .await
                .expect("served")
                .into_inner();
            sha256d_checked(r, per)
        })
    }
}

/// A client's connection as a stream per client uses it: the library's client (gRPC through
/// tonic) or the lean one ([`h2load`]). A stream is a sending half and its replies, read in order.
trait Duplex<S: Streamed>: Clone + Send + 'static {
    type Sender: Send + 'static;
    type Replies: Send + 'static;
    /// Opens client `c`'s stream of `calls`' method.
    fn open(
        self,
        calls: &S,
        c: usize,
    ) -> impl std::future::Future<Output = (Self::Sender, Self::Replies)> + Send;
    /// Sends client `c`'s request.
    fn send(
        tx: &mut Self::Sender,
        calls: &S,
        c: usize,
    ) -> impl std::future::Future<Output = ()> + Send;
    /// The next reply.
    fn reply(rx: &mut Self::Replies) -> impl std::future::Future<Output = S::R> + Send;
}

impl<S: Streamed> Duplex<S> for Client {
    type Sender = batchcrypt_serve::client::StreamSender<S::Q>;
    type Replies = Stream<S::Q, S::R>;
    async fn open(self, _: &S, _: usize) -> (Self::Sender, Self::Replies) {
        let stream = S::open(self).await;
        (stream.sender(), stream)
    }
    async fn send(tx: &mut Self::Sender, calls: &S, c: usize) {
        tx.send(calls.request(c)).await.expect("sent")
    }
    async fn reply(rx: &mut Self::Replies) -> S::R {
        rx.reply().await.expect("served").expect("a reply")
    }
}

/// The lean client's request is encoded once, when its stream opens, and sent as the same bytes.
impl<S: Streamed> Duplex<S> for H2Conn {
    type Sender = (h2load::H2Sender, bytes::Bytes);
    type Replies = h2load::H2Replies;
    async fn open(self, calls: &S, c: usize) -> (Self::Sender, Self::Replies) {
        let stream = H2Conn::open(&self, S::METHOD).await.expect("stream opens");
        let request = h2load::framed(&calls.request(c));
        ((stream.send, request), stream.replies)
    }
    async fn send(tx: &mut Self::Sender, _: &S, _: usize) {
        tx.0.send(tx.1.clone()).expect("sent")
    }
    async fn reply(rx: &mut Self::Replies) -> S::R {
        prost::Message::decode(rx.next().await.expect("served")).expect("a reply")
    }
}

/// A closed loop's call over one stream of requests per client: client `c`'s stream is opened
/// on its first request and kept, and each request is one message on it; the call checks the
/// reply and gives the batch it was served in.
fn stream_call<S: Streamed, C: Duplex<S>>(
    clients: usize,
    calls: S,
) -> impl Fn(C, usize) -> std::pin::Pin<Box<dyn std::future::Future<Output = u64> + Send>>
       + Clone
       + Send
       + Sync
       + 'static {
    type Slot<T, U> = tokio::sync::Mutex<Option<(T, U)>>;
    let slots: Arc<Vec<Slot<C::Sender, C::Replies>>> =
        Arc::new((0..clients).map(|_| Slot::default()).collect());
    move |client: C, c: usize| {
        let (slots, calls) = (slots.clone(), calls.clone());
        Box::pin(async move {
            let mut slot = slots[c].lock().await;
            if slot.is_none() {
                *slot = Some(client.open(&calls, c).await);
            }
            let (tx, replies) = slot.as_mut().expect("opened");
            C::send(tx, &calls, c).await;
            calls.check(c, C::reply(replies).await)
        })
    }
}

/// A closed or open loop's call over a frames connection: client `c`'s request of `calls`, the
/// reply checked; the batch it was served in.
fn framed_call<S>(
    calls: S,
) -> impl Fn(FramesClient, usize) -> std::pin::Pin<Box<dyn std::future::Future<Output = u64> + Send>>
       + Clone
       + Send
       + Sync
       + 'static
where
    S: Streamed,
    S::Q: Framed<Reply = S::R>,
{
    move |client: FramesClient, c: usize| {
        let calls = calls.clone();
        Box::pin(async move {
            let request = calls.request(c);
            calls.check(c, client.call(&request).await.expect("served"))
        })
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
            proofs(rep, server_rt.handle(), engine, quick).await?;
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
    let server = target::Target::start(engine.clone(), server_rt, config, &data).await?;
    if let Some(pid) = server.pid() {
        println!(
            "  (the server in a process of its own, pid {pid}{}: BATCHCRYPT_BENCH_SERVE_BIN)",
            std::env::var("BATCHCRYPT_BENCH_SERVER_CPUS")
                .map(|c| format!(", on CPUs {c}"))
                .unwrap_or_default()
        );
    }
    let clients = if quick { 100 } else { 1000 };
    // Closed loops: a settling time, then a window long enough for many rounds of every client.
    let (settle, measure) = if quick { (20, 100) } else { (100, 400) };
    let window = Window {
        settle: Duration::from_millis(settle),
        measure: Duration::from_millis(
            setting("BATCHCRYPT_BENCH_WINDOW_MS").map_or(measure, |ms| ms as u64),
        ),
        most: 100_000,
    };
    let n = clients * PER_REQUEST;
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
        let mut ran = None;
        let s = library_batch(n, || {
            let o = engine
                .secp256k1()
                .verify_ecdsa(&b.hashes, &sigs, &keys, &opts)
                .unwrap();
            assert!(o.value.all_valid());
            ran = Some(o.backend);
        });
        let base = format!("one batch of {n}, library (ran {})", ran.unwrap());
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
        let mut ran = None;
        let s = library_batch(n, || {
            let m = Messages::fixed(&msgs, 64).unwrap();
            ran = Some(engine.sha256().hash(&m, Mode::Double).unwrap().backend);
        });
        let base = format!("one batch of {n}, library (ran {})", ran.unwrap());
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

/// An open loop's outcome: its wall time, its requests, the clients' interval, its window.
struct Paced {
    secs: f64,
    done: Vec<Done>,
    interval: Duration,
    window: Window,
}

impl Paced {
    /// Waits for the clients' tasks, each giving its requests; the wall time from `t`.
    async fn gather(
        t: Instant,
        tasks: Vec<tokio::task::JoinHandle<Vec<Done>>>,
        interval: Duration,
        window: Window,
    ) -> Paced {
        let mut done = Vec::new();
        for task in tasks {
            done.extend(task.await.expect("client task"));
        }
        Paced {
            secs: t.elapsed().as_secs_f64(),
            done,
            interval,
            window,
        }
    }

    /// The latencies of the requests answered in the window.
    fn in_window(&self) -> Vec<f64> {
        (self.done.iter())
            .filter(|d| self.window.holds(d.at))
            .map(|d| d.lat)
            .collect()
    }

    /// Reports against the library's batch (`per` items a request) the requests answered in the
    /// window, as a closed loop counts them: the rate the server sustained once the load had
    /// settled and their latencies (a server that falls behind answers fewer, later).
    fn report(self, rep: &mut Report, case: &str, base: &str, label: &str, per: usize, bytes: u64) {
        let (all, lat) = (self.done.len(), self.in_window());
        let secs = self.window.measure.as_secs_f64();
        let items = (lat.len() * per) as u64;
        rep.add(GROUP, case, label, items, bytes * items, secs, Some(base));
        let (p50, p99, max) = latencies(lat);
        println!(
            "  open loop: each client every {:.1} ms; in the window latency p50 {p50:.1} ms, p99 {p99:.1} ms, max {max:.1} ms; the whole loop (first request to last reply) {:.3} M items/s",
            1e3 * self.interval.as_secs_f64(),
            (all * per) as f64 / self.secs / 1e6,
        );
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
        let paced = paced.await;
        paced.report(rep, case, base, label, self.per_request, bytes_per_item);
        let after = stages(self.metrics, op).await;
        println!("  {}", stages_between(&before, &after));
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
        let cpu = thread_cpu(self.server_pid);
        let m = measured.await;
        let cpu = cpu_between(&cpu, &thread_cpu(self.server_pid), m.wall);
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

/// 64 clients proving on three circuits at once under a budget that holds two of their keys.
async fn proofs(
    rep: &mut Report,
    server_rt: &tokio::runtime::Handle,
    engine: Arc<Engine>,
    quick: bool,
) -> anyhow::Result<()> {
    let ks: [u32; 3] = if quick { [8, 9, 10] } else { [12, 14, 16] };
    let (clients, per_client) = if quick { (8, 1) } else { (64, 3) };
    rep.header(&format!(
        "service: {clients} clients proving on chain circuits 2^{}, 2^{}, 2^{} at once",
        ks[0], ks[1], ks[2]
    ));
    let mut circuits = Vec::new();
    for &k in &ks {
        let (r1cs, witness) = crate::groth16::chain_circuit(k);
        let zkey = batchcrypt::groth16::setup::<batchcrypt::bn254::Bn254, _>(
            &r1cs,
            &mut rand::rngs::OsRng,
        )?;
        let key = batchcrypt::groth16::ProvingKey::<batchcrypt::bn254::Bn254>::parse(&zkey)?;
        circuits.push((
            k,
            zkey,
            witness.to_bytes(),
            key.device_bytes(),
            key.proof_device_bytes(),
        ));
    }
    let workers = 4u64;
    let mut keys: Vec<u64> = circuits.iter().map(|c| c.3).collect();
    keys.sort();
    let proof_max = circuits.iter().map(|c| c.4).max().unwrap_or(0);
    let budget = keys[1] + keys[2] + workers * proof_max;
    let data = std::env::temp_dir().join(format!("batchcrypt-bench-prove-{}", std::process::id()));
    let mut config = ServerConfig::new(data.clone());
    config.listen = "127.0.0.1:0".parse()?;
    config.metrics = Some("127.0.0.1:0".parse()?);
    config.prover.workers = workers as usize;
    config.prover.memory = budget;
    batchcrypt::backend::gpu::reset_memory_stats();
    let server = server_rt
        .spawn(batchcrypt_serve::start(engine, config))
        .await?
        .map_err(anyhow::Error::msg)?;
    let addr = server.addr.to_string();
    let mut c = Client::connect(&addr).await.map_err(anyhow::Error::msg)?;
    let mut ids = Vec::new();
    for (k, zkey, ..) in &circuits {
        ids.push(
            c.register(zkey.clone(), &format!("chain-{k}"))
                .await?
                .circuit_id,
        );
    }
    println!(
        "  keys {} MiB; budget {} MiB holds two keys and {workers} proofs",
        keys.iter()
            .map(|k| (k >> 20).to_string())
            .collect::<Vec<_>>()
            .join(" + "),
        budget >> 20
    );
    let circuits = Arc::new(circuits);
    let ids = Arc::new(ids);
    let t = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|client| {
            let (c, circuits, ids) = (c.clone(), circuits.clone(), ids.clone());
            tokio::spawn(async move {
                let mut c = c;
                let mut out = Vec::new();
                for j in 0..per_client {
                    let which = (client + j) % 3;
                    let s = Instant::now();
                    let r = c
                        .prove(
                            &ids[which],
                            circuits[which].2.clone(),
                            JobOptions::default(),
                        )
                        .await;
                    let ok = r.as_ref().is_ok_and(|r| {
                        r.job.as_ref().is_some_and(|j| {
                            j.state == batchcrypt_serve::proto::JobState::Done as i32
                        })
                    });
                    out.push((which, s.elapsed().as_secs_f64(), ok));
                }
                out
            })
        })
        .collect();
    let mut results = Vec::new();
    for t in tasks {
        results.extend(tokio::time::timeout(Duration::from_secs(1800), t).await??);
    }
    let secs = t.elapsed().as_secs_f64();
    let failures = results.iter().filter(|r| !r.2).count();
    rep.add(
        GROUP,
        "Groth16, 3 circuits at once",
        &format!("served, {clients} clients"),
        results.len() as u64,
        0,
        secs,
        None,
    );
    for (i, k) in ks.iter().enumerate() {
        let lat: Vec<f64> = results.iter().filter(|r| r.0 == i).map(|r| r.1).collect();
        let (p50, p99, max) = latencies(lat);
        println!("  chain 2^{k}: latency p50 {p50:.0} ms, p99 {p99:.0} ms, max {max:.0} ms");
    }
    let metrics = server
        .metrics_addr
        .map(|m| async move { http_get(m).await })
        .unwrap();
    let text = metrics.await.unwrap_or_default();
    let evictions = text
        .lines()
        .find_map(|l| l.strip_prefix("batchcrypt_key_evictions_total "))
        .unwrap_or("?")
        .to_string();
    let peak = batchcrypt::backend::gpu::memory_stats()
        .iter()
        .map(|s| s.peak)
        .max()
        .map_or("no GPU".to_string(), |p| format!("{} MiB", p >> 20));
    println!(
        "  {} proofs in {secs:.1} s ({:.1}/s), {failures} failed; key evictions {evictions}; peak GPU memory {peak}",
        results.len(),
        results.len() as f64 / secs
    );
    server.shutdown().await.map_err(anyhow::Error::msg)?;
    let _ = std::fs::remove_dir_all(&data);
    anyhow::ensure!(failures == 0, "{failures} proofs failed");
    Ok(())
}

/// The server's own view of an operation, cumulative over its life, from its metrics: per stage
/// (`run`: each batch; `queue`: each request's wait for its batch; `total`: each request in the
/// server) the count, the seconds, and the latency histogram's cumulative buckets.
#[derive(Default)]
struct Stages(std::collections::HashMap<&'static str, Stage>);

#[derive(Default, Clone)]
struct Stage {
    count: f64,
    sum: f64,
    /// (upper bound in seconds, requests at or under it)
    buckets: Vec<(f64, f64)>,
}

const STAGES: [&str; 3] = ["run", "queue", "total"];

async fn stages(metrics: Option<std::net::SocketAddr>, op: &str) -> Stages {
    let Some(m) = metrics else {
        return Stages::default();
    };
    parse_stages(&http_get(m).await.unwrap_or_default(), op)
}

fn parse_stages(text: &str, op: &str) -> Stages {
    let mut out = Stages::default();
    for stage in STAGES {
        let labels = format!("{{op=\"{op}\",stage=\"{stage}\"");
        let value = |name: &str| -> f64 {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("{name}{labels}}} ")))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0.0)
        };
        // Written `..._bucket{le="0.0001",op="hash",stage="run"} 7`.
        let rest = format!(",{}}} ", &labels[1..]);
        let buckets = text
            .lines()
            .filter_map(|l| l.strip_prefix("batchcrypt_stage_seconds_bucket{le=\""))
            .filter_map(|l| {
                let (le, l) = l.split_once('"')?;
                let n = l.strip_prefix(&rest)?;
                Some((le.parse().unwrap_or(f64::INFINITY), n.trim().parse().ok()?))
            })
            .collect();
        out.0.insert(
            stage,
            Stage {
                count: value("batchcrypt_stage_seconds_count"),
                sum: value("batchcrypt_stage_seconds_sum"),
                buckets,
            },
        );
    }
    out
}

/// The server's view between two readings of [`stages`]: batches, and per stage the mean and
/// the bucket bound under which 99% of the requests fell (so where a tail arises: in the wait for
/// a batch, the batch's run, or outside the server).
fn stages_between(before: &Stages, after: &Stages) -> String {
    let d = |stage: &str| -> Stage {
        let (a, b) = (
            after.0.get(stage).cloned().unwrap_or_default(),
            before.0.get(stage).cloned().unwrap_or_default(),
        );
        Stage {
            count: a.count - b.count,
            sum: a.sum - b.sum,
            buckets: a
                .buckets
                .iter()
                .map(|&(le, n)| {
                    let was = b.buckets.iter().find(|x| x.0 == le).map_or(0.0, |x| x.1);
                    (le, n - was)
                })
                .collect(),
        }
    };
    let p99 = |s: &Stage| -> f64 {
        s.buckets
            .iter()
            .find(|&&(_, n)| n >= 0.99 * s.count)
            .map_or(f64::NAN, |&(le, _)| le)
    };
    let (run, queue, total) = (d("run"), d("queue"), d("total"));
    if run.count == 0.0 && total.count == 0.0 {
        return "server: no batches (nothing batched)".into();
    }
    format!(
        "server: {:.0} batches, run {:.2} ms on average (p99 <= {:.1} ms); requests waited {:.2} ms for their batch (p99 <= {:.1} ms), {:.2} ms in the server (p99 <= {:.1} ms)",
        run.count,
        1e3 * run.sum / run.count.max(1.0),
        1e3 * p99(&run),
        1e3 * queue.sum / queue.count.max(1.0),
        1e3 * p99(&queue),
        1e3 * total.sum / total.count.max(1.0),
        1e3 * p99(&total),
    )
}

/// CPU seconds (user and system) each group of this process's threads has used, by thread name
/// with its number dropped (`serve`, `bench-client`, `batchcrypt-transfer`; the rest carry the
/// process's name), and those of the server's process `server` where it runs apart (named
/// `server:` and theirs). Threads that ended are not counted. Empty where /proc is not there.
fn thread_cpu(server: Option<u32>) -> std::collections::BTreeMap<String, f64> {
    let mut out = std::collections::BTreeMap::new();
    // SAFETY: sysconf reads a constant.
    let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let ours = std::iter::once(("/proc/self/task".to_string(), ""));
    let theirs = server.map(|pid| (format!("/proc/{pid}/task"), "server:"));
    for (dir, prefix) in ours.chain(theirs) {
        let Ok(tasks) = std::fs::read_dir(dir) else {
            continue;
        };
        for t in tasks.flatten() {
            let (Ok(comm), Ok(stat)) = (
                std::fs::read_to_string(t.path().join("comm")),
                std::fs::read_to_string(t.path().join("stat")),
            ) else {
                continue;
            };
            // Fields after the parenthesised name: state is the first, utime and stime the 12th
            // and 13th.
            let Some(rest) = stat.rsplit_once(')').map(|r| r.1) else {
                continue;
            };
            let f: Vec<&str> = rest.split_whitespace().collect();
            let ticks: f64 = f.get(11..13).map_or(0.0, |v| {
                v.iter().filter_map(|x| x.parse::<f64>().ok()).sum()
            });
            let name = comm
                .trim()
                .trim_end_matches(|c: char| c.is_ascii_digit() || c == '-');
            *out.entry(format!("{prefix}{name}")).or_insert(0.0) += ticks / tick;
        }
    }
    out
}

/// The threads' busy cores over `secs` between two readings of [`thread_cpu`], by group.
fn cpu_between(
    before: &std::collections::BTreeMap<String, f64>,
    after: &std::collections::BTreeMap<String, f64>,
    secs: f64,
) -> String {
    let mut parts: Vec<(String, f64)> = after
        .iter()
        .map(|(k, v)| (k.clone(), (v - before.get(k).unwrap_or(&0.0)) / secs))
        .collect();
    // Every group counts toward the total; only those of a twentieth of a core or more are named.
    let total: f64 = parts.iter().map(|p| p.1).sum();
    parts.retain(|(_, c)| *c >= 0.05);
    parts.sort_by(|a, b| b.1.total_cmp(&a.1));
    // The host's, whatever set of them the clients or the server run on.
    // SAFETY: sysconf reads a constant.
    let cores = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    format!(
        "CPU: {total:.1} of {cores} cores busy on average ({})",
        parts
            .iter()
            .map(|(k, c)| format!("{k} {c:.1}"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

async fn http_get(addr: std::net::SocketAddr) -> std::io::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await?;
    s.write_all(
        format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await?;
    let mut out = String::new();
    s.read_to_string(&mut out).await?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ten clients on two client threads (which live as long as the shards).
    fn ten_clients() -> (Shards, Vec<Conn<()>>) {
        let shards = Shards::start(2, "test-client").unwrap();
        let conns = (0..10)
            .map(|i| Conn {
                client: (),
                rt: shards.handle(i % 2).clone(),
            })
            .collect();
        (shards, conns)
    }

    /// Ten clients whose every call takes at least 5 ms, in a closed loop.
    fn slow_loop(w: Window) -> Measured {
        let (_shards, conns) = ten_clients();
        let rt = runtime(1, "test-main").unwrap();
        rt.block_on(closed_loop(conns, w, |(), _| async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            7
        }))
    }

    #[test]
    fn a_closed_loop_counts_only_its_window() {
        let w = Window {
            settle: Duration::from_millis(30),
            measure: Duration::from_millis(150),
            most: 100_000,
        };
        let m = slow_loop(w);
        // The window's own length, however the calls fell.
        assert!((m.secs - 0.150).abs() < 1e-3, "{}", m.secs);
        // Requests done while settling, or after the window, are not counted.
        assert!(
            !m.lat.is_empty() && m.all > m.lat.len(),
            "{} {}",
            m.all,
            m.lat.len()
        );
        // At most one call in 5 ms per client fits in the window.
        assert!(m.lat.len() <= 10 * 30, "{}", m.lat.len());
        assert!(m.lat.iter().all(|&l| l >= 0.005));
        assert_eq!(m.mean_batch, 7.0);
        assert!(m.wall >= 0.180);
    }

    #[test]
    fn a_closed_loop_stops_at_its_count() {
        let w = Window {
            settle: Duration::ZERO,
            measure: Duration::from_secs(60),
            most: 3,
        };
        let m = slow_loop(w);
        assert_eq!((m.all, m.lat.len()), (30, 30));
        // The window ends with the last reply, not the minute it was given.
        assert!(m.secs >= 0.015 && m.secs < 30.0, "{}", m.secs);
    }

    #[test]
    fn an_open_loop_runs_through_its_window_and_counts_only_it() {
        let w = Window {
            settle: Duration::from_millis(30),
            measure: Duration::from_millis(150),
            most: 100_000,
        };
        let (_shards, conns) = ten_clients();
        let rt = runtime(1, "test-main").unwrap();
        let every = Duration::from_millis(10);
        let p = rt.block_on(open_loop(conns, w, every, |(), _| async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            7
        }));
        // Every client sent until the window closed: 19 rounds of 10 ms cover its 180 ms.
        assert_eq!(w.rounds(every), 19);
        assert_eq!(p.done.len(), 10 * 19);
        assert!(p
            .done
            .iter()
            .all(|d| d.lat >= 0.005 && d.at.as_secs_f64() >= d.lat));
        assert!(p.secs >= 0.180, "{}", p.secs);
        // Of them, those answered in the window: one per client each 10 ms of its 150, give or
        // take a round each for the phases and late timers on a busy machine.
        let counted = p.in_window();
        assert!((100..=170).contains(&counted.len()), "{}", counted.len());
        // A window longer than `most` rounds allow stops at `most`.
        let w = Window { most: 4, ..w };
        assert_eq!(w.rounds(every), 4);
    }

    #[test]
    fn stages_read_from_the_servers_metrics() {
        let text = |runs: [u32; 3]| {
            format!(
                "batchcrypt_stage_seconds_sum{{op=\"hash\",stage=\"run\"}} 0.5\n\
                 batchcrypt_stage_seconds_count{{op=\"hash\",stage=\"run\"}} {}\n\
                 batchcrypt_stage_seconds_bucket{{le=\"0.001\",op=\"hash\",stage=\"run\"}} {}\n\
                 batchcrypt_stage_seconds_bucket{{le=\"0.002\",op=\"hash\",stage=\"run\"}} {}\n\
                 batchcrypt_stage_seconds_bucket{{le=\"+Inf\",op=\"hash\",stage=\"run\"}} {}\n\
                 batchcrypt_stage_seconds_bucket{{le=\"0.001\",op=\"verify_ecdsa\",stage=\"run\"}} 9\n",
                runs[2], runs[0], runs[1], runs[2]
            )
        };
        let before = parse_stages(&text([0, 0, 0]), "hash");
        let after = parse_stages(&text([90, 99, 100]), "hash");
        assert_eq!(after.0["run"].buckets.len(), 3);
        let s = stages_between(&before, &after);
        assert!(s.starts_with("server: 100 batches"), "{s}");
        assert!(s.contains("(p99 <= 2.0 ms)"), "{s}");
        // Nothing batched in between (an echo): said so, not a NaN percentile.
        let s = stages_between(&after, &after);
        assert_eq!(s, "server: no batches (nothing batched)");
    }
}

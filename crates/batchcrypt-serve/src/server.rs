//! The gRPC server: the `BatchCrypt` service over the batchers and the prover, the standard
//! health service, the metrics listener, and the guards in front of them (bearer token, TLS,
//! request size and rate limits).
//!
//! Safe by default: it listens on loopback; on any other address it refuses to start without
//! TLS and a token unless told the network is trusted. Shutdown is graceful: readiness turns
//! NOT_SERVING, new calls are refused, calls in flight (their batches included) finish, running
//! proofs finish; queued proofs stay in the store for the next start.

use crate::batcher::{BatchConfig, Batcher};
use crate::metrics::{Metrics, Op};
use crate::ops::{self, HashKind};
use crate::proto::batch_crypt_server::{BatchCrypt, BatchCryptServer};
use crate::proto::*;
use crate::prover::{Prover, ProverConfig};
use batchcrypt::bitcoin::txs::LooseTx;
use batchcrypt::secp256k1::SigFormat;
use batchcrypt::Engine;
use bytes::Bytes;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::{oneshot, watch};
use tonic::{Request, Response, Status};

/// Everything `batchcrypt serve` can be told.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    /// Also serve on this Unix socket: clients on the same machine skip the TCP stack.
    /// Reachable by the socket file's owner and group; no TLS.
    pub unix_socket: Option<PathBuf>,
    /// Also serve the batched operations on this Unix socket in plain frames rather than gRPC
    /// ([`crate::frames`]): the cheapest way for a client on this machine to send many small
    /// requests. Reachable by the socket file's owner and group.
    pub frames_socket: Option<PathBuf>,
    /// Where `/metrics` is served (None: not at all).
    pub metrics: Option<SocketAddr>,
    pub batch: BatchConfig,
    pub prover: ProverConfig,
    /// Clients must send `authorization: Bearer <token>`.
    pub token: Option<String>,
    /// PEM certificate chain and private key.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// Listen beyond loopback without TLS or a token (a trusted network).
    pub allow_insecure: bool,
    /// Largest request message.
    pub max_message_bytes: usize,
    /// Most items in one request.
    pub max_request_items: usize,
    /// Requests per second per client address (0: no limit).
    pub rate_limit: u32,
    /// Threads that serve the connections, each owning the connections dealt to it (one per
    /// core by default).
    pub io_threads: usize,
    /// Lets clients on this machine pass data through files of this directory (`/dev/shm`)
    /// instead of the connection ([`crate::shared`]); None: off.
    pub shared_memory: Option<PathBuf>,
}

impl ServerConfig {
    pub fn new(data_dir: PathBuf) -> Self {
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 7700)),
            unix_socket: None,
            frames_socket: None,
            metrics: Some(SocketAddr::from(([127, 0, 0, 1], 7701))),
            batch: BatchConfig::default(),
            prover: ProverConfig {
                workers: 4,
                memory: default_proof_memory(),
                data_dir,
                hold: Duration::ZERO,
            },
            token: None,
            tls: None,
            allow_insecure: false,
            max_message_bytes: 64 << 20,
            max_request_items: 1 << 20,
            rate_limit: 0,
            io_threads: std::thread::available_parallelism().map_or(4, |n| n.get()),
            shared_memory: None,
        }
    }

    /// Refuses an exposed listener without TLS and a token, unless the network is trusted, and
    /// shared memory on an exposed listener.
    fn check_exposure(&self) -> Result<(), String> {
        let exposed = |a: &SocketAddr| !a.ip().is_loopback();
        if let Some(dir) = &self.shared_memory {
            if exposed(&self.listen) {
                return Err(
                    "shared memory is for clients on this machine: listen on loopback \
                            (clients here may also use --unix-socket), or leave it off"
                        .into(),
                );
            }
            if !dir.is_dir() {
                return Err(format!(
                    "shared memory: {} is not a directory",
                    dir.display()
                ));
            }
        }
        if self.allow_insecure {
            return Ok(());
        }
        if exposed(&self.listen) && (self.tls.is_none() || self.token.is_none()) {
            return Err(format!(
                "{} is reachable from other machines: give --tls-cert, --tls-key and --token (or \
                 --allow-insecure on a trusted network)",
                self.listen
            ));
        }
        if self.metrics.is_some_and(|m| exposed(&m)) {
            return Err(
                "the metrics listener has no authentication: keep it on loopback (or \
                        --allow-insecure)"
                    .into(),
            );
        }
        Ok(())
    }
}

/// The GPU memory proofs may use: the smallest GPU's budget (every GPU may hold every key), or
/// 16 GiB of host memory's worth of admission where there is no GPU.
pub fn default_proof_memory() -> u64 {
    batchcrypt::backend::gpu::memory_stats()
        .iter()
        .map(|s| s.limit)
        .min()
        .unwrap_or(16 << 30)
}

/// A running server.
pub struct Running {
    pub addr: SocketAddr,
    pub unix_socket: Option<PathBuf>,
    pub frames_socket: Option<PathBuf>,
    pub metrics_addr: Option<SocketAddr>,
    /// Jobs a crash had left running, queued again at start.
    pub requeued: usize,
    stop: Option<watch::Sender<bool>>,
    done: tokio::task::JoinHandle<Result<(), String>>,
}

impl Running {
    /// Stops gracefully and waits until it has.
    pub async fn shutdown(mut self) -> Result<(), String> {
        if let Some(s) = self.stop.take() {
            let _ = s.send(true);
        }
        self.done.await.map_err(|e| e.to_string())?
    }

    /// Runs until `signal` resolves, then stops gracefully.
    pub async fn until(self, signal: impl std::future::Future<Output = ()>) -> Result<(), String> {
        signal.await;
        self.shutdown().await
    }
}

/// Binds the listeners and starts serving: connections on `config.io_threads` threads of their
/// own ([`crate::shards`]), the batchers, the prover and the metrics on the current tokio runtime.
pub async fn start(engine: Arc<Engine>, config: ServerConfig) -> Result<Running, String> {
    config.check_exposure()?;
    crate::io::raise_open_files(crate::io::OPEN_FILES_WANTED);
    // Before anything starts: a refused socket leaves nothing running.
    let unix = config.unix_socket.as_deref().map(bind_unix).transpose()?;
    let frames = config.frames_socket.as_deref().map(bind_unix).transpose()?;
    let sockets: Vec<PathBuf> = [&config.unix_socket, &config.frames_socket]
        .into_iter()
        .flatten()
        .cloned()
        .collect();
    let measured = engine.clone();
    tokio::task::spawn_blocking(move || crate::ops::measure_hash_backends(&measured))
        .await
        .map_err(|e| format!("measuring the hash backends: {e}"))?;
    let metrics = Arc::new(Metrics::default());
    let (prover, requeued) = Prover::start(engine.clone(), config.prover.clone(), metrics.clone())?;
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", config.listen))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let shards = crate::shards::Shards::start(config.io_threads, "serve-io")
        .map_err(|e| format!("cannot start the serving threads: {e}"))?;
    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<BatchCryptServer<Service>>().await;

    let (stop_tx, stop_rx) = watch::channel(false);
    let (metrics_addr, metrics_stop) = match config.metrics {
        Some(m) => {
            let l = tokio::net::TcpListener::bind(m)
                .await
                .map_err(|e| format!("cannot serve metrics on {m}: {e}"))?;
            let at = l.local_addr().map_err(|e| e.to_string())?;
            let (tx, rx) = oneshot::channel::<()>();
            tokio::spawn(crate::metrics::serve(
                l,
                metrics.clone(),
                engine.clone(),
                async {
                    let _ = rx.await;
                },
            ));
            (Some(at), Some(tx))
        }
        None => (None, None),
    };

    let guard = Arc::new(Guard::new(config.token.clone(), config.rate_limit));
    let service = Service::new(
        engine,
        prover.clone(),
        &config,
        metrics,
        guard.clone(),
        Some(stop_rx.clone()),
        addr.ip().is_loopback(),
    );
    let framed = service.clone();
    let in_front = service.clone();
    let grpc = BatchCryptServer::from_arc(service)
        .max_decoding_message_size(config.max_message_bytes)
        .max_encoding_message_size(config.max_message_bytes);
    let grpc = crate::grpc_streams::InFront::new(grpc, in_front);
    let grpc = tonic::service::interceptor::InterceptedService::new(grpc, move |r| guard.check(r));
    let tls = match &config.tls {
        Some((cert, key)) => {
            let read = |p: &PathBuf| {
                std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()))
            };
            let identity = tonic::transport::Identity::from_pem(read(cert)?, read(key)?);
            Some(tonic::transport::ServerTlsConfig::new().identity(identity))
        }
        None => None,
    };
    // The Unix socket's connections are served without TLS.
    let router = |tls: Option<&tonic::transport::ServerTlsConfig>| {
        let mut b = tonic::transport::Server::builder()
            .initial_connection_window_size(crate::H2_CONNECTION_WINDOW)
            .initial_stream_window_size(crate::H2_STREAM_WINDOW)
            .max_frame_size(crate::H2_MAX_FRAME);
        if let Some(t) = tls {
            b = b.tls_config(t.clone()).map_err(|e| format!("TLS: {e}"))?;
        }
        Ok::<_, String>(
            b.add_service(health_service.clone())
                .add_service(grpc.clone()),
        )
    };
    // Stopping: readiness goes first, so balancers stop sending while calls in flight finish;
    // then the listeners close and the connections drain.
    let (drain_tx, drain_rx) = watch::channel(false);
    let mut served = serve_on(listener, &shards, || router(tls.as_ref()), &drain_rx)?;
    if let Some(listener) = unix {
        served.extend(serve_on(listener, &shards, || router(None), &drain_rx)?);
    }
    if let Some(listener) = frames {
        let max = config.max_message_bytes;
        served.push(serve_frames(listener, &shards, framed, max, &drain_rx));
    }
    let done = tokio::spawn(async move {
        stopped(stop_rx).await;
        health.set_not_serving::<BatchCryptServer<Service>>().await;
        let _ = drain_tx.send(true);
        let mut result = Ok(());
        for task in served {
            let r = task.await.map_err(|e| e.to_string()).and_then(|r| r);
            result = result.and(r);
        }
        for path in &sockets {
            let _ = std::fs::remove_file(path);
        }
        let p = prover.clone();
        tokio::task::spawn_blocking(move || {
            p.drain();
            drop(shards);
        })
        .await
        .map_err(|e| e.to_string())?;
        if let Some(m) = metrics_stop {
            let _ = m.send(());
        }
        result
    });
    Ok(Running {
        addr,
        unix_socket: config.unix_socket,
        frames_socket: config.frames_socket,
        metrics_addr,
        requeued,
        stop: Some(stop_tx),
        done,
    })
}

/// Resolves once `rx` turns true (or its sender is gone).
async fn stopped(mut rx: watch::Receiver<bool>) {
    let _ = rx.wait_for(|&s| s).await;
}

/// A listener whose connections are dealt to the shards: accepted here, crossing as std streams,
/// registered with the reactor of the shard that serves them.
trait Listener: Send + Sync + 'static {
    type Std: Send + 'static;
    type Io: tonic::transport::server::Connected
        + tokio::io::AsyncRead
        + tokio::io::AsyncWrite
        + Unpin
        + Send
        + 'static;
    fn take(&self) -> impl std::future::Future<Output = std::io::Result<Self::Std>> + Send;
    fn register(s: Self::Std) -> std::io::Result<Self::Io>;
}

impl Listener for tokio::net::TcpListener {
    type Std = std::net::TcpStream;
    type Io = tokio::net::TcpStream;
    async fn take(&self) -> std::io::Result<std::net::TcpStream> {
        let (s, _) = self.accept().await?;
        // No Nagle: small replies go out at once, not after the peer's delayed ACK.
        s.set_nodelay(true)?;
        s.into_std()
    }
    fn register(s: std::net::TcpStream) -> std::io::Result<tokio::net::TcpStream> {
        tokio::net::TcpStream::from_std(s)
    }
}

impl Listener for tokio::net::UnixListener {
    type Std = std::os::unix::net::UnixStream;
    type Io = tokio::net::UnixStream;
    async fn take(&self) -> std::io::Result<std::os::unix::net::UnixStream> {
        self.accept().await?.0.into_std()
    }
    fn register(s: std::os::unix::net::UnixStream) -> std::io::Result<tokio::net::UnixStream> {
        tokio::net::UnixStream::from_std(s)
    }
}

/// Serves `listener` on every shard, each with its own router from `router`, until `drain`
/// turns true (calls in flight finish); a task on the current runtime accepts and deals the
/// connections to the shards in turn. Returns the shards' serving tasks.
fn serve_on<L: Listener>(
    listener: L,
    shards: &crate::shards::Shards,
    router: impl Fn() -> Result<tonic::transport::server::Router, String>,
    drain: &watch::Receiver<bool>,
) -> Result<Vec<tokio::task::JoinHandle<Result<(), String>>>, String> {
    use tokio_stream::StreamExt;
    let mut deal_to = Vec::with_capacity(shards.len());
    let mut served = Vec::with_capacity(shards.len());
    for i in 0..shards.len() {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        deal_to.push(tx);
        let incoming = tokio_stream::wrappers::UnboundedReceiverStream::new(rx).map(|s| {
            L::register(s)
                .map(|s| crate::io::ReadBuffered::serving(crate::io::WriteGathered::new(s)))
        });
        let serve = router()?.serve_with_incoming_shutdown(incoming, stopped(drain.clone()));
        served.push(
            shards
                .handle(i)
                .spawn(async move { serve.await.map_err(|e| e.to_string()) }),
        );
    }
    let drain = drain.clone();
    tokio::spawn(async move {
        accept_until(&listener, drain, |i, s| {
            let _ = deal_to[i % deal_to.len()].send(s);
        })
        .await
    });
    Ok(served)
}

/// Accepts `listener`'s connections, handing the `i`th to `deal`, until `drain` turns true.
async fn accept_until<L: Listener>(
    listener: &L,
    drain: watch::Receiver<bool>,
    mut deal: impl FnMut(usize, L::Std),
) {
    let drain = stopped(drain);
    tokio::pin!(drain);
    let mut next = 0usize;
    loop {
        tokio::select! {
            () = &mut drain => break,
            s = listener.take() => match s {
                Ok(s) => {
                    deal(next, s);
                    next = next.wrapping_add(1);
                }
                // Out of descriptors, or a connection reset before it was taken: a pause
                // rather than a loop that spins.
                Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
            },
        }
    }
}

/// Serves the frames socket's connections ([`crate::frames`]), dealt in turn to the serving
/// threads as gRPC's are; the task ends once draining has begun and every connection has
/// written the replies it owed.
fn serve_frames(
    listener: tokio::net::UnixListener,
    shards: &crate::shards::Shards,
    service: Arc<Service>,
    max: usize,
    drain: &watch::Receiver<bool>,
) -> tokio::task::JoinHandle<Result<(), String>> {
    let handles: Vec<_> = (0..shards.len())
        .map(|i| shards.handle(i).clone())
        .collect();
    let drain = drain.clone();
    tokio::spawn(async move {
        // Each connection holds a sender: all gone, all connections have ended.
        let (alive, mut ended) = tokio::sync::mpsc::channel::<()>(1);
        accept_until(&listener, drain.clone(), |i, s| {
            let (service, alive, drain) = (service.clone(), alive.clone(), drain.clone());
            handles[i % handles.len()].spawn(async move {
                if let Ok(io) = tokio::net::UnixListener::register(s) {
                    let _ = crate::frames::serve(io, service, max, stopped(drain)).await;
                }
                drop(alive);
            });
        })
        .await;
        drop((listener, alive));
        let _ = ended.recv().await;
        Ok(())
    })
}

/// Binds `path` for the owner and its group. A socket file left by a server that is gone is
/// replaced; one a running server answers on is not.
fn bind_unix(path: &std::path::Path) -> Result<tokio::net::UnixListener, String> {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    if let Ok(m) = std::fs::symlink_metadata(path) {
        if !m.file_type().is_socket() {
            return Err(format!("{} exists and is not a socket", path.display()));
        }
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(format!(
                "a server already answers on {}: stop it or choose another path",
                path.display()
            ));
        }
        std::fs::remove_file(path)
            .map_err(|e| format!("cannot replace {}: {e}", path.display()))?;
    }
    let listener = tokio::net::UnixListener::bind(path)
        .map_err(|e| format!("cannot listen on {}: {e}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660))
        .map_err(|e| format!("cannot restrict {}: {e}", path.display()))?;
    Ok(listener)
}

/// Bearer token and per-address rate limit, checked before a call is decoded further.
struct Guard {
    token: Option<String>,
    rate: u32,
    buckets: Mutex<HashMap<std::net::IpAddr, (f64, Instant)>>,
}

impl Guard {
    fn new(token: Option<String>, rate: u32) -> Self {
        Guard {
            token,
            rate,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    fn check(&self, r: Request<()>) -> Result<Request<()>, Status> {
        let given = r
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        self.token(given.map(str::as_bytes)).map_err(|()| {
            Status::unauthenticated(
                "missing or wrong bearer token (metadata `authorization: Bearer <token>`)",
            )
        })?;
        self.admit(r.remote_addr().map(|a| a.ip()))?;
        Ok(r)
    }

    /// Checks a bearer token given (None: none) against the server's.
    fn token(&self, given: Option<&[u8]>) -> Result<(), ()> {
        if let Some(token) = &self.token {
            let ok = given.is_some_and(|g| {
                // Compared in time independent of where the strings differ.
                g.len() == token.len()
                    && g.iter()
                        .zip(token.bytes())
                        .fold(0u8, |d, (a, b)| d | (a ^ b))
                        == 0
            });
            if !ok {
                return Err(());
            }
        }
        Ok(())
    }

    /// Takes one request from the rate limit of the client at `ip`: a call, or a message on a
    /// stream of requests.
    fn admit(&self, ip: Option<std::net::IpAddr>) -> Result<(), Status> {
        if self.rate > 0 {
            let ip = ip.unwrap_or([0u8; 4].into());
            let mut b = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
            if b.len() > 100_000 {
                b.clear(); // bounded: forget idle addresses rather than grow without end
            }
            let rate = self.rate as f64;
            let now = Instant::now();
            let (tokens, at) = b.entry(ip).or_insert((rate, now));
            *tokens = (*tokens + rate * (now - *at).as_secs_f64()).min(rate);
            *at = now;
            if *tokens < 1.0 {
                return Err(Status::resource_exhausted(format!(
                    "rate limit: {} requests per second per client address; retry later",
                    self.rate
                )));
            }
            *tokens -= 1.0;
        }
        Ok(())
    }
}

/// The largest ECDSA request encoded on arrival (about a millisecond of one core); a larger one
/// is encoded by its batch, on every core.
const ENCODE_ON_ARRIVAL: usize = 4096;

/// The service's state: a batcher per batched operation, the prover, the limits.
pub struct Service {
    engine: Arc<Engine>,
    ecdsa: Batcher<ops::Ecdsa>,
    schnorr: Batcher<ops::Schnorr>,
    sm2: Batcher<ops::Sm2Verify>,
    hash: Batcher<ops::Hash>,
    hash_mul: Batcher<ops::Sm2HashMul>,
    mul: Batcher<ops::Sm2Mul>,
    txs: Batcher<ops::Transactions>,
    prover: Arc<Prover>,
    metrics: Arc<Metrics>,
    /// Each operation's count of calls answered OK (indexed by [`Op`]), looked up once: the
    /// common case's counting then neither locks the family nor allocates labels per call.
    ok_calls: Vec<prometheus_client::metrics::counter::Counter>,
    max_items: usize,
    max_message_bytes: usize,
    /// Clients may name server-side paths and use shared memory only on a loopback listener.
    local: bool,
    /// Registered shared-memory regions (None: off).
    shared: Option<crate::shared::Regions>,
    /// Whether full ECDSA batches (`max_batch` items) on secp256k1 and on P-256 would run on a
    /// GPU, asked at the first request of each curve (the answer measures the CPU's cost once,
    /// which a server that never verifies ECDSA need not pay at start): then requests are
    /// encoded for it as they arrive ([`Service::encodes_on_arrival`]).
    ecdsa_on_gpu: (OnceLock<bool>, OnceLock<bool>),
    max_batch: usize,
    /// The rate limit, which streams of requests take per message.
    guard: Arc<Guard>,
    /// Set when the server begins to shut down: streams of requests stop reading then, so that
    /// the calls drain (`None` in process, where nothing shuts down).
    stopping: Option<watch::Receiver<bool>>,
}

fn requests_labels(op: &str, code: &str) -> crate::metrics::Labels {
    vec![("op", op.to_string()), ("code", code.to_string())]
}

/// The replies of a stream of requests, in order.
pub type ReplyStream<T> =
    std::pin::Pin<Box<dyn futures_util::Stream<Item = Result<T, Status>> + Send + 'static>>;

/// The batched operations' request streams are answered in front of tonic's service
/// ([`crate::grpc_streams`]), which reads their messages in place: calls to them never reach
/// these methods of the service.
fn answered_in_front<T>() -> Result<Response<ReplyStream<T>>, Status> {
    Err(Status::internal(
        "a request stream reached the service behind its handler in front",
    ))
}

impl Service {
    /// The service without a listener: the handlers [`start`] serves, with the same batchers,
    /// prover and limits, to call in process (the fuzz targets do). Needs a tokio runtime.
    pub fn in_process(engine: Arc<Engine>, config: &ServerConfig) -> Result<Arc<Service>, String> {
        let metrics = Arc::new(Metrics::default());
        let (prover, _) = Prover::start(engine.clone(), config.prover.clone(), metrics.clone())?;
        let guard = Arc::new(Guard::new(config.token.clone(), config.rate_limit));
        Ok(Service::new(
            engine, prover, config, metrics, guard, None, true,
        ))
    }

    fn new(
        engine: Arc<Engine>,
        prover: Arc<Prover>,
        config: &ServerConfig,
        metrics: Arc<Metrics>,
        guard: Arc<Guard>,
        stopping: Option<watch::Receiver<bool>>,
        local: bool,
    ) -> Arc<Self> {
        let b = config.batch;
        let m = || metrics.clone();
        Arc::new(Service {
            ecdsa: Batcher::start(Op::VerifyEcdsa.name(), ops::Ecdsa(engine.clone()), b, m()),
            schnorr: Batcher::start(
                Op::VerifySchnorr.name(),
                ops::Schnorr(engine.clone()),
                b,
                m(),
            ),
            sm2: Batcher::start(Op::VerifySm2.name(), ops::Sm2Verify(engine.clone()), b, m()),
            hash: Batcher::start(
                Op::Hash.name(),
                ops::Hash(engine.clone()),
                BatchConfig {
                    max_items: b.max_items.min(b.max_hash_items),
                    ..b
                },
                m(),
            ),
            hash_mul: Batcher::start(
                Op::Sm2HashToCurveMul.name(),
                ops::Sm2HashMul(engine.clone()),
                b,
                m(),
            ),
            mul: Batcher::start(
                Op::Sm2MulCompressed.name(),
                ops::Sm2Mul(engine.clone()),
                b,
                m(),
            ),
            txs: Batcher::start(
                Op::VerifyTransactions.name(),
                ops::Transactions(engine.clone()),
                b,
                m(),
            ),
            ecdsa_on_gpu: Default::default(),
            max_batch: b.max_items,
            engine,
            prover,
            max_items: config.max_request_items,
            max_message_bytes: config.max_message_bytes,
            local,
            shared: config
                .shared_memory
                .clone()
                .map(|dir| crate::shared::Regions::new(dir, crate::io::open_files_limit())),
            ok_calls: Op::ALL
                .iter()
                .map(|op| {
                    metrics
                        .requests
                        .get_or_create(&requests_labels(op.name(), "OK"))
                        .clone()
                })
                .collect(),
            metrics: metrics.clone(),
            guard,
            stopping,
        })
    }

    /// Whether an ECDSA request of `n` items on `curve` is encoded for the GPU as it arrives, on
    /// the thread that received it: where the curve's batches run on a GPU, for requests of up
    /// to [`ENCODE_ON_ARRIVAL`] items. The batch then copies the items where it would parse
    /// them all at once, on every core at the same moment as the other requests' handlers.
    fn encodes_on_arrival(&self, curve: EcdsaCurve, n: usize) -> bool {
        if n > ENCODE_ON_ARRIVAL {
            return false;
        }
        let (e, full) = (&self.engine, self.max_batch);
        *match curve {
            EcdsaCurve::Secp256k1 => self.ecdsa_on_gpu.0.get_or_init(|| {
                e.ecdsa::<batchcrypt::secp256k1::Secp256k1Curve>()
                    .plans_gpu(full)
            }),
            EcdsaCurve::P256 => self
                .ecdsa_on_gpu
                .1
                .get_or_init(|| e.ecdsa::<batchcrypt::p256::P256>().plans_gpu(full)),
        }
    }

    /// Counts the call by operation and status code.
    fn count<T>(&self, op: Op, r: Result<T, Status>) -> Result<Response<T>, Status> {
        self.counted(op, &r);
        r.map(Response::new)
    }

    fn counted<T>(&self, op: Op, r: &Result<T, Status>) {
        match r {
            Ok(_) => self.ok_calls[op as usize].inc(),
            Err(s) => self
                .metrics
                .requests
                .get_or_create(&requests_labels(op.name(), &format!("{:?}", s.code())))
                .inc(),
        };
    }

    /// A request's outcome, counted under `op`: its handler's, run to its end, or the error that
    /// kept it from running. A handler that panics answers its request with an error; the
    /// stream or connection, and the server, go on.
    async fn answer<T>(
        &self,
        op: Op,
        handled: Result<impl std::future::Future<Output = Result<T, Status>>, Status>,
    ) -> Result<T, Status> {
        use futures_util::FutureExt;
        let out = match handled {
            Ok(f) => std::panic::AssertUnwindSafe(f)
                .catch_unwind()
                .await
                .unwrap_or_else(|_| Err(Status::internal("the request's handler failed"))),
            Err(s) => Err(s),
        };
        self.counted(op, &out);
        out
    }

    /// The common item count of a request's lists.
    fn items(&self, lists: &[(&str, usize)]) -> Result<usize, Status> {
        let n = lists[0].1;
        if let Some((what, len)) = lists.iter().find(|(_, l)| *l != n) {
            return Err(Status::invalid_argument(format!(
                "{n} {} but {len} {what}: every item needs one of each",
                lists[0].0
            )));
        }
        if n > self.max_items {
            return Err(Status::resource_exhausted(format!(
                "{n} items in one request; the limit is {}: split it",
                self.max_items
            )));
        }
        Ok(n)
    }

    /// The shared-memory regions, for a client on this machine of a server that has them.
    fn shared(&self) -> Result<&crate::shared::Regions, Status> {
        if !self.local {
            return Err(Status::failed_precondition(
                "shared memory is for clients on the server's machine, and this server listens \
                 beyond loopback",
            ));
        }
        self.shared.as_ref().ok_or_else(|| {
            Status::failed_precondition(
                "this server was started without shared memory (batchcrypt serve --shared-memory)",
            )
        })
    }

    /// A request's list, given one by one or packed (not both), read in place (or, from shared
    /// memory, once).
    fn list(
        &self,
        what: &str,
        one_by_one: Vec<Bytes>,
        packed: Option<Column>,
    ) -> Result<ops::Col, Status> {
        let Some(mut c) = packed else {
            return Ok(ops::Col::Each(one_by_one));
        };
        if !one_by_one.is_empty() {
            return Err(Status::invalid_argument(format!(
                "{what}: give them one by one or packed, not both"
            )));
        }
        let bad = |why: String| Err(Status::invalid_argument(format!("{what} (packed): {why}")));
        if let Some(span) = c.shared.take() {
            if !c.data.is_empty() {
                return bad("data or a shared span, not both".into());
            }
            c.data = self.shared()?.read(&span, self.max_message_bytes)?;
        }
        let n = match (c.width as usize, c.ends.len()) {
            (0, n) => n,
            (w, 0) if c.data.len() % w == 0 => c.data.len() / w,
            (w, 0) => {
                return bad(format!(
                    "{} bytes are not a whole number of {w}-byte items",
                    c.data.len()
                ))
            }
            _ => return bad("a width or ends, not both".into()),
        };
        // Checked before anything is made per item.
        if n > self.max_items {
            return Err(Status::resource_exhausted(format!(
                "{n} items in one request; the limit is {}: split it",
                self.max_items
            )));
        }
        let mut start = 0usize;
        for &end in &c.ends {
            let end = end as usize;
            if end < start || end > c.data.len() {
                return bad(format!(
                    "ends must rise within the {} bytes of data",
                    c.data.len()
                ));
            }
            start = end;
        }
        if c.width == 0 && start != c.data.len() {
            return bad(format!(
                "the last end is {start}, the data {} bytes",
                c.data.len()
            ));
        }
        Ok(ops::Col::Packed {
            data: c.data,
            width: c.width as usize,
            ends: c.ends,
        })
    }

    async fn ecdsa(&self, r: VerifyEcdsaRequest) -> Result<VerifyReply, Status> {
        let hashes = self.list("hashes", r.hashes, r.hashes_packed)?;
        let sigs = self.list("signatures", r.signatures, r.signatures_packed)?;
        let keys = self.list("public keys", r.public_keys, r.public_keys_packed)?;
        self.items(&[
            ("hashes", hashes.len()),
            ("signatures", sigs.len()),
            ("public keys", keys.len()),
        ])?;
        if !hashes.all_of_width(32) {
            return Err(Status::invalid_argument(
                "every message hash must be 32 bytes",
            ));
        }
        let (curve, format) = (curve(r.curve)?, format(r.format)?);
        let mut items = ops::EcdsaItems {
            hashes,
            sigs,
            keys,
            encoded: None,
        };
        if self.encodes_on_arrival(curve, items.hashes.len()) {
            let opts = batchcrypt::ecdsa::EcdsaOptions {
                format,
                require_low_s: r.require_low_s,
            };
            items.encode(curve, &opts);
        }
        let reply = self
            .ecdsa
            .submit((curve, format, r.require_low_s), items)
            .await?;
        Ok(verify_reply(reply))
    }

    async fn schnorr(&self, r: VerifySchnorrRequest) -> Result<VerifyReply, Status> {
        let msgs = self.list("messages", r.messages, r.messages_packed)?;
        let sigs = self.list("signatures", r.signatures, r.signatures_packed)?;
        let keys = self.list("public keys", r.public_keys, r.public_keys_packed)?;
        self.items(&[
            ("messages", msgs.len()),
            ("signatures", sigs.len()),
            ("public keys", keys.len()),
        ])?;
        let items = msgs
            .into_vec()
            .into_iter()
            .zip(sigs.iter())
            .zip(keys.iter())
            .map(|((m, s), k)| ops::schnorr_item(m, s, k))
            .collect();
        Ok(verify_reply(self.schnorr.submit((), items).await?))
    }

    async fn sm2_verify(&self, r: VerifySm2Request) -> Result<VerifyReply, Status> {
        let msgs = self.list("messages", r.messages, r.messages_packed)?;
        let sigs = self.list("signatures", r.signatures, r.signatures_packed)?;
        let keys = self.list("public keys", r.public_keys, r.public_keys_packed)?;
        self.items(&[
            ("messages", msgs.len()),
            ("signatures", sigs.len()),
            ("public keys", keys.len()),
        ])?;
        let id =
            r.id.unwrap_or_else(|| Bytes::from_static(batchcrypt::sm2::verify::DEFAULT_ID));
        if id.len() > 8191 {
            return Err(Status::invalid_argument(
                "an SM2 identifier is at most 8191 bytes",
            ));
        }
        let items = msgs
            .into_vec()
            .into_iter()
            .zip(sigs.into_vec())
            .zip(keys.into_vec())
            .map(|((m, s), k)| (m, s, k))
            .collect();
        Ok(verify_reply(
            self.sm2.submit((format(r.format)?, id), items).await?,
        ))
    }

    async fn hashes(&self, r: HashRequest) -> Result<HashReply, Status> {
        let kind = match HashAlgorithm::try_from(r.algorithm) {
            Ok(HashAlgorithm::Sha256) => HashKind::Sha256,
            Ok(HashAlgorithm::Sha256d) => HashKind::Sha256d,
            Ok(HashAlgorithm::Sm3) => HashKind::Sm3,
            Err(_) => {
                return Err(Status::invalid_argument(format!(
                    "no hash algorithm {}",
                    r.algorithm
                )))
            }
        };
        let packed = r.messages_packed.is_some();
        let items = self.list("messages", r.messages, r.messages_packed)?;
        self.items(&[("messages", items.len())])?;
        if let Some(to) = &r.digests_to {
            self.shared()?.check_write(to, 32 * items.len())?;
        }
        // SHA-256's batches read page-locked requests in place on the GPU; SM3's join them.
        let items = match kind {
            HashKind::Sm3 => items,
            _ => items.page_locked(),
        };
        let reply = self.hash.submit(kind, items).await?;
        let n = reply.outs.len();
        // The reply's bytes are the batch's outputs, shared, not a copy of them.
        let all = Bytes::from_owner(reply.outs);
        let (digests, packed_digests) = if let Some(to) = &r.digests_to {
            self.shared()?.write(to, &all)?;
            (Vec::new(), Bytes::new())
        } else if packed {
            (Vec::new(), all)
        } else {
            (
                (0..n).map(|i| all.slice(32 * i..32 * (i + 1))).collect(),
                Bytes::new(),
            )
        };
        Ok(HashReply {
            digests,
            packed_digests,
            backend: reply.backend,
            batch_items: reply.batch_items as u64,
        })
    }

    async fn hash_to_curve_mul(&self, r: Sm2HashToCurveMulRequest) -> Result<PointsReply, Status> {
        self.items(&[("messages", r.messages.len())])?;
        let k = scalar(&r.scalar)?;
        if r.dst.is_empty() {
            return Err(Status::invalid_argument(
                "the domain separation tag must not be empty (RFC 9380 §3.1)",
            ));
        }
        Ok(points_reply(
            self.hash_mul.submit((k, r.dst), r.messages).await?,
        ))
    }

    async fn mul_compressed(&self, r: Sm2MulCompressedRequest) -> Result<PointsReply, Status> {
        self.items(&[("points", r.points.len())])?;
        let k = scalar(&r.scalar)?;
        let items = r.points.iter().map(|p| p[..].try_into().ok()).collect();
        Ok(points_reply(self.mul.submit(k, items).await?))
    }

    async fn transactions(
        &self,
        r: VerifyTransactionsRequest,
    ) -> Result<VerifyTransactionsReply, Status> {
        self.items(&[("transactions", r.transactions.len())])?;
        let items = (r.transactions.into_iter())
            .map(LooseTx::try_from)
            .collect::<Result<Vec<_>, Status>>()?;
        let reply = self.txs.submit((), items).await?;
        Ok(VerifyTransactionsReply {
            verdicts: reply
                .outs
                .iter()
                .map(|v| match v {
                    Ok(()) => TransactionVerdict {
                        valid: true,
                        reason: String::new(),
                        input: -1,
                    },
                    Err(e) => TransactionVerdict {
                        valid: false,
                        reason: e.reason.clone(),
                        input: e.input.map_or(-1, |i| i as i64),
                    },
                })
                .collect(),
            batch_items: reply.batch_items as u64,
        })
    }

    async fn block(&self, r: VerifyBlockRequest) -> Result<VerifyBlockReply, Status> {
        use batchcrypt::bitcoin::validate::PrevMedianTime;
        let network: batchcrypt::bitcoin::validate::Network = Network::try_from(r.network)
            .map_err(|_| Status::invalid_argument(format!("no network {}", r.network)))?
            .into();
        let engine = self.engine.clone();
        tokio::task::spawn_blocking(move || {
            let block = batchcrypt::bitcoin::parse_block(&r.block)
                .map_err(|e| Status::invalid_argument(format!("block: {e}")))?;
            let spent: Vec<_> = r.spent.into_iter().map(Into::into).collect();
            let ctx = batchcrypt::bitcoin::block::BlockContext {
                network,
                height: (r.height > 0).then_some(r.height),
                times: &PrevMedianTime(r.median_time_past.map(i64::from)),
                check_pow: !r.skip_proof_of_work,
            };
            let report = batchcrypt::bitcoin::block::verify_block(&engine, &block, &spent, &ctx)
                .map_err(|e| Status::invalid_argument(e.to_string()))?;
            let us = |d: std::time::Duration| d.as_micros() as u64;
            let backend = |b: Option<batchcrypt::Backend>| b.map(|b| b.to_string());
            let scripts = report.scripts.as_ref();
            Ok(VerifyBlockReply {
                valid: report.verdict.is_ok(),
                reason: report
                    .verdict
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default(),
                hash: report.hash,
                height: report.height,
                inputs: report.inputs as u64,
                unchecked: report.unchecked.iter().map(|u| u.to_string()).collect(),
                transactions: report.txs as u64,
                weight: report.weight,
                sigop_cost: report.sigop_cost,
                fees: report.fees,
                rules: report.flags.names(),
                structure_us: us(report.structure_time),
                inputs_us: us(report.inputs_time),
                scripts_us: us(report.scripts_time),
                ecdsa_checks: scripts.map_or(0, |s| s.ecdsa_checks as u64),
                ecdsa_backend: scripts
                    .and_then(|s| backend(s.ecdsa_backend))
                    .unwrap_or_default(),
                schnorr_checks: scripts.map_or(0, |s| s.schnorr_checks as u64),
                schnorr_backend: scripts
                    .and_then(|s| backend(s.schnorr_backend))
                    .unwrap_or_default(),
            })
        })
        .await
        .map_err(|e| Status::internal(e.to_string()))?
    }

    async fn register(&self, r: RegisterCircuitRequest) -> Result<RegisterCircuitReply, Status> {
        if r.zkey.is_empty() && !r.zkey_path.is_empty() && !self.local {
            return Err(Status::permission_denied(
                "server-side paths are accepted on a loopback listener only: send the key's bytes",
            ));
        }
        let prover = self.prover.clone();
        let c = tokio::task::spawn_blocking(move || {
            let path = PathBuf::from(&r.zkey_path);
            let bytes = (!r.zkey.is_empty()).then_some(&r.zkey[..]);
            let path = (!r.zkey_path.is_empty()).then_some(path.as_path());
            prover.register(bytes, path, &r.name)
        })
        .await
        .map_err(|e| Status::internal(e.to_string()))?
        .map_err(Status::invalid_argument)?;
        Ok(RegisterCircuitReply {
            circuit_id: c.id,
            constraints_domain: c.domain,
            signals: c.signals,
            key_bytes: c.key_bytes,
            proof_bytes: c.proof_bytes,
            curve: c.curve.snarkjs().to_string(),
        })
    }

    fn job(&self, id: &str) -> Result<crate::store::JobRow, Status> {
        self.prover
            .store
            .job(id)
            .map_err(Status::internal)?
            .ok_or_else(|| Status::not_found(format!("no job {id}")))
    }

    async fn wait(&self, r: WaitProofRequest) -> Result<ProofReply, Status> {
        self.job(&r.job_id)?;
        // Dropped with the call when the client goes away before the job ends.
        struct Abandon<'a>(&'a Prover, &'a str, bool);
        impl Drop for Abandon<'_> {
            fn drop(&mut self) {
                if self.2 {
                    let _ = self.0.cancel(self.1, "its client went away");
                }
            }
        }
        let mut guard = Abandon(&self.prover, &r.job_id, r.cancel_if_abandoned);
        let job = self
            .prover
            .wait(&r.job_id)
            .await
            .map_err(Status::unavailable)?;
        guard.2 = false;
        let job = job.ok_or_else(|| Status::not_found(format!("no job {}", r.job_id)))?;
        let result = self
            .prover
            .store
            .result(&job.id)
            .map_err(Status::internal)?;
        Ok(ProofReply {
            proof_json: result.as_ref().map(|r| r.proof.clone()).unwrap_or_default(),
            public_json: result.map(|r| r.public).unwrap_or_default(),
            job: Some(job_message(&job)),
        })
    }
}

fn format(f: i32) -> Result<SigFormat, Status> {
    match SignatureFormat::try_from(f) {
        Ok(SignatureFormat::Der) => Ok(SigFormat::Der),
        Ok(SignatureFormat::Compact) => Ok(SigFormat::Compact),
        Err(_) => Err(Status::invalid_argument(format!("no signature format {f}"))),
    }
}

fn curve(c: i32) -> Result<EcdsaCurve, Status> {
    EcdsaCurve::try_from(c).map_err(|_| Status::invalid_argument(format!("no ECDSA curve {c}")))
}

fn scalar(k: &[u8]) -> Result<[u8; 32], Status> {
    k.try_into()
        .map_err(|_| Status::invalid_argument("the scalar must be 32 bytes"))
}

fn verify_reply(r: crate::batcher::Reply<ops::Verdict>) -> VerifyReply {
    VerifyReply {
        valid: r.outs.iter().map(|v| v.is_ok()).collect(),
        failures: r
            .outs
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                v.as_ref().err().map(|reason| Failure {
                    index: i as u32,
                    reason: reason.clone(),
                })
            })
            .collect(),
        backend: r.backend,
        batch_items: r.batch_items as u64,
    }
}

fn points_reply(r: crate::batcher::Reply<Option<[u8; 33]>>) -> PointsReply {
    PointsReply {
        points: r
            .outs
            .iter()
            .map(|p| p.map_or_else(Bytes::new, |p| Bytes::copy_from_slice(&p)))
            .collect(),
        backend: r.backend,
        batch_items: r.batch_items as u64,
    }
}

fn job_message(j: &crate::store::JobRow) -> Job {
    Job {
        job_id: j.id.clone(),
        circuit_id: j.circuit.clone(),
        state: j.state as i32,
        error: j.error.clone(),
        priority: j.priority,
        attempts: j.attempts,
    }
}

#[tonic::async_trait]
impl BatchCrypt for Service {
    async fn verify_ecdsa(
        &self,
        r: Request<VerifyEcdsaRequest>,
    ) -> Result<Response<VerifyReply>, Status> {
        let out = self.ecdsa(r.into_inner()).await;
        self.count(Op::VerifyEcdsa, out)
    }

    async fn verify_schnorr(
        &self,
        r: Request<VerifySchnorrRequest>,
    ) -> Result<Response<VerifyReply>, Status> {
        let out = self.schnorr(r.into_inner()).await;
        self.count(Op::VerifySchnorr, out)
    }

    async fn verify_sm2(
        &self,
        r: Request<VerifySm2Request>,
    ) -> Result<Response<VerifyReply>, Status> {
        let out = self.sm2_verify(r.into_inner()).await;
        self.count(Op::VerifySm2, out)
    }

    async fn hash(&self, r: Request<HashRequest>) -> Result<Response<HashReply>, Status> {
        let out = self.hashes(r.into_inner()).await;
        self.count(Op::Hash, out)
    }

    type VerifyEcdsaStreamStream = ReplyStream<VerifyReply>;

    async fn verify_ecdsa_stream(
        &self,
        _: Request<tonic::Streaming<VerifyEcdsaRequest>>,
    ) -> Result<Response<Self::VerifyEcdsaStreamStream>, Status> {
        answered_in_front()
    }

    type VerifySchnorrStreamStream = ReplyStream<VerifyReply>;

    async fn verify_schnorr_stream(
        &self,
        _: Request<tonic::Streaming<VerifySchnorrRequest>>,
    ) -> Result<Response<Self::VerifySchnorrStreamStream>, Status> {
        answered_in_front()
    }

    type VerifySm2StreamStream = ReplyStream<VerifyReply>;

    async fn verify_sm2_stream(
        &self,
        _: Request<tonic::Streaming<VerifySm2Request>>,
    ) -> Result<Response<Self::VerifySm2StreamStream>, Status> {
        answered_in_front()
    }

    type HashStreamStream = ReplyStream<HashReply>;

    async fn hash_stream(
        &self,
        _: Request<tonic::Streaming<HashRequest>>,
    ) -> Result<Response<Self::HashStreamStream>, Status> {
        answered_in_front()
    }

    async fn sm2_hash_to_curve_mul(
        &self,
        r: Request<Sm2HashToCurveMulRequest>,
    ) -> Result<Response<PointsReply>, Status> {
        let out = self.hash_to_curve_mul(r.into_inner()).await;
        self.count(Op::Sm2HashToCurveMul, out)
    }

    async fn sm2_mul_compressed(
        &self,
        r: Request<Sm2MulCompressedRequest>,
    ) -> Result<Response<PointsReply>, Status> {
        let out = self.mul_compressed(r.into_inner()).await;
        self.count(Op::Sm2MulCompressed, out)
    }

    type AesStream = tokio_stream::wrappers::ReceiverStream<Result<AesReply, Status>>;

    async fn aes(
        &self,
        r: Request<tonic::Streaming<AesRequest>>,
    ) -> Result<Response<Self::AesStream>, Status> {
        let out = crate::aes::serve(self.engine.clone(), r.into_inner()).await;
        self.count(Op::Aes, out)
    }

    async fn verify_transactions(
        &self,
        r: Request<VerifyTransactionsRequest>,
    ) -> Result<Response<VerifyTransactionsReply>, Status> {
        let out = self.transactions(r.into_inner()).await;
        self.count(Op::VerifyTransactions, out)
    }

    async fn verify_block(
        &self,
        r: Request<VerifyBlockRequest>,
    ) -> Result<Response<VerifyBlockReply>, Status> {
        let out = self.block(r.into_inner()).await;
        self.count(Op::VerifyBlock, out)
    }

    async fn register_circuit(
        &self,
        r: Request<RegisterCircuitRequest>,
    ) -> Result<Response<RegisterCircuitReply>, Status> {
        let out = self.register(r.into_inner()).await;
        self.count(Op::RegisterCircuit, out)
    }

    async fn submit_proof(&self, r: Request<SubmitProofRequest>) -> Result<Response<Job>, Status> {
        let r = r.into_inner();
        let prover = self.prover.clone();
        let out = tokio::task::spawn_blocking(move || {
            prover.submit(
                &r.circuit_id,
                &r.witness,
                &r.request_id,
                r.priority,
                r.deadline_unix_ms,
            )
        })
        .await
        .map_err(|e| Status::internal(e.to_string()))
        .and_then(|r| r)
        .map(|j| job_message(&j));
        self.count(Op::SubmitProof, out)
    }

    async fn wait_proof(
        &self,
        r: Request<WaitProofRequest>,
    ) -> Result<Response<ProofReply>, Status> {
        let out = self.wait(r.into_inner()).await;
        self.count(Op::WaitProof, out)
    }

    async fn get_job(&self, r: Request<JobRef>) -> Result<Response<Job>, Status> {
        let out = self.job(&r.into_inner().job_id).map(|j| job_message(&j));
        self.count(Op::GetJob, out)
    }

    async fn cancel_job(&self, r: Request<JobRef>) -> Result<Response<Job>, Status> {
        let id = r.into_inner().job_id;
        let out = self
            .job(&id)
            .and_then(|_| {
                self.prover
                    .cancel(&id, "cancelled by a client")
                    .map_err(Status::internal)
            })
            .and_then(|j| j.ok_or_else(|| Status::not_found(format!("no job {id}"))))
            .map(|j| job_message(&j));
        self.count(Op::CancelJob, out)
    }

    async fn job_trace(&self, r: Request<JobRef>) -> Result<Response<TraceReply>, Status> {
        let id = r.into_inner().job_id;
        let out = self.job(&id).and_then(|j| {
            match self.prover.store.result(&id).map_err(Status::internal)? {
                Some(res) => Ok(TraceReply {
                    chrome_trace_json: res.trace,
                }),
                None => Err(Status::failed_precondition(format!(
                    "job {id} is {}: a trace exists once it is done",
                    j.state.as_str_name().to_lowercase()
                ))),
            }
        });
        self.count(Op::JobTrace, out)
    }

    type EchoStream = ReplyStream<EchoReply>;

    async fn echo(
        &self,
        _: Request<tonic::Streaming<EchoRequest>>,
    ) -> Result<Response<Self::EchoStream>, Status> {
        answered_in_front()
    }

    async fn register_shared_memory(
        &self,
        r: Request<RegisterSharedMemoryRequest>,
    ) -> Result<Response<SharedMemoryRegion>, Status> {
        let out = self.shared().and_then(|s| s.register(&r.into_inner().name));
        self.count(Op::RegisterSharedMemory, out)
    }

    async fn unregister_shared_memory(
        &self,
        r: Request<SharedMemoryRegion>,
    ) -> Result<Response<SharedMemoryRegion>, Status> {
        let out = self.shared().and_then(|s| s.unregister(r.into_inner().id));
        self.count(Op::UnregisterSharedMemory, out)
    }
}

impl Service {
    /// One request of a batched operation as its message's bytes (or what kept them from
    /// arriving, counted as the request's outcome), from a client at `ip` (None: the Unix
    /// sockets' clients, who share the rate limit of the address-less): the frames socket's
    /// requests and the gRPC request streams' messages ([`crate::grpc_streams`]).
    pub(crate) fn framed(
        self: Arc<Self>,
        kind: crate::frames::Kind,
        body: Result<Bytes, Status>,
        ip: Option<std::net::IpAddr>,
    ) -> futures_util::future::BoxFuture<'static, Result<crate::frames::Reply, Status>> {
        use crate::frames::{decode, Kind, Reply};
        use futures_util::FutureExt;
        let op = kind.op();
        async move {
            let s = &self;
            let run = |body| async move {
                match kind {
                    Kind::VerifyEcdsa => s.ecdsa(decode(body)?).await.map(Reply::VerifyEcdsa),
                    Kind::VerifySchnorr => s.schnorr(decode(body)?).await.map(Reply::VerifySchnorr),
                    Kind::VerifySm2 => s.sm2_verify(decode(body)?).await.map(Reply::VerifySm2),
                    Kind::Hash => s.hashes(decode(body)?).await.map(Reply::Hash),
                    Kind::Sm2HashToCurveMul => s
                        .hash_to_curve_mul(decode(body)?)
                        .await
                        .map(Reply::Sm2HashToCurveMul),
                    Kind::Sm2MulCompressed => s
                        .mul_compressed(decode(body)?)
                        .await
                        .map(Reply::Sm2MulCompressed),
                    Kind::Echo => echo(decode(body)?).map(Reply::Echo),
                }
            };
            let handled = body.and_then(|body| self.guard.admit(ip).map(|()| run(body)));
            self.answer(op, handled).await
        }
        .boxed()
    }

    /// The histogram of `stage` for `kind`'s operation, looked up once by a caller that
    /// observes it per request.
    pub(crate) fn stage_histogram(
        &self,
        kind: crate::frames::Kind,
        stage: &'static str,
    ) -> prometheus_client::metrics::histogram::Histogram {
        self.metrics.stage_histogram(kind.op().name(), stage)
    }

    /// Whether the batches of `kind`'s operation are backlogged ([`Batcher::backlogged`]).
    pub(crate) fn backlogged(&self, kind: crate::frames::Kind) -> bool {
        use crate::frames::Kind;
        match kind {
            Kind::VerifyEcdsa => self.ecdsa.backlogged(),
            Kind::VerifySchnorr => self.schnorr.backlogged(),
            Kind::VerifySm2 => self.sm2.backlogged(),
            Kind::Hash => self.hash.backlogged(),
            Kind::Sm2HashToCurveMul => self.hash_mul.backlogged(),
            Kind::Sm2MulCompressed => self.mul.backlogged(),
            Kind::Echo => false,
        }
    }

    /// Resolves once the server begins to shut down (never in process).
    pub(crate) fn stopping(&self) -> futures_util::future::BoxFuture<'static, ()> {
        use futures_util::FutureExt;
        let stopping = self.stopping.clone();
        async move {
            match stopping {
                Some(rx) => stopped(rx).await,
                None => std::future::pending().await,
            }
        }
        .boxed()
    }

    pub(crate) fn max_message_bytes(&self) -> usize {
        self.max_message_bytes
    }
}

impl crate::frames::Handler for Service {
    fn hello(&self, token: &[u8]) -> Result<(), Status> {
        let given = (!token.is_empty()).then_some(token);
        self.guard.token(given).map_err(|()| {
            Status::unauthenticated("missing or wrong bearer token (the hello frame's body)")
        })
    }

    fn handle(
        self: Arc<Self>,
        kind: crate::frames::Kind,
        body: Bytes,
    ) -> futures_util::future::BoxFuture<'static, Result<crate::frames::Reply, Status>> {
        self.framed(kind, Ok(body), None)
    }
}

/// An echo's reply: slices of one zeroed buffer, nothing computed or copied.
fn echo(q: EchoRequest) -> Result<EchoReply, Status> {
    static ZEROS: [u8; ECHO_MAX] = [0; ECHO_MAX];
    let n = q.reply_bytes as usize;
    if n > ECHO_MAX {
        return Err(Status::invalid_argument(format!(
            "reply_bytes {n} is over the echo's limit of {ECHO_MAX}"
        )));
    }
    Ok(EchoReply {
        payload: Bytes::from_static(&ZEROS[..n]),
    })
}

/// The largest echo reply.
const ECHO_MAX: usize = 1 << 20;

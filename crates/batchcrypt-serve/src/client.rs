//! The Rust client of a running `batchcrypt serve`: typed calls over the generated gRPC client
//! (available whole through [`Client::raw`]), the batched ones over the server's frames socket
//! instead where [`Options::frames`] names it.

use crate::frames::{Framed, FramesClient};
use crate::io::{ReadBuffered, WriteGathered};
use crate::proto::batch_crypt_client::BatchCryptClient;
use crate::proto::*;
use batchcrypt::secp256k1::SigFormat;
use batchcrypt::sm2::Compressed;
use hyper_util::rt::TokioIo;
use std::time::Duration;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Uri};
use tonic::Status;

/// Adds the bearer token to every call.
#[derive(Clone)]
pub struct Auth(Option<MetadataValue<Ascii>>);

impl tonic::service::Interceptor for Auth {
    fn call(&mut self, mut r: tonic::Request<()>) -> Result<tonic::Request<()>, Status> {
        if let Some(t) = &self.0 {
            r.metadata_mut().insert("authorization", t.clone());
        }
        Ok(r)
    }
}

pub type Raw = BatchCryptClient<InterceptedService<Channel, Auth>>;

/// How to reach a server.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub token: Option<String>,
    /// PEM certificate of the authority that signed the server's (TLS); None: plain HTTP/2.
    pub tls_ca: Option<Vec<u8>>,
    /// Largest message either way.
    pub max_message_bytes: Option<usize>,
    /// The server's frames socket (`batchcrypt serve --frames-socket PATH`, on this machine):
    /// the batched calls (verification, hashing) go over it, everything else over gRPC.
    pub frames: Option<std::path::PathBuf>,
}

/// How a proof job is queued: its priority, and when it must have started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobOptions {
    /// Higher runs first; equal priorities run in submission order.
    pub priority: i32,
    /// A job not started by then ends as expired (one already running is not stopped). Fixed
    /// when set, so a proof resubmitted across a server's restart keeps it.
    pub deadline: Option<std::time::SystemTime>,
}

impl JobOptions {
    pub fn priority(priority: i32) -> Self {
        JobOptions {
            priority,
            deadline: None,
        }
    }

    /// Priority `priority`, due to start within `within` from now where one is given.
    pub fn queued(priority: i32, within: Option<Duration>) -> Self {
        let job = JobOptions::priority(priority);
        match within {
            Some(time) => job.within(time),
            None => job,
        }
    }

    /// The same, due to start within `time` from now (a time too far to represent is none).
    pub fn within(self, time: Duration) -> Self {
        JobOptions {
            deadline: std::time::SystemTime::now().checked_add(time),
            ..self
        }
    }

    /// The deadline as the request carries it: Unix milliseconds, 0 for none (a time at or
    /// before 1970 is one already passed).
    fn deadline_unix_ms(&self) -> i64 {
        self.deadline.map_or(0, |t| {
            t.duration_since(std::time::UNIX_EPOCH).map_or(1, |d| {
                i64::try_from(d.as_millis()).unwrap_or(i64::MAX).max(1)
            })
        })
    }
}

#[derive(Clone)]
pub struct Client {
    raw: Raw,
    channel: Channel,
    frames: Option<FramesClient>,
}

/// A verdict: Ok, or why the item is not valid.
pub type Verdict = Result<(), String>;

/// The reply's verdicts in item order.
pub fn verdicts(r: VerifyReply) -> Vec<Verdict> {
    let mut v: Vec<Verdict> = r
        .valid
        .iter()
        .map(|&ok| if ok { Ok(()) } else { Err(String::new()) })
        .collect();
    for f in r.failures {
        if let Some(slot) = v.get_mut(f.index as usize) {
            *slot = Err(f.reason);
        }
    }
    v
}

/// Items packed into one column (the fast form): a width where all have one nonzero length,
/// else their ends.
pub fn column<T: AsRef<[u8]>>(items: &[T]) -> Column {
    let total = items.iter().map(|i| i.as_ref().len()).sum();
    let mut data = Vec::with_capacity(total);
    for i in items {
        data.extend_from_slice(i.as_ref());
    }
    let width = items.first().map_or(0, |i| i.as_ref().len());
    if width > 0 && items.iter().all(|i| i.as_ref().len() == width) {
        return Column {
            data: data.into(),
            width: width as u32,
            ends: Vec::new(),
            shared: None,
        };
    }
    let mut end = 0u32;
    Column {
        data: data.into(),
        width: 0,
        ends: items
            .iter()
            .map(|i| {
                end += i.as_ref().len() as u32;
                end
            })
            .collect(),
        shared: None,
    }
}

/// An ECDSA request as [`Client::verify_ecdsa`] sends it (packed), for streams.
pub fn ecdsa_request<S: AsRef<[u8]>, K: AsRef<[u8]>>(
    curve: EcdsaCurve,
    hashes: &[[u8; 32]],
    sigs: &[S],
    keys: &[K],
    sig_format: SigFormat,
    require_low_s: bool,
) -> VerifyEcdsaRequest {
    let (hashes, sigs, keys) = (column(hashes), column(sigs), column(keys));
    ecdsa_columns(curve, hashes, sigs, keys, sig_format, require_low_s)
}

/// An ECDSA request from columns packed already (the message hashes 32 bytes each).
pub fn ecdsa_columns(
    curve: EcdsaCurve,
    hashes: Column,
    sigs: Column,
    keys: Column,
    sig_format: SigFormat,
    require_low_s: bool,
) -> VerifyEcdsaRequest {
    VerifyEcdsaRequest {
        hashes_packed: Some(hashes),
        signatures_packed: Some(sigs),
        public_keys_packed: Some(keys),
        format: format(sig_format),
        require_low_s,
        curve: curve as i32,
        ..Default::default()
    }
}

/// A BIP340 request as [`Client::verify_schnorr`] sends it (packed), for streams.
pub fn schnorr_request<M: AsRef<[u8]>, S: AsRef<[u8]>, K: AsRef<[u8]>>(
    msgs: &[M],
    sigs: &[S],
    keys: &[K],
) -> VerifySchnorrRequest {
    schnorr_columns(column(msgs), column(sigs), column(keys))
}

/// A BIP340 request from columns packed already.
pub fn schnorr_columns(msgs: Column, sigs: Column, keys: Column) -> VerifySchnorrRequest {
    VerifySchnorrRequest {
        messages_packed: Some(msgs),
        signatures_packed: Some(sigs),
        public_keys_packed: Some(keys),
        ..Default::default()
    }
}

/// An SM2 request as [`Client::verify_sm2`] sends it (packed), for streams.
pub fn sm2_request<M: AsRef<[u8]>, S: AsRef<[u8]>, K: AsRef<[u8]>>(
    msgs: &[M],
    sigs: &[S],
    keys: &[K],
    id: &[u8],
    sig_format: SigFormat,
) -> VerifySm2Request {
    VerifySm2Request {
        messages_packed: Some(column(msgs)),
        signatures_packed: Some(column(sigs)),
        public_keys_packed: Some(column(keys)),
        format: format(sig_format),
        id: Some(bytes::Bytes::copy_from_slice(id)),
        ..Default::default()
    }
}

/// A batched request the client sends many of at once ([`Client::each_reply`]): over gRPC as a
/// stream of requests (the one this opens), or over the frames connection.
pub trait Streamable: Framed + Send + 'static {
    fn open(
        c: &mut Client,
    ) -> impl std::future::Future<Output = Result<Stream<Self, Self::Reply>, Status>> + Send;
}

macro_rules! streamable {
    ($($request:ident => $open:ident),* $(,)?) => {$(
        impl Streamable for $request {
            async fn open(c: &mut Client) -> Result<Stream<Self, Self::Reply>, Status> {
                c.$open().await
            }
        }
    )*};
}

streamable! {
    VerifyEcdsaRequest => verify_ecdsa_stream,
    VerifySchnorrRequest => verify_schnorr_stream,
    VerifySm2Request => verify_sm2_stream,
    HashRequest => hash_stream,
}

fn format(f: SigFormat) -> i32 {
    match f {
        SigFormat::Der => SignatureFormat::Der as i32,
        SigFormat::Compact => SignatureFormat::Compact as i32,
    }
}

impl Client {
    /// Connects to `address` (`host:port`, or a URI).
    pub async fn connect(address: &str) -> Result<Client, String> {
        Self::connect_with(address, Options::default()).await
    }

    /// `address` is `host:port`, a URI, or `unix:PATH` for a server's Unix socket
    /// (`batchcrypt serve --unix-socket PATH`: a client on the same machine without TCP).
    pub async fn connect_with(address: &str, options: Options) -> Result<Client, String> {
        let tls = options.tls_ca.is_some();
        let unix = address.strip_prefix("unix:").map(std::path::PathBuf::from);
        let uri = if unix.is_some() {
            // Names no host: the connector below opens the socket.
            "http://localhost".to_string()
        } else if address.contains("://") {
            address.to_string()
        } else {
            format!("{}://{address}", if tls { "https" } else { "http" })
        };
        let mut endpoint = Endpoint::from_shared(uri.clone())
            .map_err(|e| format!("{uri}: {e}"))?
            .connect_timeout(Duration::from_secs(10))
            .initial_connection_window_size(crate::H2_CONNECTION_WINDOW)
            .initial_stream_window_size(crate::H2_STREAM_WINDOW);
        if let Some(ca) = options.tls_ca {
            if unix.is_some() {
                return Err("a Unix socket is served without TLS: drop the CA".into());
            }
            endpoint = endpoint
                .tls_config(ClientTlsConfig::new().ca_certificate(Certificate::from_pem(ca)))
                .map_err(|e| format!("TLS: {e}"))?;
        }
        // Both transports read replies through a buffer (`io::ReadBuffered`): a reply of a few
        // hundred digests is one read, not three; and gather their writes (`io::WriteGathered`):
        // the requests of many streams sharing the connection go out in one call.
        let connected = match unix {
            Some(path) => {
                endpoint
                    .connect_with_connector(tower::service_fn(move |_: Uri| {
                        let path = path.clone();
                        async move {
                            let s = tokio::net::UnixStream::connect(path).await?;
                            Ok::<_, std::io::Error>(TokioIo::new(ReadBuffered::new(
                                WriteGathered::new(s),
                            )))
                        }
                    }))
                    .await
            }
            None => {
                // hyper's connector (name resolution, both address families), its stream handed
                // over to the buffer.
                let mut tcp = hyper_util::client::legacy::connect::HttpConnector::new();
                // No Nagle: a request goes out at once, not after the server's ACK.
                tcp.set_nodelay(true);
                // The scheme is https where TLS (layered above by tonic) is asked for.
                tcp.enforce_http(false);
                endpoint
                    .connect_with_connector(tower::ServiceExt::map_response(
                        tcp,
                        |io: TokioIo<tokio::net::TcpStream>| {
                            TokioIo::new(ReadBuffered::new(WriteGathered::new(io.into_inner())))
                        },
                    ))
                    .await
            }
        };
        let channel = connected.map_err(|e| {
            format!("cannot connect to {address}: {e} (is `batchcrypt serve` running there?)")
        })?;
        let token = match &options.token {
            Some(t) => Some(
                format!("Bearer {t}")
                    .parse()
                    .map_err(|_| "the token must be printable ASCII".to_string())?,
            ),
            None => None,
        };
        let max = options.max_message_bytes.unwrap_or(64 << 20);
        let raw = BatchCryptClient::with_interceptor(channel.clone(), Auth(token))
            .max_decoding_message_size(max)
            .max_encoding_message_size(max);
        let frames = match &options.frames {
            Some(path) => Some(FramesClient::connect(path, options.token.as_deref()).await?),
            None => None,
        };
        Ok(Client {
            raw,
            channel,
            frames,
        })
    }

    /// A batched operation's request: over the frames connection where the client has one,
    /// else as the gRPC call `grpc` makes.
    async fn batched<Q, F, Fut>(&self, request: Q, grpc: F) -> Result<Q::Reply, Status>
    where
        Q: Framed,
        F: FnOnce(Raw, Q) -> Fut,
        Fut: std::future::Future<Output = Result<tonic::Response<Q::Reply>, Status>>,
    {
        match &self.frames {
            Some(f) => f.call(&request).await,
            None => Ok(grpc(self.raw.clone(), request).await?.into_inner()),
        }
    }

    /// The generated client, for calls without a typed wrapper here.
    pub fn raw(&mut self) -> &mut Raw {
        &mut self.raw
    }

    /// Whether the server reports itself serving (the standard health check).
    pub async fn ready(&self) -> Result<bool, Status> {
        use tonic_health::pb::{health_client::HealthClient, HealthCheckRequest};
        let r = HealthClient::new(self.channel.clone())
            .check(HealthCheckRequest {
                service: "batchcrypt.v1.BatchCrypt".into(),
            })
            .await?;
        Ok(r.into_inner().status
            == tonic_health::pb::health_check_response::ServingStatus::Serving as i32)
    }

    /// ECDSA over 32-byte hashes on `curve` (sent packed).
    pub async fn verify_ecdsa<S: AsRef<[u8]>, K: AsRef<[u8]>>(
        &mut self,
        curve: EcdsaCurve,
        hashes: &[[u8; 32]],
        sigs: &[S],
        keys: &[K],
        sig_format: SigFormat,
        require_low_s: bool,
    ) -> Result<Vec<Verdict>, Status> {
        self.verify_ecdsa_request(ecdsa_request(
            curve,
            hashes,
            sigs,
            keys,
            sig_format,
            require_low_s,
        ))
        .await
    }

    /// One ECDSA request built already ([`ecdsa_request`], [`ecdsa_columns`]) as a call: per
    /// item its verdict.
    pub async fn verify_ecdsa_request(
        &mut self,
        request: VerifyEcdsaRequest,
    ) -> Result<Vec<Verdict>, Status> {
        let r = self.batched(request, |mut c, q| async move { c.verify_ecdsa(q).await });
        Ok(verdicts(r.await?))
    }

    /// Many ECDSA requests ([`ecdsa_request`]) over one stream (or the frames connection), sent
    /// while the replies come back ([`Client::each_reply`]): per request its verdicts, in order.
    pub async fn verify_ecdsa_many(
        &mut self,
        requests: Vec<VerifyEcdsaRequest>,
    ) -> Result<Vec<Vec<Verdict>>, Status> {
        self.all(requests, verdicts).await
    }

    /// Many BIP340 requests ([`schnorr_request`], [`schnorr_columns`]) over one stream, as
    /// [`Client::verify_ecdsa_many`]: per request its verdicts, in order.
    pub async fn verify_schnorr_many(
        &mut self,
        requests: Vec<VerifySchnorrRequest>,
    ) -> Result<Vec<Vec<Verdict>>, Status> {
        self.all(requests, verdicts).await
    }

    /// Many hash requests over one stream, as [`Client::verify_ecdsa_many`]: per request the
    /// digests packed (32 bytes each, back to back), in order.
    pub async fn hash_many(
        &mut self,
        algorithm: HashAlgorithm,
        columns: Vec<Column>,
    ) -> Result<Vec<Vec<u8>>, Status> {
        let requests = columns
            .into_iter()
            .map(|c| HashRequest {
                algorithm: algorithm as i32,
                messages: Vec::new(),
                messages_packed: Some(c),
                digests_to: None,
            })
            .collect();
        self.all(requests, |r| r.packed_digests.to_vec()).await
    }

    /// A stream of ECDSA requests on one call ([`Client::verify_ecdsa`]'s requests, built as
    /// it builds them or through [`column`]): requests go into the sender, replies come back in
    /// their order. For a client with many small requests: each costs a message each way
    /// instead of a call.
    pub async fn verify_ecdsa_stream(
        &mut self,
    ) -> Result<Stream<VerifyEcdsaRequest, VerifyReply>, Status> {
        Stream::open(|requests| self.raw.verify_ecdsa_stream(requests)).await
    }

    /// A stream of BIP340 requests ([`schnorr_request`]) on one call, as
    /// [`Client::verify_ecdsa_stream`].
    pub async fn verify_schnorr_stream(
        &mut self,
    ) -> Result<Stream<VerifySchnorrRequest, VerifyReply>, Status> {
        Stream::open(|requests| self.raw.verify_schnorr_stream(requests)).await
    }

    /// A stream of SM2 requests ([`sm2_request`]) on one call, as
    /// [`Client::verify_ecdsa_stream`].
    pub async fn verify_sm2_stream(
        &mut self,
    ) -> Result<Stream<VerifySm2Request, VerifyReply>, Status> {
        Stream::open(|requests| self.raw.verify_sm2_stream(requests)).await
    }

    /// A stream of hash requests on one call, as [`Client::verify_ecdsa_stream`].
    pub async fn hash_stream(&mut self) -> Result<Stream<HashRequest, HashReply>, Status> {
        Stream::open(|requests| self.raw.hash_stream(requests)).await
    }

    /// A stream of echoes ([`EchoRequest`]): each reply is `reply_bytes` zero bytes, nothing
    /// computed, so its round trip is the link's and the service's own per-message cost.
    pub async fn echo_stream(&mut self) -> Result<Stream<EchoRequest, EchoReply>, Status> {
        Stream::open(|requests| self.raw.echo(requests)).await
    }

    /// BIP340 (sent packed); signatures and keys of the wrong length get verdicts of their own.
    pub async fn verify_schnorr<M: AsRef<[u8]>, S: AsRef<[u8]>, K: AsRef<[u8]>>(
        &mut self,
        msgs: &[M],
        sigs: &[S],
        keys: &[K],
    ) -> Result<Vec<Verdict>, Status> {
        self.verify_schnorr_request(schnorr_request(msgs, sigs, keys))
            .await
    }

    /// One BIP340 request built already ([`schnorr_request`], [`schnorr_columns`]) as a call:
    /// per item its verdict.
    pub async fn verify_schnorr_request(
        &mut self,
        request: VerifySchnorrRequest,
    ) -> Result<Vec<Verdict>, Status> {
        let r = self.batched(request, |mut c, q| async move { c.verify_schnorr(q).await });
        Ok(verdicts(r.await?))
    }

    /// SM2 with the signer's identifier `id` (sent packed).
    pub async fn verify_sm2<M: AsRef<[u8]>, S: AsRef<[u8]>, K: AsRef<[u8]>>(
        &mut self,
        msgs: &[M],
        sigs: &[S],
        keys: &[K],
        id: &[u8],
        sig_format: SigFormat,
    ) -> Result<Vec<Verdict>, Status> {
        self.verify_sm2_request(sm2_request(msgs, sigs, keys, id, sig_format))
            .await
    }

    /// One SM2 request built already ([`sm2_request`]) as a call: per item its verdict.
    pub async fn verify_sm2_request(
        &mut self,
        request: VerifySm2Request,
    ) -> Result<Vec<Verdict>, Status> {
        let r = self.batched(request, |mut c, q| async move { c.verify_sm2(q).await });
        Ok(verdicts(r.await?))
    }

    /// Sends `requests`, handing each reply to `f` in the requests' order as they come (the
    /// first failure ends it): over one stream of requests, or over the frames connection with
    /// as many in flight as a stream keeps queued.
    pub async fn each_reply<Q: Streamable>(
        &mut self,
        requests: impl IntoIterator<Item = Q>,
        mut f: impl FnMut(Q::Reply),
    ) -> Result<(), Status> {
        if let Some(frames) = &self.frames {
            use futures_util::StreamExt;
            let mut replies = futures_util::stream::iter(requests)
                .map(|q| async move { frames.call(&q).await })
                .buffered(STREAM_QUEUE);
            while let Some(r) = replies.next().await {
                f(r?);
            }
            return Ok(());
        }
        Q::open(self).await?.each_reply(requests, f).await
    }

    /// Every reply of [`Client::each_reply`], each as `f` makes it, in the requests' order.
    async fn all<Q: Streamable, T>(
        &mut self,
        requests: Vec<Q>,
        f: impl Fn(Q::Reply) -> T,
    ) -> Result<Vec<T>, Status> {
        let mut out = Vec::with_capacity(requests.len());
        self.each_reply(requests, |r| out.push(f(r))).await?;
        Ok(out)
    }

    /// Digests of each message, sent one by one.
    pub async fn hash<M: AsRef<[u8]>>(
        &mut self,
        algorithm: HashAlgorithm,
        msgs: &[M],
    ) -> Result<Vec<[u8; 32]>, Status> {
        let request = HashRequest {
            algorithm: algorithm as i32,
            messages: msgs
                .iter()
                .map(|m| bytes::Bytes::copy_from_slice(m.as_ref()))
                .collect(),
            messages_packed: None,
            digests_to: None,
        };
        let r = self
            .batched(request, |mut c, q| async move { c.hash(q).await })
            .await?;
        r.digests
            .iter()
            .map(|d| d[..].try_into())
            .collect::<Result<_, _>>()
            .map_err(|_| Status::internal("a digest is not 32 bytes"))
    }

    /// Digests of messages sent packed (the fast form for many short messages): 32 bytes per
    /// message, back to back.
    pub async fn hash_packed<M: AsRef<[u8]>>(
        &mut self,
        algorithm: HashAlgorithm,
        msgs: &[M],
    ) -> Result<Vec<u8>, Status> {
        self.hash_column(algorithm, column(msgs)).await
    }

    /// Digests of the messages of a column already packed.
    pub async fn hash_column(
        &mut self,
        algorithm: HashAlgorithm,
        messages: Column,
    ) -> Result<Vec<u8>, Status> {
        let request = HashRequest {
            algorithm: algorithm as i32,
            messages: Vec::new(),
            messages_packed: Some(messages),
            digests_to: None,
        };
        let r = self.batched(request, |mut c, q| async move { c.hash(q).await });
        Ok(r.await?.packed_digests.to_vec())
    }

    /// Creates a shared-memory region of `size` bytes, the file `batchcrypt-<name>` in `dir` (the
    /// server's `--shared-memory` directory; [`crate::shared::DEFAULT_DIR`] unless it was given
    /// another), and registers it with the server, which must run on this machine. Requests then
    /// name spans of it ([`SharedMemory::span`]) in place of their bytes.
    pub async fn shared_memory(
        &mut self,
        dir: &std::path::Path,
        name: &str,
        size: u64,
    ) -> Result<SharedMemory, Status> {
        let name = format!("{}{name}", crate::shared::PREFIX);
        let path = dir.join(&name);
        let io = |e: std::io::Error| {
            Status::failed_precondition(format!("shared memory {}: {e}", path.display()))
        };
        let file = {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
                .map_err(io)?
        };
        // Removed again if registering fails.
        let mut region = SharedMemory {
            file,
            path: path.clone(),
            id: 0,
        };
        region.file.set_len(size).map_err(io)?;
        region.id = self
            .raw
            .register_shared_memory(RegisterSharedMemoryRequest { name })
            .await?
            .into_inner()
            .id;
        Ok(region)
    }

    /// Unregisters a region and removes its file.
    pub async fn release_shared_memory(&mut self, region: SharedMemory) -> Result<(), Status> {
        self.raw
            .unregister_shared_memory(SharedMemoryRegion {
                id: region.id,
                size: 0,
            })
            .await?;
        Ok(())
    }

    /// Digests of `width`-byte messages read from shared memory, written to shared memory (32
    /// bytes per message, back to back): nothing but the spans crosses the connection. Gives the
    /// size of the batch they ran in.
    pub async fn hash_shared(
        &mut self,
        algorithm: HashAlgorithm,
        messages: SharedSpan,
        width: u32,
        digests: SharedSpan,
    ) -> Result<u64, Status> {
        let request = shared_hash_request(algorithm, messages, width, digests);
        let r = self.batched(request, |mut c, q| async move { c.hash(q).await });
        Ok(r.await?.batch_items)
    }

    /// Registers a circuit by its .zkey's bytes.
    pub async fn register(
        &mut self,
        zkey: Vec<u8>,
        name: &str,
    ) -> Result<RegisterCircuitReply, Status> {
        Ok(self
            .raw
            .register_circuit(RegisterCircuitRequest {
                zkey: zkey.into(),
                zkey_path: String::new(),
                name: name.into(),
            })
            .await?
            .into_inner())
    }

    /// Queues a proof; `request_id` makes a resubmission find the same job.
    pub async fn submit(
        &mut self,
        circuit_id: &str,
        witness: Vec<u8>,
        request_id: &str,
        job: JobOptions,
    ) -> Result<Job, Status> {
        Ok(self
            .raw
            .submit_proof(SubmitProofRequest {
                circuit_id: circuit_id.into(),
                witness: witness.into(),
                request_id: request_id.into(),
                priority: job.priority,
                deadline_unix_ms: job.deadline_unix_ms(),
            })
            .await?
            .into_inner())
    }

    pub async fn wait(
        &mut self,
        job_id: &str,
        cancel_if_abandoned: bool,
    ) -> Result<ProofReply, Status> {
        Ok(self
            .raw
            .wait_proof(WaitProofRequest {
                job_id: job_id.into(),
                cancel_if_abandoned,
            })
            .await?
            .into_inner())
    }

    pub async fn job(&mut self, job_id: &str) -> Result<Job, Status> {
        Ok(self
            .raw
            .get_job(JobRef {
                job_id: job_id.into(),
            })
            .await?
            .into_inner())
    }

    /// AES over the service's `Aes` stream: `input` is read on a blocking thread and sent in
    /// messages of up to 1 MiB after `start`; each reply's bytes go to `output` in order. Gives
    /// the bytes read and the bytes written. GCM decryption hands over a chunk's plaintext only once its tag has
    /// checked, and a stream altered or cut short ends with DATA_LOSS after the chunks that did;
    /// a failure to read `input` or to write `output` ends the call with CANCELLED.
    pub async fn aes(
        &mut self,
        start: AesStart,
        mut input: impl std::io::Read + Send + 'static,
        mut output: impl FnMut(&[u8]) -> std::io::Result<()>,
    ) -> Result<(u64, u64), Status> {
        const PART: usize = 1 << 20;
        let message = |part| AesRequest { part: Some(part) };
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        tx.try_send(message(aes_request::Part::Start(start)))
            .expect("an empty channel takes a message");
        // Set before the sender drops: the server sees the input's end only after it is.
        let read_error = std::sync::Arc::new(std::sync::Mutex::new(None));
        let failed = read_error.clone();
        let read = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counted = read.clone();
        tokio::task::spawn_blocking(move || loop {
            use std::io::Read;
            let mut part = Vec::with_capacity(PART);
            let n = match input.by_ref().take(PART as u64).read_to_end(&mut part) {
                Ok(0) => return,
                Ok(n) => n,
                Err(e) => {
                    *failed.lock().unwrap() = Some(e);
                    return;
                }
            };
            counted.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
            let sent = tx.blocking_send(message(aes_request::Part::Data(part.into())));
            if sent.is_err() || n < PART {
                return;
            }
        });
        let mut replies = self
            .raw
            .aes(tokio_stream::wrappers::ReceiverStream::new(rx))
            .await?
            .into_inner();
        let mut written = 0u64;
        while let Some(r) = replies.message().await? {
            output(&r.data).map_err(|e| Status::cancelled(format!("writing the output: {e}")))?;
            written += r.data.len() as u64;
        }
        if let Some(e) = read_error.lock().unwrap().take() {
            return Err(Status::cancelled(format!("reading the input: {e}")));
        }
        Ok((read.load(std::sync::atomic::Ordering::Relaxed), written))
    }

    /// A PSI party's first step on the server: `key·H(m)` for each message (SM2's hash to the
    /// curve under `dst`), compressed; batched with other clients' under the same key.
    pub async fn sm2_hash_to_curve_mul(
        &mut self,
        key: &[u8; 32],
        messages: &[&[u8]],
        dst: &[u8],
    ) -> Result<Vec<Compressed>, Status> {
        let request = Sm2HashToCurveMulRequest {
            scalar: key.to_vec().into(),
            messages: messages
                .iter()
                .map(|m| bytes::Bytes::copy_from_slice(m))
                .collect(),
            dst: dst.to_vec().into(),
        };
        let reply = self.raw.sm2_hash_to_curve_mul(request).await?.into_inner();
        points(reply, messages.len())?
            .into_iter()
            .map(|p| p.ok_or_else(|| Status::internal("the server left a point out")))
            .collect()
    }

    /// A PSI party's second step on the server: `key·P` for each compressed point; None where
    /// `P` is not a point of the curve.
    pub async fn sm2_mul_compressed(
        &mut self,
        key: &[u8; 32],
        points: &[Compressed],
    ) -> Result<Vec<Option<Compressed>>, Status> {
        let request = Sm2MulCompressedRequest {
            scalar: key.to_vec().into(),
            points: points
                .iter()
                .map(|p| bytes::Bytes::copy_from_slice(p))
                .collect(),
        };
        let reply = self.raw.sm2_mul_compressed(request).await?.into_inner();
        self::points(reply, points.len())
    }

    /// A whole Bitcoin block with the outputs its inputs spend (`request.spent` from the
    /// library's with `Into`).
    pub async fn verify_block(
        &mut self,
        request: VerifyBlockRequest,
    ) -> Result<VerifyBlockReply, Status> {
        Ok(self.raw.verify_block(request).await?.into_inner())
    }

    /// Loose transactions, batched with other clients' as a mempool checks them; a verdict each.
    pub async fn verify_transactions(
        &mut self,
        txs: &[batchcrypt::bitcoin::txs::LooseTx],
    ) -> Result<Vec<TransactionVerdict>, Status> {
        let transactions = txs.iter().map(Into::into).collect();
        let request = VerifyTransactionsRequest { transactions };
        let verdicts = self
            .raw
            .verify_transactions(request)
            .await?
            .into_inner()
            .verdicts;
        if verdicts.len() != txs.len() {
            return Err(Status::internal(format!(
                "the server answered {} of {} transactions",
                verdicts.len(),
                txs.len()
            )));
        }
        Ok(verdicts)
    }

    /// A proof, end to end: submitted under a fresh request id and waited for; across a restart
    /// of the server (UNAVAILABLE) it resubmits under the same id, so the job runs once.
    pub async fn prove(
        &mut self,
        circuit_id: &str,
        witness: Vec<u8>,
        job: JobOptions,
    ) -> Result<ProofReply, Status> {
        let request_id = hex::encode(rand::random::<[u8; 16]>());
        let mut retries = 0;
        loop {
            let attempt = async {
                let job = self
                    .submit(circuit_id, witness.clone(), &request_id, job)
                    .await?;
                self.wait(&job.job_id, true).await
            };
            match attempt.await {
                Err(s) if s.code() == tonic::Code::Unavailable && retries < 60 => {
                    retries += 1;
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                other => return other,
            }
        }
    }
}

/// A points reply's `count` points: each 33 bytes, or empty where the input was not a point.
fn points(reply: PointsReply, count: usize) -> Result<Vec<Option<Compressed>>, Status> {
    if reply.points.len() != count {
        return Err(Status::internal(format!(
            "the server answered {} points for {count}",
            reply.points.len()
        )));
    }
    reply
        .points
        .iter()
        .map(|p| match p.len() {
            0 => Ok(None),
            _ => p[..]
                .try_into()
                .map(Some)
                .map_err(|_| Status::internal("the server sent a point that is not 33 bytes")),
        })
        .collect()
}

/// A PSI party's multiplications on a running server ([`batchcrypt::psi::Multiplier`]), for a
/// party on a machine whose GPUs a `batchcrypt serve` owns: its secret key goes to that server
/// with each request, so the server must be one the party trusts (its own, over TLS off the
/// machine). Called from the party's threads, outside the runtime whose handle it holds.
pub struct ServedMultiplier {
    client: Client,
    runtime: tokio::runtime::Handle,
}

impl ServedMultiplier {
    pub fn new(client: Client, runtime: tokio::runtime::Handle) -> Self {
        ServedMultiplier { client, runtime }
    }
}

fn served(e: Status) -> batchcrypt::Error {
    batchcrypt::Error::Library {
        library: "batchcrypt serve",
        message: format!("{:?}: {}", e.code(), e.message()),
    }
}

impl batchcrypt::psi::Multiplier for ServedMultiplier {
    fn hash_to_curve_mul(
        &self,
        key: &[u8; 32],
        items: &[&[u8]],
        dst: &[u8],
    ) -> batchcrypt::Result<Vec<Compressed>> {
        let mut c = self.client.clone();
        self.runtime
            .block_on(c.sm2_hash_to_curve_mul(key, items, dst))
            .map_err(served)
    }
    fn mul_compressed(
        &self,
        key: &[u8; 32],
        points: &[Compressed],
    ) -> batchcrypt::Result<Vec<Option<Compressed>>> {
        let mut c = self.client.clone();
        self.runtime
            .block_on(c.sm2_mul_compressed(key, points))
            .map_err(served)
    }
}

/// A request to hash `width`-byte messages in shared memory into shared memory.
pub fn shared_hash_request(
    algorithm: HashAlgorithm,
    messages: SharedSpan,
    width: u32,
    digests: SharedSpan,
) -> HashRequest {
    HashRequest {
        algorithm: algorithm as i32,
        messages: Vec::new(),
        messages_packed: Some(Column {
            data: bytes::Bytes::new(),
            width,
            ends: Vec::new(),
            shared: Some(messages),
        }),
        digests_to: Some(digests),
    }
}

/// A request whose lists can travel as packed columns, and so through shared memory
/// ([`SharedMemory::share`]).
pub trait PackedColumns {
    /// The request's packed columns, set or not.
    fn packed_columns(&mut self) -> Vec<&mut Option<Column>>;

    /// Bytes its set columns carry.
    fn packed_bytes(&mut self) -> u64 {
        self.packed_columns()
            .into_iter()
            .flatten()
            .map(|c| c.data.len() as u64)
            .sum()
    }
}

impl PackedColumns for HashRequest {
    fn packed_columns(&mut self) -> Vec<&mut Option<Column>> {
        vec![&mut self.messages_packed]
    }
}

impl PackedColumns for VerifyEcdsaRequest {
    fn packed_columns(&mut self) -> Vec<&mut Option<Column>> {
        vec![
            &mut self.hashes_packed,
            &mut self.signatures_packed,
            &mut self.public_keys_packed,
        ]
    }
}

impl PackedColumns for VerifySchnorrRequest {
    fn packed_columns(&mut self) -> Vec<&mut Option<Column>> {
        vec![
            &mut self.messages_packed,
            &mut self.signatures_packed,
            &mut self.public_keys_packed,
        ]
    }
}

impl PackedColumns for VerifySm2Request {
    fn packed_columns(&mut self) -> Vec<&mut Option<Column>> {
        vec![
            &mut self.messages_packed,
            &mut self.signatures_packed,
            &mut self.public_keys_packed,
        ]
    }
}

/// A registered shared-memory region ([`Client::shared_memory`]): its file, which this client
/// writes requests' data into and reads results from. Dropping it removes the file (the server
/// keeps its own handle until the region is unregistered).
pub struct SharedMemory {
    file: std::fs::File,
    path: std::path::PathBuf,
    id: u64,
}

impl SharedMemory {
    /// The region's id on the server.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Bytes [offset, offset + length) of the region, for a request.
    pub fn span(&self, offset: u64, length: u64) -> SharedSpan {
        SharedSpan {
            region: self.id,
            offset,
            length,
        }
    }

    /// The bytes of `request`'s packed columns written into the region from `offset` on, one
    /// after another, and the columns naming them there in place of carrying them. Gives the
    /// offset after them.
    pub fn share<R: PackedColumns>(
        &self,
        request: &mut R,
        mut offset: u64,
    ) -> std::io::Result<u64> {
        for col in request.packed_columns().into_iter().flatten() {
            let len = col.data.len() as u64;
            self.write_at(&col.data, offset)?;
            col.data = bytes::Bytes::new();
            col.shared = Some(self.span(offset, len));
            offset += len;
        }
        Ok(offset)
    }

    pub fn write_at(&self, data: &[u8], offset: u64) -> std::io::Result<()> {
        std::os::unix::fs::FileExt::write_all_at(&self.file, data, offset)
    }

    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(&self.file, buf, offset)
    }

    /// The file, for a client that maps it or hands it on.
    pub fn file(&self) -> &std::fs::File {
        &self.file
    }
}

impl Drop for SharedMemory {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Requests of one kind on one open call, and their replies in order.
pub struct Stream<Q, R> {
    tx: StreamSender<Q>,
    replies: tonic::Streaming<R>,
}

/// Sends requests on a [`Stream`] ([`Stream::sender`]).
pub struct StreamSender<Q>(tokio::sync::mpsc::Sender<Q>);

impl<Q> Clone for StreamSender<Q> {
    fn clone(&self) -> Self {
        StreamSender(self.0.clone())
    }
}

impl<Q> StreamSender<Q> {
    /// Sends a request without waiting for its reply (up to [`STREAM_QUEUE`] wait unsent).
    pub async fn send(&self, request: Q) -> Result<(), Status> {
        self.0
            .send(request)
            .await
            .map_err(|_| Status::unavailable("the stream has ended"))
    }
}

/// Requests of a [`Stream`] that may wait unsent.
const STREAM_QUEUE: usize = 16;

impl<Q, R> Stream<Q, R> {
    /// The stream that `call` opens with the requests it is given.
    async fn open<Fut>(
        call: impl FnOnce(tokio_stream::wrappers::ReceiverStream<Q>) -> Fut,
    ) -> Result<Self, Status>
    where
        Fut: std::future::Future<Output = Result<tonic::Response<tonic::Streaming<R>>, Status>>,
    {
        let (tx, rx) = tokio::sync::mpsc::channel(STREAM_QUEUE);
        let replies = call(tokio_stream::wrappers::ReceiverStream::new(rx))
            .await?
            .into_inner();
        Ok(Stream {
            tx: StreamSender(tx),
            replies,
        })
    }

    /// Sends a request without waiting for its reply (up to [`STREAM_QUEUE`] wait unsent).
    pub async fn send(&self, request: Q) -> Result<(), Status> {
        self.tx.send(request).await
    }

    /// A handle that sends on this stream from another task while this one reads the replies
    /// ([`Stream::reply`]): requests sent at their own pace, not one per reply.
    pub fn sender(&self) -> StreamSender<Q> {
        self.tx.clone()
    }

    /// The reply to the oldest request not yet answered; `None` once the stream has ended.
    pub async fn reply(&mut self) -> Result<Option<R>, Status> {
        self.replies.message().await
    }

    /// Sends every request, at most [`STREAM_QUEUE`] waiting unsent, while reading the replies:
    /// one per request, in order; the first failure ends it.
    pub async fn all(self, requests: Vec<Q>) -> Result<Vec<R>, Status> {
        let mut out = Vec::with_capacity(requests.len());
        self.each_reply(requests, |r| out.push(r)).await?;
        Ok(out)
    }

    /// Sends every request, at most [`STREAM_QUEUE`] waiting unsent, while handing each reply
    /// to `f` as it comes (one per request, in order): for a caller that prints or stores them
    /// as they come. The first failure ends it.
    pub async fn each_reply(
        self,
        requests: impl IntoIterator<Item = Q>,
        mut f: impl FnMut(R),
    ) -> Result<(), Status> {
        let Stream { tx, mut replies } = self;
        let sent = std::sync::atomic::AtomicUsize::new(0);
        let counted = &sent;
        let send = async move {
            for r in requests {
                // A closed stream ends with the error its replies carry.
                if tx.send(r).await.is_err() {
                    break;
                }
                counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            // The requests' end: the server ends the stream once it has answered them all.
            drop(tx);
        };
        let receive = async {
            let mut got = 0;
            while let Some(r) = replies.message().await? {
                f(r);
                got += 1;
            }
            Ok::<_, Status>(got)
        };
        let ((), got) = tokio::join!(send, receive);
        if got? < sent.into_inner() {
            return Err(Status::unavailable("the stream ended before every reply"));
        }
        Ok(())
    }

    /// Sends a request and waits for its reply (with no other request outstanding).
    pub async fn call(&mut self, request: Q) -> Result<R, Status> {
        self.send(request).await?;
        self.reply()
            .await?
            .ok_or_else(|| Status::unavailable("the stream ended before the reply"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{SystemTime, UNIX_EPOCH};

    #[test]
    fn a_jobs_deadline_as_the_request_carries_it() {
        assert_eq!(JobOptions::priority(3).deadline_unix_ms(), 0);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        let soon = JobOptions::priority(3).within(Duration::from_secs(2));
        assert_eq!(soon.priority, 3);
        assert!((now + 2000..now + 3000).contains(&soon.deadline_unix_ms()));
        // Beyond what a time can hold: no deadline, not a panic.
        assert_eq!(JobOptions::default().within(Duration::MAX).deadline, None);
        // At or before 1970: already passed, not "none".
        let past = JobOptions {
            deadline: Some(UNIX_EPOCH),
            ..JobOptions::default()
        };
        assert_eq!(past.deadline_unix_ms(), 1);
    }
}

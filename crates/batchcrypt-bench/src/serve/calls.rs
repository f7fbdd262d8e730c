//! What the service benchmark's clients send and how they check what comes back: each
//! operation's requests (built once), over a unary call, a stream per client (from the library's
//! client or the lean one), a frames connection or the frame-writing client.

use super::h2load::{self, H2Conn};
use super::wire;
use batchcrypt_serve::client::{Client, Stream};
use batchcrypt_serve::frames::Framed;
use batchcrypt_serve::proto::*;
use batchcrypt_serve::FramesClient;
use std::sync::Arc;
use std::time::Instant;

/// Items in each client's request.
pub(super) const PER_REQUEST: usize = 256;

/// Each client's request of `calls` as gRPC frames it, encoded once.
pub(super) fn wire_requests<S: Streamed>(calls: &S, clients: usize) -> Arc<Vec<bytes::Bytes>> {
    Arc::new(
        (0..clients)
            .map(|c| h2load::framed(&calls.request(c)))
            .collect(),
    )
}

/// A stream per client of `clients`, each starting at `start(c)`.
pub(super) fn wire_loads(
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
pub(super) fn wire_check<S: Streamed>(
    calls: &S,
) -> impl FnMut(usize, bytes::Bytes) -> Result<u64, String> {
    let calls = calls.clone();
    move |c, message| {
        let reply = <S::R as prost::Message>::decode(message).map_err(|e| e.to_string())?;
        Ok(calls.check(c, reply))
    }
}

/// Client `c`'s SHA256d request: its `per` 64-byte messages of `all`, packed (one buffer per
/// request, not a field per message).
pub(super) fn sha256d_request(all: &bytes::Bytes, per: usize, c: usize) -> HashRequest {
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
pub(super) fn messages_of(all: &bytes::Bytes, per: usize, c: usize) -> bytes::Bytes {
    all.slice(c * per * 64..(c + 1) * per * 64)
}

/// Checks a reply to a request of `per` messages; its batch's size.
pub(super) fn sha256d_checked(r: HashReply, per: usize) -> u64 {
    assert_eq!(r.packed_digests.len(), 32 * per);
    r.batch_items
}

/// Checks a reply to an ECDSA request (every signature valid); its batch's size.
pub(super) fn ecdsa_checked(v: VerifyReply) -> u64 {
    assert!(v.valid.iter().all(|&ok| ok) && v.valid.len() == PER_REQUEST);
    v.batch_items
}

/// Requests of one operation over a stream per client: how a client opens its stream, client
/// `c`'s request, and the check of a reply (giving the batch it was served in).
pub(super) trait Streamed: Clone + Send + Sync + 'static {
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
pub(super) struct EcdsaStreams(pub(super) Arc<Vec<VerifyEcdsaRequest>>);

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
pub(super) struct Sha256dStreams {
    pub(super) all: bytes::Bytes,
    pub(super) per: usize,
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
pub(super) struct Echoes(pub(super) Sha256dStreams);

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
pub(super) struct SharedSha256d {
    pub(super) streams: Sha256dStreams,
    pub(super) regions: Arc<Vec<batchcrypt_serve::client::SharedMemory>>,
    /// The library's digests of every client's messages, back to back.
    pub(super) expected: bytes::Bytes,
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
pub(super) fn sha256d_call(
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
pub(super) trait Duplex<S: Streamed>: Clone + Send + 'static {
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
pub(super) fn stream_call<S: Streamed, C: Duplex<S>>(
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
pub(super) fn framed_call<S>(
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

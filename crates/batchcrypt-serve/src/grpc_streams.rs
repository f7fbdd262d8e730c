//! The batched operations' request streams over gRPC (`VerifyEcdsaStream`, `VerifySchnorrStream`,
//! `VerifySm2Stream`, `HashStream`, `Echo`), read and answered in front of tonic's codec.
//!
//! Why: tonic copies every DATA frame of a request into its decode buffer, growing it as
//! messages arrive, and every reply into its encode buffer. Under a thousand clients' SHA256d
//! requests those copies took about a seventh of the serving threads' CPU (docs/performance.md).
//! Here a request message that arrived in one DATA frame (the service advertises frames of
//! [`crate::H2_MAX_FRAME`] bytes, so a client's message usually does) is decoded in place as a
//! slice of it; only a message split over frames is gathered. A large reply's bulk (digests, an
//! echo's payload) goes out as the batch left it, after the bytes that precede it.
//!
//! What a stream does is the proto's: each message is a request, counted and taken from the rate
//! limit as a call is and handled as the frames socket's requests are (the same handlers, limits
//! and metrics: [`crate::server::Service::framed`]); up to [`IN_FLIGHT`] run at once (one while
//! the operation's batches are backlogged: [`crate::batcher::Batcher::backlogged`]); the replies
//! go back in the requests' order; the first error ends the stream with its status after the
//! replies before it. A client that goes away drops its requests not yet batched; a server that
//! shuts down stops reading and ends each stream after the replies it owes. The interceptor in
//! front of the whole service checks the call's bearer token and rate limit first.

use crate::frames::{Kind, Reply};
use crate::server::Service;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use futures_util::future::{BoxFuture, Either, Ready};
use futures_util::stream::FuturesOrdered;
use futures_util::{FutureExt, StreamExt};
use http_body::{Body as _, Frame};
use prometheus_client::metrics::histogram::Histogram;
use std::convert::Infallible;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;
use tonic::body::Body;
use tonic::codegen::http;
use tonic::Status;

/// Requests of one stream handled at once, their replies still sent in order.
const IN_FLIGHT: usize = 16;

/// A gRPC message's prefix: the compressed flag and the length (`u32`, big-endian).
const PREFIX: usize = 5;

/// Replies whose bulk is at least this long send it as a DATA frame of its own rather than
/// copied after the fields before it: below it, the copy costs less than a frame.
const SEND_APART: usize = 64 << 10;

/// The request streams' operations, by method name.
fn kind_of(path: &str) -> Option<Kind> {
    let method = path
        .strip_prefix('/')?
        .strip_prefix(crate::proto::batch_crypt_server::SERVICE_NAME)?
        .strip_prefix('/')?;
    Some(match method {
        "VerifyEcdsaStream" => Kind::VerifyEcdsa,
        "VerifySchnorrStream" => Kind::VerifySchnorr,
        "VerifySm2Stream" => Kind::VerifySm2,
        "HashStream" => Kind::Hash,
        "Echo" => Kind::Echo,
        _ => return None,
    })
}

/// The request streams answered here, in front of `inner` (tonic's service), which the
/// service's other calls go on to; both behind the interceptor (bearer token, rate limit).
#[derive(Clone)]
pub(crate) struct InFront<S> {
    inner: S,
    service: Arc<Service>,
}

impl<S> InFront<S> {
    pub(crate) fn new(inner: S, service: Arc<Service>) -> Self {
        InFront { inner, service }
    }
}

impl<S: tonic::server::NamedService> tonic::server::NamedService for InFront<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> tonic::codegen::Service<http::Request<Body>> for InFront<S>
where
    S: tonic::codegen::Service<
        http::Request<Body>,
        Response = http::Response<Body>,
        Error = Infallible,
    >,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Either<Ready<Result<http::Response<Body>, Infallible>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        match kind_of(request.uri().path()) {
            Some(kind) => Either::Left(futures_util::future::ready(Ok(self.open(kind, request)))),
            None => Either::Right(self.inner.call(request)),
        }
    }
}

impl<S> InFront<S> {
    fn open(&self, kind: Kind, request: http::Request<Body>) -> http::Response<Body> {
        // The service accepts no compression (neither does tonic's server here).
        if let Some(e) = request.headers().get("grpc-encoding") {
            if e.as_bytes() != b"identity" {
                let e = String::from_utf8_lossy(e.as_bytes());
                return Status::unimplemented(format!(
                    "messages compressed with {e} are not accepted: send them uncompressed"
                ))
                .into_http();
            }
        }
        let (parts, body) = request.into_parts();
        // The client's address as tonic reads it (the interceptor has checked the call).
        let ip = tonic::Request::from_http(http::Request::from_parts(parts, ()))
            .remote_addr()
            .map(|a| a.ip());
        let replies = Replies {
            inbound: Messages::new(body, self.service.max_message_bytes()),
            running: FuturesOrdered::new(),
            sent: self.service.stage_histogram(kind, "sent"),
            reading: true,
            tail: None,
            end: None,
            done: false,
            stop: self.service.stopping(),
            service: self.service.clone(),
            kind,
            ip,
        };
        let mut response = http::Response::new(Body::new(replies));
        response.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/grpc"),
        );
        response
    }
}

/// A stream's replies, made as the connection asks for them: each poll sends a reply that is
/// ready before it reads another request, reads while fewer than [`IN_FLIGHT`] run, and ends
/// with the trailers of the first error or, once the requests have ended (or the server stops)
/// and every reply is out, of OK.
struct Replies {
    inbound: Messages,
    running: FuturesOrdered<Timed>,
    /// The `sent` stage: from a request's reading to its reply's handing to the connection.
    /// With the `total` stage (arrival at the batcher to the batch's end) it says how long a
    /// reply took to reach the connection, and the connection to take it, which no other stage
    /// times.
    sent: Histogram,
    reading: bool,
    /// A reply's bulk, sent after its head.
    tail: Option<Bytes>,
    /// The stream's status, once it is known; its trailers go out after the replies owed.
    end: Option<Status>,
    done: bool,
    stop: BoxFuture<'static, ()>,
    service: Arc<Service>,
    kind: Kind,
    ip: Option<IpAddr>,
}

impl http_body::Body for Replies {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let s = self.get_mut();
        loop {
            if let Some(tail) = s.tail.take() {
                return Poll::Ready(Some(Ok(Frame::data(tail))));
            }
            if s.done {
                return Poll::Ready(None);
            }
            if let Some(status) = s.end.take() {
                s.done = true;
                let mut trailers = http::HeaderMap::new();
                // A status whose text cannot be a header still ends the stream with its code.
                if let Err(bad) = status.add_header(&mut trailers) {
                    let _ = Status::new(bad.code(), "").add_header(&mut trailers);
                }
                return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
            }
            if let Poll::Ready(Some((read, reply))) = s.running.poll_next_unpin(cx) {
                s.sent.observe(read.elapsed().as_secs_f64());
                match reply {
                    Ok(reply) => {
                        let (head, tail) = message(reply);
                        s.tail = tail;
                        return Poll::Ready(Some(Ok(Frame::data(head))));
                    }
                    Err(status) => {
                        // The replies after the first error are not sent: drop their work.
                        s.running = FuturesOrdered::new();
                        s.reading = false;
                        s.end = Some(status);
                        continue;
                    }
                }
            }
            // Up to IN_FLIGHT requests of a stream at once, one while the operation's batches
            // are backlogged: read ahead then, a thousand clients' streams had filled the
            // page-locked pool and the server, slowed, fell further behind (docs/performance.md).
            let room = s.running.is_empty()
                || (s.running.len() < IN_FLIGHT && !s.service.backlogged(s.kind));
            if s.reading && room {
                match s.inbound.poll_next(cx) {
                    Poll::Ready(Some(m)) => {
                        s.reading = m.is_ok();
                        let read = Instant::now();
                        let handled = s.service.clone().framed(s.kind, m, s.ip);
                        s.running.push_back(Timed { read, handled });
                        continue;
                    }
                    Poll::Ready(None) => s.reading = false,
                    Poll::Pending => {}
                }
            }
            if !s.reading && s.running.is_empty() {
                s.end = Some(Status::ok(""));
                continue;
            }
            // Whether the server is stopping, asked only before waiting (so at least once per
            // IN_FLIGHT requests read): asked on every pass, its watch was polled several times
            // per request.
            if s.reading && s.stop.poll_unpin(cx).is_ready() {
                s.reading = false;
                continue;
            }
            return Poll::Pending;
        }
    }
}

/// A stream's request being handled, with when it was read: its reply comes out with it.
struct Timed {
    read: Instant,
    handled: BoxFuture<'static, Result<Reply, Status>>,
}

impl std::future::Future for Timed {
    type Output = (Instant, Result<Reply, Status>);
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let read = self.read;
        self.handled.poll_unpin(cx).map(|r| (read, r))
    }
}

/// A request body's messages, each sliced out of the DATA frame it came in where it came in one.
struct Messages {
    body: Body,
    /// The rest of the last DATA frame read: whole messages are sliced out of it.
    pending: Bytes,
    /// A message that came split over frames, gathered.
    gathered: BytesMut,
    max: usize,
}

impl Messages {
    fn new(body: Body, max: usize) -> Self {
        Messages {
            body,
            pending: Bytes::new(),
            gathered: BytesMut::new(),
            max,
        }
    }

    /// The next message's bytes, without its prefix; None once the requests ended.
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, Status>>> {
        loop {
            if self.gathered.is_empty() {
                match whole(&self.pending, self.max) {
                    Ok(Some(n)) => {
                        let mut m = self.pending.split_to(PREFIX + n);
                        m.advance(PREFIX);
                        return Poll::Ready(Some(Ok(m)));
                    }
                    Ok(None) => {}
                    Err(e) => return Poll::Ready(Some(Err(e))),
                }
            } else {
                match whole(&self.gathered, self.max) {
                    Ok(Some(n)) => {
                        let mut m = self.gathered.split_to(PREFIX + n).freeze();
                        m.advance(PREFIX);
                        // What follows it is sliced again, not gathered.
                        self.pending = self.gathered.split().freeze();
                        return Poll::Ready(Some(Ok(m)));
                    }
                    Ok(None) => {}
                    Err(e) => return Poll::Ready(Some(Err(e))),
                }
            }
            let frame = match Pin::new(&mut self.body).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(f))) => f,
                Poll::Ready(Some(Err(s))) => return Poll::Ready(Some(Err(s))),
                Poll::Ready(None) => {
                    if self.pending.is_empty() && self.gathered.is_empty() {
                        return Poll::Ready(None);
                    }
                    return Poll::Ready(Some(Err(Status::internal(
                        "the request stream ended inside a message",
                    ))));
                }
            };
            // Trailers from a client carry nothing for the service.
            let Ok(data) = frame.into_data() else {
                continue;
            };
            if self.pending.is_empty() && self.gathered.is_empty() {
                self.pending = data;
                continue;
            }
            // A message split over frames: gathered (what was pending first; the two are never
            // both held), with room for all of it once its length is known.
            let held = if self.gathered.is_empty() {
                &self.pending[..]
            } else {
                &self.gathered[..]
            };
            let want = announced(held).map_or(0, |n| PREFIX + n.min(self.max));
            let room = want.max(held.len() + data.len());
            self.gathered.reserve(room - self.gathered.len());
            self.gathered.put(std::mem::take(&mut self.pending));
            self.gathered.put(data);
        }
    }
}

/// The length a message's prefix announces, once the prefix is there.
fn announced(buf: &[u8]) -> Option<usize> {
    let len: [u8; 4] = buf.get(1..PREFIX)?.try_into().ok()?;
    Some(u32::from_be_bytes(len) as usize)
}

/// The length of the message at the front of `buf` when it is all there; an error for a
/// compressed message (the service accepts no compression) or one over `max` bytes (the same
/// status as tonic's decoder gives).
fn whole(buf: &[u8], max: usize) -> Result<Option<usize>, Status> {
    let Some(n) = announced(buf) else {
        return Ok(None);
    };
    match buf[0] {
        0 => {}
        1 => {
            return Err(Status::internal(
                "protocol error: a compressed message, but the call named no grpc-encoding",
            ))
        }
        f => {
            return Err(Status::internal(format!(
                "protocol error: compression flag {f} (only 0 and 1 are defined)"
            )))
        }
    }
    if n > max {
        return Err(Status::out_of_range(format!(
            "a request message of {n} bytes; the limit is {max}"
        )));
    }
    Ok((buf.len() >= PREFIX + n).then_some(n))
}

/// A reply as a gRPC message: its prefix and fields, and (for a bulk of [`SEND_APART`] bytes or
/// more) the bulk to send after them as it is.
fn message(reply: Reply) -> (Bytes, Option<Bytes>) {
    let (reply, field, bulk) = reply.take_bulk(SEND_APART);
    let bulk_len = bulk.as_ref().map_or(0, |b| {
        prost::encoding::key_len(field)
            + prost::encoding::encoded_len_varint(b.len() as u64)
            + b.len()
    });
    let fields = reply.encoded_len();
    let mut head = BytesMut::with_capacity(PREFIX + fields + 16);
    head.put_u8(0);
    head.put_u32((fields + bulk_len) as u32);
    reply.encode_raw(&mut head);
    if let Some(b) = &bulk {
        prost::encoding::encode_key(field, prost::encoding::WireType::LengthDelimited, &mut head);
        prost::encoding::encode_varint(b.len() as u64, &mut head);
    }
    (head.freeze(), bulk)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefixed(body: &[u8]) -> Vec<u8> {
        let mut v = vec![0];
        v.extend((body.len() as u32).to_be_bytes());
        v.extend(body);
        v
    }

    #[test]
    fn a_message_is_whole_once_its_prefix_and_body_are_there() {
        let m = prefixed(b"hello");
        for cut in 0..m.len() {
            assert_eq!(whole(&m[..cut], 100).unwrap(), None, "cut at {cut}");
        }
        assert_eq!(whole(&m, 100).unwrap(), Some(5));
        assert_eq!(whole(&m, 4).unwrap_err().code(), tonic::Code::OutOfRange);
        let mut compressed = m.clone();
        compressed[0] = 1;
        assert_eq!(
            whole(&compressed, 100).unwrap_err().code(),
            tonic::Code::Internal
        );
        assert!(kind_of("/batchcrypt.v1.BatchCrypt/HashStream") == Some(Kind::Hash));
        assert!(kind_of("/batchcrypt.v1.BatchCrypt/Hash").is_none());
        assert!(kind_of("/other.Service/HashStream").is_none());
    }

    /// Drains `messages`, whose frames are all ready.
    fn read_all(mut messages: Messages) -> Vec<Result<Bytes, Status>> {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut out = Vec::new();
        loop {
            match messages.poll_next(&mut cx) {
                Poll::Ready(Some(m)) => {
                    let end = m.is_err();
                    out.push(m);
                    if end {
                        return out;
                    }
                }
                Poll::Ready(None) => return out,
                Poll::Pending => panic!("every frame was ready"),
            }
        }
    }

    fn body(frames: Vec<Vec<u8>>) -> Body {
        let frames = frames
            .into_iter()
            .map(|f| Ok::<_, Status>(Frame::data(Bytes::from(f))));
        Body::new(http_body_util::StreamBody::new(futures_util::stream::iter(
            frames,
        )))
    }

    #[test]
    fn messages_come_whole_however_the_frames_cut_them() {
        let bodies: [&[u8]; 4] = [b"first message", b"", &[7u8; 300], b"last"];
        let wire: Vec<u8> = bodies.iter().flat_map(|b| prefixed(b)).collect();
        for a in 0..=wire.len() {
            for b in (a..=wire.len()).step_by(7) {
                let frames = vec![wire[..a].to_vec(), wire[a..b].to_vec(), wire[b..].to_vec()];
                let got: Vec<Bytes> = read_all(Messages::new(body(frames), 1000))
                    .into_iter()
                    .map(|m| m.unwrap())
                    .collect();
                assert_eq!(got, bodies, "frames cut at {a} and {b}");
            }
        }
        // A body that ends inside a message, and one whose message is over the limit.
        let cut = read_all(Messages::new(
            body(vec![wire[..wire.len() - 1].to_vec()]),
            1000,
        ));
        assert_eq!(cut.len(), bodies.len());
        assert_eq!(cut[3].as_ref().unwrap_err().code(), tonic::Code::Internal);
        let over = read_all(Messages::new(body(vec![wire.clone()]), 200));
        assert_eq!(over.len(), 3);
        assert_eq!(
            over[2].as_ref().unwrap_err().code(),
            tonic::Code::OutOfRange
        );
    }

    #[test]
    fn a_reply_sent_apart_decodes_as_the_same_message() {
        use prost::Message;
        for n in [
            0usize,
            10,
            SEND_APART / 32,
            SEND_APART / 32 + 1,
            4 * SEND_APART / 32,
        ] {
            let reply = crate::proto::HashReply {
                backend: "cuda".into(),
                batch_items: 7,
                packed_digests: (0..32 * n).map(|i| i as u8).collect::<Vec<u8>>().into(),
                ..Default::default()
            };
            let (head, tail) = message(Reply::Hash(reply.clone()));
            assert_eq!(tail.is_some(), 32 * n >= SEND_APART, "{n} digests");
            let mut all = head.to_vec();
            all.extend(tail.as_deref().unwrap_or_default());
            assert_eq!(announced(&all), Some(all.len() - PREFIX));
            let decoded = crate::proto::HashReply::decode(&all[PREFIX..]).unwrap();
            assert_eq!(decoded, reply, "{n} digests");
        }
        for n in [5, SEND_APART] {
            let reply = crate::proto::EchoReply {
                payload: vec![9u8; n].into(),
            };
            let (head, tail) = message(Reply::Echo(reply.clone()));
            assert_eq!(tail.is_some(), n >= SEND_APART);
            let all = [&head[..], tail.as_deref().unwrap_or_default()].concat();
            let decoded = crate::proto::EchoReply::decode(&all[PREFIX..]).unwrap();
            assert_eq!(decoded, reply, "an echo of {n} bytes");
        }
    }
}

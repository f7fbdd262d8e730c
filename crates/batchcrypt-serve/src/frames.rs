//! The local wire: the batched operations' own protobuf messages in length-prefixed frames over a
//! Unix socket (`batchcrypt serve --frames-socket PATH`), for clients on the server's machine
//! that send many small requests.
//!
//! Why a second wire: over gRPC every request and reply crosses HTTP/2's framing, header
//! compression and flow control on both ends, about three times the CPU of the request's own
//! bytes on a socket; with a thousand clients of requests of a few hundred items on the server's
//! machine, that cost, not the batches, bounded what the server carried. The frames carry the
//! same messages as the gRPC service and reach the same handlers, batchers, limits and metrics;
//! everything else (proofs, shared-memory registration, health) stays on gRPC.
//!
//! The protocol. The client opens with [`MAGIC`]; the server answers with it. Every frame, either
//! way, is a [`HEADER`] (the body's length and the request's id, each a little-endian `u32`, then
//! a tag byte) and the body. The client's first frame is a hello (tag 0) whose body is the
//! server's bearer token, empty when it has none; the server answers it like any request. A
//! request's tag is its operation ([`Kind`]), its body the operation's request message; a
//! reply's tag is 0 with the reply message, or a gRPC status code with the error's text. Replies
//! may come out of order: the id, the client's choice, matches them. A server reads no more
//! than [`IN_FLIGHT`] requests of a connection ahead of their replies, nor any while more than
//! [`OWED`] bytes of replies wait for the client to read them, and closes a connection that
//! sends a frame over its message limit.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use futures_util::future::BoxFuture;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tonic::{Code, Status};

/// A connection's first bytes, each way.
pub const MAGIC: &[u8; 8] = b"BCFRAME1";
/// A frame's header: body length (`u32` LE), request id (`u32` LE), tag.
pub const HEADER: usize = 9;
/// Requests of one connection the server handles at once.
pub const IN_FLIGHT: usize = 64;
/// Bytes of replies a connection may leave unread before the server reads no more of its
/// requests: a client that sends without reading holds at most this much of the server's memory
/// (and one reply beyond it).
pub const OWED: usize = 8 << 20;
/// How long a server waits for a new connection's magic and hello.
const HELLO_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);
/// How long a stopping server waits for a connection to finish what it owes.
pub const DRAIN_WITHIN: std::time::Duration = std::time::Duration::from_secs(30);
/// Reads ask for at least this much room: a few requests of a few hundred items.
const READ_ROOM: usize = 64 << 10;
/// Request bytes a client's connection queues unsent before its callers wait for the socket.
const QUEUED_MAX: usize = 1 << 20;

macro_rules! kinds {
    ($($kind:ident = $tag:literal: $request:ident => $reply:ident),* $(,)?) => {
        /// A request frame's operation (its tag).
        #[derive(Clone, Copy, PartialEq, Eq, Debug)]
        pub enum Kind {
            $($kind = $tag),*
        }

        impl Kind {
            pub fn from_tag(tag: u8) -> Option<Kind> {
                match tag {
                    $($tag => Some(Kind::$kind),)*
                    _ => None,
                }
            }

            /// The service's operation of the same name (its metrics' `op`).
            pub fn op(self) -> crate::metrics::Op {
                match self {
                    $(Kind::$kind => crate::metrics::Op::$kind),*
                }
            }
        }

        /// A reply of any operation, as a handler gives it.
        pub enum Reply {
            $($kind(crate::proto::$reply)),*
        }

        impl Reply {
            pub(crate) fn encoded_len(&self) -> usize {
                match self {
                    $(Reply::$kind(r) => prost::Message::encoded_len(r)),*
                }
            }

            pub(crate) fn encode_raw(&self, out: &mut BytesMut) {
                match self {
                    $(Reply::$kind(r) => prost::Message::encode_raw(r, out)),*
                }
            }
        }

        $(
            impl Framed for crate::proto::$request {
                const KIND: Kind = Kind::$kind;
                type Reply = crate::proto::$reply;
            }
        )*
    };
}

kinds! {
    VerifyEcdsa = 1: VerifyEcdsaRequest => VerifyReply,
    VerifySchnorr = 2: VerifySchnorrRequest => VerifyReply,
    VerifySm2 = 3: VerifySm2Request => VerifyReply,
    Hash = 4: HashRequest => HashReply,
    Sm2HashToCurveMul = 5: Sm2HashToCurveMulRequest => PointsReply,
    Sm2MulCompressed = 6: Sm2MulCompressedRequest => PointsReply,
    Echo = 7: EchoRequest => EchoReply,
}

impl Reply {
    /// The reply without its bulk (a hash reply's packed digests, an echo's payload) where that
    /// holds at least `min` bytes, with the bulk's field number and the bulk: to send the bulk as
    /// it is, after the rest.
    pub(crate) fn take_bulk(self, min: usize) -> (Reply, u32, Option<Bytes>) {
        match self {
            Reply::Hash(mut r) if r.packed_digests.len() >= min => {
                let bulk = std::mem::take(&mut r.packed_digests);
                (Reply::Hash(r), 4, Some(bulk))
            }
            Reply::Echo(mut r) if r.payload.len() >= min => {
                let bulk = std::mem::take(&mut r.payload);
                (Reply::Echo(r), 1, Some(bulk))
            }
            other => (other, 0, None),
        }
    }
}

/// A request message the frames carry, with its operation and its reply's message.
pub trait Framed: prost::Message + Sized {
    const KIND: Kind;
    type Reply: prost::Message + Default + Send + 'static;
}

/// The hello's tag.
const HELLO: u8 = 0;
/// A reply's tag when it succeeded.
const OK: u8 = 0;

/// One frame: its id, its tag and its body.
#[derive(Debug)]
pub struct Frame {
    pub id: u32,
    pub tag: u8,
    pub body: Bytes,
}

/// A frame's announced body is longer than the receiver's limit.
#[derive(Debug, PartialEq, Eq)]
pub struct TooLong {
    pub id: u32,
    pub len: usize,
}

/// Takes the next whole frame off the front of `buf`: None while it is still incomplete (room for
/// the rest is reserved), an error for a body over `max` bytes (the connection can go no
/// further: its next frame's start is not known to be read).
pub fn next_frame(buf: &mut BytesMut, max: usize) -> Result<Option<Frame>, TooLong> {
    if buf.len() < HEADER {
        return Ok(None);
    }
    let len = u32::from_le_bytes(buf[..4].try_into().expect("4 bytes")) as usize;
    let id = u32::from_le_bytes(buf[4..8].try_into().expect("4 bytes"));
    if len > max {
        return Err(TooLong { id, len });
    }
    if buf.len() < HEADER + len {
        buf.reserve(HEADER + len - buf.len());
        return Ok(None);
    }
    let tag = buf[8];
    let mut body = buf.split_to(HEADER + len).freeze();
    body.advance(HEADER);
    Ok(Some(Frame { id, tag, body }))
}

fn put_header(out: &mut BytesMut, len: usize, id: u32, tag: u8) {
    out.reserve(HEADER + len);
    out.put_u32_le(len as u32);
    out.put_u32_le(id);
    out.put_u8(tag);
}

/// Appends a request (or the hello's token, as `Kind`-less bytes) to `out`.
pub fn put_request<Q: Framed>(out: &mut BytesMut, id: u32, request: &Q) {
    put_header(out, request.encoded_len(), id, Q::KIND as u8);
    request.encode_raw(out);
}

/// Appends a reply to `out`: the message, or the status's code and text.
fn put_reply(out: &mut BytesMut, id: u32, reply: &Result<Reply, Status>) {
    match reply {
        Ok(r) => {
            put_header(out, r.encoded_len(), id, OK);
            r.encode_raw(out);
        }
        Err(s) => put_status(out, id, s),
    }
}

fn put_status(out: &mut BytesMut, id: u32, s: &Status) {
    // Code 0 is OK: a status that says OK as an error is still one.
    let code = match s.code() {
        Code::Ok => Code::Unknown,
        c => c,
    };
    put_header(out, s.message().len(), id, code as u8);
    out.put_slice(s.message().as_bytes());
}

/// A reply frame's outcome: its body, or its status.
fn outcome(f: Frame) -> Result<Bytes, Status> {
    if f.tag == OK {
        return Ok(f.body);
    }
    Err(Status::new(
        Code::from_i32(f.tag as i32),
        String::from_utf8_lossy(&f.body).into_owned(),
    ))
}

/// Decodes a frame's body as `M`.
pub fn decode<M: prost::Message + Default>(body: Bytes) -> Result<M, Status> {
    M::decode(body).map_err(|e| Status::invalid_argument(format!("cannot decode the request: {e}")))
}

/// What a server does with a connection's frames.
pub trait Handler: Send + Sync + 'static {
    /// Checks a hello's token (empty: none given).
    fn hello(&self, token: &[u8]) -> Result<(), Status>;
    /// Answers one request.
    fn handle(
        self: Arc<Self>,
        kind: Kind,
        body: Bytes,
    ) -> BoxFuture<'static, Result<Reply, Status>>;
}

/// Serves one connection: reads requests (up to [`IN_FLIGHT`] at once and while under
/// [`OWED`] bytes of replies are unwritten, each handled as it arrives), writes each reply as it
/// is ready (those ready together in one write), until the client ends its side and everything
/// owed is written, or `stop` resolves (then reading stops and the replies owed are still
/// written, for up to [`DRAIN_WITHIN`]: a client that stops reading cannot hold a shutdown). A
/// client that goes away drops its requests in flight.
pub async fn serve<H: Handler>(
    mut io: tokio::net::UnixStream,
    handler: Arc<H>,
    max: usize,
    stop: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    use futures_util::{FutureExt, StreamExt};
    let mut magic = [0u8; MAGIC.len()];
    match tokio::time::timeout(HELLO_WITHIN, io.read_exact(&mut magic)).await {
        Ok(Ok(_)) if &magic == MAGIC => {}
        // Not this protocol (a gRPC client, say), or silent: nothing to answer in its terms.
        _ => return Ok(()),
    }
    io.write_all(MAGIC).await?;
    let (mut rd, mut wr) = io.split();
    let (mut inbuf, mut out) = (BytesMut::with_capacity(READ_ROOM), BytesMut::new());
    let mut running = futures_util::stream::FuturesUnordered::new();
    let (mut hello, mut reading) = (false, true);
    let hello_by = tokio::time::Instant::now() + HELLO_WITHIN;
    // Set when `stop` resolves.
    let mut drain_by = None;
    tokio::pin!(stop);
    loop {
        let room = |running: usize, out: &BytesMut| running < IN_FLIGHT && out.len() < OWED;
        while reading && room(running.len(), &out) {
            match next_frame(&mut inbuf, max) {
                Ok(Some(f)) if !hello => {
                    let r = if f.tag == HELLO {
                        handler.hello(&f.body)
                    } else {
                        Err(Status::unauthenticated(
                            "a connection opens with a hello frame (tag 0, the token as its body)",
                        ))
                    };
                    (hello, reading) = (r.is_ok(), r.is_ok());
                    match r {
                        Ok(()) => put_header(&mut out, 0, f.id, OK),
                        Err(s) => put_status(&mut out, f.id, &s),
                    }
                }
                Ok(Some(f)) => match Kind::from_tag(f.tag) {
                    Some(kind) => {
                        let id = f.id;
                        running.push(handler.clone().handle(kind, f.body).map(move |r| (id, r)));
                    }
                    None => put_status(
                        &mut out,
                        f.id,
                        &Status::invalid_argument(format!("no operation has tag {}", f.tag)),
                    ),
                },
                Ok(None) => break,
                Err(TooLong { id, len }) => {
                    put_status(
                        &mut out,
                        id,
                        &Status::resource_exhausted(format!(
                            "a frame of {len} bytes; the limit is {max}: split the request"
                        )),
                    );
                    reading = false;
                }
            }
        }
        if !reading && running.is_empty() && out.is_empty() {
            break;
        }
        if inbuf.capacity() - inbuf.len() < READ_ROOM / 4 {
            inbuf.reserve(READ_ROOM);
        }
        tokio::select! {
            biased;
            Some((id, r)) = running.next(), if !running.is_empty() => put_reply(&mut out, id, &r),
            w = wr.write_buf(&mut out), if !out.is_empty() => {
                w?;
            }
            n = rd.read_buf(&mut inbuf), if reading && room(running.len(), &out) => {
                if n? == 0 {
                    reading = false;
                }
            }
            () = &mut stop, if drain_by.is_none() => {
                reading = false;
                drain_by = Some(tokio::time::Instant::now() + DRAIN_WITHIN);
            }
            () = tokio::time::sleep_until(drain_by.unwrap_or(hello_by)), if drain_by.is_some() => {
                return Ok(());
            }
            () = tokio::time::sleep_until(hello_by), if !hello && reading => reading = false,
        }
    }
    wr.shutdown().await
}

type Waiting = HashMap<u32, tokio::sync::oneshot::Sender<Result<Bytes, Status>>>;

/// A client's connection to a server's frames socket: any number of tasks may call at once over
/// it (it is cheap to clone). A call writes its request itself when nothing is queued before it
/// (no hand-off to another task); what the socket does not take at once is queued and written by
/// the connection's flusher, in order, each frame as it was encoded (queued frames are written
/// together, not copied into one growing buffer: appended to and drained from its ends, that
/// buffer was reallocated over and over, and under a paced load the server fell behind its page
/// faults were the client's largest cost); a call waits while more than [`QUEUED_MAX`] bytes are
/// queued, so a client that sends faster than the server reads holds bounded memory. A reader
/// task hands each reply to its caller by id.
#[derive(Clone)]
pub struct FramesClient {
    inner: Arc<Inner>,
}

struct Inner {
    /// The connection's writing side; dropped with the last handle, which ends the client's side.
    wr: tokio::net::unix::OwnedWriteHalf,
    /// Request bytes the socket has not taken yet, in order.
    queued: Mutex<Queued>,
    flush: Arc<tokio::sync::Notify>,
    /// Told when the flusher has brought the queue under [`QUEUED_MAX`], or the connection is gone.
    drained: tokio::sync::Notify,
    /// Requests sent and not yet answered; None once the connection is gone.
    waiting: Mutex<Option<Waiting>>,
    next: AtomicU32,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Dropping `wr` next ends the client's side: the server then writes what it owes and
        // closes, which ends the reader.
        self.flush.notify_one();
    }
}

impl FramesClient {
    /// Connects to the frames socket at `path` with the server's bearer token, if it has one.
    /// The connection's reader and flusher run as tasks of the current runtime.
    pub async fn connect(
        path: impl AsRef<std::path::Path>,
        token: Option<&str>,
    ) -> Result<FramesClient, String> {
        let path = path.as_ref();
        let cannot =
            |e: &dyn std::fmt::Display| format!("cannot connect to {}: {e}", path.display());
        let mut io = tokio::net::UnixStream::connect(path).await.map_err(|e| {
            cannot(&format!(
                "{e} (is `batchcrypt serve --frames-socket {}` running?)",
                path.display()
            ))
        })?;
        let mut first = BytesMut::new();
        first.put_slice(MAGIC);
        let token = token.unwrap_or("").as_bytes();
        put_header(&mut first, token.len(), 0, HELLO);
        first.put_slice(token);
        io.write_all(&first).await.map_err(|e| cannot(&e))?;
        let mut magic = [0u8; MAGIC.len()];
        let answered = tokio::time::timeout(HELLO_WITHIN, io.read_exact(&mut magic)).await;
        if !matches!(answered, Ok(Ok(_))) || &magic != MAGIC {
            return Err(format!(
                "{} does not answer in batchcrypt frames: is it a server's --frames-socket?",
                path.display()
            ));
        }
        let (rd, wr) = io.into_split();
        let mut reader = Reader {
            rd,
            buf: BytesMut::with_capacity(READ_ROOM),
        };
        match reader.next().await {
            Some(f) if f.id == 0 => outcome(f).map_err(|s| {
                format!("{} refused the connection: {}", path.display(), s.message())
            })?,
            _ => return Err(cannot(&"the server closed the connection")),
        };
        let inner = Arc::new(Inner {
            wr,
            queued: Mutex::new(Queued::default()),
            flush: Arc::new(tokio::sync::Notify::new()),
            drained: tokio::sync::Notify::new(),
            waiting: Mutex::new(Some(HashMap::new())),
            next: AtomicU32::new(1),
        });
        // The flusher: writes what calls queued, as the socket takes it.
        let (weak, flush) = (Arc::downgrade(&inner), inner.flush.clone());
        tokio::spawn(async move {
            loop {
                flush.notified().await;
                let Some(inner) = weak.upgrade() else { return };
                if inner.flush_queued().await.is_err() {
                    inner.gone();
                    return;
                }
            }
        });
        // The reader: each reply to its caller; when the connection ends, every caller still
        // waiting gets an error.
        let weak = Arc::downgrade(&inner);
        tokio::spawn(async move {
            while let Some(f) = reader.next().await {
                let Some(inner) = weak.upgrade() else { return };
                let waiter = inner.waiting().as_mut().and_then(|w| w.remove(&f.id));
                if let Some(w) = waiter {
                    let _ = w.send(outcome(f));
                }
            }
            if let Some(inner) = weak.upgrade() {
                inner.gone();
            }
        });
        Ok(FramesClient { inner })
    }

    /// Sends `request` and waits for its reply.
    pub async fn call<Q: Framed>(&self, request: &Q) -> Result<Q::Reply, Status> {
        let gone = || Status::unavailable("the frames connection has closed");
        let inner = &self.inner;
        inner.room().await.map_err(|()| gone())?;
        let id = inner.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = tokio::sync::oneshot::channel();
        inner.waiting().as_mut().ok_or_else(gone)?.insert(id, tx);
        let mut frame = BytesMut::new();
        put_request(&mut frame, id, request);
        if inner.send(frame.freeze()).is_err() {
            inner.gone();
            return Err(gone());
        }
        let body = rx.await.map_err(|_| gone())??;
        <Q::Reply as prost::Message>::decode(body)
            .map_err(|e| Status::internal(format!("cannot decode the server's reply: {e}")))
    }
}

impl Inner {
    fn waiting(&self) -> std::sync::MutexGuard<'_, Option<Waiting>> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn queued(&self) -> std::sync::MutexGuard<'_, Queued> {
        self.queued.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits while more than [`QUEUED_MAX`] bytes are queued; `Err` once the connection is gone.
    async fn room(&self) -> Result<(), ()> {
        loop {
            let drained = self.drained.notified();
            tokio::pin!(drained);
            drained.as_mut().enable();
            if self.waiting().is_none() {
                return Err(());
            }
            if self.queued().bytes <= QUEUED_MAX {
                return Ok(());
            }
            drained.await;
        }
    }

    /// Writes `frame` now if nothing waits before it and the socket takes it; queues the rest
    /// for the flusher. The frame's bytes are never interleaved with another's.
    fn send(&self, frame: Bytes) -> std::io::Result<()> {
        let mut q = self.queued();
        let mut at = 0;
        if q.frames.is_empty() {
            match self.wr.try_write(&frame) {
                Ok(n) => at = n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        if at < frame.len() {
            let first = q.frames.is_empty();
            q.bytes += frame.len() - at;
            q.frames.push_back(frame.slice(at..));
            if first {
                self.flush.notify_one();
            }
        }
        Ok(())
    }

    /// Writes everything queued, waiting for the socket to take it.
    async fn flush_queued(&self) -> std::io::Result<()> {
        loop {
            {
                let mut q = self.queued();
                if q.frames.is_empty() {
                    return Ok(());
                }
                let written = {
                    let parts: Vec<std::io::IoSlice<'_>> = (q.frames.iter().take(WRITE_FRAMES))
                        .map(|f| std::io::IoSlice::new(f))
                        .collect();
                    self.wr.try_write_vectored(&parts)
                };
                match written {
                    Ok(n) => {
                        let over = q.bytes > QUEUED_MAX;
                        q.consume(n);
                        if over && q.bytes <= QUEUED_MAX {
                            self.drained.notify_waiters();
                        }
                        continue;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
            }
            self.wr.writable().await?;
        }
    }

    /// The connection is gone: every caller waiting, and every later one, gets an error.
    fn gone(&self) {
        self.waiting().take();
        self.drained.notify_waiters();
    }
}

/// Frames a client has not written yet, each as it was encoded.
#[derive(Default)]
struct Queued {
    frames: std::collections::VecDeque<Bytes>,
    bytes: usize,
}

/// Queued frames one write offers the socket.
const WRITE_FRAMES: usize = 64;

impl Queued {
    /// Drops the first `n` bytes, which the socket took.
    fn consume(&mut self, mut n: usize) {
        self.bytes -= n;
        while n > 0 {
            let front = self
                .frames
                .front_mut()
                .expect("the socket took queued bytes");
            if front.len() > n {
                front.advance(n);
                return;
            }
            n -= front.len();
            self.frames.pop_front();
        }
    }
}

/// A client's reading side: whole frames, until the connection ends or breaks the protocol.
struct Reader {
    rd: tokio::net::unix::OwnedReadHalf,
    buf: BytesMut,
}

impl Reader {
    /// Replies of up to 1 GiB (a server's own limit is lower).
    const MAX: usize = 1 << 30;

    async fn next(&mut self) -> Option<Frame> {
        loop {
            if let Some(f) = next_frame(&mut self.buf, Self::MAX).ok()? {
                return Some(f);
            }
            if self.buf.capacity() - self.buf.len() < READ_ROOM / 4 {
                self.buf.reserve(READ_ROOM);
            }
            // A read that leaves room in the buffer has drained the socket, and the runtime
            // then waits for it to be readable again rather than read it once more to learn so.
            match self.rd.read_buf(&mut self.buf).await {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_taken_whole_and_in_order() {
        let mut buf = BytesMut::new();
        let r = crate::proto::EchoRequest {
            payload: Bytes::from_static(b"abc"),
            reply_bytes: 5,
        };
        put_request(&mut buf, 7, &r);
        put_status(&mut buf, 9, &Status::not_found("gone"));
        let whole = buf.clone();
        // Fed a byte at a time, each frame appears exactly when its last byte has.
        let mut fed = BytesMut::new();
        let mut seen = Vec::new();
        for b in whole.iter() {
            fed.put_u8(*b);
            while let Some(f) = next_frame(&mut fed, 1 << 20).unwrap() {
                seen.push(f);
            }
        }
        assert!(fed.is_empty());
        assert_eq!(seen.len(), 2);
        assert_eq!((seen[0].id, seen[0].tag), (7, Kind::Echo as u8));
        assert_eq!(
            decode::<crate::proto::EchoRequest>(seen[0].body.clone()).unwrap(),
            r
        );
        let s = outcome(seen.remove(1)).unwrap_err();
        assert_eq!((s.code(), s.message()), (Code::NotFound, "gone"));
    }

    #[test]
    fn a_frame_over_the_limit_is_refused_from_its_header() {
        let mut buf = BytesMut::new();
        put_header(&mut buf, 1000, 3, Kind::Hash as u8);
        assert_eq!(
            next_frame(&mut buf, 999).unwrap_err(),
            TooLong { id: 3, len: 1000 }
        );
        assert!(next_frame(&mut buf, 1000).unwrap().is_none());
    }

    #[test]
    fn queued_frames_are_consumed_in_order_across_their_ends() {
        let mut q = Queued::default();
        for f in [&b"abc"[..], b"de", b"fghi"] {
            q.bytes += f.len();
            q.frames.push_back(Bytes::copy_from_slice(f));
        }
        q.consume(4);
        assert_eq!((q.bytes, q.frames.len()), (5, 2));
        assert_eq!(&q.frames[0][..], b"e");
        q.consume(1);
        assert_eq!(&q.frames[0][..], b"fghi");
        q.consume(4);
        assert!(q.frames.is_empty() && q.bytes == 0);
    }

    #[tokio::test]
    async fn a_client_queues_a_bounded_amount_for_a_server_that_does_not_read() {
        let dir =
            std::env::temp_dir().join(format!("batchcrypt-frames-queue-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s");
        let _ = std::fs::remove_file(&path);
        let listener = tokio::net::UnixListener::bind(&path).unwrap();
        // A server that answers the hello, then reads nothing more.
        let server = tokio::spawn(async move {
            let (mut io, _) = listener.accept().await.unwrap();
            let mut first = vec![0u8; MAGIC.len() + HEADER];
            io.read_exact(&mut first).await.unwrap();
            let mut answer = BytesMut::from(&MAGIC[..]);
            put_header(&mut answer, 0, 0, OK);
            io.write_all(&answer).await.unwrap();
            io
        });
        let client = FramesClient::connect(&path, None).await.unwrap();
        let request = crate::proto::EchoRequest {
            payload: Bytes::from(vec![1u8; 64 << 10]),
            reply_bytes: 0,
        };
        let calls: Vec<_> = (0..200)
            .map(|_| {
                let (client, request) = (client.clone(), request.clone());
                tokio::spawn(async move { client.call(&request).await })
            })
            .collect();
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        // 200 requests of 64 KiB: the socket takes a few, the queue at most its bound and one
        // request beyond it; the other callers wait.
        let queued = client.inner.queued().bytes;
        assert!(
            queued > 0 && queued <= QUEUED_MAX + (64 << 10) + 64,
            "{queued} bytes queued"
        );
        assert!(calls.iter().any(|c| !c.is_finished()));
        // The server going away ends every call, waiting or queued, with an error.
        drop(server.await.unwrap());
        for c in calls {
            let r = tokio::time::timeout(std::time::Duration::from_secs(10), c).await;
            assert!(r.expect("every call ends").unwrap().is_err());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn every_tag_names_its_operation_and_no_other() {
        for tag in 0..=255u8 {
            if let Some(k) = Kind::from_tag(tag) {
                assert_eq!(k as u8, tag);
            }
        }
        assert_eq!(Kind::from_tag(HELLO), None);
        assert_eq!(Kind::from_tag(8), None);
    }
}

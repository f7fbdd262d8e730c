//! A gRPC load generator that writes and reads HTTP/2's frames itself, as nghttp2's h2load does:
//! one task per connection drives every stream on it, each stream's request encoded once with its
//! frame header, replies sliced out of the bytes read. No HTTP/2 library state shared between a
//! connection's task and its streams, no wake-up per message: what the clients cost is the
//! system calls and the replies' checks, so clients in the server's process take less of its
//! CPU than [`super::h2load`]'s. Response and trailer headers are not decoded (a stream the
//! server ends early is an error without its status text).

use bytes::{Buf, BufMut, Bytes, BytesMut};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::{Duration, Instant};
use tokio::net::UnixStream;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const DATA: u8 = 0;
const HEADERS: u8 = 1;
const RST_STREAM: u8 = 3;
const SETTINGS: u8 = 4;
const PING: u8 = 6;
const GOAWAY: u8 = 7;
const WINDOW_UPDATE: u8 = 8;
const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
/// The windows this client grants (as the service's own client does); received bytes are given
/// back once a quarter of a window has come.
const CONNECTION_WINDOW: u32 = batchcrypt_serve::H2_CONNECTION_WINDOW;
const STREAM_WINDOW: u32 = batchcrypt_serve::H2_STREAM_WINDOW;
/// Frames handed to one vectored write at most.
const WRITE_SLICES: usize = 64;

/// A 9-byte frame header.
fn header(len: usize, kind: u8, flags: u8, stream: u32) -> [u8; 9] {
    let l = (len as u32).to_be_bytes();
    let s = stream.to_be_bytes();
    [l[1], l[2], l[3], kind, flags, s[0], s[1], s[2], s[3]]
}

/// A WINDOW_UPDATE frame giving `n` bytes back on `stream` (0: the connection).
fn window_update(stream: u32, n: u32) -> Bytes {
    let mut b = BytesMut::with_capacity(13);
    b.put_slice(&header(4, WINDOW_UPDATE, 0, stream));
    b.put_u32(n);
    b.freeze()
}

/// A HEADERS block opening a gRPC call of `path`: static-table names, literal values, no
/// indexing (so the server's table is never touched).
fn request_headers(path: &str) -> Vec<u8> {
    // :method POST and :scheme http, indexed; then each a literal field without indexing: the
    // name's static index in 4-bit prefix form, or 0 and the name; then the value (all shorter
    // than 127 bytes, no Huffman coding).
    let mut b = vec![0x83, 0x86];
    let fields: [(&[u8], &str, &str); 4] = [
        (&[0x04], "", path),                     // :path
        (&[0x01], "", "localhost"),              // :authority
        (&[0x0f, 0x10], "", "application/grpc"), // content-type (static index 31)
        (&[0x00], "te", "trailers"),
    ];
    for (index, name, value) in fields {
        assert!(
            name.len() < 127 && value.len() < 127,
            "a header of one length byte"
        );
        b.extend_from_slice(index);
        if !name.is_empty() {
            b.push(name.len() as u8);
            b.extend_from_slice(name.as_bytes());
        }
        b.push(value.len() as u8);
        b.extend_from_slice(value.as_bytes());
    }
    b
}

/// When the requests of a [`Connection::drive`] are sent.
#[derive(Clone, Copy)]
pub enum Pace {
    /// Each stream sends its first request at once and the next as each reply comes, while
    /// `until` has not passed.
    Closed { until: Instant },
    /// Stream `k` sends at its start and every `every` after it, whatever the replies.
    Every(Duration),
}

/// A stream's part in a [`Connection::drive`]: the client it stands for, its request as gRPC
/// frames it (sent as the same bytes each time), and when it starts.
pub struct Load {
    pub client: usize,
    pub request: Bytes,
    pub start: Instant,
}

/// A request answered: when it was sent (for a paced stream, when it was due), when its frames
/// were queued to be written (the client's own delay and the flow-control windows' after the
/// first), answered, and what the reply's check gave.
pub struct Answered {
    pub sent: Instant,
    pub queued: Instant,
    pub done: Instant,
    pub check: u64,
}

/// A stream's state during a drive.
struct Stream {
    id: u32,
    client: usize,
    /// The request's DATA frames: each header and piece (more than one where the request
    /// exceeds the server's frame size).
    frames: Vec<(Bytes, Bytes)>,
    len: i64,
    send_window: i64,
    /// Received bytes not yet given back.
    unacked: u32,
    /// Requests due so far; of them, held back by the windows; the send time of each sent and
    /// not yet answered.
    due: usize,
    held: usize,
    waiting: VecDeque<(Instant, Instant)>,
    /// Reply bytes that are not yet a whole message.
    partial: BytesMut,
    /// Whether this client has ended its side, and the server its own (trailers).
    closed: bool,
    ended: bool,
}

/// One HTTP/2 connection to the service's Unix socket.
pub struct Connection {
    io: UnixStream,
    read: BytesMut,
    write: VecDeque<Bytes>,
    next_id: u32,
    /// The server's settings and the connection's send window.
    max_frame: usize,
    stream_window: i64,
    max_streams: usize,
    send_window: i64,
    /// Received bytes on the connection not yet given back.
    unacked: u32,
}

impl Connection {
    /// Connects and exchanges settings: this client's windows and frame size (the service's own
    /// client's), the server's received and acknowledged before anything else is sent.
    pub async fn unix(path: &std::path::Path) -> Result<Connection, String> {
        let io = UnixStream::connect(path)
            .await
            .map_err(|e| format!("connecting to {}: {e}", path.display()))?;
        let mut c = Connection {
            io,
            read: BytesMut::new(),
            write: VecDeque::new(),
            next_id: 1,
            max_frame: 16_384,
            stream_window: 65_535,
            max_streams: usize::MAX,
            send_window: 65_535,
            unacked: 0,
        };
        let mut hello = BytesMut::from(PREFACE);
        hello.put_slice(&header(12, SETTINGS, 0, 0));
        hello.put_u16(0x4); // SETTINGS_INITIAL_WINDOW_SIZE
        hello.put_u32(STREAM_WINDOW);
        hello.put_u16(0x5); // SETTINGS_MAX_FRAME_SIZE
        hello.put_u32(batchcrypt_serve::H2_MAX_FRAME);
        c.write.push_back(hello.freeze());
        c.write
            .push_back(window_update(0, CONNECTION_WINDOW - 65_535));
        let mut none: [Stream; 0] = [];
        loop {
            c.flush()?;
            let settings = c.receive(&mut none, 1, &mut |_, _, _| {
                Err("a reply before any request".into())
            })?;
            if settings {
                break;
            }
            c.wait(None).await?;
        }
        c.flush()?;
        Ok(c)
    }

    /// Opens a stream of the service's `method` (`HashStream`) per load and sends its request
    /// as `pace` says, `rounds` times at most; checks each reply's message with `check` (client,
    /// message). Once a stream has sent its last and had its replies it ends its side; returns
    /// when the server has ended every stream: each request's answer, in the order they came.
    pub async fn drive(
        &mut self,
        method: &str,
        loads: Vec<Load>,
        pace: Pace,
        rounds: usize,
        check: &mut impl FnMut(usize, Bytes) -> Result<u64, String>,
    ) -> Result<Vec<Answered>, String> {
        use batchcrypt_serve::proto::batch_crypt_server::SERVICE_NAME;
        if loads.len() > self.max_streams {
            return Err(format!(
                "{} streams on a connection; the server allows {}",
                loads.len(),
                self.max_streams
            ));
        }
        let block = request_headers(&format!("/{SERVICE_NAME}/{method}"));
        let first_id = self.next_id;
        let mut streams = Vec::with_capacity(loads.len());
        // Sends to make, earliest first: (when, stream).
        let mut due = BinaryHeap::new();
        for (k, load) in loads.into_iter().enumerate() {
            let id = self.next_id;
            self.next_id += 2;
            let mut open = BytesMut::with_capacity(9 + block.len());
            open.put_slice(&header(block.len(), HEADERS, END_HEADERS, id));
            open.put_slice(&block);
            self.write.push_back(open.freeze());
            let frames = (load.request.chunks(self.max_frame))
                .map(|piece| {
                    let head = Bytes::copy_from_slice(&header(piece.len(), DATA, 0, id));
                    (head, load.request.slice_ref(piece))
                })
                .collect();
            streams.push(Stream {
                id,
                client: load.client,
                frames,
                len: load.request.len() as i64,
                send_window: self.stream_window,
                unacked: 0,
                due: 0,
                held: 0,
                waiting: VecDeque::new(),
                partial: BytesMut::new(),
                closed: false,
                ended: false,
            });
            due.push(Reverse((load.start, k)));
        }
        // Requests due and held back by a flow-control window, in order: (stream, when due).
        let mut held: VecDeque<(usize, Instant)> = VecDeque::new();
        let mut answered = Vec::new();
        loop {
            let now = Instant::now();
            while let Some(&Reverse((at, k))) = due.peek() {
                if at > now {
                    break;
                }
                due.pop();
                let s = &mut streams[k];
                let sent = match pace {
                    Pace::Closed { until } if now < until => now,
                    Pace::Closed { .. } => continue,
                    Pace::Every(every) => {
                        if s.due + 1 < rounds {
                            due.push(Reverse((at + every, k)));
                        }
                        at
                    }
                };
                s.due += 1;
                s.held += 1;
                held.push_back((k, sent));
            }
            self.release(&mut streams, &mut held);
            for s in streams.iter_mut() {
                let last =
                    s.due >= rounds || matches!(pace, Pace::Closed { until } if now >= until);
                if last && !s.closed && s.held == 0 && s.waiting.is_empty() {
                    s.closed = true;
                    let end = header(0, DATA, END_STREAM, s.id);
                    self.write.push_back(Bytes::copy_from_slice(&end));
                }
            }
            self.flush()?;
            if streams.iter().all(|s| s.closed && s.ended) {
                return Ok(answered);
            }
            let next = due.peek().map(|r| r.0 .0);
            self.wait(next).await?;
            self.receive(&mut streams, first_id, &mut |k, s, message| {
                let (sent, queued) = s.waiting.pop_front().ok_or("a reply to no request")?;
                let check = check(s.client, message)?;
                let done = Instant::now();
                answered.push(Answered {
                    sent,
                    queued,
                    done,
                    check,
                });
                if matches!(pace, Pace::Closed { until } if done < until) && s.due < rounds {
                    due.push(Reverse((done, k)));
                }
                Ok(())
            })?;
        }
    }

    /// Moves held requests whose windows have room onto the write queue, in order.
    fn release(&mut self, streams: &mut [Stream], held: &mut VecDeque<(usize, Instant)>) {
        let now = Instant::now();
        while let Some(&(k, sent)) = held.front() {
            let s = &mut streams[k];
            if s.len > self.send_window || s.len > s.send_window {
                return;
            }
            held.pop_front();
            self.send_window -= s.len;
            s.send_window -= s.len;
            s.held -= 1;
            s.waiting.push_back((sent, now));
            for (head, piece) in &s.frames {
                self.write.push_back(head.clone());
                self.write.push_back(piece.clone());
            }
        }
    }

    /// Writes what is queued, as far as the socket takes it now.
    fn flush(&mut self) -> Result<(), String> {
        while !self.write.is_empty() {
            let slices: Vec<std::io::IoSlice> = (self.write.iter().take(WRITE_SLICES))
                .map(|b| std::io::IoSlice::new(b))
                .collect();
            let mut n = match self.io.try_write_vectored(&slices) {
                Ok(0) => return Err("the server closed the connection".into()),
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(format!("writing: {e}")),
            };
            while n > 0 {
                let front = self.write.front_mut().expect("written from the queue");
                if front.len() > n {
                    front.advance(n);
                    break;
                }
                n -= front.len();
                self.write.pop_front();
            }
        }
        Ok(())
    }

    /// Until the socket has bytes to read, or room for what is queued, or `until` has come.
    async fn wait(&self, until: Option<Instant>) -> Result<(), String> {
        let timer = async {
            match until {
                Some(t) => tokio::time::sleep_until(t.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            r = self.io.readable() => r.map_err(|e| format!("reading: {e}")),
            r = self.io.writable(), if !self.write.is_empty() => r.map_err(|e| format!("writing: {e}")),
            () = timer => Ok(()),
        }
    }

    /// Reads what the socket has now (a few reads at most, so writes are not starved) and
    /// handles its whole frames: each reply message goes to `message` with its stream (index
    /// and state; the stream's first id is `first_id`). Whether the server's settings came.
    fn receive(
        &mut self,
        streams: &mut [Stream],
        first_id: u32,
        message: &mut impl FnMut(usize, &mut Stream, Bytes) -> Result<(), String>,
    ) -> Result<bool, String> {
        let mut settings = false;
        for _ in 0..4 {
            self.read.reserve(256 << 10);
            match self.io.try_read_buf(&mut self.read) {
                Ok(0) => return Err("the server closed the connection".into()),
                Ok(_) => settings |= self.frames(streams, first_id, message)?,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(format!("reading: {e}")),
            }
        }
        Ok(settings)
    }

    /// Handles the whole frames read ([`Connection::receive`]).
    fn frames(
        &mut self,
        streams: &mut [Stream],
        first_id: u32,
        message: &mut impl FnMut(usize, &mut Stream, Bytes) -> Result<(), String>,
    ) -> Result<bool, String> {
        let mut settings = false;
        while self.read.len() >= 9 {
            let h = &self.read[..9];
            let len = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
            if self.read.len() < 9 + len {
                break;
            }
            let (kind, flags) = (h[3], h[4]);
            let id = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
            self.read.advance(9);
            let mut payload = self.read.split_to(len).freeze();
            // This drive's stream `id` is, where it is one.
            let k = (id >= first_id && id % 2 == 1)
                .then(|| ((id - first_id) / 2) as usize)
                .filter(|&k| k < streams.len());
            match kind {
                DATA => {
                    let k = k.ok_or_else(|| format!("data on stream {id}, not open"))?;
                    let s = &mut streams[k];
                    self.unacked += len as u32;
                    s.unacked += len as u32;
                    if flags & PADDED != 0 {
                        let pad = *payload.first().ok_or("a padded frame without its length")?;
                        if 1 + pad as usize > payload.len() {
                            return Err("a frame's padding exceeds it".into());
                        }
                        payload.advance(1);
                        payload.truncate(payload.len() - pad as usize);
                    }
                    for m in messages(&mut s.partial, payload)? {
                        message(k, s, m)?;
                    }
                    if self.unacked >= CONNECTION_WINDOW / 4 {
                        self.write.push_back(window_update(0, self.unacked));
                        self.unacked = 0;
                    }
                    if s.unacked >= STREAM_WINDOW / 4 {
                        self.write.push_back(window_update(s.id, s.unacked));
                        s.unacked = 0;
                    }
                    if flags & END_STREAM != 0 {
                        ended(&mut streams[k])?;
                    }
                }
                HEADERS if flags & END_STREAM != 0 => {
                    let k = k.ok_or_else(|| format!("trailers on stream {id}, not open"))?;
                    ended(&mut streams[k])?;
                }
                RST_STREAM => {
                    let code = payload
                        .get(..4)
                        .map_or(0, |c| u32::from_be_bytes(c.try_into().unwrap()));
                    return Err(format!("the server reset stream {id} (code {code})"));
                }
                SETTINGS if flags & ACK == 0 => {
                    for entry in payload.chunks_exact(6) {
                        let value = u32::from_be_bytes([entry[2], entry[3], entry[4], entry[5]]);
                        match u16::from_be_bytes([entry[0], entry[1]]) {
                            0x3 => self.max_streams = value as usize,
                            0x4 => {
                                let delta = value as i64 - self.stream_window;
                                self.stream_window = value as i64;
                                streams.iter_mut().for_each(|s| s.send_window += delta);
                            }
                            0x5 => self.max_frame = value as usize,
                            _ => {}
                        }
                    }
                    self.write
                        .push_back(Bytes::copy_from_slice(&header(0, SETTINGS, ACK, 0)));
                    settings = true;
                }
                PING if flags & ACK == 0 => {
                    let mut pong = BytesMut::with_capacity(9 + payload.len());
                    pong.put_slice(&header(payload.len(), PING, ACK, 0));
                    pong.put_slice(&payload);
                    self.write.push_back(pong.freeze());
                }
                GOAWAY => {
                    let code = payload
                        .get(4..8)
                        .map_or(0, |c| u32::from_be_bytes(c.try_into().unwrap()));
                    return Err(format!(
                        "the server ended the connection (GOAWAY, code {code})"
                    ));
                }
                WINDOW_UPDATE => {
                    let n = payload
                        .get(..4)
                        .map_or(0, |c| u32::from_be_bytes(c.try_into().unwrap()));
                    let n = (n & 0x7fff_ffff) as i64;
                    match k {
                        _ if id == 0 => self.send_window += n,
                        Some(k) => streams[k].send_window += n,
                        None => {}
                    }
                }
                // Response headers (not decoded), acknowledgements, priorities.
                _ => {}
            }
        }
        Ok(settings)
    }
}

/// The server ended stream `s`: only once this client had ended its side and had every reply.
fn ended(s: &mut Stream) -> Result<(), String> {
    s.ended = true;
    if !s.closed || !s.waiting.is_empty() {
        return Err(format!(
            "the server ended stream {} with {} requests unanswered (a refusal: its status is in the trailers, which this client does not decode)",
            s.id,
            s.waiting.len()
        ));
    }
    Ok(())
}

/// The whole gRPC messages that `payload` completes after the stream's `partial` bytes, each
/// without its 5-byte prefix; what is left stays in `partial`. A message that comes whole in one
/// frame is a slice of it, not a copy.
fn messages(partial: &mut BytesMut, mut payload: Bytes) -> Result<Vec<Bytes>, String> {
    let mut out = Vec::new();
    let whole = |b: &[u8]| -> Result<Option<usize>, String> {
        if b.len() < 5 {
            return Ok(None);
        }
        if b[0] != 0 {
            return Err("a compressed reply".into());
        }
        let n = u32::from_be_bytes([b[1], b[2], b[3], b[4]]) as usize;
        Ok((b.len() >= 5 + n).then_some(n))
    };
    if partial.is_empty() {
        while let Some(n) = whole(&payload)? {
            out.push(payload.slice(5..5 + n));
            payload.advance(5 + n);
        }
        partial.extend_from_slice(&payload);
    } else {
        partial.extend_from_slice(&payload);
        while let Some(n) = whole(partial)? {
            partial.advance(5);
            out.push(partial.split_to(n).freeze());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::h2load::tests as h2load_tests;
    use super::*;
    use batchcrypt::sha256::{Messages, Mode};
    use batchcrypt::{BackendChoice, Engine};
    use batchcrypt_serve::proto::HashReply;
    use prost::Message;
    use std::sync::Arc;

    /// A SHA256d request of `messages` packed at 64 bytes, framed.
    fn request(messages: &[u8]) -> Bytes {
        super::super::h2load::framed(&h2load_tests::request(messages, 64))
    }

    /// Closed and paced drives of several streams against a running server over one
    /// connection: every reply the library's digests of its client's messages, every request
    /// answered once, paced ones counted from when they were due; then a request the server
    /// refuses ends the drive with an error, not a hang.
    #[test]
    fn drives_get_the_library_digests_and_end_on_a_refusal() {
        let engine = Arc::new(Engine::with_backend(BackendChoice::Auto));
        let (data, config) = h2load_tests::server_config("wire");
        // Three clients' messages, of 1, 40 and 300 items (the last over 16 KiB: more than one
        // frame at the default frame size).
        let sizes = [1usize, 40, 300];
        let messages: Vec<Vec<u8>> = (sizes.iter().enumerate())
            .map(|(c, &n)| (0..64 * n).map(|i| ((i * 13 + c) % 251) as u8).collect())
            .collect();
        let expected: Vec<Vec<u8>> = (messages.iter())
            .map(|m| {
                let m = Messages::fixed(m, 64).unwrap();
                engine
                    .sha256()
                    .hash(&m, Mode::Double)
                    .unwrap()
                    .value
                    .concat()
            })
            .collect();
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            tokio::time::timeout(Duration::from_secs(60), async {
                let server = batchcrypt_serve::start(engine.clone(), config)
                    .await
                    .unwrap();
                let socket = server.unix_socket.clone().unwrap();
                let mut conn = Connection::unix(&socket).await.unwrap();
                // The check gives the client whose reply it was.
                let mut check = |c: usize, m: Bytes| -> Result<u64, String> {
                    let r = HashReply::decode(m).map_err(|e| e.to_string())?;
                    assert_eq!(r.packed_digests[..], expected[c][..], "client {c}");
                    assert!(r.batch_items >= sizes[c] as u64);
                    Ok(c as u64)
                };
                let loads = |start: Instant| -> Vec<Load> {
                    (0..3)
                        .map(|c| Load {
                            client: c,
                            request: request(&messages[c]),
                            start,
                        })
                        .collect()
                };
                let now = Instant::now();
                let until = now + Duration::from_secs(30);
                let closed = Pace::Closed { until };
                let answered = conn
                    .drive("HashStream", loads(now), closed, 4, &mut check)
                    .await
                    .unwrap();
                let mut per = [0; 3];
                answered.iter().for_each(|a| per[a.check as usize] += 1);
                assert_eq!(per, [4, 4, 4]);
                assert!(answered
                    .iter()
                    .all(|a| a.sent <= a.queued && a.queued <= a.done));
                // Paced: each stream's requests due 5 ms apart, sent whatever the replies.
                let start = Instant::now() + Duration::from_millis(5);
                let every = Pace::Every(Duration::from_millis(5));
                let answered = conn
                    .drive("HashStream", loads(start), every, 6, &mut check)
                    .await
                    .unwrap();
                assert_eq!(answered.len(), 18);
                for c in 0..3 {
                    let sent: Vec<Instant> = (answered.iter())
                        .filter(|a| a.check == c as u64)
                        .map(|a| a.sent)
                        .collect();
                    let due: Vec<Instant> = (0..6)
                        .map(|r| start + Duration::from_millis(5 * r))
                        .collect();
                    assert_eq!(sent, due, "client {c}");
                }
                assert!(answered
                    .iter()
                    .all(|a| a.sent <= a.queued && a.queued <= a.done));
                // Messages that do not fill their width: refused, and the stream ended with
                // requests unanswered is an error.
                let mut refused = Connection::unix(&socket).await.unwrap();
                let bad = vec![Load {
                    client: 0,
                    request: request(&[7; 100]),
                    start: Instant::now(),
                }];
                let why = refused
                    .drive("HashStream", bad, closed, 3, &mut check)
                    .await
                    .err()
                    .expect("refused");
                assert!(why.contains("requests unanswered"), "{why}");
                drop((conn, refused));
                server.shutdown().await.unwrap();
            })
            .await
            .expect("bounded")
        });
        let _ = std::fs::remove_dir_all(&data);
    }

    /// Replies cut anywhere across frames come out whole and in order.
    #[test]
    fn messages_are_taken_whole_across_frames() {
        let (a, b) = (request(&[1; 64]), request(&[2; 128]));
        let both = Bytes::from([&a[..], &b[..]].concat());
        for cut in 0..both.len() {
            let mut partial = BytesMut::new();
            let mut out = messages(&mut partial, both.slice(..cut)).unwrap();
            out.extend(messages(&mut partial, both.slice(cut..)).unwrap());
            assert_eq!(out, [a.slice(5..), b.slice(5..)], "cut at {cut}");
            assert!(partial.is_empty());
        }
        let mut compressed = BytesMut::from(&a[..]);
        compressed[0] = 1;
        assert!(messages(&mut BytesMut::new(), compressed.freeze()).is_err());
    }
}

//! A lean gRPC load generator: HTTP/2 through the `h2` crate, each client's request encoded once
//! and sent as the same bytes on every call, as gRPC load generators (h2load, ghz) do. The
//! server under test is the same tonic service; only the clients' own CPU differs from the
//! library's client ([`batchcrypt_serve::Client`]), whose every call encodes its request, hands it
//! to a task that writes the stream's body and decodes the reply through tonic's buffers. With the
//! clients in the server's process, on its cores, their CPU is taken from the server.

use bytes::{Buf, Bytes, BytesMut};
use std::net::SocketAddr;

/// One HTTP/2 connection to the service; clones share it (each opens streams of its own).
#[derive(Clone)]
pub struct H2Conn {
    send: h2::client::SendRequest<Bytes>,
}

impl H2Conn {
    /// Connects over TCP, with the service's HTTP/2 windows and frame size.
    pub async fn tcp(addr: SocketAddr) -> Result<H2Conn, String> {
        let io = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connecting to {addr}: {e}"))?;
        io.set_nodelay(true).map_err(|e| e.to_string())?;
        H2Conn::over(io).await
    }

    /// Connects over the service's Unix socket (`batchcrypt serve --unix-socket`).
    pub async fn unix(path: &std::path::Path) -> Result<H2Conn, String> {
        let io = tokio::net::UnixStream::connect(path)
            .await
            .map_err(|e| format!("connecting to {}: {e}", path.display()))?;
        H2Conn::over(io).await
    }

    async fn over<T>(io: T) -> Result<H2Conn, String>
    where
        T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        // Replies read through the buffer the library's client reads them through.
        let (send, connection) = h2::client::Builder::new()
            .initial_window_size(batchcrypt_serve::H2_STREAM_WINDOW)
            .initial_connection_window_size(batchcrypt_serve::H2_CONNECTION_WINDOW)
            .max_frame_size(batchcrypt_serve::H2_MAX_FRAME)
            .handshake(batchcrypt_serve::ReadBuffered::new(io))
            .await
            .map_err(|e| format!("HTTP/2 handshake: {e}"))?;
        // The connection's frames are read and written by a task of its own, on the thread that
        // made it.
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(H2Conn { send })
    }

    /// Opens a stream of the service's gRPC method `method` (`HashStream`).
    pub async fn open(&self, method: &str) -> Result<H2Stream, String> {
        use batchcrypt_serve::proto::batch_crypt_server::SERVICE_NAME;
        let path = format!("/{SERVICE_NAME}/{method}");
        let request = http::Request::builder()
            .method(http::Method::POST)
            .uri(format!("http://127.0.0.1{path}"))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(())
            .map_err(|e| e.to_string())?;
        let mut send = self.send.clone().ready().await.map_err(|e| e.to_string())?;
        let (response, stream) = send
            .send_request(request, false)
            .map_err(|e| format!("opening {path}: {e}"))?;
        Ok(H2Stream {
            send: H2Sender(stream),
            replies: H2Replies {
                response: Some(response),
                recv: None,
                buf: BytesMut::new(),
            },
        })
    }
}

/// A message framed as gRPC sends it: uncompressed, its length, its protobuf bytes.
pub fn framed(message: &impl prost::Message) -> Bytes {
    let len = message.encoded_len();
    let mut b = BytesMut::with_capacity(5 + len);
    b.extend_from_slice(&[0]);
    b.extend_from_slice(&(len as u32).to_be_bytes());
    message.encode(&mut b).expect("room reserved");
    b.freeze()
}

/// One gRPC stream: requests sent as framed bytes, replies read back as messages' bytes.
pub struct H2Stream {
    pub send: H2Sender,
    pub replies: H2Replies,
}

/// A stream's sending half.
pub struct H2Sender(h2::SendStream<Bytes>);

impl H2Sender {
    /// Sends one framed request ([`framed`]) without waiting for its reply.
    pub fn send(&mut self, request: Bytes) -> Result<(), String> {
        self.0
            .send_data(request, false)
            .map_err(|e| format!("sending: {e}"))
    }
}

/// A stream's replies.
pub struct H2Replies {
    response: Option<h2::client::ResponseFuture>,
    recv: Option<h2::RecvStream>,
    /// Reply bytes read and not yet a whole message.
    buf: BytesMut,
}

impl H2Replies {
    /// The next reply's protobuf bytes.
    pub async fn next(&mut self) -> Result<Bytes, String> {
        if let Some(response) = self.response.take() {
            let response = response.await.map_err(|e| format!("response: {e}"))?;
            if response.status() != http::StatusCode::OK {
                return Err(format!("HTTP status {}", response.status()));
            }
            self.recv = Some(response.into_body());
        }
        let recv = self.recv.as_mut().expect("the response came");
        loop {
            if let Some(message) = whole_message(&mut self.buf)? {
                return Ok(message);
            }
            let chunk = match recv.data().await {
                Some(chunk) => chunk.map_err(|e| format!("reading: {e}"))?,
                // The server ended the stream: its trailers carry the status.
                None => {
                    let trailers = recv.trailers().await.ok().flatten();
                    let status = trailers.as_ref().and_then(tonic::Status::from_header_map);
                    let why = status.map_or("no status".into(), |s| s.message().to_string());
                    return Err(format!("the stream ended: {why}"));
                }
            };
            let _ = recv.flow_control().release_capacity(chunk.len());
            // The common case, a whole message in one frame, taken without a copy.
            if self.buf.is_empty() {
                if let Some(message) = take_whole(&chunk) {
                    return Ok(message);
                }
            }
            self.buf.extend_from_slice(&chunk);
        }
    }
}

/// The message `chunk` is when it is exactly one uncompressed message, without a copy.
fn take_whole(chunk: &Bytes) -> Option<Bytes> {
    let len = message_len(chunk)?;
    (chunk[0] == 0 && chunk.len() == 5 + len).then(|| chunk.slice(5..))
}

/// The length a message's gRPC prefix names, once the prefix has come.
fn message_len(b: &[u8]) -> Option<usize> {
    (b.len() >= 5).then(|| u32::from_be_bytes([b[1], b[2], b[3], b[4]]) as usize)
}

/// Takes the first message out of `buf` once it is whole.
fn whole_message(buf: &mut BytesMut) -> Result<Option<Bytes>, String> {
    let Some(len) = message_len(buf) else {
        return Ok(None);
    };
    if buf[0] != 0 {
        return Err("a compressed reply".into());
    }
    if buf.len() < 5 + len {
        return Ok(None);
    }
    buf.advance(5);
    Ok(Some(buf.split_to(len).freeze()))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use batchcrypt::sha256::{Messages, Mode};
    use batchcrypt::{BackendChoice, Engine};
    use batchcrypt_serve::proto::{Column, HashAlgorithm, HashReply, HashRequest};
    use prost::Message;
    use std::sync::Arc;
    use std::time::Duration;

    /// A SHA256d request of `messages` packed at `width` bytes.
    pub(in crate::serve) fn request(messages: &[u8], width: u32) -> HashRequest {
        HashRequest {
            algorithm: HashAlgorithm::Sha256d as i32,
            messages: Vec::new(),
            messages_packed: Some(Column {
                data: Bytes::copy_from_slice(messages),
                width,
                ends: Vec::new(),
                shared: None,
            }),
            digests_to: None,
        }
    }

    /// A server's configuration on a free loopback port and a Unix socket in a fresh directory
    /// (named for `test`), and the directory.
    pub(in crate::serve) fn server_config(
        test: &str,
    ) -> (std::path::PathBuf, batchcrypt_serve::ServerConfig) {
        let data = std::env::temp_dir().join(format!("batchcrypt-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&data).unwrap();
        let mut config = batchcrypt_serve::ServerConfig::new(data.clone());
        config.listen = "127.0.0.1:0".parse().unwrap();
        config.unix_socket = Some(data.join("serve.sock"));
        // No metrics port: tests run at once, and the default port is one.
        config.metrics = None;
        (data, config)
    }

    /// The lean client against a running server, over TCP and over the Unix socket: the
    /// library's digests back on every call of a stream, and a request the server refuses ends
    /// the stream with the server's status.
    #[test]
    fn the_lean_client_gets_the_library_digests_and_the_servers_refusal() {
        let engine = Arc::new(Engine::with_backend(BackendChoice::Auto));
        let (data, config) = server_config("h2load");
        let messages: Vec<u8> = (0..64 * 40).map(|i| (i * 13 % 251) as u8).collect();
        let m = Messages::fixed(&messages, 64).unwrap();
        let expected: Vec<u8> = engine
            .sha256()
            .hash(&m, Mode::Double)
            .unwrap()
            .value
            .concat();
        let framed_request = framed(&request(&messages, 64));
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            tokio::time::timeout(Duration::from_secs(60), async {
                let server = batchcrypt_serve::start(engine.clone(), config)
                    .await
                    .unwrap();
                let socket = server.unix_socket.clone().unwrap();
                for conn in [
                    H2Conn::tcp(server.addr).await.unwrap(),
                    H2Conn::unix(&socket).await.unwrap(),
                ] {
                    let mut stream = conn.open("HashStream").await.unwrap();
                    // Two requests sent before either reply is read, then one more.
                    stream.send.send(framed_request.clone()).unwrap();
                    stream.send.send(framed_request.clone()).unwrap();
                    for _ in 0..2 {
                        let reply = stream.replies.next().await.unwrap();
                        let reply = HashReply::decode(reply).unwrap();
                        assert_eq!(reply.packed_digests[..], expected[..]);
                    }
                    stream.send.send(framed_request.clone()).unwrap();
                    let reply = HashReply::decode(stream.replies.next().await.unwrap()).unwrap();
                    assert_eq!(reply.packed_digests[..], expected[..]);
                    // Messages that do not fill their width: refused, and the stream ends with
                    // why.
                    stream
                        .send
                        .send(framed(&request(&messages[..100], 64)))
                        .unwrap();
                    let refused = stream.replies.next().await.unwrap_err();
                    assert!(
                        refused.ends_with("100 bytes are not a whole number of 64-byte items"),
                        "{refused}"
                    );
                }
                server.shutdown().await.unwrap();
            })
            .await
            .expect("bounded")
        });
        let _ = std::fs::remove_dir_all(&data);
    }

    /// Replies cut anywhere across frames come out whole and in order.
    #[test]
    fn messages_are_taken_whole_across_chunks() {
        let (a, b) = (
            framed(&request(&[1; 64], 64)),
            framed(&request(&[2; 128], 64)),
        );
        let both = [&a[..], &b[..]].concat();
        for cut in 0..both.len() {
            let mut buf = BytesMut::new();
            let mut out = Vec::new();
            for chunk in [&both[..cut], &both[cut..]] {
                buf.extend_from_slice(chunk);
                while let Some(m) = whole_message(&mut buf).unwrap() {
                    out.push(m);
                }
            }
            assert_eq!(out, [a.slice(5..), b.slice(5..)], "cut at {cut}");
            assert!(buf.is_empty());
        }
        assert_eq!(take_whole(&a), Some(a.slice(5..)));
        assert_eq!(take_whole(&Bytes::from(both)), None);
        let mut compressed = BytesMut::from(&a[..]);
        compressed[0] = 1;
        assert!(whole_message(&mut compressed).is_err());
    }
}

//! AES over a gRPC stream: the library's streaming encryptors run on a blocking thread between
//! a reader fed by the incoming messages and a writer that sends the reply's.
//!
//! GCM uses the chunked, authenticated format (docs/aes-file-format.md): decryption sends a
//! chunk's plaintext only after its tag checks, and a stream that ends early or was altered ends
//! with DATA_LOSS after the chunks that did check.

use crate::proto::{aes_request::Part, AesMode, AesReply, AesRequest};
use batchcrypt::aes::{stream, Key};
use batchcrypt::Engine;
use std::io::{Read, Write};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Status, Streaming};

/// Messages in flight each way: bounded, so a fast client cannot queue unbounded memory.
const DEPTH: usize = 8;

/// The largest GCM chunk a stream may use, either way (below the format's own limit): the
/// server holds one per stream.
pub const MAX_SERVED_CHUNK_LOG2: u8 = 26;

struct Incoming {
    rx: mpsc::Receiver<bytes::Bytes>,
    buf: bytes::Bytes,
    at: usize,
}

impl Read for Incoming {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.buf.len() {
            match self.rx.blocking_recv() {
                Some(b) => {
                    self.buf = b;
                    self.at = 0;
                }
                None => return Ok(0),
            }
        }
        let n = out.len().min(self.buf.len() - self.at);
        out[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

struct Outgoing(mpsc::Sender<Result<AesReply, Status>>);

impl Write for Outgoing {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.0
            .blocking_send(Ok(AesReply {
                data: bytes::Bytes::copy_from_slice(data),
            }))
            .map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client went away")
            })?;
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub async fn serve(
    engine: Arc<Engine>,
    mut requests: Streaming<AesRequest>,
) -> Result<ReceiverStream<Result<AesReply, Status>>, Status> {
    let start = match requests.message().await? {
        Some(AesRequest {
            part: Some(Part::Start(s)),
        }) => s,
        _ => {
            return Err(Status::invalid_argument(
                "the first message must be `start` (key, mode, direction)",
            ))
        }
    };
    let key = Key::new(&start.key).map_err(|e| Status::invalid_argument(e.to_string()))?;
    let mode = AesMode::try_from(start.mode)
        .map_err(|_| Status::invalid_argument(format!("no AES mode {}", start.mode)))?;
    let iv: Option<[u8; 16]> = match mode {
        AesMode::Ctr => Some(start.iv[..].try_into().map_err(|_| {
            Status::invalid_argument("CTR needs a 16-byte iv (the first counter block)")
        })?),
        AesMode::GcmChunked => None,
    };
    let chunk_log2 = match start.chunk_log2 {
        0 => stream::DEFAULT_CHUNK_LOG2,
        c if (stream::MIN_CHUNK_LOG2 as u32..=MAX_SERVED_CHUNK_LOG2 as u32).contains(&c) => c as u8,
        c => {
            return Err(Status::invalid_argument(format!(
                "chunk_log2 {c} is out of range: {} (4 KiB) to {MAX_SERVED_CHUNK_LOG2} (64 MiB), or 0 for {}",
                stream::MIN_CHUNK_LOG2,
                stream::DEFAULT_CHUNK_LOG2
            )))
        }
    };
    let (data_tx, data_rx) = mpsc::channel::<bytes::Bytes>(DEPTH);
    let (out_tx, out_rx) = mpsc::channel(DEPTH);
    let failed = out_tx.clone();
    tokio::spawn(async move {
        loop {
            match requests.message().await {
                Ok(Some(AesRequest {
                    part: Some(Part::Data(d)),
                })) => {
                    if data_tx.send(d).await.is_err() {
                        break;
                    }
                }
                Ok(None) => break, // the end of the input
                Ok(Some(_)) => {
                    let _ = failed
                        .send(Err(Status::invalid_argument(
                            "only the first message may be `start`",
                        )))
                        .await;
                    return;
                }
                Err(e) => {
                    let _ = failed.send(Err(e)).await;
                    return;
                }
            }
        }
    });
    tokio::task::spawn_blocking(move || {
        let input = Incoming {
            rx: data_rx,
            buf: bytes::Bytes::new(),
            at: 0,
        };
        let output = Outgoing(out_tx.clone());
        let aes = engine.aes();
        let done = match (iv, start.decrypt) {
            (Some(iv), _) => stream::ctr(&aes, &key, &iv, input, output, |_| {}),
            (None, false) => stream::seal(&aes, &key, chunk_log2, input, output, |_| {}),
            (None, true) => {
                stream::open_within(&aes, &key, MAX_SERVED_CHUNK_LOG2, input, output, |_| {})
            }
        };
        if let Err(e) = done {
            let status = match e {
                batchcrypt::Error::AuthenticationFailed => Status::data_loss(
                    "a chunk failed authentication: wrong key, or the data was altered",
                ),
                e @ batchcrypt::Error::InvalidInput(_) => Status::invalid_argument(e.to_string()),
                e => Status::data_loss(e.to_string()),
            };
            let _ = out_tx.blocking_send(Err(status));
        }
    });
    Ok(ReceiverStream::new(out_rx))
}

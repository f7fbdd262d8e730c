//! The wire format: frames of `type (1 byte) | length (4 bytes, little-endian) | payload`.
//!
//! - Hello (1): magic `BCPSI`, version (u16 LE), suite (u8 length + bytes), tag (u16 length +
//!   bytes), item count (u64 LE).
//! - Points (2): 33-byte SEC1-compressed points.
//! - Tags (3): 16-byte tags.
//! - Error (4): a UTF-8 message; the sender stops after it.

use super::{Tag, TAG_BYTES};
use crate::error::{Error, Result};
use crate::sm2::Compressed;
use std::io::{Read, Write};

const MAGIC: &[u8; 5] = b"BCPSI";
/// Items per Points or Tags frame at most (a frame is at most 33 MiB).
pub const MAX_ITEMS_PER_FRAME: usize = 1 << 20;
const MAX_FRAME: usize = 33 * MAX_ITEMS_PER_FRAME;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello {
    pub version: u16,
    pub suite: String,
    pub dst: Vec<u8>,
    pub count: u64,
}

impl Hello {
    /// Whether the peer's handshake is compatible with ours; a clear error if not.
    pub fn check_peer(&self, peer: &Hello) -> Result<()> {
        if peer.version != self.version {
            return Err(Error::invalid(format!("the peer speaks PSI protocol version {}, this side {}: run the same batchcrypt version on both sides", peer.version, self.version)));
        }
        if peer.suite != self.suite || peer.dst != self.dst {
            return Err(Error::invalid(format!(
                "the peer hashes with suite {} and tag {:?}, this side with {} and {:?}: both must use the same",
                peer.suite,
                String::from_utf8_lossy(&peer.dst),
                self.suite,
                String::from_utf8_lossy(&self.dst)
            )));
        }
        if peer.count == 0 {
            return Err(Error::invalid("the peer's set is empty"));
        }
        Ok(())
    }
}

pub enum Frame {
    Hello(Hello),
    Points(Vec<Compressed>),
    Tags(Vec<Tag>),
    Error(String),
}

impl Frame {
    pub fn name(&self) -> &'static str {
        match self {
            Frame::Hello(_) => "handshake",
            Frame::Points(_) => "points",
            Frame::Tags(_) => "tags",
            Frame::Error(_) => "error",
        }
    }
}

pub fn encode(f: &Frame) -> Vec<u8> {
    let (ty, payload): (u8, Vec<u8>) = match f {
        Frame::Hello(h) => {
            let mut p = MAGIC.to_vec();
            p.extend_from_slice(&h.version.to_le_bytes());
            p.push(h.suite.len() as u8);
            p.extend_from_slice(h.suite.as_bytes());
            p.extend_from_slice(&(h.dst.len() as u16).to_le_bytes());
            p.extend_from_slice(&h.dst);
            p.extend_from_slice(&h.count.to_le_bytes());
            (1, p)
        }
        Frame::Points(v) => (2, v.as_flattened().to_vec()),
        Frame::Tags(v) => (3, v.as_flattened().to_vec()),
        Frame::Error(m) => (4, m.as_bytes().to_vec()),
    };
    let mut out = Vec::with_capacity(5 + payload.len());
    out.push(ty);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&payload);
    out
}

pub fn write_frame(w: &mut impl Write, f: &Frame) -> Result<()> {
    w.write_all(&encode(f))
        .and_then(|_| w.flush())
        .map_err(|e| Error::invalid(format!("network: sending {}: {e}", f.name())))
}

fn malformed(msg: impl std::fmt::Display) -> Error {
    Error::invalid(format!("malformed message from the peer: {msg}"))
}

pub fn read_frame(r: &mut impl Read) -> Result<Frame> {
    let mut head = [0u8; 5];
    r.read_exact(&mut head).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => Error::invalid("the peer closed the connection"),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
            Error::invalid("the peer sent nothing within the timeout")
        }
        _ => Error::invalid(format!("network: {e}")),
    })?;
    let len = u32::from_le_bytes(head[1..].try_into().unwrap()) as usize;
    if len > MAX_FRAME {
        return Err(malformed(format!("a frame of {len} bytes")));
    }
    let mut p = vec![0u8; len];
    r.read_exact(&mut p)
        .map_err(|e| Error::invalid(format!("the connection broke inside a message: {e}")))?;
    let fixed = |size: usize| -> Result<()> {
        len.is_multiple_of(size)
            .then_some(())
            .ok_or_else(|| malformed(format!("{len} bytes are not whole items of {size}")))
    };
    Ok(match head[0] {
        1 => Frame::Hello(
            parse_hello(&p)
                .ok_or_else(|| malformed("a bad handshake (not a batchcrypt PSI peer?)"))?,
        ),
        2 => {
            fixed(33)?;
            Frame::Points(p.chunks_exact(33).map(|c| c.try_into().unwrap()).collect())
        }
        3 => {
            fixed(TAG_BYTES)?;
            Frame::Tags(
                p.chunks_exact(TAG_BYTES)
                    .map(|c| c.try_into().unwrap())
                    .collect(),
            )
        }
        4 => Frame::Error(String::from_utf8_lossy(&p).into_owned()),
        t => return Err(malformed(format!("unknown frame type {t}"))),
    })
}

fn parse_hello(p: &[u8]) -> Option<Hello> {
    let rest = p.strip_prefix(MAGIC)?;
    let version = u16::from_le_bytes(rest.get(..2)?.try_into().ok()?);
    let sl = *rest.get(2)? as usize;
    let suite = String::from_utf8(rest.get(3..3 + sl)?.to_vec()).ok()?;
    let rest = &rest[3 + sl..];
    let dl = u16::from_le_bytes(rest.get(..2)?.try_into().ok()?) as usize;
    let dst = rest.get(2..2 + dl)?.to_vec();
    let rest = &rest[2 + dl..];
    let count = u64::from_le_bytes(rest.get(..8)?.try_into().ok()?);
    (rest.len() == 8).then_some(Hello {
        version,
        suite,
        dst,
        count,
    })
}

/// Sends queued frames until both queues are closed and empty; tags first when both have some.
pub fn writer(
    stream: &std::net::TcpStream,
    points: crossbeam_channel::Receiver<Vec<u8>>,
    tags: crossbeam_channel::Receiver<Vec<u8>>,
) -> Result<()> {
    let mut w = std::io::BufWriter::with_capacity(1 << 20, stream);
    let (mut points_open, mut tags_open) = (true, true);
    let io = |e: std::io::Error| Error::invalid(format!("network: sending: {e}"));
    while points_open || tags_open {
        let frame = if let Ok(t) = tags.try_recv() {
            Some(t)
        } else {
            let mut sel = crossbeam_channel::Select::new();
            let pi = points_open.then(|| sel.recv(&points));
            let ti = tags_open.then(|| sel.recv(&tags));
            let op = sel.select();
            let i = op.index();
            if Some(i) == pi {
                op.recv(&points).map_err(|_| points_open = false).ok()
            } else {
                debug_assert_eq!(Some(i), ti);
                op.recv(&tags).map_err(|_| tags_open = false).ok()
            }
        };
        if let Some(f) = frame {
            w.write_all(&f).map_err(io)?;
            // Push it out when nothing else is waiting, so the peer is never left waiting on a buffer.
            if points.is_empty() && tags.is_empty() {
                w.flush().map_err(io)?;
            }
        }
    }
    w.flush().map_err(io)
}

//! ECDH-PSI over SM2: two parties learn the intersection of their sets and nothing else about
//! each other's items (semi-honest model). See docs/psi.md for the protocol, its assumptions and
//! what each party learns.
//!
//! Each party holds a secret scalar `a` (fresh per run) and, over one TCP connection, both at once:
//! 1. sends `a·H(x)` for each own item `x`, compressed, in file order (`H` = [`crate::sm2::SUITE`]);
//! 2. receives the peer's `b·H(y)`, multiplies by `a` and sends back a 16-byte tag of `a·b·H(y)`
//!    per point, in the order received;
//! 3. receives the tags of its own items, `b·a·H(x)`, and reports the items whose tag is among
//!    the tags it computed for the peer's items.
//!
//! Items stream in chunks: memory is 16 bytes per item of both sets (tags), plus the chunks in
//! flight and, at the end, an index of the peer's tags (at most 32 MiB). The hashing and
//! multiplications run through a [`Multiplier`]: this process's [`Engine`], so each side picks
//! its own backend (GPU or CPU), or a service that owns the machine's GPUs.

mod items;
pub mod wire;

pub use items::{Chunk, ItemFile};

use crate::error::{Error, Result};
use crate::sm2::{Compressed, DEFAULT_DST, N, SUITE};
use crate::Engine;
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};
use wire::Frame;

/// The protocol version spoken; a peer with another version is refused at the handshake.
pub const PROTOCOL_VERSION: u16 = 1;

/// Bytes of a double-blinded point kept for comparison: the first 16 bytes of its x-coordinate.
/// Two different points share a tag with probability about 2^-128 per pair.
pub const TAG_BYTES: usize = 16;
pub type Tag = [u8; TAG_BYTES];

/// Options of one run; both parties must use the same tag `dst`.
#[derive(Clone, Debug)]
pub struct Config {
    /// Items per message (and per GPU batch).
    pub chunk: usize,
    /// Domain separation tag of the hash to the curve.
    pub dst: Vec<u8>,
    /// How long to wait for the peer's next message before giving up.
    pub timeout: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            chunk: 1 << 18,
            dst: DEFAULT_DST.to_vec(),
            timeout: Duration::from_secs(300),
        }
    }
}

/// A party's two multiplications by its secret key, wherever they run.
pub trait Multiplier: Sync {
    /// `key·H(m)` for each item (the suite's hash to the curve with `dst`), compressed.
    fn hash_to_curve_mul(
        &self,
        key: &[u8; 32],
        items: &[&[u8]],
        dst: &[u8],
    ) -> Result<Vec<Compressed>>;
    /// `key·P` for each compressed point; None where `P` is not a point of the curve.
    fn mul_compressed(
        &self,
        key: &[u8; 32],
        points: &[Compressed],
    ) -> Result<Vec<Option<Compressed>>>;
}

impl Multiplier for Engine {
    fn hash_to_curve_mul(
        &self,
        key: &[u8; 32],
        items: &[&[u8]],
        dst: &[u8],
    ) -> Result<Vec<Compressed>> {
        Ok(self.sm2().hash_to_curve_mul(key, items, dst)?.value)
    }
    fn mul_compressed(
        &self,
        key: &[u8; 32],
        points: &[Compressed],
    ) -> Result<Vec<Option<Compressed>>> {
        Ok(self.sm2().mul_compressed(key, points)?.value)
    }
}

/// Progress of a run, for progress bars: items done out of a total per stage.
pub trait Progress: Sync {
    fn update(&self, stage: Stage, done: u64, total: u64);
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Own items hashed, blinded and sent.
    BlindOwn,
    /// Peer's points blinded again and their tags sent back.
    BlindPeer,
    /// Tags of own items received from the peer.
    ReceiveTags,
}

/// No progress reporting.
pub struct Quiet;
impl Progress for Quiet {
    fn update(&self, _: Stage, _: u64, _: u64) {}
}

/// What a run found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub own_count: u64,
    pub peer_count: u64,
    /// 0-based positions (file order) of the own items in the intersection, ascending.
    pub matched: Vec<u64>,
}

/// Connects to the peer at `addr`, retrying until `timeout` (the peer may start later);
/// `waiting` is told of the first refusal, for a message.
pub fn connect(
    addr: &str,
    timeout: Duration,
    mut waiting: impl FnMut(&std::io::Error),
) -> Result<TcpStream> {
    let start = Instant::now();
    let mut told = false;
    loop {
        match TcpStream::connect(addr) {
            Ok(s) => return Ok(s),
            Err(e) if start.elapsed() < timeout => {
                if !told {
                    waiting(&e);
                    told = true;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => {
                return Err(Error::invalid(format!(
                    "cannot connect to the peer at {addr} within {} s: {e}",
                    timeout.as_secs_f64()
                )))
            }
        }
    }
}

/// Waits at most `timeout` for the peer to connect to `listener`.
pub fn accept(listener: &TcpListener, timeout: Duration) -> Result<TcpStream> {
    let net = |e: std::io::Error| Error::invalid(format!("waiting for the peer: {e}"));
    listener.set_nonblocking(true).map_err(net)?;
    let start = Instant::now();
    loop {
        match listener.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false).map_err(net)?;
                return Ok(s);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if start.elapsed() >= timeout {
                    return Err(Error::invalid(format!(
                        "no peer connected within {} s",
                        timeout.as_secs_f64()
                    )));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(net(e)),
        }
    }
}

/// A fresh secret scalar in [1, n).
pub fn random_key() -> [u8; 32] {
    use rand::RngCore;
    loop {
        let mut k = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut k);
        if k < N && k != [0; 32] {
            return k;
        }
    }
}

/// Runs one party over a connected socket with a fresh random key.
pub fn run(
    stream: TcpStream,
    items: &ItemFile,
    engine: &dyn Multiplier,
    cfg: &Config,
    progress: &dyn Progress,
) -> Result<Outcome> {
    run_with_key(stream, items, engine, cfg, progress, &random_key())
}

/// As [`run`] with a given key (tests; a real run must use a fresh random key).
pub fn run_with_key(
    stream: TcpStream,
    items: &ItemFile,
    engine: &dyn Multiplier,
    cfg: &Config,
    progress: &dyn Progress,
    key: &[u8; 32],
) -> Result<Outcome> {
    if cfg.chunk == 0 || cfg.chunk > wire::MAX_ITEMS_PER_FRAME {
        return Err(Error::invalid(format!(
            "chunk size must be in 1..={}",
            wire::MAX_ITEMS_PER_FRAME
        )));
    }
    if *key >= N || *key == [0; 32] {
        return Err(Error::invalid("the secret key must be in [1, n)"));
    }
    stream
        .set_read_timeout(Some(cfg.timeout))
        .map_err(net("set timeout"))?;
    stream.set_nodelay(true).map_err(net("set nodelay"))?;
    let mut reader = std::io::BufReader::with_capacity(
        1 << 20,
        stream.try_clone().map_err(net("clone socket"))?,
    );
    let own_count = items.count();

    // Handshake: both send, then both check.
    let hello = wire::Hello {
        version: PROTOCOL_VERSION,
        suite: SUITE.into(),
        dst: cfg.dst.clone(),
        count: own_count,
    };
    wire::write_frame(&mut &stream, &Frame::Hello(hello.clone()))?;
    let peer = match wire::read_frame(&mut reader)? {
        Frame::Hello(h) => h,
        Frame::Error(msg) => return Err(peer_error(&msg)),
        other => {
            return Err(protocol(format!(
                "expected a handshake, got {}",
                other.name()
            )))
        }
    };
    if let Err(e) = hello.check_peer(&peer) {
        let _ = wire::write_frame(&mut &stream, &Frame::Error(e.to_string()));
        return Err(e);
    }
    let peer_count = peer.count;

    // One writer thread sends everything, so the reader (this thread) never waits on the socket's
    // send side: that is what keeps two parties that both send and receive from deadlocking.
    // Own points come through a small bounded queue (the blinder waits for the network); tags
    // through an unbounded one (this thread must keep reading).
    let (points_tx, points_rx) = crossbeam_channel::bounded::<Vec<u8>>(2);
    let (tags_tx, tags_rx) = crossbeam_channel::unbounded::<Vec<u8>>();
    let result = std::thread::scope(|s| -> Result<Outcome> {
        let writer = s.spawn(|| wire::writer(&stream, points_rx, tags_rx));
        let blinder = s.spawn(|| -> Result<()> {
            let mut done = 0u64;
            items.for_each_chunk(cfg.chunk, |chunk| {
                let blinded = engine.hash_to_curve_mul(key, &chunk.items(), &cfg.dst)?;
                points_tx
                    .send(wire::encode(&Frame::Points(blinded)))
                    .map_err(|_| Error::invalid("connection closed while sending points"))?;
                done += chunk.len() as u64;
                progress.update(Stage::BlindOwn, done, own_count);
                Ok(())
            })?;
            drop(points_tx);
            Ok(())
        });
        let received = receive(
            &mut reader,
            engine,
            key,
            own_count,
            peer_count,
            &tags_tx,
            progress,
        );
        drop(tags_tx);
        if received.is_err() {
            // Unblock our own threads: closing the socket fails the writer and the peer's reads.
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
        let blinded = blinder
            .join()
            .map_err(|_| Error::invalid("the blinding thread panicked"))?;
        let written = writer
            .join()
            .map_err(|_| Error::invalid("the writer thread panicked"))?;
        let (own_tags, mut peer_tags) = received?;
        blinded?;
        written?;
        let matched = matches(&own_tags, &mut peer_tags);
        Ok(Outcome {
            own_count,
            peer_count,
            matched,
        })
    });
    if let Err(e) = &result {
        let _ = wire::write_frame(&mut &stream, &Frame::Error(e.to_string()));
    }
    result
}

/// The reading side: blinds the peer's points as they arrive (sending their tags back) and
/// collects the tags of own items. Returns (own tags in file order, peer tags).
fn receive(
    reader: &mut impl std::io::Read,
    engine: &dyn Multiplier,
    key: &[u8; 32],
    own_count: u64,
    peer_count: u64,
    tags_tx: &crossbeam_channel::Sender<Vec<u8>>,
    progress: &dyn Progress,
) -> Result<(Vec<Tag>, Vec<Tag>)> {
    let mut own_tags: Vec<Tag> = Vec::with_capacity(own_count as usize);
    // The peer's count is only its claim: reserve for one frame at most, grow as points arrive.
    let mut peer_tags: Vec<Tag> =
        Vec::with_capacity(peer_count.min(wire::MAX_ITEMS_PER_FRAME as u64) as usize);
    while (own_tags.len() as u64) < own_count || (peer_tags.len() as u64) < peer_count {
        let frame = wire::read_frame(reader).map_err(|e| {
            protocol(format!(
                "{e} (after {} of {peer_count} peer points and {} of {own_count} tags)",
                peer_tags.len(),
                own_tags.len()
            ))
        })?;
        match frame {
            Frame::Points(points) => {
                if peer_tags.len() as u64 + points.len() as u64 > peer_count {
                    return Err(protocol(format!(
                        "the peer sent more than the {peer_count} points it announced"
                    )));
                }
                let blinded = engine.mul_compressed(key, &points)?;
                let mut tags = Vec::with_capacity(blinded.len());
                for (i, b) in blinded.iter().enumerate() {
                    let b: &Compressed = b.as_ref().ok_or_else(|| {
                        protocol(format!(
                            "the peer's point {} is not on the curve",
                            peer_tags.len() + i
                        ))
                    })?;
                    tags.push(tag(b));
                }
                peer_tags.extend_from_slice(&tags);
                let _ = tags_tx.send(wire::encode(&Frame::Tags(tags)));
                progress.update(Stage::BlindPeer, peer_tags.len() as u64, peer_count);
            }
            Frame::Tags(tags) => {
                if own_tags.len() as u64 + tags.len() as u64 > own_count {
                    return Err(protocol(format!(
                        "the peer sent more than the {own_count} tags of our items"
                    )));
                }
                own_tags.extend_from_slice(&tags);
                progress.update(Stage::ReceiveTags, own_tags.len() as u64, own_count);
            }
            Frame::Error(msg) => return Err(peer_error(&msg)),
            Frame::Hello(_) => return Err(protocol("a second handshake".into())),
        }
    }
    Ok((own_tags, peer_tags))
}

/// The positions of `own` tags that are among `peer`'s, ascending (`peer` is sorted in place).
/// The sorted peer tags are indexed by their top bits (two to four tags a bucket: tags are bits
/// of the x-coordinates of points no party chooses), so a lookup reads an index entry and a
/// bucket of a few tags, on every core. A binary search over all the peer's tags per own tag
/// missed the cache at most of its steps, on one core: most of a run's time at 10^7 items a side.
/// Tags a peer made to share a prefix still work, by a binary search within their bucket.
fn matches(own: &[Tag], peer: &mut [Tag]) -> Vec<u64> {
    use rayon::prelude::*;
    peer.par_sort_unstable();
    // The index: at most 2^22 entries (32 MiB).
    let bits = (usize::BITS - peer.len().leading_zeros())
        .saturating_sub(2)
        .clamp(1, 22);
    let bucket = |t: &Tag| (u64::from_be_bytes(t[..8].try_into().unwrap()) >> (64 - bits)) as usize;
    // starts[b]..starts[b + 1]: the sorted peer tags of bucket b.
    let mut starts = vec![0usize; (1 << bits) + 1];
    for t in peer.iter() {
        starts[bucket(t) + 1] += 1;
    }
    for b in 1..starts.len() {
        starts[b] += starts[b - 1];
    }
    own.par_iter()
        .enumerate()
        .filter(|(_, t)| {
            let b = bucket(t);
            peer[starts[b]..starts[b + 1]].binary_search(t).is_ok()
        })
        .map(|(i, _)| i as u64)
        .collect()
}

fn tag(p: &Compressed) -> Tag {
    p[1..1 + TAG_BYTES].try_into().unwrap()
}

fn net(what: &'static str) -> impl Fn(std::io::Error) -> Error {
    move |e| Error::invalid(format!("network ({what}): {e}"))
}

fn protocol(msg: String) -> Error {
    Error::invalid(format!("PSI protocol: {msg}"))
}

fn peer_error(msg: &str) -> Error {
    Error::invalid(format!("the peer stopped with an error: {msg}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(seed: u64, n: usize) -> Vec<Tag> {
        (0..n as u64)
            .map(|i| {
                crate::sha256::digest(&(seed << 32 | i).to_le_bytes())[..TAG_BYTES]
                    .try_into()
                    .unwrap()
            })
            .collect()
    }

    fn naive(own: &[Tag], peer: &[Tag]) -> Vec<u64> {
        let set: std::collections::HashSet<&Tag> = peer.iter().collect();
        (0..own.len() as u64)
            .filter(|&i| set.contains(&own[i as usize]))
            .collect()
    }

    /// The indexed lookup finds what a set finds: random tags, a peer set sharing some, tags a
    /// peer made to share their top bits (one bucket holds them all), no peer tags, one.
    #[test]
    fn matches_agree_with_a_set() {
        let own = tags(1, 5_000);
        let mut peer = tags(2, 7_000);
        peer.extend(own.iter().step_by(3).copied());
        let mut clustered: Vec<Tag> = peer
            .iter()
            .map(|t| {
                let mut c = *t;
                c[..9].fill(0xab);
                c
            })
            .collect();
        let mut own_clustered = own.clone();
        for t in own_clustered.iter_mut().step_by(2) {
            t[..9].fill(0xab);
        }
        clustered.extend(own_clustered.iter().skip(1).step_by(4).copied());
        for (own, peer) in [
            (own.clone(), peer),
            (own_clustered, clustered),
            (own.clone(), vec![]),
            (own.clone(), vec![own[17]]),
        ] {
            let want = naive(&own, &peer);
            let mut p = peer.clone();
            assert_eq!(matches(&own, &mut p), want);
        }
        assert_eq!(matches(&own, &mut tags(1, 5_000)).len(), 5_000);
    }
}

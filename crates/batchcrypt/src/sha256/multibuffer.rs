//! Drives any `Compressor<L>` over a batch: pads each message, feeds L messages at a time through
//! the lanes, captures each lane's state when its message ends, and applies the second hash of
//! SHA256d. The per-backend code is only the compression function.

use super::{Compressor, Digest, Messages, IV};

/// A message seen as its whole 64-byte blocks followed by one or two padding blocks.
pub(crate) struct Padded<'a> {
    body: &'a [u8],
    tail: [u8; 128],
    body_blocks: usize,
    blocks: usize,
}

impl<'a> Padded<'a> {
    pub(crate) fn new(msg: &'a [u8]) -> Self {
        let body_blocks = msg.len() / 64;
        let rest = &msg[body_blocks * 64..];
        let mut tail = [0u8; 128];
        tail[..rest.len()].copy_from_slice(rest);
        tail[rest.len()] = 0x80;
        // The 64-bit length needs 8 bytes after the 0x80 marker; otherwise a second tail block.
        let tail_blocks = if rest.len() + 9 <= 64 { 1 } else { 2 };
        let bits = (msg.len() as u64).wrapping_mul(8);
        tail[tail_blocks * 64 - 8..tail_blocks * 64].copy_from_slice(&bits.to_be_bytes());
        Padded { body: msg, tail, body_blocks, blocks: body_blocks + tail_blocks }
    }

    pub(crate) fn blocks(&self) -> usize {
        self.blocks
    }

    pub(crate) fn block(&self, i: usize) -> &[u8; 64] {
        let bytes = if i < self.body_blocks { &self.body[i * 64..i * 64 + 64] } else { &self.tail[(i - self.body_blocks) * 64..][..64] };
        bytes.try_into().unwrap()
    }
}

/// The single block of the second hash of SHA256d: a 32-byte digest plus padding for 256 bits.
pub(crate) fn digest_block(d: &Digest) -> [u8; 64] {
    let mut b = [0u8; 64];
    b[..32].copy_from_slice(d);
    b[32] = 0x80;
    b[62] = 0x01; // 256 bits, big-endian
    b
}

fn store<const L: usize>(state: &[[u32; L]; 8], lane: usize) -> Digest {
    let mut d = [0u8; 32];
    for (w, chunk) in d.chunks_exact_mut(4).enumerate() {
        chunk.copy_from_slice(&state[w][lane].to_be_bytes());
    }
    d
}

const ZERO_BLOCK: [u8; 64] = [0; 64];

/// Hashes messages `first..first + out.len()` of `msgs` into `out`.
pub(crate) fn hash_range<const L: usize, C: Compressor<L>>(c: &C, msgs: &Messages<'_>, first: usize, out: &mut [Digest], double: bool) {
    let n = out.len();
    // Lanes run in lock-step, so variable lengths are grouped by size to waste few lane-blocks.
    let mut order: Vec<usize> = (0..n).collect();
    if !msgs.fixed_len() && L > 1 {
        order.sort_by_key(|&i| msgs.get(first + i).len());
    }
    for group in order.chunks(L) {
        let padded: Vec<Padded<'_>> = group.iter().map(|&i| Padded::new(msgs.get(first + i))).collect();
        let max_blocks = padded.iter().map(Padded::blocks).max().unwrap_or(0);
        let mut state = IV.map(|w| [w; L]);
        let mut digests = [[0u8; 32]; L];
        for b in 0..max_blocks {
            let blocks: [&[u8; 64]; L] = std::array::from_fn(|l| match padded.get(l) {
                Some(p) if b < p.blocks() => p.block(b),
                _ => &ZERO_BLOCK,
            });
            c.compress(&mut state, &blocks);
            for (l, p) in padded.iter().enumerate() {
                if p.blocks() == b + 1 {
                    digests[l] = store(&state, l);
                }
            }
        }
        if double {
            let second: Vec<[u8; 64]> = digests.iter().map(digest_block).collect();
            let mut state = IV.map(|w| [w; L]);
            let blocks: [&[u8; 64]; L] = std::array::from_fn(|l| &second[l]);
            c.compress(&mut state, &blocks);
            for l in 0..group.len() {
                digests[l] = store(&state, l);
            }
        }
        for (l, &i) in group.iter().enumerate() {
            out[i] = digests[l];
        }
    }
}

/// One message through a one-lane compressor, without allocating (the single-message API).
pub(crate) fn hash_one<C: Compressor<1>>(c: &C, msg: &[u8], double: bool) -> Digest {
    let p = Padded::new(msg);
    let mut state = IV.map(|w| [w]);
    for b in 0..p.blocks() {
        c.compress(&mut state, &[p.block(b)]);
    }
    let mut d = store(&state, 0);
    if double {
        let block = digest_block(&d);
        let mut state = IV.map(|w| [w]);
        c.compress(&mut state, &[&block]);
        d = store(&state, 0);
    }
    d
}

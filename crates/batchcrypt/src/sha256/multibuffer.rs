//! Drives any `Compressor<L>` over a batch: pads each message, feeds L messages at a time through
//! the lanes, captures each lane's state when its message ends, and applies the second hash of
//! SHA256d. The per-backend code is only the compression function.

use super::{pad_block, schedule_plus_k, Compressor, Digest, Messages, IV, PAD64_KW};

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
        Padded {
            body: msg,
            tail,
            body_blocks,
            blocks: body_blocks + tail_blocks,
        }
    }

    /// The blocks of `rest`, the last `rest.len()` bytes of a message of `total_len` bytes
    /// (whose earlier bytes are whole blocks), padded for that length.
    pub(crate) fn tail_only(rest: &'a [u8], total_len: usize) -> Self {
        let mut p = Padded::new(rest);
        let end = (p.blocks - p.body_blocks) * 64;
        p.tail[end - 8..end].copy_from_slice(&((total_len as u64) * 8).to_be_bytes());
        p
    }

    pub(crate) fn blocks(&self) -> usize {
        self.blocks
    }

    pub(crate) fn block(&self, i: usize) -> &[u8; 64] {
        let bytes = if i < self.body_blocks {
            &self.body[i * 64..i * 64 + 64]
        } else {
            &self.tail[(i - self.body_blocks) * 64..][..64]
        };
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
pub(crate) fn hash_range<const L: usize, C: Compressor<L>>(
    c: &C,
    msgs: &Messages<'_>,
    first: usize,
    out: &mut [Digest],
    double: bool,
) {
    match *msgs {
        Messages::Fixed { len, .. } => hash_fixed(c, msgs, len, first, out, double),
        Messages::Var { .. } => hash_var(c, msgs, first, out, double),
    }
}

/// Second hash of SHA256d for every lane, then the digests out.
fn finish<const L: usize, C: Compressor<L> + ?Sized>(
    c: &C,
    digests: &mut [Digest; L],
    double: bool,
) {
    if double {
        let second: [[u8; 64]; L] = std::array::from_fn(|l| digest_block(&digests[l]));
        let mut state = IV.map(|w| [w; L]);
        c.compress(&mut state, &std::array::from_fn(|l| &second[l]));
        *digests = std::array::from_fn(|l| store(&state, l));
    }
}

/// Equal lengths: whole groups of `L` messages through `hash_lanes`; the shared padding schedule
/// is computed once per call.
fn hash_fixed<const L: usize, C: Compressor<L>>(
    c: &C,
    msgs: &Messages<'_>,
    len: usize,
    first: usize,
    out: &mut [Digest],
    double: bool,
) {
    let pad_kw = len.is_multiple_of(64).then(|| {
        if len == 64 {
            PAD64_KW
        } else {
            schedule_plus_k(&pad_block(len as u64))
        }
    });
    let filler = vec![0u8; len]; // stands in for missing messages in the last group
    for (g, chunk) in out.chunks_mut(L).enumerate() {
        let data: [&[u8]; L] = std::array::from_fn(|l| {
            if l < chunk.len() {
                msgs.get(first + g * L + l)
            } else {
                &filler
            }
        });
        let digests = c.hash_lanes(&data, len, pad_kw.as_ref(), double);
        chunk.copy_from_slice(&digests[..chunk.len()]);
    }
}

/// `Compressor::hash_lanes` from the block-level methods.
pub(crate) fn hash_lanes_generic<const L: usize, C: Compressor<L> + ?Sized>(
    c: &C,
    data: &[&[u8]; L],
    len: usize,
    pad_kw: Option<&[u32; 64]>,
    double: bool,
) -> [Digest; L] {
    let body = len / 64;
    let mut state = IV.map(|w| [w; L]);
    if body > 0 {
        c.compress_run(&mut state, data, body);
    }
    match pad_kw {
        Some(kw) => c.compress_shared(&mut state, kw),
        None => {
            let tails: [Padded<'_>; L] =
                std::array::from_fn(|l| Padded::tail_only(&data[l][64 * body..], len));
            for b in 0..tails[0].blocks() {
                c.compress(&mut state, &std::array::from_fn(|l| tails[l].block(b)));
            }
        }
    }
    let mut digests: [Digest; L] = std::array::from_fn(|l| store(&state, l));
    finish(c, &mut digests, double);
    digests
}

/// Any lengths: lanes run in lock-step, so messages are grouped by size to waste few lane-blocks,
/// and each lane's state is captured when its message ends.
fn hash_var<const L: usize, C: Compressor<L>>(
    c: &C,
    msgs: &Messages<'_>,
    first: usize,
    out: &mut [Digest],
    double: bool,
) {
    let mut order: Vec<usize> = (0..out.len()).collect();
    if L > 1 {
        order.sort_by_key(|&i| msgs.get(first + i).len());
    }
    for group in order.chunks(L) {
        let padded: [Padded<'_>; L] = std::array::from_fn(|l| {
            Padded::new(group.get(l).map(|&i| msgs.get(first + i)).unwrap_or(&[]))
        });
        let max_blocks = padded
            .iter()
            .take(group.len())
            .map(Padded::blocks)
            .max()
            .unwrap_or(0);
        let mut state = IV.map(|w| [w; L]);
        let mut digests = [[0u8; 32]; L];
        for b in 0..max_blocks {
            let blocks: [&[u8; 64]; L] = std::array::from_fn(|l| {
                if b < padded[l].blocks() {
                    padded[l].block(b)
                } else {
                    &ZERO_BLOCK
                }
            });
            c.compress(&mut state, &blocks);
            for (l, p) in padded.iter().enumerate() {
                if p.blocks() == b + 1 {
                    digests[l] = store(&state, l);
                }
            }
        }
        finish(c, &mut digests, double);
        for (l, &i) in group.iter().enumerate() {
            out[i] = digests[l];
        }
    }
}

/// One message through a one-lane compressor (the single-message API).
pub(crate) fn hash_one<C: Compressor<1> + ?Sized>(c: &C, msg: &[u8], double: bool) -> Digest {
    let pad_kw = match msg.len() {
        64 => Some(PAD64_KW),
        n if n % 64 == 0 => Some(schedule_plus_k(&pad_block(n as u64))),
        _ => None,
    };
    c.hash_lanes(&[msg], msg.len(), pad_kw.as_ref(), double)[0]
}

/// Continues one lane's `state` after `prefix_len` bytes over the rest of a message: its own
/// blocks and the padding for the whole length.
pub(crate) fn finish_one<C: Compressor<1> + ?Sized>(
    c: &C,
    state: [u32; 8],
    prefix_len: usize,
    rest: &[u8],
) -> Digest {
    let p = Padded::tail_only(rest, prefix_len + rest.len());
    let mut s = state.map(|w| [w]);
    for i in 0..p.blocks() {
        c.compress(&mut s, &[p.block(i)]);
    }
    store(&s, 0)
}

/// Checks for any backend's tests.
#[cfg(test)]
pub(crate) mod checks {
    use super::*;

    /// The shared-block path (`W[t] + K[t]` given) against the ordinary one fed that block in
    /// every lane, from random states.
    pub(crate) fn shared_block_matches_compress<const L: usize, C: Compressor<L>>(c: &C) {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || crate::backend::cpu::xorshift64(&mut x);
        for _ in 0..200 {
            let state: [[u32; L]; 8] =
                std::array::from_fn(|_| std::array::from_fn(|_| next() as u32));
            let block: [u8; 64] = std::array::from_fn(|_| next() as u8);
            let mut want = state;
            c.compress(&mut want, &[&block; L]);
            let mut got = state;
            c.compress_shared(&mut got, &schedule_plus_k(&block));
            assert_eq!(got, want);
        }
    }

    /// `L` lanes compressed at once against the portable compression of each, from random states
    /// and blocks (`iters` rounds; Miri, which emulates the intrinsics, runs a few).
    pub(crate) fn compress_matches_portable<const L: usize, C: Compressor<L>>(c: &C, iters: usize) {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || crate::backend::cpu::xorshift64(&mut rng);
        for _ in 0..if cfg!(miri) { 8 } else { iters } {
            let mut state: [[u32; L]; 8] =
                std::array::from_fn(|_| std::array::from_fn(|_| next() as u32));
            let blocks: [[u8; 64]; L] =
                std::array::from_fn(|_| std::array::from_fn(|_| next() as u8));
            let mut expect = state;
            for (lane, block) in blocks.iter().enumerate() {
                let mut one: [u32; 8] = std::array::from_fn(|w| state[w][lane]);
                crate::sha256::portable::compress(&mut one, block);
                for (w, v) in one.into_iter().enumerate() {
                    expect[w][lane] = v;
                }
            }
            c.compress(&mut state, &std::array::from_fn(|l| &blocks[l]));
            assert_eq!(state, expect);
        }
    }

    /// FIPS 180-2's "abc" in every lane.
    pub(crate) fn abc_in_every_lane<const L: usize, C: Compressor<L>>(c: &C) {
        let mut block = [0u8; 64];
        block[..3].copy_from_slice(b"abc");
        block[3] = 0x80;
        block[63] = 24;
        let mut state = crate::sha256::IV.map(|w| [w; L]);
        c.compress(&mut state, &[&block; L]);
        let expect = [
            0xba7816bf, 0x8f01cfea, 0x414140de, 0x5dae2223, 0xb00361a3, 0x96177a9c, 0xb410ff61,
            0xf20015ad,
        ];
        for (w, e) in state.iter().zip(expect) {
            assert_eq!(*w, [e; L]);
        }
    }

    /// Messages of random lengths (0 to 199 bytes, 500 bytes of them per lane) through
    /// `hash_range` on `c` and on the portable compression, single and double.
    pub(crate) fn batch_matches_portable<const L: usize, C: Compressor<L>>(c: &C) {
        let bytes = 500 * L as u32;
        let data: Vec<u8> = (0..bytes)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        let mut offsets = vec![0u64];
        let mut rng = 12345u64;
        while *offsets.last().unwrap() < u64::from(bytes) - 200 {
            let next = offsets.last().unwrap() + crate::backend::cpu::xorshift64(&mut rng) % 200;
            offsets.push(next);
        }
        let msgs = crate::sha256::Messages::var(&data, &offsets).unwrap();
        for double in [false, true] {
            let mut got = vec![[0u8; 32]; msgs.count()];
            let mut want = got.clone();
            hash_range(c, &msgs, 0, &mut got, double);
            hash_range(
                &crate::sha256::portable::Portable,
                &msgs,
                0,
                &mut want,
                double,
            );
            assert_eq!(got, want);
        }
    }
}

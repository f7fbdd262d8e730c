//! How the GPU batch kernels (`kernels/aes/aes_batch.cu`) take messages: in chunks of
//! consecutive messages, each uploaded as one buffer of sections (16-byte aligned): counter
//! blocks (CTR, 16 bytes per message), nonces (GCM, 12) or first tweaks E_K2(tweak) (XTS, 16),
//! key records (per-message keys only: for CTR and GCM the raw key in 32 bytes, then its length
//! as a little-endian u32; for XTS the data key's round keys, then the rounds), byte offsets and
//! first thread items (offsets form only: n + 1 little-endian u64 each), AAD offsets and bytes
//! (GCM with AADs), then the message bytes. The kernels byte-swap counter blocks, nonces and keys
//! themselves, so those sections are plain copies. A chunk's download is its message bytes, then
//! (GCM) a tag per message; after them on the device, GCM's scratch: each thread item's GHASH sum
//! and each message's H and E_K(J0).

use super::xts::XtsKey;
use super::Key;
use crate::messages::Messages;
use std::ops::Range;

/// Blocks per GPU thread item (`SEG_BLOCKS` of the kernels).
pub(crate) const SEG_BLOCKS: u64 = 16;
/// Bytes of a CTR or GCM key record: the raw key in 32, then its length as a little-endian
/// u32 (the kernels expand it).
pub(crate) const KEY_RECORD: usize = 36;
/// Bytes of an XTS key record: the data key's round keys (60 words), then the rounds.
pub(crate) const XTS_KEY_RECORD: usize = 256;
/// Upload bytes per chunk of the GPU path: about an eighth of the batch, so that the staging,
/// upload, kernel and download of different chunks overlap, within these bounds (a message
/// longer than the upper one is a chunk of its own).
pub(crate) const MIN_CHUNK_BYTES: usize = 4 << 20;
pub(crate) const MAX_CHUNK_BYTES: usize = 64 << 20;

/// `Batch` of kernels/aes/aes_batch.cu.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct BatchParams {
    pub(crate) rk: [u32; 60],
    pub(crate) rounds: u32,
    pub(crate) decrypt: u32,
    pub(crate) messages: u64,
    pub(crate) len: u64,
    pub(crate) segments: u64,
}

/// Which kernels run a batch.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Ctr,
    /// Tags and scratch; with the messages' AADs when there are any.
    Gcm,
    Xts,
}

/// What a batch carries per message besides its bytes.
#[derive(Clone, Copy)]
pub(crate) struct Layout<'a> {
    pub(crate) mode: Mode,
    /// Counter block (16), nonce (12) or first tweak (16) bytes.
    pub(crate) iv_len: usize,
    /// Bytes of a key record per message; 0: one key for all, in the parameters.
    pub(crate) key_record: usize,
    pub(crate) aads: &'a [&'a [u8]],
}

impl Layout<'_> {
    pub(crate) fn gcm(&self) -> bool {
        self.mode == Mode::Gcm
    }
}

/// How a batch's keys reach the kernels: the one key's schedule in the parameters, or a
/// record per message (`records(i, rec)` writes message i's, `key_record` bytes).
pub(crate) struct Keys<'a> {
    pub(crate) one: Option<([u32; 60], u32)>,
    pub(crate) records: Box<dyn Fn(usize, &mut [u8]) + Sync + 'a>,
}

/// A CTR or GCM batch's layout and keys: the raw keys as records (the kernels expand them),
/// or the one key's schedule.
pub(crate) fn raw_keys<'a>(
    mode: Mode,
    keys: &'a [Key],
    aads: &'a [&'a [u8]],
) -> (Layout<'a>, Keys<'a>) {
    let l = Layout {
        mode,
        iv_len: if mode == Mode::Gcm { 12 } else { 16 },
        key_record: if keys.len() == 1 { 0 } else { KEY_RECORD },
        aads,
    };
    let k = Keys {
        one: (keys.len() == 1).then(|| keys[0].round_keys()),
        records: Box::new(move |i, rec| {
            let b = keys[i].bytes();
            rec.fill(0);
            rec[..b.len()].copy_from_slice(b);
            rec[32..36].copy_from_slice(&(b.len() as u32).to_le_bytes());
        }),
    };
    (l, k)
}

/// An XTS batch's layout, each message's first tweak E_K2(tweak), and its keys: the data
/// key's schedule (the inverse cipher's when decrypting) as records, or the one key's.
pub(crate) fn xts_keys<'a>(
    keys: &'a [XtsKey],
    tweaks: &[[u8; 16]],
    decrypt: bool,
) -> (Layout<'static>, Vec<[u8; 16]>, Keys<'a>) {
    use rayon::prelude::*;
    let nth = move |i: usize| &keys[if keys.len() == 1 { 0 } else { i }];
    let first = tweaks
        .par_iter()
        .enumerate()
        .map(|(i, t)| nth(i).tweak.encrypt_block(*t))
        .collect();
    let l = Layout {
        mode: Mode::Xts,
        iv_len: 16,
        key_record: if keys.len() == 1 { 0 } else { XTS_KEY_RECORD },
        aads: &[],
    };
    let schedule = move |i: usize| match decrypt {
        true => nth(i).data.inverse_round_keys(),
        false => nth(i).data.round_keys(),
    };
    let k = Keys {
        one: (keys.len() == 1).then(|| schedule(0)),
        records: Box::new(move |i, rec| {
            let (rk, rounds) = schedule(i);
            rec.fill(0);
            for (w, r) in rec.chunks_exact_mut(4).zip(rk) {
                w.copy_from_slice(&r.to_le_bytes());
            }
            rec[240..244].copy_from_slice(&rounds.to_le_bytes());
        }),
    };
    (l, first, k)
}

/// One chunk: messages `first..first + count`, the sections' places in its upload and
/// download, and the byte range its messages span in the batch's buffer.
pub(crate) struct Chunk {
    first: usize,
    count: usize,
    keys_at: Option<usize>,
    offsets_at: Option<(usize, usize)>,
    aads_at: Option<(usize, usize)>,
    data_at: usize,
    pub(crate) in_bytes: usize,
    pub(crate) data: Range<usize>,
    pub(crate) segments: u64,
    /// Where the tags start in the download (GCM).
    pub(crate) tags_at: usize,
    pub(crate) out_bytes: usize,
    pub(crate) scratch_bytes: usize,
}

/// The kernels' pointer arguments, as addresses into a chunk's upload at `input` and its
/// download (and scratch) at `output` (0 for a section the chunk lacks).
pub(crate) struct Pointers {
    pub(crate) ivs: u64,
    pub(crate) keys: u64,
    pub(crate) offsets: u64,
    pub(crate) segments: u64,
    pub(crate) aad_offsets: u64,
    pub(crate) aad: u64,
    pub(crate) data: u64,
    pub(crate) out: u64,
    pub(crate) tags: u64,
    pub(crate) sums: u64,
    pub(crate) per_message: u64,
}

/// Thread items of a message: every message has one, an empty one too (GCM's first item
/// leaves the message's H and E_K(J0)).
fn items(len: usize) -> u64 {
    (len as u64).div_ceil(16 * SEG_BLOCKS).max(1)
}

fn up16(x: usize) -> usize {
    x.next_multiple_of(16)
}

impl Layout<'_> {
    /// Bytes message `i` adds to a chunk's upload, about.
    fn upload(&self, msgs: &Messages<'_>, i: usize) -> usize {
        let aad = self.aads.get(i).map_or(0, |a| 8 + a.len());
        self.iv_len
            + msgs.range(i).len()
            + aad
            + self.key_record
            + if msgs.fixed_len() { 0 } else { 16 }
    }

    /// What every message adds to an upload, when that is the same for all (equal lengths,
    /// no AADs).
    fn uniform(&self, msgs: &Messages<'_>) -> Option<usize> {
        (msgs.fixed_len() && self.aads.is_empty() && msgs.count() > 0).then(|| self.upload(msgs, 0))
    }
}

/// The GPU path's chunks for a batch.
pub(crate) fn gpu_chunks(msgs: &Messages<'_>, l: &Layout<'_>) -> Vec<Chunk> {
    let total: usize = match l.uniform(msgs) {
        Some(each) => each * msgs.count(),
        None => (0..msgs.count()).map(|i| l.upload(msgs, i)).sum(),
    };
    chunks(
        msgs,
        l,
        total.div_ceil(8).clamp(MIN_CHUNK_BYTES, MAX_CHUNK_BYTES),
    )
}

/// Chunks of consecutive messages whose uploads take at most about `max_bytes` each (or one
/// longer message).
pub(crate) fn chunks(msgs: &Messages<'_>, l: &Layout<'_>, max_bytes: usize) -> Vec<Chunk> {
    let n = msgs.count();
    if let Some(each) = l.uniform(msgs) {
        // Equal messages: equal chunks, without a pass over millions of them.
        let per = (max_bytes / each.max(1)).max(1);
        return (0..n)
            .step_by(per)
            .map(|first| Chunk::new(msgs, l, first, per.min(n - first)))
            .collect();
    }
    let mut v = Vec::new();
    let mut first = 0;
    while first < n {
        let mut bytes = l.upload(msgs, first);
        let mut end = first + 1;
        while end < n {
            let more = l.upload(msgs, end);
            if bytes + more > max_bytes {
                break;
            }
            bytes += more;
            end += 1;
        }
        v.push(Chunk::new(msgs, l, first, end - first));
        first = end;
    }
    v
}

impl Chunk {
    pub(crate) fn new(msgs: &Messages<'_>, l: &Layout<'_>, first: usize, count: usize) -> Chunk {
        let mut at = up16(l.iv_len * count);
        let keys_at = (l.key_record > 0).then(|| {
            let k = at;
            at = up16(at + l.key_record * count);
            k
        });
        let offsets_at = (!msgs.fixed_len()).then(|| {
            let o = at;
            at += 16 * (count + 1);
            (o, o + 8 * (count + 1))
        });
        let aads_at = (l.gcm() && !l.aads.is_empty()).then(|| {
            let o = at;
            let bytes: usize = l.aads[first..first + count].iter().map(|a| a.len()).sum();
            at = up16(at + 8 * (count + 1) + bytes);
            (o, o + 8 * (count + 1))
        });
        let data = msgs.range(first).start..msgs.range(first + count - 1).end;
        let segments = match msgs.fixed_len() {
            true => items(msgs.range(first).len()) * count as u64,
            false => (first..first + count)
                .map(|i| items(msgs.range(i).len()))
                .sum(),
        };
        let tags_at = up16(data.len());
        let (out_bytes, scratch_bytes) = match l.gcm() {
            true => (tags_at + 16 * count, 16 * segments as usize + 32 * count),
            false => (data.len(), 0),
        };
        Chunk {
            first,
            count,
            keys_at,
            offsets_at,
            aads_at,
            data_at: at,
            in_bytes: at + data.len(),
            segments,
            tags_at,
            out_bytes,
            scratch_bytes,
            data,
        }
    }

    /// Writes the chunk's upload into `dst` (`in_bytes` long) on all cores: the staging
    /// buffer is the pipeline's, and filling it is host time no other chunk overlaps with.
    /// `ivs`: the counter blocks, nonces or first tweaks, `iv_len` bytes each, back to back;
    /// key records from `keys` (per-message keys only).
    pub(crate) fn stage(
        &self,
        msgs: &Messages<'_>,
        l: &Layout<'_>,
        ivs: &[u8],
        keys: &Keys<'_>,
        dst: &mut [u8],
    ) {
        use crate::backend::cpu::par_copy;
        use rayon::prelude::*;
        const PIECE: usize = 4096;
        let range = self.first..self.first + self.count;
        par_copy(
            &mut dst[..l.iv_len * self.count],
            &ivs[l.iv_len * self.first..l.iv_len * range.end],
        );
        if let Some(k) = self.keys_at {
            let size = l.key_record;
            dst[k..k + size * self.count]
                .par_chunks_mut(size * PIECE)
                .enumerate()
                .for_each(|(piece, part)| {
                    for (j, rec) in part.chunks_exact_mut(size).enumerate() {
                        (keys.records)(range.start + piece * PIECE + j, rec);
                    }
                });
        }
        let put =
            |dst: &mut [u8], at: usize, v: u64| dst[at..at + 8].copy_from_slice(&v.to_le_bytes());
        if let Some((o, s)) = self.offsets_at {
            let base = self.data.start;
            let mut seg = 0u64;
            for j in 0..=self.count {
                let off = match j < self.count {
                    true => msgs.range(self.first + j).start,
                    false => self.data.end,
                };
                put(dst, o + 8 * j, (off - base) as u64);
                put(dst, s + 8 * j, seg);
                if j < self.count {
                    seg += items(msgs.range(self.first + j).len());
                }
            }
        }
        if let Some((o, b)) = self.aads_at {
            let mut at = 0usize;
            for j in 0..=self.count {
                put(dst, o + 8 * j, at as u64);
                if j < self.count {
                    let a = l.aads[self.first + j];
                    dst[b + at..b + at + a.len()].copy_from_slice(a);
                    at += a.len();
                }
            }
        }
        par_copy(
            &mut dst[self.data_at..self.in_bytes],
            &msgs.data()[self.data.clone()],
        );
    }

    /// The kernels' parameters (with the one key for all messages, if there is one).
    pub(crate) fn params(
        &self,
        msgs: &Messages<'_>,
        keys: &Keys<'_>,
        decrypt: bool,
    ) -> BatchParams {
        let (rk, rounds) = keys.one.unwrap_or(([0; 60], 0));
        BatchParams {
            rk,
            rounds,
            decrypt: decrypt as u32,
            messages: self.count as u64,
            len: match msgs {
                Messages::Fixed { len, .. } => *len as u64,
                Messages::Var { .. } => 0,
            },
            segments: self.segments,
        }
    }

    pub(crate) fn pointers(&self, input: u64, output: u64) -> Pointers {
        let at = |x: Option<usize>| x.map_or(0, |x| input + x as u64);
        let sums = up16(self.out_bytes) as u64;
        Pointers {
            ivs: input,
            keys: at(self.keys_at),
            offsets: at(self.offsets_at.map(|o| o.0)),
            segments: at(self.offsets_at.map(|o| o.1)),
            aad_offsets: at(self.aads_at.map(|o| o.0)),
            aad: at(self.aads_at.map(|o| o.1)),
            data: input + self.data_at as u64,
            out: output,
            tags: output + self.tags_at as u64,
            sums: output + sums,
            per_message: output + sums + 16 * self.segments,
        }
    }

    /// The chunk's tags in its download.
    pub(crate) fn tags<'o>(&self, out: &'o [u8]) -> &'o [u8] {
        &out[self.tags_at..self.tags_at + 16 * self.count]
    }

    pub(crate) fn messages(&self) -> Range<usize> {
        self.first..self.first + self.count
    }
}

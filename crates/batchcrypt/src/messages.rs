//! A batch of messages in one buffer: equal-length messages back to back, or messages of any
//! length delimited by offsets. The batch APIs of every primitive take this one form.

use crate::error::{Error, Result};

/// A validated batch of messages in one buffer.
#[derive(Clone, Copy, Debug)]
pub enum Messages<'a> {
    /// `count` messages of `len` bytes each, back to back.
    Fixed {
        data: &'a [u8],
        len: usize,
        count: usize,
    },
    /// Message `i` is `data[offsets[i]..offsets[i + 1]]`.
    Var { data: &'a [u8], offsets: &'a [u64] },
}

impl<'a> Messages<'a> {
    /// Equal-length messages back to back; `data.len()` must be a non-zero multiple of `len`.
    pub fn fixed(data: &'a [u8], len: usize) -> Result<Self> {
        if len == 0 {
            return Err(Error::invalid(
                "message length 0 in a fixed-length batch leaves the message count undefined; use the offsets form for empty messages",
            ));
        }
        if data.is_empty() {
            return Err(Error::EmptyBatch);
        }
        if !data.len().is_multiple_of(len) {
            return Err(Error::invalid(format!(
                "buffer of {} bytes is not a whole number of {len}-byte messages",
                data.len()
            )));
        }
        Ok(Messages::Fixed {
            data,
            len,
            count: data.len() / len,
        })
    }

    /// Messages of any length (zero included) delimited by `offsets` (n + 1 non-decreasing entries).
    pub fn var(data: &'a [u8], offsets: &'a [u64]) -> Result<Self> {
        if offsets.len() < 2 {
            return Err(if offsets.len() == 1 {
                Error::EmptyBatch
            } else {
                Error::invalid("offsets must hold n + 1 entries for n messages (at least 2)")
            });
        }
        for (i, w) in offsets.windows(2).enumerate() {
            if w[1] < w[0] {
                return Err(Error::invalid(format!(
                    "offsets decrease at message {i}: {} > {}",
                    w[0], w[1]
                )));
            }
        }
        let last = *offsets.last().unwrap();
        if last > data.len() as u64 {
            return Err(Error::invalid(format!(
                "offset {last} is past the end of the {}-byte buffer",
                data.len()
            )));
        }
        Ok(Messages::Var { data, offsets })
    }

    pub fn count(&self) -> usize {
        match self {
            Messages::Fixed { count, .. } => *count,
            Messages::Var { offsets, .. } => offsets.len() - 1,
        }
    }

    pub fn get(&self, i: usize) -> &'a [u8] {
        match *self {
            Messages::Fixed { data, len, .. } => &data[i * len..(i + 1) * len],
            Messages::Var { data, offsets } => &data[offsets[i] as usize..offsets[i + 1] as usize],
        }
    }

    pub fn fixed_len(&self) -> bool {
        matches!(self, Messages::Fixed { .. })
    }

    /// Bytes the messages span.
    pub fn bytes(&self) -> u64 {
        match self {
            Messages::Fixed { data, .. } => data.len() as u64,
            Messages::Var { offsets, .. } => offsets[offsets.len() - 1] - offsets[0],
        }
    }
}

impl<'a> Messages<'a> {
    /// The buffer the messages lie in.
    pub fn data(&self) -> &'a [u8] {
        match *self {
            Messages::Fixed { data, .. } | Messages::Var { data, .. } => data,
        }
    }

    /// Messages `r` of this batch, as a batch of their own (a slice of a batch split over
    /// devices).
    pub fn slice(&self, r: std::ops::Range<usize>) -> Messages<'a> {
        match *self {
            Messages::Fixed { data, len, .. } => Messages::Fixed {
                data: &data[r.start * len..r.end * len],
                len,
                count: r.len(),
            },
            Messages::Var { data, offsets } => Messages::Var {
                data,
                offsets: &offsets[r.start..=r.end],
            },
        }
    }

    /// The byte range of message `i` in the buffer.
    pub fn range(&self, i: usize) -> std::ops::Range<usize> {
        match *self {
            Messages::Fixed { len, .. } => i * len..(i + 1) * len,
            Messages::Var { offsets, .. } => offsets[i] as usize..offsets[i + 1] as usize,
        }
    }

    /// The messages' places in `output` (a buffer laid out as the input): one disjoint slice
    /// per message, in order.
    pub fn split_mut<'o>(&self, output: &'o mut [u8]) -> Vec<&'o mut [u8]> {
        let mut v = Vec::with_capacity(self.count());
        let start = self.range(0).start;
        let mut rest = &mut output[start..];
        let mut at = start;
        for i in 0..self.count() {
            let r = self.range(i);
            let (_, tail) = std::mem::take(&mut rest).split_at_mut(r.start - at);
            let (m, tail) = tail.split_at_mut(r.len());
            v.push(m);
            rest = tail;
            at = r.end;
        }
        v
    }
}

/// A batch of equal-length messages spread over several buffers, each a whole number of them: the
/// requests of many callers, hashed as one batch without first being joined into one buffer.
#[derive(Clone, Debug)]
pub struct FixedParts<'a> {
    parts: &'a [&'a [u8]],
    len: usize,
    /// The index of each part's first message, and the batch's count last.
    starts: Vec<usize>,
}

impl<'a> FixedParts<'a> {
    /// `parts` of `len`-byte messages (each part's length a multiple of `len`; none need hold
    /// any, but the batch must).
    pub fn new(parts: &'a [&'a [u8]], len: usize) -> Result<Self> {
        if len == 0 {
            return Err(Error::invalid(
                "message length 0 in a fixed-length batch leaves the message count undefined",
            ));
        }
        let mut starts = Vec::with_capacity(parts.len() + 1);
        let mut at = 0;
        for (i, p) in parts.iter().enumerate() {
            if !p.len().is_multiple_of(len) {
                return Err(Error::invalid(format!(
                    "part {i} of {} bytes is not a whole number of {len}-byte messages",
                    p.len()
                )));
            }
            starts.push(at);
            at += p.len() / len;
        }
        if at == 0 {
            return Err(Error::EmptyBatch);
        }
        starts.push(at);
        Ok(FixedParts { parts, len, starts })
    }

    pub fn count(&self) -> usize {
        *self.starts.last().expect("at least the count")
    }

    /// Bytes per message.
    pub fn message_len(&self) -> usize {
        self.len
    }

    /// Copies messages `first..first + dst.len() / len` into `dst`, part by part on this thread:
    /// a batch's staging for the GPU, whose buffers are small enough that threads woken to share
    /// the copy cost more than they save when the cores are busy.
    pub fn copy_to(&self, first: usize, dst: &mut [u8]) {
        debug_assert!(dst.len().is_multiple_of(self.len));
        let mut part = self.starts.partition_point(|&s| s <= first) - 1;
        let mut from = (first - self.starts[part]) * self.len;
        let mut dst = dst;
        while !dst.is_empty() {
            let src = &self.parts[part][from..];
            let k = src.len().min(dst.len());
            let (head, rest) = std::mem::take(&mut dst).split_at_mut(k);
            head.copy_from_slice(&src[..k]);
            dst = rest;
            part += 1;
            from = 0;
        }
    }

    /// The byte ranges of the parts that hold messages `first..first + count`, in order.
    pub fn segments(&self, first: usize, count: usize) -> Vec<&'a [u8]> {
        let mut v = Vec::new();
        if count == 0 {
            return v;
        }
        let mut part = self.starts.partition_point(|&s| s <= first) - 1;
        let (mut from, mut left) = ((first - self.starts[part]) * self.len, count * self.len);
        while left > 0 {
            let src = &self.parts[part][from..];
            let k = src.len().min(left);
            if k > 0 {
                v.push(&src[..k]);
            }
            left -= k;
            part += 1;
            from = 0;
        }
        v
    }

    /// The parts joined into one buffer (on all cores), for backends that read one.
    pub fn joined(&self) -> Vec<u8> {
        crate::backend::cpu::par_concat(self.parts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_parts_copy_and_cut_any_range_as_the_joined_buffer_holds_it() {
        let a: Vec<u8> = (0..12).collect();
        let b: Vec<u8> = vec![];
        let c: Vec<u8> = (100..104).collect();
        let d: Vec<u8> = (200..208).collect();
        let parts: Vec<&[u8]> = vec![&a, &b, &c, &d];
        let p = FixedParts::new(&parts, 4).unwrap();
        assert_eq!(p.count(), 6);
        let joined = p.joined();
        assert_eq!(joined, [a.clone(), c.clone(), d.clone()].concat());
        for first in 0..6 {
            for n in 0..=6 - first {
                let mut dst = vec![0u8; 4 * n];
                p.copy_to(first, &mut dst);
                assert_eq!(dst, joined[4 * first..4 * (first + n)], "{first} + {n}");
                // The same range as slices of the parts: none empty, none beyond it.
                let segments = p.segments(first, n);
                assert!(segments.iter().all(|s| !s.is_empty()));
                assert_eq!(segments.concat(), dst, "{first} + {n}");
            }
        }
        let bad: Vec<&[u8]> = vec![&a, &[1, 2, 3]];
        assert!(FixedParts::new(&bad, 4).is_err());
        assert!(matches!(
            FixedParts::new(&[&b[..]], 4),
            Err(Error::EmptyBatch)
        ));
        assert!(FixedParts::new(&parts, 0).is_err());
    }
}

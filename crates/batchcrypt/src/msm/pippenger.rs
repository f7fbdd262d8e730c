//! Pippenger's bucket method as the MSM kernels run it (`kernels/include/bc/msm.cuh`), for any
//! curve: the shape of one MSM (window size, bucket and segment counts) and the chain of kernel
//! steps, written once over [`Kernels`] so that the GPU and the host emulation of the kernels,
//! BN254's groups and BLS12-381's, run one sequence.

use crate::error::{Error, Result};

/// The largest window [`Shape::new`] picks. The count of additions alone favours wider windows
/// from about 2^23 points, but their buckets (2^(c-1) a window, each written, read and combined)
/// cost more in memory traffic than the additions save: the window sweep of the benchmarks
/// (`msm-windows`, docs/performance.md) measures this on the GPU.
pub const MAX_WINDOW: u32 = 17;

/// The widest window [`Shape::for_bases`] picks for bases with a copy per digit window, and the
/// cost of a bucket there in additions: fitted to the benchmarks' sweep over such bases
/// (`msm-windows`, docs/performance.md).
const MAX_PRECOMPUTED_WINDOW: u32 = 22;
const PRECOMPUTED_BUCKET: f64 = 24.0;

/// Sorted bucket entries per thread in the accumulation step: every thread adds the same number
/// of points whatever the distribution of the scalars. The first level takes the fewest waves of
/// the GPU's resident threads whose slices hold at most [`MAX_SLICE`] entries, and cuts the
/// entries evenly over those waves' threads (at least [`SLICE`] a thread), so that no launch ends
/// in a nearly empty wave and slices are as long as the waves allow. Each slice leaves two
/// partial sums (full additions, about one and a half mixed ones each) for the next level, a
/// tenth of the first level's work at 32 entries a slice.
pub(crate) const SLICE: u32 = 32;
const MAX_SLICE: u32 = 256;
/// Partial sums per thread in the later levels: they hold a few partial sums per slice of the
/// level before, too few threads to fill the GPU, so each level's time is that of the additions
/// one thread runs in series; short slices make more, shorter levels.
const PARTIAL_SLICE: u32 = 8;
/// Entries per tile of the histogram's prefix sum (a multiple of [`SCAN_THREADS`]).
pub(crate) const SCAN_TILE: u32 = 4096;
/// Threads per block of the prefix-sum kernels.
pub(crate) const SCAN_THREADS: u32 = 256;
/// Buckets per thread when a window's buckets are combined by running sums: at most, at least
/// (each segment's result costs a small multiplication), and the threads wanted.
const SEGMENT: u32 = 32;
const MIN_SEGMENT: u32 = 4;
const SEGMENT_THREADS: u32 = 1 << 16;
/// Points summed per thread at each level of the windows' reduction tree: a few additions in
/// series per level rather than hundreds in one thread, which is all the last level had to run
/// when a window's segment sums went through two levels.
const GROUP: u32 = 8;

/// Digit windows of `c` bits over scalars of `scalar_bits` bits: signed digits carry into one
/// more bit than the scalar has.
fn digit_windows(scalar_bits: u32, c: u32) -> u32 {
    (scalar_bits + 1).div_ceil(c)
}

/// The shape of one MSM: `windows` signed digit windows of `c` bits over `n` scalars, whose
/// points go to `sets` windows of `2^(c-1)` buckets each. Without precomputed bases
/// `sets = windows`; with `copies` precomputed copies of the bases (copy j = 2^(c sets j) P,
/// `stride` points apart), digit window w reads copy w / sets and fills bucket window w % sets.
///
/// A shape may be one GPU's part of a larger MSM ([`Shape::part`]): the cells `from..to` of the
/// MSM's `points` scalars (digit window w of scalar i is cell `w * points + i`), which span the
/// digit windows `lo()..hi()`; its bucket windows are those of its digit windows (`sets` of them,
/// `off` = 0) or, over precomputed copies, those of the whole MSM (`off` = `lo()`, the copies read
/// from `first_copy()` on). A chunk of the scalars keeps its MSM's `points` and cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub n: usize,
    pub c: u32,
    pub windows: u32,
    pub sets: u32,
    /// Points per copy of the bases (their count; at least `n`).
    pub stride: usize,
    pub points: usize,
    pub from: u64,
    pub to: u64,
    pub off: u32,
}

/// A part of an MSM's cells, in 2^-16ths of a digit window: from..to (see [`Shape::part`]).
pub type Cut = (u64, u64);

/// Cut units per digit window ([`Cut`]).
const CUT_UNITS: u64 = 1 << 16;

impl Shape {
    /// The window that minimises the estimated additions for `n` points: one per point and
    /// window, plus about four per bucket (its two running sums, its write and its read); at
    /// most [`MAX_WINDOW`] bits. Fitted to the benchmarks' window sweep (`msm-windows`).
    pub fn new(n: usize, scalar_bits: u32) -> Result<Shape> {
        let cost = |c: u32| {
            f64::from(digit_windows(scalar_bits, c)) * (n as f64 + 4.0 * f64::from(1u32 << (c - 1)))
        };
        let c = (4..=MAX_WINDOW)
            .min_by(|a, b| cost(*a).total_cmp(&cost(*b)))
            .expect("non-empty range");
        Shape::with_window(n, scalar_bits, c)
    }

    /// A given window size (4..=24 bits).
    pub fn with_window(n: usize, scalar_bits: u32, c: u32) -> Result<Shape> {
        Shape::precomputed(n, scalar_bits, c, 1, n)
    }

    /// The shape for bases precomputed for window `c` with `copies` copies of `stride` points
    /// each (`copies` = 1: no precomputation).
    pub fn precomputed(
        n: usize,
        scalar_bits: u32,
        c: u32,
        copies: u32,
        stride: usize,
    ) -> Result<Shape> {
        if !(4..=24).contains(&c) {
            return Err(Error::invalid(format!(
                "MSM window of {c} bits; use 4 to 24"
            )));
        }
        let windows = digit_windows(scalar_bits, c);
        let sets = windows.div_ceil(copies.clamp(1, windows));
        // Entries are indexed with 32 bits, point indices with 31 (the top bit is the sign).
        let points = u64::from(windows.div_ceil(sets)) * stride as u64;
        if n > stride || points >= 1 << 31 || (n as u64) * u64::from(windows) >= 1 << 32 {
            return Err(Error::invalid(format!(
                "an MSM of {n} points is too large for one call; split it"
            )));
        }
        Ok(Shape {
            n,
            c,
            windows,
            sets,
            stride,
            points: n,
            from: 0,
            to: u64::from(windows) * n as u64,
            off: 0,
        })
    }

    /// The whole MSM cut into consecutive parts of its cells in proportion to `weights` (one per
    /// GPU, in order): each GPU takes a run of whole digit windows, sharing the first and the
    /// last with its neighbours by scalars, so that every part has the same work. The cuts
    /// depend on the windows and weights alone, not on the scalars' count, so that bases held
    /// for a cut serve every MSM over them ([`Shape::part`]).
    pub fn cuts(windows: u32, weights: &[f64]) -> Vec<Cut> {
        let total: f64 = weights.iter().map(|w| w.max(0.0)).sum();
        let end = u64::from(windows) * CUT_UNITS;
        let mut at = 0.0;
        let mut from = 0;
        weights
            .iter()
            .enumerate()
            .map(|(k, w)| {
                at += w.max(0.0);
                let to = if k + 1 == weights.len() || total <= 0.0 {
                    end
                } else {
                    ((at / total * end as f64).round() as u64).clamp(from, end)
                };
                let cut = (from, to);
                from = to;
                cut
            })
            .collect()
    }

    /// This whole MSM's part `cut` (of [`Shape::cuts`]), or `None` where it holds no cell.
    pub fn part(&self, (from, to): Cut) -> Option<Shape> {
        let n = self.points as u128;
        let cells = |q: u64| (u128::from(q) * n / u128::from(CUT_UNITS)) as u64;
        let (from, to) = (cells(from), cells(to).min(self.to));
        if from >= to {
            return None;
        }
        let mut s = Shape { from, to, ..*self };
        let windows = s.hi() - s.lo();
        if self.copies() > 1 {
            s.off = s.lo();
        } else {
            s.sets = windows;
        }
        Some(s)
    }

    /// The first digit window of the part, and one past its last.
    pub fn lo(&self) -> u32 {
        (self.from / self.points.max(1) as u64) as u32
    }

    pub fn hi(&self) -> u32 {
        match self.points {
            0 => self.windows,
            p => self.to.div_ceil(p as u64) as u32,
        }
    }

    /// Digit windows of the part.
    pub fn part_windows(&self) -> u32 {
        self.hi() - self.lo()
    }

    /// The digit window of bucket window 0: the sums of bucket windows j are those of digit
    /// windows `base() + j` ([`super::combine_windows`] shifts them up by `c * base()`).
    pub fn base(&self) -> u32 {
        self.lo() - self.off
    }

    /// The first precomputed copy the part reads (0 without precomputation).
    pub fn first_copy(&self) -> u32 {
        self.off / self.sets
    }

    /// An MSM of `n` scalars over `len` bases of which the GPU keeps `copies` copies (1: none):
    /// precomputed bases fix the window for every call (by their count, not by `n`).
    pub fn for_bases(n: usize, len: usize, copies: u32, scalar_bits: u32) -> Result<Shape> {
        if copies <= 1 {
            return Shape::new(n, scalar_bits);
        }
        let plain = Shape::new(len, scalar_bits)?.c;
        // Fewer copies than digit windows keep the plain bases' window, with fewer sets of
        // buckets. A copy per digit window leaves one set of buckets for all of them, and wider
        // windows then save additions (one per scalar and window) for a few more buckets, each
        // of which costs about as much as PRECOMPUTED_BUCKET additions: widened up to
        // MAX_PRECOMPUTED_WINDOW.
        let c = if copies >= digit_windows(scalar_bits, plain) {
            let cost = |c: u32| {
                f64::from(digit_windows(scalar_bits, c)) * len as f64
                    + PRECOMPUTED_BUCKET * f64::from(1u32 << (c - 1))
            };
            (plain..=MAX_PRECOMPUTED_WINDOW.max(plain))
                .min_by(|a, b| cost(*a).total_cmp(&cost(*b)))
                .expect("non-empty range")
        } else {
            plain
        };
        Shape::precomputed(n, scalar_bits, c, copies, len)
    }

    /// The copies of the bases this shape reads, from [`Shape::first_copy`] on (1 without
    /// precomputation).
    pub fn copies(&self) -> u32 {
        let last = self.off + self.part_windows().max(1) - 1;
        last / self.sets - self.first_copy() + 1
    }

    /// Doublings from one copy of the bases to the next.
    pub fn shift(&self) -> u32 {
        self.c * self.sets
    }

    pub fn buckets_per_window(&self) -> u32 {
        1 << (self.c - 1)
    }

    pub fn buckets(&self) -> u64 {
        u64::from(self.sets) * u64::from(self.buckets_per_window())
    }

    /// Buckets per thread of the running-sum step (a power of two dividing the window's buckets):
    /// up to [`SEGMENT`], fewer where that would leave fewer than [`SEGMENT_THREADS`] threads (each
    /// thread's additions run in series, so a GPU needs many threads to hide their latency).
    pub fn segment(&self) -> u32 {
        let fill = (self.buckets() / u64::from(SEGMENT_THREADS)).max(1);
        let fill = 1u32 << fill.ilog2().min(31);
        SEGMENT
            .min(fill.max(MIN_SEGMENT))
            .min(self.buckets_per_window())
    }

    fn segments_per_window(&self) -> u32 {
        self.buckets_per_window() / self.segment()
    }

    /// The accumulation levels, as (entries, entries per slice): each level's slices leave two
    /// partial sums each for the next, until one slice holds the rest; `resident`: the threads of
    /// the first level's kernel the GPU runs at once (its waves).
    pub fn levels(total: u64, resident: u64) -> Vec<(u64, u32)> {
        let wave = resident.max(1);
        let waves = total.div_ceil(wave * u64::from(MAX_SLICE)).max(1);
        let first = total
            .div_ceil(waves * wave)
            .clamp(u64::from(SLICE), u64::from(MAX_SLICE)) as u32;
        let mut v = vec![(total, first)];
        let (mut t, mut slice) = (total, first);
        while t > u64::from(slice) {
            t = 2 * t.div_ceil(u64::from(slice));
            slice = PARTIAL_SLICE;
            v.push((t, slice));
        }
        v
    }
}

/// The queues of a [`Kernels`] backend: two for the point steps (consecutive chunks'
/// accumulations in turn) and one for the scalar steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Queue {
    Points(usize),
    Scalars,
}

/// The MSM kernels as one backend runs them, on buffers it owns. `Words` holds 32-bit words,
/// `Points` Jacobian points; `zeroed` asks for zeros (a zero Z is the point at infinity), else
/// the contents are unspecified (buffers a kernel writes whole). The bases, and with them the
/// group (G1 or G2), are bound to the implementation.
pub(crate) trait Kernels {
    type Words;
    type Points;
    fn words(&mut self, len: u64, zeroed: bool) -> Result<Self::Words>;
    fn points(&mut self, len: u64, zeroed: bool) -> Result<Self::Points>;
    /// `first`: the index among the bases of the shape's first scalar (a chunk's).
    fn digits(
        &mut self,
        scalars: &Self::Words,
        s: &Shape,
        first: u32,
        digits: &mut Self::Words,
        counts: &mut Self::Words,
    ) -> Result<()>;
    /// One block per tile when `tiles` is above one, else one block for the single tile.
    fn scan_tiles(
        &mut self,
        data: &mut Self::Words,
        m: u64,
        tile: u32,
        totals: &mut Self::Words,
    ) -> Result<()>;
    fn scan_add(
        &mut self,
        data: &mut Self::Words,
        m: u64,
        tile: u32,
        offsets: &Self::Words,
    ) -> Result<()>;
    fn first_word(&mut self, w: &Self::Words) -> Result<u32>;
    /// Where the steps that follow go: a backend may run its queues beside each other (a GPU's
    /// streams); a step reading another queue's output waits for it.
    fn queue(&mut self, q: Queue);
    /// `first`: the index among the bases of the shape's first scalar (a chunk's).
    fn scatter(
        &mut self,
        digits: &Self::Words,
        s: &Shape,
        first: u32,
        cursor: &mut Self::Words,
        entries: &mut Self::Words,
    ) -> Result<()>;
    /// Threads of [`Kernels::accumulate_points`] the backend runs at once (a GPU's resident
    /// threads: its waves).
    fn resident(&mut self) -> Result<u64>;
    /// `ends`: each of the `buckets` buckets' end among the entries; `level`: the entries and the
    /// entries per slice ([`Shape::levels`]).
    fn accumulate_points(
        &mut self,
        entries: &Self::Words,
        ends: &Self::Words,
        buckets_len: u64,
        level: (u64, u32),
        buckets: &mut Self::Points,
        next: &mut (Self::Words, Self::Points),
    ) -> Result<()>;
    fn accumulate_partials(
        &mut self,
        from: &(Self::Words, Self::Points),
        level: (u64, u32),
        buckets: &mut Self::Points,
        next: &mut (Self::Words, Self::Points),
    ) -> Result<()>;
    /// acc[i] += more[i] for the first `count` points.
    fn add_buckets(
        &mut self,
        acc: &mut Self::Points,
        more: &Self::Points,
        count: u64,
    ) -> Result<()>;
    fn window_segments(
        &mut self,
        buckets: &Self::Points,
        s: &Shape,
        out: &mut Self::Points,
    ) -> Result<()>;
    fn sum_groups(
        &mut self,
        input: &Self::Points,
        groups: u64,
        m: u32,
        out: &mut Self::Points,
    ) -> Result<()>;
    /// The first `len` points, as the kernels store them (X, Y, Z limbs), one after another.
    fn read_points(&mut self, p: &Self::Points, len: usize) -> Result<Vec<u32>>;
}

/// An upper bound of the device bytes [`window_sums_chunked`] allocates at once over `sets` sets
/// of bases (with the scalars), for the memory budget: digits, then sorted entries (one per
/// scalar and window at most), the histogram, each set's buckets on each of two queues and a
/// chunk's, the accumulation's partial sums and the windows' segments.
pub(crate) fn device_bytes(s: &Shape, sets: usize, point_bytes: u64) -> u64 {
    let (n, w) = (s.n as u64, u64::from(s.part_windows()));
    let buckets = s.buckets();
    let slices = 2 * (n * w).div_ceil(u64::from(SLICE));
    32 * n
        + 8 * n * w
        + buckets * (4 + point_bytes * (2 * sets as u64 + 1))
        + 2 * slices * (4 + point_bytes)
        + 2 * u64::from(s.sets) * u64::from(s.segments_per_window()) * point_bytes
        + (1 << 20)
}

/// Scalars sorted into their buckets (steps 1-3 of the kernels): `total` entries (a base's index
/// with the digit's sign) in bucket order, and where each of the `buckets` buckets ends. They
/// depend on the scalars and the shape alone, so MSMs of the same scalars over other bases of
/// that shape reuse them.
struct Sorted<W> {
    entries: W,
    ends: W,
    buckets: u64,
    total: u64,
}

/// Steps 1-3 over scalars already in the backend's memory: those of bases `first..first + s.n`.
fn sort<K: Kernels>(
    k: &mut K,
    s: &Shape,
    scalars: &K::Words,
    first: u32,
) -> Result<Sorted<K::Words>> {
    let buckets_len = s.buckets();
    let mut counts = k.words(buckets_len, true)?;
    let mut digits = k.words(s.n as u64 * u64::from(s.part_windows()), false)?;
    k.digits(scalars, s, first, &mut digits, &mut counts)?;
    // Exclusive prefix sums of the histogram: each bucket's first entry.
    let tiles = buckets_len.div_ceil(u64::from(SCAN_TILE));
    let mut totals = k.words(tiles, false)?;
    let mut grand = k.words(1, false)?;
    k.scan_tiles(&mut counts, buckets_len, SCAN_TILE, &mut totals)?;
    k.scan_tiles(
        &mut totals,
        tiles,
        (tiles as u32).next_multiple_of(SCAN_THREADS),
        &mut grand,
    )?;
    k.scan_add(&mut counts, buckets_len, SCAN_TILE, &totals)?;
    let total = u64::from(k.first_word(&grand)?);
    let mut entries = k.words(total.max(1), false)?;
    // The bucket starts become their ends.
    k.scatter(&digits, s, first, &mut counts, &mut entries)?;
    Ok(Sorted {
        entries,
        ends: counts,
        buckets: buckets_len,
        total,
    })
}

/// Runs the MSM steps over scalars already in the backend's memory; returns each window's sum
/// (the caller adds them with doublings in between).
pub(crate) fn window_sums<K: Kernels>(
    k: &mut K,
    s: &Shape,
    scalars: &K::Words,
) -> Result<Vec<u32>> {
    let mut sums = window_sums_chunked(k, s, 1, &[0..s.n], |_, _| {}, |_, _| Ok(scalars))?;
    Ok(sums.remove(0))
}

/// `n` scalars cut into the chunks in which they cross to the GPU: `first` scalars first, then
/// each chunk `growth` times the one before up to `most`, the last one taking the rest where
/// cutting it again would leave less than half a chunk (at least one chunk, empty when `n` is 0).
/// A small first chunk leaves little of the crossing exposed before the steps start; each later
/// one crosses while the steps of the one before run, as long as it grows no faster than those
/// steps outlast its crossing; few, long chunks keep the accumulation's slices long (each chunk is
/// accumulated on its own, at a fixed cost besides); a short last chunk leaves little of the
/// steps after the crossing ends.
pub fn chunks(n: usize, first: usize, growth: usize, most: usize) -> Vec<std::ops::Range<usize>> {
    let (mut v, mut at, mut len) = (Vec::new(), 0, first.max(1));
    while at < n || v.is_empty() {
        let rest = n - at;
        let end = if rest < len + len / 2 { n } else { at + len };
        v.push(at..end);
        at = end;
        len = len.saturating_mul(growth.max(1)).min(most.max(first));
    }
    v
}

/// An MSM whose scalars arrive in `chunks` (ranges of the `s.n` scalars, in order), over `sets`
/// sets of bases: `scalars(k, c)` gives chunk c's scalars in the backend's memory, `bind(k, j)`
/// makes set j's bases the ones the steps read. Each chunk is sorted once (steps 1-3, on the
/// scalar queue) and summed into buckets for each set (step 4, on the point queues in turn; a
/// queue's later chunks into buckets of their own, then added to its first one's), so that a
/// chunk's steps can run while the next one crosses and beside the chunk before; then the
/// queues' buckets are added and each set's reduced (steps 5-6). One list of window sums per set.
pub(crate) fn window_sums_chunked<K: Kernels, W: std::borrow::Borrow<K::Words>>(
    k: &mut K,
    s: &Shape,
    sets: usize,
    chunks: &[std::ops::Range<usize>],
    mut bind: impl FnMut(&mut K, usize),
    mut scalars: impl FnMut(&mut K, usize) -> Result<W>,
) -> Result<Vec<Vec<u32>>> {
    // Each chunk is sorted beside the accumulation of the chunk before (asked for, and sorted,
    // once that accumulation is queued), and consecutive chunks accumulate on the two point
    // queues in turn, each into buckets of its own, so that a chunk's first level runs beside
    // the short later levels of the chunk before; the two queues' buckets are added at the end.
    let part = |range: &std::ops::Range<usize>| Shape {
        n: range.len(),
        ..*s
    };
    let mut sort_chunk = |k: &mut K, c: usize| -> Result<Sorted<K::Words>> {
        k.queue(Queue::Scalars);
        let words = scalars(k, c);
        let sorted =
            words.and_then(|w| sort(k, &part(&chunks[c]), w.borrow(), chunks[c].start as u32));
        k.queue(Queue::Points(0));
        sorted
    };
    let queues = chunks.len().min(2);
    let mut totals: Vec<Vec<K::Points>> = Vec::with_capacity(sets);
    for _ in 0..sets {
        let mut per_queue = Vec::with_capacity(queues);
        for q in 0..queues {
            k.queue(Queue::Points(q));
            per_queue.push(k.points(s.buckets(), true)?);
        }
        totals.push(per_queue);
    }
    let mut sorted = sort_chunk(k, 0)?;
    for c in 0..chunks.len() {
        k.queue(Queue::Points(c % 2));
        for (j, total) in totals.iter_mut().enumerate() {
            bind(k, j);
            if c < 2 {
                accumulate(k, &sorted, &mut total[c])?;
            } else {
                let mut more = k.points(s.buckets(), true)?;
                accumulate(k, &sorted, &mut more)?;
                k.add_buckets(&mut total[c % 2], &more, s.buckets())?;
            }
        }
        if c + 1 < chunks.len() {
            sorted = sort_chunk(k, c + 1)?;
        }
    }
    k.queue(Queue::Points(0));
    let totals: Vec<K::Points> = totals
        .into_iter()
        .map(|mut t| {
            if t.len() == 2 {
                let second = t.remove(1);
                k.add_buckets(&mut t[0], &second, s.buckets())?;
            }
            Ok(t.swap_remove(0))
        })
        .collect::<Result<_>>()?;
    totals.iter().map(|t| reduce(k, s, t)).collect()
}

/// Step 4: the sorted entries summed into `buckets` (zeros, the point at infinity, where no entry
/// falls).
fn accumulate<K: Kernels>(
    k: &mut K,
    sorted: &Sorted<K::Words>,
    buckets: &mut K::Points,
) -> Result<()> {
    let entries_total = sorted.total;
    if entries_total == 0 {
        return Ok(());
    }
    let levels = Shape::levels(entries_total, k.resident()?);
    let next_len = |(t, slice): (u64, u32)| 2 * t.div_ceil(u64::from(slice));
    let mut next = (
        k.words(next_len(levels[0]), false)?,
        k.points(next_len(levels[0]), false)?,
    );
    k.accumulate_points(
        &sorted.entries,
        &sorted.ends,
        sorted.buckets,
        levels[0],
        buckets,
        &mut next,
    )?;
    for &level in &levels[1..] {
        let mut after = (
            k.words(next_len(level), false)?,
            k.points(next_len(level), false)?,
        );
        k.accumulate_partials(&next, level, buckets, &mut after)?;
        next = after;
    }
    Ok(())
}

/// Steps 5-6: each window's sum_m m * bucket_m by segments, then the segments summed by a tree
/// of `GROUP`-way steps (a power of two dividing the count at each level).
fn reduce<K: Kernels>(k: &mut K, s: &Shape, buckets: &K::Points) -> Result<Vec<u32>> {
    let mut per_window = s.segments_per_window();
    let mut level = k.points(u64::from(s.sets) * u64::from(per_window), false)?;
    k.window_segments(buckets, s, &mut level)?;
    while per_window > 1 {
        let m = GROUP.min(per_window);
        per_window /= m;
        let groups = u64::from(s.sets) * u64::from(per_window);
        let mut sums = k.points(groups, false)?;
        k.sum_groups(&level, groups, m, &mut sums)?;
        level = sums;
    }
    k.read_points(&level, s.sets as usize)
}

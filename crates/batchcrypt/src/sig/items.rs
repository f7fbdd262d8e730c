//! Verification items for the GPU kernels (`kernels/include/bc/verify.cuh`): every scheme hands
//! the device u1, u2, the key and r (ECDSA: e and s, of which a preparation kernel makes u1 and
//! u2), and the device computes R = u1·G + u2·Q and tests it. The scheme's host code does the
//! scalar algebra that needs no inversion and fills blocks of items; this module owns the layout,
//! the verdict codes and the chunked trip through the GPU.

use super::order::{Limbs, Order};
use super::{Reason, Sec1Key};
use crate::backend::cpu::with_kept;
use rayon::prelude::*;
use std::ops::Range;

/// Limbs per kernel item: u1, u2, key x, key y, r (eight little-endian 32-bit limbs each), flags.
pub(crate) const ITEM_LIMBS: usize = 41;
pub(crate) const ITEM_BYTES: usize = 4 * ITEM_LIMBS;

// Item flags and verdict codes, as bc/verify.cuh defines them.
const KEY_ODD: u32 = 1;
const KEY_COMPRESSED: u32 = 2;
const ITEM_SKIP: u32 = 4;
const OUT_VALID: u8 = 1;
const OUT_KEY_OFF_CURVE: u8 = 2;

/// Writes a big-endian 256-bit integer as the eight little-endian limbs from `limb` on.
fn put(dst: &mut [u8], limb: usize, be: &[u8; 32]) {
    for i in 0..8 {
        let w = u32::from_be_bytes(be[28 - 4 * i..32 - 4 * i].try_into().unwrap());
        dst[4 * (limb + i)..4 * (limb + i + 1)].copy_from_slice(&w.to_le_bytes());
    }
}

/// One item (`dst` is `ITEM_BYTES` long); integers big-endian.
pub(crate) fn encode(dst: &mut [u8], u1: &[u8; 32], u2: &[u8; 32], key: &Sec1Key, r: &[u8; 32]) {
    put(dst, 0, u1);
    put(dst, 8, u2);
    let (x, y, flags) = match *key {
        Sec1Key::Compressed { x, odd } => {
            (x, [0; 32], KEY_COMPRESSED | if odd { KEY_ODD } else { 0 })
        }
        Sec1Key::Uncompressed { x, y } => (x, y, 0),
    };
    put(dst, 16, &x);
    put(dst, 24, &y);
    put(dst, 32, r);
    dst[160..164].copy_from_slice(&flags.to_le_bytes());
}

/// Sets scheme-specific `flags` (bits above bc/verify.cuh's) on an encoded item.
pub(crate) fn add_flags(dst: &mut [u8], flags: u32) {
    let f = u32::from_le_bytes(dst[160..164].try_into().unwrap()) | flags;
    dst[160..164].copy_from_slice(&f.to_le_bytes());
}

/// An item the kernel passes over (its verdict comes from the host's reason).
pub(crate) fn skip(dst: &mut [u8]) {
    dst.fill(0);
    dst[160..164].copy_from_slice(&ITEM_SKIP.to_le_bytes());
}

/// An item's verdict from its host-side failure or the kernel's code.
pub(crate) fn verdict(reason: Option<Reason>, code: u8) -> Result<(), Reason> {
    match (reason, code) {
        (Some(why), _) => Err(why),
        (None, OUT_VALID) => Ok(()),
        (None, OUT_KEY_OFF_CURVE) => Err(Reason::PublicKeyNotOnCurve),
        (None, _) => Err(Reason::SignatureMismatch),
    }
}

/// One item as the host hands it to the device, integers below n: u1 = a, u2 = b for the schemes
/// whose algebra needs no inversion (BIP340: s and -e; SM2: s and r + s), and a = e, b = s for
/// ECDSA, whose u1 = e/s and u2 = r/s the device computes (its kernel's `prepare`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct HostItem {
    pub a: Limbs,
    pub b: Limbs,
    pub key: Sec1Key,
    pub r: [u8; 32],
}

/// Writes items `first..first + reasons.len()` (`make(i)`) as kernel items into `dst`, and each
/// item's host-side failure into `reasons`.
pub(crate) fn encode_host_items(
    dst: &mut [u8],
    reasons: &mut [Option<Reason>],
    first: usize,
    make: &(impl Fn(usize) -> Result<HostItem, Reason> + Sync),
) {
    encode_items(dst, reasons, first, make, |out, it| {
        encode(
            out,
            &Order::to_be(&it.a),
            &Order::to_be(&it.b),
            &it.key,
            &it.r,
        )
    });
}

/// Writes items `first..first + reasons.len()` (`make(i)`) into `dst` with the scheme's
/// `encode`, and each item's host-side failure into `reasons` (its item skipped).
pub(crate) fn encode_items<T>(
    dst: &mut [u8],
    reasons: &mut [Option<Reason>],
    first: usize,
    make: &impl Fn(usize) -> Result<T, Reason>,
    encode: impl Fn(&mut [u8], &T),
) {
    for (k, (out, reason)) in dst.chunks_exact_mut(ITEM_BYTES).zip(reasons).enumerate() {
        match make(first + k) {
            Ok(it) => {
                encode(out, &it);
                *reason = None;
            }
            Err(why) => {
                skip(out);
                *reason = Some(why);
            }
        }
    }
}

/// A scheme's encoder: items `first..first + reasons.len()` into `dst`, each host-side failure
/// into `reasons` (its item then skipped). Called on blocks in parallel.
pub(crate) trait FillItems: Sync {
    /// Whether `fill` only copies items encoded before (in order, whole), so it may write the
    /// write-combined staging itself; encoders write items piecewise, through a cached block.
    const COPIES: bool = false;
    fn fill(&self, first: usize, dst: &mut [u8], reasons: &mut [Option<Reason>]);
}

impl<F: Fn(usize, &mut [u8], &mut [Option<Reason>]) + Sync> FillItems for F {
    fn fill(&self, first: usize, dst: &mut [u8], reasons: &mut [Option<Reason>]) {
        self(first, dst, reasons)
    }
}

/// Bytes a scheme's preparation kernel reads after a chunk's items (SM2: the signer's ID and the
/// messages the device hashes). `()` for the schemes without.
pub(crate) trait Trailer: Sync {
    /// The trailer's length for the chunk of items `items`.
    fn len(&self, items: Range<usize>) -> usize;
    /// Writes it into `dst` (`len(items)` bytes).
    fn write(&self, items: Range<usize>, dst: &mut [u8]);
}

impl Trailer for () {
    fn len(&self, _: Range<usize>) -> usize {
        0
    }
    fn write(&self, _: Range<usize>, _: &mut [u8]) {}
}

/// Items per block handed to the scheme's encoder.
const BLOCK: usize = 1024;
/// Items per block copied from items encoded before: a batch's chunk is then one or a few tasks,
/// which a pool busy with other work (a server's requests) still runs without long waits.
const COPY_BLOCK: usize = 8192;
/// Items encoded before fill a chunk of up to this many bytes on the calling thread: copies into
/// page-locked staging run at about 6 GB/s on one core, and spread over a pool that a loaded
/// server keeps busy the chunk waited for its slowest piece (a served batch's 4.9 MB fill took
/// 0.9 ms on average, 1.6 ms at p90).
const SERIAL_COPY_BYTES: usize = 4 << 20;

/// Encodes items `first..first + reasons.len()` into `dst`, in parallel over blocks. Each block
/// is encoded in cached memory, then copied into `dst` in order: `dst` is write-combined staging,
/// written best sequentially in whole lines, and the encoders write items of 164 bytes piecewise;
/// items encoded before are copied into `dst` directly (on this thread up to
/// [`SERIAL_COPY_BYTES`]).
pub(crate) fn fill_parallel<F: FillItems>(
    dst: &mut [u8],
    reasons: &mut [Option<Reason>],
    first: usize,
    fill: &F,
) {
    if F::COPIES {
        if dst.len() <= SERIAL_COPY_BYTES {
            return fill.fill(first, dst, reasons);
        }
        return dst
            .par_chunks_mut(COPY_BLOCK * ITEM_BYTES)
            .zip(reasons.par_chunks_mut(COPY_BLOCK))
            .enumerate()
            .for_each(|(b, (dst, reasons))| fill.fill(first + b * COPY_BLOCK, dst, reasons));
    }
    dst.par_chunks_mut(BLOCK * ITEM_BYTES)
        .zip(reasons.par_chunks_mut(BLOCK))
        .enumerate()
        .for_each(|(b, (dst, reasons))| {
            with_kept(|block: &mut Vec<u8>| {
                block.resize(dst.len(), 0);
                fill.fill(first + b * BLOCK, block, reasons);
                dst.copy_from_slice(block);
            })
        });
}

/// Kernel items encoded ahead of their batch by the thread that produced them (a Bitcoin window's
/// interpreter tasks encode their checks as they record them, so the batch only copies). A batch
/// verified from such pieces must list the same items in the same order as its inputs.
#[derive(Default, Debug)]
pub(crate) struct Encoded {
    bytes: ItemBytes,
    reasons: Vec<Option<Reason>>,
}

/// Where a piece's items lie: ordinary memory, or a block of the page-locked pool, which a
/// batch's GPU kernels read in place ([`device::verify_pieces`]).
enum ItemBytes {
    Ordinary(Vec<u8>),
    PageLocked(crate::backend::gpu::PageLocked),
}

impl std::fmt::Debug for ItemBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let place = match self {
            ItemBytes::Ordinary(_) => "ordinary",
            ItemBytes::PageLocked(_) => "page-locked",
        };
        write!(f, "{} bytes, {place}", self.len())
    }
}

impl Default for ItemBytes {
    fn default() -> Self {
        ItemBytes::Ordinary(Vec::new())
    }
}

impl std::ops::Deref for ItemBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            ItemBytes::Ordinary(v) => v,
            ItemBytes::PageLocked(b) => b,
        }
    }
}

impl std::ops::DerefMut for ItemBytes {
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            ItemBytes::Ordinary(v) => v,
            ItemBytes::PageLocked(b) => b,
        }
    }
}

impl Encoded {
    /// Items `make(0..n)`, as a batch's.
    pub(crate) fn host_items(
        n: usize,
        make: impl Fn(usize) -> Result<HostItem, Reason> + Sync,
    ) -> Encoded {
        Self::host_items_into(ItemBytes::Ordinary(vec![0; n * ITEM_BYTES]), n, make)
    }

    /// [`Self::host_items`] into a page-locked block where the pool has one idle
    /// ([`crate::backend::gpu::page_locked_now`]: never without a GPU, nor over 1 MiB), so a
    /// batch of such pieces is joined on the GPU instead of copied into staging by its thread.
    pub(crate) fn host_items_page_locked(
        n: usize,
        make: impl Fn(usize) -> Result<HostItem, Reason> + Sync,
    ) -> Encoded {
        let bytes = match crate::backend::gpu::page_locked_now(n * ITEM_BYTES) {
            Some(block) => ItemBytes::PageLocked(block),
            None => ItemBytes::Ordinary(vec![0; n * ITEM_BYTES]),
        };
        Self::host_items_into(bytes, n, make)
    }

    /// Encodes every item, so every byte of `bytes` is written (a pool block's are unspecified).
    fn host_items_into(
        bytes: ItemBytes,
        n: usize,
        make: impl Fn(usize) -> Result<HostItem, Reason> + Sync,
    ) -> Encoded {
        let mut p = Encoded {
            bytes,
            reasons: vec![None; n],
        };
        encode_host_items(&mut p.bytes, &mut p.reasons, 0, &make);
        p
    }

    pub(crate) fn len(&self) -> usize {
        self.reasons.len()
    }

    #[cfg(test)]
    pub(crate) fn is_page_locked(&self) -> bool {
        matches!(self.bytes, ItemBytes::PageLocked(_))
    }
}

/// The items of `pieces` back to back, from item `offset` on, as a [`FillItems`]; None unless
/// they hold `n` items from there.
pub(crate) fn from_pieces<'p>(
    pieces: &'p [&'p Encoded],
    offset: usize,
    n: usize,
) -> Option<Pieces<'p>> {
    let mut starts = Vec::with_capacity(pieces.len() + 1);
    let mut total = 0;
    for p in pieces {
        starts.push(total);
        total += p.len();
    }
    (offset + n <= total).then_some(())?;
    starts.push(total);
    Some(Pieces {
        pieces,
        starts,
        offset,
    })
}

/// Items encoded before, in pieces, read as one batch from `offset` on ([`from_pieces`]).
pub(crate) struct Pieces<'p> {
    pieces: &'p [&'p Encoded],
    /// Where each piece starts in the whole, and the whole's length last.
    starts: Vec<usize>,
    offset: usize,
}

impl<'p> Pieces<'p> {
    /// Calls `each(piece, from, take)` for the runs of whole pieces' items that make up items
    /// `first..first + n` of the batch, in order: `take` items of `piece` from its item `from`.
    fn runs(&self, first: usize, n: usize, mut each: impl FnMut(&'p Encoded, usize, usize)) {
        let (mut at, end) = (self.offset + first, self.offset + first + n);
        // The last piece starting at or before `at`.
        let mut k = self.starts.partition_point(|&s| s <= at) - 1;
        while at < end {
            let p = self.pieces[k];
            let from = at - self.starts[k];
            let take = (p.len() - from).min(end - at);
            each(p, from, take);
            (at, k) = (at + take, k + 1);
        }
    }

    /// The encoded bytes of items `0..n` of the batch, as slices of the pieces, in order.
    fn segments(&self, n: usize) -> Vec<&'p [u8]> {
        let mut parts = Vec::with_capacity(self.pieces.len());
        self.runs(0, n, |p, from, take| {
            parts.push(&p.bytes[from * ITEM_BYTES..(from + take) * ITEM_BYTES])
        });
        parts
    }

    /// The host-side failures of items `0..n` of the batch.
    fn reasons(&self, n: usize) -> Vec<Option<Reason>> {
        let mut reasons = Vec::with_capacity(n);
        self.runs(0, n, |p, from, take| {
            reasons.extend_from_slice(&p.reasons[from..from + take])
        });
        reasons
    }
}

impl FillItems for Pieces<'_> {
    const COPIES: bool = true;
    fn fill(&self, first: usize, dst: &mut [u8], reasons: &mut [Option<Reason>]) {
        let mut done = 0;
        self.runs(first, reasons.len(), |p, from, take| {
            dst[done * ITEM_BYTES..(done + take) * ITEM_BYTES]
                .copy_from_slice(&p.bytes[from * ITEM_BYTES..(from + take) * ITEM_BYTES]);
            reasons[done..done + take].copy_from_slice(&p.reasons[from..from + take]);
            done += take;
        });
    }
}

/// All `n` items encoded at once, then their trailer (kernel-only timing, host emulation).
pub(crate) fn encode_all(
    n: usize,
    fill: &impl FillItems,
    trailer: &impl Trailer,
) -> (Vec<u8>, Vec<Option<Reason>>) {
    let mut bytes = vec![0u8; n * ITEM_BYTES + trailer.len(0..n)];
    let mut reasons = vec![None; n];
    let (items, tail) = bytes.split_at_mut(n * ITEM_BYTES);
    fill_parallel(items, &mut reasons, 0, fill);
    trailer.write(0..n, tail);
    (bytes, reasons)
}

/// Entries of the wide fixed-base table of G that the secp256k1, SM2 and P-256 kernels read
/// (`bc::WIDE_G_WINDOW` in kernels/include/bc/ecmult.cuh): 13 signed 20-bit windows of 2^19
/// affine points (436 MB) on the GPU.
pub(crate) const WIDE_G_TABLE_LEN: usize = 13 << 19;
/// The same table as the host emulation builds it: 22 signed 12-bit windows of 2^11 points.
#[cfg(feature = "emulation")]
pub(crate) const EMULATED_WIDE_G_TABLE_LEN: usize = 22 << 11;

pub mod device {
    use super::{
        encode_all, encode_host_items, fill_parallel, verdict, FillItems, HostItem, Reason,
        Trailer, ITEM_BYTES,
    };
    use crate::backend::cuda::{
        device_table, grid_1d, time_on_stream, DriverResult, Gpu, KernelImage,
    };
    use crate::error::Result;
    use crate::pipeline::{run_spans, Span};
    use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, PushKernelArg};
    use rayon::prelude::*;
    use std::sync::Arc;

    const THREADS: u32 = 128;
    /// Batches below this many items set up and read their verdicts on the calling thread:
    /// fork-joins over a pool that other work keeps busy (a server's) waited milliseconds.
    const SERIAL_BELOW: usize = 1 << 18;

    /// A verification kernel `f(items, gtable, verdicts, n)` with its curve's fixed-base table,
    /// which the kernel `table(gtable)` writes (`table_len` affine points). Each GPU thread takes
    /// `items_per_thread` consecutive items (several share an inversion). `prepare(items, n)`,
    /// where the scheme has one, turns the host's items into the verification's in place first
    /// (ECDSA: e, s into u1 = e/s, u2 = r/s; SM2: t = r + s, r - e, e hashed there).
    pub struct Kernel {
        pub image: &'static KernelImage,
        pub name: &'static str,
        pub table: &'static str,
        pub table_len: usize,
        pub items_per_thread: u64,
        pub prepare: Option<Prepare>,
    }

    /// A preparation kernel, each of whose threads takes `items_per_thread` consecutive items.
    #[derive(Clone, Copy)]
    pub struct Prepare {
        pub name: &'static str,
        pub items_per_thread: u64,
    }

    impl Prepare {
        /// ECDSA's: bc/verify.cuh's `ecdsa_prepare`, PREPARE_ITEMS items sharing an inversion.
        pub const fn ecdsa(name: &'static str) -> Prepare {
            Prepare {
                name,
                items_per_thread: 16,
            }
        }
    }

    /// A kernel's functions on `gpu`: the verification and its preparation (with its items per
    /// thread), if any.
    type Functions = (CudaFunction, Option<(CudaFunction, u64)>);

    fn functions(gpu: &Gpu, k: &Kernel) -> Result<Functions> {
        let prepare = k
            .prepare
            .map(|p| {
                Ok::<_, crate::error::Error>((gpu.function(k.image, p.name)?, p.items_per_thread))
            })
            .transpose()?;
        Ok((gpu.function(k.image, k.name)?, prepare))
    }

    impl Kernel {
        /// The fixed-base table, computed once per device.
        fn table(&self, gpu: &Gpu) -> Result<&'static CudaSlice<u8>> {
            device_table(gpu, self.image, self.table, self.table_len, 64)
        }
    }

    /// [`time_kernel`] for items a scheme makes one by one.
    pub(crate) fn time_host_items(
        k: &Kernel,
        n: usize,
        make: impl Fn(usize) -> std::result::Result<HostItem, Reason> + Sync,
        iters: usize,
    ) -> Result<(f64, Vec<std::result::Result<(), Reason>>)> {
        let fill = |first, dst: &mut [u8], reasons: &mut [Option<Reason>]| {
            encode_host_items(dst, reasons, first, &make)
        };
        time_kernel(k, n, &fill, &(), iters)
    }

    /// [`verify`] for items a scheme makes one by one.
    pub(crate) fn verify_host_items(
        k: &Kernel,
        n: usize,
        make: impl Fn(usize) -> std::result::Result<HostItem, Reason> + Sync,
    ) -> Result<Vec<std::result::Result<(), Reason>>> {
        let fill = |first, dst: &mut [u8], reasons: &mut [Option<Reason>]| {
            encode_host_items(dst, reasons, first, &make)
        };
        verify(k, n, &fill, &())
    }

    fn launch(
        stream: &Arc<CudaStream>,
        (f, prepare): &Functions,
        per_thread: u64,
        input: &CudaSlice<u8>,
        table: &CudaSlice<u8>,
        out: &mut CudaSlice<u8>,
        count: usize,
    ) -> Result<()> {
        let n64 = count as u64;
        if let Some((p, per)) = prepare {
            let mut b = stream.launch_builder(p);
            b.arg(input).arg(&n64);
            // SAFETY: matches the preparation kernels' signature; they rewrite the `count` items
            // of `input` in place (reading the trailer after them), on this stream, before the
            // verification reads them.
            unsafe { b.launch(grid_1d(n64.div_ceil(*per), THREADS)) }.driver("launch")?;
        }
        let mut b = stream.launch_builder(f);
        b.arg(input).arg(table).arg(out).arg(&n64);
        // SAFETY: matches the verification kernels' signature; `input` holds `count` items.
        unsafe { b.launch(grid_1d(n64.div_ceil(per_thread), THREADS)) }
            .map(|_| ())
            .driver("launch")
    }

    /// Kernel-only time over `n` items (and their trailer) already in GPU memory: the median of
    /// `iters` launches timed with device events, in seconds, and the verdicts.
    pub(crate) fn time_kernel(
        k: &Kernel,
        n: usize,
        fill: &impl FillItems,
        trailer: &impl Trailer,
        iters: usize,
    ) -> Result<(f64, Vec<std::result::Result<(), Reason>>)> {
        let gpu = Gpu::available()?;
        let table = k.table(gpu)?;
        let f = functions(gpu, k)?;
        let stream = gpu.stream()?;
        let (bytes, reasons) = encode_all(n, fill, trailer);
        let input = stream.clone_htod(&bytes).driver("upload")?;
        let mut out = stream.alloc_zeros::<u8>(n).driver("cuMemAlloc")?;
        // A preparation rewrites the items: each launch then runs on a fresh copy, whose
        // device-to-device copy the time includes.
        let mut work = match k.prepare {
            Some(_) => Some(stream.alloc_zeros::<u8>(bytes.len()).driver("cuMemAlloc")?),
            None => None,
        };
        let seconds = time_on_stream(&stream, iters, || match work.as_mut() {
            Some(w) => {
                stream.memcpy_dtod(&input, w).driver("copy")?;
                launch(&stream, &f, k.items_per_thread, w, table, &mut out, n)
            }
            None => launch(&stream, &f, k.items_per_thread, &input, table, &mut out, n),
        })?;
        let codes = stream.clone_dtoh(&out).driver("download")?;
        stream.synchronize().driver("sync")?;
        Ok((
            seconds,
            reasons
                .into_iter()
                .zip(codes)
                .map(|(r, c)| verdict(r, c))
                .collect(),
        ))
    }

    /// [`verify`] of items encoded before: where every piece's share of the batch lies in a
    /// page-locked block as whole 16-byte words ([`crate::pipeline::gatherable`]: pieces from
    /// [`Encoded::host_items_page_locked`] of a multiple of 4 items), a kernel joins them on the
    /// device, reading them in place, and the batch runs as one chunk; otherwise they are copied
    /// into staging chunk by chunk.
    pub(crate) fn verify_pieces(
        k: &Kernel,
        n: usize,
        pieces: &super::Pieces<'_>,
    ) -> Result<Vec<std::result::Result<(), Reason>>> {
        let parts = pieces.segments(n);
        if !parts.iter().all(|p| crate::pipeline::gatherable(p)) {
            return verify(k, n, pieces, &());
        }
        let gpu = Gpu::available()?;
        let table = k.table(gpu)?;
        let f = functions(gpu, k)?;
        let mut codes = vec![0u8; n];
        crate::pipeline::run_gathered(gpu, &parts, &mut codes, |stream, input, out| {
            launch(stream, &f, k.items_per_thread, input, table, out, n)
        })?;
        Ok(pieces
            .reasons(n)
            .into_iter()
            .zip(codes)
            .map(|(r, c)| verdict(r, c))
            .collect())
    }

    /// Where each chunk of `n` items starts (and `n` last): at least four chunks (the
    /// preparation of one overlaps the GPU's work on another) of a quarter of a GPU wave to a
    /// little over one, the first a quarter of the others, so the GPU starts after a short
    /// preparation rather than a full chunk's.
    pub(crate) fn chunk_starts(n: usize) -> Vec<usize> {
        let chunk = (n / 4).clamp(1 << 15, 1 << 17);
        let mut starts = vec![0];
        let mut at = (chunk / 4).min(n);
        while at < n {
            starts.push(at);
            at = (at + chunk).min(n);
        }
        starts.push(n);
        starts
    }

    /// Verifies `n` items chunk by chunk: the host encodes chunk k + 1 (its items, then its
    /// trailer) while the GPU works on chunk k.
    pub(crate) fn verify(
        k: &Kernel,
        n: usize,
        fill: &impl FillItems,
        trailer: &impl Trailer,
    ) -> Result<Vec<std::result::Result<(), Reason>>> {
        let t = std::time::Instant::now();
        let gpu = Gpu::available()?;
        let table = k.table(gpu)?;
        let f = functions(gpu, k)?;
        let mut codes = vec![0u8; n];
        let mut reasons = Vec::with_capacity(n);
        if n < SERIAL_BELOW {
            reasons.resize(n, None);
        } else {
            reasons.par_extend(rayon::iter::repeat_n(None, n));
        }
        let setup = t.elapsed();
        let starts = chunk_starts(n);
        let spans: Vec<Span> = starts
            .windows(2)
            .map(|w| Span {
                in_bytes: (w[1] - w[0]) * ITEM_BYTES + trailer.len(w[0]..w[1]),
                out_bytes: w[1] - w[0],
                scratch_bytes: 0,
            })
            .collect();
        run_spans(
            gpu,
            &spans,
            3,
            |c, dst| {
                let (first, count) = (starts[c], starts[c + 1] - starts[c]);
                let (items, tail) = dst.split_at_mut(count * ITEM_BYTES);
                let reasons = &mut reasons[first..first + count];
                rayon::join(
                    || fill_parallel(items, reasons, first, fill),
                    || trailer.write(first..first + count, tail),
                );
                Ok(())
            },
            |stream, input, out, c| {
                let count = starts[c + 1] - starts[c];
                launch(stream, &f, k.items_per_thread, input, table, out, count)
            },
            |c, src| {
                codes[starts[c]..starts[c + 1]].copy_from_slice(src);
                Ok(())
            },
        )?;
        let t = std::time::Instant::now();
        let each = |(r, c)| verdict(r, c);
        // On all cores for a large batch (tens of milliseconds on one).
        let verdicts = if n < SERIAL_BELOW {
            reasons.into_iter().zip(codes).map(each).collect()
        } else {
            reasons.into_par_iter().zip(codes).map(each).collect()
        };
        if crate::pipeline::tracing() {
            eprintln!(
                "verification of {n} items: {:.2} ms before the pipeline, {:.2} ms after",
                setup.as_secs_f64() * 1e3,
                t.elapsed().as_secs_f64() * 1e3
            );
        }
        Ok(verdicts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Chunks cover every item once, in order, none empty, the first a quarter of the rest.
    #[test]
    fn chunks_cover_the_batch() {
        for n in [
            1usize,
            2,
            1 << 13,
            (1 << 15) + 1,
            1 << 17,
            1 << 20,
            (1 << 20) + 7,
            1 << 22,
        ] {
            let s = device::chunk_starts(n);
            assert_eq!((s[0], *s.last().unwrap()), (0, n));
            assert!(s.windows(2).all(|w| w[0] < w[1]), "{n}: {s:?}");
            let chunk = (n / 4).clamp(1 << 15, 1 << 17);
            assert_eq!(s[1], (chunk / 4).min(n));
            assert!(s.windows(2).skip(1).all(|w| w[1] - w[0] <= chunk));
            if n >= 1 << 20 {
                assert!(s.len() > 5);
            }
        }
    }

    /// Pieces of every size (empty ones included) read back at every offset and block size give
    /// the items of the whole, in order.
    #[test]
    fn pieces_read_back_as_one_batch() {
        let sizes = [0usize, 3, 0, 0, 1, 5, 0, 2];
        let mut next = 0u8;
        let pieces: Vec<Encoded> = sizes
            .iter()
            .map(|&n| {
                let mut p = Encoded {
                    bytes: ItemBytes::Ordinary(vec![0; n * ITEM_BYTES]),
                    reasons: vec![None; n],
                };
                for k in 0..n {
                    p.bytes[k * ITEM_BYTES..(k + 1) * ITEM_BYTES].fill(next);
                    p.reasons[k] = next.is_multiple_of(3).then_some(Reason::BadDer);
                    next += 1;
                }
                p
            })
            .collect();
        let refs: Vec<&Encoded> = pieces.iter().collect();
        let total = next as usize;
        assert!(from_pieces(&refs, 0, total + 1).is_none());
        assert!(from_pieces(&refs, 1, total).is_none());
        for offset in 0..total {
            for n in 0..=total - offset {
                let fill = from_pieces(&refs, offset, n).unwrap();
                // The batch's share of each piece, as the GPU joins them.
                let joined = fill.segments(n).concat();
                assert!(joined.len() == n * ITEM_BYTES);
                assert!((0..n).all(|k| joined[k * ITEM_BYTES] == (offset + k) as u8));
                let reasons = fill.reasons(n);
                assert!((0..n).all(|k| reasons[k]
                    == ((offset + k) as u8)
                        .is_multiple_of(3)
                        .then_some(Reason::BadDer)));
                for block in 1..=n.max(1) {
                    let mut bytes = vec![0xffu8; n * ITEM_BYTES];
                    let mut reasons = vec![Some(Reason::HighS); n];
                    for first in (0..n).step_by(block) {
                        let m = block.min(n - first);
                        fill.fill(
                            first,
                            &mut bytes[first * ITEM_BYTES..(first + m) * ITEM_BYTES],
                            &mut reasons[first..first + m],
                        );
                    }
                    for k in 0..n {
                        let v = (offset + k) as u8;
                        assert!(bytes[k * ITEM_BYTES..(k + 1) * ITEM_BYTES]
                            .iter()
                            .all(|&b| b == v));
                        assert_eq!(reasons[k], v.is_multiple_of(3).then_some(Reason::BadDer));
                    }
                }
            }
        }
    }

    /// A chunk filled from pieces on this thread (small) and over the pool (large) holds the
    /// same items.
    #[test]
    fn pieces_fill_a_chunk_serially_or_in_parallel_alike() {
        let per = 1000;
        let pieces: Vec<Encoded> = (0..40)
            .map(|i| Encoded {
                bytes: ItemBytes::Ordinary(
                    (0..per * ITEM_BYTES)
                        .map(|b| (b / ITEM_BYTES + i * 7) as u8)
                        .collect(),
                ),
                reasons: (0..per)
                    .map(|k| (k % 5 == i % 5).then_some(Reason::BadDer))
                    .collect(),
            })
            .collect();
        let refs: Vec<&Encoded> = pieces.iter().collect();
        let total = per * pieces.len();
        assert!(total * ITEM_BYTES > SERIAL_COPY_BYTES);
        for (offset, n) in [(0, 10), (999, 2000), (0, total), (17, total - 17)] {
            let fill = from_pieces(&refs, offset, n).unwrap();
            let mut bytes = vec![0xffu8; n * ITEM_BYTES];
            let mut reasons = vec![Some(Reason::HighS); n];
            fill_parallel(&mut bytes, &mut reasons, 0, &fill);
            for k in 0..n {
                let (p, at) = ((offset + k) / per, (offset + k) % per);
                let item = &pieces[p].bytes[at * ITEM_BYTES..(at + 1) * ITEM_BYTES];
                assert_eq!(
                    &bytes[k * ITEM_BYTES..(k + 1) * ITEM_BYTES],
                    item,
                    "{offset} + {k}"
                );
                assert_eq!(reasons[k], pieces[p].reasons[at]);
            }
        }
    }
}

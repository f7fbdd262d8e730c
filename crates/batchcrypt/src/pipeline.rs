//! The host↔GPU pipeline: a batch in host memory is streamed through the GPU in chunks so that the
//! host copy into pinned staging, the upload, the kernel and the download of different chunks run
//! at the same time on separate streams.

use crate::backend::cuda::{DriverResult, Gpu};
use crate::backend::device::Link;
use crate::error::{Error, Result};
use cudarc::driver::{CudaSlice, CudaStream, PinnedHostSlice};
use std::sync::{Arc, Mutex};

/// How a fixed-size-item batch is cut into chunks.
#[derive(Clone, Copy, Debug)]
pub struct PipelineConfig {
    /// Items per chunk; large enough to fill the GPU, small enough to overlap.
    pub chunk_items: usize,
    /// Chunks in flight (one stream and one set of buffers each).
    pub depth: usize,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        PipelineConfig {
            chunk_items: 1 << 20,
            depth: 3,
        }
    }
}

/// One chunk in flight: a stream with its pinned staging buffers and device buffers.
struct Slot {
    stream: Arc<CudaStream>,
    host_in: PinnedHostSlice<u8>,
    host_out: PinnedHostSlice<u8>,
    dev_in: CudaSlice<u8>,
    dev_out: CudaSlice<u8>,
    /// The chunk whose output waits in `host_out`.
    pending: Option<usize>,
}

impl Slot {
    /// Staging for `in_bytes` up and `out_bytes` down; the device output buffer holds
    /// `dev_out_bytes` (the output and any scratch space the kernels need after it).
    fn new(gpu: &Gpu, in_bytes: usize, out_bytes: usize, dev_out_bytes: usize) -> Result<Slot> {
        let ctx = gpu.context();
        let stream = ctx.new_stream().driver("cuStreamCreate")?;
        // SAFETY: staging buffers are written before they are read. The input side is
        // write-combined: the host only writes it, and the upload reads it faster.
        let (host_in, host_out) = unsafe {
            (
                ctx.alloc_pinned_with_flags::<u8>(
                    in_bytes.max(1),
                    cudarc::driver::sys::CU_MEMHOSTALLOC_WRITECOMBINED,
                )
                .driver("cuMemHostAlloc")?,
                ctx.alloc_pinned_with_flags::<u8>(out_bytes.max(1), 0)
                    .driver("cuMemHostAlloc")?,
            )
        };
        let dev_in = unsafe { stream.alloc::<u8>(in_bytes.max(1)) }.driver("cuMemAlloc")?;
        let dev_out = unsafe { stream.alloc::<u8>(dev_out_bytes.max(out_bytes).max(1)) }
            .driver("cuMemAlloc")?;
        Ok(Slot {
            stream,
            host_in,
            host_out,
            dev_in,
            dev_out,
            pending: None,
        })
    }

    fn fits(&self, in_bytes: usize, out_bytes: usize, dev_out_bytes: usize) -> bool {
        self.host_in.len() >= in_bytes
            && self.host_out.len() >= out_bytes
            && self.dev_out.len() >= dev_out_bytes
    }
}

/// Per-chunk resources kept between calls: page-locking memory costs far more than the copies it
/// speeds up (hundreds of milliseconds per gigabyte), and creating streams and device buffers for
/// every call cost 80-120 µs, a quarter of a 16 MiB call from page-locked memory. A process pays
/// them once per size, not per batch.
/// Each device keeps its own ([`Gpu::local`]).
struct Kept<S>(Mutex<Vec<S>>);

impl<S> Default for Kept<S> {
    fn default() -> Self {
        Kept(Mutex::new(Vec::new()))
    }
}

/// Slots each pool keeps at most (the largest). A pool only grows to the slots its device's calls
/// held at once, so this bounds a burst, not the usual case: the service runs four batches of an
/// operation at once, of depth 3 each, beside other calls. At 6, a server's third batch made
/// page-locked buffers and freed them again on every run (milliseconds each).
const POOL_SLOTS: usize = 16;

/// A slot a pool can keep.
trait PoolSlot {
    /// What the pool ranks slots by when it keeps only the largest: the memory that costs most
    /// to make again.
    fn kept_bytes(&self) -> usize;
}

impl<S: PoolSlot> Kept<S> {
    /// `depth` slots that `fits` accepts: kept ones first, the rest from `make`.
    fn take(
        &self,
        depth: usize,
        fits: impl Fn(&S) -> bool,
        mut make: impl FnMut() -> Result<S>,
    ) -> Result<Vec<S>> {
        let mut pool = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let mut slots = Vec::with_capacity(depth);
        while slots.len() < depth {
            match pool.iter().position(&fits) {
                Some(i) => slots.push(pool.swap_remove(i)),
                None => break,
            }
        }
        drop(pool);
        while slots.len() < depth {
            slots.push(make()?);
        }
        Ok(slots)
    }

    /// Keeps `slots` (of a call that succeeded: a slot whose stream failed is dropped instead).
    fn give(&self, mut slots: Vec<S>) {
        let mut pool = self.0.lock().unwrap_or_else(|p| p.into_inner());
        pool.append(&mut slots);
        pool.sort_by_key(|s| std::cmp::Reverse(s.kept_bytes()));
        pool.truncate(POOL_SLOTS);
    }
}

impl PoolSlot for Slot {
    fn kept_bytes(&self) -> usize {
        self.host_in.len() + self.host_out.len()
    }
}

/// Where a pipelined call spent its host time (printed when `BATCHCRYPT_TRACE` is set).
#[derive(Default)]
struct Trace {
    /// Taking the call's slots (making those the pool could not give).
    slots_s: f64,
    fill_s: f64,
    /// Enqueueing the copies and kernels.
    launch_s: f64,
    wait_s: f64,
    copy_out_s: f64,
}

/// Whether `BATCHCRYPT_TRACE` asks for per-call timings on stderr.
pub fn tracing() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        std::env::var_os("BATCHCRYPT_TRACE").is_some_and(|v| !v.is_empty() && v != "0")
    })
}

pub use crate::backend::cpu::par_copy;

/// Streams `n` items of `in_size` bytes through `launch` into `output` (items of `out_size`).
/// `fill(first, dst)` writes items `first..` into the pinned staging buffer `dst` (a copy, or the
/// host-side preparation itself, which then overlaps the GPU work of the other chunks);
/// `launch(stream, dev_in, dev_out, items)` enqueues the kernel for one chunk.
pub fn run_chunked(
    gpu: &Gpu,
    n: usize,
    in_size: usize,
    output: &mut [u8],
    out_size: usize,
    cfg: PipelineConfig,
    mut fill: impl FnMut(usize, &mut [u8]) -> Result<()>,
    mut launch: impl FnMut(&Arc<CudaStream>, &CudaSlice<u8>, &mut CudaSlice<u8>, usize) -> Result<()>,
) -> Result<()> {
    debug_assert_eq!(output.len(), n * out_size);
    let chunks = chunk_ranges(n, cfg.chunk_items);
    let spans: Vec<Span> = chunks
        .iter()
        .map(|r| Span {
            in_bytes: r.len() * in_size,
            out_bytes: r.len() * out_size,
            scratch_bytes: 0,
        })
        .collect();
    run_spans(
        gpu,
        &spans,
        cfg.depth,
        |c, dst| fill(chunks[c].start, dst),
        |stream, i, o, c| launch(stream, i, o, chunks[c].len()),
        |c, src| {
            let at = chunks[c].start * out_size;
            par_copy(&mut output[at..at + src.len()], src);
            Ok(())
        },
    )
}

/// The items of each chunk when `n` items stream in chunks of `chunk`. From four chunks on, the
/// first two and the last two are a quarter and a half of one: the first upload and the last
/// download and copy-out overlap no kernel, so smaller ends shorten the batch. Every chunk but
/// the last starts at a multiple of a quarter chunk (of `chunk` where it is not a multiple of 4).
pub(crate) fn chunk_ranges(n: usize, chunk: usize) -> Vec<std::ops::Range<usize>> {
    let chunk = chunk.clamp(1, n.max(1));
    let q = chunk / 4;
    let sizes: Vec<usize> = if !chunk.is_multiple_of(4) || n < 4 * chunk {
        (0..n).step_by(chunk).map(|s| chunk.min(n - s)).collect()
    } else {
        // In quarters: 1, 2, then 4s and one shorter remainder, then 2, 1; the items past the
        // last whole quarter join the last chunk.
        let units = n / q;
        let middle = units - 6;
        let mut v = vec![q, 2 * q];
        v.extend(std::iter::repeat_n(chunk, middle / 4));
        if !middle.is_multiple_of(4) {
            v.push((middle % 4) * q);
        }
        v.extend([2 * q, q + n % q]);
        v
    };
    let mut start = 0;
    sizes
        .into_iter()
        .map(|k| {
            start += k;
            start - k..start
        })
        .collect()
}

/// One chunk of a batch cut into chunks of different sizes (messages of any length): the bytes
/// staged for its upload, the bytes its download brings back, and device scratch space its
/// kernels use after the output (not downloaded).
#[derive(Clone, Copy, Debug)]
pub struct Span {
    pub in_bytes: usize,
    pub out_bytes: usize,
    pub scratch_bytes: usize,
}

/// Streams chunks through `launch` on `depth` streams: `fill(c, dst)` writes chunk `c`'s input
/// into its pinned staging buffer, `launch(stream, dev_in, dev_out, c)` enqueues its kernels, and
/// `collect(c, out)` takes its downloaded output (the first `out_bytes` of `dev_out`).
pub fn run_spans(
    gpu: &Gpu,
    spans: &[Span],
    depth: usize,
    mut fill: impl FnMut(usize, &mut [u8]) -> Result<()>,
    mut launch: impl FnMut(&Arc<CudaStream>, &CudaSlice<u8>, &mut CudaSlice<u8>, usize) -> Result<()>,
    mut collect: impl FnMut(usize, &[u8]) -> Result<()>,
) -> Result<()> {
    let depth = depth.clamp(1, spans.len().max(1));
    let t_start = std::time::Instant::now();
    let in_max = spans.iter().map(|s| s.in_bytes).max().unwrap_or(0);
    let out_max = spans.iter().map(|s| s.out_bytes).max().unwrap_or(0);
    let dev_out_max = spans
        .iter()
        .map(|s| s.out_bytes + s.scratch_bytes)
        .max()
        .unwrap_or(0);
    let staged = gpu.local::<Kept<Slot>>();
    let mut slots = staged.take(
        depth,
        |s| s.fits(in_max, out_max, dev_out_max),
        || Slot::new(gpu, in_max, out_max, dev_out_max),
    )?;
    let mut trace = Trace {
        slots_s: t_start.elapsed().as_secs_f64(),
        ..Trace::default()
    };
    let mut drain = |slot: &mut Slot, trace: &mut Trace| -> Result<()> {
        if let Some(c) = slot.pending.take() {
            let t = std::time::Instant::now();
            slot.stream.synchronize().driver("cuStreamSynchronize")?;
            trace.wait_s += t.elapsed().as_secs_f64();
            let t = std::time::Instant::now();
            let src = slot.host_out.as_slice().driver("pinned read")?;
            collect(c, &src[..spans[c].out_bytes])?;
            trace.copy_out_s += t.elapsed().as_secs_f64();
        }
        Ok(())
    };
    let mut run = || -> Result<()> {
        for (c, span) in spans.iter().enumerate() {
            let slot = &mut slots[c % depth];
            drain(slot, &mut trace)?;
            let t = std::time::Instant::now();
            fill(
                c,
                &mut slot.host_in.as_mut_slice().driver("pinned write")?[..span.in_bytes],
            )?;
            trace.fill_s += t.elapsed().as_secs_f64();
            let t = std::time::Instant::now();
            if span.in_bytes > 0 {
                let src = &slot.host_in.as_slice().driver("pinned")?[..span.in_bytes];
                slot.stream
                    .memcpy_htod(src, &mut slot.dev_in.slice_mut(..span.in_bytes))
                    .driver("cuMemcpyHtoDAsync")?;
            }
            launch(&slot.stream, &slot.dev_in, &mut slot.dev_out, c)?;
            if span.out_bytes > 0 {
                slot.stream
                    .memcpy_dtoh(
                        &slot.dev_out.slice(..span.out_bytes),
                        &mut slot.host_out.as_mut_slice().driver("pinned")?[..span.out_bytes],
                    )
                    .driver("cuMemcpyDtoHAsync")?;
            }
            trace.launch_s += t.elapsed().as_secs_f64();
            slot.pending = Some(c);
        }
        for slot in slots.iter_mut() {
            drain(slot, &mut trace)?;
        }
        Ok(())
    };
    let result = run();
    if result.is_err() {
        // A chunk's preparation or launch failed: let the chunks in flight finish before their
        // buffers go (their copies would write into freed memory).
        for slot in slots.iter_mut() {
            let _ = slot.stream.synchronize();
        }
    }
    if tracing() {
        let ms = |s: f64| s * 1e3;
        eprintln!(
            "pipeline on GPU {}: {} bytes out in {} chunks (depth {depth}): {:.2} ms; slots {:.2} ms, host fill {:.2} ms, launches {:.2} ms, waiting on the GPU {:.2} ms, copying out {:.2} ms",
            gpu.index(),
            spans.iter().map(|s| s.out_bytes).sum::<usize>(),
            spans.len(),
            ms(t_start.elapsed().as_secs_f64()),
            ms(trace.slots_s),
            ms(trace.fill_s),
            ms(trace.launch_s),
            ms(trace.wait_s),
            ms(trace.copy_out_s)
        );
    }
    if result.is_ok() {
        staged.give(slots);
    }
    result
}

/// Whether [`run_gathered`] can read `part` in place: it lies in a block of
/// [`crate::backend::gpu::page_locked`] and is whole 16-byte words on a word boundary.
pub(crate) fn gatherable(part: &[u8]) -> bool {
    crate::backend::cuda::is_page_locked_block(part)
        && part.len().is_multiple_of(16)
        && (part.as_ptr() as usize).is_multiple_of(16)
}

/// Runs one batch whose input is `parts` (page-locked host memory, each a whole number of 16-byte
/// words on a word boundary), joined in order on the device by a kernel that reads them in place
/// over the host link, rather than by a host thread copying them into a staging buffer first:
/// `launch(stream, dev_in, dev_out)` enqueues the kernels over the joined input, and the first
/// `output.len()` bytes of `dev_out` come back into `output` (copied there by the GPU where
/// `output` lies in a page-locked block too, as a service's batch outputs do).
pub fn run_gathered(
    gpu: &Gpu,
    parts: &[&[u8]],
    output: &mut [u8],
    launch: impl FnOnce(&Arc<CudaStream>, &CudaSlice<u8>, &mut CudaSlice<u8>) -> Result<()>,
) -> Result<()> {
    use cudarc::driver::PushKernelArg;
    if !parts.iter().all(|p| gatherable(p)) {
        return Err(crate::Error::invalid(
            "gathered parts must be page-locked blocks of whole 16-byte words on word boundaries",
        ));
    }
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let out_bytes = output.len();
    let f = gpu.function(&crate::kernels::GATHER, "gather_words")?;
    let staged = gpu.local::<Kept<Slot>>();
    let mut slots = staged.take(
        1,
        |s| s.fits(total, out_bytes, out_bytes),
        || Slot::new(gpu, total, out_bytes, out_bytes),
    )?;
    let slot = &mut slots[0];
    let run = || -> Result<()> {
        let parts: Vec<&&[u8]> = parts.iter().filter(|p| !p.is_empty()).collect();
        if !parts.is_empty() {
            // Where each part starts (host and device share addresses for page-locked memory)
            // and where it ends in the output, in words.
            let starts: Vec<u64> = parts.iter().map(|p| p.as_ptr() as u64).collect();
            let ends: Vec<u64> = parts
                .iter()
                .scan(0u64, |at, p| {
                    *at += (p.len() / 16) as u64;
                    Some(*at)
                })
                .collect();
            let (starts, ends) = (
                slot.stream.clone_htod(&starts).driver("upload")?,
                slot.stream.clone_htod(&ends).driver("upload")?,
            );
            let (count, words) = (parts.len() as u32, (total / 16) as u64);
            let mut b = slot.stream.launch_builder(&f);
            b.arg(&starts)
                .arg(&ends)
                .arg(&count)
                .arg(&mut slot.dev_in)
                .arg(&words);
            // SAFETY: the arguments match the kernel; every part is live page-locked memory
            // until the stream is waited for below, and the output holds `total` bytes.
            unsafe { b.launch(crate::backend::cuda::grid_1d(words, 256)) }.driver("gather")?;
        }
        launch(&slot.stream, &slot.dev_in, &mut slot.dev_out)?;
        // An output in page-locked memory is written there by the copy engine; any other comes
        // through the slot's staging buffer and a host copy.
        let in_place = out_bytes > 0 && crate::backend::cuda::is_page_locked_block(output);
        if in_place {
            slot.stream
                .memcpy_dtoh(&slot.dev_out.slice(..out_bytes), output)
                .driver("cuMemcpyDtoHAsync")?;
        } else if out_bytes > 0 {
            slot.stream
                .memcpy_dtoh(
                    &slot.dev_out.slice(..out_bytes),
                    &mut slot.host_out.as_mut_slice().driver("pinned")?[..out_bytes],
                )
                .driver("cuMemcpyDtoHAsync")?;
        }
        slot.stream.synchronize().driver("cuStreamSynchronize")?;
        if !in_place {
            let src = slot.host_out.as_slice().driver("pinned read")?;
            par_copy(output, &src[..out_bytes]);
        }
        Ok(())
    };
    let result = run();
    if result.is_err() {
        // The kernel may still read the parts: wait for it before the caller frees them.
        let _ = slot.stream.synchronize();
    } else {
        staged.give(slots);
    }
    result
}

/// Whether all of `buf` lies in page-locked host memory (allocated pinned, or registered with the
/// driver), so the GPU's copy engines can read or write it directly.
pub fn is_pinned(gpu: &Gpu, buf: &[u8]) -> bool {
    use cudarc::driver::sys;
    if buf.is_empty() || gpu.context().bind_to_thread().is_err() {
        return false;
    }
    let host = |p: *const u8| {
        let mut kind: u32 = 0;
        let mut attribute = sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
        let mut data = [(&mut kind as *mut u32).cast::<std::ffi::c_void>()];
        // SAFETY: one attribute into one u32. The plural call, unlike cuPointerGetAttribute,
        // answers "no type" for memory the driver does not know (pageable) instead of failing,
        // so probing raises no driver error for tools that report them (compute-sanitizer).
        let r =
            unsafe { sys::cuPointerGetAttributes(1, &mut attribute, data.as_mut_ptr(), p as u64) };
        r == sys::CUresult::CUDA_SUCCESS && kind == sys::CUmemorytype::CU_MEMORYTYPE_HOST as u32
    };
    host(buf.as_ptr()) && host(buf.as_ptr().wrapping_add(buf.len() - 1))
}

/// One chunk in flight on the direct path: a stream and the device buffers its chunk passes
/// through (no staging: the copy engines reach the caller's page-locked buffers).
struct DirectSlot {
    stream: Arc<CudaStream>,
    dev_in: CudaSlice<u8>,
    dev_out: CudaSlice<u8>,
}

impl DirectSlot {
    fn new(gpu: &Gpu, chunk: usize) -> Result<DirectSlot> {
        let stream = gpu.context().new_stream().driver("cuStreamCreate")?;
        // SAFETY: each buffer is written (upload, kernel) before it is read.
        let (a, b) = unsafe { (stream.alloc::<u8>(chunk), stream.alloc::<u8>(chunk)) };
        Ok(DirectSlot {
            dev_in: a.driver("cuMemAlloc")?,
            dev_out: b.driver("cuMemAlloc")?,
            stream,
        })
    }
}

impl PoolSlot for DirectSlot {
    fn kept_bytes(&self) -> usize {
        self.dev_in.len() + self.dev_out.len()
    }
}

/// Streams `input` through the GPU into `output` (equal lengths, both page-locked: see
/// [`is_pinned`]) in chunks of `cfg.chunk_items` bytes on `cfg.depth` streams. The copy engines
/// read and write the caller's buffers directly, so the host touches no byte and the upload,
/// kernel and download of different chunks overlap. `launch(stream, dev_in, dev_out, first,
/// bytes)` enqueues the kernel for the chunk at byte offset `first`.
pub fn run_direct(
    gpu: &Gpu,
    input: &[u8],
    output: &mut [u8],
    cfg: PipelineConfig,
    mut launch: impl FnMut(
        &Arc<CudaStream>,
        &CudaSlice<u8>,
        &mut CudaSlice<u8>,
        usize,
        usize,
    ) -> Result<()>,
) -> Result<()> {
    debug_assert_eq!(input.len(), output.len());
    let n = input.len();
    let chunk = cfg.chunk_items.clamp(1, n.max(1));
    let depth = cfg.depth.clamp(1, n.div_ceil(chunk).max(1));
    let direct = gpu.local::<Kept<DirectSlot>>();
    let mut slots = direct.take(
        depth,
        |s| s.dev_in.len() >= chunk,
        || DirectSlot::new(gpu, chunk),
    )?;
    let t_start = std::time::Instant::now();
    let mut run = || -> Result<()> {
        // Work on one stream runs in order, so a slot's buffers are free again once its previous
        // chunk's download is enqueued: the host never waits until the end.
        for (c, (src, dst)) in input
            .chunks(chunk)
            .zip(output.chunks_mut(chunk))
            .enumerate()
        {
            let DirectSlot {
                stream,
                dev_in,
                dev_out,
            } = &mut slots[c % depth];
            let len = src.len();
            stream
                .memcpy_htod(src, &mut dev_in.slice_mut(..len))
                .driver("cuMemcpyHtoDAsync")?;
            launch(stream, dev_in, dev_out, c * chunk, len)?;
            stream
                .memcpy_dtoh(&dev_out.slice(..len), dst)
                .driver("cuMemcpyDtoHAsync")?;
        }
        Ok(())
    };
    let result = run();
    // The caller's buffers are borrowed only for this call: every copy must be done on return.
    for s in &slots {
        s.stream.synchronize().driver("cuStreamSynchronize")?;
    }
    if tracing() {
        eprintln!("pipeline (page-locked, direct): {n} bytes in {} chunks of {chunk} (depth {depth}): {:.2} ms", n.div_ceil(chunk), t_start.elapsed().as_secs_f64() * 1e3);
    }
    if result.is_ok() {
        direct.give(slots);
    }
    result
}

/// Measures pageable host↔device copy bandwidth with a 32 MiB buffer (what a batch copied in one
/// piece, without staging, pays).
pub fn measure_link(gpu: &Gpu) -> Result<Link> {
    let up = vec![0x5au8; LINK_BYTES];
    let mut down = vec![0u8; LINK_BYTES];
    time_copies(gpu, &up, &mut down)
}

/// Pageable host↔device bandwidth through the staged pipeline, as a batch in host memory pays
/// it: 128 MiB in 16 MiB chunks, each copied by the host's cores into page-locked staging,
/// uploaded, downloaded and copied out, chunks overlapping. Up alone, down alone, and both (each
/// way); and one chunk up and back on its own. A plain copy from pageable memory reaches a
/// fraction of this.
pub fn measure_link_staged(gpu: &Gpu) -> Result<Link> {
    const CHUNK: usize = crate::backend::device::PIPELINE_CHUNK_BYTES as usize;
    const BYTES: usize = 8 * CHUNK;
    let src = vec![0x5au8; BYTES];
    let mut dst = vec![0u8; BYTES];
    let mut pass = |up: bool, down: bool, chunks: usize| -> Result<f64> {
        let span = Span {
            in_bytes: if up { CHUNK } else { 0 },
            out_bytes: if down { CHUNK } else { 0 },
            scratch_bytes: 0,
        };
        let t = std::time::Instant::now();
        run_spans(
            gpu,
            &vec![span; chunks],
            3,
            |c, buf| {
                par_copy(buf, &src[c * CHUNK..][..buf.len()]);
                Ok(())
            },
            |stream, dev_in, dev_out, _| {
                if up && down {
                    stream
                        .memcpy_dtod(&dev_in.slice(..CHUNK), &mut dev_out.slice_mut(..CHUNK))
                        .driver("cuMemcpyDtoDAsync")?;
                }
                Ok(())
            },
            |c, out| {
                par_copy(&mut dst[c * CHUNK..][..out.len()], out);
                Ok(())
            },
        )?;
        Ok(t.elapsed().as_secs_f64())
    };
    // A warm-up both ways: its staging slots (kept in the pool) serve the one-way passes too.
    // Both ways last in each round, so the output checked below is a round trip.
    const CHUNKS: usize = BYTES / CHUNK;
    pass(true, true, CHUNKS)?;
    // Up alone, down alone, both; and one chunk up and back on its own (a batch's first and last
    // chunks, or a batch of one chunk, wait for each step in turn).
    let mut best = [f64::MAX; 4];
    for _ in 0..5 {
        let t = [
            pass(true, false, CHUNKS)?,
            pass(false, true, CHUNKS)?,
            pass(true, true, 1)?,
            pass(true, true, CHUNKS)?,
        ];
        for (b, t) in best.iter_mut().zip(t) {
            *b = b.min(t);
        }
    }
    if dst != src {
        return Err(Error::Cuda {
            context: "measure_link_staged",
            message: "round trip corrupted data".into(),
        });
    }
    // The smallest staged round trip: one 64-byte chunk.
    let tiny = Span {
        in_bytes: 64,
        out_bytes: 64,
        scratch_bytes: 0,
    };
    let mut latency = f64::MAX;
    for _ in 0..8 {
        let t = std::time::Instant::now();
        run_spans(
            gpu,
            &[tiny],
            1,
            |_, buf| {
                buf.copy_from_slice(&src[..64]);
                Ok(())
            },
            |_, _, _, _| Ok(()),
            |_, out| {
                dst[..64].copy_from_slice(out);
                Ok(())
            },
        )?;
        latency = latency.min(t.elapsed().as_secs_f64());
    }
    Ok(Link {
        h2d: BYTES as f64 / best[0],
        d2h: BYTES as f64 / best[1],
        duplex: BYTES as f64 / best[3],
        alone: best[2] / (2 * CHUNK) as f64,
        latency,
    })
}

/// The same with page-locked buffers: the ceiling the chunked pipeline can reach.
pub fn measure_link_pinned(gpu: &Gpu) -> Result<Link> {
    let ctx = gpu.context();
    // SAFETY: both buffers are fully written before being read.
    let (mut up, mut down) = unsafe {
        (
            ctx.alloc_pinned_with_flags::<u8>(LINK_BYTES, 0)
                .driver("cuMemHostAlloc")?,
            ctx.alloc_pinned_with_flags::<u8>(LINK_BYTES, 0)
                .driver("cuMemHostAlloc")?,
        )
    };
    up.as_mut_slice().driver("pinned")?.fill(0x5a);
    let down = down.as_mut_slice().driver("pinned")?;
    time_copies(gpu, up.as_slice().driver("pinned")?, down)
}

const LINK_BYTES: usize = 32 << 20;

fn time_copies(gpu: &Gpu, up: &[u8], down: &mut [u8]) -> Result<Link> {
    let stream = gpu.stream()?;
    let mut dev = unsafe { stream.alloc::<u8>(up.len()) }.driver("cuMemAlloc")?;
    let mut best = (f64::MAX, f64::MAX);
    for _ in 0..4 {
        let t = std::time::Instant::now();
        stream.memcpy_htod(up, &mut dev).driver("cuMemcpyHtoD")?;
        stream.synchronize().driver("sync")?;
        let t_up = t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        stream.memcpy_dtoh(&dev, down).driver("cuMemcpyDtoH")?;
        stream.synchronize().driver("sync")?;
        best = (best.0.min(t_up), best.1.min(t.elapsed().as_secs_f64()));
    }
    if down[up.len() - 1] != up[up.len() - 1] {
        return Err(Error::Cuda {
            context: "measure_link",
            message: "round trip corrupted data".into(),
        });
    }
    // The smallest round trip: a few bytes up and back.
    let mut latency = f64::MAX;
    for _ in 0..8 {
        let t = std::time::Instant::now();
        stream
            .memcpy_htod(&up[..64], &mut dev.slice_mut(..64))
            .driver("cuMemcpyHtoD")?;
        stream
            .memcpy_dtoh(&dev.slice(..64), &mut down[..64])
            .driver("cuMemcpyDtoH")?;
        stream.synchronize().driver("sync")?;
        latency = latency.min(t.elapsed().as_secs_f64());
    }
    // Both directions at once, on two streams (the copy engines are separate).
    let other = gpu.context().new_stream().driver("cuStreamCreate")?;
    let mut dev2 = unsafe { other.alloc::<u8>(up.len()) }.driver("cuMemAlloc")?;
    other.memcpy_htod(up, &mut dev2).driver("cuMemcpyHtoD")?;
    other.synchronize().driver("sync")?;
    let mut both = f64::MAX;
    for _ in 0..4 {
        let t = std::time::Instant::now();
        stream
            .memcpy_htod(up, &mut dev)
            .driver("cuMemcpyHtoDAsync")?;
        other.memcpy_dtoh(&dev2, down).driver("cuMemcpyDtoHAsync")?;
        stream.synchronize().driver("sync")?;
        other.synchronize().driver("sync")?;
        both = both.min(t.elapsed().as_secs_f64());
    }
    Ok(Link {
        h2d: up.len() as f64 / best.0,
        d2h: up.len() as f64 / best.1,
        duplex: up.len() as f64 / both,
        alone: (best.0 + best.1) / (2 * up.len()) as f64,
        latency,
    })
}

#[cfg(test)]
mod tests {
    use super::chunk_ranges;

    #[test]
    fn chunks_cover_the_batch_in_order_with_small_ends() {
        for chunk in [1usize, 3, 4, 6, 8, 1 << 17] {
            for n in [
                1usize,
                2,
                5,
                7,
                31,
                32,
                33,
                1000,
                4 * (1 << 17) + 5,
                1_000_000,
            ] {
                let r = chunk_ranges(n, chunk);
                assert_eq!(r[0].start, 0, "{n} by {chunk}");
                assert_eq!(r.last().unwrap().end, n, "{n} by {chunk}");
                assert!(r.windows(2).all(|w| w[0].end == w[1].start));
                assert!(r
                    .iter()
                    .all(|c| !c.is_empty() && c.len() <= chunk.max(1) * 5 / 4));
                let q = if chunk % 4 == 0 && n >= 4 * chunk {
                    chunk / 4
                } else {
                    chunk.min(n)
                };
                assert!(r.iter().all(|c| c.start % q == 0), "{n} by {chunk}: {r:?}");
            }
        }
        let c = 1 << 17;
        let r = chunk_ranges(1_000_000, c);
        let sizes: Vec<usize> = r.iter().map(|x| x.len()).collect();
        assert_eq!(&sizes[..2], &[c / 4, c / 2]);
        assert_eq!(sizes[sizes.len() - 2], c / 2);
        assert!(sizes[sizes.len() - 1] < c / 2);
        // Below four chunks: equal chunks, the last holding the rest.
        let sizes: Vec<usize> = chunk_ranges(3 * c + 1, c).iter().map(|x| x.len()).collect();
        assert_eq!(sizes, [c, c, c, 1]);
    }
}

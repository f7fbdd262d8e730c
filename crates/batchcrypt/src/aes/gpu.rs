//! The GPU backend: `kernels/aes` over host buffers (streamed through the chunked pipeline, so
//! upload, kernel and download of different chunks overlap) or over buffers already in GPU memory.

use super::gcm::{add128, add32, combine, Gcm};
use super::gf128::Gf128;
use super::layout::{self as batch_device, Mode};
use super::xts::{self, XtsKey};
use super::{
    ctr_bitsliced_params, ctr_params, xts_params, CtrBitslicedParams, CtrParams, GcmParams, Key,
    Tag, XtsParams, XtsTweakParams,
};
use crate::backend::cuda::{DriverResult, Gpu};
use crate::error::{Error, Result};
use crate::messages::Messages;
use crate::pipeline::{
    is_pinned, par_copy, run_chunked, run_direct, run_spans, PipelineConfig, Span,
};
use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, LaunchConfig,
    PushKernelArg,
};
use std::sync::Arc;

/// Threads per block of both kernels (a power of two: the GCM kernel reduces by halving).
pub const THREADS: u32 = 256;
/// Thread blocks per multiprocessor worth launching: 32 KiB (CTR) or 41 KiB (GCM) of shared
/// memory each leaves room for five to seven.
const BLOCKS_PER_SM: u64 = 6;
/// Bytes per pipeline chunk from host memory: a multiple of every GCM segment size. Copies alone
/// through the page-locked pipeline (1 and 4 GiB, depth 2 to 6) ran about 5% faster in 8-16 MiB
/// chunks than in 64 MiB ones: the first upload and the last download, which nothing overlaps,
/// are shorter. Kernels of consecutive chunks run side by side on their streams, so a chunk
/// need not fill the GPU.
const CHUNK_BYTES: usize = crate::backend::device::PIPELINE_CHUNK_BYTES as usize;
/// Most blocks one thread takes per GCM segment: large buffers stay in many segments (16384 at
/// 4 GiB), so the last wave of thread blocks is short. Segments of fewer blocks cost little more
/// in the kernel: each ends in a reduction tree of table products, eight deep at 256 threads.
const MAX_BLOCKS_PER_THREAD: u64 = 64;

// SAFETY: plain old data with the kernels' layout (checked by the emulation tests).
unsafe impl DeviceRepr for CtrParams {}
// SAFETY: as above.
unsafe impl DeviceRepr for GcmParams {}
// SAFETY: as above.
unsafe impl DeviceRepr for XtsParams {}
// SAFETY: as above.
unsafe impl DeviceRepr for XtsTweakParams {}
// SAFETY: as above.
unsafe impl DeviceRepr for CtrBitslicedParams {}

fn grid(gpu: &Gpu, bytes: u64, per_block_bytes: u64) -> LaunchConfig {
    let cap = gpu.info().multiprocessors.max(1) as u64 * BLOCKS_PER_SM;
    let blocks = bytes.div_ceil(per_block_bytes).clamp(1, cap) as u32;
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

fn launch_ctr(
    gpu: &Gpu,
    f: &CudaFunction,
    stream: &Arc<CudaStream>,
    p: CtrParams,
    input: u64,
    output: u64,
) -> Result<()> {
    if p.bytes == 0 {
        return Ok(());
    }
    let mut b = stream.launch_builder(f);
    b.arg(&p).arg(&input).arg(&output);
    // SAFETY: matches `aes_ctr(Ctr, const uint8_t*, uint8_t*)`; both pointers cover p.bytes bytes.
    unsafe { b.launch(grid(gpu, p.bytes, 16 * THREADS as u64)) }
        .map(|_| ())
        .driver("launch aes_ctr")
}

/// How [`stream_host`] moves a host buffer: straight from and to the caller's memory when both
/// buffers are page-locked, else through the pipeline's staging; and the chunk it cuts it into.
#[derive(Clone, Copy)]
struct HostPath {
    direct: bool,
    chunk: usize,
}

impl HostPath {
    /// The path for `input` and `output`, from the caller's largest chunk `max_chunk` (whole
    /// `unit`s): smaller on page-locked buffers of a few chunks (see
    /// [`crate::backend::device::direct_chunk_bytes`]), `max_chunk` through staging.
    fn new(gpu: &Gpu, input: &[u8], output: &[u8], max_chunk: usize, unit: usize) -> HostPath {
        let direct = is_pinned(gpu, input) && is_pinned(gpu, output);
        let chunk = if direct {
            crate::backend::device::direct_chunk_bytes(input.len(), max_chunk, unit)
        } else {
            max_chunk
        };
        HostPath { direct, chunk }
    }
}

/// Streams a host buffer through `launch(stream, dev_in, dev_out, first byte, bytes)` chunk by
/// chunk, the way `path` says.
fn stream_host(
    gpu: &Gpu,
    path: HostPath,
    input: &[u8],
    output: &mut [u8],
    mut launch: impl FnMut(
        &Arc<CudaStream>,
        &CudaSlice<u8>,
        &mut CudaSlice<u8>,
        usize,
        usize,
    ) -> Result<()>,
) -> Result<()> {
    let cfg = PipelineConfig {
        chunk_items: path.chunk,
        depth: 3,
    };
    if input.is_empty() {
        return Ok(());
    }
    if path.direct {
        return run_direct(gpu, input, output, cfg, launch);
    }
    let fill = |first: usize, dst: &mut [u8]| {
        par_copy(dst, &input[first..first + dst.len()]);
        Ok(())
    };
    let mut next = 0usize;
    run_chunked(
        gpu,
        input.len(),
        1,
        output,
        1,
        cfg,
        fill,
        |stream, i, o, items| {
            // Chunks launch in order, so the running total is this chunk's offset.
            let first = next;
            next += items;
            launch(stream, i, o, first, items)
        },
    )
}

/// CTR over a host buffer.
pub fn ctr(key: &Key, iv: &[u8; 16], input: &[u8], output: &mut [u8]) -> Result<()> {
    let gpu = Gpu::available()?;
    let f = gpu.function(&crate::kernels::AES, "aes_ctr")?;
    stream_host(
        gpu,
        HostPath::new(gpu, input, output, CHUNK_BYTES, 16),
        input,
        output,
        |stream, i, o, first, bytes| {
            let p = ctr_params(key, &add128(iv, first as u64 / 16), false, bytes as u64);
            let (ip, _gi) = i.device_ptr(stream);
            let (op, _go) = o.device_ptr_mut(stream);
            launch_ctr(gpu, &f, stream, p, ip, op)
        },
    )
}

/// A device buffer's address, checked for the 16-byte alignment the kernels' vector loads need.
fn aligned(ptr: u64) -> Result<u64> {
    if !ptr.is_multiple_of(16) {
        return Err(Error::invalid("the device buffer must start on a 16-byte boundary (any allocation does; offset views must keep it)"));
    }
    Ok(ptr)
}

/// CTR in place over `data`, already in GPU memory: no copies.
pub fn ctr_device(key: &Key, iv: &[u8; 16], data: &mut impl DevicePtrMut<u8>) -> Result<()> {
    let gpu = Gpu::available()?;
    let f = gpu.function(&crate::kernels::AES, "aes_ctr")?;
    let stream = gpu.stream()?;
    let bytes = data.len() as u64;
    let (ptr, guard) = data.device_ptr_mut(&stream);
    let ptr = aligned(ptr)?;
    launch_ctr(
        gpu,
        &f,
        &stream,
        ctr_params(key, iv, false, bytes),
        ptr,
        ptr,
    )?;
    drop(guard);
    stream.synchronize().driver("cuStreamSynchronize")
}

/// The GCM kernel's segment layout and tables for one message.
struct GcmPlan {
    seg_blocks: u64,
    blocks: u64,
    tables: Vec<u32>,
}

impl GcmPlan {
    fn new(gpu: &Gpu, h: Gf128, bytes: u64) -> GcmPlan {
        let blocks = bytes.div_ceil(16);
        // Enough segments to fill every multiprocessor a few times over, each thread taking up to
        // MAX_BLOCKS_PER_THREAD blocks; a power of two, so segments tile CHUNK_BYTES.
        let target = gpu.info().multiprocessors.max(1) as u64 * BLOCKS_PER_SM * 2;
        let per_thread = (blocks / (target * THREADS as u64)).clamp(1, MAX_BLOCKS_PER_THREAD);
        let seg_blocks = THREADS as u64 * (1u64 << per_thread.ilog2());
        GcmPlan {
            seg_blocks,
            blocks,
            tables: super::gpu_tables(h, THREADS as usize),
        }
    }

    fn segments(&self) -> usize {
        self.blocks.div_ceil(self.seg_blocks) as usize
    }
}

fn launch_gcm(
    gpu: &Gpu,
    f: &CudaFunction,
    stream: &Arc<CudaStream>,
    p: GcmParams,
    input: u64,
    output: u64,
    tables: u64,
    seg_out: u64,
) -> Result<()> {
    if p.c.bytes == 0 {
        return Ok(());
    }
    let mut b = stream.launch_builder(f);
    b.arg(&p)
        .arg(&input)
        .arg(&output)
        .arg(&tables)
        .arg(&seg_out);
    // SAFETY: matches `aes_gcm(Gcm, in, out, tables, seg_out)`: the buffers cover p.c.bytes bytes,
    // the tables are `gpu_tables` for THREADS threads, seg_out four words per segment of this
    // launch.
    unsafe { b.launch(grid(gpu, p.c.bytes, 16 * p.seg_blocks)) }
        .map(|_| ())
        .driver("launch aes_gcm")
}

/// GCM's counter mode over a host buffer; returns the GHASH of the ciphertext alone.
pub fn gcm(g: &Gcm, input: &[u8], output: &mut [u8], decrypt: bool) -> Result<Gf128> {
    if input.is_empty() {
        return Ok(Gf128(0));
    }
    let gpu = Gpu::available()?;
    let f = gpu.function(&crate::kernels::AES, "aes_gcm")?;
    let plan = GcmPlan::new(gpu, g.h, input.len() as u64);
    let stream = gpu.stream()?;
    let tables = stream.clone_htod(&plan.tables).driver("cuMemcpyHtoD")?;
    let mut seg_out = stream
        .alloc_zeros::<u32>(4 * plan.segments())
        .driver("cuMemAlloc")?;
    stream.synchronize().driver("cuStreamSynchronize")?;
    let first_counter = g.first_counter();
    // The tables and segment sums are shared by every chunk: their pointers are taken once here,
    // so that the chunks' streams do not wait on one another through these buffers' events.
    // Every chunk writes its own segments, and `stream_host` synchronizes its streams before
    // the sums are read back.
    let (tp, gt) = tables.device_ptr(&stream);
    let (sp, gs) = seg_out.device_ptr_mut(&stream);
    // Chunks hold whole segments: each chunk's launch writes its own segments' sums.
    let path = HostPath::new(
        gpu,
        input,
        output,
        CHUNK_BYTES,
        16 * plan.seg_blocks as usize,
    );
    stream_host(gpu, path, input, output, |s, i, o, first, bytes| {
        let block0 = first as u64 / 16;
        let p = GcmParams {
            c: ctr_params(&g.key, &add32(&first_counter, block0), true, bytes as u64),
            seg_blocks: plan.seg_blocks,
            decrypt: decrypt as u32,
            pad: 0,
        };
        let (ip, _gi) = i.device_ptr(s);
        let (op, _go) = o.device_ptr_mut(s);
        launch_gcm(
            gpu,
            &f,
            s,
            p,
            ip,
            op,
            tp,
            sp + 16 * (block0 / plan.seg_blocks),
        )
    })?;
    drop((gt, gs));
    let words = stream.clone_dtoh(&seg_out).driver("cuMemcpyDtoH")?;
    Ok(combine(
        g.h,
        &super::segment_sums(&words),
        plan.seg_blocks,
        plan.blocks,
    ))
}

/// GCM's counter mode in place over `data` in GPU memory; returns the GHASH of the ciphertext.
/// With `BATCHCRYPT_TRACE` set it prints where the call's time went.
pub fn gcm_device(g: &Gcm, data: &mut impl DevicePtrMut<u8>, decrypt: bool) -> Result<Gf128> {
    let t0 = std::time::Instant::now();
    let gpu = Gpu::available()?;
    let f = gpu.function(&crate::kernels::AES, "aes_gcm")?;
    let bytes = data.len() as u64;
    let plan = GcmPlan::new(gpu, g.h, bytes);
    let stream = gpu.stream()?;
    let tables = stream.clone_htod(&plan.tables).driver("cuMemcpyHtoD")?;
    let mut seg_out = stream
        .alloc_zeros::<u32>(4 * plan.segments().max(1))
        .driver("cuMemAlloc")?;
    let t1;
    {
        let p = GcmParams {
            c: ctr_params(&g.key, &g.first_counter(), true, bytes),
            seg_blocks: plan.seg_blocks,
            decrypt: decrypt as u32,
            pad: 0,
        };
        let (ptr, _g) = data.device_ptr_mut(&stream);
        let ptr = aligned(ptr)?;
        let (tp, _gt) = tables.device_ptr(&stream);
        let (sp, _gs) = seg_out.device_ptr_mut(&stream);
        t1 = std::time::Instant::now();
        launch_gcm(gpu, &f, &stream, p, ptr, ptr, tp, sp)?;
    }
    stream.synchronize().driver("cuStreamSynchronize")?;
    let t2 = std::time::Instant::now();
    let words = stream.clone_dtoh(&seg_out).driver("cuMemcpyDtoH")?;
    let t3 = std::time::Instant::now();
    let y = combine(
        g.h,
        &super::segment_sums(&words[..4 * plan.segments()]),
        plan.seg_blocks,
        plan.blocks,
    );
    if crate::pipeline::tracing() {
        let us = |a: std::time::Instant, b: std::time::Instant| (b - a).as_secs_f64() * 1e6;
        eprintln!(
            "gcm_device: {bytes} bytes, {} segments: set-up {:.0} µs, kernel {:.0} µs, sums down {:.0} µs, combine {:.0} µs",
            plan.segments(),
            us(t0, t1),
            us(t1, t2),
            us(t2, t3),
            us(t3, std::time::Instant::now())
        );
    }
    Ok(y)
}

/// Most blocks of one XTS launch: the kernel indexes them with 32-bit words.
const XTS_MAX_LAUNCH_BLOCKS: u64 = 1 << 31;

/// The XTS kernels and the tweak entries of one call.
struct XtsRun<'a> {
    gpu: &'a Gpu,
    tweaks_fn: CudaFunction,
    blocks_fn: CudaFunction,
    key: &'a XtsKey,
    tweak: &'a [u8; 16],
    unit: usize,
    decrypt: bool,
}

impl<'a> XtsRun<'a> {
    fn new(key: &'a XtsKey, tweak: &'a [u8; 16], unit: usize, decrypt: bool) -> Result<XtsRun<'a>> {
        let gpu = Gpu::available()?;
        let name = if decrypt {
            "aes_xts_decrypt"
        } else {
            "aes_xts_encrypt"
        };
        Ok(XtsRun {
            gpu,
            tweaks_fn: gpu.function(&crate::kernels::XTS, "aes_xts_tweaks")?,
            blocks_fn: gpu.function(&crate::kernels::XTS, name)?,
            key,
            tweak,
            unit,
            decrypt,
        })
    }

    /// Tweak entries for `bytes` bytes (16 bytes per entry).
    fn entries_bytes(&self, bytes: usize) -> usize {
        let (units, entries) = xts::gpu_entries(self.unit, (bytes / 16) as u64);
        16 * units as usize * entries as usize
    }

    /// XTS over `bytes` whole-block bytes from byte `first` of the buffer (a unit boundary):
    /// tweak entries into `tweaks` (room for [`Self::entries_bytes`]), then the blocks.
    fn launch(
        &self,
        stream: &Arc<CudaStream>,
        input: u64,
        output: u64,
        tweaks: u64,
        first: usize,
        bytes: usize,
    ) -> Result<()> {
        debug_assert!(first.is_multiple_of(self.unit) && bytes.is_multiple_of(16));
        let unit_blocks = (self.unit / 16) as u64;
        let per_launch = unit_blocks * (XTS_MAX_LAUNCH_BLOCKS / unit_blocks).max(1);
        let (mut done, total) = (0u64, (bytes / 16) as u64);
        while done < total {
            let blocks = per_launch.min(total - done);
            let first_unit = (first / self.unit) as u64 + done / unit_blocks;
            let (tp, bp) = xts_params(
                self.key,
                self.tweak,
                self.unit,
                first_unit,
                blocks,
                self.decrypt,
            );
            let mut b = stream.launch_builder(&self.tweaks_fn);
            b.arg(&tp).arg(&tweaks);
            let cfg = LaunchConfig {
                grid_dim: ((tp.units).div_ceil(THREADS).max(1), 1, 1),
                block_dim: (THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: matches `aes_xts_tweaks(XtsTweaks, uint4*)`; the entries buffer holds
            // units × entries elements (entries_bytes).
            unsafe { b.launch(cfg) }.driver("launch aes_xts_tweaks")?;
            let (i, o) = (input + 16 * done, output + 16 * done);
            let mut b = stream.launch_builder(&self.blocks_fn);
            b.arg(&bp).arg(&i).arg(&o).arg(&tweaks);
            // SAFETY: matches `aes_xts_{en,de}crypt(Xts, in, out, tweaks)`: both buffers cover
            // `blocks` blocks and the entries were written just before on this stream.
            unsafe { b.launch(grid(self.gpu, 16 * blocks, 16 * THREADS as u64)) }
                .driver("launch aes_xts")?;
            done += blocks;
        }
        Ok(())
    }
}

/// XTS over a host buffer: whole blocks through the pipeline in chunks of whole units, the
/// ciphertext-stealing tail (if any) on the CPU.
pub fn xts(
    key: &XtsKey,
    tweak: &[u8; 16],
    unit: usize,
    input: &[u8],
    output: &mut [u8],
    decrypt: bool,
) -> Result<()> {
    let run = XtsRun::new(key, tweak, unit, decrypt)?;
    let gpu_bytes = xts::whole_block_bytes(input.len());
    // Whole units per chunk; a unit that is not a multiple of 16 is the whole buffer.
    let (head_in, tail_in) = input.split_at(gpu_bytes);
    let (head_out, tail_out) = output.split_at_mut(gpu_bytes);
    let (most, whole) = if unit.is_multiple_of(16) {
        (unit * (CHUNK_BYTES / unit).max(1), unit)
    } else {
        (gpu_bytes.max(16), gpu_bytes.max(16))
    };
    let path = HostPath::new(run.gpu, head_in, head_out, most, whole);
    let chunk = path.chunk;
    let stream = run.gpu.stream()?;
    // One region of tweak entries per chunk (chunks in flight at once must not share one).
    let per_chunk = run.entries_bytes(chunk.min(gpu_bytes).max(16)).max(16);
    let chunks = gpu_bytes.div_ceil(chunk).max(1);
    let tweaks = stream
        .alloc_zeros::<u8>(per_chunk * chunks)
        .driver("cuMemAlloc")?;
    stream.synchronize().driver("cuStreamSynchronize")?;
    if gpu_bytes > 0 {
        stream_host(run.gpu, path, head_in, head_out, |s, i, o, first, bytes| {
            let (ip, _gi) = i.device_ptr(s);
            let (op, _go) = o.device_ptr_mut(s);
            let (tp, _gt) = tweaks.device_ptr(s);
            run.launch(
                s,
                ip,
                op,
                tp + (per_chunk * (first / chunk)) as u64,
                first,
                bytes,
            )
        })?;
    }
    if !tail_in.is_empty() {
        xts::steal_tail(key, tweak, unit, gpu_bytes, tail_in, tail_out, decrypt);
    }
    Ok(())
}

/// XTS in place over `data` in GPU memory; a ciphertext-stealing tail makes a round trip of
/// its last 16 to 31 bytes through the CPU.
pub fn xts_device(
    key: &XtsKey,
    tweak: &[u8; 16],
    unit: usize,
    data: &mut impl DevicePtrMut<u8>,
    decrypt: bool,
) -> Result<()> {
    let run = XtsRun::new(key, tweak, unit, decrypt)?;
    let len = data.len();
    let gpu_bytes = xts::whole_block_bytes(len);
    let stream = run.gpu.stream()?;
    let tweaks = stream
        .alloc_zeros::<u8>(run.entries_bytes(gpu_bytes).max(16))
        .driver("cuMemAlloc")?;
    let (ptr, guard) = data.device_ptr_mut(&stream);
    let ptr = aligned(ptr)?;
    if gpu_bytes > 0 {
        let (tp, _gt) = tweaks.device_ptr(&stream);
        run.launch(&stream, ptr, ptr, tp, 0, gpu_bytes)?;
    }
    // The tail's bytes, down and (stolen) back up; `out` outlives the final synchronization.
    let mut out = vec![0u8; len - gpu_bytes];
    if gpu_bytes < len {
        let mut tail = vec![0u8; out.len()];
        // SAFETY: the tail lies inside `data`; the copy is ordered after the kernels on this
        // stream and synchronized before the host reads.
        unsafe {
            cudarc::driver::result::memcpy_dtoh_async(
                &mut tail,
                ptr + gpu_bytes as u64,
                stream.cu_stream(),
            )
        }
        .driver("cuMemcpyDtoH")?;
        stream.synchronize().driver("cuStreamSynchronize")?;
        xts::steal_tail(key, tweak, unit, gpu_bytes, &tail, &mut out, decrypt);
        // SAFETY: as above; `out` lives until the synchronization below.
        unsafe {
            cudarc::driver::result::memcpy_htod_async(
                ptr + gpu_bytes as u64,
                &out,
                stream.cu_stream(),
            )
        }
        .driver("cuMemcpyHtoD")?;
    }
    drop(guard);
    stream.synchronize().driver("cuStreamSynchronize")
}

/// Kernel-only time of XTS-4096 over `bytes` bytes in GPU memory (tweak entries included), in
/// seconds: for the benchmarks.
pub fn xts_kernel_seconds(key: &XtsKey, bytes: usize, decrypt: bool, iters: usize) -> Result<f64> {
    let tweak = [0u8; 16];
    let run = XtsRun::new(key, &tweak, 4096, decrypt)?;
    let stream = run.gpu.stream()?;
    let bytes = bytes / 16 * 16;
    let mut data = stream
        .alloc_zeros::<u8>(bytes.max(16))
        .driver("cuMemAlloc")?;
    let tweaks = stream
        .alloc_zeros::<u8>(run.entries_bytes(bytes).max(16))
        .driver("cuMemAlloc")?;
    crate::backend::cuda::time_on_stream(&stream, iters, || {
        let (ptr, _g) = data.device_ptr_mut(&stream);
        let (tp, _gt) = tweaks.device_ptr(&stream);
        run.launch(&stream, ptr, ptr, tp, 0, bytes)
    })
}

/// Kernel-only time of CTR (or GCM) over `bytes` bytes resident in GPU memory, in seconds (the
/// median of a few runs, timed by events): for the benchmarks. Input and output are separate
/// buffers: encrypting in place would alternate the buffer between plaintext and keystream, and
/// GHASH over an all-zero ciphertext, every other run, finds its table look-ups all on one entry
/// (a 4 GiB GCM run took 10.8 ms on zeros, 13.5 ms on real ciphertext).
pub fn kernel_seconds(key: &Key, gcm: bool, bytes: usize, iters: usize) -> Result<f64> {
    let gpu = Gpu::available()?;
    let stream = gpu.stream()?;
    let input = stream
        .alloc_zeros::<u8>(bytes.max(16))
        .driver("cuMemAlloc")?;
    let mut output = stream
        .alloc_zeros::<u8>(bytes.max(16))
        .driver("cuMemAlloc")?;
    if gcm {
        let g = Gcm::new(key, &[0; 12])?;
        let f = gpu.function(&crate::kernels::AES, "aes_gcm")?;
        let plan = GcmPlan::new(gpu, g.h, bytes as u64);
        let tables = stream.clone_htod(&plan.tables).driver("cuMemcpyHtoD")?;
        let mut seg_out = stream
            .alloc_zeros::<u32>(4 * plan.segments().max(1))
            .driver("cuMemAlloc")?;
        let p = GcmParams {
            c: ctr_params(key, &g.first_counter(), true, bytes as u64),
            seg_blocks: plan.seg_blocks,
            decrypt: 0,
            pad: 0,
        };
        crate::backend::cuda::time_on_stream(&stream, iters, || {
            let (ip, _gi) = input.device_ptr(&stream);
            let (op, _go) = output.device_ptr_mut(&stream);
            let (tp, _gt) = tables.device_ptr(&stream);
            let (sp, _gs) = seg_out.device_ptr_mut(&stream);
            launch_gcm(gpu, &f, &stream, p, ip, op, tp, sp)
        })
    } else {
        let f = gpu.function(&crate::kernels::AES, "aes_ctr")?;
        let p = ctr_params(key, &[0; 16], false, bytes as u64);
        crate::backend::cuda::time_on_stream(&stream, iters, || {
            let (ip, _gi) = input.device_ptr(&stream);
            let (op, _go) = output.device_ptr_mut(&stream);
            launch_ctr(gpu, &f, &stream, p, ip, op)
        })
    }
}

/// CTR over `input` through the bitsliced kernel (kernels/aes/bitsliced.cu), the data resident
/// in GPU memory: the output, and the kernel's median time over `iters` runs in seconds. The
/// benchmarks set it beside the T-table kernel, which the library uses (the faster of the two).
pub fn bitsliced_ctr(
    key: &Key,
    iv: &[u8; 16],
    input: &[u8],
    iters: usize,
) -> Result<(Vec<u8>, f64)> {
    let gpu = Gpu::available()?;
    let stream = gpu.stream()?;
    let n = input.len();
    // Whole blocks on the device: the kernel loads full 16-byte blocks.
    let mut padded = input.to_vec();
    padded.resize(n.div_ceil(16).max(1) * 16, 0);
    let dev_in = stream.clone_htod(&padded).driver("cuMemcpyHtoD")?;
    let mut dev_out = stream
        .alloc_zeros::<u8>(padded.len())
        .driver("cuMemAlloc")?;
    let f = gpu.function(&crate::kernels::BITSLICED, "aes_ctr_bitsliced")?;
    let p = ctr_bitsliced_params(key, iv, n as u64);
    // A block of 256 threads is 8 warps of 1024 AES blocks each.
    let cfg = grid(gpu, n as u64, 8 * 1024 * 16);
    let t = crate::backend::cuda::time_on_stream(&stream, iters, || {
        if n == 0 {
            return Ok(());
        }
        let (ip, _gi) = dev_in.device_ptr(&stream);
        let (op, _go) = dev_out.device_ptr_mut(&stream);
        let mut b = stream.launch_builder(&f);
        b.arg(&p).arg(&ip).arg(&op);
        // SAFETY: matches `aes_ctr_bitsliced(CtrBitsliced, const uint8_t*, uint8_t*)`; both
        // buffers hold n bytes rounded up to whole blocks.
        unsafe { b.launch(cfg) }
            .map(|_| ())
            .driver("launch aes_ctr_bitsliced")
    })?;
    let mut out = stream.clone_dtoh(&dev_out).driver("cuMemcpyDtoH")?;
    out.truncate(n);
    Ok((out, t))
}

// SAFETY: plain old data with the kernel's layout (checked by the emulation tests).
unsafe impl DeviceRepr for batch_device::BatchParams {}

/// Enqueues the batch kernels over one chunk uploaded at `input`, its download (and GCM's
/// scratch) at `output`: `aes_ctr_batch`; `aes_gcm_batch` then `aes_gcm_batch_tags`; or
/// `aes_xts_batch_encrypt` / `aes_xts_batch_decrypt`.
fn launch_batch(
    gpu: &Gpu,
    stream: &Arc<CudaStream>,
    chunk: &batch_device::Chunk,
    p: batch_device::BatchParams,
    mode: Mode,
    input: u64,
    output: u64,
) -> Result<()> {
    let a = chunk.pointers(input, output);
    let cap = gpu.info().multiprocessors.max(1) as u64 * BLOCKS_PER_SM;
    let cfg = |items: u64| LaunchConfig {
        grid_dim: (items.div_ceil(THREADS as u64).clamp(1, cap) as u32, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    let name = match (mode, p.decrypt != 0) {
        (Mode::Ctr, _) => "aes_ctr_batch",
        (Mode::Gcm, _) => "aes_gcm_batch",
        (Mode::Xts, false) => "aes_xts_batch_encrypt",
        (Mode::Xts, true) => "aes_xts_batch_decrypt",
    };
    let f = gpu.function(&crate::kernels::AES_BATCH, name)?;
    let mut b = stream.launch_builder(&f);
    b.arg(&p)
        .arg(&a.ivs)
        .arg(&a.keys)
        .arg(&a.offsets)
        .arg(&a.segments)
        .arg(&a.data)
        .arg(&a.out);
    if mode == Mode::Gcm {
        b.arg(&a.sums).arg(&a.per_message);
    }
    // SAFETY: matches the kernel's signature; the pointers lie in the chunk's upload and
    // download as `Chunk` laid them out (0 for a section it lacks, which the kernel skips).
    unsafe { b.launch(cfg(chunk.segments)) }
        .map(|_| ())
        .driver(name)?;
    if mode == Mode::Gcm {
        let f = gpu.function(&crate::kernels::AES_BATCH, "aes_gcm_batch_tags")?;
        let mut b = stream.launch_builder(&f);
        b.arg(&p)
            .arg(&a.offsets)
            .arg(&a.segments)
            .arg(&a.aad_offsets)
            .arg(&a.aad)
            .arg(&a.sums)
            .arg(&a.per_message)
            .arg(&a.tags);
        // SAFETY: as above; it reads what aes_gcm_batch wrote on the same stream.
        unsafe { b.launch(cfg(p.messages)) }
            .map(|_| ())
            .driver("aes_gcm_batch_tags")?;
        // The bytes between the data and the 16-byte-aligned tags are downloaded too: zero
        // them, so no stale device memory is copied out (compute-sanitizer's initcheck).
        let gap = chunk.tags_at - chunk.data.len();
        if gap > 0 {
            // SAFETY: the gap lies inside this chunk's download; ordered on the same stream.
            unsafe {
                cudarc::driver::result::memset_d8_async(
                    output + chunk.data.len() as u64,
                    0,
                    gap,
                    stream.cu_stream(),
                )
            }
            .driver("cuMemsetD8")?;
        }
    }
    Ok(())
}

/// A batch of messages in host memory through the batch kernels, chunk by chunk through the
/// pipeline; `ivs`: counter blocks, nonces or first tweaks back to back. Returns the tags (GCM;
/// computed over the ciphertext, the input when decrypting).
fn batch(
    l: &batch_device::Layout<'_>,
    keys: &batch_device::Keys<'_>,
    ivs: &[u8],
    msgs: &Messages<'_>,
    output: &mut [u8],
    decrypt: bool,
) -> Result<Vec<Tag>> {
    let gpu = Gpu::available()?;
    let chunks = batch_device::gpu_chunks(msgs, l);
    let spans: Vec<Span> = chunks
        .iter()
        .map(|c| Span {
            in_bytes: c.in_bytes,
            out_bytes: c.out_bytes,
            scratch_bytes: c.scratch_bytes,
        })
        .collect();
    let mut tags = vec![[0u8; 16]; if l.gcm() { msgs.count() } else { 0 }];
    run_spans(
        gpu,
        &spans,
        3,
        |c, dst| {
            chunks[c].stage(msgs, l, ivs, keys, dst);
            Ok(())
        },
        |stream, i, o, c| {
            let (ip, _gi) = i.device_ptr(stream);
            let (op, _go) = o.device_ptr_mut(stream);
            let p = chunks[c].params(msgs, keys, decrypt);
            launch_batch(gpu, stream, &chunks[c], p, l.mode, ip, op)
        },
        |c, out| {
            let ch = &chunks[c];
            par_copy(&mut output[ch.data.clone()], &out[..ch.data.len()]);
            if l.gcm() {
                tags[ch.messages()]
                    .as_flattened_mut()
                    .copy_from_slice(ch.tags(out));
            }
            Ok(())
        },
    )?;
    Ok(tags)
}

/// CTR over a batch of messages in host memory (keys: one per message, or one for all).
pub fn ctr_batch(
    keys: &[Key],
    ivs: &[[u8; 16]],
    msgs: &Messages<'_>,
    output: &mut [u8],
) -> Result<()> {
    let (l, k) = batch_device::raw_keys(Mode::Ctr, keys, &[]);
    batch(&l, &k, ivs.as_flattened(), msgs, output, false).map(|_| ())
}

/// GCM over a batch of messages in host memory (12-byte nonces; `aads` one per message or
/// none): the output, and each message's tag over its ciphertext (the input when decrypting:
/// the caller compares it with the tag it was given).
pub fn gcm_batch(
    keys: &[Key],
    nonces: &[[u8; 12]],
    aads: &[&[u8]],
    msgs: &Messages<'_>,
    output: &mut [u8],
    decrypt: bool,
) -> Result<Vec<Tag>> {
    let (l, k) = batch_device::raw_keys(Mode::Gcm, keys, aads);
    batch(&l, &k, nonces.as_flattened(), msgs, output, decrypt)
}

/// XTS over a batch of messages in host memory, each one data unit (keys: one per message, or
/// one for all). The host encrypts each message's tweak under K2 and schedules K1 (the kernels
/// take round keys).
pub fn xts_batch(
    keys: &[XtsKey],
    tweaks: &[[u8; 16]],
    msgs: &Messages<'_>,
    output: &mut [u8],
    decrypt: bool,
) -> Result<()> {
    let (l, first, k) = batch_device::xts_keys(keys, tweaks, decrypt);
    batch(&l, &k, first.as_flattened(), msgs, output, decrypt).map(|_| ())
}

/// Kernel-only time of a CTR or GCM batch whose messages are already in GPU memory (uploaded as
/// one chunk), in seconds: for the benchmarks.
pub fn batch_kernel_seconds(
    gcm: bool,
    keys: &[Key],
    ivs: &[[u8; 16]],
    msgs: &Messages<'_>,
    iters: usize,
) -> Result<f64> {
    let (l, k) = batch_device::raw_keys(if gcm { Mode::Gcm } else { Mode::Ctr }, keys, &[]);
    let nonces: Vec<u8> = ivs.iter().flat_map(|iv| iv[..l.iv_len].to_vec()).collect();
    resident_batch_seconds(&l, &k, &nonces, msgs, iters)
}

/// Kernel-only time of an XTS encryption batch already in GPU memory, in seconds.
pub fn xts_batch_kernel_seconds(
    keys: &[XtsKey],
    tweaks: &[[u8; 16]],
    msgs: &Messages<'_>,
    iters: usize,
) -> Result<f64> {
    let (l, first, k) = batch_device::xts_keys(keys, tweaks, false);
    resident_batch_seconds(&l, &k, first.as_flattened(), msgs, iters)
}

fn resident_batch_seconds(
    l: &batch_device::Layout<'_>,
    keys: &batch_device::Keys<'_>,
    ivs: &[u8],
    msgs: &Messages<'_>,
    iters: usize,
) -> Result<f64> {
    let gpu = Gpu::available()?;
    let stream = gpu.stream()?;
    let chunk = batch_device::Chunk::new(msgs, l, 0, msgs.count());
    let mut up = vec![0u8; chunk.in_bytes];
    chunk.stage(msgs, l, ivs, keys, &mut up);
    let input = stream.clone_htod(&up).driver("cuMemcpyHtoD")?;
    let mut out = stream
        .alloc_zeros::<u8>((chunk.out_bytes + chunk.scratch_bytes).max(16))
        .driver("cuMemAlloc")?;
    let p = chunk.params(msgs, keys, false);
    crate::backend::cuda::time_on_stream(&stream, iters, || {
        let (ip, _gi) = input.device_ptr(&stream);
        let (op, _go) = out.device_ptr_mut(&stream);
        launch_batch(gpu, &stream, &chunk, p, l.mode, ip, op)
    })
}

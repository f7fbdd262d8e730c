//! The host↔GPU pipeline: a batch in host memory is streamed through the GPU in chunks so that the
//! host copy into pinned staging, the upload, the kernel and the download of different chunks run
//! at the same time on separate streams.

use crate::backend::cuda::{driver_err, Gpu};
use crate::dispatch::Link;
use crate::error::{Error, Result};
use cudarc::driver::{CudaSlice, CudaStream, PinnedHostSlice};
use std::sync::Arc;

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
        PipelineConfig { chunk_items: 1 << 20, depth: 3 }
    }
}

struct Slot {
    stream: Arc<CudaStream>,
    host_in: PinnedHostSlice<u8>,
    host_out: PinnedHostSlice<u8>,
    dev_in: CudaSlice<u8>,
    dev_out: CudaSlice<u8>,
    /// The chunk whose output waits in `host_out` (first item, item count).
    pending: Option<(usize, usize)>,
}

/// Streams `n` items of `in_size` bytes through `launch` into `output` (items of `out_size`).
/// `fill(first, dst)` writes items `first..` into the pinned staging buffer `dst` (a copy, or the
/// host-side preparation itself, which then overlaps the GPU work of the other chunks);
/// `launch(stream, dev_in, dev_out, items)` enqueues the kernel for one chunk.
#[allow(clippy::too_many_arguments)]
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
    let chunk = cfg.chunk_items.clamp(1, n.max(1));
    let depth = cfg.depth.clamp(1, n.div_ceil(chunk).max(1));
    let ctx = gpu.context();
    let mut slots = Vec::with_capacity(depth);
    for _ in 0..depth {
        let stream = ctx.new_stream().map_err(driver_err("cuStreamCreate"))?;
        // SAFETY: staging buffers are written before they are read.
        let (host_in, host_out) = unsafe {
            (
                ctx.alloc_pinned_with_flags::<u8>(chunk * in_size, cudarc::driver::sys::CU_MEMHOSTALLOC_WRITECOMBINED)
                    .map_err(driver_err("cuMemHostAlloc"))?,
                ctx.alloc_pinned_with_flags::<u8>(chunk * out_size, 0).map_err(driver_err("cuMemHostAlloc"))?,
            )
        };
        let dev_in = unsafe { stream.alloc::<u8>(chunk * in_size) }.map_err(driver_err("cuMemAlloc"))?;
        let dev_out = unsafe { stream.alloc::<u8>(chunk * out_size) }.map_err(driver_err("cuMemAlloc"))?;
        slots.push(Slot { stream, host_in, host_out, dev_in, dev_out, pending: None });
    }
    let drain = |slot: &mut Slot, output: &mut [u8]| -> Result<()> {
        if let Some((first, items)) = slot.pending.take() {
            slot.stream.synchronize().map_err(driver_err("cuStreamSynchronize"))?;
            let src = slot.host_out.as_slice().map_err(driver_err("pinned read"))?;
            output[first * out_size..(first + items) * out_size].copy_from_slice(&src[..items * out_size]);
        }
        Ok(())
    };
    for (c, first) in (0..n).step_by(chunk).enumerate() {
        let items = chunk.min(n - first);
        let slot = &mut slots[c % depth];
        drain(slot, output)?;
        fill(first, &mut slot.host_in.as_mut_slice().map_err(driver_err("pinned write"))?[..items * in_size])?;
        {
            let src = &slot.host_in;
            let mut dst = slot.dev_in.slice_mut(..items * in_size);
            slot.stream.memcpy_htod(&src.as_slice().map_err(driver_err("pinned"))?[..items * in_size], &mut dst).map_err(driver_err("cuMemcpyHtoDAsync"))?;
        }
        launch(&slot.stream, &slot.dev_in, &mut slot.dev_out, items)?;
        slot.stream
            .memcpy_dtoh(&slot.dev_out.slice(..items * out_size), &mut slot.host_out.as_mut_slice().map_err(driver_err("pinned"))?[..items * out_size])
            .map_err(driver_err("cuMemcpyDtoHAsync"))?;
        slot.pending = Some((first, items));
    }
    for slot in &mut slots {
        drain(slot, output)?;
    }
    Ok(())
}

/// Measures pageable host↔device copy bandwidth with a 32 MiB buffer (what a host batch pays
/// without staging).
pub fn measure_link(gpu: &Gpu) -> Result<Link> {
    let up = vec![0x5au8; LINK_BYTES];
    let mut down = vec![0u8; LINK_BYTES];
    time_copies(gpu, &up, &mut down)
}

/// The same with page-locked buffers: the ceiling the chunked pipeline can reach.
pub fn measure_link_pinned(gpu: &Gpu) -> Result<Link> {
    let ctx = gpu.context();
    // SAFETY: both buffers are fully written before being read.
    let (mut up, mut down) = unsafe {
        (
            ctx.alloc_pinned_with_flags::<u8>(LINK_BYTES, 0).map_err(driver_err("cuMemHostAlloc"))?,
            ctx.alloc_pinned_with_flags::<u8>(LINK_BYTES, 0).map_err(driver_err("cuMemHostAlloc"))?,
        )
    };
    up.as_mut_slice().map_err(driver_err("pinned"))?.fill(0x5a);
    let down = down.as_mut_slice().map_err(driver_err("pinned"))?;
    time_copies(gpu, up.as_slice().map_err(driver_err("pinned"))?, down)
}

const LINK_BYTES: usize = 32 << 20;

fn time_copies(gpu: &Gpu, up: &[u8], down: &mut [u8]) -> Result<Link> {
    let stream = gpu.stream()?;
    let mut dev = unsafe { stream.alloc::<u8>(up.len()) }.map_err(driver_err("cuMemAlloc"))?;
    let mut best = (f64::MAX, f64::MAX);
    for _ in 0..4 {
        let t = std::time::Instant::now();
        stream.memcpy_htod(up, &mut dev).map_err(driver_err("cuMemcpyHtoD"))?;
        stream.synchronize().map_err(driver_err("sync"))?;
        let t_up = t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        stream.memcpy_dtoh(&dev, down).map_err(driver_err("cuMemcpyDtoH"))?;
        stream.synchronize().map_err(driver_err("sync"))?;
        best = (best.0.min(t_up), best.1.min(t.elapsed().as_secs_f64()));
    }
    if down[up.len() - 1] != up[up.len() - 1] {
        return Err(Error::Cuda { context: "measure_link", message: "round trip corrupted data".into() });
    }
    Ok(Link { h2d: up.len() as f64 / best.0, d2h: up.len() as f64 / best.1 })
}

//! The CUDA SHA-256 backend: host batches stream through `pipeline::run_chunked`; a
//! [`DeviceBatch`] keeps messages and digests in GPU memory for data that already lives there.

use super::{Digest, Messages, Mode};
use crate::backend::cuda::{grid_1d, time_on_stream, DriverResult, Gpu};
use crate::dispatch::Cost;
use crate::error::Result;
use crate::pipeline::{par_copy, run_chunked, run_gathered, PipelineConfig};
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use std::sync::Arc;

const THREADS: u32 = 256;
/// Bytes of input per pipeline chunk: big enough to fill the GPU, small enough to overlap.
const CHUNK_BYTES: usize = 32 << 20;

/// At most 64 blocks per SM; the kernels loop over the rest.
fn grid(gpu: &Gpu, n: u64) -> LaunchConfig {
    grid_1d(
        n.min(gpu.info().multiprocessors.max(1) as u64 * 64 * THREADS as u64),
        THREADS,
    )
}

/// The kernel for fixed-length messages, and whether it takes the length and mode arguments.
fn fixed_kernel(gpu: &Gpu, len: usize, mode: Mode) -> Result<(CudaFunction, bool)> {
    let img = &crate::kernels::SHA256;
    Ok(match (len, mode) {
        (64, Mode::Double) => (gpu.function(img, "sha256d_64")?, false),
        (80, Mode::Double) => (gpu.function(img, "sha256d_80")?, false),
        _ => (gpu.function(img, "sha256_fixed")?, true),
    })
}

fn launch_fixed(
    gpu: &Gpu,
    f: &CudaFunction,
    general: bool,
    stream: &Arc<CudaStream>,
    input: &CudaSlice<u8>,
    out: &mut CudaSlice<u8>,
    len: usize,
    n: usize,
    mode: Mode,
) -> Result<()> {
    let (n64, len64, dbl) = (n as u64, len as u64, (mode == Mode::Double) as i32);
    let mut b = stream.launch_builder(f);
    b.arg(input);
    if general {
        b.arg(&len64);
    }
    b.arg(out).arg(&n64);
    if general {
        b.arg(&dbl);
    }
    // SAFETY: argument list matches the kernel signature; buffers hold n items.
    unsafe { b.launch(grid(gpu, n64)) }
        .map(|_| ())
        .driver("kernel launch")
}

fn to_digests(bytes: Vec<u8>) -> Vec<Digest> {
    bytes
        .chunks_exact(32)
        .map(|c| c.try_into().unwrap())
        .collect()
}

/// Hashes a host batch on the GPU into `out`, transfers included.
pub(crate) fn hash(msgs: &Messages<'_>, mode: Mode, out: &mut [Digest]) -> Result<()> {
    match *msgs {
        Messages::Fixed { data, len, .. } => hash_fixed(len, mode, out, |first, dst| {
            par_copy(dst, &data[first * len..first * len + dst.len()])
        }),
        Messages::Var { .. } => {
            let mut batch = DeviceBatch::upload(msgs)?;
            batch.run(mode)?;
            out.copy_from_slice(&batch.download()?);
            Ok(())
        }
    }
}

/// Hashes `out.len()` messages of `len` bytes on the GPU into `out`; `fill(first, dst)` stages
/// messages `first..` into the page-locked buffer `dst`.
pub(crate) fn hash_fixed(
    len: usize,
    mode: Mode,
    out: &mut [Digest],
    fill: impl Fn(usize, &mut [u8]),
) -> Result<()> {
    let gpu = Gpu::available()?;
    let (f, general) = fixed_kernel(gpu, len, mode)?;
    let cfg = PipelineConfig {
        chunk_items: (CHUNK_BYTES / len).max(1),
        ..PipelineConfig::default()
    };
    run_chunked(
        gpu,
        out.len(),
        len,
        out.as_flattened_mut(),
        32,
        cfg,
        |first, dst| {
            fill(first, dst);
            Ok(())
        },
        |s, i, o, items| launch_fixed(gpu, &f, general, s, i, o, len, items, mode),
    )
}

/// Hashes `parts` of `len`-byte messages (joined in order) into `out`: the parts, page-locked,
/// are joined on the GPU by the gather kernel ([`run_gathered`]) rather than staged on the host.
pub(crate) fn hash_fixed_gathered(
    len: usize,
    mode: Mode,
    out: &mut [Digest],
    parts: &[&[u8]],
) -> Result<()> {
    let gpu = Gpu::available()?;
    let (f, general) = fixed_kernel(gpu, len, mode)?;
    let n = out.len();
    run_gathered(gpu, parts, out.as_flattened_mut(), |s, i, o| {
        launch_fixed(gpu, &f, general, s, i, o, len, n, mode)
    })
}

/// A batch whose messages and digests live in GPU memory.
pub struct DeviceBatch {
    stream: Arc<CudaStream>,
    data: CudaSlice<u8>,
    offsets: Option<CudaSlice<u64>>,
    /// Each message's length where they share one (fixed-length batches).
    msg_len: usize,
    n: usize,
    out: CudaSlice<u8>,
}

impl DeviceBatch {
    /// Copies a host batch to the GPU.
    pub fn upload(msgs: &Messages<'_>) -> Result<Self> {
        let gpu = Gpu::available()?;
        let stream = gpu.context().new_stream().driver("cuStreamCreate")?;
        let n = msgs.count();
        let (data, offsets, len) = match *msgs {
            Messages::Fixed { data, len, .. } => {
                (stream.clone_htod(data).driver("upload")?, None, len)
            }
            Messages::Var { data, offsets } => {
                // Rebase so the device holds only the bytes the batch covers.
                let base = offsets[0];
                let rebased: Vec<u64> = offsets.iter().map(|o| o - base).collect();
                let bytes = &data[base as usize..offsets[n] as usize];
                // A zero-byte allocation is not allowed; keep at least one byte.
                let dev = if bytes.is_empty() {
                    stream.clone_htod(&[0u8])
                } else {
                    stream.clone_htod(bytes)
                }
                .driver("upload")?;
                (dev, Some(stream.clone_htod(&rebased).driver("upload")?), 0)
            }
        };
        let out = stream.alloc_zeros::<u8>(32 * n).driver("cuMemAlloc")?;
        Ok(DeviceBatch {
            stream,
            data,
            offsets,
            msg_len: len,
            n,
            out,
        })
    }

    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Enqueues the kernel on the batch's stream (asynchronous).
    pub fn launch(&mut self, mode: Mode) -> Result<()> {
        let gpu = Gpu::available()?;
        match &self.offsets {
            None => {
                let (f, general) = fixed_kernel(gpu, self.msg_len, mode)?;
                launch_fixed(
                    gpu,
                    &f,
                    general,
                    &self.stream,
                    &self.data,
                    &mut self.out,
                    self.msg_len,
                    self.n,
                    mode,
                )
            }
            Some(offsets) => {
                let f = gpu.function(&crate::kernels::SHA256, "sha256_var")?;
                let (n64, dbl) = (self.n as u64, (mode == Mode::Double) as i32);
                let mut b = self.stream.launch_builder(&f);
                b.arg(&self.data)
                    .arg(offsets)
                    .arg(&mut self.out)
                    .arg(&n64)
                    .arg(&dbl);
                // SAFETY: matches `sha256_var`'s signature; offsets hold n + 1 entries.
                unsafe { b.launch(grid(gpu, n64)) }
                    .map(|_| ())
                    .driver("kernel launch")
            }
        }
    }

    /// Runs the kernel and waits for it.
    pub fn run(&mut self, mode: Mode) -> Result<()> {
        self.launch(mode)?;
        self.sync()
    }

    pub fn sync(&self) -> Result<()> {
        self.stream.synchronize().driver("cuStreamSynchronize")
    }

    /// Kernel-only time: the median of `iters` runs timed with device events, in seconds.
    pub fn time_kernel(&mut self, mode: Mode, iters: usize) -> Result<f64> {
        let stream = self.stream.clone();
        time_on_stream(&stream, iters, || self.launch(mode))
    }

    /// Copies the digests back to the host.
    pub fn download(&self) -> Result<Vec<Digest>> {
        let bytes = self.stream.clone_dtoh(&self.out).driver("download")?;
        self.sync()?;
        Ok(to_digests(bytes))
    }
}

/// Compute-only cost for the dispatcher: data resident, a 1-item and a 2^18-item batch.
pub(crate) fn calibrate(len: usize, mode: Mode, units_per_msg: u64) -> Result<Cost> {
    const LARGE: usize = 1 << 18;
    let data: Vec<u8> = (0..LARGE * len).map(|i| (i * 131 + 7) as u8).collect();
    let mut small = DeviceBatch::upload(&Messages::fixed(&data[..len], len)?)?;
    let mut large = DeviceBatch::upload(&Messages::fixed(&data, len)?)?;
    crate::dispatch::fit(
        units_per_msg,
        || small.run(mode),
        LARGE as u64 * units_per_msg,
        || large.run(mode),
    )
}

//! The GPU backend: scalars and points go up as 32-bit limbs, the SM2 kernels run, affine points
//! come back. The fixed-base table is built on the device once per process.

use super::{check_scalars, Point};
use crate::backend::cuda::{driver_err, time_on_stream, Gpu};
use crate::error::{Error, Result};
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use rayon::prelude::*;
use std::sync::{Arc, OnceLock};

const THREADS: u32 = 128;
/// Entries of the fixed-base table (33 signed 8-bit windows of 128 affine points, 64 bytes each).
const G_TABLE_LEN: usize = 33 * 128;

fn gpu() -> Result<&'static Gpu> {
    Gpu::get().map_err(|why| Error::BackendUnavailable { backend: "cuda".into(), why })
}

fn g_table(gpu: &Gpu) -> Result<&'static CudaSlice<u8>> {
    static TABLE: OnceLock<std::result::Result<CudaSlice<u8>, String>> = OnceLock::new();
    TABLE
        .get_or_init(|| {
            let build = || -> Result<CudaSlice<u8>> {
                let f = gpu.function(&crate::kernels::SM2, "sm2_g_table")?;
                let stream = gpu.stream()?;
                let mut t = stream.alloc_zeros::<u8>(G_TABLE_LEN * 64).map_err(driver_err("cuMemAlloc"))?;
                let mut b = stream.launch_builder(&f);
                b.arg(&mut t);
                // SAFETY: the grid-stride loop writes all G_TABLE_LEN entries.
                unsafe { b.launch(grid(G_TABLE_LEN)) }.map_err(driver_err("launch"))?;
                stream.synchronize().map_err(driver_err("sync"))?;
                Ok(t)
            };
            build().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| Error::Cuda { context: "sm2 table", message: e.clone() })
}

fn grid(n: usize) -> LaunchConfig {
    LaunchConfig { grid_dim: ((n as u32).div_ceil(THREADS).max(1), 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 }
}

/// Big-endian 32-byte integers as little-endian limbs.
fn limbs(be: &[u8]) -> impl Iterator<Item = u32> + '_ {
    (0..8).map(move |i| u32::from_be_bytes(be[28 - 4 * i..32 - 4 * i].try_into().unwrap()))
}

fn to_limbs<const B: usize>(items: &[[u8; B]]) -> Vec<u32> {
    items.par_iter().flat_map_iter(|it| it.chunks_exact(32).flat_map(limbs).collect::<Vec<_>>()).collect()
}

fn to_points(l: &[u32]) -> Vec<Point> {
    l.par_chunks_exact(16)
        .map(|p| {
            let mut out = [0u8; 64];
            for (half, coord) in p.chunks_exact(8).enumerate() {
                for (i, w) in coord.iter().enumerate() {
                    let at = 32 * half + 28 - 4 * i;
                    out[at..at + 4].copy_from_slice(&w.to_be_bytes());
                }
            }
            out
        })
        .collect()
}

/// Inputs resident on the device, ready to launch (also what the kernel-only timing uses).
struct Job {
    f: CudaFunction,
    stream: crate::backend::cuda::StreamGuard<'static>,
    scalars: CudaSlice<u32>,
    points: Option<CudaSlice<u32>>,
    out: CudaSlice<u32>,
    ok: CudaSlice<u8>,
    n: usize,
}

impl Job {
    fn mul_base(scalars: &[[u8; 32]]) -> Result<Job> {
        check_scalars(scalars)?;
        let gpu = gpu()?;
        let stream = gpu.stream()?;
        let n = scalars.len();
        Ok(Job {
            f: gpu.function(&crate::kernels::SM2, "sm2_mul_base")?,
            scalars: stream.clone_htod(&to_limbs(scalars)).map_err(driver_err("upload"))?,
            points: None,
            out: stream.alloc_zeros::<u32>(16 * n).map_err(driver_err("cuMemAlloc"))?,
            ok: stream.alloc_zeros::<u8>(1).map_err(driver_err("cuMemAlloc"))?,
            stream,
            n,
        })
    }

    fn mul_shared(k: &[u8; 32], points: &[Point]) -> Result<Job> {
        check_scalars(std::slice::from_ref(k))?;
        if points.is_empty() {
            return Err(Error::EmptyBatch);
        }
        let gpu = gpu()?;
        let stream = gpu.stream()?;
        let n = points.len();
        Ok(Job {
            f: gpu.function(&crate::kernels::SM2, "sm2_mul")?,
            scalars: stream.clone_htod(&to_limbs(std::slice::from_ref(k))).map_err(driver_err("upload"))?,
            points: Some(stream.clone_htod(&to_limbs(points)).map_err(driver_err("upload"))?),
            out: stream.alloc_zeros::<u32>(16 * n).map_err(driver_err("cuMemAlloc"))?,
            ok: stream.alloc_zeros::<u8>(n).map_err(driver_err("cuMemAlloc"))?,
            stream,
            n,
        })
    }

    fn launch(&mut self) -> Result<()> {
        let stream: &Arc<CudaStream> = &self.stream;
        let n64 = self.n as u64;
        let stride = 0u64; // sm2_mul: one scalar for every point
        let mut b = stream.launch_builder(&self.f);
        match &self.points {
            None => {
                let table = g_table(gpu()?)?;
                b.arg(&self.scalars).arg(table).arg(&mut self.out).arg(&n64);
            }
            Some(points) => {
                b.arg(&self.scalars).arg(&stride).arg(points).arg(&mut self.out).arg(&mut self.ok).arg(&n64);
            }
        }
        // SAFETY: arguments match `sm2_mul_base` / `sm2_mul`; buffers hold n items.
        unsafe { b.launch(grid(self.n)) }.map(|_| ()).map_err(driver_err("launch"))
    }

    fn results(&self) -> Result<(Vec<Point>, Vec<u8>)> {
        let out = self.stream.clone_dtoh(&self.out).map_err(driver_err("download"))?;
        let ok = self.stream.clone_dtoh(&self.ok).map_err(driver_err("download"))?;
        self.stream.synchronize().map_err(driver_err("sync"))?;
        Ok((to_points(&out), ok))
    }
}

/// `k·G` for each scalar, on the GPU (transfers included).
pub fn mul_base(scalars: &[[u8; 32]]) -> Result<Vec<Point>> {
    let mut job = Job::mul_base(scalars)?;
    job.launch()?;
    Ok(job.results()?.0)
}

/// `k·P` for one scalar over every point, on the GPU; `None` for a point not on the curve.
pub fn mul_shared(k: &[u8; 32], points: &[Point]) -> Result<Vec<Option<Point>>> {
    let mut job = Job::mul_shared(k, points)?;
    job.launch()?;
    let (out, ok) = job.results()?;
    Ok(out.into_iter().zip(ok).map(|(p, ok)| (ok != 0).then_some(p)).collect())
}

/// Kernel-only seconds of [`mul_base`] (median of `iters`), inputs resident. For benchmarks.
pub fn mul_base_kernel_seconds(scalars: &[[u8; 32]], iters: usize) -> Result<f64> {
    let mut job = Job::mul_base(scalars)?;
    let stream = job.stream.clone();
    time_on_stream(&stream, iters, || job.launch())
}

/// Kernel-only seconds of [`mul_shared`] (median of `iters`), inputs resident. For benchmarks.
pub fn mul_shared_kernel_seconds(k: &[u8; 32], points: &[Point], iters: usize) -> Result<f64> {
    let mut job = Job::mul_shared(k, points)?;
    let stream = job.stream.clone();
    time_on_stream(&stream, iters, || job.launch())
}

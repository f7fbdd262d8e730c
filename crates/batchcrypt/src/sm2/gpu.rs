//! The GPU backend: scalars and points stream through the chunked pipeline as 32-bit limbs, the SM2
//! kernels run, affine points come back. The fixed-base table is built on the device once per
//! process.

use super::{check_scalars, Point};
use crate::backend::cuda::{device_table, driver_err, time_on_stream, Gpu};
use crate::error::{Error, Result};
use crate::pipeline::{run_chunked, PipelineConfig};
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
    device_table(&TABLE, gpu, &crate::kernels::SM2, "sm2_g_table", G_TABLE_LEN, 64)
}

fn grid(n: usize) -> LaunchConfig {
    LaunchConfig { grid_dim: ((n as u32).div_ceil(THREADS).max(1), 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 }
}

/// Big-endian 256-bit integers to the kernels' little-endian limbs, or back: both are a byte
/// reversal of each 32-byte field.
fn flip_each_32(buf: &mut [u8]) {
    buf.par_chunks_exact_mut(32).with_min_len(4096).for_each(|c| c.reverse());
}

fn flipped<const B: usize>(items: &[[u8; B]]) -> Vec<u8> {
    let mut v = items.as_flattened().to_vec();
    flip_each_32(&mut v);
    v
}

/// Items per pipeline chunk: a few waves of the GPU, so host conversion and copies overlap it.
const CHUNK: usize = 1 << 18;

fn launch(stream: &Arc<CudaStream>, f: &CudaFunction, args: &[&CudaSlice<u8>], out: &mut CudaSlice<u8>, n: usize) -> Result<()> {
    let n64 = n as u64;
    let mut b = stream.launch_builder(f);
    for a in args {
        b.arg(*a);
    }
    b.arg(out).arg(&n64);
    // SAFETY: callers pass the arguments of `sm2_mul_base` (scalars, table) or `sm2_mul` (scalar,
    // points) in order; every buffer holds n items.
    unsafe { b.launch(grid(n)) }.map(|_| ()).map_err(driver_err("launch"))
}

/// `k·G` for each scalar, on the GPU (transfers included, pipelined in chunks).
pub fn mul_base(scalars: &[[u8; 32]]) -> Result<Vec<Point>> {
    check_scalars(scalars)?;
    let gpu = gpu()?;
    let table = g_table(gpu)?;
    let f = gpu.function(&crate::kernels::SM2, "sm2_mul_base")?;
    let n = scalars.len();
    let mut out = vec![[0u8; 64]; n];
    let fill = |first: usize, dst: &mut [u8]| {
        dst.copy_from_slice(scalars[first..first + dst.len() / 32].as_flattened());
        flip_each_32(dst);
        Ok(())
    };
    let cfg = PipelineConfig { chunk_items: CHUNK, depth: 3 };
    run_chunked(gpu, n, 32, out.as_flattened_mut(), 64, cfg, fill, |s, input, o, count| launch(s, &f, &[input, table], o, count))?;
    flip_each_32(out.as_flattened_mut());
    Ok(out)
}

/// `k·P` for one scalar over every point, on the GPU (transfers included, pipelined in chunks);
/// `None` for a point not on the curve.
pub fn mul_shared(k: &[u8; 32], points: &[Point]) -> Result<Vec<Option<Point>>> {
    check_scalars(std::slice::from_ref(k))?;
    if points.is_empty() {
        return Err(Error::EmptyBatch);
    }
    let gpu = gpu()?;
    let f = gpu.function(&crate::kernels::SM2, "sm2_mul")?;
    let key = {
        let stream = gpu.stream()?;
        let key = stream.clone_htod(&flipped(std::slice::from_ref(k))).map_err(driver_err("upload"))?;
        stream.synchronize().map_err(driver_err("sync"))?;
        key
    };
    let n = points.len();
    let mut out = vec![0u8; 68 * n];
    let fill = |first: usize, dst: &mut [u8]| {
        dst.copy_from_slice(points[first..first + dst.len() / 64].as_flattened());
        flip_each_32(dst);
        Ok(())
    };
    let cfg = PipelineConfig { chunk_items: CHUNK, depth: 3 };
    run_chunked(gpu, n, 64, &mut out, 68, cfg, fill, |s, input, o, count| launch(s, &f, &[&key, input], o, count))?;
    Ok(out
        .par_chunks_exact_mut(68)
        .map(|o| {
            // Limb 16 (little-endian) says whether the point was on the curve.
            let on_curve = o[64] != 0;
            o[..64].chunks_exact_mut(32).for_each(|c| c.reverse());
            on_curve.then(|| o[..64].try_into().unwrap())
        })
        .collect())
}

/// Kernel-only seconds of [`mul_base`] (median of `iters`), inputs resident. For benchmarks.
pub fn mul_base_kernel_seconds(scalars: &[[u8; 32]], iters: usize) -> Result<f64> {
    check_scalars(scalars)?;
    let gpu = gpu()?;
    let table = g_table(gpu)?;
    let f = gpu.function(&crate::kernels::SM2, "sm2_mul_base")?;
    let stream = gpu.stream()?;
    let input = stream.clone_htod(&flipped(scalars)).map_err(driver_err("upload"))?;
    let mut out = stream.alloc_zeros::<u8>(64 * scalars.len()).map_err(driver_err("cuMemAlloc"))?;
    time_on_stream(&stream, iters, || launch(&stream, &f, &[&input, table], &mut out, scalars.len()))
}

/// Kernel-only seconds of [`mul_shared`] (median of `iters`), inputs resident. For benchmarks.
pub fn mul_shared_kernel_seconds(k: &[u8; 32], points: &[Point], iters: usize) -> Result<f64> {
    check_scalars(std::slice::from_ref(k))?;
    let gpu = gpu()?;
    let f = gpu.function(&crate::kernels::SM2, "sm2_mul")?;
    let stream = gpu.stream()?;
    let key = stream.clone_htod(&flipped(std::slice::from_ref(k))).map_err(driver_err("upload"))?;
    let input = stream.clone_htod(&flipped(points)).map_err(driver_err("upload"))?;
    let mut out = stream.alloc_zeros::<u8>(68 * points.len()).map_err(driver_err("cuMemAlloc"))?;
    time_on_stream(&stream, iters, || launch(&stream, &f, &[&key, &input], &mut out, points.len()))
}

//! The GPU backend: messages stream through the chunked pipeline to `sm3_fixed`.

use super::Digest;
use crate::backend::cuda::{grid_1d, DriverResult, Gpu};
use crate::error::Result;
use crate::pipeline::{par_copy, run_chunked, PipelineConfig};
use cudarc::driver::PushKernelArg;

const THREADS: u32 = 256;
/// Bytes of input per pipeline chunk.
const CHUNK_BYTES: usize = 32 << 20;

pub fn hash_fixed(data: &[u8], len: usize, count: usize) -> Result<Vec<Digest>> {
    let gpu = Gpu::available()?;
    let f = gpu.function(&crate::kernels::SM3, "sm3_fixed")?;
    let mut out = crate::backend::cpu::zeroed_arrays::<32>(count);
    // Zero-length messages still need one input byte per item for the pipeline's buffers.
    let slot = len.max(1);
    let cfg = PipelineConfig {
        chunk_items: (CHUNK_BYTES / slot).max(1),
        ..PipelineConfig::default()
    };
    let fill = |first: usize, dst: &mut [u8]| {
        if len > 0 {
            par_copy(dst, &data[first * len..first * len + dst.len()]);
        }
        Ok(())
    };
    let len64 = len as u64;
    run_chunked(
        gpu,
        count,
        slot,
        out.as_flattened_mut(),
        32,
        cfg,
        fill,
        |stream, input, output, items| {
            let n = items as u64;
            let mut b = stream.launch_builder(&f);
            b.arg(input).arg(&len64).arg(output).arg(&n);
            // SAFETY: matches `sm3_fixed(in, len, out, n)`; the buffers hold `items` messages.
            unsafe { b.launch(grid_1d(n, THREADS)) }
                .map(|_| ())
                .driver("launch")
        },
    )?;
    Ok(out)
}

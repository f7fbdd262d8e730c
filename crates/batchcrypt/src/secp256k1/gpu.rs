//! The GPU backend. Both signature schemes reduce to one kernel item — u1, u2, Q, r — and the GPU
//! computes R = u1·G + u2·Q:
//! - ECDSA: u1 = e/s and u2 = r/s modulo n, with one inversion per chunk (Montgomery's trick);
//!   the kernel compares x(R) with r.
//! - BIP340: u1 = s, u2 = n - e for the challenge e; the kernel checks that y(R) is even and x(R) = r.
//! Batches stream through `pipeline::run_chunked`, so host preparation, transfers and kernels overlap.

use super::parse::{Prepared, SchnorrPrepared};
use k256::elliptic_curve::ops::Reduce;
use k256::elliptic_curve::PrimeField;
use k256::{Scalar, U256};
use rayon::prelude::*;

/// Limbs per kernel item: u1, u2, Q.x, Q.y, r (eight little-endian 32-bit limbs each).
pub(crate) const ITEM_LIMBS: usize = 40;

fn be_limbs(b: &[u8]) -> [u32; 8] {
    std::array::from_fn(|i| u32::from_be_bytes(b[28 - 4 * i..32 - 4 * i].try_into().unwrap()))
}

fn scalar(b: &[u8; 32]) -> Scalar {
    // r and s are already checked to lie in [1, n-1]; the hash is reduced as ECDSA specifies.
    <Scalar as Reduce<U256>>::reduce_bytes(&(*b).into())
}

/// A BIP340 item with its challenge e = H(r || P.x || msg) mod n.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SchnorrItem {
    pub prepared: SchnorrPrepared,
    pub challenge: [u8; 32],
}

/// BIP340 kernel items: u1 = s, u2 = -e mod n.
pub(crate) fn schnorr_kernel_items(items: &[SchnorrItem]) -> Vec<[u32; ITEM_LIMBS]> {
    items
        .par_iter()
        .map(|it| {
            let p = &it.prepared;
            let mut o = [0u32; ITEM_LIMBS];
            o[..8].copy_from_slice(&be_limbs(&p.s));
            o[8..16].copy_from_slice(&be_limbs(&(-scalar(&it.challenge)).to_repr()));
            o[16..24].copy_from_slice(&be_limbs(&p.pubkey[..32]));
            o[24..32].copy_from_slice(&be_limbs(&p.pubkey[32..]));
            o[32..].copy_from_slice(&be_limbs(&p.r));
            o
        })
        .collect()
}

/// ECDSA kernel items for a batch (parallel over chunks; one inversion per chunk).
pub(crate) fn kernel_items(items: &[Prepared]) -> Vec<[u32; ITEM_LIMBS]> {
    const CHUNK: usize = 4096;
    let mut out = vec![[0u32; ITEM_LIMBS]; items.len()];
    out.par_chunks_mut(CHUNK).zip(items.par_chunks(CHUNK)).for_each(|(o, it)| fill_chunk(o, it));
    out
}

fn fill_chunk(out: &mut [[u32; ITEM_LIMBS]], items: &[Prepared]) {
    // Montgomery's trick over s (never zero after parsing).
    let s: Vec<Scalar> = items.iter().map(|p| scalar(&p.s)).collect();
    let mut prefix = Vec::with_capacity(s.len());
    let mut acc = Scalar::ONE;
    for x in &s {
        prefix.push(acc);
        acc *= x;
    }
    let mut inv = acc.invert().unwrap_or(Scalar::ZERO);
    for i in (0..s.len()).rev() {
        let w = inv * prefix[i];
        inv *= s[i];
        let p = &items[i];
        let (e, r) = (scalar(&p.hash), scalar(&p.r));
        let o = &mut out[i];
        o[..8].copy_from_slice(&be_limbs(&(e * w).to_repr()));
        o[8..16].copy_from_slice(&be_limbs(&(r * w).to_repr()));
        o[16..24].copy_from_slice(&be_limbs(&p.pubkey[..32]));
        o[24..32].copy_from_slice(&be_limbs(&p.pubkey[32..]));
        o[32..].copy_from_slice(&be_limbs(&p.r));
    }
}

/// Which verification kernel runs the items.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Scheme {
    Ecdsa,
    Schnorr,
}

impl Scheme {
    pub(crate) fn kernel(self) -> &'static str {
        match self {
            Scheme::Ecdsa => "secp256k1_ecdsa_verify",
            Scheme::Schnorr => "secp256k1_schnorr_verify",
        }
    }
}

#[cfg(feature = "cuda")]
mod device {
    use super::{Scheme, ITEM_LIMBS};
    use crate::backend::cuda::{driver_err, Gpu};
    use crate::error::{Error, Result};
    use crate::pipeline::{run_chunked, PipelineConfig};
    use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
    use std::sync::OnceLock;

    const THREADS: u32 = 128;

    /// The fixed-base table, computed once on the device by `secp256k1_g_table`.
    fn g_table(gpu: &Gpu) -> Result<&'static CudaSlice<u8>> {
        static TABLE: OnceLock<std::result::Result<CudaSlice<u8>, String>> = OnceLock::new();
        TABLE
            .get_or_init(|| {
                let build = || -> Result<CudaSlice<u8>> {
                    let f = gpu.function(&crate::kernels::SECP256K1, "secp256k1_g_table")?;
                    let stream = gpu.stream()?;
                    let mut t = stream.alloc_zeros::<u8>(16 * 64).map_err(driver_err("cuMemAlloc"))?;
                    let mut b = stream.launch_builder(&f);
                    b.arg(&mut t);
                    // SAFETY: one thread writes the 16 table entries.
                    unsafe { b.launch(LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 }) }.map_err(driver_err("launch"))?;
                    stream.synchronize().map_err(driver_err("sync"))?;
                    Ok(t)
                };
                build().map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| Error::Cuda { context: "secp256k1 table", message: e.clone() })
    }

    /// Kernel-only time of `scheme` over `items` already in GPU memory: the median of `iters`
    /// launches timed with device events, in seconds, and the verdicts of the last launch.
    pub(crate) fn time_kernel(scheme: Scheme, items: &[[u32; ITEM_LIMBS]], iters: usize) -> Result<(f64, Vec<bool>)> {
        let gpu = Gpu::get().map_err(|why| Error::BackendUnavailable { backend: "cuda".into(), why })?;
        let table = g_table(gpu)?;
        let f = gpu.function(&crate::kernels::SECP256K1, scheme.kernel())?;
        let stream = gpu.stream()?;
        let flat: Vec<u32> = items.iter().flatten().copied().collect();
        let input = stream.clone_htod(&flat).map_err(driver_err("upload"))?;
        let mut out = stream.alloc_zeros::<u8>(items.len()).map_err(driver_err("cuMemAlloc"))?;
        let n64 = items.len() as u64;
        let cfg = LaunchConfig { grid_dim: ((items.len() as u32).div_ceil(THREADS).max(1), 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 };
        let launch = |out: &mut CudaSlice<u8>| -> Result<()> {
            let mut b = stream.launch_builder(&f);
            b.arg(&input).arg(table).arg(out).arg(&n64);
            // SAFETY: matches the verification kernels' signature; `input` holds the items.
            unsafe { b.launch(cfg) }.map(|_| ()).map_err(driver_err("launch"))
        };
        launch(&mut out)?; // warm-up
        let ctx = gpu.context();
        let mut times = Vec::new();
        for _ in 0..iters.max(1) {
            let (start, end) = (ctx.new_event(None).map_err(driver_err("event"))?, ctx.new_event(None).map_err(driver_err("event"))?);
            start.record(&stream).map_err(driver_err("event"))?;
            launch(&mut out)?;
            end.record(&stream).map_err(driver_err("event"))?;
            end.synchronize().map_err(driver_err("event"))?;
            times.push(start.elapsed_ms(&end).map_err(driver_err("event"))? as f64 / 1e3);
        }
        times.sort_by(f64::total_cmp);
        let ok = stream.clone_dtoh(&out).map_err(driver_err("download"))?;
        stream.synchronize().map_err(driver_err("sync"))?;
        Ok((times[times.len() / 2], ok.into_iter().map(|b| b != 0).collect()))
    }

    /// Runs `n` kernel items, produced chunk by chunk by `items(first, count)`, through `scheme`'s
    /// kernel: `true` where the equation holds.
    pub(crate) fn verify(scheme: Scheme, n: usize, items: impl Fn(usize, usize) -> Vec<[u32; ITEM_LIMBS]>) -> Result<Vec<bool>> {
        let gpu = Gpu::get().map_err(|why| Error::BackendUnavailable { backend: "cuda".into(), why })?;
        let table = g_table(gpu)?;
        let f = gpu.function(&crate::kernels::SECP256K1, scheme.kernel())?;
        let mut ok = vec![0u8; n];
        let cfg = PipelineConfig { chunk_items: 1 << 18, ..PipelineConfig::default() };
        // Preparing chunk k + 1 on the host overlaps the GPU's work on chunk k.
        let fill = |first: usize, dst: &mut [u8]| {
            let limbs = items(first, dst.len() / (4 * ITEM_LIMBS));
            for (d, l) in dst.chunks_exact_mut(4).zip(limbs.iter().flatten()) {
                d.copy_from_slice(&l.to_le_bytes());
            }
            Ok(())
        };
        run_chunked(gpu, n, 4 * ITEM_LIMBS, &mut ok, 1, cfg, fill, |stream, input, out, count| {
            let n64 = count as u64;
            let blocks = (count as u32).div_ceil(THREADS).max(1);
            let mut b = stream.launch_builder(&f);
            b.arg(input).arg(table).arg(out).arg(&n64);
            // SAFETY: matches the verification kernels' signature; input holds `count` items.
            unsafe { b.launch(LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 }) }.map(|_| ()).map_err(driver_err("launch"))
        })?;
        Ok(ok.into_iter().map(|b| b != 0).collect())
    }
}

#[cfg(feature = "cuda")]
pub(crate) use device::{time_kernel, verify};

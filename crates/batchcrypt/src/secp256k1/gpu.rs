//! The GPU backend. Both signature schemes reduce to one kernel item — u1, u2, the key, r — and the
//! GPU computes R = u1·G + u2·Q:
//! - ECDSA: u1 = e/s and u2 = r/s modulo n, with one inversion per block of items (Montgomery's
//!   trick); the kernel compares x(R) with r.
//! - BIP340: u1 = s, u2 = n - e for the challenge e; the kernel checks that y(R) is even and x(R) = r.
//! The host parses and does the scalar algebra; the GPU decompresses keys (or checks them against
//! the curve), so no square root is left on the CPU. Batches stream through
//! `pipeline::run_chunked`: the preparation of one chunk overlaps the GPU's work on the others.

use super::parse::{self, Reason, Sec1Key};
use super::EcdsaOptions;
use k256::elliptic_curve::ops::Reduce;
use k256::elliptic_curve::PrimeField;
use k256::{Scalar, U256};
use rayon::prelude::*;

/// Limbs per kernel item: u1, u2, key x, key y, r (eight little-endian 32-bit limbs each), flags.
pub(crate) const ITEM_LIMBS: usize = 41;
pub(crate) const ITEM_BYTES: usize = 4 * ITEM_LIMBS;
/// Entries of the fixed-base table (33 windows of 128 affine points, 64 bytes each).
pub(crate) const G_TABLE_LEN: usize = 33 * 128;

// Item flags and verdict codes, as the kernels define them.
const KEY_ODD: u32 = 1;
const KEY_COMPRESSED: u32 = 2;
const ITEM_SKIP: u32 = 4;
const OUT_VALID: u8 = 1;
const OUT_KEY_OFF_CURVE: u8 = 2;

fn scalar(b: &[u8; 32]) -> Scalar {
    // r and s are already checked to lie in [1, n-1]; the hash is reduced as ECDSA specifies.
    <Scalar as Reduce<U256>>::reduce_bytes(&(*b).into())
}

/// One item before the scalar algebra: u1 = a/d, u2 = b/d.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HostItem {
    a: Scalar,
    b: Scalar,
    d: Scalar,
    key: Sec1Key,
    r: [u8; 32],
}

/// An ECDSA item: u1 = e/s, u2 = r/s.
pub(crate) fn ecdsa_item(hash: &[u8; 32], sig: &[u8], pubkey: &[u8], opts: &EcdsaOptions) -> Result<HostItem, Reason> {
    let (r, s, key) = parse::ecdsa_parts(sig, pubkey, opts)?;
    Ok(HostItem { a: scalar(hash), b: scalar(&r), d: scalar(&s), key, r })
}

/// A BIP340 item: u1 = s, u2 = -e for the challenge e = H(r || P.x || msg).
pub(crate) fn schnorr_item(sig: &[u8; 64], pubkey: &[u8; 32], msg: &[u8]) -> Result<HostItem, Reason> {
    let (r, s, key) = parse::schnorr_parts(sig, pubkey)?;
    let e = parse::schnorr_challenge(&r, pubkey, msg);
    Ok(HostItem { a: scalar(&s), b: -scalar(&e), d: Scalar::ONE, key, r })
}

fn put(dst: &mut [u8], limb: usize, be: &[u8; 32]) {
    for i in 0..8 {
        let w = u32::from_be_bytes(be[28 - 4 * i..32 - 4 * i].try_into().unwrap());
        dst[4 * (limb + i)..4 * (limb + i + 1)].copy_from_slice(&w.to_le_bytes());
    }
}

fn encode(dst: &mut [u8], it: &HostItem, inv_d: &Scalar) {
    put(dst, 0, &(it.a * inv_d).to_repr().into());
    put(dst, 8, &(it.b * inv_d).to_repr().into());
    let (x, y, flags) = match it.key {
        Sec1Key::Compressed { x, odd } => (x, [0; 32], KEY_COMPRESSED | if odd { KEY_ODD } else { 0 }),
        Sec1Key::Uncompressed { x, y } => (x, y, 0),
    };
    put(dst, 16, &x);
    put(dst, 24, &y);
    put(dst, 32, &it.r);
    dst[160..164].copy_from_slice(&flags.to_le_bytes());
}

/// Writes items `first..first + count` (`make(i)`, `count = reasons.len()`) as kernel items into
/// `dst`, and each item's parse failure into `reasons` (its kernel item is then marked skip).
/// Parallel over blocks, with one inversion per block.
pub(crate) fn encode_items(dst: &mut [u8], reasons: &mut [Option<Reason>], first: usize, make: &(impl Fn(usize) -> Result<HostItem, Reason> + Sync)) {
    const BLOCK: usize = 1024;
    dst.par_chunks_mut(BLOCK * ITEM_BYTES).zip(reasons.par_chunks_mut(BLOCK)).enumerate().for_each(|(b, (dst, reasons))| {
        let base = first + b * BLOCK;
        let items: Vec<Result<HostItem, Reason>> = (0..reasons.len()).map(|k| make(base + k)).collect();
        // Montgomery's trick over d (never zero after parsing).
        let mut prefix = Vec::with_capacity(items.len());
        let mut acc = Scalar::ONE;
        for it in &items {
            prefix.push(acc);
            if let Ok(it) = it {
                acc *= it.d;
            }
        }
        let mut inv = acc.invert().unwrap_or(Scalar::ZERO);
        for k in (0..items.len()).rev() {
            let out = &mut dst[k * ITEM_BYTES..(k + 1) * ITEM_BYTES];
            match &items[k] {
                Ok(it) => {
                    encode(out, it, &(inv * prefix[k]));
                    inv *= it.d;
                    reasons[k] = None;
                }
                Err(why) => {
                    out.fill(0);
                    out[160..164].copy_from_slice(&ITEM_SKIP.to_le_bytes());
                    reasons[k] = Some(*why);
                }
            }
        }
    });
}

/// An item's verdict from its parse failure or the kernel's code.
pub(crate) fn verdict(reason: Option<Reason>, code: u8) -> Result<(), Reason> {
    match (reason, code) {
        (Some(why), _) => Err(why),
        (None, OUT_VALID) => Ok(()),
        (None, OUT_KEY_OFF_CURVE) => Err(Reason::PublicKeyNotOnCurve),
        (None, _) => Err(Reason::SignatureMismatch),
    }
}

/// All items encoded at once (for kernel-only timing and host emulation).
pub(crate) fn encode_all(n: usize, make: &(impl Fn(usize) -> Result<HostItem, Reason> + Sync)) -> (Vec<u8>, Vec<Option<Reason>>) {
    let mut bytes = vec![0u8; n * ITEM_BYTES];
    let mut reasons = vec![None; n];
    encode_items(&mut bytes, &mut reasons, 0, make);
    (bytes, reasons)
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
    use super::{encode_all, encode_items, verdict, HostItem, Reason, Scheme, G_TABLE_LEN, ITEM_BYTES};
    use crate::backend::cuda::{device_table, driver_err, grid_1d, time_on_stream, Gpu};
    use crate::error::{Error, Result};
    use crate::pipeline::{run_chunked, PipelineConfig};
    use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, PushKernelArg};
    use std::sync::{Arc, OnceLock};

    const THREADS: u32 = 128;

    /// The fixed-base table, computed once on the device by `secp256k1_g_table`.
    fn g_table(gpu: &Gpu) -> Result<&'static CudaSlice<u8>> {
        static TABLE: OnceLock<std::result::Result<CudaSlice<u8>, String>> = OnceLock::new();
        device_table(&TABLE, gpu, &crate::kernels::SECP256K1, "secp256k1_g_table", G_TABLE_LEN, 64)
    }

    fn launch(stream: &Arc<CudaStream>, f: &CudaFunction, input: &CudaSlice<u8>, table: &CudaSlice<u8>, out: &mut CudaSlice<u8>, count: usize) -> Result<()> {
        let n64 = count as u64;
        let mut b = stream.launch_builder(f);
        b.arg(input).arg(table).arg(out).arg(&n64);
        // SAFETY: matches the verification kernels' signature; `input` holds `count` items.
        unsafe { b.launch(grid_1d(n64, THREADS)) }.map(|_| ()).map_err(driver_err("launch"))
    }

    /// Kernel-only time of `scheme` over `n` items (`make(i)`) already in GPU memory: the median
    /// of `iters` launches timed with device events, in seconds, and the verdicts.
    pub(crate) fn time_kernel(scheme: Scheme, n: usize, make: impl Fn(usize) -> std::result::Result<HostItem, Reason> + Sync, iters: usize) -> Result<(f64, Vec<std::result::Result<(), Reason>>)> {
        let gpu = Gpu::get().map_err(|why| Error::BackendUnavailable { backend: "cuda".into(), why })?;
        let table = g_table(gpu)?;
        let f = gpu.function(&crate::kernels::SECP256K1, scheme.kernel())?;
        let stream = gpu.stream()?;
        let (bytes, reasons) = encode_all(n, &make);
        let input = stream.clone_htod(&bytes).map_err(driver_err("upload"))?;
        let mut out = stream.alloc_zeros::<u8>(n).map_err(driver_err("cuMemAlloc"))?;
        let seconds = time_on_stream(&stream, iters, || launch(&stream, &f, &input, table, &mut out, n))?;
        let codes = stream.clone_dtoh(&out).map_err(driver_err("download"))?;
        stream.synchronize().map_err(driver_err("sync"))?;
        Ok((seconds, reasons.into_iter().zip(codes).map(|(r, c)| verdict(r, c)).collect()))
    }

    /// Verifies `n` items (`make(i)`) through `scheme`'s kernel, chunk by chunk: the host
    /// prepares chunk k + 1 while the GPU works on chunk k.
    pub(crate) fn verify(scheme: Scheme, n: usize, make: impl Fn(usize) -> std::result::Result<HostItem, Reason> + Sync) -> Result<Vec<std::result::Result<(), Reason>>> {
        let gpu = Gpu::get().map_err(|why| Error::BackendUnavailable { backend: "cuda".into(), why })?;
        let table = g_table(gpu)?;
        let f = gpu.function(&crate::kernels::SECP256K1, scheme.kernel())?;
        let mut codes = vec![0u8; n];
        let mut reasons = vec![None; n];
        // A chunk a little over one wave of the GPU: small enough that preparation overlaps.
        let cfg = PipelineConfig { chunk_items: 1 << 17, depth: 3 };
        let fill = |first: usize, dst: &mut [u8]| {
            let count = dst.len() / ITEM_BYTES;
            encode_items(dst, &mut reasons[first..first + count], first, &make);
            Ok(())
        };
        run_chunked(gpu, n, ITEM_BYTES, &mut codes, 1, cfg, fill, |stream, input, out, count| launch(stream, &f, input, table, out, count))?;
        Ok(reasons.into_iter().zip(codes).map(|(r, c)| verdict(r, c)).collect())
    }
}

#[cfg(feature = "cuda")]
pub(crate) use device::{time_kernel, verify};

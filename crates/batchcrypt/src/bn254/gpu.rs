//! The GPU backend: the MSM steps of `kernels/include/bc/msm.cuh` (instantiated for G1 in
//! `kernels/bn254`) on a stream, with the bases uploaded once and kept in GPU memory.

use super::msm::{Kernels, RawJacobian, Shape, SCAN_THREADS};
use super::Fr;
use crate::backend::cuda::{driver_err, grid_1d, Gpu, StreamGuard};
use crate::error::Result;
use cudarc::driver::{
    CudaSlice, CudaStream, DevicePtrMut, DeviceRepr, LaunchConfig, PinnedHostSlice, PushKernelArg,
    ValidAsZeroBits,
};
use std::sync::{Arc, Mutex};

const POINT_BYTES: u64 = 96;

/// Affine bases in GPU memory (arkworks' Montgomery limbs, 64 bytes each).
pub struct DeviceBases {
    pts: CudaSlice<u32>,
    len: usize,
}

impl DeviceBases {
    pub fn upload(raw: &[u32]) -> Result<DeviceBases> {
        let gpu = Gpu::available()?;
        let stream = gpu.stream()?;
        let pts = stream
            .clone_htod(if raw.is_empty() { &[0u32; 16][..] } else { raw })
            .map_err(driver_err("upload bases"))?;
        stream.synchronize().map_err(driver_err("sync"))?;
        Ok(DeviceBases {
            pts,
            len: raw.len() / 16,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Device bytes held.
    pub fn bytes(&self) -> usize {
        self.len * 64
    }
}

/// Each window's sum of `sum k_i P_i`.
pub(crate) fn window_sums(
    bases: &DeviceBases,
    scalars: &[Fr],
    s: &Shape,
) -> Result<Vec<RawJacobian>> {
    let gpu = Gpu::available()?;
    let stream = gpu.stream()?;
    let dev = upload_scalars(gpu, &stream, scalars)?;
    let mut k = Launcher {
        gpu,
        stream,
        bases: &bases.pts,
    };
    super::msm::window_sums(&mut k, s, &dev)
}

/// Scalars per piece of the staged upload: converting one piece overlaps the copy of the last.
const UPLOAD_PIECE: usize = 1 << 20;

/// Page-locked staging for scalar uploads, kept between calls (page-locking costs far more than
/// the copy); one call uses it at a time, a concurrent one copies from pageable memory.
static STAGING: Mutex<Option<PinnedHostSlice<u32>>> = Mutex::new(None);

/// The scalars in GPU memory as the kernels read them (Montgomery limbs): converted piece by
/// piece into page-locked staging, each piece's copy running while the next is converted.
fn upload_scalars(gpu: &Gpu, stream: &Arc<CudaStream>, scalars: &[Fr]) -> Result<CudaSlice<u32>> {
    let words = 8 * scalars.len();
    let mut dev = alloc::<u32>(stream, words.max(8), false)?;
    let Ok(mut staging) = STAGING.try_lock() else {
        stream
            .memcpy_htod(&super::raw_scalars(scalars), &mut dev)
            .map_err(driver_err("upload scalars"))?;
        return Ok(dev);
    };
    if staging.as_ref().is_none_or(|p| p.len() < words) {
        *staging = None; // free the old buffer first
                         // SAFETY: written before it is read; write-combined, as the host only writes it.
        *staging = Some(
            unsafe {
                gpu.context().alloc_pinned_with_flags::<u32>(
                    words.max(8),
                    cudarc::driver::sys::CU_MEMHOSTALLOC_WRITECOMBINED,
                )
            }
            .map_err(driver_err("cuMemHostAlloc"))?,
        );
    }
    let pinned = staging.as_mut().expect("allocated above");
    // One wait for earlier copies out of the staging buffer, then raw access.
    let host = pinned.as_mut_slice().map_err(driver_err("pinned"))?;
    let host: &mut [u32] = &mut host[..words];
    for (i, piece) in scalars.chunks(UPLOAD_PIECE).enumerate() {
        let at = i * UPLOAD_PIECE * 8;
        let dst = &mut host[at..at + 8 * piece.len()];
        super::scalars_into(dst, piece);
        // SAFETY: `dst` stays untouched until the stream synchronises below (the staging lock is
        // held until then); the copy is ordered before the kernels on the same stream.
        unsafe {
            cudarc::driver::result::memcpy_htod_async(
                dev.slice_mut(at..at + dst.len()).device_ptr_mut(stream).0,
                dst,
                stream.cu_stream(),
            )
        }
        .map_err(driver_err("cuMemcpyHtoDAsync"))?;
    }
    stream.synchronize().map_err(driver_err("sync"))?;
    Ok(dev)
}

/// Seconds of device time for the MSM steps on scalars already in GPU memory, the median of
/// `iters` runs (for benchmarks).
pub fn kernel_seconds(bases: &DeviceBases, scalars: &[Fr], iters: usize) -> Result<f64> {
    let s = Shape::new(scalars.len(), super::SCALAR_BITS)?;
    let gpu = Gpu::available()?;
    let stream = gpu.stream()?;
    let dev = upload_scalars(gpu, &stream, scalars)?;
    let st = (*stream).clone();
    let mut k = Launcher {
        gpu,
        stream,
        bases: &bases.pts,
    };
    crate::backend::cuda::time_on_stream(&st, iters, || {
        super::msm::window_sums(&mut k, &s, &dev).map(drop)
    })
}

fn alloc<T: DeviceRepr + ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    len: usize,
    zeroed: bool,
) -> Result<CudaSlice<T>> {
    if zeroed {
        return stream
            .alloc_zeros::<T>(len)
            .map_err(driver_err("cuMemAlloc"));
    }
    // SAFETY: only for buffers a kernel writes in full before any read (see msm::Kernels).
    unsafe { stream.alloc::<T>(len) }.map_err(driver_err("cuMemAlloc"))
}

struct Launcher<'a> {
    gpu: &'static Gpu,
    stream: StreamGuard<'static>,
    bases: &'a CudaSlice<u32>,
}

/// Launches kernel `name` of the BN254 image with the given arguments.
macro_rules! launch {
    ($k:expr, $name:literal, $cfg:expr $(, $arg:expr)* $(,)?) => {{
        let f = $k.gpu.function(&crate::kernels::BN254, $name)?;
        let mut b = $k.stream.launch_builder(&f);
        $(b.arg($arg);)*
        // SAFETY: each call passes its kernel's arguments in order, with buffers sized by
        // `msm::window_sums` for the items the kernel walks.
        unsafe { b.launch($cfg) }.map(drop).map_err(driver_err("launch"))
    }};
}

impl Kernels for Launcher<'_> {
    type Words = CudaSlice<u32>;
    type Points = CudaSlice<u8>;

    fn words(&mut self, len: u64, zeroed: bool) -> Result<CudaSlice<u32>> {
        alloc(&self.stream, len.max(1) as usize, zeroed)
    }

    fn points(&mut self, len: u64, zeroed: bool) -> Result<CudaSlice<u8>> {
        alloc(&self.stream, (len.max(1) * POINT_BYTES) as usize, zeroed)
    }

    fn digits(
        &mut self,
        scalars: &CudaSlice<u32>,
        s: &Shape,
        digits: &mut CudaSlice<u32>,
        counts: &mut CudaSlice<u32>,
    ) -> Result<()> {
        let n = s.n as u64;
        launch!(
            self,
            "bn254_msm_digits",
            grid_1d(n, 256),
            scalars,
            &n,
            &s.c,
            &s.windows,
            digits,
            counts
        )
    }

    fn scan_tiles(
        &mut self,
        data: &mut CudaSlice<u32>,
        m: u64,
        tile: u32,
        totals: &mut CudaSlice<u32>,
    ) -> Result<()> {
        let blocks = m.div_ceil(u64::from(tile)).clamp(1, 1 << 16) as u32;
        let cfg = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (SCAN_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        launch!(self, "bn254_msm_scan_tiles", cfg, data, &m, &tile, totals)
    }

    fn scan_add(
        &mut self,
        data: &mut CudaSlice<u32>,
        m: u64,
        tile: u32,
        offsets: &CudaSlice<u32>,
    ) -> Result<()> {
        launch!(
            self,
            "bn254_msm_scan_add",
            grid_1d(m, 256),
            data,
            &m,
            &tile,
            offsets
        )
    }

    fn first_word(&mut self, w: &CudaSlice<u32>) -> Result<u32> {
        let mut out = [0u32; 1];
        self.stream
            .memcpy_dtoh(&w.slice(0..1), &mut out)
            .map_err(driver_err("download"))?;
        self.stream.synchronize().map_err(driver_err("sync"))?;
        Ok(out[0])
    }

    fn scatter(
        &mut self,
        digits: &CudaSlice<u32>,
        s: &Shape,
        cursor: &mut CudaSlice<u32>,
        entries: &mut CudaSlice<u32>,
        keys: &mut CudaSlice<u32>,
    ) -> Result<()> {
        let n = s.n as u64;
        launch!(
            self,
            "bn254_msm_scatter",
            grid_1d(n * u64::from(s.windows), 256),
            digits,
            &n,
            &s.c,
            &s.windows,
            cursor,
            entries,
            keys
        )
    }

    fn accumulate_points(
        &mut self,
        entries: &CudaSlice<u32>,
        keys: &CudaSlice<u32>,
        total: u64,
        buckets: &mut CudaSlice<u8>,
        next: &mut (CudaSlice<u32>, CudaSlice<u8>),
    ) -> Result<()> {
        let slice = super::msm::SLICE;
        let bases = self.bases;
        launch!(
            self,
            "bn254_msm_accumulate_points",
            grid_1d(total.div_ceil(u64::from(slice)), 128),
            bases,
            entries,
            keys,
            &total,
            &slice,
            buckets,
            &mut next.0,
            &mut next.1
        )
    }

    fn accumulate_partials(
        &mut self,
        from: &(CudaSlice<u32>, CudaSlice<u8>),
        total: u64,
        buckets: &mut CudaSlice<u8>,
        next: &mut (CudaSlice<u32>, CudaSlice<u8>),
    ) -> Result<()> {
        let slice = super::msm::SLICE;
        launch!(
            self,
            "bn254_msm_accumulate_partials",
            grid_1d(total.div_ceil(u64::from(slice)), 128),
            &from.1,
            &from.0,
            &total,
            &slice,
            buckets,
            &mut next.0,
            &mut next.1
        )
    }

    fn window_segments(
        &mut self,
        buckets: &CudaSlice<u8>,
        s: &Shape,
        out: &mut CudaSlice<u8>,
    ) -> Result<()> {
        let (per_window, per) = (s.buckets_per_window(), s.segment());
        let items = u64::from(s.windows) * u64::from(per_window / per);
        launch!(
            self,
            "bn254_msm_window_segments",
            grid_1d(items, 128),
            buckets,
            &per_window,
            &s.windows,
            &per,
            out
        )
    }

    fn sum_groups(
        &mut self,
        input: &CudaSlice<u8>,
        groups: u64,
        m: u32,
        out: &mut CudaSlice<u8>,
    ) -> Result<()> {
        launch!(
            self,
            "bn254_msm_sum_groups",
            grid_1d(groups, 64),
            input,
            &groups,
            &m,
            out
        )
    }

    fn read_points(&mut self, p: &CudaSlice<u8>, len: usize) -> Result<Vec<RawJacobian>> {
        let bytes = self.stream.clone_dtoh(p).map_err(driver_err("download"))?;
        Ok(bytes
            .chunks_exact(POINT_BYTES as usize)
            .take(len)
            .map(|c| {
                std::array::from_fn(|i| u32::from_le_bytes(c[4 * i..4 * i + 4].try_into().unwrap()))
            })
            .collect())
    }
}

//! The GPU backend of the transforms: the NTT steps of `kernels/include/bc/ntt.cuh` over a
//! field's instantiation, with one twiddle table per device and field kept for every size.

use super::{Field, Kernels, Ntt, Scaling, Twiddles};
use crate::backend::cuda::{grid_1d, DriverResult, Gpu, StreamGuard};
use crate::error::Result;
use crate::memory::Reservation;
use crate::msm::gpu::{alloc, download_elements, download_words, upload_elements, upload_range};
use crate::msm::Scalars;
use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use std::sync::{Arc, Mutex};

/// Launches step `step` of field `F`'s kernels with the given arguments.
macro_rules! launch {
    ($k:expr, $step:expr, $cfg:expr $(, $arg:expr)* $(,)?) => {{
        let f = $k.gpu.function(F::image(), &format!("{}_ntt_{}", F::KERNELS, $step))?;
        let mut b = $k.stream.launch_builder(&f);
        $(b.arg($arg);)*
        // SAFETY: each call passes its kernel's arguments in order, with buffers sized by
        // `ntt::transform` for the items the kernel walks.
        unsafe { b.launch($cfg) }.map(drop).driver("launch")
    }};
}

/// A device's twiddle table of field `F` for the largest transform so far, shared by every later
/// one, and its hold on the device's memory budget.
struct CachedTwiddles<F>(Mutex<Option<Held>>, std::marker::PhantomData<F>);

/// A twiddle table and its hold on the memory budget.
type Held = (Arc<Twiddles<CudaSlice<u32>>>, Reservation<'static>);

impl<F> Default for CachedTwiddles<F> {
    fn default() -> Self {
        CachedTwiddles(Mutex::new(None), std::marker::PhantomData)
    }
}

fn twiddles<F: Field>(k: &mut Device, log_n: u32) -> Result<Arc<Twiddles<CudaSlice<u32>>>> {
    let mut cached = k
        .gpu
        .local::<CachedTwiddles<F>>()
        .0
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some((t, _)) = cached.as_ref().filter(|(t, _)| t.log_max >= log_n) {
        return Ok(t.clone());
    }
    *cached = None;
    let t = Arc::new(Twiddles::build::<F, _>(k, log_n)?);
    k.stream.synchronize().driver("sync")?; // other streams read it next
    let hold = k.gpu.budget().hold(4 * t.table.len() as u64);
    *cached = Some((t.clone(), hold));
    Ok(t)
}

/// The transforms `steps`, one after another, on `values` (whole polynomials of one size, checked
/// by the caller): one upload, the kernels of each step, one download.
pub(crate) fn ntt<F: Field>(values: &mut [F], steps: &[Ntt<F>]) -> Result<()> {
    let mut run = NttRun::new(Scalars::Field(values), 0..values.len(), steps)?;
    run.steps()?;
    let held = &run.held;
    download_elements(held.k.gpu, &held.k.stream, &held.data, values)
}

/// [`ntt`] on the canonical elements `range` of `input` into `out` (as many bytes), converted
/// nowhere: a transform is linear and Montgomery form is a product by a constant, so the kernels'
/// steps on canonical words give the canonical words of the result. Each input is checked below
/// the modulus as it is staged (an error names it by its index in `input`).
pub(crate) fn ntt_canonical<F: Field>(
    input: &[u8],
    range: std::ops::Range<usize>,
    out: &mut [u8],
    steps: &[Ntt<F>],
) -> Result<()> {
    use rayon::prelude::*;
    let mut run = NttRun::new(Scalars::canonical(input)?, range, steps)?;
    run.steps()?;
    let held = &run.held;
    let mut rest = out;
    let words = F::WORDS * held.len;
    download_words(
        held.k.gpu,
        &held.k.stream,
        &held.data,
        words,
        F::WORDS,
        |piece| {
            let (out, tail) = std::mem::take(&mut rest).split_at_mut(4 * piece.len());
            rest = tail;
            out.par_chunks_mut(1 << 14)
                .zip(piece.par_chunks(1 << 12))
                .for_each(|(out, words)| {
                    for (o, w) in out.chunks_exact_mut(4).zip(words) {
                        o.copy_from_slice(&w.to_le_bytes())
                    }
                })
        },
    )
}

/// Two sparse matrices by rows in one GPU's memory, A's `n` rows then B's (a prover's constraint
/// matrices), for [`products`], with their hold on its memory budget.
pub struct DeviceRows {
    gpu: usize,
    n: u64,
    /// The witness's length that every term's signal indexes below.
    signals: usize,
    starts: CudaSlice<u64>,
    cols: CudaSlice<u32>,
    coefs: CudaSlice<u32>,
    _memory: Reservation<'static>,
}

impl DeviceRows {
    /// Uploads to the current GPU the rows of `starts` (2n + 1 offsets into the terms), each
    /// term a signal below `signals` (`cols`) and its coefficient.
    pub fn upload<F: Field>(
        starts: &[u64],
        cols: &[u32],
        coefs: &[F],
        signals: usize,
    ) -> Result<DeviceRows> {
        let terms = cols.len();
        let well_formed = starts.len() % 2 == 1
            && coefs.len() == terms
            && starts.first() == Some(&0)
            && starts.last() == Some(&(terms as u64))
            && starts.windows(2).all(|w| w[0] <= w[1])
            && cols.iter().all(|&c| (c as usize) < signals);
        if !well_formed {
            return Err(crate::error::Error::invalid(
                "sparse rows with offsets out of order or signals past the witness",
            ));
        }
        let gpu = Gpu::available()?;
        let memory = gpu.budget().reserve(
            Self::bytes::<F>(starts.len(), terms),
            "a key's constraint matrices",
        )?;
        let stream = gpu.stream()?;
        let rows = DeviceRows {
            gpu: gpu.index(),
            n: (starts.len() / 2) as u64,
            signals,
            starts: stream.clone_htod(starts).driver("upload")?,
            cols: stream.clone_htod(cols).driver("upload")?,
            coefs: upload_elements(gpu, &stream, coefs)?,
            _memory: memory,
        };
        stream.synchronize().driver("sync")?;
        Ok(rows)
    }

    /// GPU memory that rows of `offsets` offsets and `terms` terms take.
    pub fn bytes<F: Field>(offsets: usize, terms: usize) -> u64 {
        (8 * offsets + (4 + 4 * F::WORDS) * terms.max(1)) as u64
    }
}

/// `[A·w | B·w | (A·w)∘(B·w)]` of `rows` (on the current GPU) and the witness `w`, left in its
/// memory: a prover's evaluations on the domain, made where the transforms read them.
pub(crate) fn products<F: Field>(rows: &DeviceRows, w: &[F]) -> Result<OnDevice<F>> {
    if w.len() != rows.signals {
        return Err(crate::error::Error::invalid(format!(
            "a witness of {} signals for constraint matrices over {}",
            w.len(),
            rows.signals
        )));
    }
    let gpu = Gpu::available()?;
    debug_assert_eq!(gpu.index(), rows.gpu, "the rows' GPU is the current one");
    let n = rows.n;
    let elem = 4 * F::WORDS as u64;
    // One reservation for the chain that follows: the evaluations, and room for the witness now
    // and for the transforms' scratch after it (so that no step holds memory while it waits for
    // more).
    let spare = (elem * w.len() as u64).max(scratch_bytes::<F>(3 * n, n.next_power_of_two()));
    let memory = gpu
        .budget()
        .reserve(elem * 3 * n + spare, "a prover's evaluations")?;
    let stream = gpu.stream()?;
    let dev_w = upload_elements(gpu, &stream, w)?;
    let mut k = Device { gpu, stream };
    let mut out = Kernels::<F>::alloc(&mut k, 3 * n)?;
    launch!(
        k,
        "products",
        grid_1d(n, 256),
        &rows.starts,
        &rows.cols,
        &rows.coefs,
        &dev_w,
        &n,
        &mut out
    )?;
    k.stream.synchronize().driver("sync")?;
    Ok(OnDevice {
        k,
        data: out,
        len: 3 * n as usize,
        _memory: memory,
        spare,
        _field: std::marker::PhantomData,
    })
}

/// GPU memory a chain of transforms of `size` on `len` elements needs beside them: the
/// permutation's output and the scaling tables (about 2 sqrt(size) elements).
fn scratch_bytes<F: Field>(len: u64, size: u64) -> u64 {
    let elem = 4 * F::WORDS as u64;
    elem * len + ((4 * elem) << size.max(1).trailing_zeros().div_ceil(2))
}

/// Elements of `F` in one GPU's memory, as the kernels store them (arkworks' Montgomery limbs),
/// with their hold on its memory budget: a transform's result that the next step reads where it
/// is.
pub struct OnDevice<F> {
    k: Device,
    data: CudaSlice<u32>,
    len: usize,
    _memory: Reservation<'static>,
    /// Bytes of that hold beyond the elements, for a next step's scratch.
    spare: u64,
    _field: std::marker::PhantomData<F>,
}

impl<F: Field> OnDevice<F> {
    /// The GPU holding them (an index among the process's GPUs).
    pub fn gpu(&self) -> usize {
        self.k.gpu.index()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The elements' limbs (`F::WORDS` words each), finished: any stream of the GPU may read them.
    pub fn limbs(&self) -> &CudaSlice<u32> {
        &self.data
    }

    /// The transforms `steps` (whole polynomials of one size, as [`ntt`]) on these elements,
    /// one after another, the result left in GPU memory.
    pub fn ntts(self, steps: &[Ntt<F>]) -> Result<OnDevice<F>> {
        if super::check_steps(self.len, steps)?.1 {
            return Ok(self); // the identity
        }
        let mut run = NttRun::on_device(self, steps)?;
        run.steps()?;
        run.held.k.stream.synchronize().driver("sync")?;
        Ok(run.held)
    }

    /// a[i] b[i] − c[i] of the three polynomials held one after another (a prover's quotient),
    /// in their place in GPU memory.
    pub fn mul_sub(mut self) -> Result<OnDevice<F>> {
        let n = (self.len / 3) as u64;
        let mut out = alloc::<u32>(&self.k.stream, F::WORDS * (n as usize).max(1), false)?;
        launch!(self.k, "mul_sub", grid_1d(n, 256), &self.data, &n, &mut out)?;
        self.k.stream.synchronize().driver("sync")?;
        self.data = out;
        self.len = n as usize;
        Ok(self)
    }
}

/// Seconds of device time for `steps` on `values` already in GPU memory (the twiddle table
/// built), the median of `iters` runs (for benchmarks).
pub fn ntt_kernel_seconds<F: Field>(values: &[F], steps: &[Ntt<F>], iters: usize) -> Result<f64> {
    let mut run = NttRun::new(Scalars::Field(values), 0..values.len(), steps)?;
    let st = (*run.held.k.stream).clone();
    crate::backend::cuda::time_on_stream(&st, iters, || run.steps())
}

/// A chain of transforms on one buffer in GPU memory: each step reads `held`'s elements and
/// leaves its result there (the permutation writes `out`, then the two swap).
struct NttRun<'a, F> {
    held: OnDevice<F>,
    tw: Arc<Twiddles<CudaSlice<u32>>>,
    steps: &'a [Ntt<F>],
    batch: u64,
    out: CudaSlice<u32>,
    _scratch: Option<Reservation<'static>>,
}

impl<'a, F: Field> NttRun<'a, F> {
    /// The elements `range` of `values` uploaded to the current GPU.
    fn new(
        values: Scalars<'_, F>,
        range: std::ops::Range<usize>,
        steps: &'a [Ntt<F>],
    ) -> Result<Self> {
        let gpu = Gpu::available()?;
        let len = range.len() as u64;
        let spare = scratch_bytes::<F>(len, steps.first().map_or(1, |t| t.size as u64));
        let memory = gpu
            .budget()
            .reserve(4 * F::WORDS as u64 * len + spare, "an NTT")?;
        let stream = gpu.stream()?;
        let data = upload_range(gpu, &stream, values, range)?;
        let held = OnDevice {
            k: Device { gpu, stream },
            data,
            len: len as usize,
            _memory: memory,
            spare,
            _field: std::marker::PhantomData,
        };
        Self::on_device(held, steps)
    }

    /// Elements already in GPU memory.
    fn on_device(mut held: OnDevice<F>, steps: &'a [Ntt<F>]) -> Result<Self> {
        let first = steps
            .first()
            .ok_or_else(|| crate::error::Error::invalid("no NTT steps"))?;
        let batch = first.batch_of(held.len)? as u64;
        let more =
            scratch_bytes::<F>(held.len as u64, first.size as u64).saturating_sub(held.spare);
        let scratch = match more {
            0 => None,
            more => Some(held.k.gpu.budget().reserve(more, "an NTT")?),
        };
        let tw = twiddles::<F>(&mut held.k, first.log_size())?;
        let out = Kernels::<F>::alloc(&mut held.k, held.len as u64)?;
        Ok(NttRun {
            held,
            tw,
            steps,
            batch,
            out,
            _scratch: scratch,
        })
    }

    fn steps(&mut self) -> Result<()> {
        for t in self.steps {
            super::transform(
                &mut self.held.k,
                &self.tw,
                t,
                self.batch,
                &mut self.held.data,
                &mut self.out,
            )?;
            std::mem::swap(&mut self.held.data, &mut self.out);
        }
        Ok(())
    }
}

/// The NTT steps on a stream.
struct Device {
    gpu: &'static Gpu,
    stream: StreamGuard<'static>,
}

impl<F: Field> Kernels<F> for Device {
    type Elems = CudaSlice<u32>;

    fn upload(&mut self, raw: &[u32]) -> Result<CudaSlice<u32>> {
        self.stream.clone_htod(raw).driver("upload")
    }

    fn alloc(&mut self, len: u64) -> Result<CudaSlice<u32>> {
        alloc(&self.stream, F::WORDS * len.max(1) as usize, false)
    }

    fn twiddles(
        &mut self,
        omega: &CudaSlice<u32>,
        count: u64,
        out: &mut CudaSlice<u32>,
    ) -> Result<()> {
        let runs = count.div_ceil(u64::from(TWIDDLE_RUN));
        launch!(self, "twiddles", grid_1d(runs, 128), omega, &count, out)
    }

    fn pass(
        &mut self,
        data: &mut CudaSlice<u32>,
        log_n: u32,
        batch: u64,
        stage0: u32,
        k: u32,
        tw: &Twiddles<CudaSlice<u32>>,
        inverse: bool,
        scale: &Scaling<CudaSlice<u32>>,
    ) -> Result<()> {
        // One block per group of 2^k elements, a thread per butterfly.
        let groups = (batch << (log_n - k)).min(1 << 24) as u32;
        let cfg = LaunchConfig {
            grid_dim: (groups, 1, 1),
            block_dim: (1 << (k - 1), 1, 1),
            shared_mem_bytes: 0,
        };
        let (shift, inverse, mode) = (tw.shift(log_n), u32::from(inverse), scale.mode as u32);
        launch!(
            self,
            "pass",
            cfg,
            data,
            &log_n,
            &batch,
            &stage0,
            &k,
            &tw.table,
            &shift,
            &inverse,
            &mode,
            scale.lo,
            scale.hi,
            &scale.lo_bits
        )
    }

    fn bitrev(
        &mut self,
        input: &CudaSlice<u32>,
        out: &mut CudaSlice<u32>,
        log_n: u32,
        batch: u64,
        scale: &Scaling<CudaSlice<u32>>,
    ) -> Result<()> {
        let mode = scale.mode as u32;
        launch!(
            self,
            "bitrev",
            grid_1d(batch << log_n, 256),
            input,
            out,
            &log_n,
            &batch,
            &mode,
            scale.lo,
            scale.hi,
            &scale.lo_bits
        )
    }
}

/// Powers per thread of the twiddle kernel (bc::ntt::TWIDDLE_RUN).
const TWIDDLE_RUN: u32 = 64;

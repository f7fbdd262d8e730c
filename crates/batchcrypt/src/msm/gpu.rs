//! The GPU backend: the MSM steps of `kernels/include/bc/msm.cuh` (instantiated per group in its
//! curve's kernel image) on a stream, with the bases uploaded once and kept in GPU memory; and
//! the staged transfers of field elements that the NTT shares.

use super::{
    point_words, Group, Kernels, Limbs, Queue, Scalars, Shape, SCALAR_WORDS, SCAN_THREADS,
};
use crate::backend::cuda::{grid_1d, DriverResult, Gpu, PinnedPool, StreamGuard};
use crate::error::Result;
use crate::memory::Reservation;
use ark_ff::PrimeField;
use cudarc::driver::{
    CudaEvent, CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, DeviceRepr,
    LaunchConfig, PushKernelArg, ValidAsZeroBits,
};
use std::sync::Arc;

/// Launches kernel `name` of the group's image with the given arguments.
macro_rules! launch {
    ($k:expr, $name:expr, $cfg:expr $(, $arg:expr)* $(,)?) => {{
        let f = $k.gpu.function($k.image, $name)?;
        let mut b = $k.on().launch_builder(&f);
        $(b.arg($arg);)*
        // SAFETY: each call passes its kernel's arguments in order, with buffers sized by
        // `msm::window_sums` for the items the kernel walks.
        unsafe { b.launch($cfg) }.map(drop).driver("launch")?;
        $k.mark($name)
    }};
}

/// Affine bases of group P in GPU memory (arkworks' Montgomery limbs of x and y), with their
/// precomputed copies one after another (`shape`: the MSM shape of all of them).
pub struct DeviceBases<P: Group> {
    pts: CudaSlice<u32>,
    shape: Shape,
    _memory: Reservation<'static>,
    _group: std::marker::PhantomData<P>,
}

impl<P: Group> DeviceBases<P> {
    /// `raw` (x and y limbs, infinity as zeros) uploaded, and the copies `shape` reads computed
    /// from it by doublings on the GPU (from its first copy: a part of an MSM split over GPUs by
    /// windows holds the copies of its windows).
    pub(crate) fn upload(raw: &[u32], shape: &Shape) -> Result<DeviceBases<P>> {
        let gpu = Gpu::available()?;
        let copies = shape.copies() as usize;
        let first = shape.shift() * shape.first_copy();
        let memory = gpu.budget().reserve(
            4 * ((copies + usize::from(first > 0)) * raw.len()).max(16) as u64,
            "MSM bases",
        )?;
        let stream = gpu.stream()?;
        let mut pts = alloc::<u32>(&stream, (copies * raw.len()).max(16), false)?;
        let (n, shift) = (shape.stride as u64, shape.shift());
        let f = gpu.function(P::image(), &format!("{}_msm_shift_bases", P::KERNELS))?;
        let doublings = |from: &CudaView<u32>, doublings: u32, to: &mut CudaViewMut<u32>| {
            let mut b = stream.launch_builder(&f);
            b.arg(from).arg(&n).arg(&doublings).arg(to);
            // SAFETY: `n` points in each of two distinct buffers or copies.
            unsafe { b.launch(grid_1d(n.div_ceil(4), 128)) }
                .map(drop)
                .driver("launch")
        };
        // No bases: nothing to copy (the buffer's floor of 16 words stays unread).
        if !raw.is_empty() {
            if first == 0 {
                stream
                    .memcpy_htod(raw, &mut pts.slice_mut(0..raw.len()))
                    .driver("upload bases")?;
            } else {
                let plain = stream.clone_htod(raw).driver("upload bases")?;
                doublings(&plain.slice(..), first, &mut pts.slice_mut(0..raw.len()))?;
            }
        }
        for j in 1..copies {
            let (prev, mut next) = pts.split_at_mut(j * raw.len());
            doublings(&prev.slice((j - 1) * raw.len()..), shift, &mut next)?;
        }
        stream.synchronize().driver("sync")?;
        Ok(DeviceBases {
            pts,
            shape: *shape,
            _memory: memory,
            _group: std::marker::PhantomData,
        })
    }

    /// Fails for a shape that reads other copies than these bases hold.
    fn check(&self, s: &Shape) -> Result<()> {
        let held = &self.shape;
        if s.n > held.stride {
            return Err(crate::error::Error::invalid(format!(
                "{} scalars for {} bases",
                s.n, held.stride
            )));
        }
        let precomputed = |s: &Shape| s.copies() > 1 || s.first_copy() > 0;
        let reads = s.first_copy()..s.first_copy() + s.copies();
        let holds = held.first_copy()..held.first_copy() + held.copies();
        if (precomputed(s) || precomputed(held))
            && ((s.c, s.sets, s.stride) != (held.c, held.sets, held.stride)
                || reads.start != holds.start
                || reads.end > holds.end)
        {
            return Err(crate::error::Error::invalid(format!(
                "an MSM shape (window {}, {} bucket windows, copies {:?}) other than the one these precomputed bases were made for (window {}, {}, copies {:?})",
                s.c, s.sets, reads, held.c, held.sets, holds
            )));
        }
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.shape.stride
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies of the bases held (1: no precomputation).
    pub fn copies(&self) -> u32 {
        self.shape.copies()
    }

    /// Device bytes held.
    pub fn bytes(&self) -> usize {
        self.copies() as usize * self.len() * 4 * super::base_words::<P>()
    }
}

/// Where an MSM's scalars come from: already in the current GPU's memory as the kernels read
/// them ([`super::Limbs`]: eight 32-bit Montgomery limbs each), such as a quotient that a prover
/// computed there; or crossing from host memory ([`Broadcast`], to one GPU or to several at once
/// for an MSM split over them, with this GPU's place among them).
pub(crate) enum Source<'a, 'x, F> {
    Device(&'a CudaSlice<u32>),
    Shared(&'a Broadcast<'x, F>, usize),
}

/// Each window's sum (kernel points, one after another) of `sum k_i P_i` on group P over each
/// of `bases` (in this GPU's memory, each read by shape `s`, whose `n` scalars are taken): the
/// scalars cross to the GPU, if they are not there, and are sorted into buckets once for all of
/// them.
pub(crate) fn window_sums_many<'a, P: Group>(
    bases: &[&'a DeviceBases<P>],
    scalars: Source<'_, '_, P::ScalarField>,
    s: &Shape,
) -> Result<Vec<Vec<u32>>> {
    let Some(first) = bases.first() else {
        return Ok(Vec::new());
    };
    for b in bases {
        b.check(s)?;
    }
    let gpu = Gpu::available()?;
    let point_bytes = 4 * point_words::<P>() as u64;
    let _memory = gpu.budget().reserve(
        crate::msm::device_bytes(s, bases.len(), point_bytes),
        "an MSM",
    )?;
    let t = std::time::Instant::now();
    let shared = match &scalars {
        Source::Shared(b, _) if b.count > 1 => format!(
            ", digit windows {}..{} of the cells {}..{}, scalars shared between GPUs {}",
            s.lo(),
            s.hi(),
            s.from,
            s.to,
            if b.peer {
                "directly"
            } else {
                "through the host"
            }
        ),
        _ => String::new(),
    };
    let mut k = Launcher::new::<P>(gpu, first, s, true)?;
    if let Source::Shared(b, _) = &scalars {
        k.montgomery = b.xs.montgomery();
    }
    k.mark("start")?;
    let bind = |k: &mut Launcher<'a>, j: usize| k.bases = &bases[j].pts;
    let sums = match scalars {
        Source::Device(d) if d.len() >= SCALAR_WORDS * s.n => {
            super::window_sums_chunked(&mut k, s, bases.len(), &[0..s.n], bind, |_, _| Ok(d))?
        }
        Source::Shared(b, lane) => {
            super::window_sums_chunked(&mut k, s, bases.len(), &b.chunks, bind, |k, c| {
                b.ready(c, lane, &k.stream)
            })?
        }
        Source::Device(d) => {
            return Err(crate::error::Error::invalid(format!(
                "{} words of scalars in GPU memory for an MSM of {} points",
                d.len(),
                s.n
            )))
        }
    };
    if crate::pipeline::tracing() {
        eprintln!(
            "msm on GPU {}: {} points, window {}, {} set{} of bases{shared}: {:.2} ms with the scalars' crossing (ms per step: {})",
            gpu.index(),
            s.n,
            s.c,
            bases.len(),
            if bases.len() == 1 { "" } else { "s" },
            t.elapsed().as_secs_f64() * 1e3,
            k.trace_steps()?
        );
    }
    Ok(sums)
}

/// Scalars from which a large MSM's scalars cross in chunks ([`super::chunks`]).
const CHUNKED_FROM: usize = 1 << 23;

/// The chunks in which `n` scalars cross to `gpus` GPUs. On one GPU a chunk's steps take about
/// four times as long as its crossing, so chunks grow fourfold from 32 MiB (the crossing the
/// steps first wait for) and the GPU still seldom waits: 2^24 scalars in three chunks, not
/// four. Over several GPUs each one's steps for a chunk are shorter than the host's crossing of
/// the next one grown fourfold: chunks start at 16 MiB, double, and stop at 128 MiB, so that
/// the steps left after the crossing ends are short (docs/performance.md).
fn upload_chunks(n: usize, gpus: usize) -> Vec<std::ops::Range<usize>> {
    if n < CHUNKED_FROM {
        vec![0..n]
    } else if gpus <= 1 {
        super::chunks(n, 1 << 20, 4, usize::MAX)
    } else {
        super::chunks(n, 1 << 19, 2, 1 << 22)
    }
}

/// Field elements crossing to one GPU on a stream of their own, a chunk at a time: each chunk
/// converted into page-locked staging piece by piece, a piece's copy overlapping the next one's
/// conversion.
struct ChunkedUpload<'x, F> {
    xs: Scalars<'x, F>,
    gpu: &'static Gpu,
    stream: StreamGuard<'static>,
    staging: crate::backend::cuda::Pinned<'static>,
    /// Words of the staging buffer taken by earlier chunks (each chunk stages into room of its own).
    staged: usize,
}

impl<'x, F: Limbs + PrimeField> ChunkedUpload<'x, F> {
    /// An upload from `xs` with `words` words of staging: room for every chunk it will copy.
    fn new(gpu: &'static Gpu, xs: Scalars<'x, F>, words: usize) -> Result<Self> {
        Ok(ChunkedUpload {
            xs,
            gpu,
            stream: gpu.stream()?,
            staging: gpu.local::<Staging>().0.take(gpu, words)?,
            staged: 0,
        })
    }

    /// The elements of `range` (a chunk, each asked for once) for the steps on `compute`, which
    /// waits for their copy.
    fn ready(
        &mut self,
        range: std::ops::Range<usize>,
        compute: &CudaStream,
    ) -> Result<CudaSlice<u32>> {
        let mut dev = alloc::<u32>(&self.stream, F::WORDS * range.len().max(1), false)?;
        self.copy(range, &mut dev, 0)?;
        let done = self.stream.record_event(None).driver("cuEventRecord")?;
        compute.wait(&done).driver("cuStreamWaitEvent")?;
        Ok(dev)
    }

    /// The elements of `range` into `dev` from word `at` on, queued on this upload's stream.
    fn copy(
        &mut self,
        range: std::ops::Range<usize>,
        dev: &mut CudaSlice<u32>,
        at: usize,
    ) -> Result<()> {
        let words = F::WORDS * range.len();
        // Raw access waits once for earlier copies out of the staging buffer.
        let host = self.staging.as_mut_slice().driver("pinned")?;
        let Some(host) = host.get_mut(self.staged..self.staged + words) else {
            return Err(crate::error::Error::invalid(
                "an upload's chunks overran its staging",
            ));
        };
        self.staged += words;
        for start in range.clone().step_by(UPLOAD_PIECE) {
            let piece = start..(start + UPLOAD_PIECE).min(range.end);
            let from = (start - range.start) * F::WORDS;
            let dst = &mut host[from..from + F::WORDS * piece.len()];
            self.xs.stage(piece, dst)?;
            // SAFETY: `dst` stays untouched until the stream has copied it: the staging buffer
            // is ours until this upload is dropped, after the copies (`Drop`).
            unsafe {
                cudarc::driver::result::memcpy_htod_async(
                    dev.slice_mut(at + from..at + from + dst.len())
                        .device_ptr_mut(&self.stream)
                        .0,
                    dst,
                    self.stream.cu_stream(),
                )
            }
            .driver("cuMemcpyHtoDAsync")?;
        }
        Ok(())
    }
}

impl<F> Drop for ChunkedUpload<'_, F> {
    fn drop(&mut self) {
        // The staging buffer goes back to its pool only after the copies out of it.
        let _ = self.stream.synchronize();
    }
}

/// The scalars of an MSM crossing from host memory to the GPUs that run it, in chunks
/// ([`upload_chunks`]) sent one after another by a thread of their own from the start, each
/// chunk's steps waiting for that chunk alone: the crossing runs at the host's pace, never waiting
/// for the steps. Over several GPUs (an MSM split by digit windows, [`super::Shape::part`]),
/// each of which needs every scalar, each chunk is cut among them, each GPU's cut crosses its
/// own host link, and each GPU then copies the other cuts from the other GPUs' memory, so that
/// the host's bytes cross once whatever the count of GPUs.
pub(crate) struct Broadcast<'x, F> {
    xs: Scalars<'x, F>,
    chunks: Vec<std::ops::Range<usize>>,
    /// Each GPU's upload (the sending thread's).
    lanes: std::sync::Mutex<Vec<ChunkedUpload<'x, F>>>,
    sent: std::sync::Mutex<Sent>,
    arrived: std::sync::Condvar,
    /// Set when the steps end (done or failed): no more chunks are sent.
    stop: std::sync::atomic::AtomicBool,
    count: usize,
    /// Whether every GPU reads the others' memory directly ([`Gpu::peer_access`]).
    peer: bool,
}

/// The chunks sent so far (per chunk, per GPU: the chunk's scalars in that GPU's memory and the
/// event after their copies), and why the sending stopped early, if it did.
#[derive(Default)]
struct Sent {
    chunks: Vec<Vec<(Arc<CudaSlice<u32>>, CudaEvent)>>,
    ended: Option<Stopped>,
}

/// Why the sending stopped before the last chunk: a scalar out of range (the caller's input:
/// every GPU's steps fail with it as an input error) or anything else (a failed copy, the steps
/// ending first).
#[derive(Clone)]
enum Stopped {
    Input(String),
    Upload(String),
}

impl Stopped {
    fn error(&self) -> crate::error::Error {
        match self {
            Stopped::Input(why) => crate::error::Error::InvalidInput(why.clone()),
            Stopped::Upload(why) => crate::error::Error::Cuda {
                context: "the MSM scalars' upload",
                message: why.clone(),
            },
        }
    }
}

impl<'x, F: Limbs + PrimeField> Broadcast<'x, F> {
    /// `xs` for each of `gpus` (indices into the devices, in order).
    fn new(gpus: &[usize], xs: Scalars<'x, F>) -> Result<Self> {
        let all = crate::backend::cuda::devices().map_err(|why| {
            crate::error::Error::BackendUnavailable {
                backend: "cuda".into(),
                why,
            }
        })?;
        let lanes: Vec<&'static Gpu> = gpus.iter().filter_map(|&g| all.get(g)).collect();
        let chunks = upload_chunks(xs.len(), lanes.len());
        let mut peer = true;
        for a in &lanes {
            for b in &lanes {
                peer &= a.peer_access(b);
            }
        }
        let count = lanes.len();
        let lanes = lanes
            .iter()
            .enumerate()
            .map(|(k, &gpu)| {
                let words = chunks
                    .iter()
                    .map(|c| cut(c.len(), count, k).len())
                    .sum::<usize>();
                ChunkedUpload::new(gpu, xs, F::WORDS * words)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Broadcast {
            xs,
            chunks,
            lanes: std::sync::Mutex::new(lanes),
            sent: Default::default(),
            arrived: std::sync::Condvar::new(),
            stop: Default::default(),
            count,
            peer,
        })
    }

    /// `work` (the MSM's steps on each GPU) over `xs` crossing to `gpus`, the chunks sent by a
    /// thread of their own meanwhile.
    pub(crate) fn run<R: Send>(
        gpus: &[usize],
        xs: Scalars<'x, F>,
        work: impl FnOnce(&Broadcast<'x, F>) -> Result<R>,
    ) -> Result<R> {
        let b = Broadcast::new(gpus, xs)?;
        if b.chunks.len() == 1 {
            // The steps wait for the one chunk whole: sent here, without a thread.
            b.send_all();
            return work(&b);
        }
        std::thread::scope(|s| {
            s.spawn(|| b.send_all());
            let out = work(&b);
            b.stop.store(true, std::sync::atomic::Ordering::Relaxed);
            out
        })
    }

    /// Sends every chunk in order (until the steps stop), then marks the end, also when a send
    /// fails or panics, so that no GPU waits for a chunk that will not come.
    fn send_all(&self) {
        struct End<'b, 'x, F>(&'b Broadcast<'x, F>, Option<Stopped>);
        impl<F> Drop for End<'_, '_, F> {
            fn drop(&mut self) {
                let mut sent = self.0.sent.lock().unwrap_or_else(|p| p.into_inner());
                sent.ended = Some(
                    self.1
                        .take()
                        .unwrap_or_else(|| Stopped::Upload("the upload stopped".into())),
                );
                self.0.arrived.notify_all();
            }
        }
        let mut end = End(self, None);
        let mut lanes = self.lanes.lock().unwrap_or_else(|p| p.into_inner());
        for range in &self.chunks {
            if self.stop.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
            match Self::send(&mut lanes, range.clone()) {
                Ok(chunk) => {
                    let mut sent = self.sent.lock().unwrap_or_else(|p| p.into_inner());
                    sent.chunks.push(chunk);
                    self.arrived.notify_all();
                }
                Err(crate::error::Error::InvalidInput(why)) => {
                    end.1 = Some(Stopped::Input(why));
                    break;
                }
                Err(e) => {
                    end.1 = Some(Stopped::Upload(e.to_string()));
                    break;
                }
            }
        }
    }

    /// Chunk `c`'s scalars in the memory of the GPU at place `lane`, for the steps on `compute`
    /// (on that GPU), which waits for their copies; blocks until the chunk is sent.
    fn ready(&self, c: usize, lane: usize, compute: &CudaStream) -> Result<Arc<CudaSlice<u32>>> {
        let mut sent = self.sent.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(chunk) = sent.chunks.get(c) {
                let (dev, done) = &chunk[lane];
                compute.wait(done).driver("cuStreamWaitEvent")?;
                return Ok(dev.clone());
            }
            if let Some(why) = &sent.ended {
                return Err(why.error());
            }
            sent = self.arrived.wait(sent).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// One chunk to every GPU: each GPU's cut up its link, then the other cuts from the other
    /// GPUs' memory; per GPU, the chunk in its memory and the event after its copies.
    fn send(
        lanes: &mut [ChunkedUpload<'x, F>],
        range: std::ops::Range<usize>,
    ) -> Result<Vec<(Arc<CudaSlice<u32>>, CudaEvent)>> {
        let count = lanes.len();
        let mut devs = Vec::with_capacity(count);
        let mut up = Vec::with_capacity(count);
        for (k, u) in lanes.iter_mut().enumerate() {
            let mut dev = alloc::<u32>(&u.stream, F::WORDS * range.len().max(1), false)?;
            let mine = cut(range.len(), count, k);
            let at = F::WORDS * mine.start;
            u.copy(
                range.start + mine.start..range.start + mine.end,
                &mut dev,
                at,
            )?;
            up.push(u.stream.record_event(None).driver("cuEventRecord")?);
            devs.push(dev);
        }
        for h in 0..count {
            let to = &lanes[h];
            for g in (0..count).filter(|&g| g != h) {
                let theirs = cut(range.len(), count, g);
                if theirs.is_empty() {
                    continue;
                }
                let from = &lanes[g];
                let (at, bytes) = (4 * F::WORDS * theirs.start, 4 * F::WORDS * theirs.len());
                to.stream.wait(&up[g]).driver("cuStreamWaitEvent")?;
                let (theirs_dev, mine_dev) = if g < h {
                    let (low, high) = devs.split_at_mut(h);
                    (&low[g], &mut high[0])
                } else {
                    let (low, high) = devs.split_at_mut(g);
                    (&high[0], &mut low[h])
                };
                let (src, _read) = theirs_dev.device_ptr(&from.stream);
                let (dst, _write) = mine_dev.device_ptr_mut(&to.stream);
                // SAFETY: both ranges lie inside their buffers (a chunk's words each), which the
                // broadcast keeps until every GPU's copies are done (`Drop`).
                unsafe {
                    cudarc::driver::sys::cuMemcpyPeerAsync(
                        dst + at as u64,
                        to.gpu.context().cu_ctx(),
                        src + at as u64,
                        from.gpu.context().cu_ctx(),
                        bytes,
                        to.stream.cu_stream(),
                    )
                }
                .result()
                .driver("cuMemcpyPeerAsync")?;
            }
        }
        lanes
            .iter()
            .zip(devs)
            .map(|(u, dev)| {
                let done = u.stream.record_event(None).driver("cuEventRecord")?;
                Ok((Arc::new(dev), done))
            })
            .collect()
    }
}

impl<F> Drop for Broadcast<'_, F> {
    fn drop(&mut self) {
        // Every GPU's copies out of the others' chunks end before any chunk is freed.
        let lanes = self.lanes.get_mut().unwrap_or_else(|p| p.into_inner());
        for u in lanes.iter() {
            let _ = u.stream.synchronize();
        }
    }
}

/// GPU `k`'s cut of a chunk of `len` scalars among `count` GPUs.
fn cut(len: usize, count: usize, k: usize) -> std::ops::Range<usize> {
    len * k / count..len * (k + 1) / count
}

/// Elements per piece of the staged upload: converting one piece overlaps the copy of the last.
const UPLOAD_PIECE: usize = 1 << 20;

/// Page-locked staging for uploads of field elements (write-combined: the host only writes it),
/// one buffer per concurrent upload, kept between calls; one pool per device. A Groth16 proof
/// uploads three vectors at once (the witness for G1 and for G2, the evaluations for the NTTs),
/// so 16 proofs in flight hold 48: a pool that keeps fewer allocates and frees page-locked
/// memory, which stalls the device, on most uploads.
struct Staging(PinnedPool);

impl Default for Staging {
    fn default() -> Self {
        Staging(PinnedPool::new(
            cudarc::driver::sys::CU_MEMHOSTALLOC_WRITECOMBINED,
            64,
        ))
    }
}

/// Field elements in GPU memory as the kernels read them (Montgomery limbs), ready for the steps
/// on `stream` ([`ChunkedUpload`] in one chunk).
pub(crate) fn upload_elements<F: Limbs + PrimeField>(
    gpu: &'static Gpu,
    stream: &Arc<CudaStream>,
    xs: &[F],
) -> Result<CudaSlice<u32>> {
    upload_range(gpu, stream, Scalars::Field(xs), 0..xs.len())
}

/// The elements `range` of `xs` in GPU memory, as [`upload_elements`]: arkworks' elements as
/// their Montgomery limbs, canonical ones as they are, each checked below the modulus (an error
/// names an element by its index in `xs`).
pub(crate) fn upload_range<F: Limbs + PrimeField>(
    gpu: &'static Gpu,
    stream: &Arc<CudaStream>,
    xs: Scalars<'_, F>,
    range: std::ops::Range<usize>,
) -> Result<CudaSlice<u32>> {
    ChunkedUpload::new(gpu, xs, F::WORDS * range.len())?.ready(range, stream)
}

/// Seconds to move `xs` into the memory of each of `gpus` (device indices) the way an MSM's
/// scalars cross ([`Broadcast`]: each GPU's cut of every chunk staged through page-locked buffers
/// up its link, the other cuts from GPU to GPU), nothing computed: the links' floor under an MSM
/// from host memory (for benchmarks).
pub fn upload_seconds<F: Limbs + PrimeField>(gpus: &[usize], xs: &[F]) -> Result<f64> {
    let b = Broadcast::new(gpus, Scalars::Field(xs))?;
    let t = std::time::Instant::now();
    b.send_all();
    for u in b.lanes.lock().unwrap_or_else(|p| p.into_inner()).iter() {
        u.stream.synchronize().driver("sync")?;
    }
    let seconds = t.elapsed().as_secs_f64();
    let sent = b.sent.lock().unwrap_or_else(|p| p.into_inner());
    if sent.chunks.len() < b.chunks.len() {
        return Err(sent
            .ended
            .clone()
            .unwrap_or_else(|| Stopped::Upload("the upload stopped".into()))
            .error());
    }
    Ok(seconds)
}

/// Seconds of device time for the MSM steps on scalars already in GPU memory, the median of
/// `iters` runs (for benchmarks); `window`: a window size other than the one the library picks
/// (bases without precomputed copies only).
pub fn kernel_seconds<P: Group>(
    bases: &super::Bases<P>,
    scalars: &[P::ScalarField],
    window: Option<u32>,
    iters: usize,
) -> Result<f64> {
    let s = match window {
        Some(c) => Shape::with_window(scalars.len(), super::scalar_bits::<P>(), c)?,
        None => bases.shape(scalars.len())?,
    };
    let held = bases.device()?;
    let gpu = Gpu::available()?;
    // The steps of one MSM in series, as its kernels' time (no next MSM's sorting beside).
    let mut k = Launcher::new::<P>(gpu, &held, &s, false)?;
    let dev = upload_elements(gpu, &k.stream, scalars)?;
    let st = (*k.stream).clone();
    let t = crate::backend::cuda::time_on_stream(&st, iters, || {
        super::window_sums(&mut k, &s, &dev).map(drop)
    })?;
    if crate::pipeline::tracing() {
        // One more run, its steps timed (the marks of the timed runs dropped).
        k.marks = Some(Vec::new());
        k.mark("start")?;
        super::window_sums(&mut k, &s, &dev)?;
        eprintln!(
            "msm kernels: {} points, window {}: {:.2} ms (ms per step: {})",
            s.n,
            s.c,
            t * 1e3,
            k.trace_steps()?
        );
    }
    Ok(t)
}

/// Page-locked landing space for downloads (cached: the host reads it), like [`Staging`].
struct Landing(PinnedPool);

impl Default for Landing {
    fn default() -> Self {
        Landing(PinnedPool::new(0, 16))
    }
}

/// Field elements from GPU memory into `out`.
pub(crate) fn download_elements<F: Limbs>(
    gpu: &Gpu,
    stream: &Arc<CudaStream>,
    dev: &CudaSlice<u32>,
    out: &mut [F],
) -> Result<()> {
    use rayon::prelude::*;
    let words = F::WORDS * out.len();
    let mut rest = out;
    download_words(gpu, stream, dev, words, F::WORDS, |piece| {
        let (out, tail) = std::mem::take(&mut rest).split_at_mut(piece.len() / F::WORDS);
        rest = tail;
        out.par_iter_mut()
            .zip(piece.par_chunks_exact(F::WORDS))
            .with_min_len(1 << 12)
            .for_each(|(x, l)| *x = F::from_limbs(l))
    })
}

/// The first `words` words of `dev` through page-locked landing space, a piece at a time (each a
/// multiple of `align` words): `land` gets the pieces in order, each as soon as it has crossed,
/// in the transfer pool, while the next ones cross.
pub(crate) fn download_words(
    gpu: &Gpu,
    stream: &Arc<CudaStream>,
    dev: &CudaSlice<u32>,
    words: usize,
    align: usize,
    mut land: impl FnMut(&[u32]) + Send,
) -> Result<()> {
    let mut landing = gpu.local::<Landing>().0.take(gpu, words)?;
    let host = landing.as_mut_slice().driver("pinned")?;
    // Into exactly `words` (a copy takes its length from the destination).
    let host = &mut host[..words];
    let piece = DOWNLOAD_PIECE.div_ceil(align).max(1) * align;
    let mut crossed = Vec::with_capacity(words.div_ceil(piece));
    for (i, dst) in host.chunks_mut(piece).enumerate() {
        let at = i * piece;
        // Page-locked, so each copy is asynchronous; the piece is read after its event.
        stream
            .memcpy_dtoh(&dev.slice(at..at + dst.len()), dst)
            .driver("download")?;
        crossed.push(stream.record_event(None).driver("cuEventRecord")?);
    }
    for (done, piece) in crossed.iter().zip(host.chunks(piece)) {
        done.synchronize().driver("sync")?;
        crate::backend::cpu::for_transfer(|| land(piece));
    }
    Ok(())
}

/// Words per piece of a download: large enough that a copy's fixed cost is small beside it, small
/// enough that the host's work on one overlaps the next one's crossing.
const DOWNLOAD_PIECE: usize = 1 << 22;

/// A device buffer of `len` elements, zeroed or not.
pub(crate) fn alloc<T: DeviceRepr + ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    len: usize,
    zeroed: bool,
) -> Result<CudaSlice<T>> {
    if zeroed {
        return stream.alloc_zeros::<T>(len).driver("cuMemAlloc");
    }
    // SAFETY: only for buffers a kernel writes in full before any read (see msm::Kernels).
    unsafe { stream.alloc::<T>(len) }.driver("cuMemAlloc")
}

/// The MSM steps on a stream, for the group of `bases`; where it has more ([`Queue`]), the scalar
/// steps (1-3) of a chunk on a stream of their own and consecutive chunks' accumulations on two
/// streams in turn, so that each runs beside the tail of the one before.
struct Launcher<'a> {
    gpu: &'static Gpu,
    stream: StreamGuard<'static>,
    /// The second accumulation stream and the scalar steps' stream, where used.
    more: Option<[StreamGuard<'static>; 2]>,
    /// Where the steps now go ([`Kernels::queue`]).
    queue: Queue,
    bases: &'a CudaSlice<u32>,
    image: &'static crate::backend::cuda::KernelImage,
    /// The point steps' and the scalar steps' kernel name prefixes.
    group: &'static str,
    scalar: &'static str,
    point_bytes: usize,
    /// Under `BATCHCRYPT_TRACE`, an event after each step (the first at the start on each
    /// stream), the stream's place, and the step's name, for the per-step times
    /// [`Launcher::trace_steps`] prints.
    marks: Option<Vec<(String, usize, CudaEvent)>>,
    /// Threads of the accumulation the GPU runs at once (0: not asked yet).
    resident: u64,
    /// Whether the scalars are Montgomery limbs (else canonical: [`Scalars::Canonical`]).
    montgomery: bool,
}

impl<'a> Launcher<'a> {
    /// The steps on a new stream (and two more where `overlap`). Fails for a shape that reads
    /// other copies than the bases hold.
    fn new<P: Group>(
        gpu: &'static Gpu,
        bases: &'a DeviceBases<P>,
        s: &Shape,
        overlap: bool,
    ) -> Result<Self> {
        bases.check(s)?;
        const {
            assert!(
                <P::ScalarField as Limbs>::WORDS == SCALAR_WORDS,
                "the digit kernels read scalars of eight 32-bit limbs"
            )
        };
        Ok(Launcher {
            gpu,
            stream: gpu.stream()?,
            more: match overlap {
                true => Some([gpu.stream()?, gpu.stream()?]),
                false => None,
            },
            queue: Queue::Points(0),
            bases: &bases.pts,
            image: P::image(),
            group: P::KERNELS,
            scalar: P::SCALAR_KERNELS,
            point_bytes: 4 * point_words::<P>(),
            marks: crate::pipeline::tracing().then(Vec::new),
            resident: 0,
            montgomery: true,
        })
    }

    /// The streams, by place: the first accumulation stream, the second, the scalar steps'.
    fn streams(&self) -> Vec<&Arc<CudaStream>> {
        let mut all = vec![&*self.stream];
        if let Some(more) = &self.more {
            all.extend(more.iter().map(|s| &**s));
        }
        all
    }

    /// The place of the stream the steps go to now.
    fn place(&self) -> usize {
        match (self.more.is_some(), self.queue) {
            (false, _) => 0,
            (true, Queue::Points(q)) => q % 2,
            (true, Queue::Scalars) => 2,
        }
    }

    /// The stream the steps go to now.
    fn on(&self) -> &Arc<CudaStream> {
        self.streams()[self.place()]
    }

    /// Records the end of `step` on the stream it ran on when tracing ("start": on each).
    fn mark(&mut self, step: &str) -> Result<()> {
        if self.marks.is_none() {
            return Ok(());
        }
        let name = step.rsplit("_msm_").next().unwrap_or(step).to_string();
        let places: Vec<usize> = match step {
            "start" => (0..self.streams().len()).collect(),
            _ => vec![self.place()],
        };
        let mut events = Vec::new();
        for place in places {
            let stream = self.streams()[place];
            let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
            let e = stream.context().new_event(timing).driver("cuEventCreate")?;
            e.record(stream).driver("cuEventRecord")?;
            events.push((name.clone(), place, e));
        }
        if let Some(marks) = &mut self.marks {
            marks.extend(events);
        }
        Ok(())
    }

    /// Device time per step since the start, summed over repeated steps, in the order first run
    /// (after the stream has finished them); each step timed from the mark before it on its own
    /// stream.
    fn trace_steps(&self) -> Result<String> {
        let Some(marks) = &self.marks else {
            return Ok(String::new());
        };
        let mut steps: Vec<(&str, f32)> = Vec::new();
        for place in 0..3 {
            let own: Vec<_> = marks.iter().filter(|m| m.1 == place).collect();
            for w in own.windows(2) {
                let ms = w[0].2.elapsed_ms(&w[1].2).driver("cuEventElapsedTime")?;
                match steps.iter_mut().find(|s| s.0 == w[1].0) {
                    Some(s) => s.1 += ms,
                    None => steps.push((&w[1].0, ms)),
                }
            }
        }
        Ok(steps
            .iter()
            .map(|(name, ms)| format!("{name} {ms:.2}"))
            .collect::<Vec<_>>()
            .join(", "))
    }

    fn kernel(&self, step: &str) -> String {
        format!("{}_msm_{step}", self.group)
    }

    fn scalar_kernel(&self, step: &str) -> String {
        format!("{}_msm_{step}", self.scalar)
    }
}

impl Kernels for Launcher<'_> {
    type Words = CudaSlice<u32>;
    type Points = CudaSlice<u8>;

    fn words(&mut self, len: u64, zeroed: bool) -> Result<CudaSlice<u32>> {
        alloc(self.on(), len.max(1) as usize, zeroed)
    }

    fn points(&mut self, len: u64, zeroed: bool) -> Result<CudaSlice<u8>> {
        alloc(self.on(), len.max(1) as usize * self.point_bytes, zeroed)
    }

    fn queue(&mut self, q: Queue) {
        self.queue = q;
    }

    fn digits(
        &mut self,
        scalars: &CudaSlice<u32>,
        s: &Shape,
        first: u32,
        digits: &mut CudaSlice<u32>,
        counts: &mut CudaSlice<u32>,
    ) -> Result<()> {
        let (n, points, montgomery) = (s.n as u64, s.points as u64, u32::from(self.montgomery));
        launch!(
            self,
            &self.scalar_kernel("digits"),
            grid_1d(n, 256),
            scalars,
            &montgomery,
            &n,
            &first,
            &points,
            &s.from,
            &s.to,
            &s.c,
            &s.windows,
            &s.off,
            &s.sets,
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
        launch!(
            self,
            &self.scalar_kernel("scan_tiles"),
            cfg,
            data,
            &m,
            &tile,
            totals
        )
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
            &self.scalar_kernel("scan_add"),
            grid_1d(m, 256),
            data,
            &m,
            &tile,
            offsets
        )
    }

    fn first_word(&mut self, w: &CudaSlice<u32>) -> Result<u32> {
        let mut out = [0u32; 1];
        let stream = self.on();
        stream
            .memcpy_dtoh(&w.slice(0..1), &mut out)
            .driver("download")?;
        stream.synchronize().driver("sync")?;
        Ok(out[0])
    }

    fn scatter(
        &mut self,
        digits: &CudaSlice<u32>,
        s: &Shape,
        first: u32,
        cursor: &mut CudaSlice<u32>,
        entries: &mut CudaSlice<u32>,
    ) -> Result<()> {
        let (n, stride, windows) = (s.n as u64, s.stride as u32, s.part_windows());
        launch!(
            self,
            &self.scalar_kernel("scatter"),
            grid_1d(n * u64::from(windows), 256),
            digits,
            &n,
            &first,
            &s.c,
            &windows,
            &s.off,
            &s.sets,
            &stride,
            cursor,
            entries
        )
    }

    fn resident(&mut self) -> Result<u64> {
        if self.resident == 0 {
            const THREADS: u32 = 128;
            let f = self
                .gpu
                .function(self.image, &self.kernel("accumulate_points"))?;
            let blocks = f
                .occupancy_max_active_blocks_per_multiprocessor(THREADS, 0, None)
                .driver("cuOccupancyMaxActiveBlocksPerMultiprocessor")?;
            self.resident = u64::from(blocks.max(1) * THREADS)
                * u64::from(self.gpu.info().multiprocessors.max(1));
        }
        Ok(self.resident)
    }

    fn accumulate_points(
        &mut self,
        entries: &CudaSlice<u32>,
        ends: &CudaSlice<u32>,
        buckets_len: u64,
        (total, slice): (u64, u32),
        buckets: &mut CudaSlice<u8>,
        next: &mut (CudaSlice<u32>, CudaSlice<u8>),
    ) -> Result<()> {
        let bases = self.bases;
        let buckets_len = buckets_len as u32;
        launch!(
            self,
            &self.kernel("accumulate_points"),
            grid_1d(total.div_ceil(u64::from(slice)), 128),
            bases,
            entries,
            ends,
            &buckets_len,
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
        (total, slice): (u64, u32),
        buckets: &mut CudaSlice<u8>,
        next: &mut (CudaSlice<u32>, CudaSlice<u8>),
    ) -> Result<()> {
        launch!(
            self,
            &self.kernel("accumulate_partials"),
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

    fn add_buckets(
        &mut self,
        acc: &mut CudaSlice<u8>,
        more: &CudaSlice<u8>,
        count: u64,
    ) -> Result<()> {
        launch!(
            self,
            &self.kernel("add_buckets"),
            grid_1d(count, 128),
            acc,
            more,
            &count
        )
    }

    fn window_segments(
        &mut self,
        buckets: &CudaSlice<u8>,
        s: &Shape,
        out: &mut CudaSlice<u8>,
    ) -> Result<()> {
        let (per_window, per) = (s.buckets_per_window(), s.segment());
        let items = u64::from(s.sets) * u64::from(per_window / per);
        launch!(
            self,
            &self.kernel("window_segments"),
            grid_1d(items, 128),
            buckets,
            &per_window,
            &s.sets,
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
            &self.kernel("sum_groups"),
            grid_1d(groups, 64),
            input,
            &groups,
            &m,
            out
        )
    }

    fn read_points(&mut self, p: &CudaSlice<u8>, len: usize) -> Result<Vec<u32>> {
        let bytes = self
            .stream
            .clone_dtoh(&p.slice(0..len * self.point_bytes))
            .driver("download")?;
        Ok(bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect())
    }
}

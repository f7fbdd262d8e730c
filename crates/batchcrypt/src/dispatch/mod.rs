//! The dispatcher: picks the backend for each batch from measured costs.
//!
//! Each operation reports its workload (items, work units, bytes in and out, where the data lives)
//! and the backends that implement it. A forced choice (API, CLI flag or `BATCHCRYPT_BACKEND`) is
//! honoured or refused with a reason. Under `Auto` the candidates are the best CPU backend, each
//! GPU alone, and all GPUs together: each is measured once per process — a small and a large run
//! fitted to `fixed + units × per_unit`, and each device's host↔device copy bandwidth — and the
//! cheapest estimate wins: small batches stay on the CPU, large ones go to the GPUs. A batch
//! split over several GPUs gives each a share in proportion to its estimated rate on the batch
//! (transfers included), and runs every share at once ([`Plan::on_gpus`]). Under load the idle
//! measurements are corrected by what the batches take ([`observed`]).

use crate::backend::device::{direct_chunk_bytes, Link, LinkKind, PIPELINE_CHUNK_BYTES};
use crate::backend::{Backend, BackendChoice};
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

pub mod observed;

/// Where a batch's input is and its output must go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// Host memory that the GPU path streams through the pipeline's page-locked staging: the GPU
    /// pays for copies both ways at the staged rate.
    Host,
    /// Host memory that the GPU path copies in one piece, without staging: the GPU pays for
    /// copies both ways at the pageable rate.
    Pageable,
    /// Page-locked host memory: the GPU pays for copies at the pinned bandwidth, with no staging.
    Pinned,
    /// Already in GPU memory: no copies.
    Device,
}

/// A batch as the cost model sees it.
#[derive(Clone, Copy, Debug)]
pub struct Workload {
    /// The operation's cost key (costs are measured per operation and backend).
    pub op: &'static str,
    pub items: u64,
    /// Work in the operation's unit (for hashing: compression-function calls).
    pub units: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub location: Location,
}

impl Workload {
    /// The part of this batch that `fraction` of its items make up.
    pub fn share(&self, fraction: f64) -> Workload {
        let part = |x: u64| (x as f64 * fraction).ceil() as u64;
        Workload {
            items: part(self.items),
            units: part(self.units),
            bytes_in: part(self.bytes_in),
            bytes_out: part(self.bytes_out),
            ..*self
        }
    }
}

/// Measured cost of one backend on one operation, on one thread for CPU backends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cost {
    /// Seconds per call regardless of size (launch, synchronisation, allocation).
    pub fixed_s: f64,
    /// Seconds per work unit.
    pub per_unit_s: f64,
}

/// What the dispatcher decided for one batch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    pub backend: Backend,
    /// CPU worker threads (1 for the GPU).
    pub threads: usize,
    /// Estimated seconds, when the cost model was consulted.
    pub estimate_s: Option<f64>,
    /// The GPUs that run the batch and each one's share (none for a CPU backend).
    pub gpus: GpuShares,
}

/// How a batch of an operation spreads over several GPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// Its items are independent: each GPU takes a contiguous slice, the values joined in order.
    Items,
    /// Its GPU path spreads the batch itself over the GPUs it is given (an MSM: each GPU sums a
    /// part of the digit windows over every scalar, and the partial sums are added).
    Itself,
    /// One GPU runs it all (a stream whose chunks already overlap copies and kernels).
    No,
}

/// Most GPUs one batch is split over.
pub const MAX_GPUS: usize = 16;

/// The share of a batch each GPU takes, by index among the process's GPUs
/// ([`crate::backend::gpu`]); the shares sum to 1 over the GPUs that take part.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GpuShares([f32; MAX_GPUS]);

impl GpuShares {
    /// All of the batch on GPU `index`.
    pub fn one(index: usize) -> Self {
        let mut s = [0.0; MAX_GPUS];
        s[index.min(MAX_GPUS - 1)] = 1.0;
        GpuShares(s)
    }

    /// Shares in proportion to `weights` (`(index, weight)`, weights positive).
    pub fn weighted(weights: &[(usize, f64)]) -> Self {
        let total: f64 = weights.iter().map(|w| w.1.max(0.0)).sum();
        let mut s = [0.0; MAX_GPUS];
        for &(i, w) in weights.iter().filter(|w| w.0 < MAX_GPUS) {
            s[i] = if total > 0.0 {
                (w.max(0.0) / total) as f32
            } else {
                1.0 / weights.len() as f32
            };
        }
        GpuShares(s)
    }

    /// The GPUs taking part, with their shares, in index order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, f32)> + '_ {
        self.0.iter().copied().enumerate().filter(|s| s.1 > 0.0)
    }

    pub fn count(&self) -> usize {
        self.iter().count()
    }

    /// The first GPU taking part (0 if none does).
    pub fn first(&self) -> usize {
        self.iter().next().map_or(0, |s| s.0)
    }

    /// `n` items cut into one contiguous range per GPU, in index order, each as near its share as
    /// whole multiples of `align` items allow (the last takes the rest). GPUs left with nothing
    /// are left out.
    pub fn split(&self, n: usize, align: usize) -> Vec<(usize, std::ops::Range<usize>)> {
        let align = align.max(1);
        let shares: Vec<(usize, f32)> = self.iter().collect();
        let mut out = Vec::with_capacity(shares.len());
        let (mut start, mut acc) = (0usize, 0f64);
        for (k, &(gpu, share)) in shares.iter().enumerate() {
            acc += share as f64;
            let end = if k + 1 == shares.len() {
                n
            } else {
                (((n as f64 * acc) as usize) / align * align).clamp(start, n)
            };
            if end > start {
                out.push((gpu, start..end));
            }
            start = end;
        }
        if out.is_empty() && n > 0 {
            out.push((self.first(), 0..n));
        }
        out
    }
}

/// Estimates `(gpu, seconds)` with each replaced by the mean over the GPUs of the same model
/// (`model`: name, multiprocessors, clock, memory; `None` for unknown): two identical GPUs
/// measured a few percent apart, one measurement each, would otherwise take unequal shares, and
/// the larger share bounds the batch.
fn same_model_mean<M: PartialEq>(
    estimates: &[(usize, f64)],
    model: impl Fn(usize) -> Option<M>,
) -> Vec<(usize, f64)> {
    estimates
        .iter()
        .map(|&(g, s)| {
            let Some(m) = model(g) else { return (g, s) };
            let peers: Vec<f64> = estimates
                .iter()
                .filter(|e| model(e.0).as_ref() == Some(&m))
                .map(|e| e.1)
                .collect();
            (g, peers.iter().sum::<f64>() / peers.len() as f64)
        })
        .collect()
}

/// A GPU's model as [`same_model_mean`] compares them.
fn gpu_model(
    infos: &[crate::backend::gpu::DeviceInfo],
    g: usize,
) -> Option<(&str, u32, u32, usize)> {
    infos.get(g).map(|i| {
        (
            i.name.as_str(),
            i.multiprocessors,
            i.clock_khz,
            i.total_memory,
        )
    })
}

impl Plan {
    /// Runs `f` over the plan's GPUs: each over its slice of the batch's `n` items (ranges cut by
    /// [`GpuShares::split`] on multiples of `align`), all at once, each on its own thread inside
    /// its device; the results in slice order. A plan of one GPU runs on the caller's thread.
    pub fn on_gpus<T: Send>(
        &self,
        n: usize,
        align: usize,
        f: impl Fn(std::ops::Range<usize>) -> Result<T> + Sync,
    ) -> Result<Vec<T>> {
        use crate::backend::gpu::run_on;
        let parts = self.gpus.split(n, align);
        if parts.len() <= 1 {
            let gpu = parts.first().map_or(self.gpus.first(), |p| p.0);
            return run_on(gpu, || f(0..n)).map(|t| vec![t]);
        }
        let started = std::time::Instant::now();
        std::thread::scope(|s| {
            let f = &f;
            let handles: Vec<_> = parts
                .into_iter()
                .map(|(gpu, range)| {
                    s.spawn(move || {
                        let len = range.len();
                        let t = std::time::Instant::now();
                        let r = run_on(gpu, || f(range));
                        if crate::pipeline::tracing() {
                            eprintln!(
                                "slice on GPU {gpu}: {len} items, started after {:.2} ms, ran {:.2} ms",
                                (t - started).as_secs_f64() * 1e3,
                                t.elapsed().as_secs_f64() * 1e3
                            );
                        }
                        r
                    })
                })
                .collect();
            // Every thread is joined before the first error is returned: no slice is left
            // running on a device.
            let joined: Vec<Result<T>> = handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect();
            joined.into_iter().collect()
        })
    }

    /// [`Self::on_gpus`] for a batch whose output is `out`, `per_item` elements per item: each
    /// GPU writes its slice's part of `out`.
    pub fn on_gpus_into<T: Send, O: Send>(
        &self,
        out: &mut [O],
        per_item: usize,
        align: usize,
        f: impl Fn(std::ops::Range<usize>, &mut [O]) -> Result<T> + Sync,
    ) -> Result<Vec<T>> {
        let n = out.len() / per_item.max(1);
        let parts = self.gpus.split(n, align);
        if parts.len() <= 1 {
            let gpu = parts.first().map_or(self.gpus.first(), |p| p.0);
            return crate::backend::gpu::run_on(gpu, || f(0..n, out)).map(|t| vec![t]);
        }
        let mut rest = out;
        let mut slices = Vec::with_capacity(parts.len());
        for (_, r) in &parts {
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(r.len() * per_item);
            slices.push(std::sync::Mutex::new(Some(head)));
            rest = tail;
        }
        let starts: Vec<usize> = parts.iter().map(|p| p.1.start).collect();
        self.on_gpus(n, align, |range| {
            let k = starts.iter().position(|&s| s == range.start).unwrap_or(0);
            let part = slices[k]
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take()
                .expect("each slice is run once");
            f(range, part)
        })
    }

    /// The GPUs that run a batch of `n` items under this plan: those [`Self::on_gpus`] gives a
    /// slice (items split, on multiples of `align`), all of them (an operation that spreads
    /// itself), or the first alone; none for a CPU backend.
    pub fn ran_on(&self, n: usize, split: Split, align: usize) -> Vec<usize> {
        match (self.backend.is_gpu(), split) {
            (false, _) => Vec::new(),
            (true, Split::No) => vec![self.gpus.first()],
            (true, Split::Itself) => self.gpus.iter().map(|s| s.0).collect(),
            (true, Split::Items) => {
                let parts = self.gpus.split(n, align);
                match parts.len() {
                    0 => vec![self.gpus.first()],
                    _ => parts.into_iter().map(|p| p.0).collect(),
                }
            }
        }
    }

    /// Runs `f` on the plan's first GPU (for operations that do not split).
    pub fn on_gpu<T>(&self, f: impl FnOnce() -> T) -> T {
        crate::backend::gpu::run_on(self.gpus.first(), f)
    }
}

/// How an operation measures one backend's cost (compute only, data already where it runs).
/// Any `Fn(Backend) -> Result<Cost>` is one that measures in cache only.
pub trait Calibration {
    /// The cost on data the caches hold (CPU backends: see [`cpu_cost`]).
    fn in_cache(&self, backend: Backend) -> Result<Cost>;
    /// Seconds per work unit on all of the pool's threads over data that streams from DRAM (a
    /// batch larger than the last-level cache), where the operation measures it: on a host with
    /// a 300 MiB cache, AES over 1 GiB ran 1.2-1.5x slower than its in-cache calibration said,
    /// and 1.15-1.45x slower than a plain streaming pass at DRAM's bandwidth allowed. `None`: the
    /// memory bandwidth alone bounds such batches.
    fn streaming(&self, _backend: Backend) -> Option<Result<f64>> {
        None
    }
}

impl<F: Fn(Backend) -> Result<Cost>> Calibration for F {
    fn in_cache(&self, backend: Backend) -> Result<Cost> {
        self(backend)
    }
}

pub type Calibrate<'a> = &'a dyn Calibration;

/// Batches smaller than this take the operation's preferred CPU backend without measuring.
const MEASURE_CPU_MIN_BYTES: u64 = 256 << 10;
/// Below this much estimated single-thread work a batch runs on one thread (waking the pool's
/// workers costs more).
const PARALLEL_MIN_S: f64 = 30e-6;
/// Batches moving less than this through memory are never bound by its bandwidth.
const MEMORY_BOUND_MIN_BYTES: u64 = 16 << 20;
/// Bytes per buffer of the pass that measures the host's memory bandwidth.
const STREAM_BYTES: usize = 64 << 20;
/// Each worker thread should get at least this much work, by the one-thread calibration. Small:
/// calibrations run on data in cache, while a parallel call meets it cold; on AES over 1 MiB
/// (50-150 µs on one core in cache) all 16 cores were 1.6-2x faster than the 6-8 threads that
/// 8-25 µs per thread gave.
const PER_THREAD_MIN_S: f64 = 2e-6;

/// A cost's key: the operation, the backend, and for the GPU which device (0 for the CPU).
type CostKey = (&'static str, Backend, usize);

/// A batch is split over several GPUs only from this many items: below it one GPU finishes
/// before the others would have started.
const SPLIT_MIN_ITEMS: u64 = 1 << 12;

/// Everything a dispatcher has measured (failed measurements left out): what
/// [`crate::calibration`] keeps across processes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Measurements {
    /// Operation, backend, GPU index (0 for the CPU) and cost.
    pub costs: Vec<(&'static str, Backend, usize, Cost)>,
    /// Operation, backend and seconds per unit over data streaming from DRAM, all threads.
    pub streaming: Vec<(&'static str, Backend, f64)>,
    /// Each GPU's host link by the way host memory meets it.
    pub links: Vec<(usize, LinkKind, Link)>,
    pub host_bw: Option<f64>,
    pub dram_bw: Option<f64>,
}

pub struct Dispatcher {
    choice: BackendChoice,
    /// The GPUs (indices among the process's) this dispatcher may use; `None`: all of them.
    gpu_choice: Option<Vec<usize>>,
    gpus: OnceLock<Vec<usize>>,
    costs: Mutex<HashMap<CostKey, std::result::Result<Cost, String>>>,
    streaming: Mutex<HashMap<(&'static str, Backend), Option<f64>>>,
    links: Mutex<HashMap<(usize, LinkKind), std::result::Result<Link, String>>>,
    host_bw: OnceLock<f64>,
    dram_bw: OnceLock<f64>,
    observed: observed::Observed,
}

impl Dispatcher {
    pub fn new(choice: BackendChoice) -> Self {
        Self::with_gpus(choice, None)
    }

    /// A dispatcher that uses only the GPUs `gpus` names (indices among the process's GPUs, as
    /// `batchcrypt info` lists them); `None`: all of them. Indices past the last are ignored.
    pub fn with_gpus(choice: BackendChoice, gpus: Option<Vec<usize>>) -> Self {
        Dispatcher {
            choice,
            gpu_choice: gpus,
            gpus: OnceLock::new(),
            costs: Mutex::new(HashMap::new()),
            streaming: Mutex::new(HashMap::new()),
            links: Mutex::new(HashMap::new()),
            host_bw: OnceLock::new(),
            dram_bw: OnceLock::new(),
            observed: observed::Observed::default(),
        }
    }

    /// Everything measured so far.
    pub fn measurements(&self) -> Measurements {
        let mut links: Vec<_> = self
            .links
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter_map(|(&(gpu, kind), l)| l.as_ref().ok().map(|&l| (gpu, kind, l)))
            .collect();
        links.sort_by_key(|&(gpu, kind, _)| (gpu, kind as u8));
        Measurements {
            costs: self.measured(),
            streaming: self.measured_streaming(),
            links,
            host_bw: self.host_bw.get().copied(),
            dram_bw: self.dram_bw.get().copied(),
        }
    }

    /// Takes `m` as measured (a saved calibration): what it holds is not measured again.
    pub fn restore(&self, m: Measurements) {
        let mut costs = self.costs.lock().unwrap_or_else(|p| p.into_inner());
        for (op, b, gpu, c) in m.costs {
            costs.insert((op, b, gpu), Ok(c));
        }
        drop(costs);
        let mut streaming = self.streaming.lock().unwrap_or_else(|p| p.into_inner());
        for (op, b, c) in m.streaming {
            streaming.insert((op, b), Some(c));
        }
        drop(streaming);
        let mut links = self.links.lock().unwrap_or_else(|p| p.into_inner());
        for (gpu, kind, l) in m.links {
            links.insert((gpu, kind), Ok(l));
        }
        drop(links);
        if let Some(bw) = m.host_bw {
            let _ = self.host_bw.set(bw);
        }
        if let Some(bw) = m.dram_bw {
            let _ = self.dram_bw.set(bw);
        }
    }

    pub fn choice(&self) -> BackendChoice {
        self.choice
    }

    /// The GPUs this dispatcher uses (indices among the process's GPUs); empty without one.
    pub fn gpus(&self) -> &[usize] {
        self.gpus.get_or_init(|| {
            let count = crate::backend::gpu::count().min(MAX_GPUS);
            match &self.gpu_choice {
                None => (0..count).collect(),
                Some(v) => v.iter().copied().filter(|&i| i < count).collect(),
            }
        })
    }

    /// Chooses the backend for `w`. `cpu_order` lists the CPU backends the operation implements,
    /// fastest first for this batch; `gpu` says whether it has a GPU implementation.
    pub fn plan(
        &self,
        w: &Workload,
        cpu_order: &[Backend],
        gpu: bool,
        calibrate: Calibrate<'_>,
    ) -> Result<Plan> {
        let best_cpu = || self.best_cpu(w, cpu_order, calibrate);
        let unavailable = |b: Backend, why: String| Error::BackendUnavailable {
            backend: b.name().into(),
            why,
        };
        match self.choice {
            BackendChoice::Exact(Backend::Cuda) | BackendChoice::Gpu => {
                if !gpu {
                    return Err(unavailable(
                        Backend::Cuda,
                        format!("operation {} has no GPU implementation", w.op),
                    ));
                }
                Backend::Cuda
                    .availability()
                    .map_err(|why| unavailable(Backend::Cuda, why))?;
                if self.gpus().is_empty() {
                    return Err(unavailable(
                        Backend::Cuda,
                        "none of the GPUs this engine was given exists".into(),
                    ));
                }
                // Alone or on a small batch, nothing to weigh: no measurement.
                if self.gpus().len() == 1 || w.items < SPLIT_MIN_ITEMS {
                    return Ok(Plan {
                        backend: Backend::Cuda,
                        threads: 1,
                        estimate_s: None,
                        gpus: GpuShares::one(self.gpus()[0]),
                    });
                }
                Ok(self.gpu_plan(w, calibrate, true))
            }
            BackendChoice::Exact(b) => {
                if !cpu_order.contains(&b) {
                    return Err(unavailable(
                        b,
                        format!("operation {} is not implemented by this backend", w.op),
                    ));
                }
                b.availability().map_err(|why| unavailable(b, why))?;
                Ok(self.cpu_plan(w, b, None))
            }
            BackendChoice::Cpu => Ok(self.cpu_plan(w, best_cpu(), None)),
            BackendChoice::Auto => {
                let cpu = best_cpu();
                if !gpu || self.gpus().is_empty() {
                    return Ok(self.cpu_plan(w, cpu, None));
                }
                let est = self.estimates(w, cpu, calibrate);
                // A backend that cannot even be measured is not chosen.
                Ok(self
                    .observed
                    .fastest(w.op, est, Instant::now())
                    .unwrap_or_else(|| self.cpu_plan(w, cpu, None)))
            }
        }
    }

    /// Counts what a batch planned by [`Self::plan`] took, where the plan was chosen by comparing
    /// estimates: later choices for its operation weigh it ([`observed`]).
    pub fn observe(&self, w: &Workload, plan: &Plan, took: Duration) {
        if let (BackendChoice::Auto, Some(estimate_s)) = (self.choice, plan.estimate_s) {
            (self.observed).observe(w.op, plan.backend, estimate_s, took, Instant::now());
        }
    }

    /// How many times their estimates each backend's recent batches took, by operation (key) and
    /// backend: what `auto` multiplies the estimates by now. Only batches chosen by comparing
    /// estimates are counted.
    pub fn slowdowns(&self) -> Vec<(&'static str, Backend, f64)> {
        self.observed.factors(Instant::now())
    }

    /// The CPU plan and the GPU plan for `w` (the best of each GPU alone and all together), each
    /// with its estimate (`None` where unmeasurable).
    pub fn estimates(&self, w: &Workload, cpu: Backend, calibrate: Calibrate<'_>) -> [Plan; 2] {
        let mut cpu_plan = match self.cost(w.op, cpu, calibrate) {
            Ok(c) => self.cpu_estimate(w, cpu, c, calibrate),
            Err(_) => self.cpu_plan(w, cpu, None),
        };
        // Data in GPU memory reaches the CPU and comes back through the link.
        if let (Location::Device, Some(e), Ok(link)) =
            (w.location, cpu_plan.estimate_s, self.link())
        {
            cpu_plan.estimate_s =
                Some(e + w.bytes_in as f64 / link.d2h + w.bytes_out as f64 / link.h2d);
        }
        [cpu_plan, self.gpu_plan(w, calibrate, false)]
    }

    /// The GPU plan for `w`: each GPU alone and, for a batch large enough, all of them together
    /// with shares in proportion to their rates on it; the fastest estimate, or (`split`: the
    /// caller asked for the GPUs) all of them together. Unmeasurable GPUs are left out; when none
    /// can be measured, the first GPU alone, or all in equal shares.
    fn gpu_plan(&self, w: &Workload, calibrate: Calibrate<'_>, split: bool) -> Plan {
        let gpus = self.gpus();
        let plan = |gpus: GpuShares, estimate_s| Plan {
            backend: Backend::Cuda,
            threads: 1,
            estimate_s,
            gpus,
        };
        let alone: Vec<(usize, f64)> = gpus
            .iter()
            .filter_map(|&g| {
                let c = self.cost_on(w.op, Backend::Cuda, g, calibrate).ok()?;
                Some((g, self.gpu_estimate(w, c, g)?))
            })
            .collect();
        let Some(&(best, best_s)) = alone.iter().min_by(|a, b| a.1.total_cmp(&b.1)) else {
            if split && gpus.len() > 1 && w.items >= SPLIT_MIN_ITEMS {
                let even: Vec<(usize, f64)> = gpus.iter().map(|&g| (g, 1.0)).collect();
                return plan(GpuShares::weighted(&even), None);
            }
            return plan(GpuShares::one(gpus.first().copied().unwrap_or(0)), None);
        };
        let mut choice = plan(GpuShares::one(best), Some(best_s));
        if alone.len() > 1 && w.items >= SPLIT_MIN_ITEMS {
            let infos = crate::backend::gpu::infos().unwrap_or_default();
            let shares = GpuShares::weighted(
                &same_model_mean(&alone, |g| gpu_model(&infos, g))
                    .into_iter()
                    .map(|(g, s)| (g, 1.0 / s))
                    .collect::<Vec<_>>(),
            );
            // Each GPU's time on its share; the slowest bounds the batch.
            let split_s = shares
                .iter()
                .filter_map(|(g, share)| {
                    let c = self.measured_cost_on(w.op, Backend::Cuda, g)?;
                    self.gpu_estimate(&w.share(share as f64), c, g)
                })
                .fold(0.0, f64::max);
            if split_s > 0.0 && (split || split_s < best_s) {
                choice = plan(shares, Some(split_s));
            }
        }
        choice
    }

    /// The CPU backend for `w`: for a small batch the first available in the operation's order
    /// (measuring would cost more than it saves), otherwise the one with the lowest measured cost.
    pub fn best_cpu(&self, w: &Workload, order: &[Backend], calibrate: Calibrate<'_>) -> Backend {
        let mut available = order.iter().copied().filter(|b| b.is_available());
        let first = available.next().unwrap_or(Backend::Portable);
        if w.bytes_in < MEASURE_CPU_MIN_BYTES {
            return first;
        }
        let cost = |b: Backend| {
            self.cost(w.op, b, calibrate)
                .map(|c| c.fixed_s + c.per_unit_s * w.units as f64)
                .unwrap_or(f64::MAX)
        };
        std::iter::once(first)
            .chain(available)
            .min_by(|a, b| cost(*a).total_cmp(&cost(*b)))
            .unwrap_or(first)
    }

    /// Thread count for a CPU backend from its cost: the one given, else one measured earlier in
    /// this process, else an estimate by bytes. No time estimate: that is [`Self::cpu_estimate`]'s.
    fn cpu_plan(&self, w: &Workload, backend: Backend, cost: Option<Cost>) -> Plan {
        let cost = cost.or_else(|| self.measured_cost(w.op, backend));
        let pool = crate::backend::cpu::threads().max(1);
        let serial_s = match cost {
            Some(c) => c.per_unit_s * w.units as f64,
            // Unmeasured: about 1 ns per byte is the right order for the CPU paths here.
            None => (w.bytes_in as f64) * 1e-9,
        };
        let threads = if serial_s < PARALLEL_MIN_S {
            1
        } else {
            ((serial_s / PER_THREAD_MIN_S) as usize)
                .clamp(1, pool)
                .min(w.items.max(1) as usize)
        };
        Plan {
            backend,
            threads,
            estimate_s: None,
            gpus: GpuShares::default(),
        }
    }

    /// The CPU plan for `w` with its estimate from `cost` (measured on one thread, data in
    /// cache), bounded by the host's memory and, for a batch larger than the last-level cache, by
    /// the operation's cost measured over such data where it has one.
    fn cpu_estimate(
        &self,
        w: &Workload,
        backend: Backend,
        cost: Cost,
        calibrate: Calibrate<'_>,
    ) -> Plan {
        let plan = self.cpu_plan(w, backend, Some(cost));
        let compute_s = cost.per_unit_s * w.units as f64 / plan.threads as f64;
        let moved = w.bytes_in + w.bytes_out;
        let mut run_s = self.memory_bound(compute_s, moved);
        if moved > crate::backend::cpu::last_level_cache_bytes() as u64 {
            if let Some(per_unit) = self.streaming_cost(w.op, backend, calibrate) {
                let pool = crate::backend::cpu::threads().max(1) as f64;
                run_s = run_s.max(per_unit * w.units as f64 * pool / plan.threads as f64);
            }
        }
        Plan {
            estimate_s: Some(cost.fixed_s + run_s),
            ..plan
        }
    }

    /// Seconds for a CPU batch that computes for `compute_s` (as measured on data in cache) while
    /// moving `moved` bytes through memory. All cores together cannot stream bytes faster than
    /// the memory holding them: the part of the batch the last-level cache can hold moves at the
    /// cache's rate, the rest at DRAM's. On a host with a 300 MiB cache, AES-CTR over 1 GiB in
    /// page-locked memory took 1.2-1.5x what the in-cache calibration said.
    fn memory_bound(&self, compute_s: f64, moved: u64) -> f64 {
        if moved < MEMORY_BOUND_MIN_BYTES {
            return compute_s;
        }
        let cache = crate::backend::cpu::last_level_cache_bytes() as u64;
        let dram = if moved > cache {
            self.dram_bandwidth()
        } else {
            f64::INFINITY
        };
        two_level_seconds(compute_s, moved, cache, self.host_bandwidth(), dram)
    }

    /// Host memory bandwidth on all cores (bytes read plus bytes written per second), measured
    /// once streaming one 64 MiB buffer into another: on hosts whose last-level cache holds much
    /// of that, the cache's rate.
    pub fn host_bandwidth(&self) -> f64 {
        *self.host_bw.get_or_init(|| stream_bandwidth(STREAM_BYTES))
    }

    /// DRAM bandwidth on all cores (bytes read plus bytes written per second), measured once
    /// streaming between buffers of twice the last-level cache each (at most 1 GiB); the
    /// same figure as [`Self::host_bandwidth`] where that pass already overflows the cache.
    pub fn dram_bandwidth(&self) -> f64 {
        *self.dram_bw.get_or_init(|| {
            let len = (2 * crate::backend::cpu::last_level_cache_bytes()).min(1 << 30);
            if len <= STREAM_BYTES {
                self.host_bandwidth()
            } else {
                stream_bandwidth(len)
            }
        })
    }

    /// GPU `gpu`'s estimate for `w` given its measured compute cost, by where the data is.
    fn gpu_estimate(&self, w: &Workload, c: Cost, gpu: usize) -> Option<f64> {
        let compute = c.per_unit_s * w.units as f64;
        let (bytes_in, bytes_out) = (w.bytes_in as f64, w.bytes_out as f64);
        Some(
            c.fixed_s
                + match w.location {
                    Location::Host => {
                        let staged = self.link_of(gpu, LinkKind::Staged).ok()?;
                        pipelined(staged, PIPELINE_CHUNK_BYTES, compute, bytes_in, bytes_out)
                    }
                    Location::Pinned => {
                        let pinned = self.link_of(gpu, LinkKind::Pinned).ok()?;
                        let chunk = direct_chunk_bytes(
                            w.bytes_in as usize,
                            PIPELINE_CHUNK_BYTES as usize,
                            16,
                        );
                        pipelined(pinned, chunk as f64, compute, bytes_in, bytes_out)
                    }
                    // Upload, kernels and download one after another.
                    Location::Pageable => {
                        let link = self.link_of(gpu, LinkKind::Pageable).ok()?;
                        link.latency + compute + bytes_in / link.h2d + bytes_out / link.d2h
                    }
                    Location::Device => compute,
                },
        )
    }

    /// The measured cost of `backend` on `op` (for the GPU, the first of this dispatcher's),
    /// measuring it on first use.
    pub fn cost(
        &self,
        op: &'static str,
        backend: Backend,
        calibrate: Calibrate<'_>,
    ) -> Result<Cost> {
        let device = if backend.is_gpu() {
            self.gpus().first().copied().unwrap_or(0)
        } else {
            0
        };
        self.cost_on(op, backend, device, calibrate)
    }

    /// The measured cost of `backend` on `op`, on GPU `device` for the GPU, measuring it on first
    /// use (the calibration runs with that GPU current). A failed measurement is remembered too,
    /// so later batches do not pay for it again.
    pub fn cost_on(
        &self,
        op: &'static str,
        backend: Backend,
        device: usize,
        calibrate: Calibrate<'_>,
    ) -> Result<Cost> {
        let key = (op, backend, device);
        if let Some(c) = self
            .costs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            return c.clone().map_err(|why| Error::BackendUnavailable {
                backend: backend.name().into(),
                why,
            });
        }
        let c = if backend.is_gpu() {
            crate::backend::gpu::run_on(device, || calibrate.in_cache(backend))
        } else {
            calibrate.in_cache(backend)
        };
        self.costs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, c.as_ref().map(|c| *c).map_err(|e| e.to_string()));
        c
    }

    /// Seconds per unit of `backend` on `op` over data streaming from DRAM, all threads, where
    /// the operation measures it; measured on first use, a failure remembered as none.
    fn streaming_cost(
        &self,
        op: &'static str,
        backend: Backend,
        calibrate: Calibrate<'_>,
    ) -> Option<f64> {
        let lock = || self.streaming.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = lock().get(&(op, backend)) {
            return *c;
        }
        let c = calibrate.streaming(backend).and_then(|r| r.ok());
        lock().insert((op, backend), c);
        c
    }

    /// The cost of a CPU `backend` on `op` if it was measured already (never measures).
    fn measured_cost(&self, op: &'static str, backend: Backend) -> Option<Cost> {
        self.measured_cost_on(op, backend, 0)
    }

    fn measured_cost_on(&self, op: &'static str, backend: Backend, device: usize) -> Option<Cost> {
        self.costs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(op, backend, device))
            .and_then(|c| c.as_ref().ok().copied())
    }

    /// GPU `gpu`'s host↔device bandwidth by the way host memory meets it, measured once.
    pub fn link_of(&self, gpu: usize, kind: LinkKind) -> std::result::Result<Link, String> {
        if let Some(l) = self
            .links
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(gpu, kind))
        {
            return l.clone();
        }
        // Measured outside the lock: measurements of different devices may run at once.
        let l = crate::backend::gpu::measure_link(gpu, kind);
        self.links
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry((gpu, kind))
            .or_insert(l)
            .clone()
    }

    fn first_gpu(&self) -> usize {
        self.gpus().first().copied().unwrap_or(0)
    }

    /// The first GPU's bandwidth from pageable memory, measured once.
    pub fn link(&self) -> std::result::Result<Link, String> {
        self.link_of(self.first_gpu(), LinkKind::Pageable)
    }

    /// Streaming costs measured so far (seconds per unit, all threads), for `batchcrypt calibrate`.
    pub fn measured_streaming(&self) -> Vec<(&'static str, Backend, f64)> {
        let costs = self.streaming.lock().unwrap_or_else(|p| p.into_inner());
        let mut v: Vec<_> = costs
            .iter()
            .filter_map(|(&(o, b), c)| c.map(|c| (o, b, c)))
            .collect();
        v.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        v
    }

    /// Everything measured so far (failed measurements left out), for `batchcrypt calibrate`:
    /// operation, backend, GPU index (0 for the CPU) and cost.
    pub fn measured(&self) -> Vec<(&'static str, Backend, usize, Cost)> {
        let costs = self.costs.lock().unwrap_or_else(|p| p.into_inner());
        let mut v: Vec<_> = costs
            .iter()
            .filter_map(|(&(o, b, d), c)| c.as_ref().ok().map(|&c| (o, b, d, c)))
            .collect();
        v.sort_by(|a, b| (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2)));
        v
    }
}

/// Seconds for a batch streamed through a pipeline of `chunk`-byte chunks: the first upload and
/// the last download overlap nothing (each byte at the link's `alone` cost); between them the
/// kernels (`compute` seconds in all) overlap the other chunks' copies, whose uploads and
/// downloads overlap each other, each bounded by its own rate and both together by the rate
/// measured with both running (for staged copies the host's cores copy both ways).
fn pipelined(link: Link, chunk: f64, compute: f64, bytes_in: f64, bytes_out: f64) -> f64 {
    let first = bytes_in.min(chunk);
    let last = bytes_out.min(chunk);
    let (rest_in, rest_out) = (bytes_in - first, bytes_out - last);
    let copies = (rest_in / link.h2d)
        .max(rest_out / link.d2h)
        .max((rest_in + rest_out) / (2.0 * link.duplex));
    link.latency + (first + last) * link.alone + compute.max(copies)
}

/// Seconds to compute for `compute_s` while moving `moved` bytes, the first `cache` of them at
/// `cache_bw` and the rest at `dram_bw` (bytes per second): each part takes the longer of its
/// share of the compute and its memory traffic.
fn two_level_seconds(compute_s: f64, moved: u64, cache: u64, cache_bw: f64, dram_bw: f64) -> f64 {
    let near = moved.min(cache) as f64;
    let far = moved as f64 - near;
    let share = compute_s / moved as f64;
    (share * near).max(near / cache_bw) + (share * far).max(far / dram_bw)
}

/// Bytes read plus bytes written per second by a parallel pass that reads one `len`-byte buffer
/// and writes another with ordinary stores, as the CPU cipher and hash paths do: the best of at
/// least three passes, and of 1 GiB streamed at least (a 64 MiB pass takes a millisecond or two,
/// short enough for one stall to halve it), after one that maps the pages. Not a copy: the C library's copy of large buffers can
/// write whole lines without reading them first, which a cipher's stores do not (on a host with
/// a 300 MiB cache a copy between 600 MiB buffers moved 117 GB/s, where AES-CTR over 1 GiB moved
/// 82-91 GB/s).
fn stream_bandwidth(len: usize) -> f64 {
    use rayon::prelude::*;
    const PIECE: usize = (1 << 20) / 8;
    let words = len / 8;
    let mut src = vec![0u64; words];
    // Written: pages only read would all map the kernel's one zero page.
    crate::backend::cpu::par_fill(&mut src, 1);
    let mut dst = vec![0u64; words];
    let passes = ((1usize << 30) / len.max(1)).clamp(3, 16);
    let mut best = f64::MAX;
    for i in 0..=passes {
        let t = std::time::Instant::now();
        dst.par_chunks_mut(PIECE)
            .zip(src.par_chunks(PIECE))
            .for_each(|(d, s)| d.iter_mut().zip(s).for_each(|(d, s)| *d = s ^ 0x5a5a_5a5a));
        if i > 0 {
            best = best.min(t.elapsed().as_secs_f64());
        }
    }
    std::hint::black_box(&dst);
    (16 * words) as f64 / best
}

/// A CPU backend's cost from two fits: the fixed part on one thread (small batches run there) and
/// the rate on all of the pool's `threads`, reported per thread. The model scales a thread's cost
/// by the threads a batch gets, and all threads together reach less than that many times one
/// thread's rate (two threads a core, shared caches and memory): 16 threads gave SHA256d about
/// 10x one thread, AES over 1 GiB about 6x.
pub fn cpu_cost(one_thread: Cost, all_threads: Cost, threads: usize) -> Cost {
    Cost {
        fixed_s: one_thread.fixed_s,
        per_unit_s: all_threads.per_unit_s * threads as f64,
    }
}

/// The seconds one call of `f` takes.
fn seconds(f: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
    let t = std::time::Instant::now();
    f()?;
    Ok(t.elapsed().as_secs_f64())
}

/// The median of `v` (odd length).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The median time of `runs` calls of `f` (odd), after one untimed call that warms up (module
/// load, page faults, allocator).
pub fn median_seconds(runs: usize, f: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
    f()?;
    let v = (0..runs).map(|_| seconds(f)).collect::<Result<Vec<_>>>()?;
    Ok(median(v))
}

/// The medians of `runs` timed calls each of `small` and `large` (odd), called in turns after
/// one untimed call of each: load elsewhere on the host slows both sizes alike.
fn medians_in_turns(
    runs: usize,
    small: &mut dyn FnMut() -> Result<()>,
    large: &mut dyn FnMut() -> Result<()>,
) -> Result<(f64, f64)> {
    small()?;
    large()?;
    let (mut ts, mut tl) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for _ in 0..runs {
        ts.push(seconds(small)?);
        tl.push(seconds(large)?);
    }
    Ok((median(ts), median(tl)))
}

/// Fits `fixed + units × per_unit` through timed runs at two sizes (the median of a few each,
/// taken in turns). A fit whose large runs were no slower than its small ones is measured again,
/// twice at most: taken as it came, it prices the backend's work at nothing and the dispatcher
/// gives that backend every batch. Where the cost truly does not grow with the batch (a
/// launch-bound GPU path), the last fit stands: a flat cost.
pub fn fit(
    small_units: u64,
    mut small: impl FnMut() -> Result<()>,
    large_units: u64,
    mut large: impl FnMut() -> Result<()>,
) -> Result<Cost> {
    let mut tries = 0;
    loop {
        tries += 1;
        let (ts, tl) = medians_in_turns(5, &mut small, &mut large)?;
        if tl > ts || tries == 3 {
            let per_unit_s = ((tl - ts) / (large_units - small_units) as f64).max(1e-15);
            let fixed_s = (ts - per_unit_s * small_units as f64).max(0.0);
            return Ok(Cost {
                fixed_s,
                per_unit_s,
            });
        }
    }
}

/// [`fit`] through one run at two batch sizes (`small` and `large` items of `units` work units
/// each).
pub fn fit_sizes(
    small: usize,
    large: usize,
    units: u64,
    run: impl FnMut(usize) -> Result<()>,
) -> Result<Cost> {
    // Both timed closures call the one run, in turn.
    let run = std::cell::RefCell::new(run);
    fit(
        small as u64 * units,
        || run.borrow_mut()(small),
        large as u64 * units,
        || run.borrow_mut()(large),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINK: Link = Link {
        h2d: 50e9,
        d2h: 50e9,
        duplex: 40e9,
        alone: 1.0 / 50e9,
        latency: 20e-6,
    };
    const MIB: f64 = (1 << 20) as f64;
    const CHUNK: f64 = PIPELINE_CHUNK_BYTES;

    /// A sleep of `ms` milliseconds as a timed run.
    fn takes(ms: u64) -> Result<()> {
        std::thread::sleep(Duration::from_millis(ms));
        Ok(())
    }

    #[test]
    fn a_fit_whose_large_runs_were_no_slower_is_measured_again() {
        // The small runs held up (4 ms) through the first fit's six calls, then at their 1 ms;
        // the large runs 3 ms throughout, for 1,000 more units.
        let mut calls = 0;
        let small = || {
            calls += 1;
            takes(if calls <= 6 { 4 } else { 1 })
        };
        let c = fit(1_000, small, 2_000, || takes(3)).unwrap();
        assert!((1e-6..4e-6).contains(&c.per_unit_s), "{c:?}");
        assert_eq!(calls, 12, "measured twice");
        // A cost that does not grow with the batch: three tries, then flat.
        let mut calls = 0;
        let flat = fit(
            1_000,
            || {
                calls += 1;
                takes(2)
            },
            2_000,
            || takes(1),
        )
        .unwrap();
        assert_eq!(calls, 18);
        assert!(flat.per_unit_s < 1e-12 && flat.fixed_s > 1e-3, "{flat:?}");
    }

    #[test]
    fn a_batch_of_one_chunk_pays_its_copies_and_kernels_in_turn() {
        let (bytes, compute) = (4.0 * MIB, 1e-3);
        let want = LINK.latency + 2.0 * bytes / 50e9 + compute;
        assert!((pipelined(LINK, CHUNK, compute, bytes, bytes) - want).abs() < 1e-12);
    }

    #[test]
    fn a_large_batch_runs_at_the_slower_of_copies_and_kernels() {
        let bytes = 4096.0 * MIB;
        // Copies both ways at once bound it: each way at the duplex rate.
        let t = pipelined(LINK, CHUNK, 1e-3, bytes, bytes);
        assert!((t / (bytes / 40e9) - 1.0).abs() < 0.01, "{t}");
        // Slow kernels bound it.
        let t = pipelined(LINK, CHUNK, 1.0, bytes, bytes);
        assert!((t - 1.0).abs() < 0.01, "{t}");
        // A download of half the bytes (digests): the upload alone bounds the copies.
        let t = pipelined(LINK, CHUNK, 1e-3, bytes, bytes / 2.0);
        assert!((t / (bytes / 50e9) - 1.0).abs() < 0.01, "{t}");
    }

    #[test]
    fn gpus_of_one_model_take_equal_shares() {
        // GPUs 0 and 1 are one model measured 10% apart, GPU 2 another, GPU 3 unknown.
        let model = |g: usize| [Some("a"), Some("a"), Some("b"), None][g];
        let est = [(0, 1.0), (1, 1.1), (2, 2.0), (3, 3.0)];
        let mean = same_model_mean(&est, model);
        assert_eq!(mean, vec![(0, 1.05), (1, 1.05), (2, 2.0), (3, 3.0)]);
        let shares =
            GpuShares::weighted(&mean.iter().map(|&(g, s)| (g, 1.0 / s)).collect::<Vec<_>>());
        let s: Vec<f32> = shares.iter().map(|s| s.1).collect();
        assert_eq!(s[0], s[1]);
        assert!(s[1] > s[2] && s[2] > s[3]);
    }

    #[test]
    fn shares_cut_whole_aligned_ranges() {
        let even = GpuShares::weighted(&[(0, 1.0), (1, 1.0)]);
        assert_eq!(even.split(10, 1), vec![(0, 0..5), (1, 5..10)]);
        assert_eq!(even.split(10, 4), vec![(0, 0..4), (1, 4..10)]);
        // A GPU twice as fast takes two thirds; a GPU with no share takes nothing.
        let uneven = GpuShares::weighted(&[(1, 2.0), (3, 1.0)]);
        assert_eq!(uneven.split(300, 1), vec![(1, 0..200), (3, 200..300)]);
        assert_eq!(uneven.count(), 2);
        assert_eq!(uneven.first(), 1);
        // Too few items for every GPU: the empty slices are left out.
        assert_eq!(even.split(1, 1), vec![(1, 0..1)]);
        assert_eq!(even.split(3, 4), vec![(1, 0..3)]);
        assert!(even.split(0, 1).is_empty());
        assert_eq!(GpuShares::one(2).split(7, 1), vec![(2, 0..7)]);
        // The ranges always cover the batch, in order.
        for n in [1usize, 2, 7, 1000, 1 << 20] {
            for s in [
                even,
                uneven,
                GpuShares::weighted(&[(0, 0.3), (1, 0.3), (2, 0.4)]),
            ] {
                let parts = s.split(n, 16);
                assert_eq!(parts.first().unwrap().1.start, 0);
                assert_eq!(parts.last().unwrap().1.end, n);
                assert!(parts.windows(2).all(|w| w[0].1.end == w[1].1.start));
            }
        }
    }

    #[test]
    fn slices_run_in_parallel_and_come_back_in_order() {
        let plan = Plan {
            backend: Backend::Cuda,
            threads: 1,
            estimate_s: None,
            gpus: GpuShares::weighted(&[(0, 1.0), (1, 1.0), (2, 2.0)]),
        };
        let got = plan.on_gpus(1000, 8, Ok).unwrap();
        assert_eq!(got, vec![0..248, 248..496, 496..1000]);
        let mut out = vec![0u32; 3000];
        plan.on_gpus_into(&mut out, 3, 8, |r, part| {
            assert_eq!(part.len(), 3 * r.len());
            for (k, x) in part.iter_mut().enumerate() {
                *x = (3 * r.start + k) as u32;
            }
            Ok(())
        })
        .unwrap();
        assert!(out.iter().enumerate().all(|(i, &x)| x == i as u32));
        // An empty batch runs once, over nothing.
        let mut none: Vec<u32> = Vec::new();
        let runs = plan
            .on_gpus_into(&mut none, 3, 8, |r, part| Ok((r, part.len())))
            .unwrap();
        assert_eq!(runs, vec![(0..0, 0)]);
        assert_eq!(plan.on_gpus(0, 8, Ok).unwrap(), vec![0..0]);
        // One slice failing fails the batch, after every slice finished.
        let err = plan.on_gpus(1000, 8, |r| {
            if r.start == 248 {
                Err(Error::invalid("slice failed"))
            } else {
                Ok(())
            }
        });
        assert!(err.is_err());
    }

    #[test]
    fn estimates_grow_with_the_batch() {
        let mut last = 0.0;
        for log in 10..34 {
            let b = (1u64 << log) as f64;
            let t = pipelined(LINK, CHUNK, b * 1e-12, b, b);
            assert!(t > last, "{log}: {t} <= {last}");
            last = t;
        }
    }

    #[test]
    fn memory_bounds_batches_by_where_their_bytes_fit() {
        let m = 1u64 << 20;
        let (cache, cache_bw, dram_bw) = (300 * m, 115e9, 90e9);
        let t = |compute, moved| two_level_seconds(compute, moved, cache, cache_bw, dram_bw);
        // Fast compute in cache: the cache's rate bounds it.
        assert!((t(1e-4, 256 * m) / (256.0 * MIB / 115e9) - 1.0).abs() < 1e-9);
        // Slow compute binds wherever the bytes are.
        assert!((t(1.0, 2048 * m) - 1.0).abs() < 1e-9);
        // 1 GiB each way: the cache's share at its rate, the rest at DRAM's.
        let want = 300.0 * MIB / 115e9 + 1748.0 * MIB / 90e9;
        assert!((t(10e-3, 2048 * m) / want - 1.0).abs() < 1e-9);
        // Compute between the two rates: it binds the cached share only.
        let compute = 2048.0 * MIB / 100e9;
        let want = compute * 300.0 / 2048.0 + 1748.0 * MIB / 90e9;
        assert!((t(compute, 2048 * m) / want - 1.0).abs() < 1e-9);
    }

    /// A calibration with fixed costs that counts its streaming measurements.
    struct Fixed {
        streamed: std::cell::Cell<u32>,
    }

    impl Calibration for Fixed {
        fn in_cache(&self, _: Backend) -> Result<Cost> {
            Ok(Cost {
                fixed_s: 1e-6,
                per_unit_s: 1e-9,
            })
        }
        fn streaming(&self, _: Backend) -> Option<Result<f64>> {
            self.streamed.set(self.streamed.get() + 1);
            Some(Ok(1e-6))
        }
    }

    #[test]
    fn batches_beyond_the_cache_cost_what_was_measured_over_such_data() {
        let d = Dispatcher::new(BackendChoice::Auto);
        let cal = Fixed {
            streamed: std::cell::Cell::new(0),
        };
        let cost = cal.in_cache(Backend::Portable).unwrap();
        let work = |bytes: u64| Workload {
            op: "test",
            items: bytes / 16,
            units: bytes / 16,
            bytes_in: bytes,
            bytes_out: bytes,
            location: Location::Pinned,
        };
        // In cache: the in-cache cost alone, nothing streamed.
        let small = d.cpu_estimate(&work(64 << 10), Backend::Portable, cost, &cal);
        let want = 1e-6 + 4096.0 * 1e-9 / small.threads as f64;
        assert!((small.estimate_s.unwrap() / want - 1.0).abs() < 1e-9);
        assert_eq!(cal.streamed.get(), 0);
        // 1 GiB each way is beyond any last-level cache here: the streaming cost, measured once.
        let w = work(1 << 30);
        let large = d.cpu_estimate(&w, Backend::Portable, cost, &cal);
        let pool = crate::backend::cpu::threads().max(1) as f64;
        let want = 1e-6 + 1e-6 * w.units as f64 * pool / large.threads as f64;
        assert!((large.estimate_s.unwrap() / want - 1.0).abs() < 1e-9);
        d.cpu_estimate(&w, Backend::Portable, cost, &cal);
        assert_eq!(cal.streamed.get(), 1);
    }
}

//! The CUDA device layer: finds the driver without panicking, opens every device the process
//! may use (each with its own context, kernel modules, streams, memory budget and page-locked
//! pools), loads the embedded kernel images (fatbins built by nvcc at compile time) and hands out
//! streams.
//!
//! GPU code asks for "the current device" ([`Gpu::get`]), as CUDA's own runtime does: device 0 of
//! the selection unless a caller runs it inside [`Gpu::run`] of another. So one path serves every
//! device, and a batch split over several GPUs runs each slice on its own thread, inside its
//! device's `run`.

use super::device::DeviceInfo;
use crate::error::{Error, Result};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DriverError};
use std::any::{Any, TypeId};
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

pub use super::device::{DEVICES_ENV, DISABLE_ENV};

/// A kernel image embedded in the library.
#[derive(Debug)]
pub struct KernelImage {
    pub name: &'static str,
    /// Fatbin bytes, or `None` when the build had no nvcc.
    pub fatbin: Option<&'static [u8]>,
}

/// One GPU this process uses.
pub struct Gpu {
    /// Position in [`devices`].
    index: usize,
    ctx: Arc<CudaContext>,
    info: DeviceInfo,
    modules: Mutex<HashMap<&'static str, Arc<CudaModule>>>,
    streams: Mutex<Vec<Arc<CudaStream>>>,
    budget: crate::memory::MemoryBudget,
    /// Tables computed once on this device ([`device_table`]), by kernel name.
    tables: Mutex<HashMap<&'static str, std::result::Result<&'static CudaSlice<u8>, String>>>,
    /// Per-device state of other modules ([`Gpu::local`]), by type.
    locals: Mutex<HashMap<TypeId, &'static (dyn Any + Send + Sync)>>,
    /// Whether this device reaches each other one's memory directly ([`Gpu::peer_access`]), by
    /// the other's index.
    peers: Mutex<HashMap<usize, bool>>,
}

thread_local! {
    /// The device [`Gpu::get`] answers on this thread (an index into [`devices`]).
    static CURRENT: Cell<usize> = const { Cell::new(0) };
}

fn driver_err(context: &'static str) -> impl Fn(DriverError) -> Error {
    move |e| Error::Cuda {
        context,
        message: format!("{e:?}"),
    }
}

/// A driver call's result as ours, naming the call. Every CUDA call of the library goes through
/// it, which is where [`fault::inject`] makes one fail.
pub(crate) trait DriverResult<T> {
    fn driver(self, context: &'static str) -> Result<T>;
}

impl<T> DriverResult<T> for std::result::Result<T, DriverError> {
    fn driver(self, context: &'static str) -> Result<T> {
        let v = self.map_err(driver_err(context))?;
        fault::check(context)?;
        Ok(v)
    }
}

/// Test hook: make one CUDA call fail, to check that a failure surfaces as an error of the call
/// that made it (never as a verdict, never as a silent fallback to the CPU).
pub mod fault {
    use crate::error::{Error, Result};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Mutex;

    static ARMED: AtomicBool = AtomicBool::new(false);
    /// The calls to fail (substrings of the call's name, `|` between alternatives, e.g. "launch",
    /// "cuMemAlloc", "upload|HtoD"; "" for any) and how many matching calls succeed first.
    static PLAN: Mutex<Option<(String, u32)>> = Mutex::new(None);

    /// The next CUDA call whose name contains `pattern`, after `skip` such calls, fails once.
    /// Process-wide: tests that use it must not run GPU work concurrently with other tests.
    pub fn inject(pattern: &str, skip: u32) {
        *PLAN.lock().unwrap_or_else(|p| p.into_inner()) = Some((pattern.to_string(), skip));
        ARMED.store(true, Ordering::SeqCst);
    }

    /// Whether an injected fault is still waiting for its call.
    pub fn pending() -> bool {
        ARMED.load(Ordering::SeqCst)
    }

    pub fn clear() {
        *PLAN.lock().unwrap_or_else(|p| p.into_inner()) = None;
        ARMED.store(false, Ordering::SeqCst);
    }

    pub(crate) fn check(context: &'static str) -> Result<()> {
        if !ARMED.load(Ordering::Relaxed) {
            return Ok(());
        }
        let mut plan = PLAN.lock().unwrap_or_else(|p| p.into_inner());
        match plan.as_mut() {
            Some((pattern, skip)) if pattern.split('|').any(|p| context.contains(p)) => {
                if *skip > 0 {
                    *skip -= 1;
                    return Ok(());
                }
                *plan = None;
                ARMED.store(false, Ordering::SeqCst);
                Err(Error::Cuda {
                    context,
                    message: "injected fault (test hook)".into(),
                })
            }
            _ => Ok(()),
        }
    }
}

/// A one-dimensional grid of `threads`-wide blocks covering `n` items (at least one block). Kernels
/// loop grid-stride, so a caller may pass fewer items than the batch to cap the grid.
pub(crate) fn grid_1d(n: u64, threads: u32) -> cudarc::driver::LaunchConfig {
    let blocks = n.div_ceil(threads as u64).clamp(1, i32::MAX as u64) as u32;
    cudarc::driver::LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// A table computed once per device: `kernel(table)` of `image` writes `len` entries of
/// `entry_bytes` with a grid-stride loop. The result (or why it failed) is kept by the device
/// for the life of the process.
pub(crate) fn device_table(
    gpu: &Gpu,
    image: &KernelImage,
    kernel: &'static str,
    len: usize,
    entry_bytes: usize,
) -> Result<&'static CudaSlice<u8>> {
    use cudarc::driver::PushKernelArg;
    // Held while the table is built: concurrent first users wait for the one build.
    let mut tables = gpu.tables.lock().unwrap_or_else(|p| p.into_inner());
    tables
        .entry(kernel)
        .or_insert_with(|| {
            let build = || -> Result<CudaSlice<u8>> {
                let f = gpu.function(image, kernel)?;
                let stream = gpu.stream()?;
                let mut t = stream
                    .alloc_zeros::<u8>(len * entry_bytes)
                    .driver("cuMemAlloc")?;
                let mut b = stream.launch_builder(&f);
                b.arg(&mut t);
                // SAFETY: the kernel takes the table alone and writes its `len` entries.
                unsafe { b.launch(grid_1d(len as u64, 128)) }.driver("launch")?;
                stream.synchronize().driver("sync")?;
                Ok(t)
            };
            // Leaked: a device lives as long as the process.
            build()
                .map(|t| &*Box::leak(Box::new(t)))
                .map_err(|e| e.to_string())
        })
        .clone()
        .map_err(|e| Error::Cuda {
            context: kernel,
            message: e,
        })
}

/// Device time of `work` (which enqueues on `stream`): the median of `iters` runs bracketed by
/// timing events, in seconds, after one untimed warm-up run.
pub(crate) fn time_on_stream(
    stream: &Arc<CudaStream>,
    iters: usize,
    mut work: impl FnMut() -> Result<()>,
) -> Result<f64> {
    // cudarc creates events without timing unless asked; elapsed time needs the default flags.
    let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
    let ctx = stream.context();
    work()?;
    let mut times = Vec::with_capacity(iters.max(1));
    for _ in 0..iters.max(1) {
        let start = ctx.new_event(timing).driver("cuEventCreate")?;
        let end = ctx.new_event(timing).driver("cuEventCreate")?;
        start.record(stream).driver("cuEventRecord")?;
        work()?;
        end.record(stream).driver("cuEventRecord")?;
        end.synchronize().driver("cuEventSynchronize")?;
        times.push(f64::from(start.elapsed_ms(&end).driver("cuEventElapsedTime")?) / 1e3);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// Stream-ordered allocations return to the device's default pool when freed; by default the pool
/// hands them back to the driver at every synchronisation, so each large batch (an MSM allocates
/// gigabytes of scratch) would map its memory afresh. Keeping freed memory in the pool makes
/// repeated calls reuse it. Best effort: without the pool API allocations still work.
fn keep_freed_memory(ctx: &CudaContext) {
    use cudarc::driver::sys;
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    let mut threshold = u64::MAX;
    // SAFETY: plain driver calls on the device of a live context; `threshold` outlives the call.
    unsafe {
        if ctx.bind_to_thread().is_ok()
            && sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device())
                == sys::CUresult::CUDA_SUCCESS
        {
            sys::cuMemPoolSetAttribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                (&mut threshold as *mut u64).cast(),
            );
        }
    }
}

/// How a thread waits for its GPU work: `yield` (the default) polls and hands its core to any
/// other thread ready to run, `block` sleeps until the work is done, `spin` polls without yielding.
/// The driver's own default spins where the process has fewer contexts than cores: a service with
/// several batches in flight then kept a core spinning for each waiting batch, beside the threads
/// that serve its clients; sleeping freed those cores but each wake-up came late for the many
/// short waits of a proof.
pub const WAIT_ENV: &str = "BATCHCRYPT_GPU_WAIT";

/// Sets how threads wait on device `ordinal` ([`WAIT_ENV`]) before its context is made; an
/// unknown setting is an error, a driver that refuses keeps its default.
fn set_wait(ordinal: usize) -> std::result::Result<(), String> {
    use cudarc::driver::{result, sys::CUctx_flags as F};
    let flags = match std::env::var(WAIT_ENV).as_deref() {
        Err(_) | Ok("yield") => F::CU_CTX_SCHED_YIELD,
        Ok("block") => F::CU_CTX_SCHED_BLOCKING_SYNC,
        Ok("spin") => F::CU_CTX_SCHED_SPIN,
        Ok(other) => return Err(format!("{WAIT_ENV}={other}: expected yield, block or spin")),
    };
    // SAFETY: plain driver calls: initialisation, then the flags of a device's primary context.
    unsafe {
        if result::init().is_ok() {
            if let Ok(dev) = result::device::get(ordinal as i32) {
                let _ = cudarc::driver::sys::cuDevicePrimaryCtxSetFlags_v2(dev, flags as u32);
            }
        }
    }
    Ok(())
}

/// Every GPU this process uses, opened on first call: the devices the driver reports, less those
/// `BATCHCRYPT_DEVICES` leaves out; or why there is none. Never panics: the driver library is
/// probed before any driver call (cudarc panics on a missing libcuda).
pub fn devices() -> std::result::Result<&'static [Gpu], String> {
    static ALL: OnceLock<std::result::Result<Vec<Gpu>, String>> = OnceLock::new();
    ALL.get_or_init(|| {
        if std::env::var(DISABLE_ENV)
            .map(|v| !v.is_empty() && v != "0")
            .unwrap_or(false)
        {
            return Err(format!("disabled by {DISABLE_ENV}"));
        }
        if !crate::kernels::BUILT {
            return Err(crate::kernels::NOT_BUILT.into());
        }
        // SAFETY: only probes whether the shared library can be opened.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err("no CUDA driver (libcuda) on this machine".into());
        }
        std::panic::catch_unwind(open_all)
            .unwrap_or_else(|_| Err("the CUDA driver library is present but unusable".into()))
    })
    .as_deref()
    .map_err(|e| e.clone())
}

fn open_all() -> std::result::Result<Vec<Gpu>, String> {
    let count = CudaContext::device_count()
        .map_err(|e| format!("CUDA driver initialisation failed: {e:?}"))?;
    if count < 1 {
        return Err("the CUDA driver reports no device".into());
    }
    let chosen = super::device::DeviceSelection::from_env()
        .map_err(|e| e.to_string())?
        .ordinals(count as usize)?;
    chosen
        .into_iter()
        .enumerate()
        .map(|(index, ordinal)| Gpu::open(ordinal, index))
        .collect()
}

fn pci_bus_id(ctx: &CudaContext) -> std::result::Result<String, String> {
    let mut buf = [0 as std::ffi::c_char; 32];
    // SAFETY: the driver writes a NUL-terminated string of at most `len` bytes.
    let rc =
        unsafe { cudarc::driver::sys::cuDeviceGetPCIBusId(buf.as_mut_ptr(), 32, ctx.cu_device()) };
    if rc != cudarc::driver::sys::CUresult::CUDA_SUCCESS {
        return Err(format!("cuDeviceGetPCIBusId failed: {rc:?}"));
    }
    // SAFETY: NUL-terminated by the driver (checked above).
    let id = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
    Ok(id.to_string_lossy().into_owned())
}

impl Gpu {
    /// [`Gpu::get`] as the library's error: the CUDA backend is unavailable, and why.
    pub fn available() -> crate::error::Result<&'static Gpu> {
        Gpu::get().map_err(|why| crate::error::Error::BackendUnavailable {
            backend: "cuda".into(),
            why,
        })
    }

    /// The current device of this thread (the first of [`devices`] unless inside another's
    /// [`Gpu::run`]), or why there is none.
    pub fn get() -> std::result::Result<&'static Gpu, String> {
        let all = devices()?;
        Ok(&all[CURRENT.with(Cell::get).min(all.len() - 1)])
    }

    /// Runs `f` with this device as the thread's current device, then restores the one before.
    pub fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        struct Restore(usize);
        impl Drop for Restore {
            fn drop(&mut self) {
                CURRENT.with(|c| c.set(self.0));
            }
        }
        let _restore = Restore(CURRENT.with(|c| c.replace(self.index)));
        f()
    }

    /// Position in [`devices`].
    pub fn index(&self) -> usize {
        self.index
    }

    /// The driver's ordinal of this device (what `BATCHCRYPT_DEVICES` and `--devices` name).
    pub fn ordinal(&self) -> usize {
        self.info.ordinal
    }

    /// This device's instance of a module's per-device state (pools, caches), made by
    /// `T::default()` on first use and kept for the life of the process.
    pub fn local<T: Default + Send + Sync + 'static>(&self) -> &'static T {
        let mut locals = self.locals.lock().unwrap_or_else(|p| p.into_inner());
        let any: &'static (dyn Any + Send + Sync) = *locals
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Box::leak(Box::new(T::default())));
        any.downcast_ref::<T>().expect("keyed by its type")
    }

    fn open(ordinal: usize, index: usize) -> std::result::Result<Gpu, String> {
        set_wait(ordinal)?;
        let ctx = CudaContext::new(ordinal)
            .map_err(|e| format!("cannot create a CUDA context on device {ordinal}: {e:?}"))?;
        use cudarc::driver::sys::CUdevice_attribute as A;
        let attr = |a| ctx.attribute(a).unwrap_or(0);
        let info = DeviceInfo {
            ordinal,
            name: ctx.name().unwrap_or_else(|_| "unknown".into()),
            compute_capability: ctx.compute_capability().unwrap_or((0, 0)),
            multiprocessors: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT) as u32,
            total_memory: ctx.total_mem().unwrap_or(0),
            clock_khz: attr(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE) as u32,
            pci_bus_id: pci_bus_id(&ctx).unwrap_or_else(|e| e),
        };
        keep_freed_memory(&ctx);
        let free = ctx
            .mem_get_info()
            .map_err(|e| format!("cannot read device {ordinal}'s free memory: {e:?}"))?
            .0;
        let budget =
            crate::memory::MemoryBudget::for_device(free as u64).map_err(|e| e.to_string())?;
        Ok(Gpu {
            index,
            ctx,
            info,
            modules: Mutex::new(HashMap::new()),
            streams: Mutex::new(Vec::new()),
            budget,
            tables: Mutex::new(HashMap::new()),
            locals: Mutex::new(HashMap::new()),
            peers: Mutex::new(HashMap::new()),
        })
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The device memory budget that operations reserve from before they allocate
    /// ([`crate::memory`]).
    pub fn budget(&self) -> &crate::memory::MemoryBudget {
        &self.budget
    }

    /// Free and total device memory, as the driver reports them now.
    pub fn memory(&self) -> Result<(usize, usize)> {
        self.ctx.mem_get_info().driver("cuMemGetInfo")
    }

    /// A kernel from an embedded image; each image is loaded once per process.
    pub fn function(&self, image: &KernelImage, name: &str) -> Result<CudaFunction> {
        let module = {
            let mut modules = self.modules.lock().unwrap_or_else(|p| p.into_inner());
            match modules.get(image.name) {
                Some(m) => m.clone(),
                None => {
                    let bytes = image.fatbin.ok_or_else(|| Error::BackendUnavailable {
                        backend: "cuda".into(),
                        why: format!("kernel image {} was not built", image.name),
                    })?;
                    let m = self
                        .ctx
                        .load_module(cudarc::nvrtc::Ptx::from_binary(bytes.to_vec()))
                        .driver("cuModuleLoadData")?;
                    modules.insert(image.name, m.clone());
                    m
                }
            }
        };
        module.load_function(name).driver("cuModuleGetFunction")
    }

    /// Whether this device reads `peer`'s memory directly (over NVLink or PCIe), set up on the
    /// first ask: peer access from this context, and `peer`'s stream-ordered pool (where the
    /// library allocates) opened to this device. Copies between the two work either way; where
    /// this is false the driver stages them through host memory.
    pub fn peer_access(&self, peer: &Gpu) -> bool {
        use cudarc::driver::sys;
        let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        *peers.entry(peer.index).or_insert_with(|| {
            if peer.index == self.index {
                return true;
            }
            let mut can = 0;
            // SAFETY: plain driver calls on two live contexts; every pointer outlives its call.
            unsafe {
                if sys::cuDeviceCanAccessPeer(&mut can, self.ctx.cu_device(), peer.ctx.cu_device())
                    != sys::CUresult::CUDA_SUCCESS
                    || can == 0
                    || self.ctx.bind_to_thread().is_err()
                {
                    return false;
                }
                let rc = sys::cuCtxEnablePeerAccess(peer.ctx.cu_ctx(), 0);
                if rc != sys::CUresult::CUDA_SUCCESS
                    && rc != sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
                {
                    return false;
                }
                let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
                let access = sys::CUmemAccessDesc {
                    location: sys::CUmemLocation {
                        type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                        id: self.info.ordinal as i32,
                    },
                    flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
                };
                sys::cuDeviceGetDefaultMemPool(&mut pool, peer.ctx.cu_device())
                    == sys::CUresult::CUDA_SUCCESS
                    && sys::cuMemPoolSetAccess(pool, &access, 1) == sys::CUresult::CUDA_SUCCESS
            }
        })
    }

    /// A stream for one operation; returned to a small pool when the guard drops.
    pub fn stream(&self) -> Result<StreamGuard<'_>> {
        let pooled = self.streams.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let stream = match pooled {
            Some(s) => s,
            None => self.ctx.new_stream().driver("cuStreamCreate")?,
        };
        Ok(StreamGuard {
            gpu: self,
            stream: Some(stream),
        })
    }
}

/// A pooled stream; derefs to the cudarc stream.
pub struct StreamGuard<'a> {
    gpu: &'a Gpu,
    stream: Option<Arc<CudaStream>>,
}

impl std::ops::Deref for StreamGuard<'_> {
    type Target = Arc<CudaStream>;
    fn deref(&self) -> &Arc<CudaStream> {
        self.stream.as_ref().expect("stream present until drop")
    }
}

impl Drop for StreamGuard<'_> {
    fn drop(&mut self) {
        if let Some(s) = self.stream.take() {
            // A stream whose work failed is not reused.
            if s.synchronize().is_ok() {
                self.gpu
                    .streams
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(s);
            }
        }
    }
}

/// Page-locked host memory a caller fills with a batch's input as it arrives (a server copies each
/// request into a block while the request is still in its cache), so that the batch's upload
/// reads the blocks in place, in one batch of copies, instead of a host thread first joining them
/// into a staging buffer on the batch's critical path ([`crate::pipeline::run_gathered`]).
/// Blocks come in power-of-two sizes from 4 KiB to 1 MiB, carved from 2 MiB slabs that live for
/// the process; at most [`PAGE_LOCKED_CAP`] bytes are page-locked this way, past which (or
/// without a GPU) [`page_locked`] answers `None` and the caller keeps ordinary memory.
pub struct PageLocked {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
    class: usize,
}

// SAFETY: a block is owned by one `PageLocked` at a time (the pool hands it out once until it
// comes back); it is plain memory.
unsafe impl Send for PageLocked {}
unsafe impl Sync for PageLocked {}

impl std::ops::Deref for PageLocked {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `len` bytes of a live block this value owns.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl std::ops::DerefMut for PageLocked {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, and no other reference to the block exists.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl AsRef<[u8]> for PageLocked {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl Drop for PageLocked {
    fn drop(&mut self) {
        lock_free(self.class).push(self.ptr.as_ptr() as usize);
    }
}

/// The most host memory [`page_locked`] locks.
pub const PAGE_LOCKED_CAP: usize = 256 << 20;
const BLOCK_MIN_SHIFT: u32 = 12;
const BLOCK_CLASSES: usize = 9;
const SLAB: usize = 2 << 20;

struct Blocks {
    /// Idle blocks' addresses, by size class.
    free: [Mutex<Vec<usize>>; BLOCK_CLASSES],
    /// Every slab's address range, sorted by start.
    slabs: std::sync::RwLock<Vec<std::ops::Range<usize>>>,
    /// Slabs made or being made: the cap is taken before a slab is locked, outside `slabs`'s
    /// lock (locking takes milliseconds, and batches read `slabs` meanwhile).
    made: std::sync::atomic::AtomicUsize,
    /// Whether a thread is locking a slab for [`page_locked_now`], by size class (left set where
    /// the driver refused one).
    growing: [std::sync::atomic::AtomicBool; BLOCK_CLASSES],
}

static BLOCKS: Blocks = Blocks {
    free: [const { Mutex::new(Vec::new()) }; BLOCK_CLASSES],
    slabs: std::sync::RwLock::new(Vec::new()),
    made: std::sync::atomic::AtomicUsize::new(0),
    growing: [const { std::sync::atomic::AtomicBool::new(false) }; BLOCK_CLASSES],
};

/// A page-locked block of `len` bytes (contents unspecified), or `None`: no GPU, `len` 0 or over
/// 1 MiB, or the pool at its cap.
pub fn page_locked(len: usize) -> Option<PageLocked> {
    let class = block_class(len)?;
    let addr = match idle_block(class) {
        Some(a) => a,
        None => new_slab(class)?,
    };
    block(addr, len, class)
}

/// An idle page-locked block of `len` bytes, never locking memory on the caller's thread: where
/// the pool has no idle block of that size it answers `None` and a thread of its own locks a
/// slab for the callers after. Locking a slab takes about a millisecond, which a server's
/// connection threads, each serving many clients, cannot spend mid-request: a load that grew the
/// pool that way stalled them while it grew.
pub fn page_locked_now(len: usize) -> Option<PageLocked> {
    use std::sync::atomic::Ordering;
    let class = block_class(len)?;
    if let Some(addr) = idle_block(class) {
        return block(addr, len, class);
    }
    devices().ok()?.first()?;
    let full = BLOCKS.made.load(Ordering::SeqCst) >= PAGE_LOCKED_CAP / SLAB;
    if !full && !BLOCKS.growing[class].swap(true, Ordering::SeqCst) {
        // Where the driver refuses a slab (or the cap is reached meanwhile), the size is not
        // tried again: its requests stay in ordinary memory rather than each start a thread.
        let grow = move || {
            if let Some(addr) = new_slab(class) {
                lock_free(class).push(addr);
                BLOCKS.growing[class].store(false, Ordering::SeqCst);
            }
        };
        if std::thread::Builder::new()
            .name("page-locking".into())
            .spawn(grow)
            .is_err()
        {
            BLOCKS.growing[class].store(false, Ordering::SeqCst);
        }
    }
    None
}

fn lock_free(class: usize) -> std::sync::MutexGuard<'static, Vec<usize>> {
    BLOCKS.free[class].lock().unwrap_or_else(|p| p.into_inner())
}

fn idle_block(class: usize) -> Option<usize> {
    lock_free(class).pop()
}

fn block(addr: usize, len: usize, class: usize) -> Option<PageLocked> {
    Some(PageLocked {
        ptr: std::ptr::NonNull::new(addr as *mut u8)?,
        len,
        class,
    })
}

/// The size class of a block for `len` bytes: class `c` holds 4 KiB << `c`; none for 0 bytes or
/// over 1 MiB.
fn block_class(len: usize) -> Option<usize> {
    if len == 0 || len > 1 << (BLOCK_MIN_SHIFT as usize + BLOCK_CLASSES - 1) {
        return None;
    }
    Some((len.max(2) - 1).ilog2().saturating_sub(BLOCK_MIN_SHIFT - 1) as usize)
}

/// Locks a new slab, keeps all but one of its blocks of `class` idle and gives that one.
fn new_slab(class: usize) -> Option<usize> {
    use std::sync::atomic::Ordering;
    let size = 1usize << (class as u32 + BLOCK_MIN_SHIFT);
    let gpu = devices().ok()?.first()?;
    if BLOCKS.made.fetch_add(1, Ordering::SeqCst) >= PAGE_LOCKED_CAP / SLAB {
        BLOCKS.made.fetch_sub(1, Ordering::SeqCst);
        return None;
    }
    let Some(p) = lock_slab(gpu) else {
        BLOCKS.made.fetch_sub(1, Ordering::SeqCst);
        return None;
    };
    let start = p as usize;
    let mut slabs = BLOCKS.slabs.write().unwrap_or_else(|p| p.into_inner());
    let at = slabs.partition_point(|r| r.start < start);
    slabs.insert(at, start..start + SLAB);
    drop(slabs);
    lock_free(class).extend((1..SLAB / size).map(|i| start + i * size));
    Some(start)
}

/// A new page-locked, mapped slab, or `None` where the driver refuses one.
fn lock_slab(gpu: &Gpu) -> Option<*mut std::ffi::c_void> {
    use cudarc::driver::sys;
    gpu.ctx.bind_to_thread().ok()?;
    let mut p: *mut std::ffi::c_void = std::ptr::null_mut();
    // SAFETY: a plain allocation with the context current; portable, so every GPU's context
    // sees it as page-locked, and mapped, so kernels read it in place.
    let r = unsafe {
        sys::cuMemHostAlloc(
            &mut p,
            SLAB,
            sys::CU_MEMHOSTALLOC_PORTABLE | sys::CU_MEMHOSTALLOC_DEVICEMAP,
        )
    };
    if r != sys::CUresult::CUDA_SUCCESS || p.is_null() {
        return None;
    }
    // Kernels reach it at its host address (unified addressing); a device that maps it
    // elsewhere cannot take these blocks as they are, so none are handed out.
    let mut dev: sys::CUdeviceptr = 0;
    // SAFETY: `p` is the mapped allocation just made.
    let mapped = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dev, p, 0) };
    if mapped != sys::CUresult::CUDA_SUCCESS || dev != p as sys::CUdeviceptr {
        // SAFETY: freed once, never handed out.
        unsafe { sys::cuMemFreeHost(p) };
        return None;
    }
    Some(p)
}

/// Whether all of `buf` lies in one block of [`page_locked`]'s pool.
pub(crate) fn is_page_locked_block(buf: &[u8]) -> bool {
    let (start, end) = (buf.as_ptr() as usize, buf.as_ptr() as usize + buf.len());
    let slabs = BLOCKS.slabs.read().unwrap_or_else(|p| p.into_inner());
    let i = slabs.partition_point(|r| r.start <= start);
    i > 0 && end <= slabs[i - 1].end
}

/// Page-locked host buffers kept for reuse: page-locking costs far more than the copies it
/// speeds up, and concurrent operations each need one. A buffer goes back to the pool when its
/// guard drops; at most `keep` idle buffers are kept (the largest), the others are freed.
pub struct PinnedPool {
    free: Mutex<Vec<cudarc::driver::PinnedHostSlice<u32>>>,
    /// `CU_MEMHOSTALLOC_WRITECOMBINED` for buffers the host only writes (uploads), 0 otherwise.
    flags: u32,
    keep: usize,
}

/// A buffer of at least the asked length, back to its pool when dropped.
pub struct Pinned<'a> {
    pool: &'a PinnedPool,
    buf: Option<cudarc::driver::PinnedHostSlice<u32>>,
}

impl PinnedPool {
    pub const fn new(flags: u32, keep: usize) -> Self {
        PinnedPool {
            free: Mutex::new(Vec::new()),
            flags,
            keep,
        }
    }

    /// A buffer of at least `words` 32-bit words: the smallest idle one that fits, else a new one.
    pub fn take(&self, gpu: &Gpu, words: usize) -> Result<Pinned<'_>> {
        let words = words.max(8);
        let reused = {
            let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
            let best = (0..free.len())
                .filter(|&i| free[i].len() >= words)
                .min_by_key(|&i| free[i].len());
            best.map(|i| free.swap_remove(i))
        };
        let buf = match reused {
            Some(b) => b,
            // SAFETY: the caller writes what it reads (uploads fill it, downloads land in it).
            None => unsafe { gpu.ctx.alloc_pinned_with_flags::<u32>(words, self.flags) }
                .driver("cuMemHostAlloc")?,
        };
        Ok(Pinned {
            pool: self,
            buf: Some(buf),
        })
    }
}

impl std::ops::Deref for Pinned<'_> {
    type Target = cudarc::driver::PinnedHostSlice<u32>;
    fn deref(&self) -> &Self::Target {
        self.buf.as_ref().expect("present until drop")
    }
}

impl std::ops::DerefMut for Pinned<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.buf.as_mut().expect("present until drop")
    }
}

impl Drop for Pinned<'_> {
    fn drop(&mut self) {
        let Some(buf) = self.buf.take() else { return };
        let mut free = self.pool.free.lock().unwrap_or_else(|p| p.into_inner());
        free.push(buf);
        if free.len() > self.pool.keep {
            // The smallest goes, freed outside the lock.
            let smallest = (0..free.len())
                .min_by_key(|&i| free[i].len())
                .expect("non-empty");
            let extra = free.swap_remove(smallest);
            drop(free);
            drop(extra);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_locked_blocks_are_the_smallest_power_of_two_from_4_kib_to_1_mib() {
        for (len, class) in [
            (1, Some(0)),
            (4096, Some(0)),
            (4097, Some(1)),
            (16384, Some(2)),
            (16385, Some(3)),
            (1 << 20, Some(8)),
            ((1 << 20) + 1, None),
            (0, None),
        ] {
            assert_eq!(block_class(len), class, "{len} bytes");
            if let Some(c) = class {
                assert!(len <= 4096 << c && (c == 0 || len > 2048 << c));
            }
        }
    }

    #[test]
    fn page_locked_memory_is_told_apart_from_ordinary_memory() {
        let ordinary = vec![0u8; 64 << 10];
        assert!(!is_page_locked_block(&ordinary));
        match page_locked(20_000) {
            // Without a GPU there is nothing to lock for.
            None => assert!(devices().is_err() || block_class(20_000).is_none()),
            Some(mut b) => {
                assert_eq!(b.len(), 20_000);
                b.fill(7);
                assert!(is_page_locked_block(&b) && is_page_locked_block(&b[100..200]));
                let at = b.as_ptr() as usize;
                drop(b);
                // The block goes back to its class and comes out again.
                let again = page_locked(30_000).expect("a block of the same class");
                assert_eq!(again.as_ptr() as usize, at);
            }
        }
    }

    #[test]
    fn page_locked_now_never_locks_on_the_callers_thread_and_the_pool_grows_behind_it() {
        // A class no other test takes: its first call finds no idle block.
        let len = 200_000;
        let first = page_locked_now(len);
        assert!(first.is_none(), "no idle block of this class yet");
        if devices().map_or(true, |d| d.is_empty()) {
            return;
        }
        let since = std::time::Instant::now();
        let b = loop {
            if let Some(b) = page_locked_now(len) {
                break b;
            }
            assert!(
                since.elapsed() < std::time::Duration::from_secs(10),
                "the pool grew"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        };
        assert!(b.len() == len && is_page_locked_block(&b));
    }
}

//! GPU utilization over a run, as the driver's management library (NVML, `libnvidia-ml`)
//! measures it: the share of time in which at least one kernel was running on the device (what
//! `nvidia-smi` shows as GPU-Util). The library is opened at run time, like the CUDA driver; where
//! it is missing the monitor is simply unavailable.
//!
//! The driver keeps a short history of utilization samples (one per 1/6 s to 1 s); a thread
//! drains it every half second, so runs of any length are covered.

use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use std::time::{SystemTime, UNIX_EPOCH};

type Device = *mut c_void;
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Sample {
    time_us: c_ulonglong,
    value: c_ulonglong, // a union; utilization samples are unsigned ints (its low half)
}
const GPU_UTILIZATION_SAMPLES: c_int = 1;
const NOT_FOUND: c_int = 6; // no samples since the timestamp given

struct Nvml {
    _lib: libloading::Library,
    get_samples: unsafe extern "C" fn(
        Device,
        c_int,
        c_ulonglong,
        *mut c_int,
        *mut c_uint,
        *mut Sample,
    ) -> c_int,
    device: Device,
}
// SAFETY: NVML is thread-safe; the handle is a plain pointer valid until nvmlShutdown, which we
// never call (the library stays loaded for the process).
unsafe impl Send for Nvml {}

impl Nvml {
    /// Opens NVML and finds the device with this PCI bus id (as CUDA reports it).
    fn open(pci_bus_id: &str) -> Result<Self, String> {
        // SAFETY: loading the system's NVML; the symbols are used with their documented types.
        unsafe {
            let lib = libloading::Library::new("libnvidia-ml.so.1")
                .map_err(|e| format!("NVML (libnvidia-ml.so.1) not available: {e}"))?;
            let init: libloading::Symbol<unsafe extern "C" fn() -> c_int> =
                lib.get(b"nvmlInit_v2\0").map_err(|e| e.to_string())?;
            let by_bus: libloading::Symbol<
                unsafe extern "C" fn(*const c_char, *mut Device) -> c_int,
            > = lib
                .get(b"nvmlDeviceGetHandleByPciBusId_v2\0")
                .map_err(|e| e.to_string())?;
            let get_samples = *lib
                .get(b"nvmlDeviceGetSamples\0")
                .map_err(|e| e.to_string())?;
            let rc = init();
            if rc != 0 {
                return Err(format!("nvmlInit failed ({rc})"));
            }
            let bus = std::ffi::CString::new(pci_bus_id).map_err(|e| e.to_string())?;
            let mut device = std::ptr::null_mut();
            let rc = by_bus(bus.as_ptr(), &mut device);
            if rc != 0 {
                return Err(format!(
                    "NVML does not know the device at {pci_bus_id} ({rc})"
                ));
            }
            Ok(Nvml {
                _lib: lib,
                get_samples,
                device,
            })
        }
    }

    /// Utilization samples (time in µs, percent) taken after `since_us`.
    fn samples(&self, since_us: u64) -> Vec<(u64, u32)> {
        let (mut kind, mut n) = (0, 0);
        // SAFETY: a count query (null buffer), then a fill of at most `n` samples.
        unsafe {
            let rc = (self.get_samples)(
                self.device,
                GPU_UTILIZATION_SAMPLES,
                since_us,
                &mut kind,
                &mut n,
                std::ptr::null_mut(),
            );
            if rc != 0 || n == 0 {
                return Vec::new();
            }
            let mut buf = vec![Sample::default(); n as usize];
            let rc = (self.get_samples)(
                self.device,
                GPU_UTILIZATION_SAMPLES,
                since_us,
                &mut kind,
                &mut n,
                buf.as_mut_ptr(),
            );
            if rc != 0 && rc != NOT_FOUND {
                return Vec::new();
            }
            buf.truncate(n as usize);
            buf.iter()
                .filter(|s| s.time_us > since_us)
                .map(|s| (s.time_us, s.value as u32))
                .collect()
        }
    }
}

/// GPU utilization over a run: the mean of the driver's samples and how many there were.
#[derive(Clone, Copy, Debug)]
pub struct Utilization {
    /// Percent of the time at least one kernel ran.
    pub mean: f64,
    pub max: u32,
    pub samples: usize,
}

impl std::fmt::Display for Utilization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "GPU utilization {:.0}% mean, {}% max ({} samples)",
            self.mean, self.max, self.samples
        )
    }
}

/// Samples the GPU's utilization from [`UtilizationMonitor::start`] to
/// [`UtilizationMonitor::finish`].
pub struct UtilizationMonitor {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Vec<(u64, u32)>>,
}

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

impl UtilizationMonitor {
    /// Starts sampling the process's GPU, or says why it cannot.
    pub fn start() -> Result<Self, String> {
        {
            let gpu = super::cuda::Gpu::get()?;
            let nvml = Nvml::open(&gpu.info().pci_bus_id)?;
            let stop = Arc::new(AtomicBool::new(false));
            let flag = stop.clone();
            let start = now_us();
            let thread = std::thread::spawn(move || {
                let (mut seen, mut all) = (start, Vec::new());
                loop {
                    let last = flag.load(Ordering::Acquire);
                    let new = nvml.samples(seen);
                    seen = new.iter().map(|s| s.0).max().unwrap_or(seen);
                    all.extend(new);
                    if last {
                        return all;
                    }
                    std::thread::park_timeout(Duration::from_millis(500));
                }
            });
            Ok(UtilizationMonitor { stop, thread })
        }
    }

    /// Stops sampling and summarizes; `None` if the driver took no sample in the run (runs
    /// shorter than its sampling period).
    pub fn finish(self) -> Option<Utilization> {
        // The driver's current sample covers the run's last moments; wait for it to close.
        std::thread::sleep(Duration::from_millis(200));
        self.stop.store(true, Ordering::Release);
        self.thread.thread().unpark();
        let samples = self.thread.join().ok()?;
        (!samples.is_empty()).then(|| Utilization {
            mean: samples.iter().map(|s| s.1 as f64).sum::<f64>() / samples.len() as f64,
            max: samples.iter().map(|s| s.1).max().unwrap_or(0),
            samples: samples.len(),
        })
    }
}

//! The GPUs as the rest of the library sees them: how many there are, what each is, its memory
//! budget and host link, and running work on one. Where the build has no kernels or the machine
//! no driver or device, every answer is "none, and why".

pub use super::cuda::{page_locked, page_locked_now, PageLocked, PAGE_LOCKED_CAP};
pub use super::device::{DeviceInfo, DeviceSelection, Link, LinkKind, DEVICES_ENV, DISABLE_ENV};
use crate::memory::MemoryStats;

pub use imp::{
    availability, count, current, infos, measure_link, memory_stats, reset_memory_stats, run_on,
};

mod imp {
    use super::{DeviceInfo, Link, LinkKind, MemoryStats};
    use crate::backend::cuda::{devices, Gpu};

    /// Whether at least one GPU can run work now, and if not, why.
    pub fn availability() -> std::result::Result<(), String> {
        devices().map(|_| ())
    }

    /// GPUs this process uses (0 when there are none).
    pub fn count() -> usize {
        devices().map(|d| d.len()).unwrap_or(0)
    }

    /// What each GPU reports, in the order of the selection.
    pub fn infos() -> std::result::Result<Vec<DeviceInfo>, String> {
        Ok(devices()?.iter().map(|g| g.info().clone()).collect())
    }

    /// Each GPU's memory budget as it stands.
    pub fn memory_stats() -> Vec<MemoryStats> {
        devices()
            .map(|d| d.iter().map(|g| g.budget().stats()).collect())
            .unwrap_or_default()
    }

    /// Starts every GPU budget's peak and wait counts afresh.
    pub fn reset_memory_stats() {
        for g in devices().unwrap_or_default() {
            g.budget().reset_stats();
        }
    }

    /// The thread's current GPU (its index among the process's; 0 where there is none).
    pub fn current() -> usize {
        Gpu::get().map(|g| g.index()).unwrap_or(0)
    }

    /// Runs `f` with GPU `index` (of the selection) as the thread's current device.
    pub fn run_on<R>(index: usize, f: impl FnOnce() -> R) -> R {
        match devices().ok().and_then(|d| d.get(index)) {
            Some(g) => g.run(f),
            None => f(),
        }
    }

    /// GPU `index`'s host link, measured now.
    pub fn measure_link(index: usize, kind: LinkKind) -> std::result::Result<Link, String> {
        use crate::pipeline;
        let gpu: &Gpu = devices()?
            .get(index)
            .ok_or_else(|| format!("no GPU {index}"))?;
        match kind {
            LinkKind::Pageable => pipeline::measure_link(gpu),
            LinkKind::Staged => pipeline::measure_link_staged(gpu),
            LinkKind::Pinned => pipeline::measure_link_pinned(gpu),
        }
        .map_err(|e| e.to_string())
    }
}

//! Run-time detection of the CPU extensions the backends use.

use std::sync::OnceLock;

/// Instruction-set extensions found on this CPU (all false on non-x86 targets).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuFeatures {
    pub sha_ni: bool,
    pub avx2: bool,
    /// AVX-512 F and BW together (what the multi-buffer code needs).
    pub avx512: bool,
    pub aes_ni: bool,
    pub vaes: bool,
}

/// Detected once per process.
pub fn features() -> CpuFeatures {
    static F: OnceLock<CpuFeatures> = OnceLock::new();
    *F.get_or_init(detect)
}

#[cfg(target_arch = "x86_64")]
fn detect() -> CpuFeatures {
    // SHA-NI code also uses SSE4.1 shuffles; count it present only with them.
    CpuFeatures {
        sha_ni: is_x86_feature_detected!("sha") && is_x86_feature_detected!("sse4.1") && is_x86_feature_detected!("ssse3"),
        avx2: is_x86_feature_detected!("avx2"),
        avx512: is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw"),
        aes_ni: is_x86_feature_detected!("aes"),
        vaes: is_x86_feature_detected!("vaes"),
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn detect() -> CpuFeatures {
    CpuFeatures::default()
}

/// Worker threads the multi-threaded CPU paths use (rayon's global pool).
pub fn threads() -> usize {
    rayon::current_num_threads()
}

/// `f(i)` for `i` in `0..n`, in order, on all pool threads (`threads > 1`) or this one. Pieces of
/// `min_piece` items amortize the scheduling; keep them small (for the signature and curve paths
/// an item is tens of microseconds, and 64 is enough), so a thread slowed by the system does not
/// leave the others idle at the end of a batch.
pub(crate) fn par_map<T: Send>(min_piece: usize, n: usize, threads: usize, f: impl Fn(usize) -> T + Sync + Send) -> Vec<T> {
    use rayon::prelude::*;
    if threads <= 1 {
        return (0..n).map(f).collect();
    }
    (0..n).into_par_iter().with_min_len(min_piece).map(f).collect()
}

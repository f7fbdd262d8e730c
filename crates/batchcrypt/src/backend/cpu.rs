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
        sha_ni: is_x86_feature_detected!("sha")
            && is_x86_feature_detected!("sse4.1")
            && is_x86_feature_detected!("ssse3"),
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

/// Runs `f` on `threads` threads (rayon's global pool when that is all of them): arkworks'
/// parallel routines use whatever pool they run in.
pub(crate) fn on_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    if threads >= self::threads() {
        return f();
    }
    match rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
    {
        Ok(pool) => pool.install(f),
        Err(_) => f(),
    }
}

/// A pool of half this process's threads, at least `min` and at most `max`, named `{name}-{i}`,
/// built on first use: for work kept apart from the global pool. Where the system refuses the
/// threads, work runs on the calling thread.
pub struct HalfPool {
    name: &'static str,
    min: usize,
    max: usize,
    pool: std::sync::OnceLock<Option<rayon::ThreadPool>>,
}

impl HalfPool {
    pub const fn new(name: &'static str, min: usize, max: usize) -> HalfPool {
        HalfPool {
            name,
            min,
            max,
            pool: std::sync::OnceLock::new(),
        }
    }

    fn pool(&self) -> Option<&rayon::ThreadPool> {
        self.pool
            .get_or_init(|| {
                let name = self.name;
                rayon::ThreadPoolBuilder::new()
                    .num_threads((threads() / 2).clamp(self.min, self.max))
                    .thread_name(move |i| format!("{name}-{i}"))
                    .build()
                    .ok()
            })
            .as_ref()
    }

    /// Runs `f` in the pool (so its parallel work spreads over the pool's threads).
    pub fn run<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        match self.pool() {
            Some(pool) => pool.install(f),
            None => f(),
        }
    }

    /// Starts `f` on one of the pool's threads without waiting for it (one hand-off, where a
    /// thread of another pool calling [`Self::run`] makes two); gives `f` back where the pool's
    /// threads were refused.
    pub fn spawn<F: FnOnce() + Send + 'static>(&self, f: F) -> Result<(), F> {
        match self.pool() {
            Some(pool) => {
                pool.spawn(f);
                Ok(())
            }
            None => Err(f),
        }
    }
}

/// Runs `f` (memory-bound copies and conversions of data crossing to or from a GPU) in a pool of
/// its own, half the cores (2 to 16 threads), so that a transfer never waits in the
/// global pool's queue behind other work: with 16 Groth16 proofs in flight on 16 cores, an MSM's
/// scalars waited up to 0.7 s there for their conversion behind the proofs' evaluations. Every
/// GPU's transfers share it.
pub(crate) fn for_transfer<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    static POOL: HalfPool = HalfPool::new("batchcrypt-transfer", 2, 16);
    POOL.run(f)
}

/// `f(i)` for `i` in `0..n`, in order, on all pool threads (`threads > 1`) or this one. Pieces of
/// at least `min_piece` items amortize the scheduling where an item costs little; where it costs
/// tens of microseconds (a signature verification) pass 1 and let rayon split as it balances, so
/// that a thread slowed by the system does not leave the others idle at the end of a batch
/// (with 64, a batch of 2^10 items is 16 pieces: one per thread on 16 cores, nothing to balance).
pub(crate) fn par_map<T: Send>(
    min_piece: usize,
    n: usize,
    threads: usize,
    f: impl Fn(usize) -> T + Sync + Send,
) -> Vec<T> {
    use rayon::prelude::*;
    if threads <= 1 {
        return (0..n).map(f).collect();
    }
    (0..n)
        .into_par_iter()
        .with_min_len(min_piece)
        .map(f)
        .collect()
}

/// [`par_map`] into a caller's slice: `out[i] = f(i)`.
pub(crate) fn par_map_into<T: Send>(
    min_piece: usize,
    out: &mut [T],
    threads: usize,
    f: impl Fn(usize) -> T + Sync + Send,
) {
    use rayon::prelude::*;
    if threads <= 1 {
        out.iter_mut().enumerate().for_each(|(i, o)| *o = f(i));
        return;
    }
    out.par_iter_mut()
        .with_min_len(min_piece)
        .enumerate()
        .for_each(|(i, o)| *o = f(i));
}

/// `n` zeroed `[u8; B]` items as zeroed memory from the allocator (for large sizes, fresh pages
/// that the OS zeroes on first touch). `vec![[0u8; B]; n]` writes every item on one thread
/// instead for B > 16 — tens of milliseconds per 64 MB of output.
pub fn zeroed_arrays<const B: usize>(n: usize) -> Vec<[u8; B]> {
    let layout = std::alloc::Layout::array::<[u8; B]>(n).expect("allocation size overflows");
    if layout.size() == 0 {
        return vec![[0u8; B]; n];
    }
    // SAFETY: the layout has a non-zero size; all-zero bytes are a valid [u8; B]; the pointer
    // comes from the global allocator with exactly the layout Vec<[u8; B]> of capacity n uses.
    unsafe {
        let p = std::alloc::alloc_zeroed(layout);
        if p.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        huge_pages(p, layout.size());
        Vec::from_raw_parts(p.cast::<[u8; B]>(), n, n)
    }
}

/// Asks the kernel to back the 2 MiB-aligned part of a large fresh allocation of `len` bytes at
/// `p` with huge pages: one fault per 2 MiB instead of per 4 KiB when it is first written (page
/// faults from many threads serialise, and cost more than the copy on hosts with many cores).
/// Advice only, given before the first write: where transparent huge pages are off nothing
/// changes; nothing is read or written.
pub fn huge_pages<T>(p: *const T, len: usize) {
    const HUGE: usize = 2 << 20;
    #[cfg(target_os = "linux")]
    if len >= 2 * HUGE {
        let start = (p as usize).next_multiple_of(HUGE);
        let end = (p as usize + len) / HUGE * HUGE;
        if end > start {
            // SAFETY: advice on whole pages inside an allocation we own; it changes no contents.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    let _ = (p, len, HUGE);
}

/// Runs `f` on an empty vector this thread keeps for the next call of the same element type, so a
/// routine run again and again on every core (a block of kernel items, a sighash preimage)
/// allocates nothing after its first call. A nested call of the same type gets a vector of its own.
pub(crate) fn with_kept<T: 'static, R>(f: impl FnOnce(&mut Vec<T>) -> R) -> R {
    use std::any::Any;
    use std::cell::RefCell;
    thread_local! {
        static KEPT: RefCell<Vec<Box<dyn Any>>> = const { RefCell::new(Vec::new()) };
    }
    // Taken out while in use.
    let mut v: Vec<T> = KEPT
        .with_borrow_mut(|kept| {
            let at = kept.iter().position(|b| b.is::<Vec<T>>())?;
            kept.swap_remove(at).downcast::<Vec<T>>().ok().map(|b| *b)
        })
        .unwrap_or_default();
    v.clear();
    let out = f(&mut v);
    v.clear();
    KEPT.with_borrow_mut(|kept| kept.push(Box::new(v)));
    out
}

/// Copies `src` into `dst` (equal lengths) on all cores: one core cannot keep up with the GPU's
/// link or the memory.
pub fn par_copy(dst: &mut [u8], src: &[u8]) {
    use rayon::prelude::*;
    // A pipeline chunk (a few MiB) spread over every core.
    const PIECE: usize = 1 << 18;
    // Up to a MiB one core copies in about 0.1 ms; spread, the copy waits for the slowest of
    // its pieces, and under load the other threads are often busy.
    if src.len() <= 4 * PIECE {
        dst.copy_from_slice(src);
        return;
    }
    dst.par_chunks_mut(PIECE)
        .zip(src.par_chunks(PIECE))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

/// `parts` joined into one buffer, copied on all cores: a batch of many requests' buffers is
/// megabytes, which one core copies more slowly than the GPU hashes them.
pub fn par_concat(parts: &[&[u8]]) -> Vec<u8> {
    use rayon::prelude::*;
    const PIECE: usize = 1 << 18;
    let total = parts.iter().map(|p| p.len()).sum();
    let mut out = Vec::with_capacity(total);
    let mut rest = &mut out.spare_capacity_mut()[..total];
    let mut pieces = Vec::with_capacity(parts.len() + total / PIECE);
    for src in parts.iter().flat_map(|p| p.chunks(PIECE)) {
        let (dst, r) = std::mem::take(&mut rest).split_at_mut(src.len());
        pieces.push((dst, src));
        rest = r;
    }
    pieces
        .into_par_iter()
        .with_min_len((PIECE / parts.first().map_or(1, |p| p.len().clamp(1, PIECE))).max(1))
        .for_each(|(dst, src)| {
            dst.write_copy_of_slice(src);
        });
    // SAFETY: the pieces cover the first `total` bytes exactly (each part's chunks, in order),
    // and each was written above.
    unsafe { out.set_len(total) };
    out
}

/// A file's bytes, read in pieces on all cores: the pages of a new buffer are mapped as they are
/// first written, which one core does slowly (a witness's or a proving key's tens or hundreds of
/// MiB).
pub fn read_file(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    #[cfg(unix)]
    {
        use rayon::prelude::*;
        use std::os::unix::fs::FileExt;
        const PIECE: usize = 1 << 20;
        let file = std::fs::File::open(path)?;
        let len = usize::try_from(file.metadata()?.len()).map_err(std::io::Error::other)?;
        // Zeroed memory comes from the system untouched: only the reads below map its pages.
        let mut buf = vec![0u8; len];
        huge_pages(buf.as_ptr(), len);
        buf.par_chunks_mut(PIECE)
            .enumerate()
            .try_for_each(|(i, piece)| file.read_exact_at(piece, (i * PIECE) as u64))?;
        Ok(buf)
    }
    #[cfg(not(unix))]
    std::fs::read(path)
}

/// `f(i)` for each `i` in `0..n`, on all cores, written straight into the vector (a parse of
/// 2^24 field elements writes its 512 MiB once, its pages mapped by every core, where collecting
/// `Result`s goes through lists of pieces and a copy on one core); `Err(i)` for the first `i`
/// whose `f` gives `None`.
pub fn try_par_map<T: Copy + Send + Sync>(
    n: usize,
    f: impl Fn(usize) -> Option<T> + Sync + Send,
    placeholder: T,
) -> std::result::Result<Vec<T>, usize> {
    use rayon::prelude::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let first_bad = AtomicUsize::new(usize::MAX);
    let mut out = Vec::with_capacity(n);
    huge_pages(out.as_ptr(), n * std::mem::size_of::<T>());
    out.spare_capacity_mut()[..n]
        .par_iter_mut()
        .with_min_len(1 << 12)
        .enumerate()
        .for_each(|(i, slot)| {
            slot.write(f(i).unwrap_or_else(|| {
                first_bad.fetch_min(i, Ordering::Relaxed);
                placeholder
            }));
        });
    // SAFETY: every one of the first n slots was written above.
    unsafe { out.set_len(n) };
    match first_bad.into_inner() {
        usize::MAX => Ok(out),
        i => Err(i),
    }
}

/// Fills `buf` with `value` on all cores (the pages of a large new buffer are mapped as they are
/// first written, which one core does slowly).
pub fn par_fill<T: Copy + Send + Sync>(buf: &mut [T], value: T) {
    use rayon::prelude::*;
    buf.par_chunks_mut(((1 << 20) / std::mem::size_of::<T>().max(1)).max(1))
        .for_each(|c| c.fill(value));
}

/// Marsaglia's xorshift64: a fixed sequence of pseudo-random words from `state` (non-zero), for
/// test and calibration data that must not be constant, never for secrets.
pub(crate) fn xorshift64(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// A cache size as sysfs writes it ("32768K").
fn cache_size(text: &str) -> Option<usize> {
    let t = text.trim();
    let (num, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: usize = num.parse().ok()?;
    Some(match unit {
        "K" => n << 10,
        "M" => n << 20,
        "G" => n << 30,
        _ => n,
    })
}

/// The size of the largest CPU cache (the last level), from Linux's sysfs; 32 MiB where it
/// cannot be read. Read once: the dispatcher asks for every batch, and sixteen sysfs reads cost
/// more than AES over 1 MiB on all cores.
pub fn last_level_cache_bytes() -> usize {
    static BYTES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *BYTES.get_or_init(read_last_level_cache_bytes)
}

fn read_last_level_cache_bytes() -> usize {
    (0..8)
        .filter_map(|i| {
            let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
            let level: u32 = std::fs::read_to_string(format!("{dir}/level"))
                .ok()?
                .trim()
                .parse()
                .ok()?;
            Some((
                level,
                cache_size(&std::fs::read_to_string(format!("{dir}/size")).ok()?)?,
            ))
        })
        .max()
        .map(|(_, size)| size)
        .unwrap_or(32 << 20)
}

#[cfg(test)]
mod tests {
    #[test]
    fn cache_sizes_parse() {
        assert_eq!(super::cache_size("32768K\n"), Some(32 << 20));
        assert_eq!(super::cache_size("2M"), Some(2 << 20));
        assert_eq!(super::cache_size("512"), Some(512));
        assert_eq!(super::cache_size("K"), None);
        // Whatever this machine says, a last-level cache holds at least hundreds of KiB.
        assert!(super::last_level_cache_bytes() >= 256 << 10);
    }

    #[test]
    fn par_concat_joins_in_order() {
        let big: Vec<u8> = (0..(1u32 << 20) + 7)
            .map(|i| (i * 31 % 251) as u8)
            .collect();
        let parts: Vec<&[u8]> = vec![b"ab", b"", &big, b"c", &big[5..9]];
        assert_eq!(super::par_concat(&parts), parts.concat());
        assert!(super::par_concat(&[]).is_empty());
        let many: Vec<Vec<u8>> = (0..1000u32)
            .map(|i| vec![i as u8; (i % 70) as usize])
            .collect();
        let many: Vec<&[u8]> = many.iter().map(Vec::as_slice).collect();
        assert_eq!(super::par_concat(&many), many.concat());
    }

    #[test]
    fn try_par_map_keeps_order_and_names_the_first_failure() {
        let n = (1 << 16) + 3;
        let got = super::try_par_map(n, |i| Some(i as u64 * 3), 0).unwrap();
        assert_eq!(got, (0..n as u64).map(|i| i * 3).collect::<Vec<_>>());
        assert_eq!(super::try_par_map(0, |_| Some(1u8), 0), Ok(vec![]));
        // Failures in pieces that different threads take: the lowest index is reported.
        let bad = [70_000, 5_000, 60_001];
        let got = super::try_par_map(n, |i| (!bad.contains(&i)).then_some(i), 0);
        assert_eq!(got, Err(5_000));
    }

    #[test]
    fn read_file_reads_every_piece() {
        let dir = std::env::temp_dir().join(format!("batchcrypt-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for len in [0usize, 5, 1 << 20, (3 << 20) + 11] {
            let path = dir.join(format!("f{len}"));
            let data: Vec<u8> = (0..len).map(|i| (i * 7 % 253) as u8).collect();
            std::fs::write(&path, &data).unwrap();
            assert_eq!(super::read_file(&path).unwrap(), data, "{len} bytes");
        }
        assert!(super::read_file(&dir.join("absent")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn zeroed_arrays_are_zero_and_sized() {
        assert!(super::zeroed_arrays::<64>(0).is_empty());
        for n in [1, 3, 1 << 16] {
            let v = super::zeroed_arrays::<64>(n);
            assert_eq!(v.len(), n);
            assert!(v.iter().all(|a| *a == [0u8; 64]));
        }
        let mut v = super::zeroed_arrays::<32>(5);
        v.push([1; 32]);
        assert_eq!(v.len(), 6);
    }
}

//! Memory: admission of GPU work by device memory, and reuse and release of large host buffers.
//!
//! Admission of GPU work by device memory. Every GPU operation states what it will allocate
//! (its buffers' sizes follow from its shape) and reserves that much of a budget before
//! allocating; while concurrent operations hold the budget it waits, so many jobs at once queue
//! for memory instead of failing with out-of-memory. Long-lived buffers (resident MSM bases, the
//! twiddle table) hold their share for as long as they live.
//!
//! Each GPU's budget is measured, not assumed: the device's free memory when the process first
//! opens it, less a margin for the driver's own allocations, or `BATCHCRYPT_GPU_MEMORY` (bytes,
//! or with a K/M/G suffix) to share the GPU with other processes.

use crate::error::{Error, Result};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Caps the GPU memory this process's operations reserve.
pub const MEMORY_ENV: &str = "BATCHCRYPT_GPU_MEMORY";

/// A byte budget shared by concurrent operations.
pub struct MemoryBudget {
    limit: u64,
    state: Mutex<State>,
    freed: Condvar,
}

#[derive(Default, Clone, Copy, Debug)]
struct State {
    used: u64,
    peak: u64,
    waits: u64,
    waited: Duration,
}

/// What a budget has seen: for reports after a run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MemoryStats {
    pub limit: u64,
    pub used: u64,
    /// The most reserved at once.
    pub peak: u64,
    /// Reservations that had to wait for others to finish, and for how long in all.
    pub waits: u64,
    pub waited: Duration,
}

/// Bytes reserved until dropped.
#[must_use = "the reservation is released when dropped"]
pub struct Reservation<'a> {
    budget: &'a MemoryBudget,
    bytes: u64,
}

impl MemoryBudget {
    pub fn new(limit: u64) -> Self {
        MemoryBudget {
            limit,
            state: Mutex::new(State::default()),
            freed: Condvar::new(),
        }
    }

    /// The budget for a device with `free` bytes free now: `BATCHCRYPT_GPU_MEMORY` if set
    /// (at most `free`), else `free` less 5% and 256 MiB for the driver, module images and
    /// per-stream state.
    pub fn for_device(free: u64) -> Result<Self> {
        let margin = free / 20 + (256 << 20);
        let limit = match std::env::var(MEMORY_ENV) {
            Ok(v) => parse_bytes(&v)?.min(free),
            Err(_) => free.saturating_sub(margin),
        };
        Ok(MemoryBudget::new(limit))
    }

    /// Reserves `bytes` for `what`, waiting while others hold the budget. An operation larger
    /// than the whole budget is an error that says so (it could never run).
    pub fn reserve(&self, bytes: u64, what: &str) -> Result<Reservation<'_>> {
        if bytes > self.limit {
            return Err(Error::invalid(format!(
                "{what} needs {} MiB of GPU memory, more than the {} MiB budget (set {MEMORY_ENV} higher, free the GPU, or split the work)",
                bytes >> 20,
                self.limit >> 20
            )));
        }
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if s.used + bytes > self.limit {
            let t = Instant::now();
            s.waits += 1;
            while s.used + bytes > self.limit {
                s = self.freed.wait(s).unwrap_or_else(|p| p.into_inner());
            }
            s.waited += t.elapsed();
        }
        Ok(self.take(&mut s, bytes))
    }

    /// Holds `bytes` at once, over the limit if need be: for memory already allocated (a
    /// long-lived buffer) that later reservations must see.
    pub fn hold(&self, bytes: u64) -> Reservation<'_> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        self.take(&mut s, bytes)
    }

    fn take(&self, s: &mut State, bytes: u64) -> Reservation<'_> {
        s.used += bytes;
        s.peak = s.peak.max(s.used);
        Reservation {
            budget: self,
            bytes,
        }
    }

    pub fn stats(&self) -> MemoryStats {
        let s = *self.state.lock().unwrap_or_else(|p| p.into_inner());
        MemoryStats {
            limit: self.limit,
            used: s.used,
            peak: s.peak,
            waits: s.waits,
            waited: s.waited,
        }
    }

    /// Starts the peak and wait counts afresh (between benchmark runs).
    pub fn reset_stats(&self) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.peak = s.used;
        s.waits = 0;
        s.waited = Duration::ZERO;
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let mut s = self.budget.state.lock().unwrap_or_else(|p| p.into_inner());
        s.used -= self.bytes;
        drop(s);
        self.budget.freed.notify_all();
    }
}

/// Frees a large host buffer off the caller's path: one background thread (never more than one
/// reclaimer at a time, so frees do not compete with the work for the allocator and the kernel)
/// takes values through a short queue; when the queue is full the caller frees it itself, so what
/// awaits release stays bounded.
pub fn free_later<T: Send + 'static>(value: T) {
    use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
    type Garbage = Box<dyn Send>;
    static QUEUE: std::sync::OnceLock<Option<Mutex<SyncSender<Garbage>>>> =
        std::sync::OnceLock::new();
    let queue = QUEUE.get_or_init(|| {
        let (tx, rx) = sync_channel::<Garbage>(4);
        std::thread::Builder::new()
            .name("batchcrypt-reclaim".into())
            .spawn(move || rx.into_iter().for_each(drop))
            .ok()
            .map(|_| Mutex::new(tx))
    });
    let garbage: Garbage = Box::new(value);
    let left = match queue {
        Some(tx) => match tx
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .try_send(garbage)
        {
            Ok(()) => None,
            Err(TrySendError::Full(g) | TrySendError::Disconnected(g)) => Some(g),
        },
        None => Some(garbage),
    };
    drop(left);
}

/// Large host vectors kept for reuse. A fresh allocation's pages fault in on first touch, and on a
/// machine with many cores those faults serialise: filling a new vector of a hundred megabytes
/// can cost more than the work that fills it. A vector taken here keeps its old contents (callers
/// overwrite it whole); at most `keep` idle vectors wait, the others go to the reclaimer.
pub struct VecPool<T> {
    free: Mutex<Vec<Vec<T>>>,
    keep: usize,
}

impl<T: Clone + Send + 'static> VecPool<T> {
    pub const fn new(keep: usize) -> Self {
        VecPool {
            free: Mutex::new(Vec::new()),
            keep,
        }
    }

    /// A vector of `len` elements: the smallest idle one large enough (its elements as left,
    /// `fill` past its old length), else a new one of `fill`s.
    pub fn take(&self, len: usize, fill: T) -> Vec<T> {
        let reused = {
            let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
            (0..free.len())
                .filter(|&i| free[i].capacity() >= len)
                .min_by_key(|&i| free[i].capacity())
                .map(|i| free.swap_remove(i))
        };
        let mut v = reused.unwrap_or_default();
        v.resize(len, fill);
        v
    }

    /// The process's pool of vectors of `T` (keeping 64 idle), for generic code, which cannot
    /// declare a static per type.
    pub fn shared() -> &'static VecPool<T> {
        use std::any::{Any, TypeId};
        type Pools = std::collections::BTreeMap<TypeId, &'static (dyn Any + Send + Sync)>;
        static POOLS: Mutex<Pools> = Mutex::new(Pools::new());
        let mut pools = POOLS.lock().unwrap_or_else(|p| p.into_inner());
        let any: &'static (dyn Any + Send + Sync) = *pools
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Box::leak(Box::new(VecPool::<T>::new(64))));
        any.downcast_ref().expect("keyed by its type")
    }

    /// Returns a vector for later calls.
    pub fn give(&self, v: Vec<T>) {
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        if free.len() < self.keep {
            free.push(v);
        } else {
            drop(free);
            free_later(v);
        }
    }
}

/// "1073741824", "512M", "2G", "64k".
fn parse_bytes(v: &str) -> Result<u64> {
    let v = v.trim();
    let (num, shift) = match v.char_indices().last() {
        Some((i, 'k' | 'K')) => (&v[..i], 10),
        Some((i, 'm' | 'M')) => (&v[..i], 20),
        Some((i, 'g' | 'G')) => (&v[..i], 30),
        _ => (v, 0),
    };
    num.trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .ok_or_else(|| {
            Error::invalid(format!(
                "{MEMORY_ENV}={v:?}: expected bytes, optionally with K, M or G (e.g. 8G)"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_bytes("4096").unwrap(), 4096);
        assert_eq!(parse_bytes("64k").unwrap(), 64 << 10);
        assert_eq!(parse_bytes("512M").unwrap(), 512 << 20);
        assert_eq!(parse_bytes(" 2G ").unwrap(), 2 << 30);
        for bad in ["", "G", "1.5G", "-1", "12X", "99999999999999999999G"] {
            assert!(parse_bytes(bad).is_err(), "{bad:?}");
        }
    }

    /// Vectors come back with their memory: the smallest that fits is reused, at its new
    /// length, and the pool keeps no more than it was told.
    #[test]
    fn vec_pool_reuses_the_smallest_that_fits() {
        let pool = VecPool::<u64>::new(2);
        let mut big = pool.take(1000, 7);
        big[999] = 1;
        let small = pool.take(10, 7);
        let (big_ptr, small_ptr) = (big.as_ptr(), small.as_ptr());
        pool.give(big);
        pool.give(small);
        let v = pool.take(8, 0);
        assert_eq!((v.as_ptr(), v.len()), (small_ptr, 8));
        assert!(v.iter().all(|&x| x == 7), "old contents kept");
        let w = pool.take(1200, 3);
        assert_eq!(w.len(), 1200);
        assert_ne!(w.as_ptr(), big_ptr, "too small to reuse");
        let u = pool.take(500, 3);
        assert_eq!((u.as_ptr(), u.len(), u[499]), (big_ptr, 500, 7));
        for x in [u, v, w] {
            pool.give(x);
        }
        assert_eq!(pool.free.lock().unwrap().len(), 2);
    }

    #[test]
    fn larger_than_the_budget_is_an_error() {
        let b = MemoryBudget::new(100);
        assert!(b.reserve(101, "an MSM").is_err());
        let r = b.reserve(100, "an MSM").unwrap();
        assert_eq!(b.stats().used, 100);
        drop(r);
        assert_eq!(b.stats().used, 0);
    }

    /// Many threads reserving at once never exceed the limit together, all finish, and the
    /// ones that found the budget full waited.
    #[test]
    fn concurrent_reservations_stay_within_the_limit() {
        let b = MemoryBudget::new(1000);
        let live = AtomicU64::new(0);
        let most = AtomicU64::new(0);
        // All start together and hold their memory a moment, so that reservations overlap
        // however fast the machine starts threads.
        let start = std::sync::Barrier::new(16);
        std::thread::scope(|s| {
            for t in 0..16u64 {
                let (b, live, most, start) = (&b, &live, &most, &start);
                s.spawn(move || {
                    start.wait();
                    for i in 0..50 {
                        let bytes = 100 + (t * 37 + i * 11) % 400;
                        let _r = b.reserve(bytes, "work").unwrap();
                        let now = live.fetch_add(bytes, Ordering::SeqCst) + bytes;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_micros(100));
                        live.fetch_sub(bytes, Ordering::SeqCst);
                    }
                });
            }
        });
        let s = b.stats();
        assert!(most.load(Ordering::SeqCst) <= 1000);
        assert!(s.peak <= 1000 && s.peak > 400, "{s:?}");
        assert_eq!(s.used, 0);
        assert!(
            s.waits > 0,
            "16 threads on a budget of about two reservations must wait"
        );
    }

    #[test]
    fn holds_count_against_later_reservations() {
        let b = MemoryBudget::new(100);
        let h = b.hold(80);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| b.reserve(50, "x").map(|_| ()).is_ok());
            std::thread::sleep(Duration::from_millis(50));
            assert_eq!(b.stats().waits, 1, "the reservation waits for the hold");
            drop(h);
            assert!(waiter.join().unwrap());
        });
    }

    /// Every value handed to the reclaimer is dropped, whether it queues or the queue is full.
    #[test]
    fn free_later_drops_everything() {
        static DROPPED: AtomicU64 = AtomicU64::new(0);
        struct Big(#[allow(dead_code)] Vec<u8>);
        impl Drop for Big {
            fn drop(&mut self) {
                std::thread::sleep(Duration::from_millis(2));
                DROPPED.fetch_add(1, Ordering::SeqCst);
            }
        }
        for _ in 0..20 {
            free_later(Big(vec![0; 1 << 20]));
        }
        let t = Instant::now();
        while DROPPED.load(Ordering::SeqCst) < 20 && t.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(DROPPED.load(Ordering::SeqCst), 20);
    }
}

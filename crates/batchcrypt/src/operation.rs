//! Every operation the engine runs, declared once.
//!
//! An [`Operation`] states its cost key, its primitive, the backends that implement it, a typical
//! item (for estimates at a size) and how each backend is measured. [`crate::Engine::run`] plans
//! a batch of it, runs it on the chosen CPU backend or GPUs (a batch split over several GPUs joins
//! the slices' values in order), and reports where it ran: one loop for every primitive.
//! [`crate::registry`] lists them all.

use crate::backend::{Backend, Primitive};
pub use crate::dispatch::Split;
use crate::dispatch::{Calibration, Cost, Location, Workload};
use crate::error::Result;

/// What the engine knows of an operation without running it.
pub struct Operation {
    /// The cost model's key (costs are measured per key and backend).
    pub key: &'static str,
    pub primitive: Primitive,
    /// One line for listings.
    pub about: &'static str,
    /// The CPU backends that implement it, in the order to prefer them.
    pub cpu: &'static [Backend],
    /// Whether it has a GPU path.
    pub gpu: bool,
    /// How a batch spreads over several GPUs.
    pub split: Split,
    /// A typical item: bytes in, bytes out and work units (for estimates at a batch size).
    pub item: (u64, u64, u64),
    /// Measures one backend on data where it runs (CPU backends on one thread).
    pub calibrate: fn(Backend) -> Result<Cost>,
    /// Measures one CPU backend, all threads, on data streaming from DRAM (seconds per unit),
    /// where the operation's speed depends on it.
    pub streaming: Option<fn(Backend) -> Result<f64>>,
}

impl Operation {
    /// An operation with a GPU path whose items split over GPUs ([`Split::Items`]) and no
    /// measurement beyond the cache; operations that differ change those fields
    /// (`Operation { split: Split::No, ..Operation::new(..) }`).
    pub const fn new(
        key: &'static str,
        primitive: Primitive,
        about: &'static str,
        cpu: &'static [Backend],
        item: (u64, u64, u64),
        calibrate: fn(Backend) -> Result<Cost>,
    ) -> Operation {
        Operation {
            key,
            primitive,
            about,
            cpu,
            gpu: true,
            split: Split::Items,
            item,
            calibrate,
            streaming: None,
        }
    }

    /// Every backend that implements it in a build with kernels: the CPU ones, then the GPU.
    pub fn backends(&self) -> impl Iterator<Item = Backend> + '_ {
        self.cpu
            .iter()
            .copied()
            .chain(self.gpu.then_some(Backend::Cuda))
    }

    pub fn implements(&self, b: Backend) -> bool {
        self.backends().any(|x| x == b)
    }

    /// A batch of `items` typical items in host memory.
    pub fn typical(&self, items: u64) -> Workload {
        let (bytes_in, bytes_out, units) = self.item;
        Workload {
            op: self.key,
            items,
            units: units * items,
            bytes_in: bytes_in * items,
            bytes_out: bytes_out * items,
            location: Location::Host,
        }
    }

    /// A batch of `items` items of this operation, from its sizes.
    pub fn workload(&self, items: u64, bytes_in: u64, bytes_out: u64, units: u64) -> Workload {
        Workload {
            op: self.key,
            items,
            units,
            bytes_in,
            bytes_out,
            location: Location::Host,
        }
    }
}

impl Calibration for Operation {
    fn in_cache(&self, backend: Backend) -> Result<Cost> {
        (self.calibrate)(backend)
    }

    fn streaming(&self, backend: Backend) -> Option<Result<f64>> {
        let f = self.streaming?;
        (!backend.is_gpu()).then(|| f(backend))
    }
}

/// A batch's values from its GPU slices, joined in slice order.
pub trait Join: Sized + Send {
    fn join(parts: Vec<Self>) -> Self;
}

impl<T: Send> Join for Vec<T> {
    fn join(mut parts: Vec<Self>) -> Self {
        if parts.len() == 1 {
            return parts.pop().unwrap_or_default();
        }
        let mut all = Vec::with_capacity(parts.iter().map(Vec::len).sum());
        for p in parts {
            all.extend(p);
        }
        all
    }
}

impl Join for () {
    fn join(_: Vec<Self>) -> Self {}
}

/// The value of an operation that never splits over GPUs (one GPU computes all of it).
pub struct Whole<T>(pub T);

impl<T: Send> Join for Whole<T> {
    fn join(mut parts: Vec<Self>) -> Self {
        debug_assert_eq!(
            parts.len(),
            1,
            "an operation that does not split has one part"
        );
        parts.swap_remove(0)
    }
}

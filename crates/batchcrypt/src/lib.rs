//! batchcrypt: batches of the same cryptographic operation on the fastest hardware present —
//! NVIDIA GPUs through CUDA, and CPU extensions (SHA-NI, AVX2, AVX-512) — behind one API.
//!
//! ```
//! use batchcrypt::{Engine, sha256::Mode};
//! let engine = Engine::new()?;
//! let nodes = vec![7u8; 64 * 1000]; // 1000 merkle nodes
//! let out = engine.sha256().hash_fixed(&nodes, 64, Mode::Double)?;
//! assert_eq!(out.value.len(), 1000);
//! println!("ran on {}", out.backend);
//! # Ok::<(), batchcrypt::Error>(())
//! ```
//!
//! Layout: `backend` (what hardware exists — CPU extensions and every GPU — and how to name it),
//! `dispatch` (which backend, and which GPUs, run a batch), `pipeline` (host↔GPU streaming),
//! `memory` (GPU memory admission, host buffer reuse), one module per primitive (`sha256`,
//! `secp256k1`, `p256`, `sm2`, `sm3`, `aes`, `bn254`; `ecdsa` is the scheme over any curve), and
//! the protocols and applications over them: `psi` (ECDH-PSI over SM2), `groth16` (circom/snarkjs
//! proofs), `bitcoin` (block validation).

pub mod aes;
pub mod backend;
pub mod bitcoin;
pub mod bls12_381;
pub mod bn254;
pub mod calibration;
pub mod dispatch;
pub mod ecdsa;
#[cfg(feature = "emulation")]
pub mod emulation;
mod error;
pub mod groth16;
pub mod memory;
pub mod messages;
pub mod msm;
pub mod ntt;
pub mod operation;
pub mod output;
pub mod p256;
pub mod pipeline;
pub mod psi;
pub mod registry;
pub mod secp256k1;
pub mod sha256;
pub mod sig;
pub mod sm2;
pub mod sm3;

pub use backend::{Backend, BackendChoice, Primitive};
pub use error::{Error, Result};

/// Kernel images built from `kernels/` by build.rs (each `None`, and `BUILT` false, when the build
/// had no nvcc or the `cuda` feature off; `NOT_BUILT` says which).
pub mod kernels {
    include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
}

use std::sync::OnceLock;

/// A result together with the backend that produced it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output<T> {
    pub value: T,
    pub backend: Backend,
    /// CPU threads used (1 for the GPU).
    pub threads: usize,
    /// The GPUs that ran it (indices among the process's GPUs; empty on the CPU).
    pub gpus: Vec<usize>,
}

impl<T> Output<T> {
    /// The same result, its value transformed.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Output<U> {
        Output {
            value: f(self.value),
            backend: self.backend,
            threads: self.threads,
            gpus: self.gpus,
        }
    }
}

/// The entry point: holds the backend choice and the dispatcher's measurements.
pub struct Engine {
    dispatcher: dispatch::Dispatcher,
}

impl Engine {
    /// An engine with the choice from `BATCHCRYPT_BACKEND` (default `auto`).
    pub fn new() -> Result<Self> {
        Ok(Self::with_backend(BackendChoice::from_env()?))
    }

    /// An engine with this choice, starting from the machine's saved calibration where there is
    /// one ([`calibration`]).
    pub fn with_backend(choice: BackendChoice) -> Self {
        Self::from_saved(dispatch::Dispatcher::new(choice))
    }

    /// An engine that measures every backend itself, whatever calibration is saved: what
    /// `batchcrypt calibrate` runs before [`Engine::save_calibration`].
    pub fn calibrating(choice: BackendChoice) -> Self {
        Engine {
            dispatcher: dispatch::Dispatcher::new(choice),
        }
    }

    fn from_saved(dispatcher: dispatch::Dispatcher) -> Self {
        if let Some(m) = calibration::load() {
            dispatcher.restore(m);
        }
        Engine { dispatcher }
    }

    /// Saves everything this engine's dispatcher has measured, for later processes on this
    /// machine; returns the file's path.
    pub fn save_calibration(&self) -> Result<std::path::PathBuf> {
        calibration::save(&self.dispatcher.measurements())
    }

    /// An engine that uses only the GPUs `gpus` lists (indices among the process's GPUs, in the
    /// order `batchcrypt info` lists them). Which GPUs the process sees at all is
    /// `BATCHCRYPT_DEVICES`' choice.
    pub fn with_gpus(choice: BackendChoice, gpus: &[usize]) -> Self {
        Self::from_saved(dispatch::Dispatcher::with_gpus(choice, Some(gpus.to_vec())))
    }

    /// An engine that runs everything on `backend` alone, on the thread's current GPU for the
    /// GPU: what a calibration measures (the dispatcher calibrates each GPU with it current).
    pub fn measuring(backend: Backend) -> Self {
        let choice = BackendChoice::Exact(backend);
        let gpus = backend.is_gpu().then(|| vec![backend::gpu::current()]);
        Engine {
            dispatcher: dispatch::Dispatcher::with_gpus(choice, gpus),
        }
    }

    /// A process-wide engine with the environment's choice (`auto` if the variable is malformed).
    pub fn global() -> &'static Engine {
        static E: OnceLock<Engine> = OnceLock::new();
        E.get_or_init(|| {
            Engine::new().unwrap_or_else(|_| Engine::with_backend(BackendChoice::Auto))
        })
    }

    pub fn dispatcher(&self) -> &dispatch::Dispatcher {
        &self.dispatcher
    }

    /// Plans a batch `w` of `op` (CPU backends tried in `cpu_order`, the operation's own order
    /// unless the batch's shape changes it) and runs it: `cpu(backend, threads)` on a CPU backend,
    /// or `gpu(items, gpus)` on the GPUs, as the operation splits ([`operation::Split`]): each
    /// GPU over its slice of the items (values joined in order, `gpus` that GPU alone), or once
    /// over all items with the first GPU current and `gpus` all the plan's. The batch's time goes
    /// back to the dispatcher ([`dispatch::Dispatcher::observe`]).
    pub(crate) fn run<T: operation::Join>(
        &self,
        op: &'static operation::Operation,
        w: &dispatch::Workload,
        cpu_order: &[Backend],
        cpu: impl FnOnce(Backend, usize) -> Result<T>,
        gpu: impl Fn(std::ops::Range<usize>, &dispatch::GpuShares) -> Result<T> + Sync,
    ) -> Result<Output<T>> {
        use operation::Split;
        let plan = self.dispatcher.plan(w, cpu_order, op.gpu, op)?;
        let n = w.items as usize;
        let started = std::time::Instant::now();
        let value = match (plan.backend.is_gpu(), op.split) {
            (false, _) => cpu(plan.backend, plan.threads)?,
            (true, Split::Items) => T::join(plan.on_gpus(n, 1, |r| {
                gpu(r, &dispatch::GpuShares::one(backend::gpu::current()))
            })?),
            (true, Split::Itself) => plan.on_gpu(|| gpu(0..n, &plan.gpus))?,
            (true, Split::No) => {
                plan.on_gpu(|| gpu(0..n, &dispatch::GpuShares::one(plan.gpus.first())))?
            }
        };
        self.dispatcher.observe(w, &plan, started.elapsed());
        Ok(Output {
            value,
            backend: plan.backend,
            threads: plan.threads,
            gpus: plan.ran_on(n, op.split, 1),
        })
    }

    /// What the dispatcher would do with `items` typical items of `op` at `location`: the best
    /// CPU plan and the GPU plan with their estimated times (measuring each backend on first
    /// use). `batchcrypt calibrate` prints these for every operation of the registry.
    pub fn estimates(
        &self,
        op: &'static operation::Operation,
        items: u64,
        location: dispatch::Location,
    ) -> [dispatch::Plan; 2] {
        let w = dispatch::Workload {
            location,
            ..op.typical(items)
        };
        let cpu = self.dispatcher.best_cpu(&w, op.cpu, op);
        self.dispatcher.estimates(&w, cpu, op)
    }

    /// [`Self::run`] for a batch that also writes `out`: where the operation splits its items over
    /// GPUs, each slice (a multiple of `align` items) writes its part of `out` (`per_item`
    /// elements an item); otherwise the CPU backend or the GPU path gets all of it.
    pub(crate) fn run_into<T: operation::Join, O: Send>(
        &self,
        op: &'static operation::Operation,
        w: &dispatch::Workload,
        cpu_order: &[Backend],
        out: &mut [O],
        (per_item, align): (usize, usize),
        cpu: impl FnOnce(Backend, usize, &mut [O]) -> Result<T>,
        gpu: impl Fn(std::ops::Range<usize>, &mut [O], &dispatch::GpuShares) -> Result<T> + Sync,
    ) -> Result<Output<T>> {
        use operation::Split;
        let plan = self.dispatcher.plan(w, cpu_order, op.gpu, op)?;
        let n = w.items as usize;
        let out_items = out.len() / per_item.max(1);
        let started = std::time::Instant::now();
        let value = match (plan.backend.is_gpu(), op.split) {
            (false, _) => cpu(plan.backend, plan.threads, out)?,
            (true, Split::Items) => T::join(plan.on_gpus_into(out, per_item, align, |r, o| {
                gpu(r, o, &dispatch::GpuShares::one(backend::gpu::current()))
            })?),
            (true, Split::Itself) => plan.on_gpu(|| gpu(0..n, out, &plan.gpus))?,
            (true, Split::No) => {
                let one = dispatch::GpuShares::one(plan.gpus.first());
                plan.on_gpu(|| gpu(0..n, out, &one))?
            }
        };
        self.dispatcher.observe(w, &plan, started.elapsed());
        Ok(Output {
            value,
            backend: plan.backend,
            threads: plan.threads,
            // The items `on_gpus_into` split: the output's, which may be finer than the workload's.
            gpus: plan.ran_on(out_items, op.split, align),
        })
    }

    pub fn sha256(&self) -> sha256::Sha256<'_> {
        sha256::Sha256 { engine: self }
    }

    pub fn secp256k1(&self) -> secp256k1::Secp256k1<'_> {
        secp256k1::Secp256k1 { engine: self }
    }

    /// ECDSA verification on curve `C` (`ecdsa::<p256::P256>()`, `ecdsa::<secp256k1::Secp256k1Curve>()`).
    pub fn ecdsa<C: ecdsa::Curve>(&self) -> ecdsa::Ecdsa<'_, C> {
        ecdsa::Ecdsa {
            engine: self,
            curve: std::marker::PhantomData,
        }
    }

    pub fn sm2(&self) -> sm2::Sm2<'_> {
        sm2::Sm2 { engine: self }
    }

    pub fn sm3(&self) -> sm3::Sm3<'_> {
        sm3::Sm3 { engine: self }
    }

    pub fn aes(&self) -> aes::Aes<'_> {
        aes::Aes { engine: self }
    }

    /// Groth16 proofs for circom/snarkjs circuits over BN254.
    pub fn groth16(&self) -> groth16::Groth16<'_> {
        groth16::Groth16 { engine: self }
    }
}

/// A one-paragraph description of the hardware found, for `batchcrypt info` and the benchmarks.
pub fn describe_hardware() -> String {
    let f = backend::cpu::features();
    let mut s = format!(
        "CPU: {} threads; sha-ni={} avx2={} avx512={} aes-ni={} vaes={}\n",
        backend::cpu::threads(),
        f.sha_ni,
        f.avx2,
        f.avx512,
        f.aes_ni,
        f.vaes
    );
    match backend::gpu::infos() {
        Ok(gpus) => {
            for (index, i) in gpus.iter().enumerate() {
                s += &format!(
                    "GPU {index}: {} (device {}, sm_{}{}, {}), {} SMs, {:.1} GiB, {} MHz\n",
                    i.name,
                    i.ordinal,
                    i.compute_capability.0,
                    i.compute_capability.1,
                    i.pci_bus_id,
                    i.multiprocessors,
                    i.total_memory as f64 / (1u64 << 30) as f64,
                    i.clock_khz / 1000
                );
            }
        }
        Err(why) => s += &format!("GPU: none ({why})\n"),
    }
    s
}

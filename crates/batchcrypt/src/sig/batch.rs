//! A signature batch on the engine, the same for every scheme whose GPU items need the scalar
//! algebra (ECDSA on any curve, BIP340): the measured cost model, the run on the CPU backend or
//! the GPU, and the calibration of both.

use super::items::{self, device::Kernel, Encoded, HostItem};
use super::{Reason, Verdicts};
use crate::backend::{Backend, BackendChoice};
use crate::dispatch::{Cost, Workload};
use crate::error::{Error, Result};
use crate::operation::Operation;
use crate::{Engine, Output};

/// Bytes of a batch's variable-length items, summed on all cores: for a batch of 2^24 items that
/// is a pass over 256 MiB of slice headers, which the GPUs would otherwise wait for.
pub(crate) fn total_len(items: &[&[u8]]) -> u64 {
    use rayon::prelude::*;
    items
        .par_iter()
        .with_min_len(1 << 16)
        .map(|b| b.len() as u64)
        .sum()
}

/// From this many items a signature operation's CPU cost is measured (once per process, about 400
/// verifications) before planning: a signature costs as much as tens of kilobytes of hashing, so
/// the dispatcher's by-the-byte guess would keep batches of hundreds of signatures on one thread.
const MEASURE_MIN_ITEMS: usize = 64;

/// The batch as the cost model sees it; from [`MEASURE_MIN_ITEMS`] items the cost of the
/// operation's first CPU backend is measured first where the CPU may run it.
fn measured_workload(engine: &Engine, op: &'static Operation, n: usize, bytes_in: u64) -> Workload {
    let d = engine.dispatcher();
    if let Some(&cpu) = op.cpu.first() {
        let may_run_on_cpu = match d.choice() {
            BackendChoice::Auto | BackendChoice::Cpu => true,
            BackendChoice::Exact(b) => b == cpu,
            BackendChoice::Gpu => false,
        };
        if n >= MEASURE_MIN_ITEMS && may_run_on_cpu {
            // Unmeasurable only if the sample batch itself fails, which leaves the plain estimate.
            let _ = d.cost(op.key, cpu, op);
        }
    }
    op.workload(n as u64, bytes_in, n as u64, n as u64)
}

/// Verifies `n` items of `op` (`bytes_in` bytes in all): on the CPU backend item by item
/// (`cpu(i)`), on the GPU through `kernel` with items `item(i)`, or copied from `prepared` where
/// the caller encoded them ahead (the same items, in order).
pub(crate) fn verify(
    engine: &Engine,
    op: &'static Operation,
    n: usize,
    bytes_in: u64,
    cpu: impl Fn(usize) -> std::result::Result<(), Reason> + Sync + Send,
    kernel: &Kernel,
    item: impl Fn(usize) -> std::result::Result<HostItem, Reason> + Sync,
    prepared: Option<&[&Encoded]>,
) -> Result<Output<Verdicts>> {
    let w = measured_workload(engine, op, n, bytes_in);
    let out = engine.run(
        op,
        &w,
        op.cpu,
        |_, threads| Ok(crate::backend::cpu::par_map(1, n, threads, &cpu)),
        |r, _| match prepared {
            None => items::device::verify_host_items(kernel, r.len(), |i| item(r.start + i)),
            Some(pieces) => {
                let fill = items::from_pieces(pieces, r.start, r.len()).ok_or_else(|| {
                    Error::invalid(format!("prepared items do not cover the batch of {n}"))
                })?;
                items::device::verify_pieces(kernel, r.len(), &fill)
            }
        },
    )?;
    Ok(out.map(|results| Verdicts { results }))
}

/// Whether a batch of `n` typical items of `op` would run on a GPU now: worth [`Encoded`]
/// items where the caller can encode them beforehand, off the batch's path.
pub(crate) fn plans_gpu(engine: &Engine, op: &'static Operation, n: usize) -> bool {
    let w = measured_workload(engine, op, n, op.typical(n as u64).bytes_in);
    engine
        .dispatcher()
        .plan(&w, op.cpu, op.gpu, op)
        .is_ok_and(|p| p.backend.is_gpu())
}

pub(crate) fn not_implemented(b: Backend, op: &str) -> Error {
    Error::BackendUnavailable {
        backend: b.name().into(),
        why: format!("operation {op} is not implemented by this backend"),
    }
}

/// Measures one backend of `op` on `samples` valid signatures (compute only), a small and a
/// larger batch fitted by [`crate::dispatch::fit`]: a CPU backend on one thread, where
/// `cpu_valid(k)` verifies the first k samples; the GPU end to end, where `gpu_valid(engine, n)`
/// verifies n items cycling through the samples (transfers of these small batches are
/// negligible next to the math).
pub(crate) fn calibrate(
    op: &'static Operation,
    backend: Backend,
    samples: usize,
    cpu_valid: impl Fn(usize) -> bool,
    gpu_valid: impl Fn(&Engine, usize) -> Result<bool>,
) -> Result<Cost> {
    let valid = |ok: bool| {
        ok.then_some(())
            .ok_or_else(|| Error::invalid("calibration sample failed to verify"))
    };
    if backend.is_gpu() {
        const LARGE: usize = 1 << 14;
        let engine = Engine::measuring(backend);
        return crate::dispatch::fit_sizes(1, LARGE, 1, |n| valid(gpu_valid(&engine, n)?));
    }
    if !op.cpu.contains(&backend) {
        return Err(not_implemented(backend, op.key));
    }
    crate::dispatch::fit_sizes(4, samples, 1, |n| valid(cpu_valid(n)))
}

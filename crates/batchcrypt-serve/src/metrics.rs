//! The service's Prometheus metrics, served as text on `/metrics` of their own HTTP listener.
//!
//! Batched operations: items waiting per operation, the sizes of the batches formed, each
//! request's latency per stage (waiting for its batch, the batch's run, the whole), requests by
//! status code, and the seconds batches ran on each backend (so `rate()` of the GPU's is its
//! utilization by this service). Proofs: jobs by state, key evictions, resident key bytes. GPU
//! memory (limit, in use, peak per GPU) is read from the engine's budgets at each scrape, and so
//! is how many times its estimate each backend's recent batches took (what the dispatcher weighs
//! its choices by under load).

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

/// Declares the service's operations once: the enum, its list and each one's name in metrics
/// (`requests` by `op` and `code`, the batch queues' `op`). The frames' operation tags
/// ([`crate::frames::Kind`]) name the batched ones by the same variants.
macro_rules! operations {
    ($($op:ident => $name:literal),* $(,)?) => {
        #[derive(Clone, Copy, PartialEq, Eq, Debug)]
        pub enum Op {
            $($op),*
        }
        impl Op {
            pub const ALL: &'static [Op] = &[$(Op::$op),*];
            pub fn name(self) -> &'static str {
                match self {
                    $(Op::$op => $name),*
                }
            }
        }
    };
}

operations! {
    Aes => "aes",
    CancelJob => "cancel_job",
    Echo => "echo",
    GetJob => "get_job",
    Hash => "hash",
    JobTrace => "job_trace",
    RegisterCircuit => "register_circuit",
    RegisterSharedMemory => "register_shared_memory",
    Sm2HashToCurveMul => "sm2_hash_to_curve_mul",
    Sm2MulCompressed => "sm2_mul_compressed",
    SubmitProof => "submit_proof",
    UnregisterSharedMemory => "unregister_shared_memory",
    VerifyBlock => "verify_block",
    VerifyEcdsa => "verify_ecdsa",
    VerifySchnorr => "verify_schnorr",
    VerifySm2 => "verify_sm2",
    VerifyTransactions => "verify_transactions",
    WaitProof => "wait_proof",
}

pub type Labels = Vec<(&'static str, String)>;
type Histograms = Family<Labels, Histogram, fn() -> Histogram>;

pub struct Metrics {
    registry: Registry,
    pub queued_items: Family<Labels, Gauge>,
    pub batch_items: Histograms,
    pub stage_seconds: Histograms,
    pub requests: Family<Labels, Counter>,
    pub busy_seconds: Family<Labels, Counter<f64, AtomicU64>>,
    pub jobs: Family<Labels, Gauge>,
    pub key_evictions: Counter,
    pub resident_key_bytes: Gauge,
    gpu_memory: Family<Labels, Gauge>,
    slowdowns: Family<Labels, Gauge<f64, AtomicU64>>,
}

fn item_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1.0, 2.0, 25)) // 1 .. 2^24 items
}

fn seconds_histogram() -> Histogram {
    Histogram::new(exponential_buckets(25e-6, 2.0, 22)) // 25 µs .. ~52 s
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("batchcrypt");
        let m = Metrics {
            queued_items: Family::default(),
            batch_items: Family::new_with_constructor(item_histogram),
            stage_seconds: Family::new_with_constructor(seconds_histogram),
            requests: Family::default(),
            busy_seconds: Family::default(),
            jobs: Family::default(),
            key_evictions: Counter::default(),
            resident_key_bytes: Gauge::default(),
            gpu_memory: Family::default(),
            slowdowns: Family::default(),
            registry: Registry::default(),
        };
        registry.register(
            "queue_items",
            "Items waiting for a batch, by operation",
            m.queued_items.clone(),
        );
        registry.register(
            "batch_items",
            "Items in each batch formed, by operation",
            m.batch_items.clone(),
        );
        registry.register(
            "stage_seconds",
            "Request latency by operation and stage (queue: waiting for a batch; run: the batch; total: arrival to the batch's end; sent: a request stream's message read to its reply handed to the connection)",
            m.stage_seconds.clone(),
        );
        registry.register(
            "requests",
            "Requests by operation and gRPC status code",
            m.requests.clone(),
        );
        registry.register(
            "busy_seconds",
            "Seconds batches ran, by operation and backend (rate() of the GPU's: its utilization by this service)",
            m.busy_seconds.clone(),
        );
        registry.register("proof_jobs", "Proof jobs by state", m.jobs.clone());
        registry.register(
            "key_evictions",
            "Proving keys evicted from GPU memory to make room for another",
            m.key_evictions.clone(),
        );
        registry.register(
            "resident_key_bytes",
            "GPU memory held by resident proving keys",
            m.resident_key_bytes.clone(),
        );
        registry.register(
            "gpu_memory_bytes",
            "GPU memory budget per GPU: limit, in use and peak",
            m.gpu_memory.clone(),
        );
        registry.register(
            "backend_slowdown",
            "How many times their estimates a backend's recent batches took, by library operation and backend (the dispatcher multiplies its estimates by it)",
            m.slowdowns.clone(),
        );
        Metrics { registry, ..m }
    }
}

impl Metrics {
    /// The text exposition format, GPU memory and `engine`'s slowdowns read now.
    pub fn render(&self, engine: &batchcrypt::Engine) -> String {
        for (op, backend, factor) in engine.dispatcher().slowdowns() {
            self.slowdowns
                .get_or_create(&vec![("op", op.into()), ("backend", backend.name().into())])
                .set(factor);
        }
        for (gpu, s) in batchcrypt::backend::gpu::memory_stats().iter().enumerate() {
            for (kind, v) in [("limit", s.limit), ("in_use", s.used), ("peak", s.peak)] {
                self.gpu_memory
                    .get_or_create(&vec![("gpu", gpu.to_string()), ("kind", kind.into())])
                    .set(v as i64);
            }
        }
        let mut out = String::new();
        encode(&mut out, &self.registry).expect("writing to a String does not fail");
        out
    }

    pub fn op(op: &str) -> Labels {
        vec![("op", op.to_string())]
    }

    pub fn stage(&self, op: &str, stage: &'static str, seconds: f64) {
        self.stage_histogram(op, stage).observe(seconds);
    }

    /// The histogram of an operation's stage, for a caller that observes many values at once (a
    /// batch's requests) without looking it up for each.
    pub fn stage_histogram(&self, op: &str, stage: &'static str) -> Histogram {
        self.stage_seconds
            .get_or_create(&vec![("op", op.to_string()), ("stage", stage.to_string())])
            .clone()
    }
}

/// Serves `/metrics` on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    metrics: std::sync::Arc<Metrics>,
    engine: std::sync::Arc<batchcrypt::Engine>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let (m, engine) = (metrics.clone(), engine.clone());
            async move {
                (
                    [(
                        "content-type",
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    )],
                    m.render(&engine),
                )
            }
        }),
    );
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use batchcrypt::backend::{Backend, BackendChoice};
    use batchcrypt::dispatch::{GpuShares, Plan};
    use std::time::Duration;

    #[test]
    fn a_scrape_shows_what_the_dispatcher_weighs_its_choices_by() {
        let engine = batchcrypt::Engine::with_backend(BackendChoice::Auto);
        let metrics = Metrics::default();
        assert!(!metrics
            .render(&engine)
            .contains("batchcrypt_backend_slowdown{"));
        let op = batchcrypt::registry::find("sha256d-64").expect("SHA256d of 64 bytes");
        let plan = Plan {
            backend: Backend::Cuda,
            threads: 1,
            estimate_s: Some(1e-3),
            gpus: GpuShares::default(),
        };
        // A batch four times its estimate: a quarter of its logarithm enters the mean.
        (engine.dispatcher()).observe(&op.typical(1 << 15), &plan, Duration::from_millis(4));
        let text = metrics.render(&engine);
        let value: f64 = text
            .lines()
            .find_map(|l| {
                l.strip_prefix("batchcrypt_backend_slowdown{op=\"sha256d-64\",backend=\"cuda\"} ")
            })
            .unwrap_or_else(|| panic!("no slowdown in {text}"))
            .parse()
            .unwrap();
        assert!((value - 4f64.powf(0.25)).abs() < 0.01, "{value}");
    }
}

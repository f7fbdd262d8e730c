//! Estimates corrected by what batches took.
//!
//! A backend's cost is measured on idle hardware, alone. Under load its batches can take several
//! times that: a server's connections hold the cores a CPU batch was priced on, other batches
//! queue on the GPU. Where the two estimates are close (a hash batch of tens of thousands of
//! items costs the CPU about what it costs the GPU from host memory) the idle figures choose
//! whichever measured a little faster, and a CPU so chosen keeps batches while the load takes its
//! cores. So each operation keeps, per backend, a running mean of how long its batches took
//! against their estimates (in logarithms: a batch twice as slow weighs as one twice as fast), and
//! the dispatcher compares estimates times those ratios: the backend the load slows more loses.
//! A ratio not refreshed fades towards 1, so a backend passed over is tried again once the load
//! may have gone. Fading alone is slow to forget a burst: batches on the GPU held up for a moment
//! by a loaded CPU (a server's thousands of connections) read as twenty times their estimate,
//! and the CPU then kept every batch, slow as it was, for the many seconds the fade took. So a
//! backend passed over that would win on its idle estimate is also probed with one batch now and
//! then: again soon while its probes come in faster than its record, ever more rarely while they
//! confirm it.

use super::Plan;
use crate::backend::Backend;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Weight of a batch's ratio in the running mean: a few batches settle it, and one outlier (a
/// preempted thread, page faults on a new buffer) moves it by a quarter of its logarithm.
const WEIGHT: f64 = 0.25;

/// How far a batch's ratio counts from the running mean (that many times above or below it):
/// one outlier moves the mean by at most this to the power [`WEIGHT`], while a backend that
/// stays slower still reaches its ratio in a few batches. Bounded around the mean, not around 1:
/// a bound around 1 held a server's CPU hash batches at "8x" while they took more,
/// and the CPU kept every batch of a run.
const STEP: f64 = 8.0;

/// Time for a ratio not refreshed to fade halfway (in its logarithm) towards 1.
pub const HALF_LIFE: Duration = Duration::from_secs(4);

/// Batches estimated shorter than this are not counted: the call's own costs outside the model
/// (allocations, a thread's wake-up) would read as the backend's slowdown.
pub const MIN_ESTIMATE_S: f64 = 20e-6;

/// The shortest wait before a backend passed over is probed: the first after its record was last
/// refreshed, and each after a probe that came in faster than the record. Each probe that does
/// not doubles the wait, up to [`HALF_LIFE`], past which the fade does the work.
pub const PROBE_AFTER: Duration = Duration::from_millis(100);

/// One operation's record of one backend.
#[derive(Clone, Copy)]
struct Record {
    /// The mean log ratio of measured to estimated time, as of `at`.
    ln: f64,
    /// When a batch last refreshed `ln`.
    at: Instant,
    /// When a batch last refreshed `ln` or was sent to probe the backend.
    tried: Instant,
    /// How long after `tried` the next probe may go.
    wait: Duration,
}

impl Record {
    /// What is left at `now` of the mean log ratio.
    fn left(&self, now: Instant) -> f64 {
        self.ln * fade(now.saturating_duration_since(self.at))
    }

    fn probe_due(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.tried) >= self.wait
    }
}

/// Per operation and backend, what its batches took against their estimates.
#[derive(Default)]
pub(crate) struct Observed {
    records: Mutex<HashMap<(&'static str, Backend), Record>>,
}

/// What `backend`'s estimates for `op` are multiplied by at `now` (1 where nothing was observed).
fn factor_in(
    records: &HashMap<(&'static str, Backend), Record>,
    op: &'static str,
    backend: Backend,
    now: Instant,
) -> f64 {
    records
        .get(&(op, backend))
        .map_or(1.0, |r| r.left(now).exp())
}

/// The share of a log ratio left after `age` without a refresh.
fn fade(age: Duration) -> f64 {
    0.5f64.powf(age.as_secs_f64() / HALF_LIFE.as_secs_f64())
}

impl Observed {
    fn records(&self) -> std::sync::MutexGuard<'_, HashMap<(&'static str, Backend), Record>> {
        self.records.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// [`factor_in`] of the records as they stand.
    #[cfg(test)]
    pub fn factor(&self, op: &'static str, backend: Backend, now: Instant) -> f64 {
        factor_in(&self.records(), op, backend, now)
    }

    /// Every factor at `now`, by operation and backend.
    pub fn factors(&self, now: Instant) -> Vec<(&'static str, Backend, f64)> {
        let mut all: Vec<_> = (self.records().iter())
            .map(|(&(op, b), r)| (op, b, r.left(now).exp()))
            .collect();
        all.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        all
    }

    /// Counts a batch of `op` on `backend` estimated at `estimate_s` that took `took`.
    pub fn observe(
        &self,
        op: &'static str,
        backend: Backend,
        estimate_s: f64,
        took: Duration,
        now: Instant,
    ) {
        let took_s = took.as_secs_f64();
        if !(estimate_s >= MIN_ESTIMATE_S && took_s > 0.0) {
            return;
        }
        let mut records = self.records();
        let r = records.entry((op, backend)).or_insert(Record {
            ln: 0.0,
            at: now,
            tried: now,
            wait: PROBE_AFTER,
        });
        let old = r.left(now);
        let ln = (took_s / estimate_s)
            .ln()
            .clamp(old - STEP.ln(), old + STEP.ln());
        if ln < old {
            r.wait = PROBE_AFTER;
        }
        (r.ln, r.at, r.tried) = (old + WEIGHT * (ln - old), now, now);
    }

    /// The plan of `plans` with the lowest estimate times its backend's factor; plans without an
    /// estimate are not chosen. Except, now and then, a plan passed over whose own estimate
    /// is below that (it would win were its record forgotten): a probe. The plan keeps its own
    /// estimate, which its batch's time is later compared with.
    pub fn fastest(
        &self,
        op: &'static str,
        plans: impl IntoIterator<Item = Plan>,
        now: Instant,
    ) -> Option<Plan> {
        let mut records = self.records();
        let plans: Vec<(f64, Plan)> = (plans.into_iter())
            .filter_map(|p| Some((p.estimate_s?, p)))
            .collect();
        let (cost, chosen) = (plans.iter())
            .map(|&(e, p)| (e * factor_in(&records, op, p.backend, now), p))
            .min_by(|a, b| a.0.total_cmp(&b.0))?;
        let probe = (plans.iter())
            .filter(|&&(e, p)| p.backend != chosen.backend && e < cost)
            .map(|&(_, p)| p)
            .find(|p| {
                records
                    .get(&(op, p.backend))
                    .is_some_and(|r| r.probe_due(now))
            });
        if let Some(p) = probe {
            if let Some(r) = records.get_mut(&(op, p.backend)) {
                r.tried = now;
                r.wait = (2 * r.wait).min(HALF_LIFE);
            }
            return Some(p);
        }
        // A backend chosen on its merits is probed promptly once passed over again.
        if let Some(r) = records.get_mut(&(op, chosen.backend)) {
            r.wait = PROBE_AFTER;
        }
        Some(chosen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::GpuShares;

    const OP: &str = "sha256d-64";

    fn plan(backend: Backend, estimate_s: f64) -> Plan {
        Plan {
            backend,
            threads: 1,
            estimate_s: Some(estimate_s),
            gpus: GpuShares::default(),
        }
    }

    /// A CPU estimated a little faster than the GPU, as a mid-sized hash batch is.
    fn close() -> [Plan; 2] {
        [plan(Backend::Avx512, 200e-6), plan(Backend::Cuda, 240e-6)]
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// `n` batches, one every half millisecond from `t0`, each planned by `o` among [`close`]'s
    /// plans and taking its estimate times `slow(offset, backend)`; `each(offset, backend)` after
    /// each is counted.
    fn simulate(
        o: &Observed,
        t0: Instant,
        n: u32,
        slow: impl Fn(Duration, Backend) -> f64,
        mut each: impl FnMut(Duration, Backend),
    ) {
        for i in 0..n {
            let at = Duration::from_micros(500) * i;
            let p = o.fastest(OP, close(), t0 + at).unwrap();
            let est = p.estimate_s.unwrap();
            let took = Duration::from_secs_f64(est * slow(at, p.backend));
            o.observe(OP, p.backend, est, took, t0 + at);
            each(at, p.backend);
        }
    }

    #[test]
    fn unobserved_estimates_choose_as_measured() {
        let o = Observed::default();
        let now = Instant::now();
        assert_eq!(o.factor(OP, Backend::Avx512, now), 1.0);
        assert_eq!(
            o.fastest(OP, close(), now).unwrap().backend,
            Backend::Avx512
        );
        // A plan without an estimate is never chosen; none at all gives none.
        let mut unmeasured = plan(Backend::Cuda, 0.0);
        unmeasured.estimate_s = None;
        let chosen = o.fastest(OP, [unmeasured, plan(Backend::ShaNi, 1.0)], now);
        assert_eq!(chosen.unwrap().backend, Backend::ShaNi);
        assert!(o.fastest(OP, [unmeasured], now).is_none());
    }

    #[test]
    fn a_backend_the_load_slows_loses_the_batches_it_won_idle() {
        let o = Observed::default();
        let t0 = Instant::now();
        // CPU batches take four times their estimate (the cores are the connections'); the GPU's
        // take theirs.
        for i in 0..6 {
            o.observe(
                OP,
                Backend::Avx512,
                200e-6,
                Duration::from_micros(800),
                t0 + ms(i),
            );
            o.observe(
                OP,
                Backend::Cuda,
                240e-6,
                Duration::from_micros(240),
                t0 + ms(i),
            );
        }
        let now = t0 + ms(6);
        let f = o.factor(OP, Backend::Avx512, now);
        assert!(f > 3.0 && f < 4.0, "{f}");
        assert!((o.factor(OP, Backend::Cuda, now) - 1.0).abs() < 1e-9);
        let chosen = o.fastest(OP, close(), now).unwrap();
        assert_eq!(chosen.backend, Backend::Cuda);
        // The plan keeps its own estimate, not the corrected one.
        assert_eq!(chosen.estimate_s, Some(240e-6));
        // Other operations and backends are not touched.
        assert_eq!(o.factor("sm3", Backend::Avx512, now), 1.0);
        assert_eq!(o.factor(OP, Backend::ShaNi, now), 1.0);
        let all = o.factors(now);
        assert_eq!(all.len(), 2);
        assert_eq!((all[0].0, all[0].1), (OP, Backend::Avx512));
        assert_eq!((all[1].0, all[1].1), (OP, Backend::Cuda));
        assert!((all[0].2 - f).abs() < 1e-9);
    }

    #[test]
    fn a_ratio_not_refreshed_fades_and_the_backend_is_tried_again() {
        let o = Observed::default();
        let t0 = Instant::now();
        for _ in 0..20 {
            o.observe(OP, Backend::Avx512, 200e-6, Duration::from_micros(800), t0);
        }
        let ln4 = 4f64.ln();
        let at = |d: Duration| o.factor(OP, Backend::Avx512, t0 + d).ln() / ln4;
        assert!((at(Duration::ZERO) - 1.0).abs() < 0.01);
        assert!((at(HALF_LIFE) - 0.5).abs() < 0.01);
        assert!((at(2 * HALF_LIFE) - 0.25).abs() < 0.01);
        assert_eq!(o.fastest(OP, close(), t0).unwrap().backend, Backend::Cuda);
        // Once less is left of 4x than the 1.2x the CPU leads by idle, it wins again.
        assert_eq!(
            o.fastest(OP, close(), t0 + 8 * HALF_LIFE).unwrap().backend,
            Backend::Avx512
        );
        // A batch after the fade starts from what is left, not from the old ratio.
        let later = t0 + 8 * HALF_LIFE;
        o.observe(
            OP,
            Backend::Avx512,
            200e-6,
            Duration::from_micros(200),
            later,
        );
        assert!(o.factor(OP, Backend::Avx512, later) < 1.02);
    }

    #[test]
    fn one_outlier_does_not_turn_a_clear_choice() {
        let o = Observed::default();
        let t0 = Instant::now();
        // The GPU at half the CPU's estimate; one of its batches took a second (counted as 8x).
        let plans = [plan(Backend::Avx512, 400e-6), plan(Backend::Cuda, 200e-6)];
        o.observe(OP, Backend::Cuda, 200e-6, Duration::from_secs(1), t0);
        let f = o.factor(OP, Backend::Cuda, t0);
        assert!((f - 8f64.powf(WEIGHT)).abs() < 1e-9, "{f}");
        assert_eq!(o.fastest(OP, plans, t0).unwrap().backend, Backend::Cuda);
        // Batches at their estimate bring it back.
        for i in 1..=10 {
            o.observe(
                OP,
                Backend::Cuda,
                200e-6,
                Duration::from_micros(200),
                t0 + ms(i),
            );
        }
        assert!(o.factor(OP, Backend::Cuda, t0 + ms(10)) < 1.1);
    }

    /// A batch every half millisecond for 20 s of load (CPU batches at 8x their estimate, the
    /// GPU's at 1.5x), then 20 s idle (both at their estimates): how often the CPU is tried
    /// under the load, and how soon it wins again after.
    #[test]
    fn under_sustained_load_the_cpu_is_tried_rarely_and_wins_again_after() {
        let o = Observed::default();
        let t0 = Instant::now();
        let (mut cpu_under_load, mut back) = (0, None);
        let loaded = |at| at < Duration::from_secs(20);
        let slow = |at, b| match (loaded(at), b) {
            (true, Backend::Cuda) => 1.5,
            (true, _) => 8.0,
            (false, _) => 1.0,
        };
        simulate(&o, t0, 80_000, slow, |at, b| match (loaded(at), b) {
            (true, Backend::Avx512) => cpu_under_load += 1,
            (false, Backend::Avx512) if back.is_none() => back = Some(at),
            _ => {}
        });
        // 40,000 batches under load: the first on the CPU (nothing observed yet), then a probe
        // now and then as the CPU's mean fades.
        assert!((1..40).contains(&cpu_under_load), "{cpu_under_load}");
        let back = back.expect("the CPU wins again once the load is gone");
        assert!(back < Duration::from_secs(35), "{back:?}");
    }

    /// A CPU estimated at a third of the GPU whose batches take 20x that (a server's connections
    /// hold its cores), against a GPU at 3x its own: the CPU must lose, though its batches run
    /// further over their estimate than one batch may count.
    #[test]
    fn a_backend_far_slower_than_one_batch_may_count_still_loses() {
        let o = Observed::default();
        let t0 = Instant::now();
        let plans = [plan(Backend::ShaNi, 200e-6), plan(Backend::Cuda, 600e-6)];
        let mut on_cpu = 0;
        for i in 0..2_000u32 {
            let now = t0 + Duration::from_micros(500) * i;
            let p = o.fastest(OP, plans, now).unwrap();
            let slow = if p.backend == Backend::Cuda {
                3.0
            } else {
                20.0
            };
            let est = p.estimate_s.unwrap();
            o.observe(OP, p.backend, est, Duration::from_secs_f64(est * slow), now);
            on_cpu += usize::from(p.backend == Backend::ShaNi);
        }
        // The CPU's mean reaches its 20x within a few batches, then is probed as it fades.
        let f = o.factor(OP, Backend::ShaNi, t0 + Duration::from_secs(1));
        assert!(f > 8.0, "{f}");
        assert!(on_cpu < 40, "{on_cpu} of 2000 batches on the CPU");
    }

    /// The server's case: its GPU's hash batches held up by a burst of load on the CPU (twenty
    /// times their estimate, several in flight at once), then the burst gone; meanwhile the
    /// CPU's batches take three times theirs, the cores being the connections'. The GPU must win
    /// again within about a second, not after the many seconds its record takes to fade.
    #[test]
    fn a_burst_passed_is_forgotten_by_probing_within_a_second() {
        let o = Observed::default();
        let t0 = Instant::now();
        for _ in 0..12 {
            o.observe(OP, Backend::Cuda, 240e-6, Duration::from_micros(4800), t0);
        }
        assert!(o.factor(OP, Backend::Cuda, t0) > 15.0);
        let (mut on_gpu, mut back) = (0, None);
        let slow = |_, b| if b == Backend::Cuda { 1.0 } else { 3.0 };
        simulate(&o, t0, 20_000, slow, |at, b| {
            if b == Backend::Cuda {
                on_gpu += 1;
                // Won on its record, not probed: every batch since has gone to it.
                if o.factor(OP, Backend::Cuda, t0 + at) * 240e-6
                    < o.factor(OP, Backend::Avx512, t0 + at) * 200e-6
                {
                    back.get_or_insert(at);
                }
            }
        });
        // The fade alone takes about 7 s to bring 20x under the CPU's 3x.
        let back = back.expect("the GPU wins again");
        assert!(
            back < Duration::from_secs(1),
            "{back:?} after {on_gpu} GPU batches"
        );
    }

    /// Probes of a backend whose batches keep confirming its record grow rare: at most a dozen
    /// in 20 s, however many batches go by.
    #[test]
    fn probes_that_confirm_the_record_back_off() {
        let o = Observed::default();
        let t0 = Instant::now();
        let mut on_cpu = Vec::new();
        let slow = |_, b| if b == Backend::Cuda { 1.5 } else { 8.0 };
        simulate(&o, t0, 40_000, slow, |at, b| {
            if b == Backend::Avx512 {
                on_cpu.push(at);
            }
        });
        assert!(
            on_cpu.len() < 25,
            "{} CPU batches: {on_cpu:?}",
            on_cpu.len()
        );
        // Probed at all: the first of them within the first wait after its record's last batch.
        assert!(on_cpu.len() > 3, "{on_cpu:?}");
    }

    #[test]
    fn batches_too_short_to_read_are_not_counted() {
        let o = Observed::default();
        let now = Instant::now();
        o.observe(OP, Backend::Avx512, MIN_ESTIMATE_S / 2.0, ms(5), now);
        o.observe(OP, Backend::Avx512, 200e-6, Duration::ZERO, now);
        o.observe(OP, Backend::Avx512, f64::NAN, ms(5), now);
        assert_eq!(o.factor(OP, Backend::Avx512, now), 1.0);
    }
}

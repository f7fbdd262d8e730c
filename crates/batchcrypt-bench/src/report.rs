//! Timing and the result table.

use serde::Serialize;
use std::time::Instant;

#[derive(Serialize, Clone)]
pub struct Row {
    pub group: String,
    pub case: String,
    pub implementation: String,
    pub items: u64,
    pub bytes: u64,
    pub seconds: f64,
    pub items_per_s: f64,
    pub bytes_per_s: f64,
    /// Throughput relative to the case's baseline implementation.
    pub ratio: Option<f64>,
    pub baseline: Option<String>,
}

pub struct Report {
    pub rows: Vec<Row>,
}

/// Whether this machine has a GPU our CUDA backend can use.
pub fn has_gpu() -> bool {
    batchcrypt::Backend::Cuda.is_available()
}

/// `choices` (our CPU rows, if any), then our GPU forced where there is one, labelled `gpu`, then
/// the dispatcher's choice: the rows every comparison with a peer runs.
pub fn with_gpu_and_auto(
    mut choices: Vec<(&'static str, batchcrypt::BackendChoice)>,
    gpu: &'static str,
) -> Vec<(&'static str, batchcrypt::BackendChoice)> {
    use batchcrypt::{Backend, BackendChoice};
    if has_gpu() {
        choices.push((gpu, BackendChoice::Exact(Backend::Cuda)));
    }
    choices.push(("ours auto", BackendChoice::Auto));
    choices
}

/// A row's implementation name: with the backend that ran appended when the dispatcher chose it.
pub fn label(name: &str, choice: batchcrypt::BackendChoice, ran: batchcrypt::Backend) -> String {
    if choice == batchcrypt::BackendChoice::Auto {
        format!("{name} (ran {ran})")
    } else {
        name.to_string()
    }
}

/// Median wall time of `reps` runs after one warm-up.
pub fn time(reps: usize, f: impl FnMut()) -> f64 {
    let v = times(reps, f);
    v[v.len() / 2]
}

/// The wall times of `reps` runs of `f` (at least one) after a warm-up, shortest first.
pub fn times(reps: usize, mut f: impl FnMut()) -> Vec<f64> {
    f();
    let mut v: Vec<f64> = (0..reps.max(1))
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

/// Median wall times of several functions timed in turns: one warm-up each, then `reps` rounds
/// in which each runs once, in an order shuffled per round, so that drift in the host's speed
/// falls on all of them alike and none always follows the same one (a call leaves the thread
/// pool and caches in a state the next one pays for: a fixed order charged one row 1.5x).
pub fn time_interleaved(reps: usize, fs: &mut [&mut dyn FnMut()]) -> Vec<f64> {
    for f in fs.iter_mut() {
        f();
    }
    let k = fs.len();
    let mut times = vec![Vec::with_capacity(reps); k];
    let mut order: Vec<usize> = (0..k).collect();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..reps.max(1) {
        // Fisher–Yates with a fixed-seed xorshift: the same sequence on every run.
        for j in (1..k).rev() {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            order.swap(j, (seed % (j as u64 + 1)) as usize);
        }
        for &i in &order {
            let t = Instant::now();
            fs[i]();
            times[i].push(t.elapsed().as_secs_f64());
        }
    }
    times
        .into_iter()
        .map(|mut v| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        })
        .collect()
}

impl Report {
    pub fn new() -> Self {
        Report { rows: Vec::new() }
    }

    pub fn header(&self, title: &str) {
        println!("\n== {title}");
        println!(
            "{:<34} {:<36} {:>12} {:>10} {:>9}",
            "case", "implementation", "M items/s", "GB/s", "ratio"
        );
    }

    /// Records one measurement; `baseline` names the implementation of the same case to compare to.
    pub fn add(
        &mut self,
        group: &str,
        case: &str,
        implementation: &str,
        items: u64,
        bytes: u64,
        seconds: f64,
        baseline: Option<&str>,
    ) {
        let items_per_s = items as f64 / seconds;
        let ratio = baseline.and_then(|b| {
            self.rows
                .iter()
                .find(|r| r.group == group && r.case == case && r.implementation == b)
                .map(|r| items_per_s / r.items_per_s)
        });
        self.record(
            group,
            case,
            implementation,
            items,
            bytes,
            seconds,
            ratio,
            baseline,
        );
    }

    /// Seconds per item of a recorded row.
    pub fn per_item(&self, group: &str, case: &str, implementation: &str) -> Option<f64> {
        self.rows
            .iter()
            .find(|r| r.group == group && r.case == case && r.implementation == implementation)
            .map(|r| 1.0 / r.items_per_s)
    }

    /// Records one measurement compared with a baseline from another case (`base_s`: its seconds
    /// per item, named `base_name`).
    pub fn add_vs(
        &mut self,
        group: &str,
        case: &str,
        implementation: &str,
        items: u64,
        seconds: f64,
        base_s: f64,
        base_name: &str,
    ) {
        let ratio = base_s.is_finite().then(|| items as f64 / seconds * base_s);
        self.record(
            group,
            case,
            implementation,
            items,
            0,
            seconds,
            ratio,
            Some(base_name),
        );
    }

    /// Prints the table line and keeps the row.
    fn record(
        &mut self,
        group: &str,
        case: &str,
        implementation: &str,
        items: u64,
        bytes: u64,
        seconds: f64,
        ratio: Option<f64>,
        baseline: Option<&str>,
    ) {
        let items_per_s = items as f64 / seconds;
        println!(
            "{:<34} {:<36} {:>12.3} {:>10.2} {:>9}",
            case,
            implementation,
            items_per_s / 1e6,
            bytes as f64 / seconds / 1e9,
            ratio
                .map(|r| format!("{r:.2}x"))
                .unwrap_or_else(|| "-".into())
        );
        self.rows.push(Row {
            group: group.into(),
            case: case.into(),
            implementation: implementation.into(),
            items,
            bytes,
            seconds,
            items_per_s,
            bytes_per_s: bytes as f64 / seconds,
            ratio,
            baseline: baseline.map(Into::into),
        });
    }
}

//! Proof jobs: circuits registered by their proving keys, jobs taken from the durable store in
//! priority order and admitted by the GPU memory they need.
//!
//! Memory: a key takes `ProvingKey::device_bytes` once resident and each running proof
//! `proof_device_bytes` beside it. A job starts when its need fits the budget, after evicting
//! resident keys that no running job uses, least recently used first; a job that needs more than
//! the whole budget runs alone. The head of the queue is never passed over by a smaller job, so
//! a large proof is not starved. Jobs that wait cost nothing: they stay in the store.
//!
//! A cancelled job that is running finishes its computation (the prover has no cancellation
//! point) but its result is discarded: the store records only the run that still holds the job.

use crate::metrics::Metrics;
use crate::proto::JobState;
use crate::store::{now_ms, JobResult, JobRow, Store};
use batchcrypt::groth16::{self, AnyProvingKey, CurveId, Stage};
use batchcrypt::Engine;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct ProverConfig {
    /// Proofs running at once.
    pub workers: usize,
    /// GPU memory, in bytes, for resident keys and running proofs.
    pub memory: u64,
    /// Where the store and uploaded keys live.
    pub data_dir: PathBuf,
    /// Test hook: each proof waits this long after it starts, so tests can stop the server
    /// mid-proof deterministically. Zero outside tests.
    pub hold: Duration,
}

/// A registered circuit's description.
#[derive(Clone, Debug)]
pub struct Circuit {
    pub id: String,
    pub name: String,
    pub path: PathBuf,
    /// The curve of the key (and of its witnesses).
    pub curve: CurveId,
    pub domain: u64,
    pub signals: u64,
    pub key_bytes: u64,
    pub proof_bytes: u64,
}

struct Slot {
    circuit: Circuit,
    key: Option<Arc<AnyProvingKey>>,
    /// Counted in the budget (a job has run with it since it was last evicted).
    resident: bool,
    users: usize,
    last_used: u64,
}

#[derive(Default)]
struct Sched {
    slots: HashMap<String, Slot>,
    used: u64,
    running: usize,
    tick: u64,
    stopping: bool,
}

pub struct Prover {
    pub store: Store,
    engine: Arc<Engine>,
    config: ProverConfig,
    metrics: Arc<Metrics>,
    sched: Mutex<Sched>,
    wake: Condvar,
    /// Bumped on every job state change; waiters re-read their job.
    changes: tokio::sync::watch::Sender<u64>,
}

fn is_final(s: JobState) -> bool {
    !matches!(s, JobState::Queued | JobState::Running)
}

impl Prover {
    /// Opens the store in `config.data_dir`, reloads the registered circuits and starts the
    /// scheduler. Returns the prover and the jobs a crash had left running (queued again).
    pub fn start(
        engine: Arc<Engine>,
        config: ProverConfig,
        metrics: Arc<Metrics>,
    ) -> Result<(Arc<Prover>, usize), String> {
        std::fs::create_dir_all(config.data_dir.join("circuits"))
            .map_err(|e| format!("cannot create {}: {e}", config.data_dir.display()))?;
        let (store, requeued) = Store::open(&config.data_dir.join("jobs.sqlite"))?;
        let prover = Arc::new(Prover {
            store,
            engine,
            config,
            metrics,
            sched: Mutex::new(Sched::default()),
            wake: Condvar::new(),
            changes: tokio::sync::watch::channel(0).0,
        });
        for (id, name, path) in prover.store.circuits()? {
            let key = AnyProvingKey::read(&path)
                .map_err(|e| format!("registered circuit {id} ({name}): {e}"))?;
            prover.insert(describe(&id, &name, Path::new(&path), &key), key);
        }
        let p = prover.clone();
        std::thread::Builder::new()
            .name("prover-scheduler".into())
            .spawn(move || p.schedule_loop())
            .map_err(|e| e.to_string())?;
        Ok((prover, requeued))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Sched> {
        self.sched.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn insert(&self, circuit: Circuit, key: AnyProvingKey) {
        let mut s = self.lock();
        if s.slots.contains_key(&circuit.id) {
            return;
        }
        s.slots.insert(
            circuit.id.clone(),
            Slot {
                circuit,
                key: Some(Arc::new(key)),
                resident: false,
                users: 0,
                last_used: 0,
            },
        );
    }

    /// Registers a proving key given by its bytes (kept in the data directory) or by a path.
    /// The id is the SHA-256 of the key's bytes.
    pub fn register(
        &self,
        bytes: Option<&[u8]>,
        path: Option<&Path>,
        name: &str,
    ) -> Result<Circuit, String> {
        let owned;
        let data = match (bytes, path) {
            (Some(b), _) => b,
            (None, Some(p)) => {
                owned =
                    std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
                &owned
            }
            (None, None) => return Err("give the .zkey's bytes or a path".into()),
        };
        let id = hex::encode(batchcrypt::sha256::digest(data));
        if let Some(s) = self.lock().slots.get(&id) {
            return Ok(s.circuit.clone());
        }
        let key = AnyProvingKey::parse(data).map_err(|e| e.to_string())?;
        let path = match (bytes, path) {
            (Some(b), _) => {
                let dest = self
                    .config
                    .data_dir
                    .join("circuits")
                    .join(format!("{id}.zkey"));
                let tmp = dest.with_extension("zkey.partial");
                std::fs::write(&tmp, b)
                    .and_then(|_| std::fs::File::open(&tmp)?.sync_all())
                    .and_then(|_| std::fs::rename(&tmp, &dest))
                    .map_err(|e| format!("cannot keep the key in {}: {e}", dest.display()))?;
                dest
            }
            (None, Some(p)) => p.canonicalize().map_err(|e| e.to_string())?,
            (None, None) => unreachable!(),
        };
        let name = if name.is_empty() { &id[..12] } else { name };
        let circuit = describe(&id, name, &path, &key);
        self.store.add_circuit(&id, name, &path)?;
        self.insert(circuit.clone(), key);
        Ok(circuit)
    }

    pub fn circuit(&self, id: &str) -> Option<Circuit> {
        self.lock().slots.get(id).map(|s| s.circuit.clone())
    }

    /// Queues a job (or finds the one under `request_id`).
    pub fn submit(
        &self,
        circuit: &str,
        witness: &[u8],
        request_id: &str,
        priority: i32,
        deadline_ms: i64,
    ) -> Result<JobRow, tonic::Status> {
        let Some(c) = self.circuit(circuit) else {
            return Err(tonic::Status::not_found(format!(
                "no circuit {circuit}: register its .zkey first"
            )));
        };
        // Checked here so a malformed witness is refused, not queued.
        let key = self.lock().slots.get(circuit).and_then(|s| s.key.clone());
        if let Some(key) = key {
            key.check_witness(witness)
                .map_err(|e| tonic::Status::invalid_argument(format!("circuit {}: {e}", c.name)))?;
        }
        let (row, _) = self
            .store
            .submit(request_id, circuit, witness, priority, deadline_ms)
            .map_err(tonic::Status::internal)?;
        self.changed();
        Ok(row)
    }

    pub fn cancel(&self, id: &str, why: &str) -> Result<Option<JobRow>, String> {
        if self.store.end(id, JobState::Cancelled, why)? {
            self.changed();
        }
        self.store.job(id)
    }

    /// Waits until job `id` has ended; None when there is no such job.
    pub async fn wait(&self, id: &str) -> Result<Option<JobRow>, String> {
        let mut rx = self.changes.subscribe();
        loop {
            rx.borrow_and_update();
            match self.store.job(id)? {
                Some(j) if !is_final(j.state) => {}
                other => return Ok(other),
            }
            if rx.changed().await.is_err() {
                return Err("the prover stopped".into());
            }
        }
    }

    fn changed(&self) {
        self.changes.send_modify(|n| *n += 1);
        self.wake.notify_all();
    }

    /// Stops starting jobs and waits for the running ones to end; queued jobs stay in the store.
    pub fn drain(&self) {
        let mut s = self.lock();
        s.stopping = true;
        self.wake.notify_all();
        while s.running > 0 {
            s = self.wake.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn schedule_loop(self: Arc<Self>) {
        let mut s = self.lock();
        while !s.stopping {
            if let Err(e) = self.schedule(&mut s) {
                eprintln!("prover: {e}");
            }
            if let Ok(counts) = self.store.counts() {
                for (state, n) in counts {
                    self.metrics
                        .jobs
                        .get_or_create(&vec![("state", state.as_str_name().to_lowercase())])
                        .set(n);
                }
            }
            s = self
                .wake
                .wait_timeout(s, Duration::from_millis(200))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Starts every job that can start now, in queue order.
    fn schedule(self: &Arc<Self>, s: &mut Sched) -> Result<(), String> {
        while s.running < self.config.workers.max(1) {
            let head = self.store.queued(16)?;
            let mut started = false;
            for job in head {
                if job.deadline_ms > 0 && now_ms() > job.deadline_ms {
                    if self
                        .store
                        .end(&job.id, JobState::Expired, "not started by its deadline")?
                    {
                        self.changed();
                    }
                    continue;
                }
                if !self.admit(s, &job)? {
                    return Ok(()); // the head waits for memory; nothing passes it
                }
                started = true;
                break;
            }
            if !started {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Starts `job` if its memory fits (evicting idle keys as needed); false if it must wait.
    fn admit(self: &Arc<Self>, s: &mut Sched, job: &JobRow) -> Result<bool, String> {
        let Some(slot) = s.slots.get(&job.circuit) else {
            self.store.end(
                &job.id,
                JobState::Failed,
                "its circuit is no longer registered",
            )?;
            self.changed();
            return Ok(true);
        };
        let need = slot.circuit.proof_bytes
            + if slot.resident {
                0
            } else {
                slot.circuit.key_bytes
            };
        let budget = self.config.memory;
        while s.used + need > budget {
            let victim = s
                .slots
                .iter()
                .filter(|(id, v)| v.resident && v.users == 0 && **id != job.circuit)
                .min_by_key(|(_, v)| v.last_used)
                .map(|(id, _)| id.clone());
            let Some(victim) = victim else { break };
            let v = s.slots.get_mut(&victim).expect("just found");
            if let Some(k) = &v.key {
                k.release_device();
            }
            v.resident = false;
            s.used -= v.circuit.key_bytes;
            self.metrics.key_evictions.inc();
        }
        if s.used + need > budget && s.running > 0 {
            return Ok(false);
        }
        let Some(witness) = self.store.start(&job.id)? else {
            return Ok(true); // cancelled meanwhile
        };
        s.tick += 1;
        let tick = s.tick;
        let slot = s.slots.get_mut(&job.circuit).expect("checked above");
        if !slot.resident {
            slot.resident = true;
            s.used += slot.circuit.key_bytes;
        }
        slot.users += 1;
        slot.last_used = tick;
        let key = slot.key.clone().expect("registered keys are loaded");
        let proof_bytes = slot.circuit.proof_bytes;
        s.used += proof_bytes;
        s.running += 1;
        self.metrics.resident_key_bytes.set(
            s.slots
                .values()
                .filter(|v| v.resident)
                .map(|v| v.circuit.key_bytes as i64)
                .sum(),
        );
        self.changed();
        let (p, job) = (self.clone(), job.clone());
        std::thread::Builder::new()
            .name("prover".into())
            .spawn(move || {
                let outcome = p.run(&job, &key, &witness);
                let recorded = match outcome {
                    Ok(result) => p.store.finish(&job.id, &result),
                    Err(why) => p.store.end(&job.id, JobState::Failed, &why),
                };
                if let Err(e) = recorded {
                    eprintln!("prover: job {}: {e}", job.id);
                }
                let mut s = p.lock();
                s.used -= proof_bytes;
                s.running -= 1;
                if let Some(slot) = s.slots.get_mut(&job.circuit) {
                    slot.users -= 1;
                }
                drop(s);
                p.changed();
            })
            .map_err(|e| e.to_string())?;
        Ok(true)
    }

    /// One proof, its stages timed from the job's submission.
    fn run(&self, job: &JobRow, key: &AnyProvingKey, witness: &[u8]) -> Result<JobResult, String> {
        let started = Instant::now();
        let waited = (now_ms() - job.submitted_ms).max(0) as f64 / 1e3;
        if !self.config.hold.is_zero() {
            std::thread::sleep(self.config.hold);
        }
        let proving = Instant::now();
        let mut proved = key
            .prove(&self.engine, witness, &mut rand::rngs::OsRng)
            .map_err(|e| e.to_string())?;
        let offset = waited + (proving - started).as_secs_f64();
        for st in &mut proved.stages {
            st.start += offset;
        }
        proved.stages.insert(
            0,
            Stage {
                name: "queue wait",
                backend: None,
                start: 0.0,
                seconds: waited,
            },
        );
        Ok(JobResult {
            proof: proved.proof,
            public: proved.public,
            trace: groth16::chrome_trace(&[(format!("job {}", job.id), &proved.stages)]),
        })
    }
}

fn describe(id: &str, name: &str, path: &Path, key: &AnyProvingKey) -> Circuit {
    Circuit {
        id: id.to_string(),
        name: name.to_string(),
        path: path.to_path_buf(),
        curve: key.curve(),
        domain: key.domain_size() as u64,
        signals: key.n_vars() as u64,
        key_bytes: key.device_bytes(),
        proof_bytes: key.proof_device_bytes(),
    }
}

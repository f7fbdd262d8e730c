//! Many proofs at once on one proving key: a bounded queue of jobs, worker threads that share
//! the key (its MSM bases go to GPU memory once, on the first proof that runs there), GPU memory
//! admission per operation ([`crate::memory`]: concurrent jobs wait for memory rather than
//! fail), and each job's waterfall (queue wait, then the prover's stages) on one timeline for
//! traces.
//!
//! With several GPUs the jobs spread over them: worker `i` proves on GPU `i mod count` alone, so
//! each GPU holds the whole key and runs whole proofs (one proof's MSMs are too small to gain
//! from a split, and proofs in flight on every GPU keep all of them busy).
//!
//! Workers' CPU stages run on the one rayon pool (sized to the cores), so more workers overlap
//! one job's host work with another's GPU work without oversubscribing the CPU. Device buffers
//! return to the driver's memory pool (stream-ordered, no device-wide synchronisation), page-locked
//! staging is kept between calls, and large host buffers are freed by the one reclaimer thread
//! ([`crate::memory::free_later`]).

use super::{Curve, Proved, ProvingKey, Stage, Witness};
use crate::error::{Error, Result};
use crate::Engine;
use crossbeam_channel::{bounded, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

/// How many proofs run at once and how many may wait.
#[derive(Clone, Copy, Debug)]
pub struct ServiceConfig {
    /// Proofs in progress at once (worker threads).
    pub workers: usize,
    /// Jobs accepted but not started; `submit` blocks beyond that (back-pressure).
    pub queue: usize,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            workers: 4,
            queue: 16,
        }
    }
}

struct Job<C: Curve> {
    witness: Witness<C::Fr>,
    submitted: Instant,
    reply: Sender<Result<Proved<C>>>,
}

/// A running prover on one key over the curve `C`: submit witnesses, wait on tickets.
pub struct ProverService<C: Curve = crate::bn254::Bn254> {
    jobs: Option<Sender<Job<C>>>,
    workers: Vec<JoinHandle<()>>,
    origin: Instant,
}

/// A submitted job's result, when it is ready.
pub struct Ticket<C: Curve = crate::bn254::Bn254>(Receiver<Result<Proved<C>>>);

impl<C: Curve> Ticket<C> {
    /// Waits for the proof (its stages timed from the service's start, queue wait first).
    pub fn wait(self) -> Result<Proved<C>> {
        self.0
            .recv()
            .unwrap_or_else(|_| Err(Error::invalid("the prover stopped before the job finished")))
    }
}

impl<C: Curve> ProverService<C> {
    pub fn start(engine: Arc<Engine>, key: Arc<ProvingKey<C>>, config: ServiceConfig) -> Self {
        let (tx, rx) = bounded::<Job<C>>(config.queue);
        let origin = Instant::now();
        // One engine per GPU, shared by the workers pinned to it (and its calibrations with them).
        let gpus = engine.dispatcher().gpus().to_vec();
        let engines: Vec<Arc<Engine>> = match gpus.len() {
            0 | 1 => vec![engine],
            _ => gpus
                .iter()
                .map(|&g| Arc::new(Engine::with_gpus(engine.dispatcher().choice(), &[g])))
                .collect(),
        };
        let workers = (0..config.workers.max(1))
            .map(|w| {
                let engine = engines[w % engines.len()].clone();
                let (rx, key) = (rx.clone(), key.clone());
                std::thread::spawn(move || {
                    for job in rx {
                        let started = Instant::now();
                        let result = engine
                            .groth16()
                            .prove(&key, &job.witness, &mut rand::rngs::OsRng)
                            .map(|mut p| {
                                let at = |t: Instant| (t - origin).as_secs_f64();
                                for s in &mut p.stages {
                                    s.start += at(started);
                                }
                                p.stages.insert(
                                    0,
                                    Stage {
                                        name: "queue wait",
                                        backend: None,
                                        start: at(job.submitted),
                                        seconds: (started - job.submitted).as_secs_f64(),
                                    },
                                );
                                p
                            });
                        // The witness (a scalar a signal) is freed off this worker's path.
                        crate::memory::free_later(job.witness);
                        let _ = job.reply.send(result); // the submitter may have gone
                    }
                })
            })
            .collect();
        ProverService {
            jobs: Some(tx),
            workers,
            origin,
        }
    }

    /// Queues a proof of `witness`; blocks while the queue is full.
    pub fn submit(&self, witness: Witness<C::Fr>) -> Ticket<C> {
        let (reply, rx) = bounded(1);
        let job = Job {
            witness,
            submitted: Instant::now(),
            reply,
        };
        self.jobs
            .as_ref()
            .expect("open until dropped")
            .send(job)
            .expect("workers run until the service is dropped");
        Ticket(rx)
    }

    /// Seconds since the service started (the stages' time origin).
    pub fn elapsed(&self) -> f64 {
        self.origin.elapsed().as_secs_f64()
    }
}

impl<C: Curve> Drop for ProverService<C> {
    /// Finishes the queued jobs, then stops the workers.
    fn drop(&mut self) {
        self.jobs.take();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

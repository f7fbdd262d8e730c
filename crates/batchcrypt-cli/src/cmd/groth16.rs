//! `batchcrypt prove`: a Groth16 proof for a circom circuit, as `snarkjs groth16 prove` makes it;
//! `batchcrypt groth16-setup`: a development proving key for any circuit size. Both curves
//! (BN254, BLS12-381): each command reads the curve from its input file and runs the generic
//! library on it.

use anyhow::Result;
use batchcrypt::groth16::{self, Curve, CurveId, ProvingKey, R1cs, Witness};
use batchcrypt::{with_curve, Engine};
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
#[command(
    about = "Groth16 proof for a circom circuit: reads snarkjs's proving key and a witness, writes proof.json and public.json",
    long_about = "Proves that a witness satisfies a circom circuit, with the proving key from \
`snarkjs groth16 setup` (and `snarkjs zkey contribute`), over BN254 (circom's default, snarkjs's \
bn128) or BLS12-381 (`circom --prime bls12381`): the curve is read from the key. Writes proof.json \
and public.json exactly as `snarkjs groth16 prove` does, so `snarkjs groth16 verify` (and, on \
BN254, the Solidity verifier exported by snarkjs) accept them. The NTTs and MSMs run where the cost model says (--backend forces one). Every \
proof is checked before it is written: a witness that does not satisfy the circuit is an error.",
    after_help = "Examples:\n  circom circuit.circom --r1cs --wasm\n  snarkjs wtns calculate circuit_js/circuit.wasm input.json witness.wtns\n  batchcrypt prove circuit.zkey witness.wtns proof.json public.json\n  snarkjs groth16 verify verification_key.json public.json proof.json\n  batchcrypt prove circuit.zkey witness.wtns --repeat 5 --timings --trace trace.json"
)]
pub struct ProveArgs {
    /// Proving key (.zkey) from `snarkjs groth16 setup`.
    zkey: PathBuf,
    /// Witness (.wtns) from the circuit's witness generator or `snarkjs wtns calculate`.
    witness: PathBuf,
    /// Where to write the proof.
    #[arg(default_value = "proof.json")]
    proof: PathBuf,
    /// Where to write the public signals.
    #[arg(default_value = "public.json")]
    public: PathBuf,
    /// Prove this many times (the key is read and moved to the GPU once; later proofs show the
    /// steady state). The last proof is written.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// Print each step's time and where it ran.
    #[arg(long)]
    timings: bool,
    /// Write the steps of every proof as a Chrome/Perfetto trace (open in ui.perfetto.dev).
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    #[command(flatten)]
    key: KeyOptions,
}

/// How `prove` and `prove-server` keep the proving key.
#[derive(clap::Args)]
struct KeyOptions {
    /// Precompute COPIES shifted copies of the key's MSM bases in GPU memory (1: none): the key
    /// then takes about COPIES times its points' size there, made once, and each proof's MSMs
    /// combine fewer bucket windows.
    #[arg(long, default_value_t = 1, value_name = "COPIES", value_parser = clap::value_parser!(u32).range(1..=64))]
    precompute: u32,
}

impl KeyOptions {
    fn read<C: Curve>(&self, zkey: &std::path::Path) -> Result<ProvingKey<C>> {
        Ok(ProvingKey::read(zkey)?.with_precomputation(self.precompute))
    }
}

pub fn prove(engine: &Engine, a: &ProveArgs) -> Result<()> {
    with_curve!(CurveId::of_file(&a.zkey)?, C => prove_on::<C>(engine, a))
}

fn prove_on<C: Curve>(engine: &Engine, a: &ProveArgs) -> Result<()> {
    let t = Instant::now();
    let pk = a.key.read::<C>(&a.zkey)?;
    let witness = Witness::read(&a.witness)?;
    eprintln!(
        "read {} ({}: {} signals, {} public, domain 2^{}) and the witness in {:.0} ms",
        a.zkey.display(),
        C::NAME,
        pk.n_vars,
        pk.n_public,
        pk.domain_size.trailing_zeros(),
        t.elapsed().as_secs_f64() * 1e3
    );
    let mut runs = Vec::new();
    let mut rng = rand::rngs::OsRng;
    for i in 0..a.repeat {
        let t = Instant::now();
        let proved = engine.groth16().prove(&pk, &witness, &mut rng)?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        eprintln!("proof {}: {ms:.1} ms", i + 1);
        if a.timings {
            for s in &proved.stages {
                let on = s.backend.map_or("host".to_string(), |b| b.to_string());
                eprintln!(
                    "  {:<32} {:>9.2} ms  from {:>8.2} ms  {on}",
                    s.name,
                    s.seconds * 1e3,
                    s.start * 1e3
                );
            }
        }
        runs.push(proved);
    }
    let last = runs.last().expect("at least one proof");
    batchcrypt::output::write(&a.proof, last.proof.to_json())?;
    batchcrypt::output::write(&a.public, groth16::public_json(&last.public))?;
    if let Some(path) = &a.trace {
        let jobs: Vec<_> = runs
            .iter()
            .enumerate()
            .map(|(i, r)| (format!("proof {}", i + 1), r.stages.as_slice()))
            .collect();
        batchcrypt::output::write(path, groth16::chrome_trace(&jobs))?;
    }
    println!(
        "wrote {} and {} ({} public signals); checked before writing",
        a.proof.display(),
        a.public.display(),
        last.public.len()
    );
    Ok(())
}

#[derive(clap::Args)]
#[command(
    about = "Development Groth16 proving key for a circom circuit (.r1cs in, snarkjs .zkey out), from a one-party setup: for tests and benchmarks only",
    long_about = "Makes a Groth16 proving key in snarkjs's format for a circuit of any size in \
seconds, on the circuit's curve (BN254, or BLS12-381 for `circom --prime bls12381`), without a \
powers-of-tau ceremony: the secrets are drawn at random by this one process and \
then dropped. Whoever runs it could keep them and forge proofs, so such keys are for tests and \
benchmarks only; for anything real use a ceremony (`snarkjs powersoftau`, `snarkjs groth16 \
setup`, `snarkjs zkey contribute`). snarkjs reads these keys (`snarkjs zkey export \
verificationkey`, `snarkjs groth16 prove`).",
    after_help = "Example:\n  circom circuit.circom --r1cs --wasm\n  batchcrypt groth16-setup circuit.r1cs circuit.zkey\n  snarkjs zkey export verificationkey circuit.zkey verification_key.json"
)]
pub struct SetupArgs {
    /// Constraint system (.r1cs) from `circom --r1cs`.
    r1cs: PathBuf,
    /// Where to write the proving key.
    zkey: PathBuf,
}

pub fn setup(a: &SetupArgs) -> Result<()> {
    with_curve!(CurveId::of_file(&a.r1cs)?, C => setup_on::<C>(a))
}

fn setup_on<C: Curve>(a: &SetupArgs) -> Result<()> {
    let t = Instant::now();
    let r1cs = R1cs::<C::Fr>::read(&a.r1cs)?;
    eprintln!(
        "read {} ({}: {} constraints, {} wires, {} public) in {:.1} s; computing the key...",
        a.r1cs.display(),
        C::NAME,
        r1cs.constraints.len(),
        r1cs.n_wires,
        r1cs.n_public,
        t.elapsed().as_secs_f64()
    );
    let zkey = groth16::setup::<C, _>(&r1cs, &mut rand::rngs::OsRng)?;
    batchcrypt::output::write(&a.zkey, &zkey)?;
    println!(
        "wrote {} ({} MB) in {:.1} s: a development key, not for production (see --help)",
        a.zkey.display(),
        zkey.len() >> 20,
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

#[derive(clap::Args)]
#[command(
    about = "Many Groth16 proofs on one key: jobs from standard input, proofs run concurrently, a waterfall of every job",
    long_about = "Loads a proving key once and proves every job read from standard input, one per line: \
`WITNESS [PROOF [PUBLIC]]` (by default the witness's name with .proof.json and .public.json). Jobs \
wait in a bounded queue; --workers run at once, overlapping one job's host work with another's GPU \
work; GPU operations are admitted by a memory budget measured from the device (BATCHCRYPT_GPU_MEMORY \
caps it), so concurrent jobs wait for memory instead of failing. One line per finished job goes to \
standard output (`ok WITNESS PROOF MS` or `error WITNESS: WHY`; a failed job does not stop the \
others); at the end, a summary table and, with --trace, every job's stages as a Chrome/Perfetto trace.",
    after_help = "Example:\n  ls jobs/*.wtns | batchcrypt prove-server circuit.zkey --workers 8 --trace trace.json"
)]
pub struct ServerArgs {
    /// Proving key (.zkey) shared by every job.
    zkey: PathBuf,
    /// Proofs in progress at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=256))]
    workers: u32,
    /// Jobs read ahead and waiting (reading stops while the queue is full).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..))]
    queue: u32,
    /// Write every job's stages as a Chrome/Perfetto trace.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    #[command(flatten)]
    key: KeyOptions,
}

pub fn serve(engine: Engine, a: &ServerArgs) -> Result<()> {
    with_curve!(CurveId::of_file(&a.zkey)?, C => serve_on::<C>(engine, a))
}

fn serve_on<C: Curve>(engine: Engine, a: &ServerArgs) -> Result<()> {
    use batchcrypt::groth16::{ProverService, ServiceConfig};
    use std::io::BufRead;
    use std::sync::Arc;
    let pk = Arc::new(a.key.read::<C>(&a.zkey)?);
    eprintln!(
        "key {} ({}): {} signals, domain 2^{}; {} workers, queue {}",
        a.zkey.display(),
        C::NAME,
        pk.n_vars,
        pk.domain_size.trailing_zeros(),
        a.workers,
        a.queue
    );
    let service = ProverService::start(
        Arc::new(engine),
        pk.clone(),
        ServiceConfig {
            workers: a.workers as usize,
            queue: a.queue as usize,
        },
    );
    // Samples the GPU's utilization while jobs run (where the driver's NVML library is present).
    let monitor = batchcrypt::backend::nvml::UtilizationMonitor::start();
    // The writer waits on tickets in submission order while this thread reads and submits.
    let (tx, rx) = std::sync::mpsc::channel::<(PathBuf, PathBuf, PathBuf, Option<_>)>();
    let writer = std::thread::spawn(move || {
        let mut done = Vec::new();
        let mut failed = 0usize;
        for (witness, proof, public, ticket) in rx {
            let result: Result<_> = match ticket {
                None => Err(anyhow::anyhow!("cannot read the witness")),
                Some(Err(e)) => Err(anyhow::Error::from(e)),
                Some(Ok(t)) => batchcrypt::groth16::Ticket::<C>::wait(t)
                    .map_err(anyhow::Error::from)
                    .and_then(|p| {
                        batchcrypt::output::write(&proof, p.proof.to_json())?;
                        batchcrypt::output::write(&public, groth16::public_json(&p.public))?;
                        Ok(p)
                    }),
            };
            match result {
                Ok(p) => {
                    let ms = groth16::span(&p.stages[1..]) * 1e3;
                    println!("ok {} {} {ms:.1}", witness.display(), proof.display());
                    done.push((witness.display().to_string(), p.stages));
                }
                Err(e) => {
                    failed += 1;
                    println!("error {}: {e:#}", witness.display());
                }
            }
        }
        (done, failed)
    });
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        let mut parts = line.split_whitespace();
        let Some(w) = parts.next() else { continue };
        let witness = PathBuf::from(w);
        let stem = w.strip_suffix(".wtns").unwrap_or(w).to_string();
        let proof = parts.next().map_or_else(
            || PathBuf::from(format!("{stem}.proof.json")),
            PathBuf::from,
        );
        let public = parts.next().map_or_else(
            || PathBuf::from(format!("{stem}.public.json")),
            PathBuf::from,
        );
        let ticket = Some(Witness::read(&witness).map(|wt| service.submit(wt)));
        if tx.send((witness, proof, public, ticket)).is_err() {
            break;
        }
    }
    drop(tx);
    let (done, failed) = writer.join().expect("writer thread");
    let secs = service.elapsed();
    drop(service);
    let utilization = monitor.map(|m| m.finish());
    summarize(&done, failed, secs, utilization);
    if let Some(path) = &a.trace {
        let jobs: Vec<_> = done
            .iter()
            .map(|(n, s)| (n.clone(), s.as_slice()))
            .collect();
        batchcrypt::output::write(path, groth16::chrome_trace(&jobs))?;
        eprintln!("trace: {} (open in ui.perfetto.dev)", path.display());
    }
    if failed > 0 {
        anyhow::bail!("{failed} of {} jobs failed", done.len() + failed);
    }
    Ok(())
}

/// Throughput, latency and each stage's mean over the finished jobs, and the GPU memory budget.
fn summarize(
    done: &[(String, Vec<groth16::Stage>)],
    failed: usize,
    secs: f64,
    utilization: std::result::Result<Option<batchcrypt::backend::nvml::Utilization>, String>,
) {
    if done.is_empty() {
        eprintln!("no proofs ({failed} failed)");
        return;
    }
    let n = done.len() as f64;
    let mut latency: Vec<f64> = done.iter().map(|(_, s)| groth16::span(s)).collect();
    latency.sort_by(f64::total_cmp);
    eprintln!(
        "{} proofs ({failed} failed) in {secs:.2} s: {:.2} proofs/s; latency median {:.1} ms, max {:.1} ms (queue wait included)",
        done.len(),
        n / secs,
        latency[latency.len() / 2] * 1e3,
        latency[latency.len() - 1] * 1e3
    );
    let mut names: Vec<&str> = Vec::new();
    for (_, stages) in done {
        for s in stages {
            if !names.contains(&s.name) {
                names.push(s.name);
            }
        }
    }
    eprintln!("  {:<32} {:>10}", "stage", "mean ms");
    for name in names {
        let total: f64 = done
            .iter()
            .flat_map(|(_, s)| s.iter().filter(|x| x.name == name))
            .map(|x| x.seconds)
            .sum();
        eprintln!("  {name:<32} {:>10.2}", total / n * 1e3);
    }
    let on_gpu = done.iter().any(|(_, s)| {
        s.iter()
            .any(|x| x.backend == Some(batchcrypt::Backend::Cuda))
    });
    if let Some(m) = batchcrypt::backend::gpu::memory_stats()
        .first()
        .copied()
        .filter(|_| on_gpu)
    {
        eprintln!(
            "  GPU memory: at most {} MiB reserved at once of a {} MiB budget; {} waits for memory ({:.1} ms in all)",
            m.peak >> 20,
            m.limit >> 20,
            m.waits,
            m.waited.as_secs_f64() * 1e3
        );
    }
    if on_gpu {
        match utilization {
            Ok(Some(u)) => eprintln!("  {u} over the run"),
            Ok(None) => eprintln!(
                "  GPU utilization: the run was shorter than the driver's sampling period"
            ),
            Err(why) => eprintln!("  GPU utilization: not measured ({why})"),
        }
    }
}

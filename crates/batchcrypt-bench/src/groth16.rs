//! Groth16 proofs of the fixture circuits (scripts/zk-fixtures.sh, `chain-K`: a 2^K domain over
//! BN254, `chain-K-bls12381` over BLS12-381): our prover with the CPU backend (arkworks on all cores), the GPU backend and auto; snarkjs's
//! prover (Node.js, all cores) on the same key and witness where Node.js and snarkjs are
//! installed. One proof's latency, then throughput with 1, 4 and 16 proofs in flight at once
//! (one shared key, bases in GPU memory once).

use crate::report::{time, Report};
use ark_ff::PrimeField;
use batchcrypt::groth16::{
    Curve, CurveId, ProverService, ProvingKey, R1cs, ServiceConfig, Witness,
};
use batchcrypt::{with_curve, Backend, BackendChoice, Engine};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::time::Instant;

const GROUP: &str = "groth16";
/// Copies of the key's bases in the precomputed GPU rows.
const PRECOMPUTE: u32 = 8;

pub(crate) fn fixtures() -> PathBuf {
    std::env::var_os("BATCHCRYPT_ZK_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target/zk-fixtures"))
}

/// The chain circuit (scripts/zk/circuits/chain.circom) sized for a 2^k domain, and its witness
/// for the fixture input (x0 = 5, k = 987654321987654321), exactly as circom 2 and its witness
/// generator write them: the tests compare the files with circom's at 2^10 (byte for byte, up to
/// the order of terms within a linear combination, which circom takes from a hash map).
/// circom takes hours to compile the circuit at 2^20 on two cores; this takes a second.
pub fn chain_circuit<F: PrimeField>(k: u32) -> (R1cs<F>, Witness<F>) {
    let steps = ((1usize << k) - 8) / 2;
    let (one, minus) = (F::from(1u64), -F::from(1u64));
    // Wires: 1, y (output), x0 (public input), k (private input), x[0..=steps], bit[0..steps].
    let (y, x0, kk) = (1u32, 2u32, 3u32);
    let x = |i: usize| (4 + i) as u32;
    let bit = |i: usize| (5 + steps + i) as u32;
    let mut constraints = Vec::with_capacity(2 * steps + 2);
    constraints.push([vec![(x0, minus)], vec![(kk, one)], vec![(x(0), minus)]]);
    for i in 0..steps {
        constraints.push([
            vec![(x(i), minus)],
            vec![(x(i), one)],
            vec![(kk, one), (x(i + 1), minus)],
        ]);
        constraints.push([vec![(0, minus), (bit(i), one)], vec![(bit(i), one)], vec![]]);
    }
    constraints.push([vec![(x(steps), minus)], vec![(x0, one)], vec![(y, minus)]]);
    let r1cs = R1cs {
        n_wires: 2 * steps + 5,
        n_public: 2,
        n_outputs: 1,
        n_private_inputs: 1,
        constraints,
    };
    let (a, b) = (F::from(5u64), F::from(987654321987654321u64));
    let mut xs = Vec::with_capacity(steps + 1);
    xs.push(a * b);
    for i in 0..steps {
        xs.push(xs[i] * xs[i] + b);
    }
    let mut values = vec![one, xs[steps] * a, a, b];
    values.extend(xs);
    values.extend((0..steps).map(|i| F::from(((i >> 1) & 1) as u64)));
    (r1cs, Witness { values })
}

/// `n` copies of a witness, made on all cores: the witnesses of proofs in flight exist before
/// the clock starts, as a client's do (copied on the one submitting thread inside the timing,
/// they would bound the rate of several GPUs).
pub fn witness_copies<F: PrimeField>(witness: &Witness<F>, n: usize) -> Vec<Witness<F>> {
    (0..n)
        .into_par_iter()
        .map(|_| Witness {
            values: witness.values.clone(),
        })
        .collect()
}

/// Writes the chain circuit for a 2^k domain over `curve`'s scalar field into `dir` as
/// circuit.r1cs and witness.wtns.
pub fn write_chain(k: u32, dir: &Path, curve: CurveId) -> anyhow::Result<()> {
    anyhow::ensure!(
        (4..=28).contains(&k),
        "the chain circuit's domain is 2^4..2^28"
    );
    with_curve!(curve, C => write_chain_on::<<C as Curve>::Fr>(k, dir))
}

fn write_chain_on<F: PrimeField>(k: u32, dir: &Path) -> anyhow::Result<()> {
    let (r1cs, witness) = chain_circuit::<F>(k);
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("circuit.r1cs"), r1cs.to_bytes())?;
    std::fs::write(dir.join("witness.wtns"), witness.to_bytes())?;
    println!(
        "chain circuit: {} constraints, {} wires, in {}",
        r1cs.constraints.len(),
        r1cs.n_wires,
        dir.display()
    );
    Ok(())
}

/// The chain-K fixtures present (chain-K over BN254, chain-K-bls12381), BN254 first, each
/// curve's smallest first.
fn circuits(dir: &Path) -> Vec<(CurveId, u32, PathBuf)> {
    let mut v: Vec<(CurveId, u32, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.strip_prefix("chain-")?.to_string();
            let (k, curve) = match name.split_once('-') {
                Some((k, c)) => (k.parse().ok()?, CurveId::parse(c)?),
                None => (name.parse().ok()?, CurveId::Bn254),
            };
            e.path()
                .join("circuit.zkey")
                .is_file()
                .then(|| (curve, k, e.path()))
        })
        .collect();
    v.sort_by_key(|(c, k, _)| (*c != CurveId::Bn254, *k));
    v
}

/// Seconds for one `snarkjs groth16 prove` (a fresh Node.js process, as users run it), if
/// snarkjs can run here.
fn snarkjs_seconds(dir: &Path) -> Option<f64> {
    let cli = PathBuf::from("scripts/zk/node_modules/snarkjs/build/cli.cjs");
    if !cli.is_file() {
        return None;
    }
    let out = std::env::temp_dir();
    let run = || {
        std::process::Command::new("node")
            .arg(&cli)
            .args(["groth16", "prove"])
            .arg(dir.join("circuit.zkey"))
            .arg(dir.join("witness.wtns"))
            .arg(out.join("bc-bench-proof.json"))
            .arg(out.join("bc-bench-public.json"))
            .output()
            .ok()
            .filter(|o| o.status.success())
    };
    run()?;
    let t = Instant::now();
    run()?;
    Some(t.elapsed().as_secs_f64())
}

pub fn run(rep: &mut Report, quick: bool) -> anyhow::Result<()> {
    let dir = fixtures();
    let mut list = circuits(&dir);
    anyhow::ensure!(
        !list.is_empty(),
        "no chain-K fixtures in {} (scripts/zk-fixtures.sh chain:16 builds one; BATCHCRYPT_ZK_FIXTURES points elsewhere)",
        dir.display()
    );
    if quick {
        // The smallest of each curve.
        list.dedup_by_key(|(c, _, _)| *c);
    }
    rep.header(
        "Groth16 proofs (circom circuit, snarkjs key): one proof, then proofs in flight at once",
    );
    for (curve, k, path) in list {
        with_curve!(curve, C => circuit::<C>(rep, quick, k, &path))?;
    }
    Ok(())
}

/// The proofs of one fixture (a 2^k domain) over the curve `C`.
fn circuit<C: Curve>(rep: &mut Report, quick: bool, k: u32, path: &Path) -> anyhow::Result<()> {
    let gpu = Backend::Cuda.is_available();
    {
        let witness = Witness::<C::Fr>::read(path.join("witness.wtns"))?;
        let case = match C::SNARKJS {
            "bn128" => format!("prove 2^{k}"),
            _ => format!("{} prove 2^{k}", C::NAME.to_lowercase()),
        };
        let threads = batchcrypt::backend::cpu::threads();
        let snark = snarkjs_seconds(path);
        let peer = snark.map(|s| {
            let name = "snarkjs (node, all cores)";
            rep.add(GROUP, &case, name, 1, 0, s, None);
            name
        });
        // (label, backend, precomputed copies of the key's bases on the GPU)
        let mut engines = vec![(
            format!("ours cpu (arkworks {threads} threads)"),
            BackendChoice::Cpu,
            1,
        )];
        if gpu {
            let cuda = BackendChoice::Exact(Backend::Cuda);
            engines.push(("ours gpu".to_string(), cuda, 1));
            engines.push((
                format!("ours gpu, key precomputed x{PRECOMPUTE}"),
                cuda,
                PRECOMPUTE,
            ));
        }
        let auto = "ours auto";
        engines.push((auto.to_string(), BackendChoice::Auto, 1));
        // The same after `ours auto` saved what it measured: where a later process starts.
        let saved = "ours auto, calibration saved";
        engines.push((saved.to_string(), BackendChoice::Auto, 1));
        // A calibration file of this run's own (every other row measures afresh).
        let calibration = tempfile::tempdir()?;
        let _file = CalibrationFile::set(calibration.path().join("calibration.json"));
        for (name, choice, copies) in &engines {
            let pk =
                &ProvingKey::<C>::read(path.join("circuit.zkey"))?.with_precomputation(*copies);
            let engine = match name.as_str() {
                n if n == saved => Engine::with_backend(*choice),
                _ => Engine::calibrating(*choice),
            };
            let mut rng = rand::rngs::OsRng;
            let mut prove = || {
                engine
                    .groth16()
                    .prove(pk, &witness, &mut rng)
                    .expect("proof")
            };
            // The process's first proof with this key: the key's bases go to the GPU (and
            // their precomputed copies are made there) inside it.
            let t_first = Instant::now();
            let first = prove();
            let t_first = t_first.elapsed().as_secs_f64();
            if *choice != BackendChoice::Cpu {
                rep.add(
                    GROUP,
                    &case,
                    &format!("{name}, first proof (key to the GPU)"),
                    1,
                    0,
                    t_first,
                    peer,
                );
            }
            let ran: Vec<String> = first
                .stages
                .iter()
                .filter_map(|s| s.backend.map(|b| b.to_string()))
                .collect();
            let reps = if *choice == BackendChoice::Cpu || quick {
                1
            } else {
                5
            };
            let t = time(reps, || drop(prove()));
            rep.add(GROUP, &case, name, 1, 0, t, peer);
            println!(
                "{:<34} {:<36} {:>10.1} ms  (steps on {})",
                "",
                name,
                t * 1e3,
                ran.join(",")
            );
            let stages: Vec<String> = prove()
                .stages
                .iter()
                .map(|s| format!("{} {:.2}", s.name, s.seconds * 1e3))
                .collect();
            println!("{:<34} {:<36} ms: {}", "", "", stages.join(" | "));
            if name == auto {
                engine.save_calibration()?;
            }
            if *choice == BackendChoice::Cpu || name == saved {
                continue;
            }
            // Proofs in flight at once through the prover service (one shared key and engine).
            let engine = std::sync::Arc::new(Engine::with_backend(*choice));
            let key = std::sync::Arc::new(
                ProvingKey::<C>::read(path.join("circuit.zkey"))?.with_precomputation(*copies),
            );
            for jobs in [1usize, 4, 16] {
                // About two seconds of proofs (the driver samples utilization every 1/6 s to 1 s).
                let total = if quick {
                    jobs
                } else {
                    ((2.0 / t) as usize).clamp(2 * jobs, 64.max(2 * jobs))
                };
                let service = ProverService::start(
                    engine.clone(),
                    key.clone(),
                    ServiceConfig {
                        workers: jobs,
                        queue: jobs,
                    },
                );
                // One round at this concurrency first, as a running service has had: the key's
                // bases go to the GPU, and each proof in flight finds its streams and page-locked
                // staging (three uploads a proof) pooled rather than allocated in the timed run.
                let warm: Vec<_> = witness_copies(&witness, jobs)
                    .into_iter()
                    .map(|w| service.submit(w))
                    .collect();
                for t in warm {
                    drop(t.wait()?);
                }
                batchcrypt::backend::gpu::reset_memory_stats();
                let monitor = gpu
                    .then(batchcrypt::backend::nvml::UtilizationMonitor::start)
                    .and_then(Result::ok);
                let witnesses = witness_copies(&witness, total);
                let t = Instant::now();
                let tickets: Vec<_> = witnesses.into_iter().map(|w| service.submit(w)).collect();
                for t in tickets {
                    t.wait()?;
                }
                let secs = t.elapsed().as_secs_f64();
                drop(service);
                let utilization = monitor
                    .and_then(|m| m.finish())
                    .map(|u| format!("; {u}"))
                    .unwrap_or_default();
                let what = format!("{name}, {jobs} in flight");
                rep.add(GROUP, &case, &what, total as u64, 0, secs, peer);
                let memory = batchcrypt::backend::gpu::memory_stats()
                    .first()
                    .copied()
                    .filter(|_| gpu)
                    .map(|m| {
                        format!(
                            "; GPU memory peak {} MiB of {} MiB, {} waits",
                            m.peak >> 20,
                            m.limit >> 20,
                            m.waits
                        )
                    })
                    .unwrap_or_default();
                println!(
                    "{:<34} {:<36} {:>10.1} proofs/s{memory}{utilization}",
                    "",
                    what,
                    total as f64 / secs
                );
            }
        }
    }
    Ok(())
}

/// `BATCHCRYPT_CALIBRATION` pointed at `path` while this lives, then as it was.
struct CalibrationFile(Option<std::ffi::OsString>);

impl CalibrationFile {
    fn set(path: std::path::PathBuf) -> Self {
        let env = batchcrypt::calibration::CALIBRATION_ENV;
        let old = std::env::var_os(env);
        std::env::set_var(env, path);
        CalibrationFile(old)
    }
}

impl Drop for CalibrationFile {
    fn drop(&mut self) {
        let env = batchcrypt::calibration::CALIBRATION_ENV;
        match self.0.take() {
            Some(v) => std::env::set_var(env, v),
            None => std::env::remove_var(env),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generated circuit and witness are circom's (fixture chain-10 from
    /// scripts/zk-fixtures.sh): the witness byte for byte, the constraint system byte for byte
    /// once the terms of each linear combination are in wire order; the witness satisfies it.
    #[test]
    fn chain_circuit_is_circoms() {
        is_circoms::<batchcrypt::bn254::Fr>("chain-10");
        is_circoms::<batchcrypt::bls12_381::Fr>("chain-10-bls12381");
    }

    fn is_circoms<F: PrimeField>(fixture: &str) {
        let dir = batchcrypt_testdata::zk_fixture_dir(fixture);
        let (r1cs, witness) = chain_circuit::<F>(10);
        assert_eq!(r1cs.unsatisfied(&witness.values), None);
        let (Ok(want_r1cs), Ok(want_wtns)) = (
            std::fs::read(dir.join("circuit.r1cs")),
            std::fs::read(dir.join("witness.wtns")),
        ) else {
            assert!(
                !batchcrypt_testdata::zk_fixtures_required(),
                "fixture {fixture} missing: run scripts/zk-fixtures.sh"
            );
            eprintln!(
                "note: fixture {fixture} not built (scripts/zk-fixtures.sh); compared with nothing"
            );
            return;
        };
        let in_wire_order = |mut r: R1cs<F>| {
            for lc in r.constraints.iter_mut().flatten() {
                lc.sort_by_key(|t| t.0);
            }
            r.to_bytes()
        };
        assert_eq!(r1cs.to_bytes().len(), want_r1cs.len());
        let circom = R1cs::<F>::parse(&want_r1cs).expect("circom's circuit.r1cs");
        assert!(
            in_wire_order(r1cs) == in_wire_order(circom),
            "circuit.r1cs differs from circom's"
        );
        assert!(
            witness.to_bytes() == want_wtns,
            "witness.wtns differs from circom's"
        );
    }
}

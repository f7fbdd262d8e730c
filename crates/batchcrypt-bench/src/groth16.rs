//! Groth16 proofs of the fixture circuits (scripts/zk-fixtures.sh, `chain-K`: a 2^K domain): our
//! prover with the CPU backend (arkworks on all cores), the GPU backend and auto; snarkjs's
//! prover (Node.js, all cores) on the same key and witness where Node.js and snarkjs are
//! installed. One proof's latency, then throughput with 1, 4 and 16 proofs in flight at once
//! (one shared key, bases in GPU memory once).

use crate::report::{time, Report};
use batchcrypt::groth16::{ProverService, ProvingKey, ServiceConfig, Witness};
use batchcrypt::{Backend, BackendChoice, Engine};
use std::path::{Path, PathBuf};
use std::time::Instant;

const GROUP: &str = "groth16";

fn fixtures() -> PathBuf {
    std::env::var_os("BATCHCRYPT_ZK_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target/zk-fixtures"))
}

/// The chain-K fixtures present, smallest first.
fn circuits(dir: &Path) -> Vec<(u32, PathBuf)> {
    let mut v: Vec<(u32, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let k = e
                .file_name()
                .to_str()?
                .strip_prefix("chain-")?
                .parse()
                .ok()?;
            e.path()
                .join("circuit.zkey")
                .is_file()
                .then(|| (k, e.path()))
        })
        .collect();
    v.sort();
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
        list.truncate(1);
    }
    rep.header(
        "Groth16 proofs (circom circuit, snarkjs key): one proof, then proofs in flight at once",
    );
    let gpu = cfg!(feature = "cuda") && Backend::Cuda.is_available();
    for (k, path) in list {
        let pk = ProvingKey::read(path.join("circuit.zkey"))?;
        let witness = Witness::read(path.join("witness.wtns"))?;
        let case = format!("prove 2^{k}");
        let threads = batchcrypt::backend::cpu::threads();
        let snark = snarkjs_seconds(&path);
        let peer = snark.map(|s| {
            let name = "snarkjs (node, all cores)";
            rep.add(GROUP, &case, name, 1, 0, s, None);
            name
        });
        let mut engines = vec![(
            format!("ours cpu (arkworks {threads} threads)"),
            BackendChoice::Cpu,
        )];
        if gpu {
            engines.push(("ours gpu".to_string(), BackendChoice::Exact(Backend::Cuda)));
        }
        engines.push(("ours auto".to_string(), BackendChoice::Auto));
        for (name, choice) in &engines {
            let engine = Engine::with_backend(*choice);
            let mut rng = rand::rngs::OsRng;
            let mut prove = || {
                engine
                    .groth16()
                    .prove(&pk, &witness, &mut rng)
                    .expect("proof")
            };
            let first = prove();
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
            if *choice == BackendChoice::Cpu {
                continue;
            }
            // Proofs in flight at once through the prover service (one shared key and engine).
            let engine = std::sync::Arc::new(Engine::with_backend(*choice));
            let key = std::sync::Arc::new(ProvingKey::read(path.join("circuit.zkey"))?);
            for jobs in [1usize, 4, 16] {
                let total = if quick { jobs } else { (2 * jobs).max(8) };
                let service = ProverService::start(
                    engine.clone(),
                    key.clone(),
                    ServiceConfig {
                        workers: jobs,
                        queue: jobs,
                    },
                );
                drop(
                    service
                        .submit(Witness {
                            values: witness.values.clone(),
                        })
                        .wait()?,
                ); // bases to the GPU
                batchcrypt::scheduler::reset_gpu_stats();
                let t = Instant::now();
                let tickets: Vec<_> = (0..total)
                    .map(|_| {
                        service.submit(Witness {
                            values: witness.values.clone(),
                        })
                    })
                    .collect();
                for t in tickets {
                    t.wait()?;
                }
                let secs = t.elapsed().as_secs_f64();
                drop(service);
                let what = format!("{name}, {jobs} in flight");
                rep.add(GROUP, &case, &what, total as u64, 0, secs, peer);
                let memory = batchcrypt::scheduler::gpu_stats()
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
                    "{:<34} {:<36} {:>10.1} proofs/s{memory}",
                    "",
                    what,
                    total as f64 / secs
                );
            }
        }
    }
    Ok(())
}

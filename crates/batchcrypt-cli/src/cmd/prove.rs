//! `batchcrypt prove`: a Groth16 proof for a circom circuit, as `snarkjs groth16 prove` makes it.

use anyhow::{Context, Result};
use batchcrypt::groth16::{self, ProvingKey, Witness};
use batchcrypt::Engine;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
#[command(
    about = "Groth16 proof for a circom circuit: reads snarkjs's proving key and a witness, writes proof.json and public.json",
    long_about = "Proves that a witness satisfies a circom circuit, with the proving key from \
`snarkjs groth16 setup` (and `snarkjs zkey contribute`). Writes proof.json and public.json exactly \
as `snarkjs groth16 prove` does, so `snarkjs groth16 verify` and the Solidity verifier exported by \
snarkjs accept them. The NTTs and MSMs run where the cost model says (--backend forces one). Every \
proof is checked before it is written: a witness that does not satisfy the circuit is an error.",
    after_help = "Examples:\n  circom circuit.circom --r1cs --wasm\n  snarkjs wtns calculate circuit_js/circuit.wasm input.json witness.wtns\n  batchcrypt prove circuit.zkey witness.wtns proof.json public.json\n  snarkjs groth16 verify verification_key.json public.json proof.json\n  batchcrypt prove circuit.zkey witness.wtns --repeat 5 --timings --trace trace.json"
)]
pub struct Args {
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
}

pub fn run(engine: &Engine, a: &Args) -> Result<()> {
    let t = Instant::now();
    let pk = ProvingKey::read(&a.zkey)?;
    let witness = Witness::read(&a.witness)?;
    eprintln!(
        "read {} ({} signals, {} public, domain 2^{}) and the witness in {:.0} ms",
        a.zkey.display(),
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
                eprintln!("  {:<24} {:>9.2} ms  {on}", s.name, s.seconds * 1e3);
            }
        }
        runs.push(proved);
    }
    let last = runs.last().expect("at least one proof");
    std::fs::write(&a.proof, last.proof.to_json())
        .with_context(|| format!("writing {}", a.proof.display()))?;
    std::fs::write(&a.public, groth16::public_json(&last.public))
        .with_context(|| format!("writing {}", a.public.display()))?;
    if let Some(path) = &a.trace {
        let jobs: Vec<_> = runs
            .iter()
            .enumerate()
            .map(|(i, r)| (format!("proof {}", i + 1), r.stages.as_slice()))
            .collect();
        std::fs::write(path, groth16::chrome_trace(&jobs))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    println!(
        "wrote {} and {} ({} public signals); checked before writing",
        a.proof.display(),
        a.public.display(),
        last.public.len()
    );
    Ok(())
}

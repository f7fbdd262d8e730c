//! `batchcrypt prove`: a Groth16 proof for a circom circuit, as `snarkjs groth16 prove` makes it;
//! `batchcrypt groth16-setup`: a development proving key for any circuit size.

use anyhow::{Context, Result};
use batchcrypt::groth16::{self, ProvingKey, R1cs, Witness};
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
}

pub fn prove(engine: &Engine, a: &ProveArgs) -> Result<()> {
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
                eprintln!("  {:<32} {:>9.2} ms  {on}", s.name, s.seconds * 1e3);
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

#[derive(clap::Args)]
#[command(
    about = "Development Groth16 proving key for a circom circuit (.r1cs in, snarkjs .zkey out), from a one-party setup: for tests and benchmarks only",
    long_about = "Makes a Groth16 proving key in snarkjs's format for a circuit of any size in \
seconds, without a powers-of-tau ceremony: the secrets are drawn at random by this one process and \
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
    let t = Instant::now();
    let r1cs = R1cs::read(&a.r1cs)?;
    eprintln!(
        "read {} ({} constraints, {} wires, {} public) in {:.1} s; computing the key...",
        a.r1cs.display(),
        r1cs.constraints.len(),
        r1cs.n_wires,
        r1cs.n_public,
        t.elapsed().as_secs_f64()
    );
    let zkey = groth16::setup(&r1cs, &mut rand::rngs::OsRng)?;
    std::fs::write(&a.zkey, &zkey).with_context(|| format!("writing {}", a.zkey.display()))?;
    println!(
        "wrote {} ({} MB) in {:.1} s: a development key, not for production (see --help)",
        a.zkey.display(),
        zkey.len() >> 20,
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

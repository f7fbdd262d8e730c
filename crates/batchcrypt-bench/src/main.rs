//! `batchcrypt-bench`: runs our paths and the peers' in one process, on the same batches, and
//! prints ratios. Results also go to a JSON file for the record.

mod aes;
mod bitcoin;
mod groth16;
mod msm;
mod ntt;
mod p256;
mod peers;
mod report;
mod scaling;
mod secp256k1;
mod serve;
mod sha256;
mod sm2;

/// The `batchcrypt` binary's allocator, for its reason (crates/batchcrypt-cli/src/main.rs): the
/// service benchmark runs the server in this process too.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::Parser;

#[derive(Parser)]
#[command(about = "Benchmarks batchcrypt against its peers on the same batches, printing ratios")]
struct Args {
    /// Which benchmark groups to run (`scaling`, over every GPU of the machine, also in parts:
    /// `scaling-signatures`, `scaling-msm`, `scaling-sha256`, `scaling-groth16`; `serve`, the
    /// service under many clients, also in parts: `serve-ecdsa`, `serve-sha256d`,
    /// `serve-proofs`; `bitcoin-resync`, the part of `bitcoin` without its stress
    /// block, and `msm-windows`, the MSM kernels by window size, run only when named).
    #[arg(default_values_t = vec!["sha256".to_string(), "secp256k1".to_string(), "p256".to_string(), "sm2".to_string(), "aes".to_string(), "xts".to_string(), "aes-batch".to_string(), "bn254".to_string(), "bls12-381".to_string(), "ntt".to_string(), "groth16".to_string(), "bitcoin".to_string()])]
    groups: Vec<String>,
    /// Smaller batches and fewer repetitions (a smoke run, not for the record).
    #[arg(long)]
    quick: bool,
    /// Write every measurement here as JSON.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    /// Instead of benchmarking, write the benchmark circuit for a 2^K domain (circom's chain
    /// circuit, scripts/zk/circuits/chain.circom) and its witness into DIR, over the scalar field
    /// of CURVE (bn128, the default, or bls12381: circom's --prime).
    #[arg(long, num_args = 2..=3, value_names = ["K", "DIR", "CURVE"])]
    chain_circuit: Option<Vec<String>>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if let Some(v) = &args.chain_circuit {
        let curve = v.get(2).map_or("bn128", String::as_str);
        let curve = batchcrypt::groth16::CurveId::parse(curve)
            .ok_or_else(|| anyhow::anyhow!("unknown curve {curve}: use bn128 or bls12381"))?;
        return groth16::write_chain(v[0].parse()?, std::path::Path::new(&v[1]), curve);
    }
    let mut rep = report::Report::new();
    print!("{}", batchcrypt::describe_hardware());
    for g in &args.groups {
        match g.as_str() {
            "sha256" => sha256::run(&mut rep, args.quick)?,
            "secp256k1" => secp256k1::run(&mut rep, args.quick)?,
            "p256" => p256::run(&mut rep, args.quick)?,
            "sm2" => sm2::run(&mut rep, args.quick)?,
            "sm2-chunks" => sm2::run_chunks(&mut rep, args.quick)?,
            "aes" => aes::run(&mut rep, args.quick)?,
            "xts" => aes::run_xts(&mut rep, args.quick)?,
            "aes-batch" => aes::run_batch(&mut rep, args.quick)?,
            "bn254" => msm::bn254(&mut rep, args.quick)?,
            "bls12-381" => msm::bls12_381(&mut rep, args.quick)?,
            "msm-windows" => msm::windows(&mut rep, args.quick)?,
            "ntt" => ntt::run(&mut rep, args.quick)?,
            "groth16" => groth16::run(&mut rep, args.quick)?,
            "bitcoin" => bitcoin::run(&mut rep, args.quick)?,
            "bitcoin-resync" => bitcoin::run_resync(&mut rep, args.quick)?,
            "scaling" => scaling::run(&mut rep, args.quick)?,
            "scaling-signatures" => scaling::verification(&mut rep, args.quick)?,
            "scaling-msm" => scaling::msm(&mut rep, args.quick)?,
            "scaling-sha256" => scaling::sha256(&mut rep, args.quick)?,
            "scaling-groth16" => scaling::groth16(&mut rep, args.quick)?,
            "serve" => serve::run(&mut rep, args.quick, serve::Part::All)?,
            "serve-ecdsa" => serve::run(&mut rep, args.quick, serve::Part::Ecdsa)?,
            "serve-sha256d" => serve::run(&mut rep, args.quick, serve::Part::Sha256d)?,
            "serve-proofs" => serve::run(&mut rep, args.quick, serve::Part::Proofs)?,
            other => anyhow::bail!("unknown benchmark group {other:?} (known: bitcoin, bitcoin-resync, scaling, scaling-signatures, scaling-msm, scaling-sha256, scaling-groth16, serve, serve-ecdsa, serve-sha256d, serve-proofs, sha256, secp256k1, p256, sm2, sm2-chunks, aes, xts, aes-batch, bn254, bls12-381, msm-windows, ntt, groth16)"),
        }
    }
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&rep.rows)?)?;
        println!("\nwrote {}", path.display());
    }
    Ok(())
}

//! The proving part of the service benchmark: 64 clients submitting proofs for three circuits of
//! different sizes at once, under a GPU memory budget that holds two of their keys.

use super::loops::{latencies, GROUP};
use super::observe::{http_get, samples};
use crate::report::Report;
use batchcrypt::Engine;
use batchcrypt_serve::client::{Client, JobOptions};
use batchcrypt_serve::ServerConfig;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// 64 clients proving on three circuits at once under a budget that holds two of their keys.
pub(super) async fn proofs(
    rep: &mut Report,
    server_rt: &tokio::runtime::Handle,
    engine: Arc<Engine>,
    quick: bool,
) -> anyhow::Result<()> {
    let ks: [u32; 3] = if quick { [8, 9, 10] } else { [12, 14, 16] };
    let (clients, per_client) = if quick { (8, 1) } else { (64, 3) };
    rep.header(&format!(
        "service: {clients} clients proving on chain circuits 2^{}, 2^{}, 2^{} at once",
        ks[0], ks[1], ks[2]
    ));
    let mut circuits = Vec::new();
    for &k in &ks {
        let (r1cs, witness) = crate::groth16::chain_circuit(k);
        let zkey = batchcrypt::groth16::setup::<batchcrypt::bn254::Bn254, _>(
            &r1cs,
            &mut rand::rngs::OsRng,
        )?;
        let key = batchcrypt::groth16::ProvingKey::<batchcrypt::bn254::Bn254>::parse(&zkey)?;
        circuits.push((
            k,
            zkey,
            witness.to_bytes(),
            key.device_bytes(),
            key.proof_device_bytes(),
        ));
    }
    let workers = 4u64;
    let mut keys: Vec<u64> = circuits.iter().map(|c| c.3).collect();
    keys.sort();
    let proof_max = circuits.iter().map(|c| c.4).max().unwrap_or(0);
    let budget = keys[1] + keys[2] + workers * proof_max;
    let data = std::env::temp_dir().join(format!("batchcrypt-bench-prove-{}", std::process::id()));
    let mut config = ServerConfig::new(data.clone());
    config.listen = "127.0.0.1:0".parse()?;
    config.metrics = Some("127.0.0.1:0".parse()?);
    config.prover.workers = workers as usize;
    config.prover.memory = budget;
    batchcrypt::backend::gpu::reset_memory_stats();
    let server = server_rt
        .spawn(batchcrypt_serve::start(engine, config))
        .await?
        .map_err(anyhow::Error::msg)?;
    let addr = server.addr.to_string();
    let mut c = Client::connect(&addr).await.map_err(anyhow::Error::msg)?;
    let mut ids = Vec::new();
    for (k, zkey, ..) in &circuits {
        ids.push(
            c.register(zkey.clone(), &format!("chain-{k}"))
                .await?
                .circuit_id,
        );
    }
    println!(
        "  keys {} MiB; budget {} MiB holds two keys and {workers} proofs",
        keys.iter()
            .map(|k| (k >> 20).to_string())
            .collect::<Vec<_>>()
            .join(" + "),
        budget >> 20
    );
    let circuits = Arc::new(circuits);
    let ids = Arc::new(ids);
    let t = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|client| {
            let (c, circuits, ids) = (c.clone(), circuits.clone(), ids.clone());
            tokio::spawn(async move {
                let mut c = c;
                let mut out = Vec::new();
                for j in 0..per_client {
                    let which = (client + j) % 3;
                    let s = Instant::now();
                    let r = c
                        .prove(
                            &ids[which],
                            circuits[which].2.clone(),
                            JobOptions::default(),
                        )
                        .await;
                    let ok = r.as_ref().is_ok_and(|r| {
                        r.job.as_ref().is_some_and(|j| {
                            j.state == batchcrypt_serve::proto::JobState::Done as i32
                        })
                    });
                    out.push((which, s.elapsed().as_secs_f64(), ok));
                }
                out
            })
        })
        .collect();
    let mut results = Vec::new();
    for t in tasks {
        results.extend(tokio::time::timeout(Duration::from_secs(1800), t).await??);
    }
    let secs = t.elapsed().as_secs_f64();
    let failures = results.iter().filter(|r| !r.2).count();
    rep.add(
        GROUP,
        "Groth16, 3 circuits at once",
        &format!("served, {clients} clients"),
        results.len() as u64,
        0,
        secs,
        None,
    );
    for (i, k) in ks.iter().enumerate() {
        let lat: Vec<f64> = results.iter().filter(|r| r.0 == i).map(|r| r.1).collect();
        let (p50, p99, max) = latencies(lat);
        println!("  chain 2^{k}: latency p50 {p50:.0} ms, p99 {p99:.0} ms, max {max:.0} ms");
    }
    let metrics = server
        .metrics_addr
        .map(|m| async move { http_get(m).await })
        .unwrap();
    let text = metrics.await.unwrap_or_default();
    let evictions = samples(&text, "batchcrypt_key_evictions_total")
        .next()
        .map_or("?", |(_, v)| v)
        .to_string();
    let peak = batchcrypt::backend::gpu::memory_stats()
        .iter()
        .map(|s| s.peak)
        .max()
        .map_or("no GPU".to_string(), |p| format!("{} MiB", p >> 20));
    println!(
        "  {} proofs in {secs:.1} s ({:.1}/s), {failures} failed; key evictions {evictions}; peak GPU memory {peak}",
        results.len(),
        results.len() as f64 / secs
    );
    server.shutdown().await.map_err(anyhow::Error::msg)?;
    let _ = std::fs::remove_dir_all(&data);
    anyhow::ensure!(failures == 0, "{failures} proofs failed");
    Ok(())
}

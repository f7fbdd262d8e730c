//! Scaling over the GPUs of one machine, in one process: the same batch on one GPU, then on 2, 4,
//! ... (every GPU the process sees), each engine forced onto the GPUs; the ratio is against one
//! GPU. Host-memory batches are split by the dispatcher; the device-resident SHA256d case keeps
//! each GPU's share in its own memory and runs the kernels only. Each GPU's host link is printed
//! beside, for the cases the link bounds.

use crate::report::{time, Report};
use batchcrypt::backend::gpu::{self, LinkKind};
use batchcrypt::secp256k1::EcdsaOptions;
use batchcrypt::sha256::Mode;
use batchcrypt::{BackendChoice, Engine};
use rayon::prelude::*;

const GROUP: &str = "scaling";

/// 1, 2, 4, ... GPUs, and all of them.
fn gpu_sets(count: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..)
        .map(|k| 1usize << k)
        .take_while(|&k| k < count)
        .collect();
    v.push(count);
    v
}

/// One engine per set of GPUs (1, 2, 4, ... all), each forced onto its GPUs; None (with a line
/// saying why) without a GPU.
struct Sets {
    engines: Vec<(usize, Engine)>,
    reps: usize,
}

fn name(k: usize) -> String {
    format!("ours, {k} GPU{}", if k == 1 { "" } else { "s" })
}

impl Sets {
    fn new(rep: &mut Report, what: &str, quick: bool) -> Option<Sets> {
        if let Err(why) = gpu::availability() {
            println!("\n({what} scaling skipped: no GPU: {why})");
            return None;
        }
        let count = gpu::count();
        let engines = gpu_sets(count)
            .into_iter()
            .map(|k| {
                let all: Vec<usize> = (0..k).collect();
                (k, Engine::with_gpus(BackendChoice::Gpu, &all))
            })
            .collect();
        rep.header(&format!(
            "{what} over {count} GPU{} (same batch, one process; ratio against one GPU)",
            if count == 1 { "" } else { "s" }
        ));
        Some(Sets {
            engines,
            reps: if quick { 3 } else { 5 },
        })
    }
}

/// Every scaling group: signatures, MSM, SHA256d, Groth16.
pub fn run(rep: &mut Report, quick: bool) -> anyhow::Result<()> {
    verification(rep, quick)?;
    msm(rep, quick)?;
    sha256(rep, quick)?;
    groth16(rep, quick)
}

/// ECDSA and BIP340 verification from host memory, split by the dispatcher.
pub fn verification(rep: &mut Report, quick: bool) -> anyhow::Result<()> {
    let Some(Sets { engines, reps }) = Sets::new(rep, "Signature verification", quick) else {
        return Ok(());
    };
    // ECDSA and BIP340: 2^20 distinct signatures (2^16 quick), repeated to the batch size; a
    // block of its own, so their memory is freed before the hashing.
    {
        let (distinct, n) = if quick {
            (1 << 16, 1 << 20)
        } else {
            (1 << 20, 1 << 24)
        };
        let s = signatures(distinct);
        let hashes: Vec<[u8; 32]> = (0..n).map(|i| s.hashes[i % distinct]).collect();
        let der: Vec<&[u8]> = (0..n).map(|i| s.der[i % distinct].as_slice()).collect();
        let keys: Vec<&[u8]> = (0..n).map(|i| s.keys[i % distinct].as_slice()).collect();
        let sigs: Vec<[u8; 64]> = (0..n).map(|i| s.schnorr[i % distinct]).collect();
        let xonly: Vec<[u8; 32]> = (0..n).map(|i| s.xonly[i % distinct]).collect();
        let msgs: Vec<&[u8]> = hashes.iter().map(|h| h.as_slice()).collect();
        let opts = EcdsaOptions::default();
        let case = format!("ecdsa verify 2^{}", n.trailing_zeros());
        for (k, e) in &engines {
            let mut ok = (true, 0);
            let t = time(reps, || {
                let out = e
                    .secp256k1()
                    .verify_ecdsa(&hashes, &der, &keys, &opts)
                    .expect("ECDSA batch");
                ok = (out.value.all_valid(), out.gpus.len());
            });
            anyhow::ensure!(ok.0, "{k} GPUs: valid signatures rejected");
            anyhow::ensure!(ok.1 == *k, "{k} GPUs asked, {} ran the batch", ok.1);
            rep.add(GROUP, &case, &name(*k), n as u64, 0, t, Some(&name(1)));
        }
        let case = format!("bip340 verify 2^{}", n.trailing_zeros());
        for (k, e) in &engines {
            let mut ok = (true, 0);
            let t = time(reps, || {
                let out = e
                    .secp256k1()
                    .verify_schnorr(&msgs, &sigs, &xonly)
                    .expect("BIP340 batch");
                ok = (out.value.all_valid(), out.gpus.len());
            });
            anyhow::ensure!(ok.0, "{k} GPUs: valid signatures rejected");
            anyhow::ensure!(ok.1 == *k, "{k} GPUs asked, {} ran the batch", ok.1);
            rep.add(GROUP, &case, &name(*k), n as u64, 0, t, Some(&name(1)));
        }
    }

    Ok(())
}

/// G1 MSM with the bases resident on every GPU of the set.
pub fn msm(rep: &mut Report, quick: bool) -> anyhow::Result<()> {
    let Some(Sets { engines, reps }) = Sets::new(rep, "G1 MSM", quick) else {
        return Ok(());
    };
    // G1 MSM, 2^24 points (2^20 quick): each GPU sums its part of the digit windows over every
    // point, the bases resident on all of them (uploaded in the warm-up run, as a proving key's
    // are); the scalars come from host memory.
    {
        use batchcrypt::bn254::{Bases, G1};
        use batchcrypt::msm::sample;
        let n = if quick { 1usize << 20 } else { 1 << 24 };
        let (points, scalars) = sample::<G1>(n, 11);
        let bases = Bases::<G1>::new(points);
        let case = format!("g1 msm 2^{}", n.trailing_zeros());
        let mut first = None;
        for (k, e) in &engines {
            let mut got = None;
            let t = time(reps, || {
                let out = e.msm(&bases, &scalars).expect("MSM");
                got = Some((out.value, out.gpus.len()));
            });
            let (value, ran) = got.expect("timed");
            anyhow::ensure!(ran == *k, "{k} GPUs asked, {ran} ran the MSM");
            anyhow::ensure!(
                *first.get_or_insert(value) == value,
                "{k} GPUs: the MSM differs from one GPU's"
            );
            rep.add(
                GROUP,
                &case,
                &name(*k),
                n as u64,
                32 * n as u64,
                t,
                Some(&name(1)),
            );
        }
        // The same scalars as canonical little-endian bytes (as a numpy array or a file holds
        // them), which the GPUs read in place: no conversion on the host.
        let bytes = batchcrypt::msm::canonical_bytes(&scalars);
        let canonical = batchcrypt::msm::Scalars::canonical(&bytes)?;
        for (k, e) in &engines {
            let mut got = None;
            let t = time(reps, || {
                got = Some(e.msm(&bases, canonical).expect("MSM").value);
            });
            anyhow::ensure!(
                got == first,
                "{k} GPUs: the MSM of canonical scalars differs from one GPU's"
            );
            rep.add(
                GROUP,
                &case,
                &format!("{}, canonical scalars", name(*k)),
                n as u64,
                32 * n as u64,
                t,
                Some(&name(*k)),
            );
        }
        // The links' floor: the same scalars moved to every GPU as the MSM moves them (each
        // GPU's cut of a chunk up its host link, the others' cuts from GPU to GPU), nothing
        // computed.
        for (k, _) in &engines {
            let gpus: Vec<usize> = (0..*k).collect();
            let t = time(reps, || {
                batchcrypt::msm::gpu::upload_seconds(&gpus, &scalars).expect("upload");
            });
            println!(
                "{case}: the scalars to {k} GPU{} alone, nothing computed: {:.2} ms ({:.1} GB/s of the host's bytes)",
                if *k == 1 { "" } else { "s" },
                t * 1e3,
                32.0 * n as f64 / t / 1e9
            );
            rep.add(
                GROUP,
                &case,
                &format!("{}, scalars' crossing only", name(*k)),
                n as u64,
                32 * n as u64,
                t,
                Some(&format!("{}, scalars' crossing only", name(1))),
            );
        }
    }

    Ok(())
}

/// SHA256d of 64-byte messages from host memory (each GPU's host link printed first) and
/// resident in GPU memory.
pub fn sha256(rep: &mut Report, quick: bool) -> anyhow::Result<()> {
    let Some(Sets { engines, reps }) = Sets::new(rep, "SHA256d-64", quick) else {
        return Ok(());
    };
    let sets: Vec<usize> = engines.iter().map(|e| e.0).collect();
    let d = engines[0].1.dispatcher();
    for g in 0..gpu::count() {
        match d.link_of(g, LinkKind::Staged) {
            Ok(l) => println!(
                "GPU {g} host link through staging: {:.1} GB/s up, {:.1} GB/s down, {:.1} GB/s each way at once",
                l.h2d / 1e9,
                l.d2h / 1e9,
                l.duplex / 1e9
            ),
            Err(why) => println!("GPU {g} host link: not measured ({why})"),
        }
    }
    // SHA256d of 64-byte messages, 2^26 (2^22 quick): from host memory, then resident.
    let n = if quick { 1usize << 22 } else { 1 << 26 };
    let mut data = vec![0u8; 64 * n];
    data.par_chunks_mut(1 << 16).enumerate().for_each(|(i, c)| {
        c.iter_mut()
            .enumerate()
            .for_each(|(j, b)| *b = (i * 31 + j * 7) as u8)
    });
    let want = engines[0].1.sha256().sha256d_64(&data)?.value;
    let mut out = vec![[0u8; 32]; n];
    let case = format!("sha256d-64 2^{} host memory", n.trailing_zeros());
    for (k, e) in &engines {
        let mut ran = 0;
        let t = time(reps, || {
            ran = e
                .sha256()
                .hash_fixed_into(&data, 64, Mode::Double, &mut out)
                .expect("SHA256d batch")
                .gpus
                .len();
        });
        anyhow::ensure!(out == want, "{k} GPUs: digests differ from one GPU's");
        anyhow::ensure!(ran == *k, "{k} GPUs asked, {ran} ran the batch");
        rep.add(
            GROUP,
            &case,
            &name(*k),
            n as u64,
            64 * n as u64,
            t,
            Some(&name(1)),
        );
    }
    let case = format!("sha256d-64 2^{} in GPU memory", n.trailing_zeros());
    for &k in &sets {
        let share = n.div_ceil(k);
        let mut batches = (0..k)
            .map(|g| {
                let part = &data[64 * (g * share).min(n)..64 * ((g + 1) * share).min(n)];
                gpu::run_on(g, || {
                    batchcrypt::sha256::gpu::DeviceBatch::upload(
                        &batchcrypt::sha256::Messages::fixed(part, 64)?,
                    )
                })
            })
            .collect::<batchcrypt::Result<Vec<_>>>()?;
        let t = time(reps, || {
            std::thread::scope(|s| {
                for (g, b) in batches.iter_mut().enumerate() {
                    s.spawn(move || gpu::run_on(g, || b.run(Mode::Double).expect("kernel")));
                }
            })
        });
        let got: Vec<[u8; 32]> = batches
            .iter()
            .map(|b| b.download())
            .collect::<batchcrypt::Result<Vec<_>>>()?
            .concat();
        anyhow::ensure!(got == want, "{k} GPUs resident: digests differ");
        rep.add(
            GROUP,
            &case,
            &name(k),
            n as u64,
            64 * n as u64,
            t,
            Some(&name(1)),
        );
    }
    Ok(())
}

/// Groth16 proofs/s with 16 and 32 proofs in flight through the prover service over 1, 2, 4,
/// ... GPUs (worker `i` on GPU `i mod k`, each GPU holding the key): the `chain-K` fixture of
/// `BATCHCRYPT_ZK_FIXTURES` (K = 20; 16 and only 16 in flight quick), skipped with a line where
/// it is absent.
pub fn groth16(rep: &mut Report, quick: bool) -> anyhow::Result<()> {
    use batchcrypt::groth16::{ProverService, ProvingKey, ServiceConfig, Witness};
    use std::sync::Arc;
    if let Err(why) = gpu::availability() {
        println!("\n(Groth16 scaling skipped: no GPU: {why})");
        return Ok(());
    }
    let k = if quick { 16 } else { 20 };
    let dir = crate::groth16::fixtures().join(format!("chain-{k}"));
    if !dir.join("circuit.zkey").is_file() {
        println!(
            "\n(Groth16 scaling skipped: no {}; scripts/zk-fixtures.sh or the GPU script writes it)",
            dir.join("circuit.zkey").display()
        );
        return Ok(());
    }
    let key = Arc::new(ProvingKey::<batchcrypt::bn254::Bn254>::read(
        dir.join("circuit.zkey"),
    )?);
    let witness = Witness::read(dir.join("witness.wtns"))?;
    rep.header(&format!(
        "Groth16 over the GPUs: proofs/s of the chain circuit at 2^{k} constraints"
    ));
    let count = gpu::count();
    let in_flight: &[usize] = if quick { &[16] } else { &[16, 32] };
    for &jobs in in_flight {
        let case = format!("groth16 prove 2^{k}, {jobs} in flight");
        for g in gpu_sets(count) {
            let all: Vec<usize> = (0..g).collect();
            let engine = Arc::new(Engine::with_gpus(BackendChoice::Gpu, &all));
            let service = ProverService::start(
                engine,
                key.clone(),
                ServiceConfig {
                    workers: jobs,
                    queue: jobs,
                },
            );
            // A round of proofs first (at least one per GPU): every copy of the key is uploaded
            // before the clock starts.
            let warm: Vec<_> = crate::groth16::witness_copies(&witness, jobs.max(g))
                .into_iter()
                .map(|w| service.submit(w))
                .collect();
            for t in warm {
                t.wait()?;
            }
            let total = if quick { 2 * jobs } else { 8 * jobs };
            let witnesses = crate::groth16::witness_copies(&witness, total);
            let started = std::time::Instant::now();
            let tickets: Vec<_> = witnesses.into_iter().map(|w| service.submit(w)).collect();
            for t in tickets {
                t.wait()?;
            }
            let secs = started.elapsed().as_secs_f64();
            drop(service);
            rep.add(
                GROUP,
                &case,
                &name(g),
                total as u64,
                0,
                secs,
                Some(&name(1)),
            );
            println!(
                "{:<34} {:<36} {:>10.1} proofs/s",
                "",
                name(g),
                total as f64 / secs
            );
        }
    }
    Ok(())
}

struct Signatures {
    hashes: Vec<[u8; 32]>,
    der: Vec<Vec<u8>>,
    keys: Vec<Vec<u8>>,
    schnorr: Vec<[u8; 64]>,
    xonly: Vec<[u8; 32]>,
}

/// `n` valid ECDSA (DER, compressed keys) and BIP340 signatures over distinct hashes, signed on
/// all cores.
fn signatures(n: usize) -> Signatures {
    use secp256k1::{ecdsa, schnorr, Keypair, Message, SecretKey};
    let items: Vec<_> = (0..n as u64)
        .into_par_iter()
        .map(|i| {
            let mut seed = [0u8; 32];
            seed[..8].copy_from_slice(&(i + 1).to_le_bytes());
            seed[31] = 2;
            let sk = SecretKey::from_secret_bytes(seed).expect("nonzero key below n");
            let hash = batchcrypt::sha256::digest(&seed);
            let kp = Keypair::from_secret_key(&sk);
            (
                hash,
                ecdsa::sign(Message::from_digest(hash), &sk)
                    .serialize_der()
                    .to_vec(),
                kp.public_key().serialize().to_vec(),
                schnorr::sign_no_aux_rand(&hash, &kp).to_byte_array(),
                kp.x_only_public_key().0.to_byte_array(),
            )
        })
        .collect();
    let mut s = Signatures {
        hashes: vec![],
        der: vec![],
        keys: vec![],
        schnorr: vec![],
        xonly: vec![],
    };
    for (h, d, k, sg, x) in items {
        s.hashes.push(h);
        s.der.push(d);
        s.keys.push(k);
        s.schnorr.push(sg);
        s.xonly.push(x);
    }
    s
}

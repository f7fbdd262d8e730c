//! SHA-256 family: our CPU backends against `sha2` and OpenSSL (single core and all cores), the
//! single-message SHA256d path, and the GPU against our best CPU path.

use crate::report::{time, Report};
use batchcrypt::sha256::{Digest, Mode};
use batchcrypt::{Backend, BackendChoice, Engine, Primitive};
use rayon::prelude::*;
use sha2::Digest as _;

const GROUP: &str = "sha256";

fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// OpenSSL's fastest API for many small messages: the low-level SHA256_Init/Update/Final. (The
/// one-shot `SHA256()` of OpenSSL 3 looks the algorithm up on every call and is several times slower.)
fn openssl_one(m: &[u8]) -> Digest {
    let mut h = openssl::sha::Sha256::new();
    h.update(m);
    h.finish()
}

fn sha2_one(m: &[u8]) -> Digest {
    sha2::Sha256::digest(m).into()
}

fn cpu_backends() -> Vec<Backend> {
    Backend::ALL
        .into_iter()
        .filter(|b| !b.is_gpu() && b.implements(Primitive::Sha256) && b.is_available())
        .collect()
}

/// Our backends and the peers over `n` messages of `len` bytes, on `threads` threads.
fn cpu_case(
    rep: &mut Report,
    len: usize,
    total: usize,
    reps: usize,
    threads: usize,
) -> anyhow::Result<()> {
    let n = (total / len).max(16);
    let buf = data(n * len, len as u64);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()?;
    let case = format!("sha256 {} x {} B, {} thr", n, len, threads);
    let bytes = (n * len) as u64;
    pool.install(|| -> anyhow::Result<()> {
        let mut out = batchcrypt::backend::cpu::zeroed_arrays::<32>(n);
        let peer = |f: fn(&[u8]) -> Digest, out: &mut Vec<Digest>| {
            if threads == 1 {
                for (o, m) in out.iter_mut().zip(buf.chunks_exact(len)) {
                    *o = f(m);
                }
            } else {
                out.par_iter_mut()
                    .zip(buf.par_chunks_exact(len))
                    .for_each(|(o, m)| *o = f(m));
            }
        };
        let t = time(reps, || peer(openssl_one, &mut out));
        rep.add(GROUP, &case, "openssl", n as u64, bytes, t, None);
        let reference = out.clone();
        let t = time(reps, || peer(sha2_one, &mut out));
        rep.add(
            GROUP,
            &case,
            "sha2 crate",
            n as u64,
            bytes,
            t,
            Some("openssl"),
        );
        for b in cpu_backends() {
            let e = Engine::with_backend(BackendChoice::Exact(b));
            // Into the same buffer as the peers (allocating a fresh output would time page faults).
            let t = time(reps, || {
                e.sha256()
                    .hash_fixed_into(&buf, len, Mode::Single, &mut out)
                    .map(|_| ())
                    .unwrap()
            });
            anyhow::ensure!(out == reference, "{b} disagrees with OpenSSL");
            rep.add(
                GROUP,
                &case,
                &format!("batchcrypt {b}"),
                n as u64,
                bytes,
                t,
                Some("openssl"),
            );
        }
        Ok(())
    })
}

/// One 64-byte message at a time: our SHA256d against OpenSSL's SHA256d and plain SHA-256.
fn single_message(rep: &mut Report, reps: usize) {
    let n = 200_000;
    let buf = data(64 * n, 9);
    let case = "one 64 B message at a time";
    let mut sink = [0u8; 32];
    let mut run = |f: &dyn Fn(&[u8]) -> Digest| {
        time(reps, || {
            for m in buf.chunks_exact(64) {
                let d = f(m);
                sink[0] ^= d[0];
            }
        })
    };
    let t_ossl1 = run(&|m| openssl_one(m));
    let t_ossl2 = run(&|m| openssl_one(&openssl_one(m)));
    let t_ours = run(&|m| batchcrypt::sha256::digest_double(m));
    let t_sha2 = run(&|m| sha2_one(&sha2_one(m)));
    std::hint::black_box(sink);
    rep.add(
        GROUP,
        case,
        "openssl sha256",
        n as u64,
        64 * n as u64,
        t_ossl1,
        None,
    );
    rep.add(
        GROUP,
        case,
        "openssl sha256d",
        n as u64,
        64 * n as u64,
        t_ossl2,
        Some("openssl sha256"),
    );
    rep.add(
        GROUP,
        case,
        "sha2 crate sha256d",
        n as u64,
        64 * n as u64,
        t_sha2,
        Some("openssl sha256"),
    );
    rep.add(
        GROUP,
        case,
        "batchcrypt sha256d",
        n as u64,
        64 * n as u64,
        t_ours,
        Some("openssl sha256"),
    );
    println!(
        "{:<34} batchcrypt sha256d vs openssl sha256d: {:.2}x",
        "",
        t_ossl2 / t_ours
    );
}

fn gpu(rep: &mut Report, quick: bool) -> anyhow::Result<()> {
    use batchcrypt::sha256::{gpu::DeviceBatch, Messages};
    if let Err(why) = Backend::Cuda.availability() {
        println!("\n(no GPU benchmarks: {why})");
        return Ok(());
    }
    let gpu = batchcrypt::backend::cuda::Gpu::get().map_err(anyhow::Error::msg)?;
    let pinned = batchcrypt::pipeline::measure_link_pinned(gpu)?;
    let pageable = batchcrypt::pipeline::measure_link(gpu)?;
    let staged = batchcrypt::pipeline::measure_link_staged(gpu)?;
    println!(
        "\nhost<->device: pinned {:.1} GB/s up, {:.1} GB/s down; pageable {:.1} up, {:.1} down; pageable through staging {:.1} up, {:.1} down, {:.1} each way at once",
        pinned.h2d / 1e9,
        pinned.d2h / 1e9,
        pageable.h2d / 1e9,
        pageable.d2h / 1e9,
        staged.h2d / 1e9,
        staged.d2h / 1e9,
        staged.duplex / 1e9
    );
    rep.header("SHA256d of 64-byte messages: GPU vs our best CPU path (all cores)");
    let cpu = Engine::with_backend(BackendChoice::Cpu);
    let cuda = Engine::with_backend(BackendChoice::Exact(Backend::Cuda));
    let auto = Engine::with_backend(BackendChoice::Auto);
    let max_log = if quick { 20 } else { 24 };
    for log in (16..=max_log).step_by(2) {
        let n = 1usize << log;
        let buf = data(64 * n, log as u64);
        let case = format!("sha256d 2^{log} x 64 B");
        let bytes = 64 * n as u64;
        let reps = if log >= 22 { 5 } else { 11 };
        // Both write into a caller's buffer that is already mapped, as a node hashing block after
        // block would; a fresh output allocation would time page faults, not hashing.
        let mut cpu_out = batchcrypt::backend::cpu::zeroed_arrays::<32>(n);
        let mut done = None;
        let t = time(reps.min(5), || {
            done = Some(
                cpu.sha256()
                    .hash_fixed_into(&buf, 64, Mode::Double, &mut cpu_out)
                    .unwrap(),
            )
        });
        let done = done.unwrap();
        let base = format!("cpu {} ({} thr)", done.backend, done.threads);
        rep.add(GROUP, &case, &base, n as u64, bytes, t, None);
        let mut gpu_out = batchcrypt::backend::cpu::zeroed_arrays::<32>(n);
        let t = time(reps, || {
            cuda.sha256()
                .hash_fixed_into(&buf, 64, Mode::Double, &mut gpu_out)
                .map(|_| ())
                .unwrap()
        });
        anyhow::ensure!(gpu_out == cpu_out, "GPU and CPU disagree at 2^{log}");
        rep.add(
            GROUP,
            &case,
            "gpu end to end (host mem)",
            n as u64,
            bytes,
            t,
            Some(&base),
        );
        // The dispatcher's choice, timed like the rows it chooses between.
        let mut ran = None;
        let mut auto_out = batchcrypt::backend::cpu::zeroed_arrays::<32>(n);
        let t = time(reps.min(5), || {
            ran = Some(
                auto.sha256()
                    .hash_fixed_into(&buf, 64, Mode::Double, &mut auto_out)
                    .unwrap()
                    .backend,
            )
        });
        anyhow::ensure!(auto_out == cpu_out, "auto and CPU disagree at 2^{log}");
        rep.add(
            GROUP,
            &case,
            &format!("auto (ran {})", ran.unwrap()),
            n as u64,
            bytes,
            t,
            Some(&base),
        );
        let mut dev = DeviceBatch::upload(&Messages::fixed(&buf, 64)?)?;
        let t = dev.time_kernel(Mode::Double, reps * 2)?;
        anyhow::ensure!(
            dev.download()? == cpu_out,
            "resident GPU result differs at 2^{log}"
        );
        rep.add(
            GROUP,
            &case,
            "gpu kernel only",
            n as u64,
            bytes,
            t,
            Some(&base),
        );
    }
    let n = 1usize << 20;
    let buf = data(80 * n, 80);
    let mut dev = DeviceBatch::upload(&Messages::fixed(&buf, 80)?)?;
    let t = dev.time_kernel(Mode::Double, 11)?;
    rep.add(
        GROUP,
        "sha256d 2^20 x 80 B",
        "gpu kernel only",
        n as u64,
        80 * n as u64,
        t,
        None,
    );
    Ok(())
}

pub fn run(rep: &mut Report, quick: bool) -> anyhow::Result<()> {
    let (total, reps) = if quick { (2 << 20, 3) } else { (32 << 20, 7) };
    let all = rayon::current_num_threads();
    // OpenSSL reads this at start-up; hiding SHA-NI (":~0x20000000") times its single-message code
    // as on a CPU without SHA-NI, the CPUs on which our AVX2 path is the one chosen.
    if let Ok(mask) = std::env::var("OPENSSL_ia32cap") {
        println!("OpenSSL's CPU features are masked: OPENSSL_ia32cap={mask}");
    }
    for threads in [1, all] {
        rep.header(&format!(
            "SHA-256, batches of equal-length messages, {threads} thread(s)"
        ));
        for len in [32usize, 64, 80, 1024, 1 << 20] {
            let total = if len == 1 << 20 {
                total.max(16 << 20)
            } else {
                total
            };
            cpu_case(rep, len, total, reps, threads)?;
        }
        if threads == all && all == 1 {
            break;
        }
    }
    rep.header("SHA256d, one message at a time, 1 thread");
    single_message(rep, reps);
    gpu(rep, quick)
}

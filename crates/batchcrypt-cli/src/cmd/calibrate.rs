use anyhow::Result;
use batchcrypt::dispatch::Plan;
use batchcrypt::sha256::Mode;
use batchcrypt::Engine;

/// Measures the cost model for 64-byte SHA256d (merkle nodes), SM2, AES and BN254 MSM, and prints
/// the decision per size.
pub fn run(engine: &Engine) -> Result<()> {
    print!("{}", batchcrypt::describe_hardware());
    println!("\nSHA256d of 64-byte messages in host memory: estimated time per batch");
    println!(
        "{:>10}  {:>22}  {:>14}  {:>8}",
        "batch", "best CPU (threads)", "GPU", "choice"
    );
    for log in (4..=24).step_by(2) {
        let n = 1usize << log;
        let [cpu, gpu] = engine.sha256().estimates(n, 64, Mode::Double)?;
        let fmt = |e: Option<f64>| {
            e.map(|s| format!("{:.3} ms", s * 1e3))
                .unwrap_or_else(|| "-".into())
        };
        let choice = match (cpu.estimate_s, gpu.estimate_s) {
            (Some(c), Some(g)) if g < c => "gpu",
            _ => "cpu",
        };
        println!(
            "{:>10}  {:>22}  {:>14}  {:>8}",
            n,
            format!("{} {} ({})", fmt(cpu.estimate_s), cpu.backend, cpu.threads),
            fmt(gpu.estimate_s),
            choice
        );
    }
    sm2_crossovers(engine)?;
    aes_crossovers(engine)?;
    bn254_crossovers(engine)?;
    println!("\nmeasured costs (one thread for CPU backends; compute only, data in place):");
    for (op, b, gpu, c) in engine.dispatcher().measured() {
        let on = if b.is_gpu() {
            format!("{} {gpu}", b.name())
        } else {
            b.name().to_string()
        };
        println!(
            "  {op:<12} {on:<12} fixed {:>9.1} us   per block {:>8.3} ns",
            c.fixed_s * 1e6,
            c.per_unit_s * 1e9
        );
    }
    let d = engine.dispatcher();
    for (op, b, per_unit) in d.measured_streaming() {
        println!(
            "  {op:<12} {:<9} beyond the last-level cache, all threads: {:.3} ns per block",
            b.name(),
            per_unit * 1e9
        );
    }
    let cache = batchcrypt::backend::cpu::last_level_cache_bytes();
    println!(
        "host memory on all cores (bytes read and written): {:.1} GB/s streaming 64 MiB buffers, {:.1} GB/s streaming buffers of twice the {} MiB last-level cache (up to 1 GiB); CPU estimates move the bytes that cache holds at the first rate, the rest at the second",
        d.host_bandwidth() / 1e9,
        d.dram_bandwidth() / 1e9,
        cache >> 20
    );
    use batchcrypt::backend::gpu::LinkKind;
    let gpus = if d.gpus().is_empty() {
        &[0][..]
    } else {
        d.gpus()
    };
    for (&gpu, (kind, how)) in gpus.iter().flat_map(|g| {
        [
            (LinkKind::Pageable, "pageable, one copy"),
            (LinkKind::Staged, "pageable, through page-locked staging"),
            (LinkKind::Pinned, "page-locked"),
        ]
        .into_iter()
        .map(move |k| (g, k))
    }) {
        match d.link_of(gpu, kind) {
            Ok(l) => println!(
                "GPU {gpu} host<->device copies ({how}): {:.1} GB/s up, {:.1} GB/s down, {:.1} GB/s each way at once; one chunk up and back alone {:.1} GB/s each way",
                l.h2d / 1e9,
                l.d2h / 1e9,
                l.duplex / 1e9,
                1e-9 / l.alone
            ),
            Err(why) => println!("GPU {gpu} host<->device copies ({how}): not measured ({why})"),
        }
    }
    Ok(())
}

/// One table of estimates: for each (size, label), the CPU and GPU estimates (every fourth size
/// printed, after `prefix`), then the smallest size sent to the GPU.
fn crossover(
    prefix: &str,
    sizes: &[(usize, String)],
    mut estimates: impl FnMut(usize) -> Result<[Plan; 2]>,
) -> Result<()> {
    let fmt = |e: Option<f64>| {
        e.map(|s| format!("{:.3} ms", s * 1e3))
            .unwrap_or_else(|| "-".into())
    };
    let (mut first_gpu, mut gpu_known) = (None, false);
    for (i, (size, label)) in sizes.iter().enumerate() {
        let [cpu, gpu] = estimates(*size)?;
        gpu_known |= gpu.estimate_s.is_some();
        let on_gpu = matches!((cpu.estimate_s, gpu.estimate_s), (Some(c), Some(g)) if g < c);
        if on_gpu && first_gpu.is_none() {
            first_gpu = Some(label);
        }
        if i % 4 == 0 {
            println!(
                "{prefix}  {label:>8}  {:>12}  {:>12}  {:>6}",
                fmt(cpu.estimate_s),
                fmt(gpu.estimate_s),
                if on_gpu { "gpu" } else { "cpu" }
            );
        }
    }
    match first_gpu {
        Some(label) => println!("{prefix}  GPU from {label} (powers of two)"),
        None if gpu_known => println!(
            "{prefix}  CPU at every size up to {}",
            sizes.last().map(|s| s.1.as_str()).unwrap_or("-")
        ),
        None => println!("{prefix}  CPU (no GPU to measure)"),
    }
    Ok(())
}

fn powers_of_two(
    logs: std::ops::RangeInclusive<u32>,
    label: impl Fn(usize) -> String,
) -> Vec<(usize, String)> {
    logs.map(|l| (1usize << l, label(1usize << l))).collect()
}

/// Per SM2 operation: the estimates at a few batch sizes and the smallest batch sent to the GPU.
fn sm2_crossovers(engine: &Engine) -> Result<()> {
    println!("\nSM2 operations in host memory: estimated time per batch (all CPU cores vs GPU)");
    println!(
        "{:>16}  {:>8}  {:>12}  {:>12}  {:>6}",
        "operation", "batch", "CPU", "GPU", "choice"
    );
    for op in batchcrypt::sm2::OPERATIONS {
        crossover(
            &format!("{op:>16}"),
            &powers_of_two(0..=20, |n| n.to_string()),
            |n| Ok(engine.sm2().estimates(op, n)?),
        )?;
    }
    Ok(())
}

/// AES-128 CTR and GCM: per data location, the estimates at a few sizes and the smallest buffer
/// sent to the GPU.
fn aes_crossovers(engine: &Engine) -> Result<()> {
    use batchcrypt::dispatch::Location;
    println!(
        "\nAES-128 over one buffer: estimated time (all CPU cores vs GPU), by where the data is"
    );
    println!(
        "{:>5} {:>12}  {:>8}  {:>12}  {:>12}  {:>6}",
        "mode", "data in", "size", "CPU", "GPU", "choice"
    );
    let sizes = powers_of_two(10..=32, |b| format!("{} KiB", b >> 10));
    for gcm in [false, true] {
        let mode = if gcm { "gcm" } else { "ctr" };
        for (loc, name) in [
            (Location::Host, "host memory"),
            (Location::Pinned, "page-locked"),
            (Location::Device, "GPU memory"),
        ] {
            crossover(&format!("{mode:>5} {name:>12}"), &sizes, |bytes| {
                Ok(engine.aes().estimates(gcm, bytes, loc))
            })?;
        }
    }
    Ok(())
}

/// BN254 G1 MSM with the bases in GPU memory (a proving key's): the smallest MSM sent to the GPU.
fn bn254_crossovers(engine: &Engine) -> Result<()> {
    use batchcrypt::bn254::{G1, G2};
    println!("\nBN254 MSM, bases in GPU memory: estimated time (all CPU cores vs GPU)");
    println!(
        "{:>16}  {:>8}  {:>12}  {:>12}  {:>6}",
        "operation", "points", "CPU", "GPU", "choice"
    );
    let sizes = powers_of_two(4..=24, |n| n.to_string());
    crossover(&format!("{:>16}", "msm g1"), &sizes, |n| {
        Ok(engine.bn254().estimates::<G1>(n))
    })?;
    crossover(&format!("{:>16}", "msm g2"), &sizes, |n| {
        Ok(engine.bn254().estimates::<G2>(n))
    })?;
    println!("\nBN254 NTT of one polynomial in host memory: estimated time (all CPU cores vs GPU)");
    println!(
        "{:>16}  {:>8}  {:>12}  {:>12}  {:>6}",
        "operation", "size", "CPU", "GPU", "choice"
    );
    crossover(
        &format!("{:>16}", "ntt"),
        &powers_of_two(4..=26, |n| n.to_string()),
        |n| {
            Ok(engine
                .bn254()
                .ntt_estimates(&batchcrypt::bn254::ntt::Ntt::forward(n), 1))
        },
    )
}

use anyhow::Result;
use batchcrypt::sha256::Mode;
use batchcrypt::Engine;

/// Measures the cost model for 64-byte SHA256d (merkle nodes) and the SM2 operations, and prints
/// the decision per size.
pub fn run(engine: &Engine) -> Result<()> {
    print!("{}", batchcrypt::describe_hardware());
    println!("\nSHA256d of 64-byte messages in host memory: estimated time per batch");
    println!("{:>10}  {:>22}  {:>14}  {:>8}", "batch", "best CPU (threads)", "GPU", "choice");
    for log in (4..=24).step_by(2) {
        let n = 1usize << log;
        let [cpu, gpu] = engine.sha256().estimates(n, 64, Mode::Double)?;
        let fmt = |e: Option<f64>| e.map(|s| format!("{:.3} ms", s * 1e3)).unwrap_or_else(|| "-".into());
        let choice = match (cpu.estimate_s, gpu.estimate_s) {
            (Some(c), Some(g)) if g < c => "gpu",
            _ => "cpu",
        };
        println!("{:>10}  {:>22}  {:>14}  {:>8}", n, format!("{} {} ({})", fmt(cpu.estimate_s), cpu.backend, cpu.threads), fmt(gpu.estimate_s), choice);
    }
    sm2_crossovers(engine)?;
    aes_crossovers(engine);
    println!("\nmeasured costs (one thread for CPU backends; compute only, data in place):");
    for (op, b, c) in engine.dispatcher().measured() {
        println!("  {op:<12} {:<9} fixed {:>9.1} us   per block {:>8.3} ns", b.name(), c.fixed_s * 1e6, c.per_unit_s * 1e9);
    }
    match engine.dispatcher().link() {
        Ok(l) => println!("host<->device copies: {:.1} GB/s up, {:.1} GB/s down (pageable)", l.h2d / 1e9, l.d2h / 1e9),
        Err(why) => println!("host<->device copies: not measured ({why})"),
    }
    Ok(())
}

/// Per SM2 operation: the estimates at a few batch sizes and the smallest batch sent to the GPU.
fn sm2_crossovers(engine: &Engine) -> Result<()> {
    println!("\nSM2 operations in host memory: estimated time per batch (all CPU cores vs GPU)");
    println!("{:>16}  {:>8}  {:>12}  {:>12}  {:>6}", "operation", "batch", "CPU", "GPU", "choice");
    for op in batchcrypt::sm2::OPERATIONS {
        let (mut crossover, mut gpu_known) = (None, false);
        for log in 0..=20 {
            let n = 1usize << log;
            let [cpu, gpu] = engine.sm2().estimates(op, n)?;
            gpu_known |= gpu.estimate_s.is_some();
            let on_gpu = matches!((cpu.estimate_s, gpu.estimate_s), (Some(c), Some(g)) if g < c);
            if on_gpu && crossover.is_none() {
                crossover = Some(n);
            }
            if log % 4 == 0 {
                let fmt = |e: Option<f64>| e.map(|s| format!("{:.3} ms", s * 1e3)).unwrap_or_else(|| "-".into());
                println!("{:>16}  {:>8}  {:>12}  {:>12}  {:>6}", op, n, fmt(cpu.estimate_s), fmt(gpu.estimate_s), if on_gpu { "gpu" } else { "cpu" });
            }
        }
        match crossover {
            Some(n) => println!("{op:>16}  GPU from {n} items (powers of two)"),
            None if gpu_known => println!("{op:>16}  CPU at every size up to 2^20"),
            None => println!("{op:>16}  CPU (no GPU to measure)"),
        }
    }
    Ok(())
}

/// AES-128 CTR and GCM: per data location, the estimates at a few sizes and the smallest buffer
/// sent to the GPU.
fn aes_crossovers(engine: &Engine) {
    use batchcrypt::dispatch::Location;
    println!("\nAES-128 over one buffer: estimated time (all CPU cores vs GPU), by where the data is");
    println!("{:>5} {:>12}  {:>8}  {:>12}  {:>12}  {:>6}", "mode", "data in", "size", "CPU", "GPU", "choice");
    for gcm in [false, true] {
        let mode = if gcm { "gcm" } else { "ctr" };
        for (loc, name) in [(Location::Host, "host memory"), (Location::Pinned, "page-locked"), (Location::Device, "GPU memory")] {
            let mut crossover = None;
            for log in 10..=32 {
                let bytes = 1usize << log;
                let [cpu, gpu] = engine.aes().estimates(gcm, bytes, loc);
                let on_gpu = matches!((cpu.estimate_s, gpu.estimate_s), (Some(c), Some(g)) if g < c);
                if on_gpu && crossover.is_none() {
                    crossover = Some(bytes);
                }
                if log % 4 == 0 {
                    let fmt = |e: Option<f64>| e.map(|s| format!("{:.3} ms", s * 1e3)).unwrap_or_else(|| "-".into());
                    println!("{mode:>5} {name:>12}  {:>8}  {:>12}  {:>12}  {:>6}", format!("{} KiB", bytes >> 10), fmt(cpu.estimate_s), fmt(gpu.estimate_s), if on_gpu { "gpu" } else { "cpu" });
                }
            }
            match crossover {
                Some(b) => println!("{mode:>5} {name:>12}  GPU from {} KiB (powers of two)", b >> 10),
                None => println!("{mode:>5} {name:>12}  CPU at every size up to 4 GiB"),
            }
        }
    }
}

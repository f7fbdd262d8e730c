use anyhow::Result;
use batchcrypt::sha256::Mode;
use batchcrypt::Engine;

/// Measures the cost model for 64-byte SHA256d (merkle nodes) and prints the decision per size.
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

use anyhow::Result;
use batchcrypt::dispatch::Plan;
use batchcrypt::Engine;

#[derive(clap::Args)]
pub struct Args {
    /// Measure and print only; keep any saved calibration as it is.
    #[arg(long)]
    no_save: bool,
}

/// Measures the cost model for every operation of the registry, prints the decision per size, and
/// saves the measurements for later processes.
pub fn run(engine: &Engine, args: &Args) -> Result<()> {
    use batchcrypt::dispatch::Location;
    print!("{}", batchcrypt::describe_hardware());
    println!(
        "\nEvery operation: estimated time per batch of typical items (best CPU backend on all cores vs the GPUs, one alone or all together), data in host memory unless said"
    );
    println!(
        "{:>22} {:>12}  {:>8}  {:>12}  {:>12}  {:>6}",
        "operation", "data in", "items", "CPU", "GPU", "choice"
    );
    for op in batchcrypt::registry::REGISTRY {
        let mut places = vec![(Location::Host, "host memory")];
        // Streamed operations: also from page-locked memory and in GPU memory.
        if op.streaming.is_some() {
            places.extend([
                (Location::Pinned, "page-locked"),
                (Location::Device, "GPU memory"),
            ]);
        }
        for (loc, name) in places {
            crossover(
                &format!("{:>22} {name:>12}", op.key),
                &powers_of_two(0..=24, |n| n.to_string()),
                |n| Ok(engine.estimates(op, n as u64, loc)),
            )?;
        }
    }
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
    if !args.no_save {
        let path = engine.save_calibration()?;
        println!(
            "\nsaved to {}: later processes on this machine start from these measurements ({}=off ignores them; run this again after changing the hardware or the build)",
            path.display(),
            batchcrypt::calibration::CALIBRATION_ENV
        );
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
        if i % 6 == 0 {
            println!(
                "{prefix}  {label:>8}  {:>12}  {:>12}  {:>6}",
                fmt(cpu.estimate_s),
                fmt(gpu.estimate_s),
                match (on_gpu, gpu.gpus.count()) {
                    (false, _) => "cpu".to_string(),
                    (true, 1) => format!("gpu {}", gpu.gpus.first()),
                    (true, k) => format!("{k} gpus"),
                }
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

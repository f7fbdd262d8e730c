use anyhow::Result;
use batchcrypt::{Backend, Primitive};

/// The hardware, the backends and the operations, all from the library's own tables.
pub fn run() -> Result<()> {
    print!("{}", batchcrypt::describe_hardware());
    use batchcrypt::calibration;
    match calibration::path() {
        None => println!("calibration: none saved or read ({}=off)", calibration::CALIBRATION_ENV),
        Some(p) if calibration::load().is_some() => println!(
            "calibration: {} (this machine and build: the dispatcher starts from it)",
            p.display()
        ),
        Some(p) if p.exists() => println!(
            "calibration: {} is of another machine or build, or unreadable: ignored (run `batchcrypt calibrate`)",
            p.display()
        ),
        Some(p) => println!(
            "calibration: none saved at {} (`batchcrypt calibrate` measures and saves it; until then each process measures on first use)",
            p.display()
        ),
    }
    println!("backends:");
    for b in Backend::ALL {
        let implements: Vec<&str> = Primitive::ALL
            .into_iter()
            .filter(|p| b.implements(*p))
            .map(Primitive::name)
            .collect();
        let what = implements.join(", ");
        match b.availability() {
            Ok(()) => println!("  {:<12} available ({what})", b.name()),
            Err(why) => println!("  {:<12} unavailable ({what}): {why}", b.name()),
        }
    }
    println!("operations (backends in the order tried; * available here):");
    for op in batchcrypt::registry::REGISTRY {
        let backends: Vec<String> = op
            .backends()
            .map(|b| {
                let mark = if b.is_available() { "*" } else { "" };
                format!("{}{mark}", b.name())
            })
            .collect();
        let split = match op.split {
            batchcrypt::dispatch::Split::Items => ", items split over GPUs",
            batchcrypt::dispatch::Split::Itself => ", spread over GPUs",
            batchcrypt::dispatch::Split::No => "",
        };
        println!(
            "  {:<22} {} [{}{split}]",
            op.key,
            op.about,
            backends.join(", ")
        );
    }
    Ok(())
}

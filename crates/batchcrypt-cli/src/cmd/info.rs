use anyhow::Result;
use batchcrypt::{Backend, Primitive};

/// The hardware, the backends and the operations, all from the library's own tables.
pub fn run() -> Result<()> {
    print!("{}", batchcrypt::describe_hardware());
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

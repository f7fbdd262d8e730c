use anyhow::Result;
use batchcrypt::{Backend, Primitive};

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
    Ok(())
}

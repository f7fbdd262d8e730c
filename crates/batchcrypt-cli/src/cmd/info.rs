use anyhow::Result;
use batchcrypt::Backend;

pub fn run() -> Result<()> {
    print!("{}", batchcrypt::describe_hardware());
    println!("backends:");
    for b in Backend::ALL {
        match b.availability() {
            Ok(()) => println!("  {:<9} available", b.name()),
            Err(why) => println!("  {:<9} unavailable: {why}", b.name()),
        }
    }
    Ok(())
}

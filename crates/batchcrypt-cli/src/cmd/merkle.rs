use anyhow::{bail, Context, Result};
use batchcrypt::bitcoin::{display_hash, parse_block};
use batchcrypt::Engine;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// A raw block in network serialization (as `getblock <hash> 0` returns it, decoded from hex).
    block: PathBuf,
    /// Also print every txid.
    #[arg(long)]
    txids: bool,
}

pub fn run(engine: &Engine, args: &Args) -> Result<()> {
    let raw =
        std::fs::read(&args.block).with_context(|| format!("reading {}", args.block.display()))?;
    let block = parse_block(&raw).with_context(|| format!("parsing {}", args.block.display()))?;
    let t = std::time::Instant::now();
    let txids = block.txids(engine)?;
    let root = engine.sha256().merkle_root(&txids.value)?;
    let elapsed = t.elapsed();
    println!("block      {}", display_hash(&block.hash()));
    println!("txs        {}", block.txs.len());
    println!("merkle     {}", display_hash(&root.value));
    println!(
        "backend    txids on {}, merkle levels on {} ({:.3} ms)",
        txids.backend,
        root.backend,
        elapsed.as_secs_f64() * 1e3
    );
    if args.txids {
        for id in &txids.value {
            println!("{}", display_hash(id));
        }
    }
    if root.value != block.header_merkle_root() {
        bail!(
            "merkle root does not match the header ({})",
            display_hash(&block.header_merkle_root())
        );
    }
    println!("header     matches");
    Ok(())
}

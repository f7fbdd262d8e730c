//! `batchcrypt encrypt` / `decrypt`: AES-CTR (raw, interoperable with `openssl enc`) or the
//! chunked authenticated AES-GCM format, over files or standard input/output, with progress.

use anyhow::{bail, Context, Result};
use batchcrypt::aes::{stream, Key};
use batchcrypt::Engine;
use indicatif::{ProgressBar, ProgressStyle};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::PathBuf;

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Mode {
    /// Authenticated: chunked AES-GCM (docs/aes-file-format.md); wrong keys and any change to the
    /// file are detected.
    Gcm,
    /// Unauthenticated counter mode, byte for byte what `openssl enc -aes-128-ctr -K … -iv …`
    /// writes (or -aes-256-ctr with a 32-byte key). Needs --iv; never reuse a key and IV pair.
    Ctr,
}

#[derive(clap::Args)]
pub struct Args {
    /// Input file; standard input when absent or "-".
    #[arg(long, short)]
    input: Option<PathBuf>,
    /// Output file; standard output when absent or "-".
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// The key as hex: 32 digits (AES-128) or 64 (AES-256).
    #[arg(
        long,
        short,
        conflicts_with = "key_file",
        required_unless_present = "key_file"
    )]
    key: Option<String>,
    /// A file holding the key, as 16 or 32 raw bytes or as hex.
    #[arg(long)]
    key_file: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "gcm")]
    pub(crate) mode: Mode,
    /// CTR only: the initial counter block as 32 hex digits (as `openssl enc -iv`).
    #[arg(long)]
    iv: Option<String>,
    /// GCM encryption only: chunk size as a power of two (12 = 4 KiB … 30 = 1 GiB).
    #[arg(long, default_value_t = stream::DEFAULT_CHUNK_LOG2)]
    pub(crate) chunk_log2: u8,
    /// No progress bar (it is drawn on standard error only when that is a terminal).
    #[arg(long, short)]
    quiet: bool,
}

/// The key's bytes, checked to be an AES-128 or AES-256 key.
pub(crate) fn key_bytes(args: &Args) -> Result<Vec<u8>> {
    let bytes = match (&args.key, &args.key_file) {
        (Some(h), _) => hex::decode(h.trim()).context("--key must be hex (32 or 64 digits)")?,
        (None, Some(p)) => {
            let raw =
                std::fs::read(p).with_context(|| format!("reading key file {}", p.display()))?;
            match raw.len() {
                16 | 32 => raw,
                _ => hex::decode(String::from_utf8_lossy(&raw).trim()).with_context(|| {
                    format!("{}: expected 16 or 32 raw bytes, or hex", p.display())
                })?,
            }
        }
        (None, None) => bail!("give the key with --key HEX or --key-file FILE"),
    };
    Key::new(&bytes)?;
    Ok(bytes)
}

fn progress(args: &Args, total: Option<u64>) -> ProgressBar {
    use std::io::IsTerminal;
    if args.quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = match total {
        Some(t) => ProgressBar::new(t),
        None => ProgressBar::no_length(),
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{bytes:>10}/{total_bytes} [{bar:40}] {binary_bytes_per_sec} eta {eta}",
        )
        .unwrap()
        .progress_chars("=> "),
    );
    bar
}

fn open_input(args: &Args) -> Result<(Box<dyn Read + Send>, Option<u64>)> {
    match args.input.as_ref().filter(|p| p.as_os_str() != "-") {
        None => Ok((Box::new(std::io::stdin()), None)),
        Some(p) => {
            let f = File::open(p).with_context(|| format!("opening {}", p.display()))?;
            let len = f.metadata().ok().map(|m| m.len());
            Ok((Box::new(BufReader::with_capacity(1 << 20, f)), len))
        }
    }
}

pub(crate) fn iv(args: &Args) -> Result<[u8; 16]> {
    let Some(h) = &args.iv else {
        bail!("CTR needs --iv: the initial counter block as 32 hex digits")
    };
    hex::decode(h.trim())
        .ok()
        .and_then(|v| v.try_into().ok())
        .context("--iv must be 32 hex digits (16 bytes)")
}

pub fn run(engine: &Engine, args: &Args, decrypt: bool) -> Result<()> {
    let key = Key::new(&key_bytes(args)?)?;
    let aes = engine.aes();
    transform(args, |input, output, tick| {
        Ok(match (args.mode, decrypt) {
            (Mode::Ctr, _) => stream::ctr(&aes, &key, &iv(args)?, input, output, tick)?,
            (Mode::Gcm, false) => stream::seal(&aes, &key, args.chunk_log2, input, output, tick)?,
            (Mode::Gcm, true) => stream::open(&aes, &key, input, output, tick)?,
        })
    })
}

/// Runs `work` from the input to the output that `args` name, with a progress bar it ticks with
/// the bytes done. A file output appears under its name only once `work` has succeeded (and,
/// decrypting, authenticated everything).
pub(crate) fn transform(
    args: &Args,
    work: impl FnOnce(Box<dyn Read + Send>, &mut dyn Write, &mut dyn FnMut(u64)) -> Result<u64>,
) -> Result<()> {
    let (input, total) = open_input(args)?;
    let file = match args.output.as_ref().filter(|p| p.as_os_str() != "-") {
        Some(p) => Some(batchcrypt::output::AtomicFile::create(p)?),
        None => None,
    };
    let mut output: BufWriter<Box<dyn Write + '_>> = BufWriter::with_capacity(
        1 << 20,
        match &file {
            Some(f) => Box::new(f.file()),
            None => Box::new(std::io::stdout().lock()),
        },
    );
    let bar = progress(args, total);
    let result = work(input, &mut output, &mut |n| bar.set_position(n));
    bar.finish_and_clear();
    let result = result.and_then(|_| Ok(output.flush()?));
    drop(output);
    match (result, file) {
        (Ok(()), Some(f)) => Ok(f.commit()?),
        (Ok(()), None) => Ok(()),
        (Err(e), Some(_)) => {
            let p = args.output.as_ref().unwrap();
            Err(e.context(format!("nothing was written to {}", p.display())))
        }
        (Err(e), None) => Err(e),
    }
}

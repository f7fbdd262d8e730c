use anyhow::{bail, Context, Result};
use batchcrypt::sha256::Mode;
use batchcrypt::Engine;
use std::io::Read;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Files to hash ("-" for standard input). All files form one batch.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Double SHA-256 (Bitcoin's SHA256d).
    #[arg(long)]
    double: bool,
    /// Hash each line (without its newline) as its own message; prints one digest per line.
    #[arg(long)]
    lines: bool,
    /// Print which backend ran, on standard error.
    #[arg(long, short)]
    verbose: bool,
}

fn read(path: &PathBuf) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    if path.as_os_str() == "-" {
        std::io::stdin()
            .read_to_end(&mut buf)
            .context("reading standard input")?;
    } else {
        buf = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    }
    Ok(buf)
}

/// The messages of `--lines`: each line without its newline (`\n` or `\r\n`), empty lines
/// included; a last line needs no newline. `batchcrypt client hash` reads files the same way, so
/// both print the same digests.
pub fn lines(content: &[u8]) -> impl Iterator<Item = &[u8]> {
    // No lines in an empty file; else the last newline ends the last line, not a new one.
    let body = (!content.is_empty()).then(|| content.strip_suffix(b"\n").unwrap_or(content));
    body.into_iter()
        .flat_map(|b| b.split(|&c| c == b'\n'))
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
}

pub fn run(engine: &Engine, args: &Args) -> Result<()> {
    let mode = if args.double {
        Mode::Double
    } else {
        Mode::Single
    };
    let mut data = Vec::new();
    let mut offsets = vec![0u64];
    let mut labels = Vec::new();
    for f in &args.files {
        let content = read(f)?;
        if args.lines {
            for line in lines(&content) {
                data.extend_from_slice(line);
                offsets.push(data.len() as u64);
                labels.push(None);
            }
        } else {
            data.extend_from_slice(&content);
            offsets.push(data.len() as u64);
            labels.push(Some(f.display().to_string()));
        }
    }
    if labels.is_empty() {
        bail!("nothing to hash: the input has no lines");
    }
    let out = engine.sha256().hash_var(&data, &offsets, mode)?;
    if args.verbose {
        eprintln!(
            "{} messages on {} ({} threads)",
            labels.len(),
            out.backend,
            out.threads
        );
    }
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    use std::io::Write;
    for (d, label) in out.value.iter().zip(&labels) {
        match label {
            Some(name) => writeln!(stdout, "{}  {name}", hex::encode(d))?,
            None => writeln!(stdout, "{}", hex::encode(d))?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn lines_as_messages() {
        let cases: [(&[u8], &[&[u8]]); 7] = [
            (b"", &[]),
            (b"\n", &[b""]),
            (b"a", &[b"a"]),
            (b"a\nb\n", &[b"a", b"b"]),
            (b"a\n\nb", &[b"a", b"", b"b"]),
            (b"a\r\nb\r\n\r\n", &[b"a", b"b", b""]),
            (b"a\n\n", &[b"a", b""]),
        ];
        for (text, want) in cases {
            assert_eq!(super::lines(text).collect::<Vec<_>>(), want, "{text:?}");
        }
    }
}

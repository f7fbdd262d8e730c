//! A party's set: a text file of identifiers, one per line, read in chunks (twice: to blind and,
//! at the end, to write the intersection), never held whole in memory.

use crate::error::{Error, Result};
use rayon::slice::ParallelSliceMut;
use std::collections::hash_map::RandomState;
use std::fs::File;
use std::hash::BuildHasher;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

/// A validated set file: no empty lines, no duplicates, at least one item.
#[derive(Debug)]
pub struct ItemFile {
    path: PathBuf,
    count: u64,
}

/// A chunk of items: one buffer and the item boundaries.
pub struct Chunk {
    data: Vec<u8>,
    ends: Vec<usize>,
}

impl Chunk {
    pub fn len(&self) -> usize {
        self.ends.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
    pub fn items(&self) -> Vec<&[u8]> {
        let mut start = 0;
        self.ends
            .iter()
            .map(|&e| {
                let s = &self.data[start..e];
                start = e;
                s
            })
            .collect()
    }
}

fn open(path: &Path) -> Result<BufReader<File>> {
    File::open(path)
        .map(|f| BufReader::with_capacity(1 << 20, f))
        .map_err(|e| Error::invalid(format!("cannot read {}: {e}", path.display())))
}

/// Calls `f` on each line without its end (`\n` or `\r\n`), with its 1-based line number.
fn for_each_line(path: &Path, mut f: impl FnMut(u64, &[u8]) -> Result<()>) -> Result<()> {
    let mut r = open(path)?;
    let mut line = Vec::new();
    let mut no = 0u64;
    loop {
        line.clear();
        let n = r
            .read_until(b'\n', &mut line)
            .map_err(|e| Error::invalid(format!("reading {}: {e}", path.display())))?;
        if n == 0 {
            return Ok(());
        }
        no += 1;
        if line.last() == Some(&b'\n') {
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
        }
        f(no, &line)?;
    }
}

impl ItemFile {
    /// Reads the file: counts items and rejects empty lines and duplicates (found by a 128-bit
    /// keyed fingerprint per line, 16 bytes of memory per item while opening).
    pub fn open(path: &Path) -> Result<Self> {
        let (h1, h2) = (RandomState::new(), RandomState::new());
        let fp = |l: &[u8]| (u128::from(h1.hash_one(l)) << 64) | u128::from(h2.hash_one(l));
        let mut prints = Vec::new();
        for_each_line(path, |no, l| {
            if l.is_empty() {
                return Err(Error::invalid(format!(
                    "{}: line {no} is empty; every line must hold one identifier",
                    path.display()
                )));
            }
            prints.push(fp(l));
            Ok(())
        })?;
        if prints.is_empty() {
            return Err(Error::invalid(format!(
                "{} holds no items: the set must not be empty",
                path.display()
            )));
        }
        let count = prints.len() as u64;
        // Sorted in place (no second copy); a duplicate's lines are found by reading again.
        prints.par_sort_unstable();
        if let Some(w) = prints.windows(2).find(|w| w[0] == w[1]) {
            let dup = w[0];
            drop(prints);
            let mut lines = Vec::new();
            for_each_line(path, |no, l| {
                if fp(l) == dup {
                    lines.push(no);
                }
                Ok(())
            })?;
            return Err(Error::invalid(format!(
                "{}: lines {} and {} hold the same item; remove duplicates first (e.g. `sort -u`)",
                path.display(),
                lines[0],
                lines[1]
            )));
        }
        Ok(ItemFile {
            path: path.to_owned(),
            count,
        })
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Calls `f` on consecutive chunks of at most `size` items, in file order.
    pub fn for_each_chunk(
        &self,
        size: usize,
        mut f: impl FnMut(Chunk) -> Result<()>,
    ) -> Result<()> {
        let mut chunk = Chunk {
            data: Vec::new(),
            ends: Vec::new(),
        };
        for_each_line(&self.path, |_, l| {
            chunk.data.extend_from_slice(l);
            chunk.ends.push(chunk.data.len());
            if chunk.len() == size {
                f(std::mem::replace(
                    &mut chunk,
                    Chunk {
                        data: Vec::new(),
                        ends: Vec::new(),
                    },
                ))?;
            }
            Ok(())
        })?;
        if !chunk.is_empty() {
            f(chunk)?;
        }
        Ok(())
    }

    /// Writes the items at the sorted 0-based positions `matched` to `out`, one per line, into a
    /// temporary file renamed into place only when complete.
    pub fn write_subset(&self, matched: &[u64], out: &Path) -> Result<()> {
        let io = |e: std::io::Error| Error::invalid(format!("writing {}: {e}", out.display()));
        let file = crate::output::AtomicFile::create(out)?;
        let mut w = std::io::BufWriter::new(file.file());
        let mut next = matched.iter().peekable();
        for_each_line(&self.path, |no, l| {
            if next.peek() == Some(&&(no - 1)) {
                next.next();
                w.write_all(l)
                    .and_then(|_| w.write_all(b"\n"))
                    .map_err(io)?;
            }
            Ok(())
        })?;
        w.flush().map_err(io)?;
        drop(w);
        file.commit()
    }
}

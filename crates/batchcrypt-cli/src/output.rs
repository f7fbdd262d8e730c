//! Output files that appear only when complete: written under a temporary name in the target's
//! directory and renamed into place once synced, so an interrupted or failed run (encrypt,
//! decrypt, prove, a client download) leaves nothing under the final name that looks finished.

use anyhow::{Context, Result};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

pub struct AtomicFile {
    tmp: tempfile::NamedTempFile,
    path: PathBuf,
}

impl AtomicFile {
    pub fn create(path: &Path) -> Result<AtomicFile> {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".partial")
            .tempfile_in(dir)
            .with_context(|| format!("creating a temporary file beside {}", path.display()))?;
        Ok(AtomicFile {
            tmp,
            path: path.to_path_buf(),
        })
    }

    /// The temporary file, to write through.
    pub fn file(&self) -> &File {
        self.tmp.as_file()
    }

    /// Syncs the data and renames the file to its final name.
    pub fn commit(self) -> Result<()> {
        self.tmp
            .as_file()
            .sync_all()
            .with_context(|| format!("writing {}", self.path.display()))?;
        self.tmp
            .persist(&self.path)
            .with_context(|| format!("renaming the finished output to {}", self.path.display()))?;
        Ok(())
    }
}

/// Writes `bytes` to `path` atomically.
pub fn write(path: &Path, bytes: impl AsRef<[u8]>) -> Result<()> {
    let f = AtomicFile::create(path)?;
    f.file()
        .write_all(bytes.as_ref())
        .with_context(|| format!("writing {}", path.display()))?;
    f.commit()
}

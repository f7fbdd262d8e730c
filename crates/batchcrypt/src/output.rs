//! Output files that appear only when complete: written under a temporary name in the target's
//! directory and renamed into place once synced, so an interrupted or failed run (encrypt,
//! decrypt, prove, a download) leaves nothing under the final name that looks finished.

use crate::error::{Error, Result};
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
            .map_err(|e| {
                Error::io(
                    e,
                    format!("creating a temporary file beside {}", path.display()),
                )
            })?;
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
        let path = self.path;
        self.tmp
            .as_file()
            .sync_all()
            .map_err(|e| Error::io(e, format!("writing {}", path.display())))?;
        self.tmp.persist(&path).map_err(|e| {
            Error::io(
                e.error,
                format!("renaming the finished output to {}", path.display()),
            )
        })?;
        Ok(())
    }
}

/// Writes `bytes` to `path` atomically.
pub fn write(path: &Path, bytes: impl AsRef<[u8]>) -> Result<()> {
    let f = AtomicFile::create(path)?;
    f.file()
        .write_all(bytes.as_ref())
        .map_err(|e| Error::io(e, format!("writing {}", path.display())))?;
    f.commit()
}

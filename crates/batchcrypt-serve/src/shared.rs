//! Shared-memory regions: files of one directory (`/dev/shm` by default) that clients on the
//! server's machine register once and then name spans of, in place of a request's bytes and as
//! where its digests go, so that bulk data does not cross the connection (inference servers offer
//! the same to local clients). Under many small hash requests the connection's copies, framing
//! and buffers cost the server more than the batch does.
//!
//! The server reads and writes the files with positioned system calls and never maps them: a
//! client that shrinks its file under a request makes that request fail, where reading a mapping
//! past the file's end would kill the server with a bus error.

use crate::proto::{SharedMemoryRegion, SharedSpan};
use bytes::Bytes;
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tonic::Status;

/// Where regions' files are by default: memory, on Linux.
pub const DEFAULT_DIR: &str = "/dev/shm";

/// Names a region's file must start with: the server opens nothing else in the directory.
pub const PREFIX: &str = "batchcrypt-";

/// Regions registered at once: each holds a file open, so at most a quarter of the open-files
/// limit (the connections need the rest), and never more than this.
const MAX_REGIONS: usize = 1 << 16;

/// The registered regions of one server.
pub(crate) struct Regions {
    dir: PathBuf,
    open: Mutex<HashMap<u64, Region>>,
    max: usize,
}

#[derive(Clone)]
struct Region {
    file: Arc<File>,
    /// The file's size when registered: spans must lie within it.
    size: u64,
}

impl Regions {
    /// Regions of files in `dir`, for a process allowed `open_files` descriptors.
    pub(crate) fn new(dir: PathBuf, open_files: u64) -> Self {
        Regions {
            dir,
            open: Mutex::default(),
            max: usize::try_from(open_files / 4).map_or(MAX_REGIONS, |n| n.clamp(1, MAX_REGIONS)),
        }
    }

    /// Opens `name` in the directory (a regular file, not a link) and gives it an id.
    pub(crate) fn register(&self, name: &str) -> Result<SharedMemoryRegion, Status> {
        let valid = name.len() > PREFIX.len()
            && name.len() <= 255
            && name.starts_with(PREFIX)
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
        if !valid {
            return Err(Status::invalid_argument(format!(
                "shared memory {name:?}: name a file of {} as {PREFIX}<letters, digits, '.', '_' or '-'>",
                self.dir.display()
            )));
        }
        let path = self.dir.join(name);
        let not_found = |e: std::io::Error| {
            Status::not_found(format!(
                "shared memory {}: {e} (create it, sized, before registering it)",
                path.display()
            ))
        };
        // Checked before opening and compared after, so a link swapped in between is refused.
        let before = std::fs::symlink_metadata(&path).map_err(not_found)?;
        if !before.file_type().is_file() {
            return Err(Status::invalid_argument(format!(
                "shared memory {}: not a regular file",
                path.display()
            )));
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(not_found)?;
        let meta = file.metadata().map_err(not_found)?;
        if (meta.dev(), meta.ino()) != (before.dev(), before.ino()) {
            return Err(Status::invalid_argument(format!(
                "shared memory {}: replaced while it was being opened",
                path.display()
            )));
        }
        let region = Region {
            file: Arc::new(file),
            size: meta.len(),
        };
        let mut open = self.open.lock().expect("regions");
        if open.len() >= self.max {
            return Err(Status::resource_exhausted(format!(
                "{} shared-memory regions are registered, as many as this server's open-files limit allows: unregister some first",
                self.max
            )));
        }
        let id = loop {
            let id: u64 = rand::random();
            if id != 0 && !open.contains_key(&id) {
                break id;
            }
        };
        let size = region.size;
        open.insert(id, region);
        Ok(SharedMemoryRegion { id, size })
    }

    pub(crate) fn unregister(&self, id: u64) -> Result<SharedMemoryRegion, Status> {
        let r = self.open.lock().expect("regions").remove(&id);
        r.map(|r| SharedMemoryRegion { id, size: r.size })
            .ok_or_else(|| unknown(id))
    }

    /// The region of `span`, checked to lie within it.
    fn region(&self, span: &SharedSpan) -> Result<Region, Status> {
        let r = self
            .open
            .lock()
            .expect("regions")
            .get(&span.region)
            .cloned()
            .ok_or_else(|| unknown(span.region))?;
        if span
            .offset
            .checked_add(span.length)
            .is_none_or(|end| end > r.size)
        {
            return Err(Status::invalid_argument(format!(
                "shared span of {} bytes at {} runs past the end of region {} ({} bytes)",
                span.length, span.offset, span.region, r.size
            )));
        }
        Ok(r)
    }

    /// The bytes of `span`, at most `max` of them.
    pub(crate) fn read(&self, span: &SharedSpan, max: usize) -> Result<Bytes, Status> {
        if span.length > max as u64 {
            return Err(Status::out_of_range(format!(
                "a shared span of {} bytes is over the limit of {max}",
                span.length
            )));
        }
        let r = self.region(span)?;
        let mut data = vec![0u8; span.length as usize];
        r.file
            .read_exact_at(&mut data, span.offset)
            .map_err(|e| shrunk(span, e))?;
        Ok(Bytes::from(data))
    }

    /// Checks that `span` can take `len` bytes of output: before a batch runs, so that a bad
    /// span fails the request without costing the batch.
    pub(crate) fn check_write(&self, span: &SharedSpan, len: usize) -> Result<(), Status> {
        self.writable(span, len).map(drop)
    }

    /// Writes `data` into `span` (exactly as long).
    pub(crate) fn write(&self, span: &SharedSpan, data: &[u8]) -> Result<(), Status> {
        self.writable(span, data.len())?
            .file
            .write_all_at(data, span.offset)
            .map_err(|e| shrunk(span, e))
    }

    fn writable(&self, span: &SharedSpan, len: usize) -> Result<Region, Status> {
        if span.length != len as u64 {
            return Err(Status::invalid_argument(format!(
                "the shared span for {len} bytes of output is {} bytes long",
                span.length
            )));
        }
        self.region(span)
    }
}

fn unknown(id: u64) -> Status {
    Status::not_found(format!(
        "no shared-memory region {id}: register its file first"
    ))
}

fn shrunk(span: &SharedSpan, e: std::io::Error) -> Status {
    Status::invalid_argument(format!(
        "shared memory region {}: {e} (was its file shrunk after it was registered?)",
        span.region
    ))
}

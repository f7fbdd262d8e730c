//! What names and describes a GPU, whether or not this build can drive one: the device
//! selection (`BATCHCRYPT_DEVICES`, `--devices`), what a device reports about itself, and the
//! measured figures of its host link.

use crate::error::{Error, Result};
use std::fmt;
use std::str::FromStr;

/// Set to a non-empty value other than `0` to hide every GPU from this process.
pub const DISABLE_ENV: &str = "BATCHCRYPT_DISABLE_CUDA";
/// Which GPUs this process uses: `all` (the default), `none`, or driver ordinals (`0,2`).
pub const DEVICES_ENV: &str = "BATCHCRYPT_DEVICES";

/// A choice of GPUs by driver ordinal.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum DeviceSelection {
    /// Every device the driver reports.
    #[default]
    All,
    /// No GPU at all (the CPU backends only).
    None,
    /// These ordinals, in this order (no repeats).
    Ordinals(Vec<usize>),
}

impl DeviceSelection {
    /// The selection `BATCHCRYPT_DEVICES` names, `All` when it is unset or empty.
    pub fn from_env() -> Result<Self> {
        match std::env::var(DEVICES_ENV) {
            Ok(v) if !v.trim().is_empty() => v
                .parse()
                .map_err(|e: Error| Error::invalid(format!("{DEVICES_ENV}={v:?}: {e}"))),
            _ => Ok(DeviceSelection::All),
        }
    }

    /// The ordinals chosen among `count` devices, or why the selection names one that is not
    /// there (or none at all).
    pub fn ordinals(&self, count: usize) -> std::result::Result<Vec<usize>, String> {
        match self {
            DeviceSelection::All => Ok((0..count).collect()),
            DeviceSelection::None => Err(format!("no GPU selected ({DEVICES_ENV}=none)")),
            DeviceSelection::Ordinals(v) => match v.iter().find(|&&o| o >= count) {
                Some(o) => Err(format!(
                    "device {o} was selected but the driver reports {count} device{} (ordinals 0 to {})",
                    if count == 1 { "" } else { "s" },
                    count.saturating_sub(1)
                )),
                None => Ok(v.clone()),
            },
        }
    }
}

impl FromStr for DeviceSelection {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let s = s.trim().to_ascii_lowercase();
        match s.as_str() {
            "all" | "" => return Ok(DeviceSelection::All),
            "none" => return Ok(DeviceSelection::None),
            _ => {}
        }
        let mut v = Vec::new();
        for part in s.split(',') {
            let o: usize = part.trim().parse().map_err(|_| {
                Error::invalid(format!(
                    "device {part:?} is not an ordinal; expected `all`, `none` or ordinals such as `0,1`"
                ))
            })?;
            if v.contains(&o) {
                return Err(Error::invalid(format!("device {o} is named twice")));
            }
            v.push(o);
        }
        Ok(DeviceSelection::Ordinals(v))
    }
}

impl fmt::Display for DeviceSelection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSelection::All => f.write_str("all"),
            DeviceSelection::None => f.write_str("none"),
            DeviceSelection::Ordinals(v) => {
                let s: Vec<String> = v.iter().map(|o| o.to_string()).collect();
                f.write_str(&s.join(","))
            }
        }
    }
}

/// What a device reports about itself.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    /// The driver's ordinal.
    pub ordinal: usize,
    pub name: String,
    pub compute_capability: (i32, i32),
    pub multiprocessors: u32,
    pub total_memory: usize,
    pub clock_khz: u32,
    /// `0000:41:00.0`, which names the device to other driver libraries (or why it is unknown).
    pub pci_bus_id: String,
}

/// Measured host↔device copy bandwidth, bytes per second.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Link {
    pub h2d: f64,
    pub d2h: f64,
    /// Each way, when an upload and a download run at once (what a pipeline that overlaps them
    /// gets; the link is full duplex, the host's memory and I/O path may not be).
    pub duplex: f64,
    /// Seconds per byte, each way, of one chunk sent up and back on its own, each copy waiting for
    /// the one before: what a pipeline's first and last chunks cost. Through staging that is more
    /// than the two rates above suggest (the staging copies, the upload and the download run in
    /// turn on one chunk: 16 MiB batches of SHA256d took 1.3-1.5x the estimate from the rates).
    pub alone: f64,
    /// Seconds for the smallest round trip (a few bytes up and back): what a batch pays for its
    /// copies however small it is.
    pub latency: f64,
}

/// How host memory meets the GPU: a plain copy from pageable memory, the pipeline's staging, or
/// page-locked memory the copy engines read directly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkKind {
    Pageable,
    Staged,
    Pinned,
}

/// Bytes per chunk of the host↔GPU pipelines (16-32 MiB; the staged copy rate is measured on
/// chunks of this size).
pub const PIPELINE_CHUNK_BYTES: f64 = (16 << 20) as f64;
/// Smallest chunk of the page-locked pipeline: below it a chunk's fixed cost (copy and launch
/// set-up) outweighs what its shorter unoverlapped ends save.
const DIRECT_MIN_CHUNK_BYTES: usize = 2 << 20;

/// Chunk for streaming `total` bytes between page-locked host memory and the GPU, from the
/// caller's largest `max_chunk` (a multiple of `unit`, the granularity its kernels need). The
/// first upload and the last download overlap nothing, so a buffer of a few chunks runs faster in
/// smaller ones: about a sixteenth of the buffer, `max_chunk` halved while the half is a multiple
/// of `unit` and at least 2 MiB. On two H100 hosts, against one upload of the same bytes: 16 MiB
/// in 2 MiB chunks 56-57% against 42-44% in one chunk, 64 MiB in 4 MiB 68-73% against 57-66%; from
/// 256 MiB, 8 and 16 MiB chunks were within a few percent. The staged pipeline keeps whole
/// chunks: its host copies lose more per chunk than this saves.
pub fn direct_chunk_bytes(total: usize, max_chunk: usize, unit: usize) -> usize {
    let mut chunk = max_chunk;
    while chunk > total / 16
        && chunk / 2 >= DIRECT_MIN_CHUNK_BYTES
        && chunk.is_multiple_of(2 * unit)
    {
        chunk /= 2;
    }
    chunk
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direct_chunks_shrink_on_buffers_of_a_few_chunks() {
        const M: usize = 1 << 20;
        let chunk = |total| direct_chunk_bytes(total, 16 * M, 16);
        assert_eq!(chunk(M), 2 * M);
        assert_eq!(chunk(16 * M), 2 * M);
        assert_eq!(chunk(64 * M), 4 * M);
        assert_eq!(chunk(128 * M), 8 * M);
        assert_eq!(chunk(256 * M), 16 * M);
        assert_eq!(chunk(4096 * M), 16 * M);
        // Halves stay whole units: 12 MiB of 3 MiB units stops at one unit, 15 MiB of 5 MiB units
        // cannot be halved.
        assert_eq!(direct_chunk_bytes(16 * M, 16 * M, 512 << 10), 2 * M);
        assert_eq!(direct_chunk_bytes(16 * M, 12 * M, 3 * M), 3 * M);
        assert_eq!(direct_chunk_bytes(16 * M, 15 * M, 5 * M), 15 * M);
    }

    #[test]
    fn selections_parse_and_resolve() {
        assert_eq!(
            "all".parse::<DeviceSelection>().unwrap(),
            DeviceSelection::All
        );
        assert_eq!(
            " None ".parse::<DeviceSelection>().unwrap(),
            DeviceSelection::None
        );
        let s: DeviceSelection = "2, 0".parse().unwrap();
        assert_eq!(s, DeviceSelection::Ordinals(vec![2, 0]));
        assert_eq!(s.to_string(), "2,0");
        assert_eq!(s.ordinals(4).unwrap(), vec![2, 0]);
        assert!(s.ordinals(2).unwrap_err().contains("device 2"));
        assert_eq!(DeviceSelection::All.ordinals(3).unwrap(), vec![0, 1, 2]);
        assert!(DeviceSelection::None.ordinals(3).is_err());
        for bad in ["0,0", "gpu1", "1,,2", "-1"] {
            assert!(bad.parse::<DeviceSelection>().is_err(), "{bad:?}");
        }
    }
}

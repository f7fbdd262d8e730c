//! The dispatcher's measurements kept across processes.
//!
//! Under `auto` the dispatcher measures each backend of an operation on first use (a small and a
//! large run, each device's host link): about a second for a process's first Groth16 proof. `batchcrypt
//! calibrate` measures every operation once and saves the result here; a later process on the
//! same machine, with the same build, starts from it and measures only what it lacks.
//!
//! The file is `BATCHCRYPT_CALIBRATION` (a path; `off` for none), else
//! `$XDG_CACHE_HOME/batchcrypt/calibration.json` (`~/.cache/...` without it). It names the machine
//! and the build it was measured on; a file from another machine, another build or another
//! selection of GPUs is ignored, as is one that does not parse.

use crate::backend::gpu::{Link, LinkKind};
use crate::backend::Backend;
use crate::dispatch::{Cost, Measurements};
use crate::error::{Error, Result};
use crate::registry::REGISTRY;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Environment variable naming the calibration file (`off`: none is read or written).
pub const CALIBRATION_ENV: &str = "BATCHCRYPT_CALIBRATION";

/// The file saved calibrations live in, or `None` where `BATCHCRYPT_CALIBRATION=off` or no home
/// directory is known.
pub fn path() -> Option<PathBuf> {
    match std::env::var_os(CALIBRATION_ENV) {
        Some(v) if v == "off" => None,
        Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ => {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| {
                    std::env::var_os("HOME")
                        .filter(|v| !v.is_empty())
                        .map(|h| PathBuf::from(h).join(".cache"))
                })?;
            Some(cache.join("batchcrypt").join("calibration.json"))
        }
    }
}

/// What a calibration's figures depend on: this build (version and kernels), the CPU and its
/// threads, and the GPUs in the process's order.
pub fn machine() -> &'static str {
    static M: OnceLock<String> = OnceLock::new();
    M.get_or_init(|| {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split(':').nth(1))
                    .map(|m| m.trim().to_string())
            })
            .unwrap_or_else(|| std::env::consts::ARCH.to_string());
        format!(
            "batchcrypt {} kernels {}\n{cpu}\n{}",
            env!("CARGO_PKG_VERSION"),
            env!("BATCHCRYPT_KERNELS_ID"),
            crate::describe_hardware()
        )
    })
}

/// The saved measurements, when the file exists, parses and was measured on this machine and
/// build. Read afresh on each call (a small file), so a calibration saved by another process
/// applies to the engines made after it.
pub fn load() -> Option<Measurements> {
    load_from(&path()?)
}

fn load_from(path: &Path) -> Option<Measurements> {
    let text = std::fs::read_to_string(path).ok()?;
    from_json(&serde_json::from_str(&text).ok()?)
}

/// Saves `m` for this machine and build, replacing the file whole (a reader never sees half of
/// it). Returns the file's path.
pub fn save(m: &Measurements) -> Result<PathBuf> {
    let path = path().ok_or_else(|| {
        Error::invalid(format!(
            "no calibration file: {CALIBRATION_ENV}=off, or neither XDG_CACHE_HOME nor HOME is set (set {CALIBRATION_ENV} to a path)"
        ))
    })?;
    let io =
        |e: std::io::Error, what: &str| Error::invalid(format!("{what} {}: {e}", path.display()));
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| io(e, "cannot create the folder of"))?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let text = serde_json::to_string_pretty(&to_json(m)).expect("JSON values serialize");
    std::fs::write(&tmp, text).map_err(|e| io(e, "cannot write"))?;
    std::fs::rename(&tmp, &path).map_err(|e| io(e, "cannot replace"))?;
    Ok(path)
}

fn to_json(m: &Measurements) -> Value {
    let costs: Vec<Value> = m
        .costs
        .iter()
        .map(|(op, b, gpu, c)| {
            json!({ "op": op, "backend": b.name(), "gpu": gpu, "fixed_s": c.fixed_s, "per_unit_s": c.per_unit_s })
        })
        .collect();
    let streaming: Vec<Value> = m
        .streaming
        .iter()
        .map(|(op, b, s)| json!({ "op": op, "backend": b.name(), "per_unit_s": s }))
        .collect();
    let links: Vec<Value> = m
        .links
        .iter()
        .map(|(gpu, kind, l)| {
            json!({
                "gpu": gpu, "kind": format!("{kind:?}"), "h2d": l.h2d, "d2h": l.d2h,
                "duplex": l.duplex, "alone": l.alone, "latency": l.latency,
            })
        })
        .collect();
    json!({
        "machine": machine(),
        "costs": costs,
        "streaming": streaming,
        "links": links,
        "host_bandwidth": m.host_bw,
        "dram_bandwidth": m.dram_bw,
    })
}

/// The measurements of a file of this machine; entries naming an operation or backend this build
/// lacks are left out (measured on use instead).
fn from_json(v: &Value) -> Option<Measurements> {
    if v.get("machine")?.as_str()? != machine() {
        return None;
    }
    let op = |e: &Value| {
        let key = e.get("op")?.as_str()?;
        REGISTRY.iter().find(|o| o.key == key).map(|o| o.key)
    };
    let backend = |e: &Value| {
        let name = e.get("backend")?.as_str()?;
        Backend::ALL.iter().copied().find(|b| b.name() == name)
    };
    let num = |e: &Value, k: &str| e.get(k)?.as_f64().filter(|x| x.is_finite() && *x >= 0.0);
    let list = |k: &str| {
        v.get(k)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let costs = list("costs")
        .iter()
        .filter_map(|e| {
            let cost = Cost {
                fixed_s: num(e, "fixed_s")?,
                per_unit_s: num(e, "per_unit_s")?,
            };
            Some((op(e)?, backend(e)?, num(e, "gpu")? as usize, cost))
        })
        .collect();
    let streaming = list("streaming")
        .iter()
        .filter_map(|e| Some((op(e)?, backend(e)?, num(e, "per_unit_s")?)))
        .collect();
    let links = list("links")
        .iter()
        .filter_map(|e| {
            let kind = match e.get("kind")?.as_str()? {
                "Pageable" => LinkKind::Pageable,
                "Staged" => LinkKind::Staged,
                "Pinned" => LinkKind::Pinned,
                _ => return None,
            };
            let link = Link {
                h2d: num(e, "h2d")?,
                d2h: num(e, "d2h")?,
                duplex: num(e, "duplex")?,
                alone: num(e, "alone")?,
                latency: num(e, "latency")?,
            };
            Some((num(e, "gpu")? as usize, kind, link))
        })
        .collect();
    Some(Measurements {
        costs,
        streaming,
        links,
        host_bw: num(v, "host_bandwidth"),
        dram_bw: num(v, "dram_bandwidth"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Measurements {
        Measurements {
            costs: vec![(
                REGISTRY[0].key,
                Backend::Portable,
                0,
                Cost {
                    fixed_s: 1e-6,
                    per_unit_s: 2.5e-9,
                },
            )],
            streaming: vec![(REGISTRY[0].key, Backend::Portable, 3e-9)],
            links: vec![(
                1,
                LinkKind::Staged,
                Link {
                    h2d: 2e10,
                    d2h: 2.1e10,
                    duplex: 1.9e10,
                    alone: 6e-11,
                    latency: 2e-5,
                },
            )],
            host_bw: Some(5e10),
            dram_bw: None,
        }
    }

    #[test]
    fn measurements_survive_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.json");
        std::fs::write(&p, to_json(&sample()).to_string()).unwrap();
        assert_eq!(load_from(&p), Some(sample()));
    }

    #[test]
    fn a_file_of_another_machine_malformed_or_unknown_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.json");
        let mut other = to_json(&sample());
        other["machine"] = "elsewhere".into();
        std::fs::write(&p, other.to_string()).unwrap();
        assert!(load_from(&p).is_none(), "another machine's file");
        std::fs::write(&p, "{not json").unwrap();
        assert!(load_from(&p).is_none());
        assert!(load_from(&dir.path().join("absent.json")).is_none());
        // Entries this build does not know, or with bad figures, are left out one by one.
        let mut odd = to_json(&sample());
        odd["costs"][0]["op"] = "no-such-operation".into();
        odd["streaming"][0]["per_unit_s"] = (-1.0).into();
        odd["links"][0]["kind"] = "Carrier pigeon".into();
        std::fs::write(&p, odd.to_string()).unwrap();
        let m = load_from(&p).unwrap();
        assert!(m.costs.is_empty() && m.streaming.is_empty() && m.links.is_empty());
        assert_eq!(m.host_bw, Some(5e10));
    }
}

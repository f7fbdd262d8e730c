//! One party of an ECDH-PSI run (docs/psi.md), as `batchcrypt psi` runs it.

use crate::{to_py, Engine};
use batchcrypt::psi::{self, ItemFile};
use numpy::PyArray1;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::net::TcpListener;
use std::path::PathBuf;
use std::time::Duration;

#[pymethods]
impl Engine {
    /// Runs one party of a private set intersection with a peer over TCP: exactly one of
    /// `listen` ("host:port", waits for the peer) or `connect` ("host:port", retried until
    /// `timeout`). `items`: this party's set, a text file of one identifier per line (no
    /// duplicates, no empty lines). Both parties learn which of their own items the other also
    /// holds, and nothing else. Returns the 0-based line numbers of the common items (a uint64
    /// array, ascending); with `output`, also writes those lines there (the file appears only
    /// when complete). `timeout`: seconds to wait for the peer to connect and between its
    /// messages. The hashing and blinding run on this engine's backend. Releases the GIL.
    #[pyo3(signature = (items, *, listen = None, connect = None, output = None, chunk = 1 << 18, timeout = 300.0))]
    fn psi<'py>(
        &mut self,
        py: Python<'py>,
        items: PathBuf,
        listen: Option<&str>,
        connect: Option<&str>,
        output: Option<PathBuf>,
        chunk: usize,
        timeout: f64,
    ) -> PyResult<Bound<'py, PyArray1<u64>>> {
        if !(timeout.is_finite() && timeout > 0.0) {
            return Err(PyValueError::new_err(
                "timeout must be a positive number of seconds",
            ));
        }
        let timeout = Duration::from_secs_f64(timeout);
        let listener = match (listen, connect) {
            (Some(addr), None) => Some(TcpListener::bind(addr).map_err(|e| {
                PyErr::from(std::io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}")))
            })?),
            (None, Some(_)) => None,
            _ => {
                return Err(PyValueError::new_err(
                    "give exactly one of listen=\"host:port\" (wait for the peer) or connect=\"host:port\"",
                ))
            }
        };
        let cfg = psi::Config {
            chunk,
            timeout,
            ..Default::default()
        };
        let inner = &self.inner;
        let outcome = py
            .allow_threads(|| -> batchcrypt::Result<psi::Outcome> {
                let set = ItemFile::open(&items)?;
                let stream = match (&listener, connect) {
                    (Some(l), _) => psi::accept(l, timeout)?,
                    (None, Some(addr)) => psi::connect(addr, timeout, |_| {})?,
                    (None, None) => unreachable!("checked above"),
                };
                let outcome = psi::run(stream, &set, inner, &cfg, &psi::Quiet)?;
                if let Some(out) = &output {
                    set.write_subset(&outcome.matched, out)?;
                }
                Ok(outcome)
            })
            .map_err(to_py)?;
        Ok(PyArray1::from_vec(py, outcome.matched))
    }
}

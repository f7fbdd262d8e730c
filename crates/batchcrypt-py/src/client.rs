//! `batchcrypt.Client`: calls to a running `batchcrypt serve`, through the Rust client. Each
//! call releases the GIL while it waits on the network.

use super::{input, sig_format, Items};
use batchcrypt_serve::client::{
    column, ecdsa_columns, schnorr_columns, sm2_request, Client as Inner, JobOptions, Options,
    PackedColumns,
};
use batchcrypt_serve::proto::{
    AesMode, AesStart, Column, EcdsaCurve, HashAlgorithm, Job, JobState, Network,
    VerifyBlockRequest, VerifyEcdsaRequest, VerifySchnorrRequest,
};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

/// A connection to a running `batchcrypt serve`.
#[pyclass(module = "batchcrypt")]
pub struct Client {
    rt: tokio::runtime::Runtime,
    inner: Inner,
}

/// A shared-memory region registered with a server (`Client.shared_memory`): write items into
/// it, name its spans in requests, read results from it. Its file is removed when it is released
/// or garbage-collected.
#[pyclass(module = "batchcrypt")]
pub struct SharedMemory(Option<batchcrypt_serve::client::SharedMemory>);

fn released() -> PyErr {
    PyValueError::new_err("the shared-memory region was released")
}

impl SharedMemory {
    fn get(&self) -> PyResult<&batchcrypt_serve::client::SharedMemory> {
        self.0.as_ref().ok_or_else(released)
    }
}

/// A verification call's `shared=(region, offset)`: where its columns go instead of the message.
type SharedAt<'py> = Option<(PyRef<'py, SharedMemory>, u64)>;

/// Moves `request`'s columns into the region of `shared`, from its offset on, where one is given.
fn put_shared<R: PackedColumns>(request: &mut R, shared: &SharedAt<'_>) -> PyResult<()> {
    if let Some((region, offset)) = shared {
        region
            .get()?
            .share(request, *offset)
            .map_err(|e| PyOSError::new_err(format!("writing the shared-memory region: {e}")))?;
    }
    Ok(())
}

#[pymethods]
impl SharedMemory {
    /// The region's id on the server.
    #[getter]
    fn id(&self) -> PyResult<u64> {
        Ok(self.get()?.id())
    }

    /// Writes `data` (bytes or any buffer) at `offset`.
    #[pyo3(signature = (data, offset = 0))]
    fn write(&self, data: &Bound<'_, PyAny>, offset: u64) -> PyResult<()> {
        let data = input(data)?;
        self.get()?
            .write_at(&data, offset)
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    /// `length` bytes from `offset`.
    #[pyo3(signature = (length, offset = 0))]
    fn read<'py>(
        &self,
        py: Python<'py>,
        length: usize,
        offset: u64,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let mut buf = vec![0u8; length];
        self.get()?
            .read_at(&mut buf, offset)
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        Ok(PyBytes::new(py, &buf))
    }

    /// The file's descriptor, to map it (`mmap.mmap(region.fileno(), size)`) and fill it in
    /// place.
    fn fileno(&self) -> PyResult<i32> {
        use std::os::fd::AsRawFd;
        Ok(self.get()?.file().as_raw_fd())
    }
}

fn status(e: tonic::Status) -> PyErr {
    PyRuntimeError::new_err(format!("{:?}: {}", e.code(), e.message()))
}

fn algorithm(name: &str) -> PyResult<HashAlgorithm> {
    match name {
        "sha256" => Ok(HashAlgorithm::Sha256),
        "sha256d" => Ok(HashAlgorithm::Sha256d),
        "sm3" => Ok(HashAlgorithm::Sm3),
        o => Err(PyValueError::new_err(format!(
            "algorithm must be \"sha256\", \"sha256d\" or \"sm3\", not {o:?}"
        ))),
    }
}

/// An (n, width) uint8 array as one packed column, in one copy of its buffer (no object or
/// allocation per row, with the GIL held); None for anything else (or an array of empty rows).
fn array_column(obj: &Bound<'_, PyAny>) -> Option<Column> {
    let a = obj.extract::<numpy::PyReadonlyArray2<'_, u8>>().ok()?;
    let a = a.as_array();
    match (a.as_slice(), a.ncols()) {
        (Some(data), width @ 1..) => packed_column(data.to_vec(), width).ok(),
        _ => None,
    }
}

/// Items as one packed column: an array as [`array_column`] takes it, else a sequence of
/// bytes-like items (joined once, no vector per item).
fn packed(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Column> {
    match array_column(obj) {
        Some(c) => Ok(c),
        None => Ok(column(&Items::new(obj)?.slices(what)?)),
    }
}

/// An ECDSA request from a call's three inputs (each as [`packed`] takes them; the hashes 32
/// bytes each).
fn ecdsa_of(
    curve: EcdsaCurve,
    (hashes, sigs, keys): (&Bound<'_, PyAny>, &Bound<'_, PyAny>, &Bound<'_, PyAny>),
    format: batchcrypt::secp256k1::SigFormat,
    require_low_s: bool,
) -> PyResult<VerifyEcdsaRequest> {
    let hashes = match array_column(hashes) {
        Some(c) if c.width == 32 => c,
        Some(c) => {
            return Err(PyValueError::new_err(format!(
                "hashes[0] has {} bytes, expected 32",
                c.width
            )))
        }
        None => column(&Items::new(hashes)?.fixed::<32>("hashes")?),
    };
    Ok(ecdsa_columns(
        curve,
        hashes,
        packed(sigs, "sigs")?,
        packed(keys, "pubkeys")?,
        format,
        require_low_s,
    ))
}

/// A BIP340 request from a call's three inputs (each as [`packed`] takes them).
fn schnorr_of(
    (msgs, sigs, keys): (&Bound<'_, PyAny>, &Bound<'_, PyAny>, &Bound<'_, PyAny>),
) -> PyResult<VerifySchnorrRequest> {
    Ok(schnorr_columns(
        packed(msgs, "msgs")?,
        packed(sigs, "sigs")?,
        packed(keys, "pubkeys")?,
    ))
}

/// A proof job's queueing: its priority, and its deadline as seconds from now.
fn job_options(priority: i32, deadline: Option<f64>) -> PyResult<JobOptions> {
    let within = deadline
        .map(|s| {
            std::time::Duration::try_from_secs_f64(s).map_err(|_| {
                PyValueError::new_err(format!("deadline {s}: give seconds, 0 or more"))
            })
        })
        .transpose()?;
    Ok(JobOptions::queued(priority, within))
}

/// Bytes, or the contents of the file a str or path names.
fn bytes_or_path(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u8>> {
    if obj.is_instance_of::<PyString>() || obj.hasattr("__fspath__")? {
        let p: std::path::PathBuf = obj.extract()?;
        return std::fs::read(&p).map_err(|e| {
            PyValueError::new_err(format!("{what}: cannot read {}: {e}", p.display()))
        });
    }
    input(obj)
}

/// Messages of `message_len` bytes back to back in `data`, as a packed column.
fn packed_column(data: Vec<u8>, message_len: usize) -> PyResult<Column> {
    if message_len == 0 || !data.len().is_multiple_of(message_len) {
        return Err(PyValueError::new_err(format!(
            "{} bytes are not a whole number of {message_len}-byte messages",
            data.len()
        )));
    }
    Ok(Column {
        data: data.into(),
        width: message_len as u32,
        ends: Vec::new(),
        shared: None,
    })
}

fn verdicts(v: Vec<Result<(), String>>) -> Vec<Option<String>> {
    v.into_iter().map(|r| r.err()).collect()
}

fn job_dict<'py>(py: Python<'py>, j: &Job) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let state = JobState::try_from(j.state).unwrap_or(JobState::Failed);
    d.set_item("job_id", &j.job_id)?;
    d.set_item("circuit_id", &j.circuit_id)?;
    d.set_item("state", state.as_str_name().to_lowercase())?;
    d.set_item("error", (!j.error.is_empty()).then_some(&j.error))?;
    d.set_item("priority", j.priority)?;
    d.set_item("attempts", j.attempts)?;
    Ok(d)
}

impl Client {
    /// `encrypt_file` (`chunk_log2` given) and `decrypt_file`.
    #[allow(clippy::too_many_arguments)]
    fn aes_file(
        &self,
        py: Python<'_>,
        key: &[u8],
        input: std::path::PathBuf,
        output: std::path::PathBuf,
        mode: &str,
        iv: Option<&[u8]>,
        chunk_log2: Option<u8>,
    ) -> PyResult<u64> {
        let ctr = crate::aes::file_mode(mode, iv)?;
        batchcrypt::aes::Key::new(key).map_err(super::to_py)?;
        let decrypt = chunk_log2.is_none();
        let start = AesStart {
            key: key.to_vec().into(),
            mode: match ctr {
                Some(_) => AesMode::Ctr,
                None => AesMode::GcmChunked,
            } as i32,
            decrypt,
            iv: ctr.map_or_else(Vec::new, |iv| iv.to_vec()).into(),
            chunk_log2: chunk_log2.map_or(0, u32::from),
        };
        let source = std::fs::File::open(&input)
            .map_err(|e| PyOSError::new_err(format!("reading {}: {e}", input.display())))?;
        let out = batchcrypt::output::AtomicFile::create(&output).map_err(super::to_py_io)?;
        let file = out.file().try_clone()?;
        let done = self.call(py, |c| {
            Box::pin(async move {
                use std::io::Write;
                let mut sink = std::io::BufWriter::with_capacity(1 << 20, file);
                let source = std::io::BufReader::with_capacity(1 << 20, source);
                let (read, written) = c.aes(start, source, |data| sink.write_all(data)).await?;
                sink.flush()
                    .map_err(|e| tonic::Status::cancelled(format!("writing the output: {e}")))?;
                // The plaintext's bytes, as the engine's file calls count.
                Ok(if decrypt { written } else { read })
            })
        })?;
        out.commit().map_err(super::to_py_io)?;
        Ok(done)
    }

    /// Runs `f` on the client's runtime with the GIL released.
    fn call<T: Send>(
        &self,
        py: Python<'_>,
        f: impl for<'a> FnOnce(
                &'a mut Inner,
            ) -> std::pin::Pin<
                Box<dyn std::future::Future<Output = Result<T, tonic::Status>> + Send + 'a>,
            > + Send,
    ) -> PyResult<T> {
        let mut inner = self.inner.clone();
        py.allow_threads(|| self.rt.block_on(f(&mut inner)))
            .map_err(status)
    }
}

#[pymethods]
impl Client {
    /// Connects to `address` (host:port, or unix:PATH). `token`: the server's bearer token;
    /// `tls_ca`: PEM of the authority that signed the server's certificate (bytes or a path), for
    /// TLS; `frames`: the server's frames socket (`batchcrypt serve --frames-socket PATH`, on
    /// this machine), over which the verification and hash calls then go (the cheapest wire for
    /// many small requests), everything else over gRPC.
    #[new]
    #[pyo3(signature = (address = "127.0.0.1:7700", token = None, tls_ca = None, frames = None))]
    fn new(
        py: Python<'_>,
        address: &str,
        token: Option<String>,
        tls_ca: Option<&Bound<'_, PyAny>>,
        frames: Option<std::path::PathBuf>,
    ) -> PyResult<Self> {
        let tls_ca = tls_ca.map(|c| bytes_or_path(c, "tls_ca")).transpose()?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        let options = Options {
            token,
            tls_ca,
            max_message_bytes: None,
            frames,
        };
        let inner = py
            .allow_threads(|| rt.block_on(Inner::connect_with(address, options)))
            .map_err(PyRuntimeError::new_err)?;
        Ok(Client { rt, inner })
    }

    /// Whether the server reports itself serving.
    fn ready(&self, py: Python<'_>) -> PyResult<bool> {
        self.call(py, |c| Box::pin(async move { c.ready().await }))
    }

    /// ECDSA over 32-byte hashes on secp256k1 or P-256 ("p256"); per item None (valid) or the
    /// reason it is not.
    /// With `shared=(region, offset)` the items go through a shared-memory region from `offset`
    /// on (as many bytes as they hold) instead of the message.
    #[pyo3(signature = (hashes, sigs, pubkeys, format = "der", require_low_s = false, curve = "secp256k1", shared = None))]
    fn verify_ecdsa(
        &self,
        py: Python<'_>,
        hashes: &Bound<'_, PyAny>,
        sigs: &Bound<'_, PyAny>,
        pubkeys: &Bound<'_, PyAny>,
        format: &str,
        require_low_s: bool,
        curve: &str,
        shared: SharedAt<'_>,
    ) -> PyResult<Vec<Option<String>>> {
        let (format, curve) = (sig_format(format)?, super::ecdsa_curve(curve)?);
        let mut request = ecdsa_of(curve, (hashes, sigs, pubkeys), format, require_low_s)?;
        put_shared(&mut request, &shared)?;
        let v = self.call(py, |c| {
            Box::pin(async move { c.verify_ecdsa_request(request).await })
        })?;
        Ok(verdicts(v))
    }

    /// Many ECDSA batches, each a (hashes, sigs, pubkeys) tuple, over one stream to the server
    /// (each batch a message each way rather than a call, sent while the replies come back):
    /// per batch, per item None (valid) or the reason it is not.
    #[pyo3(signature = (batches, format = "der", require_low_s = false, curve = "secp256k1"))]
    fn verify_ecdsa_many(
        &self,
        py: Python<'_>,
        batches: Vec<(Bound<'_, PyAny>, Bound<'_, PyAny>, Bound<'_, PyAny>)>,
        format: &str,
        require_low_s: bool,
        curve: &str,
    ) -> PyResult<Vec<Vec<Option<String>>>> {
        let (format, curve) = (sig_format(format)?, super::ecdsa_curve(curve)?);
        let requests = batches
            .iter()
            .map(|(hashes, sigs, keys)| {
                ecdsa_of(curve, (hashes, sigs, keys), format, require_low_s)
            })
            .collect::<PyResult<Vec<_>>>()?;
        let v = self.call(py, |c| {
            Box::pin(async move { c.verify_ecdsa_many(requests).await })
        })?;
        Ok(v.into_iter().map(verdicts).collect())
    }

    /// BIP340 over messages of any length; per item None (valid) or the reason. `shared` as
    /// for [`Client.verify_ecdsa`].
    #[pyo3(signature = (msgs, sigs, pubkeys, shared = None))]
    fn verify_schnorr(
        &self,
        py: Python<'_>,
        msgs: &Bound<'_, PyAny>,
        sigs: &Bound<'_, PyAny>,
        pubkeys: &Bound<'_, PyAny>,
        shared: SharedAt<'_>,
    ) -> PyResult<Vec<Option<String>>> {
        let mut request = schnorr_of((msgs, sigs, pubkeys))?;
        put_shared(&mut request, &shared)?;
        let v = self.call(py, |c| {
            Box::pin(async move { c.verify_schnorr_request(request).await })
        })?;
        Ok(verdicts(v))
    }

    /// Many BIP340 batches, each a (msgs, sigs, pubkeys) tuple, over one stream
    /// ([`Client.verify_ecdsa_many`]'s way): per batch, per item None (valid) or the reason.
    fn verify_schnorr_many(
        &self,
        py: Python<'_>,
        batches: Vec<(Bound<'_, PyAny>, Bound<'_, PyAny>, Bound<'_, PyAny>)>,
    ) -> PyResult<Vec<Vec<Option<String>>>> {
        let requests = batches
            .iter()
            .map(|(m, s, k)| schnorr_of((m, s, k)))
            .collect::<PyResult<Vec<_>>>()?;
        let v = self.call(py, |c| {
            Box::pin(async move { c.verify_schnorr_many(requests).await })
        })?;
        Ok(v.into_iter().map(verdicts).collect())
    }

    /// SM2 over messages with the signers' identifier (None: GM/T 0009's default). `shared` as
    /// for [`Client.verify_ecdsa`].
    #[pyo3(signature = (msgs, sigs, pubkeys, id = None, format = "der", shared = None))]
    fn verify_sm2(
        &self,
        py: Python<'_>,
        msgs: &Bound<'_, PyAny>,
        sigs: &Bound<'_, PyAny>,
        pubkeys: &Bound<'_, PyAny>,
        id: Option<Vec<u8>>,
        format: &str,
        shared: SharedAt<'_>,
    ) -> PyResult<Vec<Option<String>>> {
        let (msgs, sigs, keys) = (Items::new(msgs)?, Items::new(sigs)?, Items::new(pubkeys)?);
        let id = id.unwrap_or_else(|| batchcrypt::sm2::verify::DEFAULT_ID.to_vec());
        // Packed here, each list joined once; the call owns the request.
        let mut request = sm2_request(
            &msgs.slices("msgs")?,
            &sigs.slices("sigs")?,
            &keys.slices("pubkeys")?,
            &id,
            sig_format(format)?,
        );
        put_shared(&mut request, &shared)?;
        let v = self.call(py, |c| {
            Box::pin(async move { c.verify_sm2_request(request).await })
        })?;
        Ok(verdicts(v))
    }

    /// Digests of each message ("sha256", "sha256d" or "sm3"), 32 bytes each.
    #[pyo3(signature = (messages, algorithm = "sha256"))]
    fn hash<'py>(
        &self,
        py: Python<'py>,
        messages: &Bound<'_, PyAny>,
        algorithm: &str,
    ) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let alg = self::algorithm(algorithm)?;
        // Sent packed (one buffer, not a field per message).
        let messages = column(&Items::new(messages)?.slices("messages")?);
        let d = self.call(py, |c| {
            Box::pin(async move { c.hash_column(alg, messages).await })
        })?;
        Ok(d.chunks_exact(32).map(|d| PyBytes::new(py, d)).collect())
    }

    /// Digests of messages of `message_len` bytes each, back to back in `data` (the fast form):
    /// 32 bytes per message, back to back.
    #[pyo3(signature = (data, message_len, algorithm = "sha256"))]
    fn hash_packed<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'_, PyAny>,
        message_len: usize,
        algorithm: &str,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let alg = self::algorithm(algorithm)?;
        let column = packed_column(input(data)?, message_len)?;
        let d = self.call(py, |c| {
            Box::pin(async move { c.hash_column(alg, column).await })
        })?;
        Ok(PyBytes::new(py, &d))
    }

    /// Creates a shared-memory region of `size` bytes (the file `batchcrypt-<name>` in `dir`,
    /// the server's `--shared-memory` directory, /dev/shm by default) and registers it with the
    /// server, which must run on this machine: requests then name spans of it instead of
    /// carrying their bytes.
    #[pyo3(signature = (name, size, dir = None))]
    fn shared_memory(
        &self,
        py: Python<'_>,
        name: String,
        size: u64,
        dir: Option<std::path::PathBuf>,
    ) -> PyResult<SharedMemory> {
        let dir = dir.unwrap_or_else(|| batchcrypt_serve::shared::DEFAULT_DIR.into());
        let region = self.call(py, move |c| {
            Box::pin(async move { c.shared_memory(&dir, &name, size).await })
        })?;
        Ok(SharedMemory(Some(region)))
    }

    /// Unregisters a region and removes its file.
    fn release_shared_memory(&self, py: Python<'_>, region: &mut SharedMemory) -> PyResult<()> {
        let r = region.0.take().ok_or_else(released)?;
        self.call(py, |c| {
            Box::pin(async move { c.release_shared_memory(r).await })
        })
    }

    /// Hashes `count` messages of `message_len` bytes at `offset` of a region into it, 32
    /// bytes per message from `digests_offset`: nothing but the spans crosses the connection.
    /// Returns the size of the batch they ran in.
    #[pyo3(signature = (region, offset, count, message_len, digests_offset, algorithm = "sha256"))]
    fn hash_shared(
        &self,
        py: Python<'_>,
        region: &SharedMemory,
        offset: u64,
        count: u64,
        message_len: u32,
        digests_offset: u64,
        algorithm: &str,
    ) -> PyResult<u64> {
        let alg = self::algorithm(algorithm)?;
        let r = region.get()?;
        let (input, output) = (
            r.span(offset, count * message_len as u64),
            r.span(digests_offset, 32 * count),
        );
        self.call(py, move |c| {
            Box::pin(async move { c.hash_shared(alg, input, message_len, output).await })
        })
    }

    /// Many batches of messages of `message_len` bytes each, back to back in each of `batches`,
    /// over one stream ([`Client.verify_ecdsa_many`]'s way): per batch its digests, 32 bytes per
    /// message, back to back.
    #[pyo3(signature = (batches, message_len, algorithm = "sha256"))]
    fn hash_packed_many<'py>(
        &self,
        py: Python<'py>,
        batches: Vec<Bound<'_, PyAny>>,
        message_len: usize,
        algorithm: &str,
    ) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let alg = self::algorithm(algorithm)?;
        let columns = batches
            .iter()
            .map(|b| packed_column(input(b)?, message_len))
            .collect::<PyResult<Vec<_>>>()?;
        let d = self.call(py, |c| {
            Box::pin(async move { c.hash_many(alg, columns).await })
        })?;
        Ok(d.iter().map(|d| PyBytes::new(py, d)).collect())
    }

    /// Registers a circuit by its .zkey (bytes or a path); a dict with its `circuit_id`, sizes
    /// and GPU memory needs.
    #[pyo3(signature = (zkey, name = ""))]
    fn register<'py>(
        &self,
        py: Python<'py>,
        zkey: &Bound<'_, PyAny>,
        name: &str,
    ) -> PyResult<Bound<'py, PyDict>> {
        let (zkey, name) = (bytes_or_path(zkey, "zkey")?, name.to_string());
        let r = self.call(py, |c| {
            Box::pin(async move { c.register(zkey, &name).await })
        })?;
        let d = PyDict::new(py);
        d.set_item("circuit_id", r.circuit_id)?;
        d.set_item("domain", r.constraints_domain)?;
        d.set_item("signals", r.signals)?;
        d.set_item("curve", r.curve)?;
        d.set_item("key_bytes", r.key_bytes)?;
        d.set_item("proof_bytes", r.proof_bytes)?;
        Ok(d)
    }

    /// A proof, end to end: (proof.json, public.json) as snarkjs writes them. The job runs once
    /// even across a restart of the server. `priority`: higher runs first; `deadline`: seconds
    /// within which the job must start, else it ends as expired (an error here).
    #[pyo3(signature = (circuit_id, witness, priority = 0, deadline = None))]
    fn prove(
        &self,
        py: Python<'_>,
        circuit_id: &str,
        witness: &Bound<'_, PyAny>,
        priority: i32,
        deadline: Option<f64>,
    ) -> PyResult<(String, String)> {
        let (w, id) = (bytes_or_path(witness, "witness")?, circuit_id.to_string());
        let job = job_options(priority, deadline)?;
        let r = self.call(py, |c| Box::pin(async move { c.prove(&id, w, job).await }))?;
        proof_pair(r)
    }

    /// Queues a proof without waiting; the job's id. `priority` and `deadline` as in `prove`.
    #[pyo3(signature = (circuit_id, witness, request_id = "", priority = 0, deadline = None))]
    fn submit(
        &self,
        py: Python<'_>,
        circuit_id: &str,
        witness: &Bound<'_, PyAny>,
        request_id: &str,
        priority: i32,
        deadline: Option<f64>,
    ) -> PyResult<String> {
        let (w, id, rid) = (
            bytes_or_path(witness, "witness")?,
            circuit_id.to_string(),
            request_id.to_string(),
        );
        let job = job_options(priority, deadline)?;
        let j = self.call(py, |c| {
            Box::pin(async move { c.submit(&id, w, &rid, job).await })
        })?;
        Ok(j.job_id)
    }

    /// Waits for a job: (proof.json, public.json); an error if it failed or was cancelled.
    fn wait(&self, py: Python<'_>, job_id: &str) -> PyResult<(String, String)> {
        let id = job_id.to_string();
        let r = self.call(py, |c| Box::pin(async move { c.wait(&id, false).await }))?;
        proof_pair(r)
    }

    /// A job's state as a dict.
    fn job<'py>(&self, py: Python<'py>, job_id: &str) -> PyResult<Bound<'py, PyDict>> {
        let id = job_id.to_string();
        let j = self.call(py, |c| Box::pin(async move { c.job(&id).await }))?;
        job_dict(py, &j)
    }

    /// `Engine.sm2_hash_to_curve_mul` on the server (a PSI party's first step, batched with
    /// other clients' under the same key): an (n, 33) uint8 array of compressed points.
    #[pyo3(signature = (k, msgs, dst = batchcrypt::sm2::DEFAULT_DST))]
    fn sm2_hash_to_curve_mul<'py>(
        &self,
        py: Python<'py>,
        k: &[u8],
        msgs: &Bound<'py, PyAny>,
        dst: &[u8],
    ) -> PyResult<Bound<'py, numpy::PyArray2<u8>>> {
        let k = super::scalar(k)?;
        let msgs: Vec<Vec<u8>> = Items::new(msgs)?
            .slices("msgs")?
            .iter()
            .map(|m| m.to_vec())
            .collect();
        let dst = dst.to_vec();
        let points = self.call(py, |c| {
            Box::pin(async move {
                let m: Vec<&[u8]> = msgs.iter().map(|m| m.as_slice()).collect();
                c.sm2_hash_to_curve_mul(&k, &m, &dst).await
            })
        })?;
        Ok(super::table(py, points))
    }

    /// `Engine.sm2_mul` on the server for n x 33 compressed points (a PSI party's second step):
    /// (points, ok), a zero row and False where a point is not on the curve.
    #[allow(clippy::type_complexity)]
    fn sm2_mul_compressed<'py>(
        &self,
        py: Python<'py>,
        k: &[u8],
        points: &Bound<'py, PyAny>,
    ) -> PyResult<(
        Bound<'py, numpy::PyArray2<u8>>,
        Bound<'py, numpy::PyArray1<bool>>,
    )> {
        let k = super::scalar(k)?;
        let points = Items::new(points)?.fixed::<33>("points")?.into_owned();
        let products = self.call(py, |c| {
            Box::pin(async move { c.sm2_mul_compressed(&k, &points).await })
        })?;
        let ok: Vec<bool> = products.iter().map(Option::is_some).collect();
        let rows = products.into_iter().map(|p| p.unwrap_or([0; 33])).collect();
        Ok((super::table(py, rows), numpy::PyArray1::from_vec(py, ok)))
    }

    /// Validates a Bitcoin block on the server, as `Engine.verify_block` does here (the same
    /// arguments; the spent outputs are read here and sent with the block). Returns a dict:
    /// `valid`, `reason` (Core's reject reason) or None, `hash`, `height`, `txs`, `inputs`,
    /// `weight`, `sigop_cost`, `fees`, `unchecked` (the rules the data given could not decide),
    /// `flags` (the script rules in force), `ecdsa_checks`, `schnorr_checks`, `ecdsa_backend`,
    /// `schnorr_backend` (None where none ran) and the server's `structure_time`, `inputs_time`
    /// and `scripts_time` (seconds), as `Engine.verify_block` names them.
    #[pyo3(signature = (block, spent, *, spent_format = None, height = None, network = "main", check_pow = true, median_time_past = None))]
    #[allow(clippy::too_many_arguments)]
    fn verify_block<'py>(
        &self,
        py: Python<'py>,
        block: &Bound<'py, PyAny>,
        spent: &Bound<'py, PyAny>,
        spent_format: Option<&str>,
        height: Option<u32>,
        network: &str,
        check_pow: bool,
        median_time_past: Option<u32>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let network = Network::from(crate::bitcoin::network(network)?);
        let given = crate::bitcoin::BlockInput::new(block, spent, spent_format)?;
        let spent = py
            .allow_threads(|| given.spent().map(|(_, s)| s))
            .map_err(super::to_py_io)?;
        let request = VerifyBlockRequest {
            block: given.raw.into(),
            spent: spent.iter().map(Into::into).collect(),
            network: network as i32,
            height: height.unwrap_or(0),
            skip_proof_of_work: !check_pow,
            median_time_past,
        };
        let r = self.call(py, |c| {
            Box::pin(async move { c.verify_block(request).await })
        })?;
        let d = PyDict::new(py);
        d.set_item("valid", r.valid)?;
        d.set_item("reason", (!r.valid).then_some(&r.reason))?;
        d.set_item("hash", &r.hash)?;
        d.set_item("height", r.height)?;
        d.set_item("txs", r.transactions)?;
        d.set_item("inputs", r.inputs)?;
        d.set_item("weight", r.weight)?;
        d.set_item("sigop_cost", r.sigop_cost)?;
        d.set_item("fees", r.fees)?;
        d.set_item("unchecked", &r.unchecked)?;
        d.set_item("flags", &r.rules)?;
        let backend = |b: &str| (!b.is_empty()).then(|| b.to_string());
        d.set_item("ecdsa_checks", r.ecdsa_checks)?;
        d.set_item("schnorr_checks", r.schnorr_checks)?;
        d.set_item("ecdsa_backend", backend(&r.ecdsa_backend))?;
        d.set_item("schnorr_backend", backend(&r.schnorr_backend))?;
        let secs = |us: u64| us as f64 / 1e6;
        d.set_item("structure_time", secs(r.structure_us))?;
        d.set_item("inputs_time", secs(r.inputs_us))?;
        d.set_item("scripts_time", secs(r.scripts_us))?;
        Ok(d)
    }

    /// Loose Bitcoin transactions checked on the server, batched with other clients' (the
    /// argument and the dicts returned as `Engine.verify_transactions`'s).
    fn verify_transactions<'py>(
        &self,
        py: Python<'py>,
        txs: &Bound<'py, PyAny>,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let items = txs
            .try_iter()?
            .enumerate()
            .map(|(k, item)| crate::bitcoin::loose_tx(&item?, k))
            .collect::<PyResult<Vec<_>>>()?;
        let verdicts = self.call(py, |c| {
            Box::pin(async move { c.verify_transactions(&items).await })
        })?;
        verdicts
            .iter()
            .map(|v| {
                let d = PyDict::new(py);
                d.set_item("valid", v.valid)?;
                d.set_item("input", u64::try_from(v.input).ok())?;
                d.set_item("reason", (!v.valid).then_some(&v.reason))?;
                Ok(d)
            })
            .collect()
    }

    /// `Engine.encrypt_file` on the server: the file streams to it and the output back (GCM
    /// chunks of at most 2^26 bytes there). The output appears only when complete. Returns the
    /// bytes encrypted.
    #[pyo3(signature = (key, input, output, *, mode = "gcm", iv = None, chunk_log2 = batchcrypt::aes::stream::DEFAULT_CHUNK_LOG2))]
    #[allow(clippy::too_many_arguments)]
    fn encrypt_file(
        &self,
        py: Python<'_>,
        key: &[u8],
        input: std::path::PathBuf,
        output: std::path::PathBuf,
        mode: &str,
        iv: Option<&[u8]>,
        chunk_log2: u8,
    ) -> PyResult<u64> {
        self.aes_file(py, key, input, output, mode, iv, Some(chunk_log2))
    }

    /// `Engine.decrypt_file` on the server: the output file appears only once every chunk has
    /// authenticated (RuntimeError "DataLoss" otherwise). Returns the bytes decrypted.
    #[pyo3(signature = (key, input, output, *, mode = "gcm", iv = None))]
    fn decrypt_file(
        &self,
        py: Python<'_>,
        key: &[u8],
        input: std::path::PathBuf,
        output: std::path::PathBuf,
        mode: &str,
        iv: Option<&[u8]>,
    ) -> PyResult<u64> {
        self.aes_file(py, key, input, output, mode, iv, None)
    }

    /// Cancels a job; its state after.
    fn cancel<'py>(&self, py: Python<'py>, job_id: &str) -> PyResult<Bound<'py, PyDict>> {
        let id = job_id.to_string();
        let j = self.call(py, |c| {
            Box::pin(async move {
                c.raw()
                    .cancel_job(batchcrypt_serve::proto::JobRef { job_id: id })
                    .await
                    .map(|r| r.into_inner())
            })
        })?;
        job_dict(py, &j)
    }
}

fn proof_pair(r: batchcrypt_serve::proto::ProofReply) -> PyResult<(String, String)> {
    let job = r.job.unwrap_or_default();
    if job.state != JobState::Done as i32 {
        let state = JobState::try_from(job.state).unwrap_or(JobState::Failed);
        return Err(PyRuntimeError::new_err(format!(
            "job {} is {}: {}",
            job.job_id,
            state.as_str_name().to_lowercase(),
            job.error
        )));
    }
    Ok((r.proof_json, r.public_json))
}

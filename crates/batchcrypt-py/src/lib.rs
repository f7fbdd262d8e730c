//! Python bindings: batch APIs over bytes and numpy arrays. Heavy calls release the GIL.

use batchcrypt::bitcoin::block::{verify_block, BlockContext, BlockReport};
use batchcrypt::bitcoin::script::Flags;
use batchcrypt::bitcoin::txs::{verify_transactions, LooseTx};
use batchcrypt::bitcoin::validate::{Network, NoHistory};
use batchcrypt::bitcoin::{parse_block, spent, store, SpentOutput};
use batchcrypt::p256::P256;
use batchcrypt_serve::proto::EcdsaCurve;
use batchcrypt::secp256k1::{EcdsaOptions, SigFormat, Verdicts};
use batchcrypt::sha256::{Digest, Mode};
use batchcrypt::{Backend, BackendChoice, Engine as CoreEngine, Error, Primitive};
use numpy::{PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};
use std::path::PathBuf;

mod client;

/// Items as Python holds them, borrowed where their memory allows it: a C-contiguous (n, width)
/// uint8 array or a `bytes` of n * width bytes is read in place (no copy, no allocation per
/// item); any other sequence of bytes-like objects is copied once, item by item.
enum Items<'py> {
    Array(numpy::PyReadonlyArray2<'py, u8>),
    Bytes(Bound<'py, PyBytes>),
    Owned(Vec<Vec<u8>>),
}

impl<'py> Items<'py> {
    fn new(obj: &Bound<'py, PyAny>) -> PyResult<Self> {
        if let Ok(a) = obj.extract::<numpy::PyReadonlyArray2<'py, u8>>() {
            if a.as_slice().is_ok() {
                return Ok(Items::Array(a));
            }
        }
        if let Ok(b) = obj.downcast::<PyBytes>() {
            return Ok(Items::Bytes(b.clone()));
        }
        rows(obj).map(Items::Owned)
    }

    /// The items' bytes in one contiguous buffer and the width of each, where they are so.
    fn flat(&self) -> Option<(&[u8], usize)> {
        match self {
            Items::Array(a) => Some((a.as_slice().ok()?, a.shape()[1])),
            Items::Bytes(_) | Items::Owned(_) => None,
        }
    }

    /// One slice per item.
    fn slices(&self, what: &str) -> PyResult<Vec<&[u8]>> {
        Ok(match self {
            Items::Array(_) => {
                let (buf, width) = self.flat().expect("contiguous");
                match width {
                    0 => vec![&[][..]; self.array_rows()],
                    w => buf.chunks_exact(w).collect(),
                }
            }
            Items::Bytes(_) => {
                return Err(PyValueError::new_err(format!(
                    "{what}: one bytes object does not say where its items end; pass a sequence of bytes, or an (n, width) uint8 array"
                )))
            }
            Items::Owned(v) => v.iter().map(Vec::as_slice).collect(),
        })
    }

    fn array_rows(&self) -> usize {
        match self {
            Items::Array(a) => a.shape()[0],
            _ => 0,
        }
    }

    /// Items of exactly N bytes, in place where they are contiguous (an (n, N) array, or a
    /// `bytes` of n * N bytes), else copied.
    fn fixed<const N: usize>(&self, what: &str) -> PyResult<std::borrow::Cow<'_, [[u8; N]]>> {
        use std::borrow::Cow;
        let whole = match self {
            Items::Array(_) => self.flat().filter(|f| f.1 == N).map(|f| f.0),
            Items::Bytes(b) if b.as_bytes().len() % N == 0 => Some(b.as_bytes()),
            _ => None,
        };
        if let Some(buf) = whole {
            return Ok(Cow::Borrowed(buf.as_chunks::<N>().0));
        }
        let owned: Vec<Vec<u8>> = match self {
            Items::Bytes(b) => {
                return Err(PyValueError::new_err(format!(
                    "{what}: {} bytes are not a whole number of {N}-byte items",
                    b.as_bytes().len()
                )))
            }
            _ => self.slices(what)?.into_iter().map(<[u8]>::to_vec).collect(),
        };
        exact(owned, what).map(Cow::Owned)
    }
}

/// One byte string per item, from a sequence of bytes-like objects or a 2-D uint8 array.
fn rows(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Vec<u8>>> {
    if let Ok(a) = obj.extract::<numpy::PyReadonlyArray2<'_, u8>>() {
        let a = a.as_array();
        return Ok(a.rows().into_iter().map(|r| r.to_vec()).collect());
    }
    obj.try_iter()?.map(|item| input(&item?)).collect()
}

/// Items of exactly N bytes: a flat buffer of n * N bytes, an (n, N) array, or a sequence.
fn fixed_rows<const N: usize>(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<[u8; N]>> {
    let items = match obj.downcast::<PyBytes>() {
        Ok(b) if b.as_bytes().len() % N == 0 => {
            b.as_bytes().chunks_exact(N).map(|c| c.to_vec()).collect()
        }
        _ => rows(obj)?,
    };
    exact(items, what)
}

pyo3::create_exception!(
    batchcrypt,
    AuthenticationError,
    pyo3::exceptions::PyValueError,
    "Authenticated decryption failed: wrong key, IV or AAD, or modified data."
);

fn to_py(e: Error) -> PyErr {
    match e {
        Error::EmptyBatch
        | Error::InvalidInput(_)
        | Error::BackendUnavailable { .. }
        | Error::Corrupt(_) => PyValueError::new_err(e.to_string()),
        Error::AuthenticationFailed => AuthenticationError::new_err(e.to_string()),
        Error::Cuda { .. } | Error::Library { .. } | Error::Io(_) => {
            PyRuntimeError::new_err(e.to_string())
        }
    }
}

fn mode(double: bool) -> Mode {
    if double {
        Mode::Double
    } else {
        Mode::Single
    }
}

fn digests<'py>(py: Python<'py>, v: Vec<Digest>) -> Bound<'py, PyArray2<u8>> {
    let n = v.len();
    let flat: Vec<u8> = v.into_iter().flatten().collect();
    numpy::PyArray1::from_vec(py, flat)
        .reshape([n, 32])
        .expect("n x 32")
}

/// Rows of equal width as an (n, width) uint8 array.
fn matrix(py: Python<'_>, rows: Vec<Vec<u8>>, width: usize) -> Bound<'_, PyArray2<u8>> {
    let n = rows.len();
    let flat: Vec<u8> = rows.into_iter().flatten().collect();
    PyArray1::from_vec(py, flat)
        .reshape([n, width])
        .expect("n x width")
}

/// Fixed-size items as an (n, N) uint8 array.
fn table<const N: usize>(py: Python<'_>, v: Vec<[u8; N]>) -> Bound<'_, PyArray2<u8>> {
    matrix(py, v.into_iter().map(|r| r.to_vec()).collect(), N)
}

/// Rows of exactly N bytes.
fn exact<const N: usize>(rows: Vec<Vec<u8>>, what: &str) -> PyResult<Vec<[u8; N]>> {
    rows.into_iter()
        .enumerate()
        .map(|(i, r)| {
            <[u8; N]>::try_from(r.as_slice()).map_err(|_| {
                PyValueError::new_err(format!("{what}[{i}] has {} bytes, expected {N}", r.len()))
            })
        })
        .collect()
}

fn scalar(k: &[u8]) -> PyResult<[u8; 32]> {
    k.try_into().map_err(|_| {
        PyValueError::new_err(format!(
            "the scalar must be 32 bytes big-endian, got {}",
            k.len()
        ))
    })
}

fn ecdsa_curve(curve: &str) -> PyResult<EcdsaCurve> {
    match curve {
        "secp256k1" => Ok(EcdsaCurve::Secp256k1),
        "p256" | "secp256r1" | "P-256" => Ok(EcdsaCurve::P256),
        other => Err(PyValueError::new_err(format!(
            "curve must be \"secp256k1\" or \"p256\", not {other:?}"
        ))),
    }
}

fn sig_format(format: &str) -> PyResult<SigFormat> {
    match format {
        "der" => Ok(SigFormat::Der),
        "compact" => Ok(SigFormat::Compact),
        other => Err(PyValueError::new_err(format!(
            "format must be \"der\" or \"compact\", not {other:?}"
        ))),
    }
}

/// Input bytes read in place from `bytes` or a C-contiguous uint8 array; copied from anything
/// else bytes-like (bytearray, memoryview, a non-contiguous array).
enum Data<'py> {
    Bytes(Bound<'py, PyBytes>),
    Array1(PyReadonlyArray1<'py, u8>),
    Array2(numpy::PyReadonlyArray2<'py, u8>),
    Owned(Vec<u8>),
}

impl<'py> Data<'py> {
    fn new(obj: &Bound<'py, PyAny>) -> PyResult<Self> {
        if let Ok(b) = obj.downcast::<PyBytes>() {
            return Ok(Data::Bytes(b.clone()));
        }
        if let Ok(a) = obj.extract::<PyReadonlyArray1<'py, u8>>() {
            if a.as_slice().is_ok() {
                return Ok(Data::Array1(a));
            }
        }
        if let Ok(a) = obj.extract::<numpy::PyReadonlyArray2<'py, u8>>() {
            if a.as_slice().is_ok() {
                return Ok(Data::Array2(a));
            }
        }
        input(obj).map(Data::Owned)
    }

    fn bytes(&self) -> &[u8] {
        match self {
            Data::Bytes(b) => b.as_bytes(),
            Data::Array1(a) => a.as_slice().expect("contiguous"),
            Data::Array2(a) => a.as_slice().expect("contiguous"),
            Data::Owned(v) => v,
        }
    }
}

/// Input bytes from `bytes`, `bytearray`, `memoryview` or a uint8 numpy array.
fn input(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(b) = obj.downcast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    if let Ok(a) = obj.extract::<PyReadonlyArray1<'_, u8>>() {
        return Ok(a.as_slice()?.to_vec());
    }
    if let Ok(a) = obj.extract::<numpy::PyReadonlyArray2<'_, u8>>() {
        return Ok(a.as_slice()?.to_vec());
    }
    obj.extract::<Vec<u8>>()
        .map_err(|_| PyValueError::new_err("expected bytes, bytearray or a uint8 numpy array"))
}

/// Bytes given as bytes-like (bytes, bytearray, memoryview, uint8 array) or as a hex string.
fn bytes_or_hex(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u8>> {
    if obj.is_instance_of::<PyString>() {
        return decode_hex(&obj.extract::<String>()?, what);
    }
    input(obj).map_err(|_| PyValueError::new_err(format!("{what}: expected a hex string or bytes")))
}

fn decode_hex(s: &str, what: &str) -> PyResult<Vec<u8>> {
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    if !s.len().is_multiple_of(2) {
        return Err(PyValueError::new_err(format!(
            "{what}: odd number of hex digits ({})",
            s.len()
        )));
    }
    s.as_bytes()
        .chunks(2)
        .enumerate()
        .map(|(i, p)| match (digit(p[0]), digit(p[1])) {
            (Some(hi), Some(lo)) => Ok(hi << 4 | lo),
            _ => Err(PyValueError::new_err(format!(
                "{what}: not hex at position {}",
                2 * i
            ))),
        })
        .collect()
}

/// A required key of a dict given by the caller.
fn field<'py>(d: &Bound<'py, PyDict>, key: &str, what: &str) -> PyResult<Bound<'py, PyAny>> {
    d.get_item(key)?
        .ok_or_else(|| PyValueError::new_err(format!("{what}: missing key {key:?}")))
}

/// A library error, with an I/O failure (a missing spent-output file) as Python's OSError.
fn to_py_io(e: Error) -> PyErr {
    match e {
        Error::Io(io) => PyErr::from(io),
        other => to_py(other),
    }
}

/// The spent outputs of `block` from bytes in the named format.
fn parse_spent(
    bytes: &[u8],
    format: &str,
    block: &batchcrypt::bitcoin::Block,
) -> batchcrypt::Result<Vec<SpentOutput>> {
    match format {
        "undo" => spent::parse_bcoin_undo(bytes),
        "spent.json" => {
            let text = std::str::from_utf8(bytes)
                .map_err(|_| Error::InvalidInput("spent.json: not UTF-8 JSON".into()))?;
            spent::parse_floresta_json(text)
        }
        "rev" => store::flatten_block_undo(block, spent::parse_core_block_undo(bytes)?),
        _ => unreachable!("checked before"),
    }
}

/// Where the spent outputs come from.
enum SpentSource {
    Bytes(Vec<u8>),
    Path(PathBuf),
}

fn block_dict<'py>(py: Python<'py>, r: &BlockReport) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let (reason, tx, inp) = match &r.verdict {
        Ok(()) => (None, None, None),
        Err(e) => (Some(e.reason.clone()), e.tx, e.input),
    };
    d.set_item("valid", r.verdict.is_ok())?;
    d.set_item("reason", reason)?;
    d.set_item("tx", tx)?;
    d.set_item("input", inp)?;
    d.set_item("hash", &r.hash)?;
    d.set_item("height", r.height)?;
    d.set_item("flags", r.flags.names())?;
    d.set_item("txs", r.txs)?;
    d.set_item("inputs", r.inputs)?;
    d.set_item("weight", r.weight)?;
    d.set_item("sigop_cost", r.sigop_cost)?;
    d.set_item("fees", r.fees)?;
    let unchecked: Vec<String> = r.unchecked.iter().map(|u| u.to_string()).collect();
    d.set_item("unchecked", unchecked)?;
    let s = r.scripts.as_ref();
    let name = |b: Option<batchcrypt::Backend>| b.map(|b| b.name().to_string());
    d.set_item("scripts_checked", s.is_some())?;
    d.set_item("ecdsa_checks", s.map_or(0, |s| s.ecdsa_checks))?;
    d.set_item("schnorr_checks", s.map_or(0, |s| s.schnorr_checks))?;
    d.set_item("ecdsa_backend", name(s.and_then(|s| s.ecdsa_backend)))?;
    d.set_item("schnorr_backend", name(s.and_then(|s| s.schnorr_backend)))?;
    d.set_item("replayed_inputs", s.map_or(0, |s| s.replayed_inputs))?;
    d.set_item("structure_time", r.structure_time.as_secs_f64())?;
    d.set_item("inputs_time", r.inputs_time.as_secs_f64())?;
    d.set_item("scripts_time", r.scripts_time.as_secs_f64())?;
    d.set_item(
        "interpreter_time",
        s.map_or(0.0, |s| s.scripts_time.as_secs_f64()),
    )?;
    d.set_item(
        "signatures_time",
        s.map_or(0.0, |s| s.signatures_time.as_secs_f64()),
    )?;
    d.set_item(
        "replay_time",
        s.map_or(0.0, |s| s.replay_time.as_secs_f64()),
    )?;
    Ok(d)
}

/// One transaction of `verify_transactions`' argument.
fn loose_tx(item: &Bound<'_, PyAny>, k: usize) -> PyResult<LooseTx> {
    let what = format!("txs[{k}]");
    let d = item
        .downcast::<PyDict>()
        .map_err(|_| PyValueError::new_err(format!("{what}: expected a dict")))?;
    let raw = bytes_or_hex(&field(d, "tx", &what)?, &format!("{what}[\"tx\"]"))?;
    let spent_list = field(d, "spent", &what)?;
    let mut spent = Vec::new();
    for (i, s) in spent_list.try_iter()?.enumerate() {
        let s = s?;
        let sw = format!("{what}[\"spent\"][{i}]");
        let sd = s
            .downcast::<PyDict>()
            .map_err(|_| PyValueError::new_err(format!("{sw}: expected a dict")))?;
        let value: i64 = field(sd, "value", &sw)?.extract().map_err(|_| {
            PyValueError::new_err(format!("{sw}[\"value\"]: expected an int (satoshis)"))
        })?;
        let script = bytes_or_hex(
            &field(sd, "script_pubkey", &sw)?,
            &format!("{sw}[\"script_pubkey\"]"),
        )?;
        spent.push(SpentOutput::new(value, script));
    }
    let flags = match d.get_item("flags")? {
        None => Flags::CONSENSUS,
        Some(f) if f.is_none() => Flags::CONSENSUS,
        Some(f) => {
            let f: String = f
                .extract()
                .map_err(|_| PyValueError::new_err(format!("{what}[\"flags\"]: expected a str")))?;
            Flags::parse(&f)
                .map_err(|e| PyValueError::new_err(format!("{what}[\"flags\"]: {e}")))?
        }
    };
    Ok(LooseTx { raw, spent, flags })
}

/// A batch engine. `backend` is "auto" (the cost model decides per batch), "cpu", "gpu", or one
/// of "portable", "sha-ni", "avx2", "avx512", "cuda". `last_backend` names what ran last.
#[pyclass(name = "Engine", module = "batchcrypt")]
struct Engine {
    inner: CoreEngine,
    #[pyo3(get)]
    last_backend: Option<String>,
    /// For the last verification batch: None for a valid item, else why it failed.
    #[pyo3(get)]
    last_reasons: Vec<Option<String>>,
}

impl Engine {
    fn verdicts<'py>(&mut self, py: Python<'py>, v: Verdicts) -> Bound<'py, PyArray1<bool>> {
        self.last_reasons = v
            .results
            .iter()
            .map(|r| r.as_ref().err().map(|e| e.to_string()))
            .collect();
        PyArray1::from_vec(py, v.results.iter().map(|r| r.is_ok()).collect())
    }

    fn run<T: Send>(
        &mut self,
        py: Python<'_>,
        f: impl FnOnce(&CoreEngine) -> batchcrypt::Result<batchcrypt::Output<T>> + Send,
    ) -> PyResult<T> {
        let inner = &self.inner;
        let out = py.allow_threads(|| f(inner)).map_err(to_py)?;
        self.last_backend = Some(out.backend.name().to_string());
        Ok(out.value)
    }
}

#[pymethods]
impl Engine {
    /// `backend`: auto, cpu, gpu or a backend's name. `gpus`: the GPUs to use (indices as
    /// `batchcrypt info` lists them); all of them by default.
    #[new]
    #[pyo3(signature = (backend = "auto", gpus = None))]
    fn new(backend: &str, gpus: Option<Vec<usize>>) -> PyResult<Self> {
        let choice: BackendChoice = backend.parse().map_err(to_py)?;
        Ok(Engine {
            inner: match gpus {
                Some(g) => CoreEngine::with_gpus(choice, &g),
                None => CoreEngine::with_backend(choice),
            },
            last_backend: None,
            last_reasons: Vec::new(),
        })
    }

    /// SHA-256 of `len(data) // msg_len` messages of `msg_len` bytes; returns an (n, 32) uint8 array.
    #[pyo3(signature = (data, msg_len, double = false))]
    fn sha256_batch<'py>(
        &mut self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        msg_len: usize,
        double: bool,
    ) -> PyResult<Bound<'py, PyArray2<u8>>> {
        let data = Data::new(data)?;
        let data = data.bytes();
        let v = self.run(py, |e| e.sha256().hash_fixed(&data, msg_len, mode(double)))?;
        Ok(digests(py, v))
    }

    /// SHA-256 of messages of any length: message i is data[offsets[i]:offsets[i+1]].
    #[pyo3(signature = (data, offsets, double = false))]
    fn sha256_batch_var<'py>(
        &mut self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        offsets: PyReadonlyArray1<'py, u64>,
        double: bool,
    ) -> PyResult<Bound<'py, PyArray2<u8>>> {
        let data = Data::new(data)?;
        let data = data.bytes();
        let offsets = offsets.as_slice()?.to_vec();
        let v = self.run(py, |e| e.sha256().hash_var(&data, &offsets, mode(double)))?;
        Ok(digests(py, v))
    }

    /// Bitcoin's SHA256d of 64-byte messages (merkle nodes).
    fn sha256d_64<'py>(
        &mut self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray2<u8>>> {
        self.sha256_batch(py, data, 64, true)
    }

    /// Batch ECDSA verification. `hashes`: n x 32 bytes (bytes or (n, 32) array); `sigs`,
    /// `pubkeys`: sequences of bytes (or 2-D uint8 arrays, one row each). C-contiguous arrays and
    /// `bytes` are read in place, without a copy. `format`: "der" or "compact"; `curve`:
    /// "secp256k1" or "p256" (NIST P-256, also "secp256r1"). Returns a bool array;
    /// `last_reasons` holds why each failed item failed.
    #[pyo3(signature = (hashes, sigs, pubkeys, format = "der", require_low_s = false, curve = "secp256k1"))]
    #[allow(clippy::too_many_arguments)]
    fn verify_ecdsa_batch<'py>(
        &mut self,
        py: Python<'py>,
        hashes: &Bound<'py, PyAny>,
        sigs: &Bound<'py, PyAny>,
        pubkeys: &Bound<'py, PyAny>,
        format: &str,
        require_low_s: bool,
        curve: &str,
    ) -> PyResult<Bound<'py, PyArray1<bool>>> {
        let format = sig_format(format)?;
        let curve = ecdsa_curve(curve)?;
        let hashes = Items::new(hashes)?;
        let hashes = hashes.fixed::<32>("hashes")?;
        let (sigs, keys) = (Items::new(sigs)?, Items::new(pubkeys)?);
        let (sigs, keys) = (sigs.slices("sigs")?, keys.slices("pubkeys")?);
        let opts = EcdsaOptions {
            format,
            require_low_s,
        };
        let verdicts = self.run(py, |e| match curve {
            EcdsaCurve::Secp256k1 => e.secp256k1().verify_ecdsa(&hashes, &sigs, &keys, &opts),
            EcdsaCurve::P256 => e.ecdsa::<P256>().verify(&hashes, &sigs, &keys, &opts),
        })?;
        Ok(self.verdicts(py, verdicts))
    }

    /// Batch BIP340 verification: `msgs` a sequence of bytes (any lengths) or an (n, width) uint8
    /// array, `sigs` n x 64 bytes and `pubkeys` n x 32 bytes (x-only), each an (n, 64) / (n, 32)
    /// uint8 array, one `bytes` of all of them, or a sequence. C-contiguous arrays and `bytes` are
    /// read in place, without a copy. Returns a bool array; see `last_reasons`.
    fn verify_schnorr_batch<'py>(
        &mut self,
        py: Python<'py>,
        msgs: &Bound<'py, PyAny>,
        sigs: &Bound<'py, PyAny>,
        pubkeys: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<bool>>> {
        let msgs = Items::new(msgs)?;
        let msgs = msgs.slices("msgs")?;
        let (sigs, keys) = (Items::new(sigs)?, Items::new(pubkeys)?);
        let sigs = sigs.fixed::<64>("sigs")?;
        let keys = keys.fixed::<32>("pubkeys")?;
        let verdicts = self.run(py, |e| e.secp256k1().verify_schnorr(&msgs, &sigs, &keys))?;
        Ok(self.verdicts(py, verdicts))
    }

    /// AES-CTR (SP 800-38A, 128-bit counter from `iv`, 16 bytes) with a 16- or 32-byte key;
    /// encryption and decryption are the same call. Returns the output bytes.
    fn aes_ctr<'py>(
        &mut self,
        py: Python<'py>,
        key: &[u8],
        iv: &[u8],
        data: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let key = batchcrypt::aes::Key::new(key).map_err(to_py)?;
        let iv: [u8; 16] = iv
            .try_into()
            .map_err(|_| PyValueError::new_err(format!("iv must be 16 bytes, got {}", iv.len())))?;
        let data = Data::new(data)?;
        let data = data.bytes();
        let mut out = vec![0u8; data.len()];
        self.run(py, |e| e.aes().ctr(&key, &iv, &data, &mut out))?;
        Ok(PyBytes::new(py, &out))
    }

    /// AES-GCM encryption; returns (ciphertext, 16-byte tag).
    #[pyo3(signature = (key, iv, data, aad = b"".as_slice()))]
    fn aes_gcm_encrypt<'py>(
        &mut self,
        py: Python<'py>,
        key: &[u8],
        iv: &[u8],
        data: &Bound<'py, PyAny>,
        aad: &[u8],
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
        let key = batchcrypt::aes::Key::new(key).map_err(to_py)?;
        let data = Data::new(data)?;
        let data = data.bytes();
        let mut out = vec![0u8; data.len()];
        let tag = self.run(py, |e| e.aes().gcm_encrypt(&key, iv, aad, &data, &mut out))?;
        Ok((PyBytes::new(py, &out), PyBytes::new(py, &tag)))
    }

    /// AES-GCM decryption; raises AuthenticationError (a ValueError) when the tag does not check.
    #[pyo3(signature = (key, iv, data, tag, aad = b"".as_slice()))]
    fn aes_gcm_decrypt<'py>(
        &mut self,
        py: Python<'py>,
        key: &[u8],
        iv: &[u8],
        data: &Bound<'py, PyAny>,
        tag: &[u8],
        aad: &[u8],
    ) -> PyResult<Bound<'py, PyBytes>> {
        let key = batchcrypt::aes::Key::new(key).map_err(to_py)?;
        let data = Data::new(data)?;
        let data = data.bytes();
        let mut out = vec![0u8; data.len()];
        self.run(py, |e| {
            e.aes().gcm_decrypt(&key, iv, aad, &data, &mut out, tag)
        })?;
        Ok(PyBytes::new(py, &out))
    }

    /// SM2 `k·G` for each 32-byte big-endian scalar (each below n): `scalars` n x 32 bytes.
    /// Returns an (n, 64) uint8 array of affine points, x || y big-endian.
    fn sm2_mul_base<'py>(
        &mut self,
        py: Python<'py>,
        scalars: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray2<u8>>> {
        let scalars: Vec<[u8; 32]> = fixed_rows(scalars, "scalars")?;
        let v = self.run(py, |e| e.sm2().mul_base(&scalars))?;
        Ok(table(py, v))
    }

    /// SM2 `k·P` for one secret scalar `k` (32 bytes) over many points: n x 64 affine (x || y)
    /// or n x 33 SEC1-compressed (answered in the same encoding). Returns (points, ok): a point
    /// not on the curve gives a zero row and False in `ok` (with the reason in `last_reasons`),
    /// never a product.
    fn sm2_mul<'py>(
        &mut self,
        py: Python<'py>,
        k: &[u8],
        points: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyArray2<u8>>, Bound<'py, PyArray1<bool>>)> {
        let k = scalar(k)?;
        let rows = rows(points)?;
        let width = rows.first().map_or(64, Vec::len);
        let out: Vec<Option<Vec<u8>>> = match width {
            64 => {
                let pts: Vec<[u8; 64]> = exact(rows, "points")?;
                let v = self.run(py, |e| e.sm2().mul_shared(&k, &pts))?;
                v.into_iter().map(|p| p.map(|p| p.to_vec())).collect()
            }
            33 => {
                let pts: Vec<[u8; 33]> = exact(rows, "points")?;
                let v = self.run(py, |e| e.sm2().mul_compressed(&k, &pts))?;
                v.into_iter().map(|p| p.map(|p| p.to_vec())).collect()
            }
            w => {
                return Err(PyValueError::new_err(format!(
                    "points must be 64 bytes (x || y) or 33 (compressed), got {w}"
                )))
            }
        };
        self.last_reasons = out
            .iter()
            .map(|p| {
                p.is_none()
                    .then(|| "the point is not on the curve".to_string())
            })
            .collect();
        let ok = out.iter().map(Option::is_some).collect();
        let table = out
            .into_iter()
            .map(|p| p.unwrap_or_else(|| vec![0; width]))
            .collect();
        Ok((matrix(py, table, width), PyArray1::from_vec(py, ok)))
    }

    /// SM2 `k·H(m)` for each message (RFC 9380 hash-to-curve, suite SM2_XMD:SM3_SSWU_RO_, with
    /// domain separation tag `dst`), fused on the backend: the blinding step of an ECDH-PSI.
    /// Returns an (n, 33) uint8 array of compressed points.
    #[pyo3(signature = (k, msgs, dst = batchcrypt::sm2::DEFAULT_DST))]
    fn sm2_hash_to_curve_mul<'py>(
        &mut self,
        py: Python<'py>,
        k: &[u8],
        msgs: &Bound<'py, PyAny>,
        dst: &[u8],
    ) -> PyResult<Bound<'py, PyArray2<u8>>> {
        let k = scalar(k)?;
        let msgs = Items::new(msgs)?;
        let m = msgs.slices("msgs")?;
        let v = self.run(py, |e| e.sm2().hash_to_curve_mul(&k, &m, dst))?;
        Ok(table(py, v))
    }

    /// SM2 signature verification (GM/T 0003.2) of messages of any length, the digest
    /// SM3(Z_A || M) computed here with the signer's identifier `id`: `sigs` DER (or 64-byte
    /// r || s with format="compact"), `pubkeys` SEC1 keys. A bool array; see `last_reasons`.
    #[pyo3(signature = (msgs, sigs, pubkeys, id = batchcrypt::sm2::verify::DEFAULT_ID, format = "der"))]
    fn sm2_verify_batch<'py>(
        &mut self,
        py: Python<'py>,
        msgs: &Bound<'py, PyAny>,
        sigs: &Bound<'py, PyAny>,
        pubkeys: &Bound<'py, PyAny>,
        id: &[u8],
        format: &str,
    ) -> PyResult<Bound<'py, PyArray1<bool>>> {
        let format = sig_format(format)?;
        let (msgs, sigs, keys) = (Items::new(msgs)?, Items::new(sigs)?, Items::new(pubkeys)?);
        let (m, s, k) = (
            msgs.slices("msgs")?,
            sigs.slices("sigs")?,
            keys.slices("pubkeys")?,
        );
        let verdicts = self.run(py, |e| e.sm2().verify(&m, &s, &k, id, format))?;
        Ok(self.verdicts(py, verdicts))
    }

    /// SM3 of `len(data) // msg_len` messages of `msg_len` bytes; an (n, 32) uint8 array.
    fn sm3_batch<'py>(
        &mut self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        msg_len: usize,
    ) -> PyResult<Bound<'py, PyArray2<u8>>> {
        let data = Data::new(data)?;
        let data = data.bytes();
        let v = self.run(py, |e| e.sm3().hash_fixed(&data, msg_len))?;
        Ok(digests(py, v))
    }

    /// Validates one Bitcoin block with the outputs its inputs spend, as Bitcoin Core's
    /// CheckBlock, ContextualCheckBlock and ConnectBlock would (without the UTXO set: the spent
    /// outputs are given), every signature of the block verified in one ECDSA and one BIP340
    /// batch on this engine's backend.
    ///
    /// `block`: the raw block (network serialization, with witnesses). `spent`: the outputs the
    /// block's non-coinbase inputs spend, either a path (str or os.PathLike; the format from its
    /// name: `.undo` bcoin, `.spent.json`/`.json` Floresta, `.rev` one Bitcoin Core CBlockUndo
    /// record) or the file's bytes with `spent_format` "undo", "spent.json" or "rev" (a path
    /// with `spent_format` is read in that format whatever its name). `height`: the block's
    /// height; None reads it from the coinbase (BIP34). `network`: "main", "test" or "regtest".
    /// `check_pow`: check the header's proof of work against its own target. No chain history is
    /// known: rules it would decide are listed in `unchecked`.
    ///
    /// Returns a dict: `valid`; `reason` (Core's reject reason), `tx` and `input` (where it
    /// applies) or None; `hash` (display order), `height`, `flags` (the script flags, comma-
    /// separated), `txs`, `inputs`, `weight`, `sigop_cost`, `fees` (satoshis), `unchecked`
    /// (list of str); the script stage: `scripts_checked` (False when the block failed before
    /// its scripts ran; the counts are then 0 and the backends None), `ecdsa_checks`,
    /// `schnorr_checks`, `ecdsa_backend`, `schnorr_backend` (str or None), `replayed_inputs`;
    /// times in seconds: `structure_time`, `inputs_time`, `scripts_time` (the three stages),
    /// and within the scripts stage `interpreter_time`, `signatures_time`, `replay_time`.
    ///
    /// An invalid block is a result (valid False), not an exception. Data that cannot be
    /// validated at all (an unparsable block or spent-output data, a spent-output count that
    /// does not fit the block, an unknown height before BIP34) raises ValueError; an unreadable
    /// file raises OSError. Releases the GIL.
    #[pyo3(signature = (block, spent, *, spent_format = None, height = None, network = "main", check_pow = true))]
    #[allow(clippy::too_many_arguments)]
    fn verify_block<'py>(
        &mut self,
        py: Python<'py>,
        block: &Bound<'py, PyAny>,
        spent: &Bound<'py, PyAny>,
        spent_format: Option<&str>,
        height: Option<u32>,
        network: &str,
        check_pow: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let network: Network = network.parse().map_err(PyValueError::new_err)?;
        if let Some(f) = spent_format {
            if !matches!(f, "undo" | "spent.json" | "rev") {
                return Err(PyValueError::new_err(format!(
                    "spent_format must be \"undo\", \"spent.json\" or \"rev\", not {f:?}"
                )));
            }
        }
        let raw = input(block).map_err(|_| {
            PyValueError::new_err("block: expected bytes, bytearray or a uint8 numpy array")
        })?;
        let source = if spent.is_instance_of::<PyString>() || spent.hasattr("__fspath__")? {
            SpentSource::Path(spent.extract::<PathBuf>()?)
        } else {
            let bytes = input(spent).map_err(|_| {
                PyValueError::new_err("spent: expected a path (str or os.PathLike) or bytes")
            })?;
            if spent_format.is_none() {
                return Err(PyValueError::new_err(
                    "spent given as bytes: name its format with spent_format=\"undo\", \"spent.json\" or \"rev\"",
                ));
            }
            SpentSource::Bytes(bytes)
        };
        let inner = &self.inner;
        let report = py
            .allow_threads(|| -> batchcrypt::Result<BlockReport> {
                let block = parse_block(&raw)?;
                let spent = match (&source, spent_format) {
                    (SpentSource::Path(p), None) => spent::read_spent_file(p, &block)?,
                    (SpentSource::Path(p), Some(f)) => parse_spent(&std::fs::read(p)?, f, &block)?,
                    (SpentSource::Bytes(b), f) => parse_spent(b, f.unwrap_or_default(), &block)?,
                };
                let ctx = BlockContext {
                    network,
                    height,
                    times: &NoHistory,
                    check_pow,
                };
                verify_block(inner, &block, &spent, &ctx)
            })
            .map_err(to_py_io)?;
        if let Some(s) = &report.scripts {
            if let Some(b) = s.ecdsa_backend.or(s.schnorr_backend) {
                self.last_backend = Some(b.name().to_string());
            }
        }
        block_dict(py, &report)
    }

    /// Checks loose Bitcoin transactions (as a mempool or a wallet backend would): each one's
    /// encoding, Core's CheckTransaction, its spent amounts against its outputs, and every
    /// input's scripts, the signatures of all of them verified as one batch on this engine's
    /// backend (the GIL released meanwhile).
    ///
    /// `txs`: a list of dicts `{"tx": hex str or bytes (serialized with witnesses), "spent":
    /// [{"value": int (satoshis), "script_pubkey": hex str or bytes}, ...] (one per input, in
    /// order), "flags": "P2SH,WITNESS,..." (optional; default every consensus rule in force
    /// today: P2SH, DERSIG, NULLDUMMY, CHECKLOCKTIMEVERIFY, CHECKSEQUENCEVERIFY, WITNESS,
    /// TAPROOT; "" or "NONE" for none)}`.
    ///
    /// Returns one dict per transaction, in order: `{"valid": bool, "input": int or None (the
    /// failing input, where one is to blame), "reason": str or None}`; `last_reasons` gets the
    /// reasons too. A bad transaction is a verdict, not an exception; a malformed argument (a
    /// missing key, bad hex, an unknown flag name) raises ValueError.
    fn verify_transactions<'py>(
        &mut self,
        py: Python<'py>,
        txs: &Bound<'py, PyAny>,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let items: Vec<LooseTx> = txs
            .try_iter()?
            .enumerate()
            .map(|(k, item)| loose_tx(&item?, k))
            .collect::<PyResult<_>>()?;
        if items.is_empty() {
            self.last_reasons = Vec::new();
            return Ok(Vec::new());
        }
        let inner = &self.inner;
        let (verdicts, report) = py
            .allow_threads(|| verify_transactions(inner, &items))
            .map_err(to_py)?;
        if let Some(s) = &report {
            if let Some(b) = s.ecdsa_backend.or(s.schnorr_backend) {
                self.last_backend = Some(b.name().to_string());
            }
        }
        self.last_reasons = verdicts
            .iter()
            .map(|v| v.as_ref().err().map(|r| r.reason.clone()))
            .collect();
        verdicts
            .iter()
            .map(|v| {
                let d = PyDict::new(py);
                d.set_item("valid", v.is_ok())?;
                d.set_item("input", v.as_ref().err().and_then(|r| r.input))?;
                d.set_item("reason", v.as_ref().err().map(|r| r.reason.clone()))?;
                Ok(d)
            })
            .collect()
    }

    /// Bitcoin merkle root of concatenated 32-byte txids (internal byte order).
    fn merkle_root<'py>(
        &mut self,
        py: Python<'py>,
        txids: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let data = input(txids)?;
        if data.len() % 32 != 0 {
            return Err(PyValueError::new_err(format!(
                "txids must be a multiple of 32 bytes, got {}",
                data.len()
            )));
        }
        let ids: Vec<Digest> = data
            .chunks_exact(32)
            .map(|c| c.try_into().unwrap())
            .collect();
        let root = self.run(py, |e| e.sha256().merkle_root(&ids))?;
        Ok(PyBytes::new(py, &root))
    }
}

/// SHA-256 of one message.
#[pyfunction]
#[pyo3(signature = (data, double = false))]
fn sha256<'py>(py: Python<'py>, data: &[u8], double: bool) -> Bound<'py, PyBytes> {
    let d = if double {
        batchcrypt::sha256::digest_double(data)
    } else {
        batchcrypt::sha256::digest(data)
    };
    PyBytes::new(py, &d)
}

/// Backends of this build, as (name, None if available here else the reason it is not); with
/// `primitive` ("sha256", "secp256k1") only those that implement it.
#[pyfunction]
#[pyo3(signature = (primitive = None))]
fn backends(primitive: Option<&str>) -> PyResult<Vec<(String, Option<String>)>> {
    let only = primitive
        .map(|p| p.parse::<Primitive>())
        .transpose()
        .map_err(to_py)?;
    Ok(Backend::ALL
        .iter()
        .filter(|b| only.is_none_or(|p| b.implements(p)))
        .map(|b| (b.name().to_string(), b.availability().err()))
        .collect())
}

/// A description of the CPU features and GPU found.
#[pyfunction]
fn hardware() -> String {
    batchcrypt::describe_hardware()
}

#[pymodule]
fn _batchcrypt(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Engine>()?;
    m.add_class::<client::Client>()?;
    m.add_function(wrap_pyfunction!(sha256, m)?)?;
    m.add_function(wrap_pyfunction!(backends, m)?)?;
    m.add_function(wrap_pyfunction!(hardware, m)?)?;
    m.add(
        "AuthenticationError",
        m.py().get_type::<AuthenticationError>(),
    )?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

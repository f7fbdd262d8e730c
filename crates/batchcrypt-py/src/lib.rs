//! Python bindings: batch APIs over bytes and numpy arrays. Heavy calls release the GIL.

use batchcrypt::p256::P256;
use batchcrypt::secp256k1::{EcdsaOptions, SigFormat, Verdicts};
use batchcrypt::sha256::Mode;
use batchcrypt::{Backend, BackendChoice, Engine as CoreEngine, Error, Primitive};
use batchcrypt_serve::proto::EcdsaCurve;
use numpy::{PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

mod aes;
mod bitcoin;
mod client;
mod psi;
mod zk;

/// Items as Python holds them, borrowed where their memory allows it: a C-contiguous (n, width)
/// uint8 array or a `bytes` of n * width bytes is read in place (no copy, no allocation per
/// item); any other sequence of bytes-like objects is copied once, item by item.
enum Items<'py> {
    Array(numpy::PyReadonlyArray2<'py, u8>),
    Bytes(Bound<'py, PyBytes>),
    /// A sequence's items (or a strided array's rows) copied into one buffer, with each one's
    /// end: one copy of each, no allocation per item.
    Joined {
        data: Vec<u8>,
        ends: Vec<usize>,
    },
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
        let (mut data, mut ends) = (Vec::new(), Vec::new());
        if let Ok(a) = obj.extract::<numpy::PyReadonlyArray2<'_, u8>>() {
            for r in a.as_array().rows() {
                data.extend(r.iter());
                ends.push(data.len());
            }
            return Ok(Items::Joined { data, ends });
        }
        ends.reserve(obj.len().unwrap_or(0));
        for item in obj.try_iter()? {
            let item = item?;
            match item.downcast::<PyBytes>() {
                Ok(b) => data.extend_from_slice(b.as_bytes()),
                Err(_) => data.extend_from_slice(&input(&item)?),
            }
            ends.push(data.len());
        }
        Ok(Items::Joined { data, ends })
    }

    /// The items' bytes in one contiguous buffer and the width of each, where they are so.
    fn flat(&self) -> Option<(&[u8], usize)> {
        match self {
            Items::Array(a) => Some((a.as_slice().ok()?, a.shape()[1])),
            Items::Bytes(_) | Items::Joined { .. } => None,
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
            Items::Joined { data, ends } => {
                let mut at = 0;
                ends.iter()
                    .map(|&end| {
                        let item = &data[at..end];
                        at = end;
                        item
                    })
                    .collect()
            }
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
        match self {
            Items::Bytes(b) => Err(PyValueError::new_err(format!(
                "{what}: {} bytes are not a whole number of {N}-byte items",
                b.as_bytes().len()
            ))),
            Items::Joined { data, ends } => {
                let mut at = 0;
                for (i, &end) in ends.iter().enumerate() {
                    if end - at != N {
                        return Err(PyValueError::new_err(format!(
                            "{what}[{i}] has {} bytes, expected {N}",
                            end - at
                        )));
                    }
                    at = end;
                }
                Ok(Cow::Borrowed(data.as_chunks::<N>().0))
            }
            Items::Array(_) => {
                let width = self.flat().map_or(0, |f| f.1);
                Err(PyValueError::new_err(format!(
                    "{what}: rows of {width} bytes, expected {N}"
                )))
            }
        }
    }
}

/// Items of exactly N bytes: a flat buffer of n * N bytes, an (n, N) array, or a sequence.
fn fixed_rows<const N: usize>(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<[u8; N]>> {
    Ok(Items::new(obj)?.fixed::<N>(what)?.into_owned())
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

/// Fixed-size items as an (n, N) uint8 array.
fn table<const N: usize>(py: Python<'_>, v: Vec<[u8; N]>) -> Bound<'_, PyArray2<u8>> {
    let n = v.len();
    PyArray1::from_vec(py, v.into_flattened())
        .reshape([n, N])
        .expect("n x N")
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

/// A new bytes object of `len` bytes that `fill` writes, its memory zeroed on all cores first,
/// in huge pages where the system gives them (`PyBytes::new_with` zeroes it on one: a large
/// object's pages are new, and the first write to each costs a fault).
pub(crate) fn new_bytes<'py>(
    py: Python<'py>,
    len: usize,
    fill: impl FnOnce(&mut [u8]) -> PyResult<()>,
) -> PyResult<Bound<'py, PyBytes>> {
    use rayon::prelude::*;
    const PIECE: usize = 1 << 20;
    // SAFETY: CPython's documented way to make a bytes object and write it before it is shared:
    // PyBytes_FromStringAndSize(NULL, len) leaves `len` bytes to write; they are zeroed (pieces
    // inside the buffer, one writer each) before a slice of them is made.
    unsafe {
        let ptr =
            pyo3::ffi::PyBytes_FromStringAndSize(std::ptr::null(), len as pyo3::ffi::Py_ssize_t);
        let bytes = Bound::from_owned_ptr_or_err(py, ptr)?.downcast_into_unchecked::<PyBytes>();
        let buf = pyo3::ffi::PyBytes_AsString(ptr).cast::<u8>() as usize;
        batchcrypt::backend::cpu::huge_pages(buf as *const u8, len);
        py.allow_threads(|| {
            (0..len.div_ceil(PIECE)).into_par_iter().for_each(|i| {
                let at = i * PIECE;
                std::ptr::write_bytes((buf as *mut u8).add(at), 0, PIECE.min(len - at))
            })
        });
        fill(std::slice::from_raw_parts_mut(buf as *mut u8, len))?;
        Ok(bytes)
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
        let v = self.run(py, |e| e.sha256().hash_fixed(data, msg_len, mode(double)))?;
        Ok(table(py, v))
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
        let offsets = offsets.as_slice()?;
        let v = self.run(py, |e| e.sha256().hash_var(data, offsets, mode(double)))?;
        Ok(table(py, v))
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
        let items = Items::new(points)?;
        let width = items.slices("points")?.first().map_or(64, |p| p.len());
        /// The products back to back (zeros where a point was refused), and which were made.
        fn flat<const W: usize>(v: Vec<Option<[u8; W]>>) -> (Vec<u8>, Vec<bool>) {
            let ok = v.iter().map(Option::is_some).collect();
            (
                v.into_iter().flat_map(|p| p.unwrap_or([0; W])).collect(),
                ok,
            )
        }
        let (table, ok) = match width {
            64 => {
                let pts = items.fixed::<64>("points")?;
                flat(self.run(py, |e| e.sm2().mul_shared(&k, &pts))?)
            }
            33 => {
                let pts = items.fixed::<33>("points")?;
                flat(self.run(py, |e| e.sm2().mul_compressed(&k, &pts))?)
            }
            w => {
                return Err(PyValueError::new_err(format!(
                    "points must be 64 bytes (x || y) or 33 (compressed), got {w}"
                )))
            }
        };
        self.last_reasons = ok
            .iter()
            .map(|&ok| (!ok).then(|| "the point is not on the curve".to_string()))
            .collect();
        let n = ok.len();
        let table = PyArray1::from_vec(py, table).reshape([n, width])?;
        Ok((table, PyArray1::from_vec(py, ok)))
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
        let v = self.run(py, |e| e.sm3().hash_fixed(data, msg_len))?;
        Ok(table(py, v))
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
    m.add_class::<client::SharedMemory>()?;
    m.add_class::<bitcoin::PyBlocksDir>()?;
    m.add_class::<zk::MsmBases>()?;
    m.add_class::<zk::PyProvingKey>()?;
    m.add_function(wrap_pyfunction!(zk::groth16_verify, m)?)?;
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

//! Python bindings: batch APIs over bytes and numpy arrays. Heavy calls release the GIL.

use batchcrypt::secp256k1::{EcdsaOptions, SigFormat, Verdicts};
use batchcrypt::sha256::{Digest, Mode};
use batchcrypt::{Backend, BackendChoice, Engine as CoreEngine, Error, Primitive};
use numpy::{PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

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

fn slices(v: &[Vec<u8>]) -> Vec<&[u8]> {
    v.iter().map(Vec::as_slice).collect()
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
    #[new]
    #[pyo3(signature = (backend = "auto"))]
    fn new(backend: &str) -> PyResult<Self> {
        let choice: BackendChoice = backend.parse().map_err(to_py)?;
        Ok(Engine {
            inner: CoreEngine::with_backend(choice),
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
        let data = input(data)?;
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
        let data = input(data)?;
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

    /// Batch ECDSA verification over secp256k1. `hashes`: n x 32 bytes (bytes or (n, 32) array);
    /// `sigs`, `pubkeys`: sequences of bytes (or 2-D uint8 arrays, one row each). `format`: "der"
    /// or "compact". Returns a bool array; `last_reasons` holds why each failed item failed.
    #[pyo3(signature = (hashes, sigs, pubkeys, format = "der", require_low_s = false))]
    fn verify_ecdsa_batch<'py>(
        &mut self,
        py: Python<'py>,
        hashes: &Bound<'py, PyAny>,
        sigs: &Bound<'py, PyAny>,
        pubkeys: &Bound<'py, PyAny>,
        format: &str,
        require_low_s: bool,
    ) -> PyResult<Bound<'py, PyArray1<bool>>> {
        let format = sig_format(format)?;
        let hashes: Vec<[u8; 32]> = fixed_rows(hashes, "hashes")?;
        let (sigs, keys) = (rows(sigs)?, rows(pubkeys)?);
        let opts = EcdsaOptions {
            format,
            require_low_s,
        };
        let verdicts = self.run(py, |e| {
            e.secp256k1()
                .verify_ecdsa(&hashes, &slices(&sigs), &slices(&keys), &opts)
        })?;
        Ok(self.verdicts(py, verdicts))
    }

    /// Batch BIP340 verification: `msgs` a sequence of bytes (any lengths), `sigs` n x 64 bytes,
    /// `pubkeys` n x 32 bytes (x-only). Returns a bool array; see `last_reasons`.
    fn verify_schnorr_batch<'py>(
        &mut self,
        py: Python<'py>,
        msgs: &Bound<'py, PyAny>,
        sigs: &Bound<'py, PyAny>,
        pubkeys: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<bool>>> {
        let msgs = rows(msgs)?;
        let sigs: Vec<[u8; 64]> = fixed_rows(sigs, "sigs")?;
        let keys: Vec<[u8; 32]> = fixed_rows(pubkeys, "pubkeys")?;
        let verdicts = self.run(py, |e| {
            let m: Vec<&[u8]> = msgs.iter().map(|x| x.as_slice()).collect();
            e.secp256k1().verify_schnorr(&m, &sigs, &keys)
        })?;
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
        let data = input(data)?;
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
        let data = input(data)?;
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
        let data = input(data)?;
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
        let msgs = rows(msgs)?;
        let v = self.run(py, |e| {
            let m: Vec<&[u8]> = msgs.iter().map(|x| x.as_slice()).collect();
            e.sm2().hash_to_curve_mul(&k, &m, dst)
        })?;
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
        let (msgs, sigs, keys) = (rows(msgs)?, rows(sigs)?, rows(pubkeys)?);
        let verdicts = self.run(py, |e| {
            let (m, s, k) = (slices(&msgs), slices(&sigs), slices(&keys));
            e.sm2().verify(&m, &s, &k, id, format)
        })?;
        Ok(self.verdicts(py, verdicts))
    }

    /// SM3 of `len(data) // msg_len` messages of `msg_len` bytes; an (n, 32) uint8 array.
    fn sm3_batch<'py>(
        &mut self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        msg_len: usize,
    ) -> PyResult<Bound<'py, PyArray2<u8>>> {
        let data = input(data)?;
        let v = self.run(py, |e| e.sm3().hash_fixed(&data, msg_len))?;
        Ok(digests(py, v))
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

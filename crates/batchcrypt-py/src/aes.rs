//! AES: one buffer (CTR, GCM, XTS), batches of messages each under its own key, and files.

use crate::{input, to_py, to_py_io, Data, Engine};
use batchcrypt::aes::{stream, xts::XtsKey, Key};
use batchcrypt::messages::Messages;
use batchcrypt::Engine as CoreEngine;
use numpy::{PyArray1, PyArray2, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::path::PathBuf;

/// A fixed-size argument (an IV, a nonce, a tweak).
fn array<const N: usize>(b: &[u8], what: &str) -> PyResult<[u8; N]> {
    b.try_into()
        .map_err(|_| PyValueError::new_err(format!("{what} must be {N} bytes, got {}", b.len())))
}

/// The batch's messages: `data` cut at `offsets` (n + 1 uint64, from 0 to len(data)), or into
/// equal messages of `msg_len` bytes.
fn messages<'a>(
    data: &'a [u8],
    offsets: Option<&'a [u64]>,
    msg_len: Option<usize>,
) -> PyResult<Messages<'a>> {
    match (offsets, msg_len) {
        (Some(o), None) => Messages::var(data, o).map_err(to_py),
        (None, Some(len)) => Messages::fixed(data, len).map_err(to_py),
        _ => Err(PyValueError::new_err(
            "give either offsets (message i is data[offsets[i]:offsets[i+1]]) or msg_len",
        )),
    }
}

#[pymethods]
impl Engine {
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
        crate::new_bytes(py, data.len(), |out| {
            self.run(py, |e| e.aes().ctr(&key, &iv, data, out))
        })
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
        let mut tag = [0u8; 16];
        let out = crate::new_bytes(py, data.len(), |out| {
            tag = self.run(py, |e| e.aes().gcm_encrypt(&key, iv, aad, data, out))?;
            Ok(())
        })?;
        Ok((out, PyBytes::new(py, &tag)))
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
        crate::new_bytes(py, data.len(), |out| {
            self.run(py, |e| e.aes().gcm_decrypt(&key, iv, aad, data, out, tag))
        })
    }

    /// XTS-AES encryption (IEEE 1619) of a run of data units of `unit` bytes (a disk's sectors),
    /// unit j under the tweak `tweak + j` (`tweak`: 16 bytes, the first sector's number little-
    /// endian). `key`: 32 bytes (XTS-AES-128) or 64 (XTS-AES-256). `unit` defaults to the whole
    /// buffer (one unit, any length from 16 bytes, with ciphertext stealing). Returns bytes.
    #[pyo3(signature = (key, tweak, data, unit = None))]
    fn aes_xts_encrypt<'py>(
        &mut self,
        py: Python<'py>,
        key: &[u8],
        tweak: &[u8],
        data: &Bound<'py, PyAny>,
        unit: Option<usize>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        self.xts(py, key, tweak, data, unit, false)
    }

    /// XTS-AES decryption, the inverse of `aes_xts_encrypt` with the same key, tweak and unit.
    #[pyo3(signature = (key, tweak, data, unit = None))]
    fn aes_xts_decrypt<'py>(
        &mut self,
        py: Python<'py>,
        key: &[u8],
        tweak: &[u8],
        data: &Bound<'py, PyAny>,
        unit: Option<usize>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        self.xts(py, key, tweak, data, unit, true)
    }

    /// AES-CTR over a batch of independent messages, message i under `keys[i]` and the 16-byte
    /// counter block `ivs[i]`. The messages are `data` cut at `offsets` (a uint64 array of n + 1
    /// from 0 to len(data)) or into equal messages of `msg_len` bytes; the output has the same
    /// layout. `keys` may also be one key for all. Returns bytes.
    #[pyo3(signature = (keys, ivs, data, offsets = None, msg_len = None))]
    fn aes_ctr_batch<'py>(
        &mut self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
        ivs: &Bound<'py, PyAny>,
        data: &Bound<'py, PyAny>,
        offsets: Option<PyReadonlyArray1<'py, u64>>,
        msg_len: Option<usize>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let keys = keys_or_one(keys, Key::new)?;
        let ivs = crate::fixed_rows::<16>(ivs, "ivs")?;
        let (out, ()) = self.batch(py, data, offsets, msg_len, |e, msgs, out| {
            e.aes().ctr_batch(&keys, &ivs, msgs, out)
        })?;
        Ok(out)
    }

    /// AES-GCM encryption of a batch of messages, each with its own key (or one for all), 12-byte
    /// nonce and optional AAD (`aads`: a sequence of bytes, one per message). Layout as in
    /// `aes_ctr_batch`. Returns (ciphertext bytes, an (n, 16) uint8 array of tags).
    #[pyo3(signature = (keys, nonces, data, offsets = None, msg_len = None, aads = None))]
    fn aes_gcm_encrypt_batch<'py>(
        &mut self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
        nonces: &Bound<'py, PyAny>,
        data: &Bound<'py, PyAny>,
        offsets: Option<PyReadonlyArray1<'py, u64>>,
        msg_len: Option<usize>,
        aads: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyArray2<u8>>)> {
        let keys = keys_or_one(keys, Key::new)?;
        let nonces = crate::fixed_rows::<12>(nonces, "nonces")?;
        let aads = aads.map(crate::Items::new).transpose()?;
        let aads = aads.as_ref().map(|a| a.slices("aads")).transpose()?;
        let (out, tags) = self.batch(py, data, offsets, msg_len, |e, msgs, out| {
            let aads = aad_slices(&aads, msgs.count());
            e.aes().gcm_encrypt_batch(&keys, &nonces, &aads, msgs, out)
        })?;
        Ok((out, crate::table(py, tags)))
    }

    /// AES-GCM decryption of a batch (the inverse of `aes_gcm_encrypt_batch`, with `tags` n x 16
    /// bytes). Returns (plaintext bytes, a bool array): a message whose tag fails is False and
    /// its plaintext is zeros; the others are unaffected.
    #[pyo3(signature = (keys, nonces, data, tags, offsets = None, msg_len = None, aads = None))]
    fn aes_gcm_decrypt_batch<'py>(
        &mut self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
        nonces: &Bound<'py, PyAny>,
        data: &Bound<'py, PyAny>,
        tags: &Bound<'py, PyAny>,
        offsets: Option<PyReadonlyArray1<'py, u64>>,
        msg_len: Option<usize>,
        aads: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyArray1<bool>>)> {
        let keys = keys_or_one(keys, Key::new)?;
        let nonces = crate::fixed_rows::<12>(nonces, "nonces")?;
        let tags = crate::fixed_rows::<16>(tags, "tags")?;
        let aads = aads.map(crate::Items::new).transpose()?;
        let aads = aads.as_ref().map(|a| a.slices("aads")).transpose()?;
        let (out, ok) = self.batch(py, data, offsets, msg_len, |e, msgs, out| {
            let aads = aad_slices(&aads, msgs.count());
            e.aes()
                .gcm_decrypt_batch(&keys, &nonces, &aads, msgs, out, &tags)
        })?;
        Ok((out, PyArray1::from_vec(py, ok)))
    }

    /// XTS-AES encryption of a batch of messages (each one data unit, at least 16 bytes), message
    /// i under `keys[i]` (32 or 64 bytes; or one key for all) and the 16-byte tweak `tweaks[i]`.
    /// Layout as in `aes_ctr_batch`. Returns bytes.
    #[pyo3(signature = (keys, tweaks, data, offsets = None, msg_len = None))]
    fn aes_xts_encrypt_batch<'py>(
        &mut self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
        tweaks: &Bound<'py, PyAny>,
        data: &Bound<'py, PyAny>,
        offsets: Option<PyReadonlyArray1<'py, u64>>,
        msg_len: Option<usize>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        self.xts_batch(py, keys, tweaks, data, offsets, msg_len, false)
    }

    /// XTS-AES decryption of a batch, the inverse of `aes_xts_encrypt_batch`.
    #[pyo3(signature = (keys, tweaks, data, offsets = None, msg_len = None))]
    fn aes_xts_decrypt_batch<'py>(
        &mut self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
        tweaks: &Bound<'py, PyAny>,
        data: &Bound<'py, PyAny>,
        offsets: Option<PyReadonlyArray1<'py, u64>>,
        msg_len: Option<usize>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        self.xts_batch(py, keys, tweaks, data, offsets, msg_len, true)
    }

    /// Encrypts the file `input` into `output` (as `batchcrypt encrypt`): `mode="gcm"` writes the
    /// chunked authenticated format (docs/aes-file-format.md; chunks of 2^`chunk_log2` bytes,
    /// a fresh random IV); `mode="ctr"` writes raw CTR under the 16-byte `iv`, as `openssl enc
    /// -aes-128-ctr` (no authentication). The output appears only when complete (written under
    /// a temporary name and renamed). Returns the bytes encrypted. Releases the GIL.
    #[pyo3(signature = (key, input, output, *, mode = "gcm", iv = None, chunk_log2 = stream::DEFAULT_CHUNK_LOG2))]
    fn encrypt_file(
        &mut self,
        py: Python<'_>,
        key: &[u8],
        input: PathBuf,
        output: PathBuf,
        mode: &str,
        iv: Option<&[u8]>,
        chunk_log2: u8,
    ) -> PyResult<u64> {
        self.file(py, key, input, output, mode, iv, Some(chunk_log2))
    }

    /// Decrypts a file made by `encrypt_file` (or `batchcrypt encrypt`): `mode="gcm"` checks
    /// each chunk's tag before any of its plaintext is written and raises ValueError naming the
    /// chunk on a wrong key, modified or truncated data (no output file then appears);
    /// `mode="ctr"` needs the `iv`.
    /// Returns the bytes decrypted.
    #[pyo3(signature = (key, input, output, *, mode = "gcm", iv = None))]
    fn decrypt_file(
        &mut self,
        py: Python<'_>,
        key: &[u8],
        input: PathBuf,
        output: PathBuf,
        mode: &str,
        iv: Option<&[u8]>,
    ) -> PyResult<u64> {
        self.file(py, key, input, output, mode, iv, None)
    }
}

/// The file formats' `mode` and `iv`: None for GCM (it makes its own IV), the IV for CTR.
pub(crate) fn file_mode(mode: &str, iv: Option<&[u8]>) -> PyResult<Option<[u8; 16]>> {
    match (mode, iv) {
        ("gcm", None) => Ok(None),
        ("gcm", Some(_)) => Err(PyValueError::new_err(
            "the GCM file format makes its own random IV: give no iv (or use mode=\"ctr\")",
        )),
        ("ctr", Some(iv)) => Ok(Some(array::<16>(iv, "iv")?)),
        ("ctr", None) => Err(PyValueError::new_err("mode=\"ctr\" needs iv (16 bytes)")),
        (m, _) => Err(PyValueError::new_err(format!(
            "mode must be \"gcm\" or \"ctr\", not {m:?}"
        ))),
    }
}

/// Each message's AAD, empty where none were given.
fn aad_slices<'a>(aads: &Option<Vec<&'a [u8]>>, count: usize) -> Vec<&'a [u8]> {
    match aads {
        Some(a) => a.clone(),
        None => vec![&[][..]; count],
    }
}

/// One key (a `bytes`) for every message, or one per message (a sequence, or an (n, width)
/// array): each 16 or 32 bytes (XTS: 32 or 64).
fn keys_or_one<K>(
    obj: &Bound<'_, PyAny>,
    make: impl Fn(&[u8]) -> batchcrypt::Result<K>,
) -> PyResult<Vec<K>> {
    if obj.downcast::<PyBytes>().is_ok() {
        return Ok(vec![make(&input(obj)?).map_err(to_py)?]);
    }
    crate::Items::new(obj)?
        .slices("keys")?
        .into_iter()
        .enumerate()
        .map(|(i, k)| make(k).map_err(|e| PyValueError::new_err(format!("keys[{i}]: {e}"))))
        .collect()
}

impl Engine {
    fn xts<'py>(
        &mut self,
        py: Python<'py>,
        key: &[u8],
        tweak: &[u8],
        data: &Bound<'py, PyAny>,
        unit: Option<usize>,
        decrypt: bool,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let key = XtsKey::new(key).map_err(to_py)?;
        let tweak = array::<16>(tweak, "tweak")?;
        let data = Data::new(data)?;
        let data = data.bytes();
        let unit = unit.unwrap_or(data.len());
        crate::new_bytes(py, data.len(), |out| {
            self.run(py, |e| match decrypt {
                false => e.aes().xts_encrypt(&key, &tweak, unit, data, out),
                true => e.aes().xts_decrypt(&key, &tweak, unit, data, out),
            })
        })
    }

    /// A batch call over `data`'s messages (cut at `offsets` or into `msg_len` bytes each),
    /// with an output buffer of the same layout: `(output bytes, what the call returned)`.
    fn batch<'py, T: Send>(
        &mut self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        offsets: Option<PyReadonlyArray1<'py, u64>>,
        msg_len: Option<usize>,
        f: impl FnOnce(
                &CoreEngine,
                &Messages<'_>,
                &mut [u8],
            ) -> batchcrypt::Result<batchcrypt::Output<T>>
            + Send,
    ) -> PyResult<(Bound<'py, PyBytes>, T)> {
        let data = Data::new(data)?;
        let data = data.bytes();
        let offsets = offsets.as_ref().map(|o| o.as_slice()).transpose()?;
        let msgs = messages(data, offsets, msg_len)?;
        let mut value = None;
        let out = crate::new_bytes(py, data.len(), |out| {
            value = Some(self.run(py, |e| f(e, &msgs, out))?);
            Ok(())
        })?;
        Ok((out, value.expect("set by the call")))
    }

    fn xts_batch<'py>(
        &mut self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
        tweaks: &Bound<'py, PyAny>,
        data: &Bound<'py, PyAny>,
        offsets: Option<PyReadonlyArray1<'py, u64>>,
        msg_len: Option<usize>,
        decrypt: bool,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let keys = keys_or_one(keys, XtsKey::new)?;
        let tweaks = crate::fixed_rows::<16>(tweaks, "tweaks")?;
        let (out, ()) = self.batch(py, data, offsets, msg_len, |e, msgs, out| match decrypt {
            false => e.aes().xts_encrypt_batch(&keys, &tweaks, msgs, out),
            true => e.aes().xts_decrypt_batch(&keys, &tweaks, msgs, out),
        })?;
        Ok(out)
    }

    /// `encrypt_file` (`chunk_log2` given) and `decrypt_file`.
    fn file(
        &mut self,
        py: Python<'_>,
        key: &[u8],
        input: PathBuf,
        output: PathBuf,
        mode: &str,
        iv: Option<&[u8]>,
        chunk_log2: Option<u8>,
    ) -> PyResult<u64> {
        let key = Key::new(key).map_err(to_py)?;
        let ctr = file_mode(mode, iv)?;
        let inner = &self.inner;
        let done = py
            .allow_threads(|| -> batchcrypt::Result<u64> {
                let source = std::fs::File::open(&input).map_err(|e| {
                    batchcrypt::Error::io(e, format!("reading {}", input.display()))
                })?;
                let source = std::io::BufReader::with_capacity(1 << 20, source);
                let out = batchcrypt::output::AtomicFile::create(&output)?;
                let mut sink = std::io::BufWriter::with_capacity(1 << 20, out.file());
                let aes = inner.aes();
                let done = match (ctr, chunk_log2) {
                    (Some(iv), _) => stream::ctr(&aes, &key, &iv, source, &mut sink, |_| {})?,
                    (None, Some(c)) => stream::seal(&aes, &key, c, source, &mut sink, |_| {})?,
                    (None, None) => stream::open(&aes, &key, source, &mut sink, |_| {})?,
                };
                drop(sink);
                out.commit()?;
                Ok(done)
            })
            .map_err(to_py_io)?;
        Ok(done)
    }
}

//! Zero-knowledge building blocks: MSM on BN254 and BLS12-381 (G1, G2), NTTs over their Fr, and
//! Groth16 proofs of circom circuits with snarkjs's files.
//!
//! Points and scalars cross as bytes in arkworks' serialization (uncompressed points, checked
//! on the curve and in the group; scalars 32 bytes little-endian, below the group order) or as
//! uint64 numpy arrays of canonical little-endian limbs (a point: its coordinates' limbs, x then
//! y, each Fq2 coordinate c0 then c1; the all-zero row is the point at infinity). The result
//! comes back in the form the input came in.

use crate::{input, to_py, to_py_io, Engine};
use ark_ec::{AffineRepr, CurveGroup};
use ark_ff::{Field, PrimeField};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use batchcrypt::groth16::{self, AnyProvingKey};
use batchcrypt::msm::{Affine, Bases, Group, Scalars};
use batchcrypt::ntt::{self, Direction, Ntt};
use batchcrypt::{bls12_381, bn254};
use numpy::{PyArray1, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use rayon::prelude::*;
use std::path::PathBuf;
use std::sync::Arc;

/// How points or scalars were given, and so how the answer goes back.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Layout {
    Arkworks,
    Limbs,
}

/// A buffer of points or scalars: a uint64 array (limbs) or anything bytes-like (arkworks).
fn buffer(obj: &Bound<'_, PyAny>) -> PyResult<(Vec<u8>, Layout)> {
    if let Ok(a) = obj.extract::<numpy::PyReadonlyArrayDyn<'_, u64>>() {
        // One copy, on all cores for a contiguous array (an MSM's 2^24 scalars are 512 MiB),
        // not a collect byte by byte.
        let mut bytes = vec![0u8; 8 * a.len()];
        match a.as_slice() {
            Ok(w) => bytes
                .par_chunks_exact_mut(8)
                .zip(w.par_iter())
                .for_each(put_limb),
            Err(_) => bytes
                .chunks_exact_mut(8)
                .zip(a.as_array().iter())
                .for_each(put_limb),
        }
        return Ok((bytes, Layout::Limbs));
    }
    input(obj).map(|b| (b, Layout::Arkworks)).map_err(|_| {
        PyValueError::new_err(
            "expected bytes (arkworks' serialization) or a uint64 numpy array of limbs",
        )
    })
}

/// A 64-bit limb into its 8 little-endian bytes.
fn put_limb((d, w): (&mut [u8], &u64)) {
    d.copy_from_slice(&w.to_le_bytes());
}

/// Little-endian bytes as 64-bit limbs (a whole number of them).
fn words(bytes: &[u8]) -> Vec<u64> {
    bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect()
}

/// Bytes of one element of `F`'s base prime field, as canonical limbs.
fn prime_bytes<F: Field>() -> usize {
    (<F::BasePrimeField as PrimeField>::MODULUS_BIT_SIZE as usize).div_ceil(64) * 8
}

/// Bytes of one point in `layout`.
fn point_bytes<P: Group>(layout: Layout) -> usize {
    match layout {
        Layout::Arkworks => Affine::<P>::generator().uncompressed_size(),
        Layout::Limbs => {
            2 * P::BaseField::extension_degree() as usize * prime_bytes::<P::BaseField>()
        }
    }
}

/// A coordinate from its canonical limbs, each prime-field element checked below the modulus.
fn coordinate<F: Field>(bytes: &[u8]) -> Option<F> {
    let elems = bytes
        .chunks_exact(prime_bytes::<F>())
        .map(|c| F::BasePrimeField::deserialize_uncompressed(c).ok())
        .collect::<Option<Vec<_>>>()?;
    F::from_base_prime_field_elems(elems)
}

fn limbs_point<P: Group>(bytes: &[u8]) -> Option<Affine<P>> {
    if bytes.iter().all(|&b| b == 0) {
        return Some(Affine::<P>::identity());
    }
    let (x, y) = bytes.split_at(bytes.len() / 2);
    let p = Affine::<P>::new_unchecked(coordinate(x)?, coordinate(y)?);
    (p.is_on_curve() && p.is_in_correct_subgroup_assuming_on_curve()).then_some(p)
}

/// Points from a buffer, each checked on the curve and in the group (in parallel: a subgroup
/// check costs a scalar multiplication).
fn points<P: Group>(bytes: &[u8], layout: Layout) -> PyResult<Vec<Affine<P>>> {
    let size = point_bytes::<P>(layout);
    if !bytes.len().is_multiple_of(size) {
        return Err(PyValueError::new_err(format!(
            "{} bytes of points are not a whole number of {size}-byte points",
            bytes.len()
        )));
    }
    bytes
        .par_chunks_exact(size)
        .enumerate()
        .map(|(i, c)| {
            match layout {
                Layout::Arkworks => Affine::<P>::deserialize_uncompressed(c).ok(),
                Layout::Limbs => limbs_point::<P>(c),
            }
            .ok_or_else(|| {
                PyValueError::new_err(format!(
                    "point {i} is not a point of the group (off the curve, outside the subgroup, or a coordinate not below the modulus)"
                ))
            })
        })
        .collect()
}

/// A point in `layout`, as bytes (arkworks) or a uint64 array (limbs).
fn point_out<'py, P: Group>(
    py: Python<'py>,
    p: Affine<P>,
    layout: Layout,
) -> PyResult<Bound<'py, PyAny>> {
    match layout {
        Layout::Arkworks => {
            let mut out = Vec::new();
            p.serialize_uncompressed(&mut out).expect("to a Vec");
            Ok(PyBytes::new(py, &out).into_any())
        }
        Layout::Limbs => {
            let mut out = Vec::new();
            if let Some((x, y)) = p.xy() {
                for e in x
                    .to_base_prime_field_elements()
                    .chain(y.to_base_prime_field_elements())
                {
                    e.serialize_uncompressed(&mut out).expect("to a Vec");
                }
            } else {
                out.resize(point_bytes::<P>(Layout::Limbs), 0);
            }
            Ok(PyArray1::from_vec(py, words(&out)).into_any())
        }
    }
}

/// Bases of one group, kept for repeated MSMs (in GPU memory after the first GPU call).
enum AnyBases {
    Bn254G1(Bases<bn254::G1>),
    Bn254G2(Bases<bn254::G2>),
    Bls12_381G1(Bases<bls12_381::G1>),
    Bls12_381G2(Bases<bls12_381::G2>),
}

/// Calls `$f::<Group>` for the group named by `$curve` and `$group`, as `canonical` returns them.
macro_rules! by_group {
    ($curve:expr, $group:expr, $f:ident ( $($arg:expr),* )) => {
        match ($curve, $group) {
            ("bn254", "g1") => $f::<bn254::G1>($($arg),*),
            ("bn254", "g2") => $f::<bn254::G2>($($arg),*),
            ("bls12_381", "g1") => $f::<bls12_381::G1>($($arg),*),
            ("bls12_381", "g2") => $f::<bls12_381::G2>($($arg),*),
            (c, g) => unreachable!("{c} {g}: names are checked by `canonical` first"),
        }
    };
}

/// `$e` with `$b` bound to the bases, whichever group they are of.
macro_rules! each {
    ($bases:expr, $b:ident => $e:expr) => {
        match $bases {
            AnyBases::Bn254G1($b) => $e,
            AnyBases::Bn254G2($b) => $e,
            AnyBases::Bls12_381G1($b) => $e,
            AnyBases::Bls12_381G2($b) => $e,
        }
    };
}

/// Which variant holds a group's bases.
trait Variant: Group {
    fn wrap(b: Bases<Self>) -> AnyBases;
}
macro_rules! variant {
    ($g:ty, $v:ident) => {
        impl Variant for $g {
            fn wrap(b: Bases<Self>) -> AnyBases {
                AnyBases::$v(b)
            }
        }
    };
}
variant!(bn254::G1, Bn254G1);
variant!(bn254::G2, Bn254G2);
variant!(bls12_381::G1, Bls12_381G1);
variant!(bls12_381::G2, Bls12_381G2);

fn make_bases<P: Variant>(bytes: &[u8], layout: Layout, precompute: u32) -> PyResult<AnyBases> {
    Ok(P::wrap(
        Bases::new(points::<P>(bytes, layout)?).with_precomputation(precompute),
    ))
}

/// The fixed bases of repeated MSMs on one group (`Engine.msm_bases`): checked once, and kept in
/// GPU memory after the first MSM that runs there, so later calls send only the scalars.
#[pyclass(name = "MsmBases", module = "batchcrypt", frozen)]
pub struct MsmBases {
    bases: Arc<AnyBases>,
    layout: Layout,
    #[pyo3(get)]
    curve: &'static str,
    #[pyo3(get)]
    group: &'static str,
}

#[pymethods]
impl MsmBases {
    fn __len__(&self) -> usize {
        each!(&*self.bases, b => b.len())
    }

    /// Frees the GPU copy (it is made again by the next GPU MSM).
    fn release_device(&self) {
        each!(&*self.bases, b => b.release_device())
    }

    fn __repr__(&self) -> String {
        format!(
            "MsmBases({} {} points of {} {})",
            self.__len__(),
            self.layout_name(),
            self.curve,
            self.group
        )
    }
}

impl MsmBases {
    fn layout_name(&self) -> &'static str {
        match self.layout {
            Layout::Arkworks => "arkworks",
            Layout::Limbs => "limbs",
        }
    }
}

fn canonical_curve(curve: &str) -> PyResult<&'static str> {
    match curve {
        "bn254" => Ok("bn254"),
        "bls12_381" | "bls12-381" => Ok("bls12_381"),
        other => Err(PyValueError::new_err(format!(
            "curve must be \"bn254\" or \"bls12_381\", not {other:?}"
        ))),
    }
}

fn canonical(curve: &str, group: &str) -> PyResult<(&'static str, &'static str)> {
    let c = canonical_curve(curve)?;
    let g = match group {
        "g1" => "g1",
        "g2" => "g2",
        other => {
            return Err(PyValueError::new_err(format!(
                "group must be \"g1\" or \"g2\", not {other:?}"
            )))
        }
    };
    Ok((c, g))
}

/// Scalar-field elements as a caller gives them (bytes, 32 little-endian each, or a uint64 array
/// of 4 limbs each), as the library takes canonical integers ([`Scalars::Canonical`]): bytes and
/// a contiguous array read in place (2^24 elements are 512 MiB), other buffers copied once.
enum Elements<'py> {
    Array(numpy::PyReadonlyArrayDyn<'py, u64>),
    Bytes(Bound<'py, PyBytes>),
    /// A strided uint64 array's limbs (with its shape) or another buffer's bytes (no shape).
    Copied {
        bytes: Vec<u8>,
        shape: Option<Vec<usize>>,
    },
}

impl<'py> Elements<'py> {
    fn new(obj: &Bound<'py, PyAny>) -> PyResult<Self> {
        if let Ok(a) = obj.extract::<numpy::PyReadonlyArrayDyn<'py, u64>>() {
            // The array's memory is the limbs' little-endian bytes.
            if a.as_slice().is_ok() && cfg!(target_endian = "little") {
                if a.len() % 4 != 0 {
                    return Err(PyValueError::new_err(format!(
                        "{} limbs are not a whole number of 4-limb elements",
                        a.len()
                    )));
                }
                return Ok(Elements::Array(a));
            }
            let shape = Some(a.shape().to_vec());
            return Ok(Elements::Copied {
                bytes: buffer(obj)?.0,
                shape,
            });
        }
        if let Ok(b) = obj.downcast::<PyBytes>() {
            return Ok(Elements::Bytes(b.clone()));
        }
        Ok(Elements::Copied {
            bytes: buffer(obj)?.0,
            shape: None,
        })
    }

    fn bytes(&self) -> &[u8] {
        match self {
            Elements::Array(a) => bytemuck::cast_slice(a.as_slice().expect("contiguous")),
            Elements::Bytes(b) => b.as_bytes(),
            Elements::Copied { bytes, .. } => bytes,
        }
    }

    /// The shape of a uint64 array given (the answer goes back as one of it); None for bytes.
    fn shape(&self) -> Option<Vec<usize>> {
        match self {
            Elements::Array(a) => Some(a.shape().to_vec()),
            Elements::Bytes(_) => None,
            Elements::Copied { shape, .. } => shape.clone(),
        }
    }
}

/// The scalars go to the library as canonical integers, which the GPU reads as they are (each
/// checked below the group order as it is staged): 2^24 scalars cost no 512 MiB conversion.
fn run_msm<'py, P: Group>(
    engine: &mut Engine,
    py: Python<'py>,
    bases: &Bases<P>,
    scalars_obj: &Bound<'py, PyAny>,
    layout: Layout,
) -> PyResult<Bound<'py, PyAny>> {
    let elements = Elements::new(scalars_obj)?;
    let scalars = Scalars::canonical(elements.bytes()).map_err(to_py)?;
    let sum = engine.run(py, |e| e.msm::<P>(bases, scalars))?;
    point_out::<P>(py, sum.into_affine(), layout)
}

/// `coset`: None, True (Fr's multiplicative generator, as provers use) or an int below r.
fn coset<F: PrimeField>(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<F>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    if let Ok(b) = obj.extract::<bool>() {
        return Ok(b.then_some(F::GENERATOR));
    }
    let n: num_bigint::BigUint = obj.extract().map_err(|_| {
        PyValueError::new_err("coset must be None, True or an int below the field's order")
    })?;
    if n >= F::MODULUS.into() || n == num_bigint::BigUint::ZERO {
        return Err(PyValueError::new_err(
            "coset must be a non-zero int below the field's order",
        ));
    }
    Ok(Some(F::from(n)))
}

/// The transform over `F` on `values`, returned in their form (a uint64 array of their shape, or
/// bytes): the library reads the canonical elements where they are and writes the result
/// straight into the returned object's memory.
fn run_ntt<'py, F: ntt::Field>(
    engine: &mut Engine,
    py: Python<'py>,
    values: &Elements<'_>,
    size: Option<usize>,
    inverse: bool,
    coset_arg: Option<&Bound<'py, PyAny>>,
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let input = values.bytes();
    let t = [Ntt {
        size: size.unwrap_or(input.len() / (4 * F::WORDS)),
        direction: if inverse {
            Direction::Inverse
        } else {
            Direction::Forward
        },
        coset: coset::<F>(coset_arg)?,
    }];
    if let Some(obj) = out {
        // `try_readwrite`: extracting a read-write array panics where values hold the memory.
        let mut dst = obj
            .downcast::<numpy::PyArrayDyn<u64>>()
            .map_err(|_| PyValueError::new_err("out must be a uint64 array"))?
            .try_readwrite()
            .map_err(|_| {
                PyValueError::new_err(
                    "out must be a writable array apart from values (not values itself or a view of it)",
                )
            })?;
        let dst = dst
            .as_slice_mut()
            .map_err(|_| PyValueError::new_err("out must be C-contiguous"))?;
        let dst: &mut [u8] = bytemuck::cast_slice_mut(dst);
        if dst.len() != input.len() {
            return Err(PyValueError::new_err(format!(
                "out holds {} limbs for {} limbs of values; give as many",
                dst.len() / 8,
                input.len() / 8
            )));
        }
        let (a, b) = (input.as_ptr_range(), dst.as_ptr_range());
        if a.start < b.end && b.start < a.end {
            return Err(PyValueError::new_err(
                "out shares memory with values; give an array of its own",
            ));
        }
        engine.run(py, |e| e.ntts_canonical(input, dst, &t))?;
        return Ok(obj.clone());
    }
    Ok(match values.shape() {
        Some(shape) => {
            // New memory, in huge pages where the system gives them, mapped on all cores first
            // (as `new_bytes` does).
            let mut out = vec![0u64; input.len() / 8];
            batchcrypt::backend::cpu::huge_pages(out.as_ptr(), input.len());
            engine.run(py, |e| {
                batchcrypt::backend::cpu::par_fill(&mut out, 0);
                e.ntts_canonical(input, bytemuck::cast_slice_mut(&mut out), &t)
            })?;
            PyArray1::from_vec(py, out).reshape(shape)?.into_any()
        }
        None => crate::new_bytes(py, input.len(), |out| {
            engine.run(py, |e| e.ntts_canonical(input, out, &t))
        })?
        .into_any(),
    })
}

/// A snarkjs JSON argument: a str of JSON, or a path to the file.
fn json_text(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    if let Ok(s) = obj.downcast::<PyString>() {
        let s = s.to_cow()?;
        if s.trim_start().starts_with(['{', '[']) {
            return Ok(s.to_string());
        }
    }
    let path: PathBuf = obj
        .extract()
        .map_err(|_| PyValueError::new_err(format!("{what}: expected JSON text or a path")))?;
    std::fs::read_to_string(&path).map_err(|e| {
        to_py_io(batchcrypt::Error::io(
            e,
            format!("reading {}", path.display()),
        ))
    })
}

/// A file argument: a path (str or os.PathLike) or the file's bytes.
fn file_bytes(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u8>> {
    if obj.is_instance_of::<PyString>() || obj.hasattr("__fspath__")? {
        let path: PathBuf = obj.extract()?;
        return batchcrypt::backend::cpu::read_file(&path).map_err(|e| {
            to_py_io(batchcrypt::Error::io(
                e,
                format!("reading {}", path.display()),
            ))
        });
    }
    input(obj)
        .map_err(|_| PyValueError::new_err(format!("{what}: expected a path or the file's bytes")))
}

/// A Groth16 proving key read from snarkjs's `.zkey`, over BN254 ("bn128" in snarkjs) or
/// BLS12-381 ("bls12381"), kept for many proofs: its points go to GPU memory with the first proof
/// there and stay.
#[pyclass(name = "ProvingKey", module = "batchcrypt", frozen)]
pub struct PyProvingKey {
    key: Arc<AnyProvingKey>,
}

#[pymethods]
impl PyProvingKey {
    /// `zkey`: a path or the file's bytes. `precompute`: shifted copies of the MSM bases kept in
    /// GPU memory (1: none; more make proofs faster at that many times the points' memory).
    #[new]
    #[pyo3(signature = (zkey, precompute = 1))]
    fn new(py: Python<'_>, zkey: &Bound<'_, PyAny>, precompute: u32) -> PyResult<Self> {
        let bytes = file_bytes(zkey, "zkey")?;
        let key = py
            .allow_threads(|| AnyProvingKey::parse(&bytes))
            .map_err(to_py)?
            .with_precomputation(precompute.max(1));
        Ok(PyProvingKey { key: Arc::new(key) })
    }

    /// Signals of the circuit (the witness's length).
    #[getter]
    fn n_vars(&self) -> usize {
        self.key.n_vars()
    }

    /// Public signals (outputs and public inputs).
    #[getter]
    fn n_public(&self) -> usize {
        self.key.n_public()
    }

    /// The evaluation domain's size (a power of two at least the constraint count).
    #[getter]
    fn domain_size(&self) -> usize {
        self.key.domain_size()
    }

    /// The curve, as snarkjs names it: "bn128" or "bls12381".
    #[getter]
    fn curve(&self) -> &'static str {
        self.key.curve().snarkjs()
    }

    /// Bytes the key takes in GPU memory once resident.
    #[getter]
    fn device_bytes(&self) -> u64 {
        self.key.device_bytes()
    }

    /// Frees the key's GPU copy.
    fn release_device(&self) {
        self.key.release_device()
    }

    fn __repr__(&self) -> String {
        format!(
            "ProvingKey({}, {} signals, {} public, domain 2^{})",
            self.key.curve(),
            self.key.n_vars(),
            self.key.n_public(),
            self.key.domain_size().trailing_zeros()
        )
    }
}

#[pymethods]
impl Engine {
    /// `sum scalars[i] * bases[i]` on `curve` ("bn254" or "bls12_381"), group "g1" or "g2".
    /// `bases`: an `MsmBases` (from `msm_bases`: checked once, kept in GPU memory), or the points
    /// as bytes (arkworks' uncompressed serialization) or as a uint64 array of limbs (see the
    /// module's docs). `scalars`: 32 bytes little-endian each (bytes, or a uint64 array of shape
    /// (n, 4)), at most one per base; bytes and a contiguous array are read in place, so do not
    /// change them during the call. Returns the sum in the points' form: bytes, or a uint64
    /// array. Releases the GIL.
    #[pyo3(signature = (bases, scalars, curve = "bn254", group = "g1"))]
    fn msm<'py>(
        &mut self,
        py: Python<'py>,
        bases: &Bound<'py, PyAny>,
        scalars: &Bound<'py, PyAny>,
        curve: &str,
        group: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let held;
        let (bases, layout) = match bases.downcast::<MsmBases>() {
            Ok(b) => (b.get().bases.clone(), b.get().layout),
            Err(_) => {
                let (c, g) = canonical(curve, group)?;
                let (bytes, layout) = buffer(bases)?;
                held = by_group!(c, g, make_bases(&bytes, layout, 1))?;
                (Arc::new(held), layout)
            }
        };
        each!(&*bases, b => run_msm(self, py, b, scalars, layout))
    }

    /// Fixed bases for repeated `msm` calls, checked once (on the curve, in the group).
    /// `precompute`: shifted copies kept in GPU memory (1: none; more make MSMs faster at that
    /// many times the points' memory).
    #[pyo3(signature = (points, curve = "bn254", group = "g1", precompute = 1))]
    fn msm_bases(
        &self,
        py: Python<'_>,
        points: &Bound<'_, PyAny>,
        curve: &str,
        group: &str,
        precompute: u32,
    ) -> PyResult<MsmBases> {
        let (c, g) = canonical(curve, group)?;
        let (bytes, layout) = buffer(points)?;
        let bases = py.allow_threads(|| by_group!(c, g, make_bases(&bytes, layout, precompute)))?;
        Ok(MsmBases {
            bases: Arc::new(bases),
            layout,
            curve: c,
            group: g,
        })
    }

    /// The NTT over the scalar field Fr of `curve` ("bn254" or "bls12_381"), in natural order,
    /// on snarkjs's roots of unity (on BN254 also arkworks' `Radix2EvaluationDomain`'s): `values`
    /// (32-byte little-endian elements as bytes, or a uint64 array with 4 limbs per element)
    /// holds polynomials of `size` elements each (a power of two; default: all of them, one
    /// polynomial). `inverse`: interpolate instead of evaluate. `coset`: evaluate on (or
    /// interpolate from) the coset g·<w>, g True (Fr's generator) or an int. Returns the values
    /// in the form given, or writes them into `out` (a C-contiguous uint64 array of as many
    /// limbs, apart from `values`) and returns it: memory used again costs nothing to map, where
    /// a new result's pages are mapped as it is written. Releases the GIL.
    #[pyo3(signature = (values, size = None, inverse = false, coset = None, curve = "bn254", out = None))]
    fn ntt<'py>(
        &mut self,
        py: Python<'py>,
        values: &Bound<'py, PyAny>,
        size: Option<usize>,
        inverse: bool,
        coset: Option<&Bound<'py, PyAny>>,
        curve: &str,
        out: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let values = Elements::new(values)?;
        match canonical_curve(curve)? {
            "bn254" => run_ntt::<bn254::Fr>(self, py, &values, size, inverse, coset, out),
            _ => run_ntt::<bls12_381::Fr>(self, py, &values, size, inverse, coset, out),
        }
    }

    /// A Groth16 proof, as `snarkjs groth16 prove` makes it: `key` a `ProvingKey` (or a .zkey's
    /// path or bytes), `witness` a .wtns's path or bytes. Returns (proof.json text,
    /// public.json text); `snarkjs groth16 verify` accepts them. The proof is checked before it
    /// is returned; a witness that does not satisfy the circuit raises ValueError. Releases the
    /// GIL.
    fn groth16_prove(
        &mut self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        witness: &Bound<'_, PyAny>,
    ) -> PyResult<(String, String)> {
        let key = match key.downcast::<PyProvingKey>() {
            Ok(k) => k.get().key.clone(),
            Err(_) => PyProvingKey::new(py, key, 1)?.key,
        };
        // Bytes are read in place (a 2^20-signal witness is 32 MiB); a path is read here.
        let read;
        let wtns: &[u8] = match witness.downcast::<PyBytes>() {
            Ok(b) => b.as_bytes(),
            Err(_) => {
                read = file_bytes(witness, "witness")?;
                &read
            }
        };
        let inner = &self.inner;
        let proved = py
            .allow_threads(|| key.prove(inner, wtns, &mut rand::rngs::OsRng))
            .map_err(to_py)?;
        if let Some(b) = proved.stages.iter().rev().find_map(|s| s.backend) {
            self.last_backend = Some(b.name().to_string());
        }
        Ok((proved.proof, proved.public))
    }
}

/// Whether a Groth16 proof verifies: `key` a `ProvingKey`, or snarkjs's verification_key.json
/// (its text or path; the curve is the one it names); `public` and `proof` as snarkjs writes public.json and proof.json (text
/// or paths). A proof that does not verify is False; malformed JSON, points off their curve or
/// outside their group (in the key or the proof), or a public-signal count the key does not take
/// raise ValueError.
#[pyfunction]
pub fn groth16_verify(
    key: &Bound<'_, PyAny>,
    public: &Bound<'_, PyAny>,
    proof: &Bound<'_, PyAny>,
) -> PyResult<bool> {
    let (public, proof) = (json_text(public, "public")?, json_text(proof, "proof")?);
    match key.downcast::<PyProvingKey>() {
        Ok(k) => k.get().key.verify(&public, &proof),
        Err(_) => groth16::verify_json(&json_text(key, "key")?, &public, &proof),
    }
    .map_err(to_py)
}

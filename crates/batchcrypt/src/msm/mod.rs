//! Multi-scalar multiplication, `sum k_i P_i`, on any short-Weierstrass group whose parameters
//! implement [`Group`]: BN254's G1 and G2 (`crate::bn254`) and BLS12-381's (`crate::bls12_381`).
//!
//! Types are arkworks', so a prover built on arkworks passes its data as it is, and field
//! elements cross to the GPU in arkworks' own Montgomery limbs, with no conversion; scalars held
//! as canonical integers (a numpy array, a file) cross as they are too ([`Scalars`]). The GPU path
//! ([`gpu`]) runs a group's instantiation of the generic field, curve and MSM templates
//! (`kernels/include/bc/msm.cuh`) through the one chain of kernel steps of [`window_sums`]; the
//! CPU path ([`cpu`]) is arkworks' Pippenger on all cores. Both give the same group element
//! (tests/msm.rs); the dispatcher picks one per batch.

pub mod cpu;
pub mod gpu;
mod pippenger;

pub use pippenger::*;

pub use ark_ec::short_weierstrass::{Affine, Projective};

use crate::backend::cuda::KernelImage;
use crate::backend::Backend;
use crate::dispatch::{Cost, Location, Workload};
use crate::error::{Error, Result};
use crate::operation::{Operation, Whole};
use crate::{Engine, Output};
use ark_ec::short_weierstrass::SWCurveConfig;
use ark_ec::AffineRepr;
use ark_ff::{BigInt, Field, Fp, Fp2, Fp2Config, MontBackend, MontConfig, PrimeField};
use std::sync::Arc;

/// A field element as the kernels hold it: arkworks' Montgomery limbs as little-endian 32-bit
/// words (for an extension field, c0's then c1's).
pub trait Limbs: Field {
    /// 32-bit words of one element.
    const WORDS: usize;
    fn limbs_into(&self, out: &mut [u32]);
    fn from_limbs(raw: &[u32]) -> Self;
    /// The element whose canonical integer has these words, if it is below the modulus.
    fn from_canonical(words: &[u32]) -> Option<Self>;
}

impl<C: MontConfig<N>, const N: usize> Limbs for Fp<MontBackend<C, N>, N> {
    const WORDS: usize = 2 * N;
    fn limbs_into(&self, out: &mut [u32]) {
        for (d, s) in out.chunks_exact_mut(2).zip(&self.0 .0) {
            d[0] = *s as u32;
            d[1] = (*s >> 32) as u32;
        }
    }
    fn from_limbs(l: &[u32]) -> Self {
        Fp::new_unchecked(wide(l))
    }
    fn from_canonical(l: &[u32]) -> Option<Self> {
        Fp::from_bigint(wide(l))
    }
}

/// 32-bit little-endian words as an N-limb integer.
fn wide<const N: usize>(l: &[u32]) -> BigInt<N> {
    BigInt(std::array::from_fn(|i| {
        u64::from(l[2 * i]) | (u64::from(l[2 * i + 1]) << 32)
    }))
}

impl<P: Fp2Config> Limbs for Fp2<P>
where
    P::Fp: Limbs,
{
    const WORDS: usize = 2 * <P::Fp as Limbs>::WORDS;
    fn limbs_into(&self, out: &mut [u32]) {
        let (c0, c1) = out.split_at_mut(<P::Fp as Limbs>::WORDS);
        self.c0.limbs_into(c0);
        self.c1.limbs_into(c1);
    }
    fn from_limbs(raw: &[u32]) -> Self {
        let (c0, c1) = raw.split_at(<P::Fp as Limbs>::WORDS);
        Fp2::<P>::new(P::Fp::from_limbs(c0), P::Fp::from_limbs(c1))
    }
    fn from_canonical(raw: &[u32]) -> Option<Self> {
        let (c0, c1) = raw.split_at(<P::Fp as Limbs>::WORDS);
        Some(Fp2::<P>::new(
            P::Fp::from_canonical(c0)?,
            P::Fp::from_canonical(c1)?,
        ))
    }
}

/// Words of a scalar as the kernels read it (at most 256 bits: eight 32-bit limbs).
pub const SCALAR_WORDS: usize = 8;

/// A group the MSM runs on: its arkworks parameters, its kernels and its cost model's key. A new
/// curve's groups are these constants (`bn254::G1`, `bls12_381::G2`, ...).
pub trait Group: SWCurveConfig<BaseField: Limbs, ScalarField: Limbs + PrimeField> {
    /// The point steps' kernels are `<KERNELS>_msm_*` (e.g. "bn254_g1").
    const KERNELS: &'static str;
    /// The scalar steps' kernels (digits, histogram, sort) are `<SCALAR_KERNELS>_msm_*`.
    const SCALAR_KERNELS: &'static str;
    /// The kernel image holding the steps.
    fn image() -> &'static KernelImage;
    /// The group's MSM as the engine runs it (dispatch, calibration; its key is the cost model's).
    fn operation() -> &'static Operation;
    /// The same kernels compiled for the host.
    #[cfg(feature = "emulation")]
    fn emulated() -> crate::emulation::msm::MsmSteps;
}

/// Bits of the group's scalar field's modulus.
pub fn scalar_bits<P: Group>() -> u32 {
    <P::ScalarField as PrimeField>::MODULUS_BIT_SIZE
}

/// 32-bit words of a kernel's affine base (x, y).
pub(crate) fn base_words<P: Group>() -> usize {
    2 * <P::BaseField as Limbs>::WORDS
}

/// 32-bit words of a kernel's Jacobian point (X, Y, Z).
pub(crate) fn point_words<P: Group>() -> usize {
    3 * <P::BaseField as Limbs>::WORDS
}

/// An [`Operation`] for the MSM of group `P` with cost key `key` (bases resident on the GPU;
/// split across GPUs by digit windows).
pub const fn operation<P: Group>(
    key: &'static str,
    primitive: crate::backend::Primitive,
    about: &'static str,
) -> Operation {
    Operation {
        split: crate::operation::Split::Itself,
        ..Operation::new(
            key,
            primitive,
            about,
            &[Backend::Arkworks],
            (32, 0, 1),
            calibrate::<P>,
        )
    }
}

/// Bases prepared for many MSMs (a proving key's queries): kept on the host, and uploaded to GPU
/// memory by the first MSM that runs there, then reused by every later one.
///
/// Fixed bases may also be precomputed ([`Bases::with_precomputation`]): the GPU keeps `copies`
/// copies of them, each the last doubled `c * sets` times, so that an MSM reduces `sets` windows of
/// buckets instead of one per digit window. It costs `copies` times the bases' GPU memory and
/// one pass of doublings on upload (docs/performance.md has what it saves), so it is for bases
/// many MSMs reuse, and off unless asked for.
pub struct Bases<P: Group> {
    host: Vec<Affine<P>>,
    /// Copies the GPU precomputes (1: none).
    copies: u32,
    /// The digit window every GPU MSM over these bases takes (`None`: the library's choice).
    window: Option<u32>,
    /// The bases in GPU memory, by the set of GPUs that holds them (a bitmask of GPU indices): an
    /// MSM on one GPU keeps them all there; one over several GPUs gives each a part of the digit
    /// windows, and the copies those windows read.
    resident: std::sync::Mutex<std::collections::HashMap<u64, Arc<Resident<P>>>>,
}

/// Bases in GPU memory: each part is a GPU, its cut of the MSMs' cells ([`Shape::cuts`]), and
/// the bases as that cut reads them (all of them, or the precomputed copies of its windows).
pub struct Resident<P: Group> {
    pub parts: Vec<(usize, Cut, gpu::DeviceBases<P>)>,
}

impl<P: Group> std::ops::Deref for Resident<P> {
    type Target = gpu::DeviceBases<P>;
    /// The first part: all of the bases where one GPU holds them.
    fn deref(&self) -> &gpu::DeviceBases<P> {
        &self.parts[0].2
    }
}

impl<P: Group> Bases<P> {
    pub fn new(bases: Vec<Affine<P>>) -> Self {
        Bases {
            host: bases,
            copies: 1,
            window: None,
            resident: Default::default(),
        }
    }

    /// Precomputes up to `copies` shifted copies on the GPU (at most one per digit window; 1 is
    /// none). With a copy per digit window (64 asks for that) large sets of bases take a wider
    /// window than plain ones, so fewer copies ([`Shape::for_bases`]). The CPU backend reads
    /// the bases as they are.
    pub fn with_precomputation(mut self, copies: u32) -> Self {
        self.copies = copies.max(1);
        self.resident = Default::default(); // made again with the copies
        self
    }

    /// Fixes the digit window (4 to 24 bits) of every GPU MSM over these bases, and of their
    /// precomputed copies, in place of the library's choice ([`Shape::for_bases`]); a window
    /// out of range fails the MSMs.
    pub fn with_window(mut self, c: u32) -> Self {
        self.window = Some(c);
        self.resident = Default::default(); // the copies depend on the window
        self
    }

    /// The shape of a GPU MSM of `n` scalars over these bases: with precomputation, the window
    /// and copies chosen for all the bases, so every call reads the same copies.
    pub(crate) fn shape(&self, n: usize) -> Result<Shape> {
        self.shape_of(n, self.len())
    }

    /// The shape over `len` of the bases (one GPU's slice of them).
    fn shape_of(&self, n: usize, len: usize) -> Result<Shape> {
        let bits = scalar_bits::<P>();
        match self.window {
            Some(c) if self.copies > 1 => Shape::precomputed(n, bits, c, self.copies, len),
            Some(c) => Shape::with_window(n, bits, c),
            None => Shape::for_bases(n, len, self.copies, bits),
        }
    }

    pub fn len(&self) -> usize {
        self.host.len()
    }

    pub fn is_empty(&self) -> bool {
        self.host.is_empty()
    }

    pub fn as_slice(&self) -> &[Affine<P>] {
        &self.host
    }

    /// GPU memory the bases take on the GPUs that hold them, their precomputed copies included
    /// (those the shape reads: at most one per digit window, whatever was asked for).
    pub fn device_bytes(&self) -> u64 {
        let len = self.len();
        let copies = self.shape_of(len, len).map_or(self.copies, |s| s.copies());
        len as u64 * 4 * base_words::<P>() as u64 * u64::from(copies)
    }

    /// Frees the bases' GPU copies on every GPU (a service evicting a key for another's room);
    /// the next MSM uploads them again. An MSM running now keeps its copy until it ends.
    pub fn release_device(&self) {
        self.resident
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// Whether the bases are in GPU memory already (on some GPUs).
    pub fn is_resident(&self) -> bool {
        !self
            .resident
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
    }

    /// The bases in the current GPU's memory (with their precomputed copies), uploading them
    /// on first use.
    pub fn device(&self) -> Result<Arc<Resident<P>>> {
        self.resident_on(&crate::dispatch::GpuShares::one(
            crate::backend::gpu::current(),
        ))
    }

    /// The bases in the memory of `gpus`, each holding what its part of the digit windows reads
    /// (a part in proportion to its share), uploaded (all GPUs at once) on first use for that set.
    pub fn resident_on(&self, gpus: &crate::dispatch::GpuShares) -> Result<Arc<Resident<P>>> {
        let key = gpus.iter().fold(0u64, |m, (g, _)| m | 1 << g);
        let mut held = self.resident.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = held.get(&key) {
            return Ok(r.clone());
        }
        let whole = self.shape_of(self.len(), self.len())?;
        let weights: Vec<f64> = gpus.iter().map(|(_, w)| f64::from(w)).collect();
        let mut parts: Vec<(usize, Cut, Shape)> = gpus
            .iter()
            .zip(Shape::cuts(whole.windows, &weights))
            .filter_map(|((g, _), cut)| whole.part(cut).map(|s| (g, cut, s)))
            .collect();
        if parts.is_empty() {
            // No bases: an empty set on the first GPU.
            parts.push((gpus.first(), (0, 0), whole));
        }
        let raw = raw_bases(&self.host);
        let uploaded: Vec<Result<_>> = std::thread::scope(|s| {
            let handles: Vec<_> = parts
                .into_iter()
                .map(|(g, cut, shape)| {
                    let raw = &raw;
                    s.spawn(move || {
                        crate::backend::gpu::run_on(g, || {
                            gpu::DeviceBases::upload(raw, &shape).map(|b| (g, cut, b))
                        })
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        let parts = uploaded
            .into_iter()
            .collect::<Result<Vec<_>>>()
            .map_err(|e| Error::BackendUnavailable {
                backend: "cuda".into(),
                why: e.to_string(),
            })?;
        let r = Arc::new(Resident { parts });
        held.insert(key, r.clone());
        Ok(r)
    }
}

/// The elements of a prime field as a caller holds them: arkworks' (`Field`, Montgomery limbs),
/// or canonical integers as little-endian bytes, `4 * F::WORDS` each, one after another
/// (`Canonical`: a numpy array of limbs, a file's contents). The GPU reads canonical scalars as
/// they are, each checked below the modulus as it is staged for the crossing, so that a caller
/// holding them so converts nothing and allocates nothing; the CPU converts them. `&[F]` and
/// `&Vec<F>` convert into `Field`.
#[derive(Clone, Copy, Debug)]
pub enum Scalars<'a, F> {
    Field(&'a [F]),
    Canonical(&'a [u8]),
}

impl<'a, F> From<&'a [F]> for Scalars<'a, F> {
    fn from(xs: &'a [F]) -> Self {
        Scalars::Field(xs)
    }
}

impl<'a, F> From<&'a Vec<F>> for Scalars<'a, F> {
    fn from(xs: &'a Vec<F>) -> Self {
        Scalars::Field(xs)
    }
}

impl<'a, F, const N: usize> From<&'a [F; N]> for Scalars<'a, F> {
    fn from(xs: &'a [F; N]) -> Self {
        Scalars::Field(xs)
    }
}

impl<'a, F: Limbs + PrimeField> Scalars<'a, F> {
    const BYTES: usize = 4 * F::WORDS;

    /// Canonical little-endian bytes, refused unless a whole number of elements.
    pub fn canonical(bytes: &'a [u8]) -> Result<Self> {
        if !bytes.len().is_multiple_of(Self::BYTES) {
            return Err(Error::invalid(format!(
                "{} bytes of scalars are not a whole number of {}-byte little-endian scalars",
                bytes.len(),
                Self::BYTES
            )));
        }
        Ok(Scalars::Canonical(bytes))
    }

    pub fn len(&self) -> usize {
        match self {
            Scalars::Field(xs) => xs.len(),
            Scalars::Canonical(b) => b.len() / Self::BYTES,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the kernels convert the words staged from Montgomery form (`Field`) or take them
    /// as they are (`Canonical`).
    pub(crate) fn montgomery(&self) -> bool {
        matches!(self, Scalars::Field(_))
    }

    /// As arkworks' elements: borrowed, or converted on all cores, each checked below the
    /// modulus.
    pub fn to_field(&self) -> Result<std::borrow::Cow<'a, [F]>> {
        let bytes = match *self {
            Scalars::Field(xs) => return Ok(std::borrow::Cow::Borrowed(xs)),
            Scalars::Canonical(b) => b,
        };
        crate::backend::cpu::try_par_map(
            self.len(),
            |i| {
                let mut w = [0u32; 16];
                let w = &mut w[..F::WORDS];
                words_le(&bytes[i * Self::BYTES..(i + 1) * Self::BYTES], w);
                F::from_canonical(w)
            },
            F::ZERO,
        )
        .map(std::borrow::Cow::Owned)
        .map_err(not_below::<F>)
    }

    /// Elements `range` as the kernels read them into `dst` (`F::WORDS` words each), in the
    /// transfer pool ([`crate::backend::cpu::for_transfer`]); writes `dst` only (it may be
    /// write-combined staging). Canonical elements are checked below the modulus: an error
    /// names the first that is not.
    pub(crate) fn stage(&self, range: std::ops::Range<usize>, dst: &mut [u32]) -> Result<()> {
        use rayon::prelude::*;
        let bytes = match *self {
            Scalars::Field(xs) => {
                elements_into(dst, &xs[range]);
                return Ok(());
            }
            Scalars::Canonical(b) => &b[range.start * Self::BYTES..range.end * Self::BYTES],
        };
        let modulus = F::MODULUS;
        let modulus: &[u64] = modulus.as_ref();
        let bad = crate::backend::cpu::for_transfer(|| {
            dst.par_chunks_exact_mut(F::WORDS)
                .zip(bytes.par_chunks_exact(Self::BYTES))
                .enumerate()
                .with_min_len(1 << 12)
                .filter_map(|(i, (d, b))| {
                    words_le(b, d);
                    (!below(d, modulus)).then_some(i)
                })
                .min()
        });
        match bad {
            Some(i) => Err(not_below::<F>(range.start + i)),
            None => Ok(()),
        }
    }
}

/// Elements as canonical little-endian integers, one after another (what
/// [`Scalars::canonical`] reads), converted on all cores.
pub fn canonical_bytes<F: PrimeField>(xs: &[F]) -> Vec<u8> {
    let mut out = vec![0u8; 8 * F::MODULUS.as_ref().len() * xs.len()];
    canonical_into(&mut out, xs);
    out
}

/// [`canonical_bytes`] into `dst` (as many bytes).
pub fn canonical_into<F: PrimeField>(dst: &mut [u8], xs: &[F]) {
    use rayon::prelude::*;
    dst.par_chunks_exact_mut(8 * F::MODULUS.as_ref().len())
        .zip(xs.par_iter())
        .with_min_len(1 << 12)
        .for_each(|(d, x)| {
            for (b, w) in d.chunks_exact_mut(8).zip(x.into_bigint().as_ref()) {
                b.copy_from_slice(&w.to_le_bytes());
            }
        });
}

/// Little-endian bytes as little-endian 32-bit words.
fn words_le(bytes: &[u8], out: &mut [u32]) {
    for (w, c) in out.iter_mut().zip(bytes.chunks_exact(4)) {
        *w = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
    }
}

/// Whether the little-endian 32-bit words `w` are below the little-endian 64-bit `modulus`.
fn below(w: &[u32], modulus: &[u64]) -> bool {
    for (i, &m) in modulus.iter().enumerate().rev() {
        let x = u64::from(w[2 * i]) | (u64::from(w[2 * i + 1]) << 32);
        if x != m {
            return x < m;
        }
    }
    false
}

fn not_below<F: PrimeField>(i: usize) -> Error {
    Error::invalid(format!(
        "scalar {i} is not below the group order (a {}-bit prime): give scalars reduced modulo it",
        F::MODULUS_BIT_SIZE
    ))
}

/// Field elements as the kernels read them (see [`Limbs`]).
pub(crate) fn raw_elements<F: Limbs>(xs: &[F]) -> Vec<u32> {
    let mut out = vec![0u32; F::WORDS * xs.len()];
    elements_into(&mut out, xs);
    out
}

/// [`raw_elements`] into `dst`, in the transfer pool ([`crate::backend::cpu::for_transfer`]);
/// writes `dst` only (it may be write-combined staging).
pub(crate) fn elements_into<F: Limbs>(dst: &mut [u32], xs: &[F]) {
    use rayon::prelude::*;
    crate::backend::cpu::for_transfer(|| {
        dst.par_chunks_exact_mut(F::WORDS)
            .zip(xs.par_iter())
            .with_min_len(1 << 12)
            .for_each(|(d, x)| x.limbs_into(d))
    });
}

/// Affine bases as the kernels read them: x, y as base field limbs, infinity as zeros.
pub(crate) fn raw_bases<P: Group>(bases: &[Affine<P>]) -> Vec<u32> {
    use rayon::prelude::*;
    let w = <P::BaseField as Limbs>::WORDS;
    let mut out = vec![0u32; 2 * w * bases.len()];
    out.par_chunks_exact_mut(2 * w)
        .zip(bases.par_iter())
        .with_min_len(1 << 12)
        .for_each(|(d, p)| {
            if !p.infinity {
                p.x.limbs_into(&mut d[..w]);
                p.y.limbs_into(&mut d[w..]);
            }
        });
    out
}

/// A kernel's Jacobian point (limbs of X, Y, Z; the same representation as arkworks').
fn from_raw<P: Group>(p: &[u32]) -> Projective<P> {
    use ark_ff::Zero;
    let w = <P::BaseField as Limbs>::WORDS;
    let z = P::BaseField::from_limbs(&p[2 * w..3 * w]);
    if z.is_zero() {
        return Projective::default();
    }
    Projective::new_unchecked(
        P::BaseField::from_limbs(&p[..w]),
        P::BaseField::from_limbs(&p[w..2 * w]),
        z,
    )
}

/// `sum scalars[i] bases[i]` on the current GPU over `n` scalars already in its memory, as the
/// kernels read them (a prover's quotient computed there), the bases resident there: the
/// engine's GPU path without the scalars' crossing.
pub(crate) fn on_device<P: Group>(
    bases: &Bases<P>,
    scalars: &cudarc::driver::CudaSlice<u32>,
    n: usize,
) -> Result<Projective<P>> {
    check_scalars(n, bases.len())?;
    if n == 0 {
        return Ok(Projective::default());
    }
    let held = bases.device()?;
    let shape = bases.shape(n)?;
    let sums = gpu::window_sums_many(&[&**held], gpu::Source::Device(scalars), &shape)?;
    Ok(combine_windows::<P>(&sums[0], &shape))
}

/// Fails for more scalars than bases.
fn check_scalars(n: usize, bases: usize) -> Result<()> {
    if n > bases {
        return Err(Error::invalid(format!(
            "{n} scalars for {bases} bases: an MSM needs a base per scalar"
        )));
    }
    Ok(())
}

/// `sum_j 2^(c (base + j)) S_j` from the sums S_j of the bucket windows of shape `s` (kernel
/// points, one after another; `base`: [`Shape::base`], the part's first window).
pub(crate) fn combine_windows<P: Group>(sums: &[u32], s: &Shape) -> Projective<P> {
    use ark_ff::AdditiveGroup;
    let mut acc = Projective::<P>::default();
    for w in sums.chunks_exact(point_words::<P>()).rev() {
        for _ in 0..s.c {
            acc.double_in_place();
        }
        acc += from_raw::<P>(w);
    }
    for _ in 0..s.c * s.base() {
        acc.double_in_place();
    }
    acc
}

impl Engine {
    /// `sum scalars[i] * bases[i]` over the first `scalars.len()` bases of group `P`
    /// (`engine.msm::<bn254::G1>(..)`); an empty sum is the identity. More scalars than bases
    /// is an error. The scalars: arkworks' elements (`&[Fr]`), or [`Scalars::Canonical`] bytes,
    /// which the GPU reads in place.
    pub fn msm<'s, P: Group>(
        &self,
        bases: &Bases<P>,
        scalars: impl Into<Scalars<'s, P::ScalarField>>,
    ) -> Result<Output<Projective<P>>> {
        let out = self.msm_many(&[bases], scalars)?;
        Ok(out.map(|mut sums| sums.remove(0)))
    }

    /// [`Engine::msm`] of the same scalars over each of `bases` (a prover's queries over one
    /// witness), one sum per set in order; the sets have one length and one precomputation. On
    /// the GPU the scalars cross once and are sorted into buckets once for all of them.
    pub fn msm_many<'s, P: Group>(
        &self,
        bases: &[&Bases<P>],
        scalars: impl Into<Scalars<'s, P::ScalarField>>,
    ) -> Result<Output<Vec<Projective<P>>>> {
        let scalars = scalars.into();
        let Some(first) = bases.first() else {
            return Err(Error::invalid("an MSM over no set of bases"));
        };
        if let Some(b) = bases
            .iter()
            .find(|b| (b.len(), b.copies, b.window) != (first.len(), first.copies, first.window))
        {
            return Err(Error::invalid(format!(
                "MSMs of one set of scalars over bases of {} and {} points ({} and {} precomputed copies, windows {:?} and {:?}): give the sets one length, one precomputation and one window, or make one call per set",
                first.len(),
                b.len(),
                first.copies,
                b.copies,
                first.window,
                b.window
            )));
        }
        check_scalars(scalars.len(), first.len())?;
        let n = scalars.len();
        let op = P::operation();
        let resident = bases.iter().all(|b| b.is_resident());
        let out = self.run(
            op,
            &workload::<P>(n, resident, bases.len()),
            op.cpu,
            |_, threads| {
                let field = scalars.to_field()?;
                Ok(Whole(
                    bases
                        .iter()
                        .map(|b| match n {
                            0 => Projective::default(),
                            _ => cpu::msm(b.as_slice(), &field, threads),
                        })
                        .collect::<Vec<_>>(),
                ))
            },
            // Each GPU of the plan sums its part of the digit windows over every scalar, the
            // scalars crossing the host's links once between them; the parts' sums are added.
            |_, gpus| {
                if n == 0 {
                    return Ok(Whole(vec![Projective::default(); bases.len()]));
                }
                let resident = bases
                    .iter()
                    .map(|b| b.resident_on(gpus))
                    .collect::<Result<Vec<_>>>()?;
                // The cuts in proportion to those the bases were placed by, over this MSM's
                // windows (plain bases take their window from the scalars' count).
                let whole = first.shape_of(n, first.len())?;
                let weights: Vec<f64> = resident[0]
                    .parts
                    .iter()
                    .map(|(_, (from, to), _)| (to - from) as f64)
                    .collect();
                let parts: Vec<(usize, Shape, Vec<&gpu::DeviceBases<P>>)> =
                    Shape::cuts(whole.windows, &weights)
                        .into_iter()
                        .enumerate()
                        .filter_map(|(i, cut)| {
                            let held = resident.iter().map(|r| &r.parts[i].2).collect();
                            whole.part(cut).map(|s| (resident[0].parts[i].0, s, held))
                        })
                        .collect();
                let lanes: Vec<usize> = parts.iter().map(|p| p.0).collect();
                let sums = gpu::Broadcast::run(&lanes, scalars, |shared| {
                    Ok(std::thread::scope(|s| {
                        let handles: Vec<_> = parts
                            .iter()
                            .enumerate()
                            .map(|(lane, (g, shape, held))| {
                                s.spawn(move || {
                                    crate::backend::gpu::run_on(*g, || {
                                        let from = gpu::Source::Shared(shared, lane);
                                        Ok(gpu::window_sums_many(held, from, shape)?
                                            .iter()
                                            .map(|sums| combine_windows::<P>(sums, shape))
                                            .collect::<Vec<Projective<P>>>())
                                    })
                                })
                            })
                            .collect();
                        handles
                            .into_iter()
                            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                            .collect::<Vec<Result<Vec<Projective<P>>>>>()
                    }))
                })?;
                let mut total = vec![Projective::<P>::default(); bases.len()];
                for part in sums {
                    for (t, p) in total.iter_mut().zip(part?) {
                        *t += p;
                    }
                }
                Ok(Whole(total))
            },
        )?;
        Ok(out.map(|w| w.0))
    }

    /// The estimated time of an MSM of `n` points of group `P` on all CPU cores and on the GPU
    /// (bases in GPU memory), measuring each backend on first use (`batchcrypt calibrate`).
    pub fn msm_estimates<P: Group>(&self, n: usize) -> [crate::dispatch::Plan; 2] {
        self.dispatcher().estimates(
            &workload::<P>(n, true, 1),
            Backend::Arkworks,
            P::operation(),
        )
    }
}

/// `sets` MSMs of one set of scalars: the scalars always move (once); the bases too unless they
/// are in GPU memory already.
fn workload<P: Group>(n: usize, resident: bool, sets: usize) -> Workload {
    let (n64, sets) = (n as u64, sets as u64);
    let base_bytes = 4 * base_words::<P>() as u64;
    Workload {
        op: P::operation().key,
        items: n64,
        units: n64 * sets,
        bytes_in: 4 * SCALAR_WORDS as u64 * n64
            + if resident { 0 } else { base_bytes * n64 * sets },
        bytes_out: 4 * point_words::<P>() as u64 * sets,
        location: Location::Host,
    }
}

/// Deterministic sample points and scalars for calibration, tests and benchmarks: distinct
/// multiples `(1 + i s) G` of the group's generator (consecutive additions in parallel chunks,
/// one batch normalisation) and uniform scalars.
pub fn sample<P: Group>(n: usize, seed: u64) -> (Vec<Affine<P>>, Vec<P::ScalarField>) {
    use ark_ec::CurveGroup;
    use ark_ff::UniformRand;
    use rand::SeedableRng;
    use rayon::prelude::*;
    const CHUNK: usize = 1 << 12;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let s = P::ScalarField::rand(&mut rng);
    let g = Projective::<P>::from(Affine::<P>::generator());
    let step = g * s;
    let mut proj = vec![Projective::<P>::default(); n];
    proj.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(j, chunk)| {
            let one = P::ScalarField::from(1u64);
            let mut p = g * (one + P::ScalarField::from((j * CHUNK) as u64) * s);
            for q in chunk {
                *q = p;
                p += step;
            }
        });
    let scalars = (0..n).map(|_| P::ScalarField::rand(&mut rng)).collect();
    (Projective::normalize_batch(&proj), scalars)
}

/// Measures one backend: a small and a larger MSM (one thread for the CPU, bases resident on the
/// GPU). Pippenger's cost per point falls as batches grow, so a line through two sizes puts a
/// fixed cost where there is little: the CPU is fitted from 16 points, below where the
/// crossover lies, so that small batches are not sent to the GPU for a fixed cost the CPU does
/// not have.
fn calibrate<P: Group>(backend: Backend) -> Result<Cost> {
    let (small, large) = match backend {
        Backend::Cuda => (1 << 10, 1 << 16),
        _ => (1 << 4, 1 << 10),
    };
    let (points, scalars) = sample::<P>(large, 1);
    let bases = Bases::new(points);
    let engine = Engine::measuring(backend);
    let run = |n: usize| -> Result<()> {
        match backend {
            Backend::Arkworks => drop(cpu::msm(bases.as_slice(), &scalars[..n], 1)),
            _ => drop(engine.msm(&bases, &scalars[..n])?),
        }
        Ok(())
    };
    crate::dispatch::fit_sizes(small, large, 1, run)
}

//! snarkjs's Groth16 proving key (`.zkey`): read strictly, checked, and kept in the form the
//! prover uses — the A and B matrices grouped by constraint, the five point queries as MSM bases
//! (both uploaded to GPU memory once, on the first proof that runs there).
//!
//! Sections: 1 protocol (1 = Groth16), 2 header (field moduli, sizes, the verification key's
//! points), 3 IC (public inputs' query), 4 the A and B coefficients, 5 A, 6 B in G1, 7 B in G2,
//! 8 C (private signals), 9 H (the quotient's query over the odd coset), 10 the ceremony's
//! contributions (not needed to prove). Field elements are little-endian; points are affine in
//! Montgomery form, (0, 0) for the point at infinity; coefficients carry an extra factor R².

use super::binfile::BinFile;
use super::{n8q, n8r, Curve, VerifyingKey};
use crate::error::{Error, Result};
use crate::msm::{Affine, Bases, Limbs};
use crate::ntt::gpu::DeviceRows;
use ark_ff::{AdditiveGroup, BigInteger, Field, PrimeField};
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

const WHAT: &str = "proving key (.zkey)";
const PROTOCOL_GROTH16: u32 = 1;

/// A Groth16 proving key for a circuit over the curve `C`.
pub struct ProvingKey<C: Curve = crate::bn254::Bn254> {
    /// Signals, the constant 1 included (the witness's length).
    pub n_vars: usize,
    /// Public signals (outputs and public inputs), after the constant.
    pub n_public: usize,
    /// The evaluation domain's size, a power of two.
    pub domain_size: usize,
    pub vk: VerifyingKey<C>,
    pub beta_g1: Affine<C::G1>,
    pub delta_g1: Affine<C::G1>,
    pub(crate) a: Matrix<C::Fr>,
    pub(crate) b: Matrix<C::Fr>,
    pub a_query: Bases<C::G1>,
    pub b_g1_query: Bases<C::G1>,
    pub b_g2_query: Bases<C::G2>,
    /// One point per signal like A's and B's, the constant's and the public signals' at
    /// infinity (the file holds the private signals' only): its MSM takes the whole witness, so
    /// the three share one sorting of its scalars.
    pub c_query: Bases<C::G1>,
    pub h_query: Bases<C::G1>,
    /// A and B in GPU memory, by GPU (uploaded on the first proof there): the prover's
    /// evaluations are made there from the witness.
    rows_resident: Mutex<HashMap<usize, Arc<DeviceRows>>>,
}

/// A sparse matrix by rows (constraints): the entries of row i are
/// `entries[starts[i]..starts[i + 1]]`, each (signal, coefficient).
pub(crate) struct Matrix<F> {
    pub starts: Vec<usize>,
    pub entries: Vec<(u32, F)>,
}

impl<F: Field> Matrix<F> {
    /// Row `i` of `M · w`. Most of circom's coefficients are 1 or -1: those terms are added or
    /// subtracted without a product.
    fn row(&self, i: usize, w: &[F], minus_one: &F) -> F {
        let mut acc = F::ZERO;
        for &(s, v) in &self.entries[self.starts[i]..self.starts[i + 1]] {
            let x = &w[s as usize];
            if v == F::ONE {
                acc += x;
            } else if v == *minus_one {
                acc -= x;
            } else {
                acc += v * x;
            }
        }
        acc
    }
}

impl<C: Curve> ProvingKey<C> {
    /// `[A·w | B·w | (A·w)∘(B·w)]` on the evaluation domain into `abc` (three times the domain
    /// size), in one pass over the rows on all cores. For a satisfying witness the last third is
    /// C·w, which the key does not hold.
    pub(crate) fn evaluate(&self, w: &[C::Fr], abc: &mut [C::Fr]) {
        const ROWS: usize = 1 << 12;
        let n = self.domain_size;
        let minus_one = -C::Fr::ONE;
        let (a, rest) = abc.split_at_mut(n);
        let (b, c) = rest.split_at_mut(n);
        a.par_chunks_mut(ROWS)
            .zip(b.par_chunks_mut(ROWS))
            .zip(c.par_chunks_mut(ROWS))
            .enumerate()
            .for_each(|(k, ((a, b), c))| {
                for j in 0..a.len() {
                    let row = k * ROWS + j;
                    a[j] = self.a.row(row, w, &minus_one);
                    b[j] = self.b.row(row, w, &minus_one);
                    c[j] = a[j] * b[j];
                }
            });
    }

    /// The key with its five MSM bases precomputed on the GPU, `copies` shifted copies each
    /// ([`crate::msm::Bases::with_precomputation`]): the key takes about `copies` times its
    /// points' size in GPU memory (made once, on the first proof there), and each proof's MSMs
    /// reduce fewer bucket windows. 1 keeps the bases as they are.
    pub fn with_precomputation(self, copies: u32) -> Self {
        ProvingKey {
            a_query: self.a_query.with_precomputation(copies),
            b_g1_query: self.b_g1_query.with_precomputation(copies),
            b_g2_query: self.b_g2_query.with_precomputation(copies),
            c_query: self.c_query.with_precomputation(copies),
            h_query: self.h_query.with_precomputation(copies),
            ..self
        }
    }

    /// A and B in the current GPU's memory, uploaded there on the first call.
    pub(crate) fn rows_on_gpu(&self) -> Result<Arc<DeviceRows>> {
        let gpu = crate::backend::gpu::current();
        let mut held = self.rows_resident.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(rows) = held.get(&gpu) {
            return Ok(rows.clone());
        }
        // One array of offsets for both matrices, B's rows after A's.
        let a_terms = self.a.entries.len() as u64;
        let starts: Vec<u64> = (self.a.starts.iter().map(|&s| s as u64))
            .chain(self.b.starts[1..].iter().map(|&s| a_terms + s as u64))
            .collect();
        let (cols, coefs): (Vec<u32>, Vec<C::Fr>) = self
            .a
            .entries
            .iter()
            .chain(&self.b.entries)
            .copied()
            .unzip();
        let rows = Arc::new(DeviceRows::upload(&starts, &cols, &coefs, self.n_vars)?);
        held.insert(gpu, rows.clone());
        Ok(rows)
    }

    /// GPU memory the key takes once resident: its five MSM bases and its A and B.
    pub fn device_bytes(&self) -> u64 {
        DeviceRows::bytes::<C::Fr>(
            2 * self.domain_size + 1,
            self.a.entries.len() + self.b.entries.len(),
        ) + self.a_query.device_bytes()
            + self.b_g1_query.device_bytes()
            + self.b_g2_query.device_bytes()
            + self.c_query.device_bytes()
            + self.h_query.device_bytes()
    }

    /// A bound on one proof's GPU working memory beside the key: the domain's three evaluation
    /// vectors and their NTT scratch, and the MSMs' scalars and buckets (the prover's three chains
    /// run at once, so all count).
    pub fn proof_device_bytes(&self) -> u64 {
        const BUCKETS: u64 = 64 << 20;
        let fr = n8r::<C>() as u64;
        8 * fr * self.domain_size as u64 + 2 * fr * self.n_vars as u64 + BUCKETS
    }

    /// Frees the key's GPU copies (see [`crate::msm::Bases::release_device`]).
    pub fn release_device(&self) {
        self.rows_resident
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.a_query.release_device();
        self.b_g1_query.release_device();
        self.b_g2_query.release_device();
        self.c_query.release_device();
        self.h_query.release_device();
    }

    /// Reads a `.zkey` file.
    pub fn read(path: impl AsRef<std::path::Path>) -> Result<Self> {
        Self::parse(&read_file(path.as_ref())?)
    }

    pub fn parse(data: &[u8]) -> Result<Self> {
        let file = BinFile::parse(data, b"zkey", 1, WHAT)?;
        let mut s = file.section(1)?;
        let protocol = s.u32()?;
        s.finish("the protocol section")?;
        if protocol != PROTOCOL_GROTH16 {
            return Err(Error::invalid(format!(
                "the proving key is for protocol {protocol} ({}), not Groth16; make it with `snarkjs groth16 setup`",
                match protocol { 2 => "PLONK", 10 => "FFLONK", _ => "unknown" }
            )));
        }

        let (p1, p2) = (2 * n8q::<C>(), 4 * n8q::<C>());
        let mut h = file.section(2)?;
        field_header::<C, C::Fq>(&mut h, "base field q")?;
        field_header::<C, C::Fr>(&mut h, "scalar field r")?;
        let n_vars = h.count()?;
        let n_public = h.count()?;
        let domain_size = h.count()?;
        // The verification key's points and β, δ in G1 are checked in their group here; the
        // queries' points are covered by checking each proof before it is returned.
        let alpha_g1 = in_group(g1::<C>(h.bytes(p1)?)?)?;
        let beta_g1 = in_group(g1::<C>(h.bytes(p1)?)?)?;
        let beta_g2 = in_group(g2::<C>(h.bytes(p2)?)?)?;
        let gamma_g2 = in_group(g2::<C>(h.bytes(p2)?)?)?;
        let delta_g1 = in_group(g1::<C>(h.bytes(p1)?)?)?;
        let delta_g2 = in_group(g2::<C>(h.bytes(p2)?)?)?;
        h.finish("the Groth16 header")?;
        if n_public + 1 > n_vars {
            return Err(corrupt(format!(
                "{n_public} public signals for {n_vars} signals"
            )));
        }
        if !domain_size.is_power_of_two() || domain_size < n_public + 1 {
            return Err(corrupt(format!(
                "domain size {domain_size} is not a power of two above the public signals"
            )));
        }
        // The quotient is evaluated on the coset of the 2n-th roots: 2n must divide 2^s.
        let max = crate::ntt::max_log_size::<C::Fr>();
        if domain_size.trailing_zeros() >= max {
            return Err(Error::invalid(format!(
                "domain size {domain_size} is beyond {}'s largest (2^{} constraints)",
                C::NAME,
                max - 1
            )));
        }

        // The H query holds one point per row of the domain: checking its size first bounds the
        // domain by the file's size before anything is sized by it (the coefficient matrices).
        let h_raw = file.section(9)?.items(domain_size, p1, "the H query")?;
        let ic = g1_points::<C>(file.section(3)?.items(n_public + 1, p1, "IC")?)?
            .into_iter()
            .map(in_group)
            .collect::<Result<Vec<_>>>()?;
        let [a, b] = coefficients::<C>(&file, domain_size, n_vars)?;
        let a_query = g1_points::<C>(file.section(5)?.items(n_vars, p1, "the A query")?)?;
        let b_g1_query =
            g1_points::<C>(file.section(6)?.items(n_vars, p1, "the B query in G1")?)?;
        let b_g2_query =
            g2_points::<C>(file.section(7)?.items(n_vars, p2, "the B query in G2")?)?;
        let c_private = file
            .section(8)?
            .items(n_vars - n_public - 1, p1, "the C query")?;
        let mut c_query = vec![Affine::<C::G1>::identity(); n_public + 1];
        c_query.extend(g1_points::<C>(c_private)?);
        let h_query = g1_points::<C>(h_raw)?;
        Ok(ProvingKey {
            n_vars,
            n_public,
            domain_size,
            vk: VerifyingKey {
                alpha_g1,
                beta_g2,
                gamma_g2,
                delta_g2,
                ic,
            },
            beta_g1,
            delta_g1,
            a,
            b,
            a_query: Bases::new(a_query),
            b_g1_query: Bases::new(b_g1_query),
            b_g2_query: Bases::new(b_g2_query),
            c_query: Bases::new(c_query),
            h_query: Bases::new(h_query),
            rows_resident: Mutex::default(),
        })
    }
}

/// A proving key file's bytes (an error naming the file where it cannot be read).
pub(super) fn read_file(path: &std::path::Path) -> Result<Vec<u8>> {
    crate::backend::cpu::read_file(path)
        .map_err(|e| Error::invalid(format!("cannot read proving key {}: {e}", path.display())))
}

fn corrupt(msg: String) -> Error {
    Error::Corrupt(format!("{WHAT}: {msg}"))
}

/// A field's byte size and modulus, which must be `F`, of the curve `C`.
fn field_header<C: Curve, F: PrimeField + Limbs>(
    r: &mut super::binfile::Reader<'_>,
    name: &str,
) -> Result<()> {
    let n8 = r.count()?;
    let want = F::MODULUS.to_bytes_le();
    if n8 != 4 * F::WORDS || r.bytes(n8)? != &want[..] {
        return Err(Error::invalid(format!(
            "the proving key's {name} is not {}'s ({}); read it as a key of its own curve",
            C::NAME,
            C::SNARKJS
        )));
    }
    Ok(())
}

/// Section 4: the A (0) and B (1) coefficients as (matrix, constraint, signal, value · R²),
/// grouped by constraint with a counting sort.
fn coefficients<C: Curve>(
    file: &BinFile<'_>,
    rows: usize,
    n_vars: usize,
) -> Result<[Matrix<C::Fr>; 2]> {
    let fr = n8r::<C>();
    let mut s = file.section(4)?;
    let n = s.count()?;
    let raw = s.items(n, 12 + fr, "the coefficients")?;
    // Stored as v·R²: the limbs read as Montgomery form are v·R, and a product with the element
    // whose limbs are 1 (that is 1/R) leaves v.
    let mut one = [0u32; 8];
    one[0] = 1;
    let unmont = C::Fr::from_limbs(&one[..C::Fr::WORDS]);
    let parsed: Vec<(u32, u32, u32, C::Fr)> = raw
        .par_chunks_exact(12 + fr)
        .map(|c| {
            let word = |i: usize| u32::from_le_bytes(c[4 * i..4 * i + 4].try_into().unwrap());
            let (m, row, signal) = (word(0), word(1), word(2));
            if m > 1 || row as usize >= rows || signal as usize >= n_vars {
                return Err(corrupt(format!(
                    "coefficient (matrix {m}, constraint {row}, signal {signal}) is out of range"
                )));
            }
            let v = montgomery::<C::Fr>(&c[12..])
                .ok_or_else(|| corrupt("a coefficient is not below r".into()))?;
            Ok((m, row, signal, v * unmont))
        })
        .collect::<Result<_>>()?;
    let matrix = |which: u32| {
        let mut starts = vec![0usize; rows + 1];
        for &(m, row, _, _) in &parsed {
            if m == which {
                starts[row as usize + 1] += 1;
            }
        }
        for i in 0..rows {
            starts[i + 1] += starts[i];
        }
        let mut next = starts.clone();
        let mut entries = vec![(0u32, C::Fr::ZERO); starts[rows]];
        for &(m, row, signal, v) in &parsed {
            if m == which {
                entries[next[row as usize]] = (signal, v);
                next[row as usize] += 1;
            }
        }
        Matrix { starts, entries }
    };
    let (a, b) = rayon::join(|| matrix(0), || matrix(1));
    Ok([a, b])
}

/// A little-endian integer of `F`'s size, in `F`'s big-integer type.
pub(crate) fn bigint<F: PrimeField>(le: &[u8]) -> F::BigInt {
    let mut b = F::BigInt::default();
    for (d, c) in b.as_mut().iter_mut().zip(le.chunks_exact(8)) {
        *d = u64::from_le_bytes(c.try_into().unwrap());
    }
    b
}

/// An element of `F` stored in Montgomery form (its limbs as they are), or `None` where the
/// integer is not below the modulus.
fn montgomery<F: PrimeField + Limbs>(le: &[u8]) -> Option<F> {
    if bigint::<F>(le) >= F::MODULUS {
        return None;
    }
    let mut words = [0u32; 12];
    for (w, c) in words.iter_mut().zip(le.chunks_exact(4)) {
        *w = u32::from_le_bytes(c.try_into().unwrap());
    }
    Some(F::from_limbs(&words[..F::WORDS]))
}

/// A base field element (of G1's Fq, or G2's Fq2: each Fq coordinate in turn), checked below q.
fn coordinate<C: Curve, F: Limbs>(le: &[u8]) -> Result<F> {
    let q = n8q::<C>();
    let mut words = [0u32; 24];
    for (k, part) in le.chunks_exact(q).enumerate() {
        let x = montgomery::<C::Fq>(part)
            .ok_or_else(|| corrupt("a point coordinate is not below q".into()))?;
        x.limbs_into(&mut words[k * C::Fq::WORDS..(k + 1) * C::Fq::WORDS]);
    }
    Ok(F::from_limbs(&words[..F::WORDS]))
}

/// An affine point as snarkjs stores it: x then y in Montgomery form, (0, 0) for the point at
/// infinity; checked on the curve (the subgroup check, a scalar multiplication, is
/// [`in_group`]'s).
fn point<C: Curve, P: crate::msm::Group>(b: &[u8], group: &str) -> Result<Affine<P>> {
    if b.iter().all(|&x| x == 0) {
        return Ok(Affine::<P>::identity());
    }
    let half = b.len() / 2;
    let p = Affine::<P>::new_unchecked(
        coordinate::<C, P::BaseField>(&b[..half])?,
        coordinate::<C, P::BaseField>(&b[half..])?,
    );
    if !p.is_on_curve() {
        return Err(corrupt(format!("a {group} point is not on the curve")));
    }
    Ok(p)
}

fn g1<C: Curve>(b: &[u8]) -> Result<Affine<C::G1>> {
    point::<C, C::G1>(b, "G1")
}

fn g2<C: Curve>(b: &[u8]) -> Result<Affine<C::G2>> {
    point::<C, C::G2>(b, "G2")
}

/// `p`, checked in the prime-order subgroup.
fn in_group<P: crate::msm::Group>(p: Affine<P>) -> Result<Affine<P>> {
    match p.is_in_correct_subgroup_assuming_on_curve() {
        true => Ok(p),
        false => Err(corrupt(
            "a point of the verification key is not in the prime-order subgroup".into(),
        )),
    }
}

fn g1_points<C: Curve>(raw: &[u8]) -> Result<Vec<Affine<C::G1>>> {
    raw.par_chunks_exact(2 * n8q::<C>())
        .with_min_len(1 << 10)
        .map(g1::<C>)
        .collect()
}

fn g2_points<C: Curve>(raw: &[u8]) -> Result<Vec<Affine<C::G2>>> {
    raw.par_chunks_exact(4 * n8q::<C>())
        .with_min_len(1 << 9)
        .map(g2::<C>)
        .collect()
}

//! snarkjs's Groth16 proving key (`.zkey`): read strictly, checked, and kept in the form the
//! prover uses — the A and B matrices grouped by constraint, the five point queries as MSM bases
//! (uploaded to GPU memory once, on the first proof that runs there).
//!
//! Sections: 1 protocol (1 = Groth16), 2 header (field moduli, sizes, the verification key's
//! points), 3 IC (public inputs' query), 4 the A and B coefficients, 5 A, 6 B in G1, 7 B in G2,
//! 8 C (private signals), 9 H (the quotient's query over the odd coset), 10 the ceremony's
//! contributions (not needed to prove). Field elements are little-endian; points are affine in
//! Montgomery form, (0, 0) for the point at infinity; coefficients carry an extra factor R².

use super::binfile::BinFile;
use super::VerifyingKey;
use crate::bn254::{Fq, Fq2, Fr, G1Affine, G1Bases, G2Affine, G2Bases};
use crate::error::{Error, Result};
use ark_ff::{AdditiveGroup, BigInt, BigInteger, Field, PrimeField};
use rayon::prelude::*;

const WHAT: &str = "proving key (.zkey)";
const PROTOCOL_GROTH16: u32 = 1;

/// A Groth16 proving key for a circuit over BN254.
pub struct ProvingKey {
    /// Signals, the constant 1 included (the witness's length).
    pub n_vars: usize,
    /// Public signals (outputs and public inputs), after the constant.
    pub n_public: usize,
    /// The evaluation domain's size, a power of two.
    pub domain_size: usize,
    pub vk: VerifyingKey,
    pub beta_g1: G1Affine,
    pub delta_g1: G1Affine,
    pub(crate) a: Matrix,
    pub(crate) b: Matrix,
    pub a_query: G1Bases,
    pub b_g1_query: G1Bases,
    pub b_g2_query: G2Bases,
    /// For the private signals (index n_public + 1 on).
    pub c_query: G1Bases,
    pub h_query: G1Bases,
}

/// A sparse matrix by rows (constraints): the entries of row i are
/// `entries[starts[i]..starts[i + 1]]`, each (signal, coefficient).
pub(crate) struct Matrix {
    pub starts: Vec<usize>,
    pub entries: Vec<(u32, Fr)>,
}

impl Matrix {
    /// Row `i` of `M · w`. Most of circom's coefficients are 1 or -1: those terms are added or
    /// subtracted without a product.
    fn row(&self, i: usize, w: &[Fr], minus_one: &Fr) -> Fr {
        let mut acc = Fr::ZERO;
        for &(s, v) in &self.entries[self.starts[i]..self.starts[i + 1]] {
            let x = &w[s as usize];
            if v == Fr::ONE {
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

impl ProvingKey {
    /// `[A·w | B·w | (A·w)∘(B·w)]` on the evaluation domain into `abc` (three times the domain
    /// size), in one pass over the rows on all cores. For a satisfying witness the last third is
    /// C·w, which the key does not hold.
    pub(crate) fn evaluate(&self, w: &[Fr], abc: &mut [Fr]) {
        const ROWS: usize = 1 << 12;
        let n = self.domain_size;
        let minus_one = -Fr::ONE;
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
    /// ([`crate::bn254::Bases::with_precomputation`]): the key takes about `copies` times its
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

    /// GPU memory the key's five MSM bases take once resident.
    pub fn device_bytes(&self) -> u64 {
        self.a_query.device_bytes()
            + self.b_g1_query.device_bytes()
            + self.b_g2_query.device_bytes()
            + self.c_query.device_bytes()
            + self.h_query.device_bytes()
    }

    /// A bound on one proof's GPU working memory beside the key: the domain's three evaluation
    /// vectors and their NTT scratch, the MSMs' scalars and buckets.
    pub fn proof_device_bytes(&self) -> u64 {
        const BUCKETS: u64 = 64 << 20;
        8 * 32 * self.domain_size as u64 + 2 * 32 * self.n_vars as u64 + BUCKETS
    }

    /// Frees the key's GPU copies (see [`crate::bn254::Bases::release_device`]).
    pub fn release_device(&self) {
        self.a_query.release_device();
        self.b_g1_query.release_device();
        self.b_g2_query.release_device();
        self.c_query.release_device();
        self.h_query.release_device();
    }

    /// Reads a `.zkey` file.
    pub fn read(path: impl AsRef<std::path::Path>) -> Result<Self> {
        let path = path.as_ref();
        let data = std::fs::read(path).map_err(|e| {
            Error::invalid(format!("cannot read proving key {}: {e}", path.display()))
        })?;
        Self::parse(&data)
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

        let mut h = file.section(2)?;
        field_header(&mut h, <Fq as PrimeField>::MODULUS, "base field q")?;
        field_header(&mut h, <Fr as PrimeField>::MODULUS, "scalar field r")?;
        let n_vars = h.count()?;
        let n_public = h.count()?;
        let domain_size = h.count()?;
        let alpha_g1 = g1(h.bytes(64)?)?;
        let beta_g1 = g1(h.bytes(64)?)?;
        let beta_g2 = g2(h.bytes(128)?)?;
        let gamma_g2 = g2(h.bytes(128)?)?;
        let delta_g1 = g1(h.bytes(64)?)?;
        let delta_g2 = g2(h.bytes(128)?)?;
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
        // The quotient is evaluated on the coset of the 2n-th roots: 2n must divide 2^28.
        if domain_size.trailing_zeros() >= crate::ntt::max_log_size::<Fr>() {
            return Err(Error::invalid(format!(
                "domain size {domain_size} is beyond BN254's largest (2^27 constraints)"
            )));
        }

        // The H query holds one point per row of the domain: checking its size first bounds the
        // domain by the file's size before anything is sized by it (the coefficient matrices).
        let h_raw = file.section(9)?.items(domain_size, 64, "the H query")?;
        let ic = g1_points(file.section(3)?.items(n_public + 1, 64, "IC")?)?;
        let (a, b) = coefficients(&file, domain_size, n_vars)?;
        let a_query = g1_points(file.section(5)?.items(n_vars, 64, "the A query")?)?;
        let b_g1_query = g1_points(file.section(6)?.items(n_vars, 64, "the B query in G1")?)?;
        let b_g2_query = g2_points(file.section(7)?.items(n_vars, 128, "the B query in G2")?)?;
        let c_query = g1_points(file.section(8)?.items(
            n_vars - n_public - 1,
            64,
            "the C query",
        )?)?;
        let h_query = g1_points(h_raw)?;
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
            a_query: G1Bases::new(a_query),
            b_g1_query: G1Bases::new(b_g1_query),
            b_g2_query: G2Bases::new(b_g2_query),
            c_query: G1Bases::new(c_query),
            h_query: G1Bases::new(h_query),
        })
    }
}

fn corrupt(msg: String) -> Error {
    Error::Corrupt(format!("{WHAT}: {msg}"))
}

/// A field's byte size and modulus, which must be BN254's.
fn field_header(r: &mut super::binfile::Reader<'_>, modulus: BigInt<4>, name: &str) -> Result<()> {
    let n8 = r.count()?;
    if n8 != 32 || r.bytes(32)? != modulus.to_bytes_le() {
        return Err(Error::invalid(format!(
            "the proving key's {name} is not BN254's (bn128); batchcrypt proves on BN254 only"
        )));
    }
    Ok(())
}

/// Section 4: the A (0) and B (1) coefficients as (matrix, constraint, signal, value · R²),
/// grouped by constraint with a counting sort.
fn coefficients(file: &BinFile<'_>, rows: usize, n_vars: usize) -> Result<(Matrix, Matrix)> {
    let mut s = file.section(4)?;
    let n = s.count()?;
    let raw = s.items(n, 12 + 32, "the coefficients")?;
    // Stored as v·R²: new_unchecked reads it as v·R, and a product with new_unchecked(1) = 1/R
    // leaves v.
    let unmont = Fr::new_unchecked(BigInt::one());
    let parsed: Vec<(u32, u32, u32, Fr)> = raw
        .par_chunks_exact(44)
        .map(|c| {
            let word = |i: usize| u32::from_le_bytes(c[4 * i..4 * i + 4].try_into().unwrap());
            let (m, row, signal) = (word(0), word(1), word(2));
            if m > 1 || row as usize >= rows || signal as usize >= n_vars {
                return Err(corrupt(format!(
                    "coefficient (matrix {m}, constraint {row}, signal {signal}) is out of range"
                )));
            }
            let v = bigint(&c[12..]);
            if v >= <Fr as PrimeField>::MODULUS {
                return Err(corrupt("a coefficient is not below r".into()));
            }
            Ok((m, row, signal, Fr::new_unchecked(v) * unmont))
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
        let mut entries = vec![(0u32, Fr::ZERO); starts[rows]];
        for &(m, row, signal, v) in &parsed {
            if m == which {
                entries[next[row as usize]] = (signal, v);
                next[row as usize] += 1;
            }
        }
        Matrix { starts, entries }
    };
    let (a, b) = rayon::join(|| matrix(0), || matrix(1));
    Ok((a, b))
}

pub(crate) fn bigint(le: &[u8]) -> BigInt<4> {
    BigInt(std::array::from_fn(|i| {
        u64::from_le_bytes(le[8 * i..8 * i + 8].try_into().unwrap())
    }))
}

/// An Fq coordinate in Montgomery form, checked below q.
fn fq(le: &[u8]) -> Result<Fq> {
    let v = bigint(le);
    if v >= <Fq as PrimeField>::MODULUS {
        return Err(corrupt("a point coordinate is not below q".into()));
    }
    Ok(Fq::new_unchecked(v))
}

fn g1(b: &[u8]) -> Result<G1Affine> {
    if b.iter().all(|&x| x == 0) {
        return Ok(G1Affine::identity());
    }
    let p = G1Affine::new_unchecked(fq(&b[..32])?, fq(&b[32..])?);
    // G1 has cofactor 1: on the curve means in the group.
    if !p.is_on_curve() {
        return Err(corrupt("a G1 point is not on the curve".into()));
    }
    Ok(p)
}

fn g2(b: &[u8]) -> Result<G2Affine> {
    if b.iter().all(|&x| x == 0) {
        return Ok(G2Affine::identity());
    }
    let c = |i: usize| fq(&b[32 * i..32 * i + 32]);
    let p = G2Affine::new_unchecked(Fq2::new(c(0)?, c(1)?), Fq2::new(c(2)?, c(3)?));
    // The subgroup check costs a scalar multiplication: the few verification-key points get it
    // (verify), the query points are covered by checking each proof before it is returned.
    if !p.is_on_curve() {
        return Err(corrupt("a G2 point is not on the curve".into()));
    }
    Ok(p)
}

fn g1_points(raw: &[u8]) -> Result<Vec<G1Affine>> {
    raw.par_chunks_exact(64)
        .with_min_len(1 << 10)
        .map(g1)
        .collect()
}

fn g2_points(raw: &[u8]) -> Result<Vec<G2Affine>> {
    raw.par_chunks_exact(128)
        .with_min_len(1 << 9)
        .map(g2)
        .collect()
}

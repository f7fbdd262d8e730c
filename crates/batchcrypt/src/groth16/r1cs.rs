//! circom's constraint system (`.r1cs`): section 1 the header (field, wire counts), section 2 the
//! constraints, each three linear combinations A, B, C as (wire, coefficient) terms with
//! coefficients little-endian in standard form; A·w × B·w = C·w for a satisfying witness w.

use super::binfile::BinFile;
use super::wtns::field;
use super::zkey::bigint;
use crate::error::{Error, Result};
use ark_ff::{BigInteger, PrimeField};

const WHAT: &str = "constraint system (.r1cs)";

/// A linear combination: (wire, coefficient) terms.
pub type Combination<F> = Vec<(u32, F)>;

/// A rank-1 constraint system over the field `F` (a curve's `Fr`).
pub struct R1cs<F = crate::bn254::Fr> {
    /// Wires, the constant 1 included (the witness's length).
    pub n_wires: usize,
    /// Public outputs, then public inputs, follow the constant.
    pub n_public: usize,
    /// How many of the public signals are outputs (the rest are public inputs).
    pub n_outputs: usize,
    /// Private inputs, which follow the public signals.
    pub n_private_inputs: usize,
    /// (A, B, C) per constraint.
    pub constraints: Vec<[Combination<F>; 3]>,
}

impl<F: PrimeField> R1cs<F> {
    pub fn read(path: impl AsRef<std::path::Path>) -> Result<Self> {
        let path = path.as_ref();
        let data = crate::backend::cpu::read_file(path).map_err(|e| {
            Error::invalid(format!(
                "cannot read constraint system {}: {e}",
                path.display()
            ))
        })?;
        Self::parse(&data)
    }

    pub fn parse(data: &[u8]) -> Result<Self> {
        let file = BinFile::parse(data, b"r1cs", 1, WHAT)?;
        let mut h = file.section(1)?;
        let (n8, want) = field::<F>();
        if h.count()? != n8 || h.bytes(n8)? != &want[..] {
            return Err(Error::invalid(format!(
                "the constraint system is not over the expected scalar field ({}-bit r); compiled for another curve (circom --prime)?",
                F::MODULUS_BIT_SIZE
            )));
        }
        let n_wires = h.count()?;
        let n_outputs = h.count()?;
        let n_public = n_outputs + h.count()?; // outputs, public inputs
        let n_private_inputs = h.count()?;
        let _labels = h.u64()?;
        let n_constraints = h.count()?;
        h.finish("the header")?;
        if n_wires == 0 || n_public + n_private_inputs >= n_wires {
            return Err(Error::Corrupt(format!(
                "{WHAT}: {n_public} public signals for {n_wires} wires"
            )));
        }
        let mut s = file.section(2)?;
        let mut constraints = Vec::with_capacity(n_constraints.min(s.remaining() / 12));
        for c in 0..n_constraints {
            let mut lc = || -> Result<Combination<F>> {
                let terms = s.count()?;
                if terms > s.remaining() / (4 + n8) {
                    return Err(Error::Corrupt(format!(
                        "{WHAT} is truncated in constraint {c}"
                    )));
                }
                (0..terms)
                    .map(|_| {
                        let wire = s.u32()?;
                        let v = F::from_bigint(bigint::<F>(s.bytes(n8)?));
                        match v {
                            Some(v) if (wire as usize) < n_wires => Ok((wire, v)),
                            _ => Err(Error::Corrupt(format!(
                                "{WHAT}: constraint {c} has a wire or coefficient out of range"
                            ))),
                        }
                    })
                    .collect()
            };
            constraints.push([lc()?, lc()?, lc()?]);
        }
        s.finish("the constraints")?;
        // The wire-to-label map holds one entry per wire: it bounds the wire count by the file's
        // size (a header may claim any count, and setup and witnesses are sized by it).
        file.section(3)?
            .items(n_wires, 8, "the wire-to-label map")?;
        Ok(R1cs {
            n_wires,
            n_public,
            n_outputs,
            n_private_inputs,
            constraints,
        })
    }

    /// The file as circom writes it: the constraints (section 2) first, then the header, then
    /// the identity map from wires to labels (section 3).
    pub fn to_bytes(&self) -> Vec<u8> {
        let count = |out: &mut Vec<u8>, n: usize| out.extend_from_slice(&(n as u32).to_le_bytes());
        let (n8, modulus) = field::<F>();
        let mut header = Vec::with_capacity(32 + n8);
        count(&mut header, n8);
        header.extend_from_slice(&modulus);
        for n in [
            self.n_wires,
            self.n_outputs,
            self.n_public - self.n_outputs,
            self.n_private_inputs,
        ] {
            count(&mut header, n);
        }
        header.extend_from_slice(&(self.n_wires as u64).to_le_bytes()); // labels
        count(&mut header, self.constraints.len());
        let terms: usize = self.constraints.iter().flatten().map(Vec::len).sum();
        let mut body = Vec::with_capacity(12 * self.constraints.len() + (4 + n8) * terms);
        for lc in self.constraints.iter().flatten() {
            count(&mut body, lc.len());
            for (wire, v) in lc {
                body.extend_from_slice(&wire.to_le_bytes());
                body.extend_from_slice(&v.into_bigint().to_bytes_le());
            }
        }
        let labels = (0..self.n_wires as u64)
            .flat_map(u64::to_le_bytes)
            .collect();
        super::binfile::write(b"r1cs", 1, &[(2, body), (1, header), (3, labels)])
    }

    /// The first constraint `w` does not satisfy, if any (`w` as long as the wires).
    pub fn unsatisfied(&self, w: &[F]) -> Option<usize> {
        let eval = |lc: &Combination<F>| -> F { lc.iter().map(|&(s, v)| v * w[s as usize]).sum() };
        self.constraints
            .iter()
            .position(|[a, b, c]| eval(a) * eval(b) != eval(c))
    }
}

//! circom's witness file (`.wtns`, written by the circuit's witness generator or
//! `snarkjs wtns calculate`): section 1 holds the field (n8, the prime) and the count, section 2
//! the values, little-endian, in standard (not Montgomery) form. Signal 0 is the constant 1.

use super::binfile::BinFile;
use super::zkey::bigint;
use crate::bn254::Fr;
use crate::error::{Error, Result};
use ark_ff::{BigInteger, One, PrimeField};
use rayon::prelude::*;

const WHAT: &str = "witness (.wtns)";

/// A full assignment of a circuit's signals: 1, the public signals, then the private ones.
pub struct Witness {
    pub values: Vec<Fr>,
}

impl Witness {
    pub fn read(path: impl AsRef<std::path::Path>) -> Result<Self> {
        let path = path.as_ref();
        let data = std::fs::read(path)
            .map_err(|e| Error::invalid(format!("cannot read witness {}: {e}", path.display())))?;
        Self::parse(&data)
    }

    pub fn parse(data: &[u8]) -> Result<Self> {
        let file = BinFile::parse(data, b"wtns", 2, WHAT)?;
        let mut h = file.section(1)?;
        let n8 = h.count()?;
        if n8 != 32 || h.bytes(32)? != <Fr as PrimeField>::MODULUS.to_bytes_le() {
            return Err(Error::invalid(
                "the witness is not over BN254's scalar field (circom --prime bn128)",
            ));
        }
        let n = h.count()?;
        h.finish("the witness header")?;
        let raw = file.section(2)?.items(n, 32, "the witness values")?;
        let values: Vec<Fr> = raw
            .par_chunks_exact(32)
            .with_min_len(1 << 12)
            .map(|b| {
                Fr::from_bigint(bigint(b))
                    .ok_or_else(|| Error::Corrupt(format!("{WHAT}: a value is not below r")))
            })
            .collect::<Result<_>>()?;
        if values.first() != Some(&Fr::one()) {
            return Err(Error::Corrupt(format!(
                "{WHAT}: signal 0 must be the constant 1"
            )));
        }
        Ok(Witness { values })
    }

    /// The file as circom's witness generators write it.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut header = Vec::with_capacity(40);
        header.extend_from_slice(&32u32.to_le_bytes());
        header.extend_from_slice(&<Fr as PrimeField>::MODULUS.to_bytes_le());
        header.extend_from_slice(&(self.values.len() as u32).to_le_bytes());
        let values = self
            .values
            .iter()
            .flat_map(|v| v.into_bigint().to_bytes_le())
            .collect();
        super::binfile::write(b"wtns", 2, &[(1, header), (2, values)])
    }
}

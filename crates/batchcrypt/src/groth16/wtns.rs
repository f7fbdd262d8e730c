//! circom's witness file (`.wtns`, written by the circuit's witness generator or
//! `snarkjs wtns calculate`): section 1 holds the field (n8, the prime) and the count, section 2
//! the values, little-endian, in standard (not Montgomery) form. Signal 0 is the constant 1.

use super::binfile::BinFile;
use super::zkey::bigint;
use crate::error::{Error, Result};
use ark_ff::{BigInteger, PrimeField};

const WHAT: &str = "witness (.wtns)";

/// A full assignment of a circuit's signals over the field `F` (a curve's `Fr`): 1, the public
/// signals, then the private ones.
pub struct Witness<F = crate::bn254::Fr> {
    pub values: Vec<F>,
}

impl<F: PrimeField> Witness<F> {
    pub fn read(path: impl AsRef<std::path::Path>) -> Result<Self> {
        let path = path.as_ref();
        let data = crate::backend::cpu::read_file(path)
            .map_err(|e| Error::invalid(format!("cannot read witness {}: {e}", path.display())))?;
        Self::parse(&data)
    }

    pub fn parse(data: &[u8]) -> Result<Self> {
        let file = BinFile::parse(data, b"wtns", 2, WHAT)?;
        let mut h = file.section(1)?;
        let (n8, want) = field::<F>();
        if h.count()? != n8 || h.bytes(n8)? != &want[..] {
            return Err(Error::invalid(format!(
                "the witness is not over the scalar field of the proving key's curve ({}-bit r); a witness of a circuit compiled for another curve (circom --prime)?",
                F::MODULUS_BIT_SIZE
            )));
        }
        let n = h.count()?;
        h.finish("the witness header")?;
        let raw = file.section(2)?.items(n, n8, "the witness values")?;
        let values: Vec<F> = crate::backend::cpu::try_par_map(
            n,
            |i| F::from_bigint(bigint::<F>(&raw[i * n8..(i + 1) * n8])),
            F::ZERO,
        )
        .map_err(|i| Error::Corrupt(format!("{WHAT}: value {i} is not below r")))?;
        if values.first() != Some(&F::ONE) {
            return Err(Error::Corrupt(format!(
                "{WHAT}: signal 0 must be the constant 1"
            )));
        }
        Ok(Witness { values })
    }

    /// The file as circom's witness generators write it.
    pub fn to_bytes(&self) -> Vec<u8> {
        let (n8, modulus) = field::<F>();
        let mut header = Vec::with_capacity(8 + n8);
        header.extend_from_slice(&(n8 as u32).to_le_bytes());
        header.extend_from_slice(&modulus);
        header.extend_from_slice(&(self.values.len() as u32).to_le_bytes());
        let values = self
            .values
            .iter()
            .flat_map(|v| v.into_bigint().to_bytes_le())
            .collect();
        super::binfile::write(b"wtns", 2, &[(1, header), (2, values)])
    }
}

/// A field's size in circom's files (whole 64-bit words) and its modulus, little-endian.
pub(crate) fn field<F: PrimeField>() -> (usize, Vec<u8>) {
    let m = F::MODULUS.to_bytes_le();
    (m.len(), m)
}

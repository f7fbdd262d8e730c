//! The pairing curves Groth16 proves over, as parameters: BN254 (snarkjs's "bn128", circom's
//! default prime) and BLS12-381 ("bls12381", `circom --prime bls12381`). A curve is its arkworks
//! pairing, its two MSM groups, its scalar field's NTT, and the names snarkjs gives it.

use crate::msm::{Affine, Group, Limbs, Projective};
use crate::with_curve;
use ark_ec::pairing::Pairing;
use ark_ec::short_weierstrass::SWCurveConfig;
use ark_ff::{BigInteger, PrimeField};

/// A pairing curve of circom/snarkjs circuits (implemented by arkworks' pairing types:
/// `groth16::ProvingKey<bn254::Bn254>`).
pub trait Curve: Send + Sync + Copy + Eq + std::fmt::Debug + 'static {
    /// The scalar field: the circuit's field, the witness's.
    type Fr: crate::ntt::Field;
    /// The base field of G1 (G2's is its quadratic extension).
    type Fq: PrimeField + Limbs;
    /// G1 and G2 as MSM groups.
    type G1: Group<ScalarField = Self::Fr> + SWCurveConfig<BaseField = Self::Fq>;
    type G2: Group<ScalarField = Self::Fr>;
    /// arkworks' pairing on these groups.
    type Pairing: Pairing<
        ScalarField = Self::Fr,
        G1Affine = Affine<Self::G1>,
        G2Affine = Affine<Self::G2>,
        G1 = Projective<Self::G1>,
        G2 = Projective<Self::G2>,
    >;
    /// snarkjs's name of the curve (the `curve` of its JSON files, its `ptau` argument).
    const SNARKJS: &'static str;
    /// The name people use, for messages ("BN254").
    const NAME: &'static str;
}

/// Bytes of a base field element in snarkjs's files (n8q: 32 on BN254, 48 on BLS12-381).
pub fn n8q<C: Curve>() -> usize {
    4 * <C::Fq as Limbs>::WORDS
}

/// Bytes of a scalar in snarkjs's and circom's files (n8r: 32 on both).
pub fn n8r<C: Curve>() -> usize {
    4 * <C::Fr as Limbs>::WORDS
}

macro_rules! curve {
    ($pairing:ty, $m:ident, $snarkjs:expr, $name:expr) => {
        impl Curve for $pairing {
            type Fr = crate::$m::Fr;
            type Fq = crate::$m::Fq;
            type G1 = crate::$m::G1;
            type G2 = crate::$m::G2;
            type Pairing = $pairing;
            const SNARKJS: &'static str = $snarkjs;
            const NAME: &'static str = $name;
        }
    };
}

// snarkjs's names are circom's `--prime` names too.
curve!(crate::bn254::Bn254, bn254, "bn128", "BN254");
curve!(
    crate::bls12_381::Bls12_381,
    bls12_381,
    "bls12381",
    "BLS12-381"
);

/// A curve named at run time (a file's, or a user's choice), for applications that serve both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CurveId {
    Bn254,
    Bls12_381,
}

impl CurveId {
    /// The curve of a snarkjs or circom file (`.zkey`, `.wtns` or `.r1cs`), from the scalar
    /// field its header names.
    pub fn of_bytes(data: &[u8]) -> crate::error::Result<CurveId> {
        use super::binfile::BinFile;
        use crate::error::Error;
        let magic = data.get(..4).unwrap_or_default();
        let (file, section, what) = match magic {
            b"zkey" => (
                BinFile::parse(data, b"zkey", 1, "proving key (.zkey)")?,
                2,
                "proving key",
            ),
            b"wtns" => (
                BinFile::parse(data, b"wtns", 2, "witness (.wtns)")?,
                1,
                "witness",
            ),
            b"r1cs" => (
                BinFile::parse(data, b"r1cs", 1, "constraint system (.r1cs)")?,
                1,
                "constraint system",
            ),
            _ => {
                return Err(Error::Corrupt(
                    "not a snarkjs or circom file (.zkey, .wtns, .r1cs): unknown magic".into(),
                ))
            }
        };
        let mut h = file.section(section)?;
        if magic == b"zkey" {
            // The Groth16 header holds q first, then r.
            let n8q = h.count()?;
            h.bytes(n8q)?;
        }
        let n8 = h.count()?;
        let prime = h.bytes(n8)?;
        [CurveId::Bn254, CurveId::Bls12_381]
            .into_iter()
            .find(|c| with_curve!(*c, C => prime == &<C as Curve>::Fr::MODULUS.to_bytes_le()[..]))
            .ok_or_else(|| {
                Error::invalid(format!(
                    "the {what}'s field is neither BN254's (circom --prime bn128) nor BLS12-381's (--prime bls12381)"
                ))
            })
    }

    /// [`CurveId::of_bytes`] of the file at `path`.
    pub fn of_file(path: impl AsRef<std::path::Path>) -> crate::error::Result<CurveId> {
        let path = path.as_ref();
        let data = std::fs::read(path)
            .map_err(|e| crate::error::Error::io(e, format!("reading {}", path.display())))?;
        CurveId::of_bytes(&data)
    }

    /// snarkjs's name ("bn128", "bls12381").
    pub fn snarkjs(self) -> &'static str {
        with_curve!(self, C => <C as Curve>::SNARKJS)
    }

    /// From snarkjs's name or the usual one ("bn128", "bn254", "bls12381", "bls12-381", ...).
    pub fn parse(name: &str) -> Option<CurveId> {
        match name.to_ascii_lowercase().replace(['-', '_'], "").as_str() {
            "bn128" | "bn254" | "altbn128" => Some(CurveId::Bn254),
            "bls12381" => Some(CurveId::Bls12_381),
            _ => None,
        }
    }
}

impl std::fmt::Display for CurveId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(with_curve!(*self, C => <C as Curve>::NAME))
    }
}

/// Runs `$body` with `$C` the curve type of the [`CurveId`] `$id`: applications that take
/// either curve at run time call the generic library through it.
#[macro_export]
macro_rules! with_curve {
    ($id:expr, $C:ident => $body:expr) => {
        match $id {
            $crate::groth16::CurveId::Bn254 => {
                type $C = $crate::bn254::Bn254;
                $body
            }
            $crate::groth16::CurveId::Bls12_381 => {
                type $C = $crate::bls12_381::Bls12_381;
                $body
            }
        }
    };
}

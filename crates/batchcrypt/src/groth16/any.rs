//! Groth16 over whichever curve a file names: for applications (the CLI, the service, Python)
//! that take circuits of both curves at run time and speak snarkjs's files and JSON.

use super::{Curve, CurveId, Proof, Proved, ProvingKey, Stage, VerifyingKey, Witness};
use crate::bls12_381::Bls12_381;
use crate::bn254::Bn254;
use crate::error::{Error, Result};
use crate::Engine;

/// A proving key over either curve, as a `.zkey` file holds it.
#[allow(clippy::large_enum_variant)] // a few keys per process, each megabytes behind its vectors
pub enum AnyProvingKey {
    Bn254(ProvingKey<Bn254>),
    Bls12_381(ProvingKey<Bls12_381>),
}

/// Runs `$e` with `$k` bound to the key of either variant.
macro_rules! each_key {
    ($key:expr, $k:ident => $e:expr) => {
        match $key {
            AnyProvingKey::Bn254($k) => $e,
            AnyProvingKey::Bls12_381($k) => $e,
        }
    };
}

/// A proof as snarkjs writes it, and how it was made.
pub struct ProvedJson {
    /// proof.json
    pub proof: String,
    /// public.json
    pub public: String,
    pub stages: Vec<Stage>,
}

impl<C: Curve> From<Proved<C>> for ProvedJson {
    fn from(p: Proved<C>) -> Self {
        ProvedJson {
            proof: p.proof.to_json(),
            public: super::public_json(&p.public),
            stages: p.stages,
        }
    }
}

impl AnyProvingKey {
    /// A `.zkey` of either curve (the curve read from its header).
    pub fn parse(data: &[u8]) -> Result<Self> {
        Ok(match CurveId::of_bytes(data)? {
            CurveId::Bn254 => AnyProvingKey::Bn254(ProvingKey::parse(data)?),
            CurveId::Bls12_381 => AnyProvingKey::Bls12_381(ProvingKey::parse(data)?),
        })
    }

    pub fn read(path: impl AsRef<std::path::Path>) -> Result<Self> {
        Self::parse(&super::zkey::read_file(path.as_ref())?)
    }

    pub fn curve(&self) -> CurveId {
        match self {
            AnyProvingKey::Bn254(_) => CurveId::Bn254,
            AnyProvingKey::Bls12_381(_) => CurveId::Bls12_381,
        }
    }

    /// Signals, the constant 1 included (the witness's length).
    pub fn n_vars(&self) -> usize {
        each_key!(self, k => k.n_vars)
    }

    /// Public signals after the constant.
    pub fn n_public(&self) -> usize {
        each_key!(self, k => k.n_public)
    }

    /// The evaluation domain's size.
    pub fn domain_size(&self) -> usize {
        each_key!(self, k => k.domain_size)
    }

    /// See [`ProvingKey::with_precomputation`].
    pub fn with_precomputation(self, copies: u32) -> Self {
        match self {
            AnyProvingKey::Bn254(k) => AnyProvingKey::Bn254(k.with_precomputation(copies)),
            AnyProvingKey::Bls12_381(k) => AnyProvingKey::Bls12_381(k.with_precomputation(copies)),
        }
    }

    /// See [`ProvingKey::device_bytes`].
    pub fn device_bytes(&self) -> u64 {
        each_key!(self, k => k.device_bytes())
    }

    /// See [`ProvingKey::proof_device_bytes`].
    pub fn proof_device_bytes(&self) -> u64 {
        each_key!(self, k => k.proof_device_bytes())
    }

    /// See [`ProvingKey::release_device`].
    pub fn release_device(&self) {
        each_key!(self, k => k.release_device())
    }

    /// Checks that `witness` (a `.wtns` file's bytes) is a witness of this key's circuit: of its
    /// curve, with its number of signals (whether it satisfies the circuit shows when proving).
    pub fn check_witness(&self, witness: &[u8]) -> Result<()> {
        each_key!(self, k => check_signals(k.n_vars, &k.parse_witness(witness)?))
    }

    /// A proof of the witness in `witness` (a `.wtns` file's bytes, of this key's curve).
    pub fn prove<R: rand::Rng + ?Sized>(
        &self,
        engine: &Engine,
        witness: &[u8],
        rng: &mut R,
    ) -> Result<ProvedJson> {
        each_key!(self, k => Ok(engine.groth16().prove(k, &k.parse_witness(witness)?, rng)?.into()))
    }

    /// Whether `proof` (proof.json) verifies for `public` (public.json) under this key.
    pub fn verify(&self, public: &str, proof: &str) -> Result<bool> {
        each_key!(self, k => verify_with(&k.vk, public, proof))
    }
}

impl<C: Curve> ProvingKey<C> {
    /// A `.wtns` file's bytes as a witness over this key's curve (an error naming the key's
    /// curve where the witness is of another).
    pub fn parse_witness(&self, witness: &[u8]) -> Result<Witness<C::Fr>> {
        Witness::parse(witness).map_err(|e| match e {
            Error::InvalidInput(m) => {
                Error::invalid(format!("{m} (the proving key is over {})", C::NAME))
            }
            e => e,
        })
    }
}

/// The witness has as many signals as the key's circuit.
pub(super) fn check_signals<F>(n_vars: usize, w: &Witness<F>) -> Result<()> {
    if w.values.len() != n_vars {
        return Err(Error::invalid(format!(
            "the witness has {} signals but the proving key's circuit has {n_vars}: they are of different circuits",
            w.values.len()
        )));
    }
    Ok(())
}

fn verify_with<C: Curve>(vk: &VerifyingKey<C>, public: &str, proof: &str) -> Result<bool> {
    super::verify(
        vk,
        &super::public_from_json::<C::Fr>(public)?,
        &Proof::from_json(proof)?,
    )
}

/// Whether `proof` (snarkjs's proof.json) verifies for `public` (public.json) under the
/// verification key `vk` (verification_key.json), on the curve the key names.
pub fn verify_json(vk: &str, public: &str, proof: &str) -> Result<bool> {
    let v: serde_json::Value = serde_json::from_str(vk)
        .map_err(|e| Error::invalid(format!("verification_key.json is not JSON: {e}")))?;
    let name = v["curve"].as_str().unwrap_or_default();
    let curve = CurveId::parse(name).ok_or_else(|| {
        Error::invalid(format!(
            "verification_key.json is for the curve \"{name}\"; batchcrypt verifies on bn128 and bls12381"
        ))
    })?;
    crate::with_curve!(curve, C => verify_with(&VerifyingKey::<C>::from_json(vk)?, public, proof))
}

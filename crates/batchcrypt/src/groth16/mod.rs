//! Groth16 proofs for circom/snarkjs circuits over BN254: reads snarkjs's proving key (`.zkey`)
//! and circom's witness (`.wtns`), and writes `proof.json` and `public.json` as snarkjs does, so
//! `snarkjs groth16 verify` and the Solidity verifiers it exports accept them.
//!
//! The prover follows snarkjs's algorithm step for step, with the heavy steps on the engine:
//! 1. A·w and B·w on the evaluation domain (the zkey holds only A and B; C·w = (A·w)∘(B·w)
//!    there for a satisfying witness);
//! 2. each of A, B, C interpolated (inverse NTT) and evaluated on the coset of odd powers of the
//!    2n-th root of unity (coset NTT): H = A·B − C there. The zkey's H query already holds the
//!    Lagrange bases of those points divided by δ, so no division by the vanishing polynomial;
//! 3. five MSMs: A, B (in G1 and G2) and C over the witness, H over the quotient's values;
//! 4. the blinding with fresh r and s.
//!
//! Every proof is checked (one pairing product) before it is returned: a witness that does not
//! satisfy the circuit, or a proving key and witness of different circuits, is an error, never a
//! proof that does not verify.

mod binfile;
mod r1cs;
mod service;
mod setup;
mod wtns;
mod zkey;

pub use r1cs::R1cs;
pub use service::{ProverService, ServiceConfig, Ticket};
pub use setup::setup;
pub use wtns::Witness;
pub use zkey::ProvingKey;

use crate::backend::Backend;
use crate::bn254::{Fq2, Fr, G1Affine, G1Projective, G2Affine, G2Projective};
use crate::error::{Error, Result};
use crate::ntt::Ntt;
use crate::Engine;
use ark_ec::pairing::Pairing;
use ark_ec::{AffineRepr, CurveGroup};
use ark_ff::{AdditiveGroup, One, PrimeField, UniformRand, Zero};
use rayon::prelude::*;
use std::time::Instant;

/// The provers' large vectors (the domain's evaluations, the quotient), reused across proofs.
static SCRATCH: crate::memory::VecPool<Fr> = crate::memory::VecPool::new(64);

/// The verification key: the points of snarkjs's `verification_key.json`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyingKey {
    pub alpha_g1: G1Affine,
    pub beta_g2: G2Affine,
    pub gamma_g2: G2Affine,
    pub delta_g2: G2Affine,
    /// One point for the constant and one per public signal.
    pub ic: Vec<G1Affine>,
}

/// A Groth16 proof (snarkjs's pi_a, pi_b, pi_c).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proof {
    pub a: G1Affine,
    pub b: G2Affine,
    pub c: G1Affine,
}

/// One step of a proof, for timings and traces.
#[derive(Clone, Debug)]
pub struct Stage {
    pub name: &'static str,
    /// The engine backend that ran it (`None`: host code outside the dispatcher).
    pub backend: Option<Backend>,
    /// Start, seconds from the beginning of the proof.
    pub start: f64,
    pub seconds: f64,
}

/// A proof, its public signals and how it was made.
pub struct Proved {
    pub proof: Proof,
    /// The public signals (public.json), in the circuit's order.
    pub public: Vec<Fr>,
    pub stages: Vec<Stage>,
}

/// Groth16 proving through an [`Engine`] (`engine.groth16()`).
pub struct Groth16<'e> {
    pub(crate) engine: &'e Engine,
}

/// Stage timings, from one origin.
struct Clock {
    origin: Instant,
    stages: Vec<Stage>,
}

impl Clock {
    fn run<T>(
        &mut self,
        name: &'static str,
        f: impl FnOnce() -> Result<(T, Option<Backend>)>,
    ) -> Result<T> {
        let t = Instant::now();
        let (value, backend) = f()?;
        self.stages.push(Stage {
            name,
            backend,
            start: (t - self.origin).as_secs_f64(),
            seconds: t.elapsed().as_secs_f64(),
        });
        Ok(value)
    }
}

impl Groth16<'_> {
    /// A proof that `witness` satisfies `pk`'s circuit, blinded with randomness from `rng`.
    pub fn prove<R: rand::Rng + ?Sized>(
        &self,
        pk: &ProvingKey,
        witness: &Witness,
        rng: &mut R,
    ) -> Result<Proved> {
        let w = &witness.values;
        if w.len() != pk.n_vars {
            return Err(Error::invalid(format!(
                "the witness has {} signals but the proving key's circuit has {}: they are of different circuits",
                w.len(),
                pk.n_vars
            )));
        }
        let n = pk.domain_size;
        let mut clock = Clock {
            origin: Instant::now(),
            stages: Vec::new(),
        };

        // [A·w | B·w | C·w] on the domain, one buffer so the NTTs take all three at once.
        let mut abc = clock.run("evaluate A, B, C", || {
            let mut abc = SCRATCH.take(3 * n, Fr::ZERO);
            pk.evaluate(w, &mut abc);
            Ok((abc, None))
        })?;
        let odd = crate::ntt::root_of_unity::<Fr>(2 * n as u64)
            .expect("2n divides r - 1, checked on load");
        clock.run("NTTs (A, B, C to the odd coset)", || {
            let steps = [Ntt::inverse(n), Ntt::forward(n).on_coset(odd)];
            let out = self.engine.ntts(&mut abc, &steps)?;
            Ok(((), Some(out.backend)))
        })?;
        let h = clock.run("quotient A·B − C", || {
            let (a, rest) = abc.split_at(n);
            let (b, c) = rest.split_at(n);
            let mut h = SCRATCH.take(n, Fr::ZERO);
            (h.as_mut_slice(), a, b, c)
                .into_par_iter()
                .with_min_len(1 << 12)
                .for_each(|(h, a, b, c)| *h = *a * b - c);
            Ok((h, None))
        })?;
        SCRATCH.give(abc);

        let msm1 = |clock: &mut Clock, name, bases, scalars: &[Fr]| {
            clock.run(name, || {
                let out = self.engine.msm(bases, scalars)?;
                Ok((out.value, Some(out.backend)))
            })
        };
        let a = msm1(&mut clock, "MSM A", &pk.a_query, w)?;
        let b1 = msm1(&mut clock, "MSM B (G1)", &pk.b_g1_query, w)?;
        let b2 = clock.run("MSM B (G2)", || {
            let out = self.engine.msm(&pk.b_g2_query, w)?;
            Ok((out.value, Some(out.backend)))
        })?;
        let c = msm1(&mut clock, "MSM C", &pk.c_query, &w[pk.n_public + 1..])?;
        let hc = msm1(&mut clock, "MSM H", &pk.h_query, &h)?;
        SCRATCH.give(h);

        let proved = clock.run("blind and check", || {
            let (r, s) = (Fr::rand(rng), Fr::rand(rng));
            let vk = &pk.vk;
            let pi_a = a + vk.alpha_g1 + pk.delta_g1 * r;
            let pi_b: G2Projective = b2 + vk.beta_g2 + vk.delta_g2 * s;
            let b1: G1Projective = b1 + pk.beta_g1 + pk.delta_g1 * s;
            let pi_c = c + hc + pi_a * s + b1 * r - pk.delta_g1 * (r * s);
            let proof = Proof {
                a: pi_a.into_affine(),
                b: pi_b.into_affine(),
                c: pi_c.into_affine(),
            };
            let public = w[1..=pk.n_public].to_vec();
            if !verify(vk, &public, &proof)? {
                return Err(Error::invalid(
                    "the proof does not verify: the witness does not satisfy the proving key's circuit (a witness of another circuit, or of other inputs than the constraints allow)",
                ));
            }
            Ok(((proof, public), None))
        })?;
        Ok(Proved {
            proof: proved.0,
            public: proved.1,
            stages: clock.stages,
        })
    }
}

/// Whether `proof` verifies for `public` under `vk`: e(A, B) = e(α, β) · e(IC(public), γ) · e(C, δ).
/// Points off the curve or out of the group make it false; a public input count that does not
/// match the key is an error.
pub fn verify(vk: &VerifyingKey, public: &[Fr], proof: &Proof) -> Result<bool> {
    if public.len() + 1 != vk.ic.len() {
        return Err(Error::invalid(format!(
            "{} public signals for a verification key that takes {}",
            public.len(),
            vk.ic.len() - 1
        )));
    }
    let g2_ok = |p: &G2Affine| p.is_on_curve() && p.is_in_correct_subgroup_assuming_on_curve();
    if !proof.a.is_on_curve() || !proof.c.is_on_curve() || !g2_ok(&proof.b) {
        return Ok(false);
    }
    let vk_x = public
        .iter()
        .zip(&vk.ic[1..])
        .fold(G1Projective::from(vk.ic[0]), |acc, (x, p)| acc + *p * x);
    let lhs = ark_bn254::Bn254::multi_pairing(
        [
            (-proof.a.into_group()).into_affine(),
            vk.alpha_g1,
            vk_x.into_affine(),
            proof.c,
        ],
        [proof.b, vk.beta_g2, vk.gamma_g2, vk.delta_g2],
    );
    Ok(lhs.is_zero())
}

/// A decimal string of an Fq or Fr element (snarkjs's JSON numbers).
fn decimal<F: PrimeField>(x: &F) -> String {
    x.into_bigint().to_string()
}

fn g1_json(p: &G1Affine) -> serde_json::Value {
    match p.xy() {
        Some((x, y)) => serde_json::json!([decimal(&x), decimal(&y), "1"]),
        None => serde_json::json!(["0", "1", "0"]),
    }
}

fn fq2_json(x: &Fq2) -> serde_json::Value {
    serde_json::json!([decimal(&x.c0), decimal(&x.c1)])
}

/// An Fq or Fr element from a decimal string, checked below the modulus.
fn from_decimal<F: PrimeField>(v: &serde_json::Value) -> Result<F> {
    let s = v
        .as_str()
        .ok_or_else(|| Error::invalid("a number in proof.json is not a decimal string"))?;
    let n: num_bigint::BigUint = s
        .parse()
        .map_err(|_| Error::invalid(format!("\"{s}\" is not a decimal number")))?;
    if n >= F::MODULUS.into() {
        return Err(Error::invalid(format!(
            "{s} is not below the field's modulus"
        )));
    }
    Ok(F::from(n))
}

/// The elements of a JSON array of `len` decimal strings.
fn decimals<F: PrimeField>(v: &serde_json::Value, len: usize, what: &str) -> Result<Vec<F>> {
    match v.as_array() {
        Some(a) if a.len() == len => a.iter().map(from_decimal).collect(),
        _ => Err(Error::invalid(format!("{what}: expected {len} numbers"))),
    }
}

/// A point from snarkjs's projective triple [x, y, z] with z = 1 (or the point at infinity).
fn g1_from_json(v: &serde_json::Value, what: &str) -> Result<G1Affine> {
    let c = decimals::<crate::bn254::Fq>(v, 3, what)?;
    if c[2].is_zero() {
        return Ok(G1Affine::identity());
    }
    let p = G1Affine::new_unchecked(c[0], c[1]);
    if !c[2].is_one() || !p.is_on_curve() {
        return Err(Error::invalid(format!("{what} is not a point of G1")));
    }
    Ok(p)
}

fn g2_from_json(v: &serde_json::Value, what: &str) -> Result<G2Affine> {
    let c = match v.as_array() {
        Some(a) if a.len() == 3 => a
            .iter()
            .map(|e| decimals::<crate::bn254::Fq>(e, 2, what).map(|c| Fq2::new(c[0], c[1])))
            .collect::<Result<Vec<_>>>()?,
        _ => return Err(Error::invalid(format!("{what}: expected 3 coordinates"))),
    };
    if c[2].is_zero() {
        return Ok(G2Affine::identity());
    }
    let p = G2Affine::new_unchecked(c[0], c[1]);
    if !c[2].is_one() || !p.is_on_curve() || !p.is_in_correct_subgroup_assuming_on_curve() {
        return Err(Error::invalid(format!("{what} is not a point of G2")));
    }
    Ok(p)
}

/// A snarkjs JSON file of the Groth16 protocol (`file` names it in errors, `what` it holds).
fn groth16_json(text: &str, file: &str, what: &str) -> Result<serde_json::Value> {
    let v: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| Error::invalid(format!("{file} is not JSON: {e}")))?;
    if v["protocol"] != "groth16" {
        return Err(Error::invalid(format!("{file} is not a Groth16 {what}")));
    }
    Ok(v)
}

impl VerifyingKey {
    /// The key from snarkjs's `verification_key.json` (`snarkjs zkey export verificationkey`),
    /// every point checked on its curve and in its group.
    pub fn from_json(text: &str) -> Result<VerifyingKey> {
        let v = groth16_json(text, "verification_key.json", "key")?;
        if v["curve"] != "bn128" {
            return Err(Error::invalid(format!(
                "verification_key.json is for the curve {}, this verifier is for bn128",
                v["curve"]
            )));
        }
        let ic = v["IC"]
            .as_array()
            .filter(|a| !a.is_empty())
            .ok_or_else(|| Error::invalid("verification_key.json: IC is not a list of points"))?
            .iter()
            .enumerate()
            .map(|(i, p)| g1_from_json(p, &format!("IC[{i}]")))
            .collect::<Result<Vec<_>>>()?;
        if v["nPublic"].as_u64() != Some(ic.len() as u64 - 1) {
            return Err(Error::invalid(format!(
                "verification_key.json: nPublic is {} but IC holds {} points",
                v["nPublic"],
                ic.len()
            )));
        }
        Ok(VerifyingKey {
            alpha_g1: g1_from_json(&v["vk_alpha_1"], "vk_alpha_1")?,
            beta_g2: g2_from_json(&v["vk_beta_2"], "vk_beta_2")?,
            gamma_g2: g2_from_json(&v["vk_gamma_2"], "vk_gamma_2")?,
            delta_g2: g2_from_json(&v["vk_delta_2"], "vk_delta_2")?,
            ic,
        })
    }
}

impl Proof {
    /// A proof from snarkjs's `proof.json` (points checked on their curve and in their group).
    pub fn from_json(text: &str) -> Result<Proof> {
        let v = groth16_json(text, "proof.json", "proof")?;
        Ok(Proof {
            a: g1_from_json(&v["pi_a"], "pi_a")?,
            b: g2_from_json(&v["pi_b"], "pi_b")?,
            c: g1_from_json(&v["pi_c"], "pi_c")?,
        })
    }

    /// snarkjs's `proof.json`.
    pub fn to_json(&self) -> String {
        let b = match self.b.xy() {
            Some((x, y)) => serde_json::json!([fq2_json(&x), fq2_json(&y), ["1", "0"]]),
            None => serde_json::json!([["0", "0"], ["1", "0"], ["0", "0"]]),
        };
        let v = serde_json::json!({
            "pi_a": g1_json(&self.a),
            "pi_b": b,
            "pi_c": g1_json(&self.c),
            "protocol": "groth16",
            "curve": "bn128",
        });
        serde_json::to_string_pretty(&v).expect("JSON of strings") + "\n"
    }
}

/// The stages of each job as a Chrome/Perfetto trace (JSON trace events): one track per job,
/// one slice per stage, named with the backend that ran it.
pub fn chrome_trace(jobs: &[(String, &[Stage])]) -> String {
    let mut events = Vec::new();
    for (tid, (job, stages)) in jobs.iter().enumerate() {
        events.push(serde_json::json!({
            "name": "thread_name", "ph": "M", "pid": 1, "tid": tid,
            "args": { "name": job },
        }));
        for s in *stages {
            events.push(serde_json::json!({
                "name": s.name, "cat": "groth16", "ph": "X", "pid": 1, "tid": tid,
                "ts": s.start * 1e6, "dur": s.seconds * 1e6,
                "args": { "backend": s.backend.map_or("host".to_string(), |b| b.to_string()) },
            }));
        }
    }
    serde_json::to_string(&serde_json::json!({ "traceEvents": events, "displayTimeUnit": "ms" }))
        .expect("JSON of numbers and strings")
}

/// Public signals from snarkjs's `public.json`.
pub fn public_from_json(text: &str) -> Result<Vec<Fr>> {
    let v: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| Error::invalid(format!("public.json is not JSON: {e}")))?;
    let a = v
        .as_array()
        .ok_or_else(|| Error::invalid("public.json is not an array"))?;
    decimals(&v, a.len(), "public.json")
}

/// snarkjs's `public.json`: the public signals as decimal strings.
pub fn public_json(public: &[Fr]) -> String {
    let v: Vec<String> = public.iter().map(decimal).collect();
    serde_json::to_string_pretty(&v).expect("JSON of strings") + "\n"
}

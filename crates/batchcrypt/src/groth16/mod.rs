//! Groth16 proofs for circom/snarkjs circuits over BN254 and BLS12-381 (any [`Curve`]): reads
//! snarkjs's proving key (`.zkey`) and circom's witness (`.wtns`), and writes `proof.json` and
//! `public.json` as snarkjs does, so `snarkjs groth16 verify` (and, on BN254, the Solidity
//! verifiers it exports) accept them. The curve is a type parameter (`ProvingKey<bls12_381::Bls12_381>`);
//! applications that take either at run time read it from the file ([`CurveId::of_file`]) and
//! call through [`crate::with_curve`].
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
//! The witness's MSMs do not wait for steps 1-2: those in G1 and the one in G2 run beside them,
//! each on a thread of its own. On the GPU the quotient's chain stays there from the witness on:
//! step 1 runs there over the key's A and B (uploaded on the first proof), and the values never
//! cross back before the quotient's MSM.
//!
//! Every proof is checked (one pairing product) before it is returned: a witness that does not
//! satisfy the circuit, or a proving key and witness of different circuits, is an error, never a
//! proof that does not verify.

mod any;
mod binfile;
mod curve;
mod r1cs;
mod service;
mod setup;
mod wtns;
mod zkey;

pub use any::{verify_json, AnyProvingKey, ProvedJson};
pub use curve::{n8q, n8r, Curve, CurveId};
pub use r1cs::R1cs;
pub use service::{ProverService, ServiceConfig, Ticket};
pub use setup::setup;
pub use wtns::Witness;
pub use zkey::ProvingKey;

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::msm::{Affine, Projective};
use crate::ntt::Ntt;
use crate::Engine;
use ark_ec::pairing::Pairing;
use ark_ec::{AffineRepr, CurveGroup};
use ark_ff::{AdditiveGroup, Field, One, PrimeField, UniformRand, Zero};
use rayon::prelude::*;
use std::time::Instant;

type G1Affine<C> = Affine<<C as Curve>::G1>;
type G2Affine<C> = Affine<<C as Curve>::G2>;
type G1Projective<C> = Projective<<C as Curve>::G1>;
type G2Projective<C> = Projective<<C as Curve>::G2>;

/// The verification key: the points of snarkjs's `verification_key.json`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyingKey<C: Curve = crate::bn254::Bn254> {
    pub alpha_g1: G1Affine<C>,
    pub beta_g2: G2Affine<C>,
    pub gamma_g2: G2Affine<C>,
    pub delta_g2: G2Affine<C>,
    /// One point for the constant and one per public signal.
    pub ic: Vec<G1Affine<C>>,
}

/// A Groth16 proof (snarkjs's pi_a, pi_b, pi_c).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proof<C: Curve = crate::bn254::Bn254> {
    pub a: G1Affine<C>,
    pub b: G2Affine<C>,
    pub c: G1Affine<C>,
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
pub struct Proved<C: Curve = crate::bn254::Bn254> {
    pub proof: Proof<C>,
    /// The public signals (public.json), in the circuit's order.
    pub public: Vec<C::Fr>,
    /// In order of their start; some overlap.
    pub stages: Vec<Stage>,
}

/// Seconds from the first of `stages` starting to the last ending (their sum counts overlapping
/// stages twice).
pub fn span(stages: &[Stage]) -> f64 {
    let start = stages.iter().map(|s| s.start).fold(f64::INFINITY, f64::min);
    let end = stages
        .iter()
        .map(|s| s.start + s.seconds)
        .fold(f64::NEG_INFINITY, f64::max);
    (end - start).max(0.0)
}

/// Groth16 proving through an [`Engine`] (`engine.groth16()`).
pub struct Groth16<'e> {
    pub(crate) engine: &'e Engine,
}

/// Stage timings, from one origin (stages of concurrent chains may overlap).
struct Clock {
    origin: Instant,
    stages: Vec<Stage>,
}

impl Clock {
    fn new(origin: Instant) -> Clock {
        Clock {
            origin,
            stages: Vec::new(),
        }
    }

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
    pub fn prove<C: Curve, R: rand::Rng + ?Sized>(
        &self,
        pk: &ProvingKey<C>,
        witness: &Witness<C::Fr>,
        rng: &mut R,
    ) -> Result<Proved<C>> {
        any::check_signals(pk.n_vars, witness)?;
        let w = &witness.values;
        let n = pk.domain_size;
        // The provers' large vectors (the domain's evaluations, the quotient), reused across
        // proofs.
        let scratch = crate::memory::VecPool::<C::Fr>::shared();
        let origin = Instant::now();
        let mut clock = Clock::new(origin);
        let (mut g1_clock, mut g2_clock) = (Clock::new(origin), Clock::new(origin));

        // Three chains meet only at the blinding: the witness's MSMs in G1, its MSM in G2, and the
        // quotient (evaluations, NTTs, A·B − C) with its MSM. They run at once, so that one
        // chain's host work and transfers overlap the others' kernels.
        let g1_msms = |clock: &mut Clock| -> Result<_> {
            // A, B and C take the witness as their scalars: one call sorts them once for the three.
            clock.run("MSMs A, B (G1), C", || {
                let out = self
                    .engine
                    .msm_many(&[&pk.a_query, &pk.b_g1_query, &pk.c_query], w)?;
                let sums: [_; 3] = out.value.try_into().expect("one sum per set of bases");
                Ok((sums, Some(out.backend)))
            })
        };
        let g2_msm = |clock: &mut Clock| -> Result<_> {
            clock.run("MSM B (G2)", || {
                let out = self.engine.msm(&pk.b_g2_query, w)?;
                Ok((out.value, Some(out.backend)))
            })
        };
        let quotient_msm = |clock: &mut Clock| -> Result<_> {
            let odd = crate::ntt::root_of_unity::<C::Fr>(2 * n as u64)
                .expect("2n divides r - 1, checked on load");
            let steps = [Ntt::inverse(n), Ntt::forward(n).on_coset(odd)];
            let plan = self.engine.ntt_plan(&steps, 3)?;
            if plan.backend.is_gpu() {
                // The whole chain on one GPU: the evaluations made there from the witness and
                // the key's A and B, the quotient left there for its MSM.
                let gpu = Some(Backend::Cuda);
                return plan.on_gpu(|| {
                    let abc = clock.run("evaluate A, B, C", || {
                        Ok((crate::ntt::gpu::products(&*pk.rows_on_gpu()?, w)?, gpu))
                    })?;
                    let polys = clock.run("NTTs (A, B, C to the odd coset)", || {
                        Ok((abc.ntts(&steps)?, gpu))
                    })?;
                    let h = clock.run("quotient A·B − C", || Ok((polys.mul_sub()?, gpu)))?;
                    clock.run("MSM H", || {
                        let hc = crate::msm::on_device(&pk.h_query, h.limbs(), h.len())?;
                        Ok((hc, gpu))
                    })
                });
            }
            // [A·w | B·w | C·w] on the domain, one buffer so the NTTs take all three at once.
            let mut abc = clock.run("evaluate A, B, C", || {
                let mut abc = scratch.take(3 * n, C::Fr::ZERO);
                pk.evaluate(w, &mut abc);
                Ok((abc, None))
            })?;
            clock.run("NTTs (A, B, C to the odd coset)", || {
                self.engine.ntts_on_cpu(&plan, &mut abc, &steps)?;
                Ok(((), Some(plan.backend)))
            })?;
            let h = clock.run("quotient A·B − C", || {
                let (a, rest) = abc.split_at(n);
                let (b, c) = rest.split_at(n);
                let mut h = scratch.take(n, C::Fr::ZERO);
                (h.as_mut_slice(), a, b, c)
                    .into_par_iter()
                    .with_min_len(1 << 12)
                    .for_each(|(h, a, b, c)| *h = *a * b - c);
                Ok((h, None))
            })?;
            scratch.give(abc);
            let hc = clock.run("MSM H", || {
                let out = self.engine.msm(&pk.h_query, &h)?;
                Ok((out.value, Some(out.backend)))
            })?;
            scratch.give(h);
            Ok(hc)
        };
        let (g1, g2, hc) = std::thread::scope(|s| {
            let g1 = s.spawn(|| g1_msms(&mut g1_clock));
            let g2 = s.spawn(|| g2_msm(&mut g2_clock));
            let hc = quotient_msm(&mut clock);
            let g1 = g1.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            let g2 = g2.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            (g1, g2, hc)
        });
        let ([a, b1, c], b2, hc) = (g1?, g2?, hc?);
        clock.stages.append(&mut g1_clock.stages);
        clock.stages.append(&mut g2_clock.stages);
        clock.stages.sort_by(|x, y| x.start.total_cmp(&y.start));

        let proved = clock.run("blind and check", || {
            let (r, s) = (C::Fr::rand(rng), C::Fr::rand(rng));
            let vk = &pk.vk;
            let pi_a = a + vk.alpha_g1 + pk.delta_g1 * r;
            let pi_b: G2Projective<C> = b2 + vk.beta_g2 + vk.delta_g2 * s;
            let b1: G1Projective<C> = b1 + pk.beta_g1 + pk.delta_g1 * s;
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
pub fn verify<C: Curve>(vk: &VerifyingKey<C>, public: &[C::Fr], proof: &Proof<C>) -> Result<bool> {
    if public.len() + 1 != vk.ic.len() {
        return Err(Error::invalid(format!(
            "{} public signals for a verification key that takes {}",
            public.len(),
            vk.ic.len() - 1
        )));
    }
    // BLS12-381's G1 has a cofactor: on the curve is not enough there.
    let g1_ok = |p: &G1Affine<C>| p.is_on_curve() && p.is_in_correct_subgroup_assuming_on_curve();
    let g2_ok = |p: &G2Affine<C>| p.is_on_curve() && p.is_in_correct_subgroup_assuming_on_curve();
    if !g1_ok(&proof.a) || !g1_ok(&proof.c) || !g2_ok(&proof.b) {
        return Ok(false);
    }
    let vk_x = public
        .iter()
        .zip(&vk.ic[1..])
        .fold(G1Projective::<C>::from(vk.ic[0]), |acc, (x, p)| {
            acc + *p * x
        });
    let lhs = C::Pairing::multi_pairing(
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

fn g1_json<C: Curve>(p: &G1Affine<C>) -> serde_json::Value {
    match p.xy() {
        Some((x, y)) => serde_json::json!([decimal(&x), decimal(&y), "1"]),
        None => serde_json::json!(["0", "1", "0"]),
    }
}

/// An Fq2 element as [c0, c1].
fn fq2_json<F: Field>(x: &F) -> serde_json::Value {
    serde_json::Value::Array(
        x.to_base_prime_field_elements()
            .map(|c| serde_json::Value::String(decimal(&c)))
            .collect(),
    )
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

/// The point of snarkjs's projective triple [x, y, z] with z = 1 (z = 0: the point at
/// infinity), checked on the curve and in the group.
fn affine_from_json<P: crate::msm::Group>(
    c: &[P::BaseField],
    what: &str,
    group: &str,
) -> Result<Affine<P>> {
    if c[2].is_zero() {
        return Ok(Affine::<P>::identity());
    }
    let p = Affine::<P>::new_unchecked(c[0], c[1]);
    if !c[2].is_one() || !p.is_on_curve() || !p.is_in_correct_subgroup_assuming_on_curve() {
        return Err(Error::invalid(format!("{what} is not a point of {group}")));
    }
    Ok(p)
}

fn g1_from_json<C: Curve>(v: &serde_json::Value, what: &str) -> Result<G1Affine<C>> {
    affine_from_json::<C::G1>(&decimals::<C::Fq>(v, 3, what)?, what, "G1")
}

/// G2's coordinates are [c0, c1] pairs.
fn g2_from_json<C: Curve>(v: &serde_json::Value, what: &str) -> Result<G2Affine<C>> {
    type Fq2<C> = <<C as Curve>::G2 as ark_ec::CurveConfig>::BaseField;
    let c = match v.as_array() {
        Some(a) if a.len() == 3 => a
            .iter()
            .map(|e| {
                let c = decimals::<<Fq2<C> as Field>::BasePrimeField>(e, 2, what)?;
                Ok(Fq2::<C>::from_base_prime_field_elems(c).expect("two coordinates"))
            })
            .collect::<Result<Vec<_>>>()?,
        _ => return Err(Error::invalid(format!("{what}: expected 3 coordinates"))),
    };
    affine_from_json::<C::G2>(&c, what, "G2")
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

/// The curve named by a snarkjs JSON file, which must be `C`.
fn check_curve<C: Curve>(v: &serde_json::Value, file: &str) -> Result<()> {
    if v["curve"] != C::SNARKJS {
        return Err(Error::invalid(format!(
            "{file} is for the curve {}, not {} ({})",
            v["curve"],
            C::SNARKJS,
            C::NAME
        )));
    }
    Ok(())
}

impl<C: Curve> VerifyingKey<C> {
    /// The key from snarkjs's `verification_key.json` (`snarkjs zkey export verificationkey`),
    /// every point checked on its curve and in its group.
    pub fn from_json(text: &str) -> Result<VerifyingKey<C>> {
        let v = groth16_json(text, "verification_key.json", "key")?;
        check_curve::<C>(&v, "verification_key.json")?;
        let ic = v["IC"]
            .as_array()
            .filter(|a| !a.is_empty())
            .ok_or_else(|| Error::invalid("verification_key.json: IC is not a list of points"))?
            .iter()
            .enumerate()
            .map(|(i, p)| g1_from_json::<C>(p, &format!("IC[{i}]")))
            .collect::<Result<Vec<_>>>()?;
        if v["nPublic"].as_u64() != Some(ic.len() as u64 - 1) {
            return Err(Error::invalid(format!(
                "verification_key.json: nPublic is {} but IC holds {} points",
                v["nPublic"],
                ic.len()
            )));
        }
        Ok(VerifyingKey {
            alpha_g1: g1_from_json::<C>(&v["vk_alpha_1"], "vk_alpha_1")?,
            beta_g2: g2_from_json::<C>(&v["vk_beta_2"], "vk_beta_2")?,
            gamma_g2: g2_from_json::<C>(&v["vk_gamma_2"], "vk_gamma_2")?,
            delta_g2: g2_from_json::<C>(&v["vk_delta_2"], "vk_delta_2")?,
            ic,
        })
    }
}

impl<C: Curve> Proof<C> {
    /// A proof from snarkjs's `proof.json` (points checked on their curve and in their group).
    pub fn from_json(text: &str) -> Result<Proof<C>> {
        let v = groth16_json(text, "proof.json", "proof")?;
        check_curve::<C>(&v, "proof.json")?;
        Ok(Proof {
            a: g1_from_json::<C>(&v["pi_a"], "pi_a")?,
            b: g2_from_json::<C>(&v["pi_b"], "pi_b")?,
            c: g1_from_json::<C>(&v["pi_c"], "pi_c")?,
        })
    }

    /// snarkjs's `proof.json`.
    pub fn to_json(&self) -> String {
        let b = match self.b.xy() {
            Some((x, y)) => serde_json::json!([fq2_json(&x), fq2_json(&y), ["1", "0"]]),
            None => serde_json::json!([["0", "0"], ["1", "0"], ["0", "0"]]),
        };
        let v = serde_json::json!({
            "pi_a": g1_json::<C>(&self.a),
            "pi_b": b,
            "pi_c": g1_json::<C>(&self.c),
            "protocol": "groth16",
            "curve": C::SNARKJS,
        });
        serde_json::to_string_pretty(&v).expect("JSON of strings") + "\n"
    }
}

/// The stages of each job as a Chrome/Perfetto trace (JSON trace events): one track per job,
/// one slice per stage, named with the backend that ran it.
pub fn chrome_trace(jobs: &[(String, &[Stage])]) -> String {
    let mut events = Vec::new();
    let mut tid = 0;
    for (job, stages) in jobs {
        // Stages that overlap (the prover's concurrent chains) go to lanes of their own: a
        // track shows nested slices only. Each lane holds the stages it ends before the next.
        let mut lane_ends: Vec<f64> = Vec::new();
        for s in *stages {
            let lane = match lane_ends.iter().position(|&end| end <= s.start + 1e-9) {
                Some(l) => l,
                None => {
                    let l = lane_ends.len();
                    lane_ends.push(0.0);
                    let name = match l {
                        0 => job.clone(),
                        _ => format!("{job} ({})", l + 1),
                    };
                    events.push(serde_json::json!({
                        "name": "thread_name", "ph": "M", "pid": 1, "tid": tid + l,
                        "args": { "name": name },
                    }));
                    l
                }
            };
            lane_ends[lane] = s.start + s.seconds;
            events.push(serde_json::json!({
                "name": s.name, "cat": "groth16", "ph": "X", "pid": 1, "tid": tid + lane,
                "ts": s.start * 1e6, "dur": s.seconds * 1e6,
                "args": { "backend": s.backend.map_or("host".to_string(), |b| b.to_string()) },
            }));
        }
        tid += lane_ends.len().max(1);
    }
    serde_json::to_string(&serde_json::json!({ "traceEvents": events, "displayTimeUnit": "ms" }))
        .expect("JSON of numbers and strings")
}

/// Public signals from snarkjs's `public.json`, elements of `F` (a curve's `Fr`).
pub fn public_from_json<F: PrimeField>(text: &str) -> Result<Vec<F>> {
    let v: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| Error::invalid(format!("public.json is not JSON: {e}")))?;
    let a = v
        .as_array()
        .ok_or_else(|| Error::invalid("public.json is not an array"))?;
    decimals(&v, a.len(), "public.json")
}

/// snarkjs's `public.json`: the public signals as decimal strings.
pub fn public_json<F: PrimeField>(public: &[F]) -> String {
    let v: Vec<String> = public.iter().map(decimal).collect();
    serde_json::to_string_pretty(&v).expect("JSON of strings") + "\n"
}

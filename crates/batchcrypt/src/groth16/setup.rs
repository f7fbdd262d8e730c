//! A one-party Groth16 setup that writes a proving key in snarkjs's conventions, for tests and
//! benchmarks of any circuit size without a powers-of-tau ceremony. The secrets (τ, α, β, γ, δ)
//! are drawn from the given generator and dropped: whoever ran it could have kept them, so keys
//! made this way must never secure anything.
//!
//! The key is what `snarkjs groth16 setup` followed by one `zkey contribute` computes, in closed
//! form from τ instead of from a ceremony's powers: the A, B queries are the wires' QAP
//! polynomials at τ (Lagrange basis of the n-th roots), the C and IC queries
//! (β·u + α·v + w)/δ and /γ, the H query the Lagrange basis of the 2n-th roots at the odd points
//! over δ, and each public signal s gets snarkjs's extra constraint A[m + s][s] = 1.

use super::binfile;
use super::r1cs::R1cs;
use super::{n8q, Curve};
use crate::error::{Error, Result};
use crate::msm::{Affine, Limbs, Projective};
use ark_ec::scalar_mul::ScalarMul;
use ark_ec::{AffineRepr, PrimeGroup};
use ark_ff::{batch_inversion, BigInteger, Field, One, PrimeField, UniformRand, Zero};
use rayon::prelude::*;

/// The bytes of a `.zkey` over the curve `C` for `r1cs`, from secrets drawn from `rng`.
pub fn setup<C: Curve, R: rand::Rng + ?Sized>(r1cs: &R1cs<C::Fr>, rng: &mut R) -> Result<Vec<u8>> {
    let m = r1cs.constraints.len();
    let n_pub = r1cs.n_public;
    let n_wires = r1cs.n_wires;
    // snarkjs: the smallest power of two that holds the constraints and one row per public
    // signal (the constant included), at least 2.
    let n = (m + n_pub + 1).next_power_of_two().max(2);
    let max = crate::ntt::max_log_size::<C::Fr>();
    if n.trailing_zeros() >= max {
        return Err(Error::invalid(format!(
            "{m} constraints need a domain of {n}: beyond {}'s largest (2^{})",
            C::NAME,
            max - 1
        )));
    }
    let nonzero = |rng: &mut R| loop {
        let x = C::Fr::rand(rng);
        if !x.is_zero() {
            return x;
        }
    };
    // τ must lie outside both domains (the Lagrange forms divide by τ − ω^i).
    let tau = loop {
        let t = C::Fr::rand(rng);
        if !t.pow([2 * n as u64]).is_one() {
            break t;
        }
    };
    let (alpha, beta, gamma, delta) = (nonzero(rng), nonzero(rng), nonzero(rng), nonzero(rng));

    // L_i(τ) = ω^i (τ^n − 1) / (n (τ − ω^i)) over the n-th roots; over the 2n-th roots at the
    // odd points for H.
    let lagrange = |size: usize, points: &mut dyn Iterator<Item = usize>| -> Vec<C::Fr> {
        let w = crate::ntt::root_of_unity::<C::Fr>(size as u64).expect("size divides 2^s");
        let k: Vec<usize> = points.collect();
        let pows: Vec<C::Fr> = k.par_iter().map(|&i| w.pow([i as u64])).collect();
        let mut den: Vec<C::Fr> = pows
            .par_iter()
            .map(|p| C::Fr::from(size as u64) * (tau - p))
            .collect();
        batch_inversion(&mut den);
        let z = tau.pow([size as u64]) - C::Fr::ONE;
        pows.par_iter().zip(den).map(|(p, d)| *p * z * d).collect()
    };
    let l = lagrange(n, &mut (0..n));
    let delta_inv = delta.inverse().expect("non-zero");
    let gamma_inv = gamma.inverse().expect("non-zero");
    let h: Vec<C::Fr> = lagrange(2 * n, &mut (0..n).map(|i| 2 * i + 1))
        .into_par_iter()
        .map(|x| x * delta_inv)
        .collect();

    // Per wire: u (A), v (B), w (C) at τ, and the coefficient list (A then B per constraint,
    // values stored as v·R² as snarkjs does).
    let (mut u, mut v, mut w) = (
        vec![C::Fr::zero(); n_wires],
        vec![C::Fr::zero(); n_wires],
        vec![C::Fr::zero(); n_wires],
    );
    // The Montgomery radix R = 2^(32 words) mod r.
    let r = C::Fr::from(2u64).pow([32 * C::Fr::WORDS as u64]);
    let mut limbs = vec![0u32; C::Fr::WORDS];
    let mut coeffs = Vec::new();
    let mut coef = |out: &mut Vec<u8>, matrix: u32, row: usize, wire: u32, value: C::Fr| {
        out.extend_from_slice(&matrix.to_le_bytes());
        out.extend_from_slice(&(row as u32).to_le_bytes());
        out.extend_from_slice(&wire.to_le_bytes());
        // The limbs of v·R are v·R² in Montgomery form.
        (value * r).limbs_into(&mut limbs);
        limbs
            .iter()
            .for_each(|l| out.extend_from_slice(&l.to_le_bytes()));
    };
    let mut count = 0u32;
    for (row, [a, b, c]) in r1cs.constraints.iter().enumerate() {
        for &(s, x) in a {
            u[s as usize] += x * l[row];
            coef(&mut coeffs, 0, row, s, x);
            count += 1;
        }
        for &(s, x) in b {
            v[s as usize] += x * l[row];
            coef(&mut coeffs, 1, row, s, x);
            count += 1;
        }
        for &(s, x) in c {
            w[s as usize] += x * l[row];
        }
    }
    for s in 0..=n_pub {
        u[s] += l[m + s];
        coef(&mut coeffs, 0, m + s, s as u32, C::Fr::ONE);
        count += 1;
    }
    let mut section4 = count.to_le_bytes().to_vec();
    section4.extend_from_slice(&coeffs);

    let k: Vec<C::Fr> = (0..n_wires)
        .into_par_iter()
        .map(|s| {
            let x = beta * u[s] + alpha * v[s] + w[s];
            x * if s <= n_pub { gamma_inv } else { delta_inv }
        })
        .collect();

    // Every G1 point from one fixed-base table of the generator.
    let g1 = Projective::<C::G1>::generator();
    let g2 = Projective::<C::G2>::generator();
    let mut scalars = Vec::with_capacity(3 * n_wires + n + 3);
    scalars.extend_from_slice(&u);
    scalars.extend_from_slice(&v);
    scalars.extend_from_slice(&k);
    scalars.extend_from_slice(&h);
    scalars.extend_from_slice(&[alpha, beta, delta]);
    let p1 = g1.batch_mul(&scalars);
    let (a_q, rest) = p1.split_at(n_wires);
    let (b1_q, rest) = rest.split_at(n_wires);
    let (k_q, rest) = rest.split_at(n_wires);
    let (h_q, vk1) = rest.split_at(n);
    let p2 = g2.batch_mul(&[&v[..], &[beta, gamma, delta]].concat());
    let (b2_q, vk2) = p2.split_at(n_wires);

    let mut header = Vec::new();
    for modulus in [
        <C::Fq as PrimeField>::MODULUS.to_bytes_le(),
        <C::Fr as PrimeField>::MODULUS.to_bytes_le(),
    ] {
        header.extend_from_slice(&(modulus.len() as u32).to_le_bytes());
        header.extend_from_slice(&modulus);
    }
    for x in [n_wires, n_pub, n] {
        header.extend_from_slice(&(x as u32).to_le_bytes());
    }
    put_point(&mut header, &vk1[0]); // α
    put_point(&mut header, &vk1[1]); // β
    put_point(&mut header, &vk2[0]); // β
    put_point(&mut header, &vk2[1]); // γ
    put_point(&mut header, &vk1[2]); // δ
    put_point(&mut header, &vk2[2]); // δ

    let g1s = |pts: &[Affine<C::G1>]| {
        let mut out = Vec::with_capacity(2 * n8q::<C>() * pts.len());
        pts.iter().for_each(|p| put_point(&mut out, p));
        out
    };
    let mut g2s = Vec::with_capacity(4 * n8q::<C>() * n_wires);
    b2_q.iter().for_each(|p| put_point(&mut g2s, p));
    // Section 10 would hold the ceremony's transcript hash and contributions: there are none.
    let mut section10 = vec![0u8; 64];
    section10.extend_from_slice(&0u32.to_le_bytes());
    Ok(binfile::write(
        b"zkey",
        1,
        &[
            (1, 1u32.to_le_bytes().to_vec()),
            (2, header),
            (3, g1s(&k_q[..=n_pub])),
            (4, section4),
            (5, g1s(a_q)),
            (6, g1s(b1_q)),
            (7, g2s),
            (8, g1s(&k_q[n_pub + 1..])),
            (9, g1s(h_q)),
            (10, section10),
        ],
    ))
}

/// Affine coordinates in Montgomery form, little-endian (an Fq2 coordinate c0 then c1); (0, 0)
/// for the point at infinity.
fn put_point<P: crate::msm::Group>(out: &mut Vec<u8>, p: &Affine<P>) {
    let words = <P::BaseField as Limbs>::WORDS;
    let mut limbs = vec![0u32; 2 * words];
    if let Some((x, y)) = p.xy() {
        x.limbs_into(&mut limbs[..words]);
        y.limbs_into(&mut limbs[words..]);
    }
    limbs
        .iter()
        .for_each(|l| out.extend_from_slice(&l.to_le_bytes()));
}

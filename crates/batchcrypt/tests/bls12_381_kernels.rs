//! BLS12-381 on the generic field, curve and MSM templates, with the base field on twelve limbs:
//! the kernel code compiled for the host (feature `emulation`) against arkworks'
//! `ark-bls12-381`, element by element and point by point, on random values and the edge cases
//! (0, 1, q - 1, equal and opposite points, infinity, scalars 0, 1 and r - 1). The MSM kernels
//! are tested with every group's, in tests/msm.rs.
#![cfg(feature = "emulation")]

use ark_bls12_381::{Fq, Fr, G1Affine, G1Projective};
use ark_ec::{AffineRepr, CurveGroup};
use ark_ff::{BigInteger, Field, PrimeField, UniformRand, Zero};
use batchcrypt::emulation::bls12_381::{self as kern, Q};
use rand::{rngs::StdRng, SeedableRng};

fn limbs<const N: usize>(b: impl BigInteger) -> [u32; N] {
    let words = b.as_ref();
    std::array::from_fn(|i| (words[i / 2] >> (32 * (i % 2))) as u32)
}

fn fq(x: Fq) -> [u32; Q] {
    limbs(x.into_bigint())
}

fn point(p: G1Affine) -> [u32; 2 * Q] {
    let mut out = [0u32; 2 * Q];
    if let Some((x, y)) = p.xy() {
        out[..Q].copy_from_slice(&fq(x));
        out[Q..].copy_from_slice(&fq(y));
    }
    out
}

#[test]
fn fq_arithmetic_matches_arkworks() {
    let mut rng = StdRng::seed_from_u64(381);
    let mut a: Vec<Fq> = (0..200).map(|_| Fq::rand(&mut rng)).collect();
    let mut b: Vec<Fq> = (0..200).map(|_| Fq::rand(&mut rng)).collect();
    let edges = [Fq::zero(), Fq::ONE, -Fq::ONE, Fq::from(4u64)];
    for x in edges {
        for y in edges {
            a.push(x);
            b.push(y);
        }
    }
    let out = kern::fq_ops(
        &a.iter().map(|&x| fq(x)).collect::<Vec<_>>(),
        &b.iter().map(|&x| fq(x)).collect::<Vec<_>>(),
    );
    let mut squares = 0;
    for (i, o) in out.iter().enumerate() {
        let (x, y) = (a[i], b[i]);
        let want = [
            x + y,
            x - y,
            x * y,
            x.square(),
            x.inverse().unwrap_or(Fq::zero()),
            -x,
        ];
        for (k, w) in want.iter().enumerate() {
            assert_eq!(o[k], fq(*w), "item {i}, operation {k}");
        }
        // The candidate is a square root exactly when x is a square.
        let cand = Fq::from_bigint(ark_ff::BigInt::<6>(std::array::from_fn(|j| {
            o[6][2 * j] as u64 | (o[6][2 * j + 1] as u64) << 32
        })))
        .expect("below q");
        assert_eq!(
            cand.square() == x,
            x.sqrt().is_some(),
            "item {i}: square root"
        );
        squares += x.sqrt().is_some() as usize;
    }
    assert!(
        squares > 50 && squares < out.len() - 50,
        "both squares and non-squares: {squares}"
    );
}

#[test]
fn g1_group_law_matches_arkworks() {
    let mut rng = StdRng::seed_from_u64(12);
    let mut p: Vec<G1Affine> = (0..60)
        .map(|_| G1Projective::rand(&mut rng).into_affine())
        .collect();
    let mut q: Vec<G1Affine> = (0..60)
        .map(|_| G1Projective::rand(&mut rng).into_affine())
        .collect();
    let (g, o) = (G1Affine::generator(), G1Affine::zero());
    for (x, y) in [(g, g), (g, -g), (g, o), (o, g), (o, o), (p[0], p[0])] {
        p.push(x);
        q.push(y);
    }
    let out = kern::g1_ops(
        &p.iter().map(|&x| point(x)).collect::<Vec<_>>(),
        &q.iter().map(|&x| point(x)).collect::<Vec<_>>(),
    );
    for (i, (pts, on_p, on_q)) in out.iter().enumerate() {
        let (a, b) = (p[i], q[i]);
        let sum = (a + b).into_affine();
        let want = [sum, sum, (a + a).into_affine(), o, (a + a).into_affine()];
        for (k, w) in want.iter().enumerate() {
            assert_eq!(pts[k], point(*w), "item {i}, result {k}");
        }
        // Infinity, (0, 0) here, is on no curve with b != 0.
        assert_eq!((*on_p, *on_q), (!a.is_zero(), !b.is_zero()), "item {i}");
    }
    // A point off the curve: G with y + 1.
    let mut bad = point(g);
    bad[Q..].copy_from_slice(&fq(g.y().unwrap() + Fq::ONE));
    assert!(!kern::g1_ops(&[bad], &[point(g)])[0].1);
}

#[test]
fn g1_scalar_multiplication_matches_arkworks() {
    let mut rng = StdRng::seed_from_u64(99);
    let mut p: Vec<G1Affine> = (0..24)
        .map(|_| G1Projective::rand(&mut rng).into_affine())
        .collect();
    let mut k: Vec<Fr> = (0..24).map(|_| Fr::rand(&mut rng)).collect();
    for s in [Fr::zero(), Fr::ONE, -Fr::ONE, Fr::from(2u64)] {
        p.push(G1Affine::generator());
        k.push(s);
    }
    let out = kern::g1_mul(
        &p.iter().map(|&x| point(x)).collect::<Vec<_>>(),
        &k.iter()
            .map(|s| limbs::<8>(s.into_bigint()))
            .collect::<Vec<_>>(),
    );
    for (i, o) in out.iter().enumerate() {
        assert_eq!(o[0], point((p[i] * k[i]).into_affine()), "k P, item {i}");
        assert_eq!(
            o[1],
            point((G1Affine::generator() * k[i]).into_affine()),
            "k G, item {i}"
        );
    }
}

/// A point of order 3 (x = 0, outside G1's subgroup): building the effective-affine table meets
/// an exceptional case (3P = infinity), so the windowed multiplication must take the Jacobian
/// table instead, and k P is (k mod 3) P.
#[test]
fn g1_small_order_point_takes_the_jacobian_table() {
    let p = G1Affine::new_unchecked(Fq::zero(), Fq::from(2u64));
    assert!(p.is_on_curve() && !p.is_in_correct_subgroup_assuming_on_curve());
    let mut rng = StdRng::seed_from_u64(7);
    let k: Vec<Fr> = [
        Fr::zero(),
        Fr::ONE,
        Fr::from(2u64),
        Fr::from(3u64),
        -Fr::ONE,
    ]
    .into_iter()
    .chain((0..8).map(|_| Fr::rand(&mut rng)))
    .collect();
    let out = kern::g1_mul(
        &vec![point(p); k.len()],
        &k.iter()
            .map(|s| limbs::<8>(s.into_bigint()))
            .collect::<Vec<_>>(),
    );
    for (i, o) in out.iter().enumerate() {
        // 2^64 = 1 mod 3: k mod 3 is the sum of its 64-bit limbs mod 3.
        let m = k[i]
            .into_bigint()
            .as_ref()
            .iter()
            .fold(0, |a, &w| (a + w % 3) % 3);
        let want = match m {
            0 => G1Affine::zero(),
            1 => p,
            _ => -p,
        };
        assert_eq!(o[0], point(want), "k P, item {i}");
    }
}

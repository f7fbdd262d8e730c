//! BLS12-381 on the generic field, curve and MSM templates, with the base field on twelve limbs:
//! the kernel code compiled for the host (feature `emulation`) against arkworks'
//! `ark-bls12-381`, element by element and point by point, on random values and the edge cases
//! (0, 1, q - 1, equal and opposite points, infinity, scalars 0, 1 and r - 1), and G1 MSMs
//! through the same chain of kernel steps as BN254's (`batchcrypt::msm::window_sums`).
#![cfg(feature = "emulation")]

use ark_bls12_381::{Fq, Fq2, Fr, G1Affine, G1Projective};
use ark_ec::short_weierstrass::{Affine, Projective, SWCurveConfig};
use ark_ec::{AffineRepr, CurveGroup, VariableBaseMSM};
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
        let want = [x + y, x - y, x * y, x.square(), x.inverse().unwrap_or(Fq::zero()), -x];
        for (k, w) in want.iter().enumerate() {
            assert_eq!(o[k], fq(*w), "item {i}, operation {k}");
        }
        // The candidate is a square root exactly when x is a square.
        let cand = Fq::from_bigint(ark_ff::BigInt::<6>(std::array::from_fn(|j| {
            o[6][2 * j] as u64 | (o[6][2 * j + 1] as u64) << 32
        })))
        .expect("below q");
        assert_eq!(cand.square() == x, x.sqrt().is_some(), "item {i}: square root");
        squares += x.sqrt().is_some() as usize;
    }
    assert!(squares > 50 && squares < out.len() - 50, "both squares and non-squares: {squares}");
}

#[test]
fn g1_group_law_matches_arkworks() {
    let mut rng = StdRng::seed_from_u64(12);
    let mut p: Vec<G1Affine> = (0..60).map(|_| G1Projective::rand(&mut rng).into_affine()).collect();
    let mut q: Vec<G1Affine> = (0..60).map(|_| G1Projective::rand(&mut rng).into_affine()).collect();
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
    let mut p: Vec<G1Affine> = (0..24).map(|_| G1Projective::rand(&mut rng).into_affine()).collect();
    let mut k: Vec<Fr> = (0..24).map(|_| Fr::rand(&mut rng)).collect();
    for s in [Fr::zero(), Fr::ONE, -Fr::ONE, Fr::from(2u64)] {
        p.push(G1Affine::generator());
        k.push(s);
    }
    let out = kern::g1_mul(
        &p.iter().map(|&x| point(x)).collect::<Vec<_>>(),
        &k.iter().map(|s| limbs::<8>(s.into_bigint())).collect::<Vec<_>>(),
    );
    for (i, o) in out.iter().enumerate() {
        assert_eq!(o[0], point((p[i] * k[i]).into_affine()), "k P, item {i}");
        assert_eq!(o[1], point((G1Affine::generator() * k[i]).into_affine()), "k G, item {i}");
    }
}

/// arkworks' Montgomery limbs as 32-bit words (the kernels' representation of Fq and Fr).
fn mont<const N: usize>(words: &[u64]) -> impl Iterator<Item = u32> + '_ {
    words.iter().take(N / 2).flat_map(|w| [*w as u32, (*w >> 32) as u32])
}

fn fq_words(x: &Fq, out: &mut Vec<u32>) {
    out.extend(mont::<Q>(&x.0 .0));
}

fn fq_from(w: &[u32]) -> Fq {
    Fq::new_unchecked(ark_ff::BigInt::<6>(std::array::from_fn(|j| w[2 * j] as u64 | (w[2 * j + 1] as u64) << 32)))
}

/// A group as its MSM kernels take it: coordinates as Fq words (Fq2: c0 then c1).
trait Group: SWCurveConfig<ScalarField = Fr> {
    const STEPS: &'static batchcrypt::emulation::msm::MsmSteps;
    /// Words of a coordinate.
    const W: usize;
    fn put(x: &Self::BaseField, out: &mut Vec<u32>);
    fn get(w: &[u32]) -> Self::BaseField;
}

impl Group for ark_bls12_381::g1::Config {
    const STEPS: &'static batchcrypt::emulation::msm::MsmSteps = &kern::G1_MSM;
    const W: usize = Q;
    fn put(x: &Fq, out: &mut Vec<u32>) {
        fq_words(x, out);
    }
    fn get(w: &[u32]) -> Fq {
        fq_from(w)
    }
}

impl Group for ark_bls12_381::g2::Config {
    const STEPS: &'static batchcrypt::emulation::msm::MsmSteps = &kern::G2_MSM;
    const W: usize = 2 * Q;
    fn put(x: &Fq2, out: &mut Vec<u32>) {
        fq_words(&x.c0, out);
        fq_words(&x.c1, out);
    }
    fn get(w: &[u32]) -> Fq2 {
        Fq2::new(fq_from(&w[..Q]), fq_from(&w[Q..]))
    }
}

/// An MSM through the kernel code: window sums, then combined here by Horner's rule.
fn kernel_msm<P: Group>(bases: &[Affine<P>], scalars: &[Fr], s: &batchcrypt::msm::Shape) -> Projective<P> {
    let mut raw_bases = vec![];
    for p in bases {
        match p.xy() {
            Some((x, y)) => {
                P::put(&x, &mut raw_bases);
                P::put(&y, &mut raw_bases);
            }
            None => raw_bases.extend(std::iter::repeat_n(0, 2 * P::W)),
        }
    }
    let raw_scalars: Vec<u32> = scalars.iter().flat_map(|k| mont::<8>(&k.0 .0).collect::<Vec<_>>()).collect();
    let sums = batchcrypt::emulation::msm::window_sums(P::STEPS, 3 * P::W, &raw_bases, &raw_scalars, s).unwrap();
    let mut acc = Projective::<P>::zero();
    for p in sums.chunks_exact(3 * P::W).rev() {
        for _ in 0..s.c {
            acc = acc + acc;
        }
        let z = P::get(&p[2 * P::W..]);
        if !z.is_zero() {
            acc += Projective::<P>::new_unchecked(P::get(&p[..P::W]), P::get(&p[P::W..2 * P::W]), z);
        }
    }
    acc
}

fn check_msm<P: Group>(seed: u64, cases: &[(usize, Option<u32>, u32)]) {
    use batchcrypt::msm::Shape;
    let mut rng = StdRng::seed_from_u64(seed);
    for &(n, window, copies) in cases {
        let mut bases: Vec<Affine<P>> = (0..n).map(|_| Projective::<P>::rand(&mut rng).into_affine()).collect();
        let mut scalars: Vec<Fr> = (0..n).map(|_| Fr::rand(&mut rng)).collect();
        if n > 5 {
            // Edge scalars, a repeated base, the point at infinity.
            scalars[0] = Fr::zero();
            scalars[1] = Fr::ONE;
            scalars[2] = -Fr::ONE;
            bases[3] = bases[4];
            bases[5] = Affine::<P>::zero();
        }
        let s = match window {
            Some(c) => Shape::precomputed(n, 255, c, copies, n).unwrap(),
            None => Shape::new(n, 255).unwrap(),
        };
        assert_eq!(
            kernel_msm(&bases, &scalars, &s).into_affine(),
            Projective::<P>::msm(&bases, &scalars).unwrap().into_affine(),
            "n = {n}, window {window:?}, {copies} copies"
        );
    }
}

#[test]
fn g1_msm_matches_arkworks() {
    check_msm::<ark_bls12_381::g1::Config>(2024, &[(1, None, 1), (7, Some(4), 1), (300, None, 1), (300, Some(9), 3), (2000, Some(13), 1)]);
}

#[test]
fn g2_msm_matches_arkworks() {
    check_msm::<ark_bls12_381::g2::Config>(2025, &[(1, None, 1), (9, Some(5), 1), (200, None, 1), (200, Some(8), 4)]);
}

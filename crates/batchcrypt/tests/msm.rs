//! Multi-scalar multiplication on BN254's and BLS12-381's G1 and G2: every backend present
//! (arkworks on the CPU, and the GPU where there is one; required under BATCHCRYPT_REQUIRE_GPU=1),
//! and the kernel code itself run on the host (feature `emulation`), against the plain sum of
//! scalar multiplications — on random batches and on the shapes that break bucket methods: zero
//! and one scalars, -1, repeated and opposite bases, the point at infinity, and every scalar in
//! one bucket.

use ark_ec::{AffineRepr, CurveGroup};
use ark_ff::{AdditiveGroup, BigInteger, Field, PrimeField, UniformRand, Zero};
use batchcrypt::msm::{Affine, Bases, Group, Projective, Scalars};
use batchcrypt::{Backend, Error};
use rand::SeedableRng;

mod common;

use batchcrypt::bls12_381::{G1 as B1, G2 as B2};
use batchcrypt::bn254::{G1, G2};

/// A group's scalars.
type Fr<P> = <P as ark_ec::CurveConfig>::ScalarField;

/// The backends with the group's MSM.
fn backends<P: Group>() -> Vec<Backend> {
    common::backends(P::operation().primitive)
}

/// The definition: sum k_i P_i with one double-and-add per term.
fn naive<P: Group>(bases: &[Affine<P>], scalars: &[Fr<P>]) -> Projective<P> {
    bases
        .iter()
        .zip(scalars)
        .map(|(p, k)| p.mul_bigint(k.into_bigint()))
        .sum()
}

/// `bytes` with scalar `i` replaced by the group order itself (the smallest out of range).
fn with_order_at<P: Group>(bytes: &[u8], i: usize) -> Vec<u8> {
    let mut out = bytes.to_vec();
    out[32 * i..32 * (i + 1)].copy_from_slice(&Fr::<P>::MODULUS.to_bytes_le());
    out
}

/// The error a canonical scalar out of range gives: an input error naming it.
fn names_scalar<T: std::fmt::Debug>(got: batchcrypt::Result<T>, i: usize) -> bool {
    matches!(&got, Err(Error::InvalidInput(m)) if m.contains(&format!("scalar {i} ")))
}

fn rng(seed: u64) -> rand::rngs::StdRng {
    rand::rngs::StdRng::seed_from_u64(seed)
}

/// Batches named by what they exercise, each of `n` items.
type Case<P> = (&'static str, Vec<Affine<P>>, Vec<Fr<P>>);

fn cases<P: Group>(n: usize) -> Vec<Case<P>> {
    let mut r = rng(n as u64);
    let (bases, scalars) = batchcrypt::msm::sample::<P>(n, 7);
    let g = Affine::<P>::generator();
    let mut v = vec![("random", bases.clone(), scalars.clone())];
    // A Groth16 witness: mostly 0 and 1, a few field elements, -1.
    let witness: Vec<Fr<P>> = (0..n)
        .map(|i| match i % 7 {
            0 | 3 => Fr::<P>::ZERO,
            1 | 4 | 5 => Fr::<P>::ONE,
            2 => -Fr::<P>::ONE,
            _ => Fr::<P>::rand(&mut r),
        })
        .collect();
    v.push(("witness-like", bases.clone(), witness));
    // One scalar for every base: every entry of a window lands in one bucket.
    let k = Fr::<P>::rand(&mut r);
    v.push(("one bucket", bases.clone(), vec![k; n]));
    // Repeated and opposite bases, infinity among them (P + P and P + (-P) inside a bucket).
    let special: Vec<Affine<P>> = (0..n)
        .map(|i| match i % 4 {
            0 => g,
            1 => (-Projective::<P>::from(g)).into_affine(),
            2 => Affine::<P>::identity(),
            _ => bases[i],
        })
        .collect();
    v.push((
        "repeated, opposite, infinity",
        special.clone(),
        vec![Fr::<P>::from(3u64); n],
    ));
    v.push(("repeated, random scalars", special, scalars));
    v.push(("all zero", bases, vec![Fr::<P>::ZERO; n]));
    v
}

fn definition_on_every_backend<P: Group>(sizes: &[usize]) {
    for b in backends::<P>() {
        let engine = common::engine(b);
        for &n in sizes {
            for (what, bases, scalars) in cases::<P>(n) {
                let want = naive(&bases, &scalars);
                let got = engine.msm(&Bases::new(bases), &scalars).unwrap();
                assert_eq!(got.backend, b);
                assert_eq!(
                    got.value.into_affine(),
                    want.into_affine(),
                    "{b}, {}: {what}, n = {n}",
                    P::KERNELS
                );
            }
        }
    }
}

#[test]
fn every_backend_matches_the_definition_on_g1() {
    definition_on_every_backend::<G1>(&[1, 2, 3, 100, 1000]);
    definition_on_every_backend::<B1>(&[1, 2, 3, 100, 500]);
}

#[test]
fn every_backend_matches_the_definition_on_g2() {
    definition_on_every_backend::<G2>(&[1, 2, 3, 100, 400]);
    definition_on_every_backend::<B2>(&[1, 2, 3, 100, 200]);
}

fn gpu_against_arkworks<P: Group>(sizes: &[usize]) {
    if !backends::<P>().contains(&Backend::Cuda) {
        return;
    }
    let (gpu, cpu) = (
        common::engine(Backend::Cuda),
        common::engine(Backend::Arkworks),
    );
    for &n in sizes {
        for (what, bases, scalars) in cases::<P>(n) {
            let bases = Bases::new(bases);
            let want = cpu.msm(&bases, &scalars).unwrap().value;
            let got = gpu.msm(&bases, &scalars).unwrap().value;
            assert_eq!(
                got.into_affine(),
                want.into_affine(),
                "{}: {what}, n = {n}",
                P::KERNELS
            );
        }
    }
}

#[test]
fn gpu_matches_arkworks_on_larger_batches() {
    gpu_against_arkworks::<G1>(&[1 << 12, (1 << 16) + 3, 1 << 18]);
    gpu_against_arkworks::<G2>(&[1 << 12, (1 << 16) + 3]);
    gpu_against_arkworks::<B1>(&[1 << 12, (1 << 16) + 3, 1 << 18]);
    gpu_against_arkworks::<B2>(&[1 << 12, (1 << 16) + 3]);
}

/// From 2^23 points the scalars cross in chunks growing from 2^20 (here 2^20, 2^21 and the rest),
/// each sorted and summed while the next crosses, and from about 2^22 the first accumulation level takes
/// longer slices (`Shape::levels`).
#[test]
fn gpu_matches_arkworks_on_chunked_uploads_and_longer_slices() {
    gpu_against_arkworks::<G1>(&[(1 << 23) + 5]);
}

/// Canonical scalars over chunked uploads: the same sum as arkworks' elements; one out of range
/// in the last chunk fails the MSM with an input error, after which the engine runs the next
/// one as before.
#[test]
fn gpu_canonical_scalars_cross_in_chunks_and_are_checked() {
    if !backends::<G1>().contains(&Backend::Cuda) {
        return;
    }
    let gpu = common::engine(Backend::Cuda);
    let n = (1 << 23) + 5;
    let (points, scalars) = batchcrypt::msm::sample::<G1>(n, 13);
    let bases = Bases::new(points);
    let bytes = batchcrypt::msm::canonical_bytes(&scalars);
    let want = gpu.msm(&bases, &scalars).unwrap().value;
    let got = gpu
        .msm(&bases, Scalars::canonical(&bytes).unwrap())
        .unwrap();
    assert_eq!(got.backend, Backend::Cuda);
    assert_eq!(got.value, want);
    let bad = with_order_at::<G1>(&bytes, n - 2);
    assert!(names_scalar(
        gpu.msm(&bases, Scalars::canonical(&bad).unwrap()),
        n - 2
    ));
    assert_eq!(gpu.msm(&bases, &scalars).unwrap().value, want);
}

/// Precomputed bases (as a proving key keeps them) on the GPU: the same sums as arkworks, for the
/// whole batch and a prefix, with a few copies and with one per digit window, at the library's
/// windows and at windows fixed by the caller (wide ones: one set of 2^19 buckets).
#[test]
fn gpu_precomputed_bases_match_arkworks() {
    fn on<P: Group>(n: usize) {
        if !backends::<P>().contains(&Backend::Cuda) {
            return;
        }
        let (gpu, cpu) = (
            common::engine(Backend::Cuda),
            common::engine(Backend::Arkworks),
        );
        for (copies, window) in [(4, None), (64, None), (64, Some(20)), (1, Some(9))] {
            for (what, bases, scalars) in cases::<P>(n) {
                let plain = Bases::new(bases.clone());
                let mut bases = Bases::new(bases).with_precomputation(copies);
                if let Some(c) = window {
                    bases = bases.with_window(c);
                }
                for k in [&scalars[..], &scalars[..n / 3]] {
                    let want = cpu.msm(&plain, k).unwrap().value;
                    let got = gpu.msm(&bases, k).unwrap().value;
                    assert_eq!(
                        got.into_affine(),
                        want.into_affine(),
                        "{}: {what}, n = {n}, {} scalars, {copies} copies, window {window:?}",
                        P::KERNELS,
                        k.len()
                    );
                }
            }
        }
    }
    on::<G1>(1 << 12);
    on::<G1>((1 << 16) + 3);
    on::<G2>(1 << 12);
    on::<B1>((1 << 16) + 3);
    on::<B2>(1 << 12);
}

/// The GPU memory that bases report counts the copies their shape reads: a request for more
/// copies than digit windows holds one per window (a prover service admits keys by this figure).
#[test]
fn device_bytes_count_the_copies_held() {
    let (bases, _) = batchcrypt::msm::sample::<G1>(1 << 10, 5);
    let plain = Bases::new(bases.clone()).device_bytes();
    assert_eq!(plain, (1 << 10) * 64);
    let shape = batchcrypt::msm::Shape::for_bases(1 << 10, 1 << 10, 64, 254).unwrap();
    let all = Bases::new(bases.clone()).with_precomputation(64);
    assert_eq!(all.device_bytes(), plain * u64::from(shape.windows));
    assert_eq!(
        Bases::new(bases.clone())
            .with_precomputation(4)
            .device_bytes(),
        4 * plain
    );
    let wide = Bases::new(bases).with_precomputation(64).with_window(20);
    assert_eq!(wide.device_bytes(), 13 * plain);
}

fn prefix_and_errors<P: Group>() {
    let (bases, scalars) = batchcrypt::msm::sample::<P>(50, 3);
    for (b, prepared) in backends::<P>().into_iter().flat_map(|b| {
        [
            (b, Bases::new(bases.clone())),
            (b, Bases::new(bases.clone()).with_precomputation(8)),
        ]
    }) {
        let engine = common::engine(b);
        let got = engine.msm(&prepared, &scalars[..20]).unwrap().value;
        assert_eq!(
            got.into_affine(),
            naive(&bases[..20], &scalars[..20]).into_affine(),
            "{b}"
        );
        let mut more = scalars.clone();
        more.push(Fr::<P>::ONE);
        assert!(
            matches!(engine.msm(&prepared, &more), Err(Error::InvalidInput(_))),
            "{b}"
        );
        assert!(
            engine.msm(&prepared, &[]).unwrap().value.is_zero(),
            "{b}: empty sum"
        );
    }
}

/// Scalars given as canonical bytes (read in place by the GPU, converted by the CPU) sum as
/// the same elements given as arkworks' do, on every backend, the largest ones included; one
/// not below the group order is an input error naming it, wherever it lies; bytes that are no
/// whole number of scalars are refused before anything runs.
fn canonical_on_every_backend<P: Group>(n: usize) {
    for b in backends::<P>() {
        let engine = common::engine(b);
        for (what, bases, mut scalars) in cases::<P>(n) {
            scalars[n / 2] = -Fr::<P>::ONE;
            let bases = Bases::new(bases);
            let bytes = batchcrypt::msm::canonical_bytes(&scalars);
            let want = engine.msm(&bases, &scalars).unwrap().value;
            let got = engine
                .msm(&bases, Scalars::canonical(&bytes).unwrap())
                .unwrap();
            assert_eq!(got.backend, b);
            assert_eq!(got.value, want, "{b}, {}: {what}", P::KERNELS);
            for i in [0, n - 1] {
                let bad = with_order_at::<P>(&bytes, i);
                let got = engine.msm(&bases, Scalars::canonical(&bad).unwrap());
                assert!(names_scalar(got, i), "{b}, {}: {what}", P::KERNELS);
            }
        }
    }
    assert!(matches!(
        Scalars::<Fr<P>>::canonical(&[0u8; 33]),
        Err(Error::InvalidInput(_))
    ));
}

#[test]
fn canonical_scalars_match_field_elements_and_are_checked() {
    canonical_on_every_backend::<G1>(300);
    canonical_on_every_backend::<G2>(100);
    canonical_on_every_backend::<B1>(200);
}

#[test]
fn fewer_scalars_than_bases_use_a_prefix_and_more_is_an_error() {
    prefix_and_errors::<G1>();
    prefix_and_errors::<G2>();
    prefix_and_errors::<B1>();
    prefix_and_errors::<B2>();
}

/// Three sets of bases (distinct points; repeated, opposite and infinity; a random permutation
/// of the first) over one set of scalars.
fn base_sets<P: Group>(n: usize) -> (Vec<Vec<Affine<P>>>, Vec<Vec<Fr<P>>>) {
    let cases = cases::<P>(n);
    let mut shuffled = cases[0].1.clone();
    use rand::seq::SliceRandom;
    shuffled.shuffle(&mut rng(5));
    let sets = vec![cases[0].1.clone(), cases[3].1.clone(), shuffled];
    (sets, cases.into_iter().map(|c| c.2).collect())
}

fn many_on_every_backend<P: Group>(n: usize) {
    let (sets, scalar_cases) = base_sets::<P>(n);
    for b in backends::<P>() {
        let engine = common::engine(b);
        for copies in [1, 4] {
            let prepared: Vec<Bases<P>> = sets
                .iter()
                .map(|s| Bases::new(s.clone()).with_precomputation(copies))
                .collect();
            let refs: Vec<&Bases<P>> = prepared.iter().collect();
            for scalars in &scalar_cases {
                for k in [n, n / 2] {
                    let got = engine.msm_many(&refs, &scalars[..k]).unwrap();
                    assert_eq!(got.backend, b);
                    assert_eq!(got.value.len(), sets.len());
                    for (set, sum) in sets.iter().zip(&got.value) {
                        assert_eq!(
                            sum.into_affine(),
                            naive(&set[..k], &scalars[..k]).into_affine(),
                            "{b}, {}, {copies} copies, {k} scalars",
                            P::KERNELS
                        );
                    }
                }
            }
        }
        // Sets of other lengths, or none, are errors.
        let short = Bases::new(sets[0][..n - 1].to_vec());
        let full = Bases::new(sets[0].clone());
        let scalars = &scalar_cases[0][..n - 1];
        assert!(
            matches!(
                engine.msm_many(&[&full, &short], scalars),
                Err(Error::InvalidInput(_))
            ),
            "{b}"
        );
        assert!(
            matches!(
                engine.msm_many::<P>(&[], scalars),
                Err(Error::InvalidInput(_))
            ),
            "{b}"
        );
    }
}

#[test]
fn msms_of_one_set_of_scalars_over_several_sets_of_bases() {
    many_on_every_backend::<G1>(300);
    many_on_every_backend::<G2>(100);
    many_on_every_backend::<B1>(200);
}

#[cfg(feature = "emulation")]
mod emulated {
    use super::*;
    use batchcrypt::emulation::msm::msm;
    use batchcrypt::msm::Shape;

    /// The kernel code on the host, over window sizes from 4 bits (many windows, few buckets) to
    /// 13 (more buckets than points), so slices cross buckets and windows and the accumulation
    /// takes several levels.
    fn kernels_on<P: Group>(sizes: &[usize], windows: &[u32]) {
        for &n in sizes {
            for (what, bases, scalars) in cases::<P>(n) {
                let want = naive(&bases, &scalars).into_affine();
                for &c in windows {
                    let got = msm(&bases, &scalars, Some(c), 1).unwrap();
                    assert_eq!(
                        got.into_affine(),
                        want,
                        "{}: {what}, n = {n}, c = {c}",
                        P::KERNELS
                    );
                }
                assert_eq!(
                    msm(&bases, &scalars, None, 1).unwrap().into_affine(),
                    want,
                    "{}: {what}, n = {n}, default window",
                    P::KERNELS
                );
            }
        }
    }

    #[test]
    fn kernels_match_the_definition_on_g1() {
        kernels_on::<G1>(&[1, 2, 5, 64, 700], &[4, 5, 8, 13]);
        kernels_on::<B1>(&[1, 2, 5, 64, 300], &[4, 8, 13]);
    }

    #[test]
    fn kernels_match_the_definition_on_g2() {
        kernels_on::<G2>(&[1, 2, 5, 64, 300], &[4, 8, 13]);
        kernels_on::<B2>(&[1, 2, 5, 64, 100], &[4, 9]);
    }

    /// One sorting of the scalars serves every set of bases: the kernel code on the host, over
    /// windows small enough that slices cross buckets and several accumulation levels run; and
    /// scalars taken in chunks (growing from a twelfth of them, or from one, as a large MSM's
    /// cross to the GPU), each chunk's buckets added into the others', with and without precomputed
    /// copies; and the cells cut into parts, as an MSM split over GPUs (parts sharing windows,
    /// parts within one window or one precomputed copy).
    #[test]
    fn one_sorting_serves_several_sets_of_bases() {
        fn on<P: Group>(n: usize) {
            let (sets, scalar_cases) = base_sets::<P>(n);
            let refs: Vec<&[Affine<P>]> = sets.iter().map(Vec::as_slice).collect();
            let small = Some(n.div_ceil(12));
            for scalars in &scalar_cases {
                for (c, copies, chunk, parts) in [
                    (4, 1, None, 1),
                    (7, 1, None, 1),
                    (5, 8, None, 1),
                    (4, 1, small, 1),
                    (5, 8, small, 1),
                    (7, 1, Some(1), 1),
                    (4, 1, small, 2),
                    (7, 1, None, 3),
                    (5, 8, small, 4),
                    (5, 8, None, 7),
                    (13, 1, small, 2),
                ] {
                    let got = batchcrypt::emulation::msm::msm_many(
                        &refs,
                        scalars,
                        Some(c),
                        copies,
                        chunk,
                        parts,
                    )
                    .unwrap();
                    for (set, sum) in sets.iter().zip(got) {
                        assert_eq!(
                            sum.into_affine(),
                            naive(set, scalars).into_affine(),
                            "{}, c = {c}, {copies} copies, chunks of {chunk:?}, {parts} parts",
                            P::KERNELS
                        );
                    }
                }
            }
        }
        on::<G1>(200);
        on::<B2>(40);
    }

    /// Scalars at the top of the field: r - 1, r - 2^k, and values whose top window carries; whole,
    /// and cut into parts whose first windows take the carries of windows they do not hold.
    fn largest_scalars<P: Group>(n: usize, windows: &[u32], copies: u32) {
        let (bases, _) = batchcrypt::msm::sample::<P>(n, 11);
        let scalars: Vec<Fr<P>> = (0..n)
            .map(|i| -Fr::<P>::from(2u64).pow([i as u64]))
            .collect();
        let want = naive(&bases, &scalars).into_affine();
        for &c in windows {
            for parts in [1, 2] {
                let got = batchcrypt::emulation::msm::msm_many(
                    &[&bases],
                    &scalars,
                    Some(c),
                    copies,
                    None,
                    parts,
                )
                .unwrap();
                assert_eq!(
                    got[0].into_affine(),
                    want,
                    "{}: c = {c}, {copies} copies, {parts} parts",
                    P::KERNELS
                );
            }
        }
    }

    /// Canonical scalars take the kernels' other reading (no conversion from Montgomery form):
    /// the largest scalars among random ones, whole, in chunks and in parts; one out of range is
    /// an input error naming it.
    #[test]
    fn kernels_read_canonical_scalars() {
        fn on<P: Group>(n: usize) {
            let (bases, mut scalars) = batchcrypt::msm::sample::<P>(n, 17);
            for (i, k) in scalars.iter_mut().enumerate().step_by(3) {
                *k = -Fr::<P>::from(2u64).pow([i as u64]);
            }
            let want = naive(&bases, &scalars).into_affine();
            let bytes = batchcrypt::msm::canonical_bytes(&scalars);
            let small = Some(n.div_ceil(12));
            for (c, chunk, parts) in [(4, None, 1), (7, small, 1), (5, Some(1), 3), (13, None, 2)] {
                let got = batchcrypt::emulation::msm::msm_many(
                    &[&bases],
                    Scalars::canonical(&bytes).unwrap(),
                    Some(c),
                    1,
                    chunk,
                    parts,
                )
                .unwrap();
                assert_eq!(
                    got[0].into_affine(),
                    want,
                    "{}: c = {c}, chunks of {chunk:?}, {parts} parts",
                    P::KERNELS
                );
            }
            let bad = with_order_at::<P>(&bytes, n - 3);
            let got = batchcrypt::emulation::msm::msm_many(
                &[&bases],
                Scalars::canonical(&bad).unwrap(),
                Some(5),
                1,
                small,
                2,
            );
            assert!(names_scalar(got, n - 3), "{}", P::KERNELS);
        }
        on::<G1>(200);
        on::<B1>(120);
        on::<G2>(60);
    }

    #[test]
    fn kernels_handle_the_largest_scalars() {
        largest_scalars::<G1>(40, &[4, 7, 16, 21], 1);
        largest_scalars::<G2>(40, &[7], 1);
        largest_scalars::<B1>(40, &[4, 7, 16, 21], 1);
        largest_scalars::<B2>(40, &[7], 1);
    }

    /// Precomputed bases: every digit window reads its shifted copy and fills the buckets of
    /// window w % sets. Copies from 2 (the sets of buckets cover several windows, the last
    /// copy partly used) to one per digit window (a single set), on every case, with prefixes
    /// of the bases (stride > n) and the largest scalars.
    #[test]
    fn precomputed_kernels_match_the_definition() {
        fn on<P: Group>(n: usize, c: u32) {
            let windows = (batchcrypt::msm::scalar_bits::<P>() + 1).div_ceil(c);
            for (what, bases, scalars) in cases::<P>(n) {
                for copies in [2, 3, windows - 1, windows, 1000] {
                    let want = naive(&bases, &scalars).into_affine();
                    let got = msm(&bases, &scalars, Some(c), copies).unwrap();
                    assert_eq!(
                        got.into_affine(),
                        want,
                        "{}: {what}, n = {n}, c = {c}, {copies} copies",
                        P::KERNELS
                    );
                    // The first half of the scalars over all the bases (copies `n` points apart).
                    let half = &scalars[..n / 2];
                    let want = naive(&bases[..n / 2], half).into_affine();
                    let got = msm(&bases, half, Some(c), copies).unwrap();
                    assert_eq!(
                        got.into_affine(),
                        want,
                        "{}: {what}, prefix, c = {c}, {copies} copies",
                        P::KERNELS
                    );
                }
            }
        }
        on::<G1>(300, 8);
        on::<G1>(64, 13);
        on::<G2>(100, 9);
        on::<B1>(100, 8);
        on::<B2>(40, 9);
        for (c, copies) in [(4, 64), (7, 5), (16, 16), (21, 2)] {
            largest_scalars::<G1>(40, &[c], copies);
            largest_scalars::<B1>(40, &[c], copies);
        }
        // The default choice for precomputed bases.
        let (bases, scalars) = batchcrypt::msm::sample::<G1>(40, 11);
        let want = naive(&bases, &scalars).into_affine();
        assert_eq!(msm(&bases, &scalars, None, 4).unwrap().into_affine(), want);
    }

    /// Parts of an MSM split over GPUs: the cuts cover the cells once, in proportion to the
    /// weights, whatever the scalars' count; each part's windows, bucket windows and copies.
    #[test]
    fn parts_cover_the_cells_once() {
        for (n, c, copies) in [
            (1000, 16, 1),
            (1 << 24, 17, 1),
            (7, 4, 1),
            (1000, 16, 16),
            (1000, 16, 3),
        ] {
            let whole = Shape::precomputed(n, 254, c, copies, n).unwrap();
            for weights in [
                vec![1.0],
                vec![1.0, 1.0],
                vec![1.0, 3.0],
                vec![1.0; 4],
                vec![1.0; 40],
            ] {
                let cuts = Shape::cuts(whole.windows, &weights);
                assert_eq!(cuts.len(), weights.len());
                let parts: Vec<Shape> = cuts.iter().filter_map(|&cut| whole.part(cut)).collect();
                let mut at = 0;
                for p in &parts {
                    assert_eq!(p.from, at, "{n} {c} {copies} {weights:?}");
                    at = p.to;
                    assert!(p.lo() < p.hi() && p.hi() <= whole.windows);
                    assert_eq!(p.base() + p.off, p.lo());
                    if copies == 1 {
                        assert_eq!(
                            (p.sets, p.off, p.copies(), p.first_copy()),
                            (p.part_windows(), 0, 1, 0)
                        );
                    } else {
                        assert_eq!((p.sets, p.off, p.base()), (whole.sets, p.lo(), 0));
                        assert_eq!(p.first_copy(), p.lo() / whole.sets);
                        assert_eq!(p.first_copy() + p.copies() - 1, (p.hi() - 1) / whole.sets);
                    }
                }
                assert_eq!(at, whole.to);
                if weights.len() > 1 && weights.len() <= 4 && n >= 1000 {
                    // Shares as asked, to a scalar.
                    let total: f64 = weights.iter().sum();
                    for (p, w) in parts.iter().zip(&weights) {
                        let want = w / total * whole.to as f64;
                        assert!(
                            ((p.to - p.from) as f64 - want).abs()
                                <= 1.0 + whole.to as f64 / 65536.0
                        );
                    }
                }
            }
        }
        // Two GPUs on 15 windows share the eighth by scalars.
        let whole = Shape::precomputed(1 << 24, 254, 17, 1, 1 << 24).unwrap();
        let cuts = Shape::cuts(whole.windows, &[1.0, 1.0]);
        let (a, b) = (whole.part(cuts[0]).unwrap(), whole.part(cuts[1]).unwrap());
        assert_eq!((a.lo(), a.hi(), b.lo(), b.hi()), (0, 8, 7, 15));
        // A prefix of the scalars keeps the cuts' windows.
        let short = Shape::precomputed(1000, 254, 16, 16, 1 << 20).unwrap();
        let long = Shape::precomputed(1 << 20, 254, 16, 16, 1 << 20).unwrap();
        for cut in Shape::cuts(16, &[1.0, 2.0, 1.0]) {
            let (s, l) = (short.part(cut).unwrap(), long.part(cut).unwrap());
            assert_eq!(s.first_copy(), l.first_copy());
            assert!(s.first_copy() + s.copies() <= l.first_copy() + l.copies());
        }
    }

    #[test]
    fn precomputation_shapes() {
        // One set of buckets with a copy per digit window; fewer sets with more copies.
        let s = Shape::precomputed(100, 254, 16, 100, 100).unwrap();
        assert_eq!((s.windows, s.sets, s.copies(), s.shift()), (16, 1, 16, 16));
        let s = Shape::precomputed(100, 254, 16, 3, 100).unwrap();
        assert_eq!((s.sets, s.copies(), s.shift()), (6, 3, 96));
        assert_eq!(Shape::precomputed(10, 254, 16, 1, 100).unwrap().sets, 16);
        // More scalars than bases per copy, and copies past 31-bit point indices, are errors.
        assert!(Shape::precomputed(101, 254, 16, 2, 100).is_err());
        assert!(Shape::precomputed(1 << 27, 254, 16, 16, 1 << 27).is_err());
        // Precomputed bases keep the window of plain bases of their count, with fewer sets.
        let plain = Shape::new(1 << 20, 254).unwrap();
        let pre = Shape::for_bases(1000, 1 << 20, 4, 254).unwrap();
        assert_eq!((pre.c, pre.sets), (plain.c, plain.windows.div_ceil(4)));
        // A copy per digit window leaves one set of buckets; large counts then take wider
        // windows (fewer digit windows, so fewer copies), never narrower ones.
        for log in [12, 16, 20, 22, 24] {
            let plain = Shape::new(1 << log, 254).unwrap();
            let full = Shape::for_bases(1000, 1 << log, 64, 254).unwrap();
            assert_eq!(full.sets, 1);
            assert_eq!(full.copies(), full.windows);
            assert!(full.c >= plain.c && full.c <= 22, "2^{log}: {full:?}");
        }
        assert!(
            Shape::for_bases(1, 1 << 24, 64, 254).unwrap().c > Shape::new(1 << 24, 254).unwrap().c
        );
    }

    /// The upload's chunks cover the scalars in order, each `growth` times the one before up to
    /// the most, the last one taking a rest shorter than one and a half chunks.
    #[test]
    fn chunks_grow_and_cover_the_scalars() {
        use batchcrypt::msm::chunks;
        let doubling = |n, first| chunks(n, first, 2, usize::MAX);
        assert_eq!(doubling(10, 1), vec![0..1, 1..3, 3..7, 7..10]);
        assert_eq!(doubling(0, 4), vec![0..0]);
        assert_eq!(doubling(3, 1), vec![0..1, 1..3]);
        assert_eq!(doubling(3, 5), vec![0..3]);
        assert_eq!(doubling(15, 1), vec![0..1, 1..3, 3..7, 7..15]);
        assert_eq!(doubling(16, 1), vec![0..1, 1..3, 3..7, 7..16]);
        assert_eq!(doubling(18, 1), vec![0..1, 1..3, 3..7, 7..18]);
        assert_eq!(doubling(20, 1), vec![0..1, 1..3, 3..7, 7..15, 15..20]);
        let m = 1 << 20;
        // One GPU's 2^24 scalars: 1, 4 and 11 M.
        assert_eq!(
            chunks(16 * m, m, 4, usize::MAX),
            vec![0..m, m..5 * m, 5 * m..16 * m]
        );
        // Several GPUs': 0.5, 1, 2, 4, 4 and 4.5 M.
        let h = m / 2;
        assert_eq!(
            chunks(16 * m, h, 2, 4 * m),
            vec![
                0..h,
                h..3 * h,
                3 * h..7 * h,
                7 * h..15 * h,
                15 * h..23 * h,
                23 * h..32 * h
            ]
        );
        assert_eq!(
            chunks(10, 1, 2, 2),
            vec![0..1, 1..3, 3..5, 5..7, 7..9, 9..10]
        );
        for n in 1..300 {
            for (growth, most) in [(2, usize::MAX), (4, usize::MAX), (2, 8), (1, 3)] {
                let c = chunks(n, 3, growth, most);
                assert!(c
                    .windows(2)
                    .all(|w| w[0].end == w[1].start && !w[0].is_empty()));
                assert_eq!((c[0].start, c.last().unwrap().end), (0, n));
                assert!(c.iter().all(|r| r.len() < most.max(3).saturating_mul(2)));
            }
        }
    }

    #[test]
    fn levels_shrink_to_one_slice() {
        let r = 67_584; // an H200's resident threads of BN254 G1's accumulation
        assert_eq!(Shape::levels(0, r), vec![(0, 32)]);
        assert_eq!(Shape::levels(32, r), vec![(32, 32)]);
        assert_eq!(Shape::levels(33, r), vec![(33, 32), (4, 8)]);
        // The first level: the fewest whole waves of at most 256 entries a thread, the entries cut
        // evenly over them; later levels take 8 partial sums a slice.
        assert_eq!(
            Shape::levels(1 << 24, 1 << 16)[..2],
            [(1 << 24, 256), (1 << 17, 8)]
        );
        assert_eq!(Shape::levels(70_000_000, r)[0], (70_000_000, 208));
        assert_eq!(Shape::levels(7_500_000, r)[0], (7_500_000, 111));
        for total in [
            1u64 << 20,
            7_500_000,
            1 << 24,
            70_000_000,
            251_658_240,
            1 << 28,
        ] {
            for resident in [1u64 << 8, 16_896, r, 1 << 20] {
                let l = Shape::levels(total, resident);
                let (t, first) = l[0];
                assert!((32..=256).contains(&first), "{total} {resident}: {first}");
                let threads = t.div_ceil(u64::from(first));
                let waves = total.div_ceil(resident * 256).max(1);
                if total >= 32 * resident {
                    assert_eq!(
                        threads.div_ceil(resident),
                        waves,
                        "{total} {resident}: {l:?}"
                    );
                }
                assert!(
                    l.windows(2).all(|w| w[1].0 < w[0].0 && w[1].1 == 8)
                        && l.last().unwrap().0 <= 8.max(first as u64),
                    "{l:?}"
                );
            }
        }
        assert!(
            Shape::with_window(10, 254, 3).is_err() && Shape::with_window(10, 254, 25).is_err()
        );
        // Larger batches take larger windows.
        let c = |n| Shape::new(n, 254).unwrap().c;
        assert!(
            c(1 << 10) < c(1 << 16) && c(1 << 16) < c(1 << 22),
            "{} {} {}",
            c(1 << 10),
            c(1 << 16),
            c(1 << 22)
        );
        assert_eq!(c(1 << 26), batchcrypt::msm::MAX_WINDOW);
    }
}

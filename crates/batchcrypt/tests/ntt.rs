//! NTTs over BN254's and BLS12-381's Fr: every backend present (arkworks on the CPU, and the GPU
//! where there is one; required under BATCHCRYPT_REQUIRE_GPU=1) against the definition
//! (evaluation of the polynomial at g w^i, one Horner sum per point, w snarkjs's root) on small
//! sizes, the GPU against arkworks element for element up to 2^20, and the kernel code itself run
//! on the host (feature `emulation`). Each test runs on both fields.

use batchcrypt::ntt::{root_of_unity, Direction, Field, Ntt};
use batchcrypt::{Backend, Error, Primitive};
use rand::SeedableRng;

mod common;

/// `#[test] fn NAME()` running `NAME_on::<F>(primitive)` for both fields.
macro_rules! on_both_fields {
    ($($name:ident => $body:ident),* $(,)?) => {$(
        #[test]
        fn $name() {
            $body::<batchcrypt::bn254::Fr>(Primitive::Bn254);
            $body::<batchcrypt::bls12_381::Fr>(Primitive::Bls12_381);
        }
    )*};
}

on_both_fields! {
    every_backend_matches_the_definition => definition_on,
    inverse_undoes_forward => inverse_on,
    gpu_matches_arkworks_on_every_size => gpu_on,
    bad_shapes_are_errors => bad_shapes_on,
    a_sequence_equals_its_steps => sequence_on,
    canonical_bytes_equal_elements => canonical_on,
}

/// out[i] = p(g w^i) for the polynomial p with coefficients `coeffs`.
fn evaluate<F: Field>(coeffs: &[F], g: F) -> Vec<F> {
    let n = coeffs.len();
    let w = root_of_unity::<F>(n as u64).unwrap();
    let mut x = g;
    (0..n)
        .map(|_| {
            let v = coeffs.iter().rev().fold(F::zero(), |acc, c| acc * x + c);
            x *= w;
            v
        })
        .collect()
}

/// Random polynomials with the edge values mixed in: 0, 1, -1.
fn values<F: Field>(len: usize, seed: u64) -> Vec<F> {
    let mut r = rand::rngs::StdRng::seed_from_u64(seed);
    (0..len)
        .map(|i| match i % 11 {
            3 => F::zero(),
            5 => F::ONE,
            7 => -F::ONE,
            _ => F::rand(&mut r),
        })
        .collect()
}

/// The four transforms a Groth16 prover uses, on the subgroup and on a coset.
fn kinds<F: Field>(size: usize) -> Vec<Ntt<F>> {
    let g = F::GENERATOR;
    vec![
        Ntt::forward(size),
        Ntt::inverse(size),
        Ntt::forward(size).on_coset(g),
        Ntt::inverse(size).on_coset(F::from(12345u64)),
    ]
}

/// Checks `got = t(input)` against the definition, polynomial by polynomial: a forward result
/// is the evaluations; an inverse result is what the evaluations come from.
fn check_definition<F: Field>(t: &Ntt<F>, input: &[F], got: &[F], what: &str) {
    let g = t.coset.unwrap_or(F::ONE);
    for (i, (inp, out)) in input.chunks(t.size).zip(got.chunks(t.size)).enumerate() {
        match t.direction {
            Direction::Forward => assert_eq!(out, evaluate(inp, g), "{what}: polynomial {i}"),
            Direction::Inverse => assert_eq!(evaluate(out, g), inp, "{what}: polynomial {i}"),
        }
    }
}

fn definition_on<F: Field>(p: Primitive) {
    for b in common::backends(p) {
        let engine = common::engine(b);
        for log in 0..=6 {
            for batch in [1, 3] {
                for t in kinds::<F>(1 << log) {
                    let input = values(t.size * batch, log as u64);
                    let mut got = input.clone();
                    let out = engine.ntt(&mut got, &t).unwrap();
                    assert_eq!(out.backend, b);
                    check_definition(&t, &input, &got, &format!("{b}: {t:?}, batch {batch}"));
                }
            }
        }
    }
}

fn inverse_on<F: Field>(p: Primitive) {
    for b in common::backends(p) {
        let engine = common::engine(b);
        for log in [10, 13] {
            let n = 1 << log;
            let input = values::<F>(2 * n, 9);
            for g in [None, Some(F::GENERATOR)] {
                let mut v = input.clone();
                let (fwd, inv) = (
                    Ntt {
                        coset: g,
                        ..Ntt::forward(n)
                    },
                    Ntt {
                        coset: g,
                        ..Ntt::inverse(n)
                    },
                );
                engine.ntt(&mut v, &fwd).unwrap();
                assert_ne!(v, input);
                engine.ntt(&mut v, &inv).unwrap();
                assert_eq!(v, input, "{b}: 2^{log}, coset {g:?}");
            }
        }
    }
}

fn gpu_on<F: Field>(p: Primitive) {
    if !common::backends(p).contains(&Backend::Cuda) {
        return;
    }
    let (gpu, cpu) = (
        common::engine(Backend::Cuda),
        common::engine(Backend::Arkworks),
    );
    // Up to 2^20 (three passes start at 2^21; the benchmark checks 2^22..2^26), with batches of
    // small polynomials, all four transforms each.
    for (log, batch) in (1..=20).map(|l| (l, 1)).chain([(4, 100), (11, 7), (16, 3)]) {
        for t in kinds::<F>(1 << log) {
            let input = values(t.size * batch, log as u64 + 100);
            let (mut want, mut got) = (input.clone(), input.clone());
            cpu.ntt(&mut want, &t).unwrap();
            gpu.ntt(&mut got, &t).unwrap();
            assert!(want == got, "2^{log} x {batch}: {t:?}");
        }
    }
    // A table built for a larger size serves smaller transforms after it (strided reads).
    let t = Ntt::forward(1 << 8);
    let input = values::<F>(256, 5);
    let (mut want, mut got) = (input.clone(), input);
    cpu.ntt(&mut want, &t).unwrap();
    gpu.ntt(&mut got, &t).unwrap();
    assert!(want == got);
}

fn bad_shapes_on<F: Field>(p: Primitive) {
    for b in common::backends(p) {
        let bn = common::engine(b);
        let mut v = values::<F>(24, 1);
        let too_large = 1usize << (batchcrypt::ntt::max_log_size::<F>() + 1);
        for (t, what) in [
            (Ntt::forward(3), "size not a power of two"),
            (Ntt::forward(0), "size zero"),
            (Ntt::forward(16), "not whole polynomials"),
            (Ntt::forward(too_large), "larger than the two-adicity"),
            (Ntt::inverse(8).on_coset(F::zero()), "zero coset offset"),
        ] {
            let before = v.clone();
            assert!(
                matches!(bn.ntt(&mut v, &t), Err(Error::InvalidInput(_))),
                "{b}: {what}"
            );
            assert_eq!(v, before, "{b}: {what} left the input as it was");
        }
        // Empty input is zero polynomials: nothing to do.
        bn.ntt::<F>(&mut [], &Ntt::forward(8)).unwrap();
        // A sequence: no steps, or steps of two sizes.
        let before = v.clone();
        assert!(bn.ntts(&mut v, &[]).is_err());
        assert!(bn
            .ntts(&mut v, &[Ntt::forward(8), Ntt::forward(4)])
            .is_err());
        assert_eq!(v, before);
    }
}

/// A prover's sequence in one call (interpolate, then evaluate on a coset; on the GPU the values
/// stay there between the two) equals the two transforms one by one, on every backend.
fn sequence_on<F: Field>(p: Primitive) {
    let g = root_of_unity::<F>(1 << 12).unwrap();
    for b in common::backends(p) {
        let bn = common::engine(b);
        for log in [1u32, 5, 11] {
            let n = 1usize << log;
            let steps = [
                Ntt::inverse(n),
                Ntt::forward(n).on_coset(g),
                Ntt::inverse(n),
            ];
            let input = values::<F>(3 * n, u64::from(log));
            let mut want = input.clone();
            for t in &steps {
                bn.ntt(&mut want, t).unwrap();
            }
            let mut got = input.clone();
            assert_eq!(bn.ntts(&mut got, &steps).unwrap().backend, b);
            assert_eq!(got, want, "{b}: 2^{log}");
        }
    }
}

/// Canonical bytes in and out equal the transform on arkworks' elements, on every backend
/// (the GPU's kernels take them as they are, up to sizes of three passes and over batches); an
/// element not below the modulus, first or last, and bad lengths are input errors.
fn canonical_on<F: Field>(p: Primitive) {
    use batchcrypt::msm::canonical_bytes;
    let g = F::GENERATOR;
    for b in common::backends(p) {
        let bn = common::engine(b);
        let mut cases = vec![(1u32, 1usize), (3, 5), (11, 3)];
        if b.is_gpu() {
            cases.extend([(16, 2), (21, 1)]);
        }
        for (log, batch) in cases {
            let n = 1usize << log;
            for steps in [
                vec![Ntt::forward(n)],
                vec![Ntt::inverse(n).on_coset(g)],
                vec![Ntt::inverse(n), Ntt::forward(n).on_coset(g)],
            ] {
                let input = values::<F>(n * batch, u64::from(log) + 7);
                let mut want = input.clone();
                bn.ntts(&mut want, &steps).unwrap();
                let bytes = canonical_bytes(&input);
                let mut out = vec![0u8; bytes.len()];
                let ran = bn.ntts_canonical(&bytes, &mut out, &steps).unwrap();
                assert_eq!(ran.backend, b);
                assert!(
                    out == canonical_bytes(&want),
                    "{b}: 2^{log} x {batch}: {steps:?}"
                );
            }
        }
        // Size 1: the identity, still checked.
        let bytes = canonical_bytes(&values::<F>(4, 3));
        let mut out = vec![0u8; bytes.len()];
        bn.ntts_canonical(&bytes, &mut out, &[Ntt::<F>::forward(1)])
            .unwrap();
        assert_eq!(out, bytes);
        // The modulus at the first and the last index, in a single pass and over three.
        let width = bytes.len() / 4;
        let modulus = {
            use ark_ff::BigInteger;
            F::MODULUS.to_bytes_le()
        };
        for log in [4u32, 21] {
            if log > 11 && !b.is_gpu() {
                continue;
            }
            let n = 1usize << log;
            let mut bytes = canonical_bytes(&values::<F>(n, 1));
            for at in [0, n - 1] {
                let good = bytes[at * width..(at + 1) * width].to_vec();
                bytes[at * width..(at + 1) * width].copy_from_slice(&modulus);
                let mut out = vec![0u8; bytes.len()];
                match bn.ntts_canonical(&bytes, &mut out, &[Ntt::<F>::forward(n)]) {
                    Err(Error::InvalidInput(why)) => {
                        assert!(why.contains(&format!(" {at} ")), "{b}: {why}")
                    }
                    other => panic!("{b}: the modulus at {at} of 2^{log}: {other:?}"),
                }
                bytes[at * width..(at + 1) * width].copy_from_slice(&good);
            }
        }
        let t = [Ntt::<F>::forward(4)];
        let bytes = canonical_bytes(&values::<F>(4, 2));
        for (input, out_len, what) in [
            (&bytes[..], bytes.len() - 1, "output shorter"),
            (&bytes[1..], bytes.len() - 1, "not whole elements"),
            (&bytes[..2 * width], 2 * width, "not whole polynomials"),
        ] {
            let mut out = vec![0u8; out_len];
            assert!(
                matches!(
                    bn.ntts_canonical(input, &mut out, &t),
                    Err(Error::InvalidInput(_))
                ),
                "{b}: {what}"
            );
        }
    }
}

#[cfg(feature = "emulation")]
mod emulated {
    use super::*;
    use batchcrypt::emulation::ntt::{mul_sub, ntt, products};

    on_both_fields! {
        kernels_match_the_definition => definition_on,
        kernels_match_arkworks_over_several_passes => passes_on,
        pointwise_kernel_matches_arkworks => mul_sub_on,
        sparse_rows_kernel_matches_arkworks => products_on,
        kernels_keep_canonical_words_canonical => canonical_words_on,
    }

    /// The premise of the GPU's canonical path: the kernels' steps on canonical words (not
    /// Montgomery limbs) give the canonical words of the result, over one pass and several.
    fn canonical_words_on<F: Field>(_: Primitive) {
        use batchcrypt::emulation::ntt::ntt_words;
        use batchcrypt::msm::canonical_bytes;
        let cpu = common::engine(Backend::Arkworks);
        for log in [1u32, 6, 11] {
            for t in kinds::<F>(1 << log) {
                let input = values::<F>(2 << log, 31);
                let mut want = input.clone();
                cpu.ntt(&mut want, &t).unwrap();
                let mut words: Vec<u32> = canonical_bytes(&input)
                    .chunks_exact(4)
                    .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
                    .collect();
                ntt_words(&mut words, &t, log).unwrap();
                let got: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
                assert!(got == canonical_bytes(&want), "2^{log}: {t:?}");
            }
        }
    }

    /// A prover's evaluations from two sparse matrices by rows: rows without terms, rows of
    /// one and of many, coefficients 0, 1 and -1 among random ones, a signal read by many rows.
    fn products_on<F: Field>(_: Primitive) {
        use rand::Rng;
        let (n, signals) = (300usize, 57usize);
        let w = values::<F>(signals, 9);
        let mut r = rand::rngs::StdRng::seed_from_u64(10);
        let (mut starts, mut cols, mut coefs) = (vec![0u64], Vec::new(), Vec::new());
        let mut rows: Vec<Vec<(u32, F)>> = Vec::new();
        for row in 0..2 * n {
            let terms = match row % 7 {
                0 => 0,
                1 => 1,
                2 => 9,
                _ => r.gen_range(1..4),
            };
            let mut terms_of_row = Vec::new();
            for t in 0..terms {
                let signal = if t == 0 && row % 5 == 0 {
                    3
                } else {
                    r.gen_range(0..signals as u32)
                };
                let v = match (row + t) % 6 {
                    0 => F::zero(),
                    1 => F::ONE,
                    2 => -F::ONE,
                    _ => F::rand(&mut r),
                };
                terms_of_row.push((signal, v));
                cols.push(signal);
                coefs.push(v);
            }
            starts.push(cols.len() as u64);
            rows.push(terms_of_row);
        }
        let dot = |terms: &[(u32, F)]| {
            terms
                .iter()
                .fold(F::zero(), |acc, &(s, v)| acc + v * w[s as usize])
        };
        let a: Vec<F> = rows[..n].iter().map(|t| dot(t)).collect();
        let b: Vec<F> = rows[n..].iter().map(|t| dot(t)).collect();
        let mut want = a.clone();
        want.extend(&b);
        want.extend(a.iter().zip(&b).map(|(x, y)| *x * y));
        assert_eq!(products(&starts, &cols, &coefs, &w), want);
    }

    /// The prover's pointwise a·b − c, edge values (0, 1, −1) among random ones.
    fn mul_sub_on<F: Field>(_: Primitive) {
        let mut abc = values::<F>(3 * 1000, 5);
        for (i, x) in [F::from(0u64), F::from(1u64), -F::from(1u64)]
            .into_iter()
            .enumerate()
        {
            abc[i] = x;
            abc[1000 + 3 * i] = x;
            abc[2000 + 5 * i] = x;
        }
        let want: Vec<F> = (0..1000)
            .map(|i| abc[i] * abc[1000 + i] - abc[2000 + i])
            .collect();
        assert_eq!(mul_sub(&abc), want);
    }

    /// The kernel code on the host, against the definition on small sizes (one and several passes
    /// of the pass kernel need more than 2^10: see below) and with a twiddle table for a larger
    /// size than the transform.
    fn definition_on<F: Field>(_: Primitive) {
        for log in 1..=6 {
            for t in kinds::<F>(1 << log) {
                let input = values(2 << log, log as u64);
                for table_log in [log, 9] {
                    let mut got = input.clone();
                    ntt(&mut got, &t, table_log).unwrap();
                    check_definition(&t, &input, &got, &format!("{t:?}, table 2^{table_log}"));
                }
            }
        }
    }

    /// Sizes that take two and three passes, against arkworks.
    fn passes_on<F: Field>(_: Primitive) {
        let cpu = common::engine(Backend::Arkworks);
        for log in [10, 11, 15, 21] {
            for t in kinds::<F>(1 << log) {
                let input = values(1 << log, 77);
                let (mut want, mut got) = (input.clone(), input);
                cpu.ntt(&mut want, &t).unwrap();
                ntt(&mut got, &t, log).unwrap();
                assert!(want == got, "{t:?}");
            }
        }
    }
}

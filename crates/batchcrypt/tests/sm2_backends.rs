//! SM2 through the engine: every backend present (CPU, and the GPU where there is one; required
//! under BATCHCRYPT_REQUIRE_GPU=1) gives the same bytes for every operation, and bad input is a
//! clear error or a `None`, never a wrong point.

use batchcrypt::sm2::{Compressed, Point, DEFAULT_DST, N};
use batchcrypt::{Backend, Error, Primitive};

mod common;

fn scalars(n: usize, seed: u64) -> Vec<[u8; 32]> {
    let mut rng = common::Rng(seed | 1);
    let mut v: Vec<[u8; 32]> = (0..n)
        .map(|_| {
            let mut k: [u8; 32] = rng.bytes(32).try_into().unwrap();
            k[0] &= 0x7f; // below n
            k
        })
        .collect();
    // Edges: 0, 1, n - 1.
    v[0] = [0; 32];
    v[1][..31].fill(0);
    v[1][31] = 1;
    let mut n_1 = N;
    n_1[31] -= 1;
    v[2] = n_1;
    v
}

/// Compressed encodings that are not points: bad prefixes, x = p, and an x with no y.
fn bad_encodings(good: &Compressed) -> Vec<Compressed> {
    let mut v = Vec::new();
    for prefix in [0u8, 1, 4, 0xff] {
        let mut c = *good;
        c[0] = prefix;
        v.push(c);
    }
    let mut at_p = [0u8; 33];
    at_p[0] = 2;
    at_p[1..].copy_from_slice(
        &hex::decode("FFFFFFFEFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF00000000FFFFFFFFFFFFFFFF").unwrap(),
    );
    v.push(at_p);
    // Some x below p with x^3 - 3x + b not a square: about half of all x, so one of the first few.
    let cpu = common::engine(Backend::Portable);
    for i in 0u8.. {
        let mut c = [0u8; 33];
        c[0] = 3;
        c[32] = i;
        if cpu
            .sm2()
            .mul_compressed(&scalars(4, 9)[3], &[c])
            .unwrap()
            .value[0]
            .is_none()
        {
            v.push(c);
            break;
        }
    }
    v
}

#[test]
fn every_backend_agrees_on_every_operation() {
    let ks = scalars(3003, 1); // not a multiple of the k·G kernel's items per thread
    let key = scalars(4, 2)[3];
    let msgs: Vec<Vec<u8>> = (0..2000u32)
        .map(|i| {
            format!("user-{i}@example.com")
                .repeat(1 + (i % 7) as usize)
                .into_bytes()
        })
        .chain([vec![], vec![0u8; 300]])
        .collect();
    let msgs: Vec<&[u8]> = msgs.iter().map(|m| m.as_slice()).collect();

    let mut results: Vec<(
        Backend,
        Vec<Point>,
        Vec<Option<Point>>,
        Vec<Option<Compressed>>,
        Vec<Compressed>,
    )> = Vec::new();
    for b in common::backends(Primitive::Sm2) {
        let e = common::engine(b);
        let base = e.sm2().mul_base(&ks).unwrap();
        assert_eq!(base.backend, b);
        // Into a caller's buffer holding other bytes: every point overwritten.
        let mut into = vec![[0xa5u8; 64]; ks.len()];
        let done = e.sm2().mul_base_into(&ks, &mut into).unwrap();
        assert_eq!(done.backend, b);
        assert!(
            into == base.value,
            "{b}: mul_base_into differs from mul_base"
        );
        // Points: the multiples (infinity for k = 0 included, which is off the curve as (0, 0)),
        // plus one with y flipped by a bit.
        let mut points = base.value.clone();
        let mut bad = points[5];
        bad[63] ^= 1;
        points.push(bad);
        let shared = e.sm2().mul_shared(&key, &points).unwrap().value;
        assert_eq!(shared.iter().filter(|p| p.is_none()).count(), 2, "{b}");
        let hashed = e
            .sm2()
            .hash_to_curve_mul(&key, &msgs, DEFAULT_DST)
            .unwrap()
            .value;
        let mut compressed = hashed.clone();
        compressed.extend(bad_encodings(&hashed[0]));
        let blinded = e.sm2().mul_compressed(&key, &compressed).unwrap().value;
        assert!(blinded[..hashed.len()].iter().all(Option::is_some), "{b}");
        assert!(
            blinded[hashed.len()..].iter().all(Option::is_none),
            "{b}: bad encodings accepted"
        );
        results.push((b, base.value, shared, blinded, hashed));
    }
    for r in &results[1..] {
        assert!(
            r.1 == results[0].1,
            "{} and {} differ on mul_base",
            r.0,
            results[0].0
        );
        assert!(
            r.2 == results[0].2,
            "{} and {} differ on mul_shared",
            r.0,
            results[0].0
        );
        assert!(
            r.3 == results[0].3,
            "{} and {} differ on mul_compressed",
            r.0,
            results[0].0
        );
        assert!(
            r.4 == results[0].4,
            "{} and {} differ on hash_to_curve_mul",
            r.0,
            results[0].0
        );
    }
}

#[test]
fn blinding_commutes() {
    // a·(b·H(m)) = b·(a·H(m)): the property ECDH-PSI rests on, on every backend.
    let (a, b) = (scalars(4, 3)[3], scalars(4, 4)[3]);
    let msgs: Vec<&[u8]> = vec![b"alice", b"bob", b"carol"];
    for be in common::backends(Primitive::Sm2) {
        let e = common::engine(be);
        let s = e.sm2();
        let ab = s
            .mul_compressed(
                &a,
                &s.hash_to_curve_mul(&b, &msgs, DEFAULT_DST).unwrap().value,
            )
            .unwrap()
            .value;
        let ba = s
            .mul_compressed(
                &b,
                &s.hash_to_curve_mul(&a, &msgs, DEFAULT_DST).unwrap().value,
            )
            .unwrap()
            .value;
        assert_eq!(ab, ba, "{be}");
    }
}

#[test]
fn bad_input_is_an_error() {
    for b in common::backends(Primitive::Sm2) {
        let e = common::engine(b);
        let s = e.sm2();
        assert!(matches!(s.mul_base(&[]), Err(Error::EmptyBatch)), "{b}");
        assert!(s.mul_base(&[N]).is_err(), "{b}");
        // A bad scalar far into a batch of several pipeline chunks: named by its index.
        let mut ks = vec![[1u8; 32]; 300_000];
        ks[200_001] = N;
        let err = s.mul_base(&ks).unwrap_err().to_string();
        assert!(err.contains("scalar 200001 "), "{b}: {err}");
        let mut short = vec![[0u8; 64]; 1];
        assert!(
            s.mul_base_into(&[[1; 32], [2; 32]], &mut short).is_err(),
            "{b}: an output of the wrong length"
        );
        assert!(s.mul_shared(&[0xff; 32], &[[0; 64]]).is_err(), "{b}");
        assert!(
            matches!(s.mul_compressed(&[1; 32], &[]), Err(Error::EmptyBatch)),
            "{b}"
        );
        assert!(
            s.hash_to_curve_mul(&N, &[b"x"], DEFAULT_DST).is_err(),
            "{b}"
        );
        assert!(
            s.hash_to_curve_mul(&[1; 32], &[b"x"], b"").is_err(),
            "{b}: empty tag"
        );
    }
}

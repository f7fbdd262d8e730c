//! The SM2 instantiation of the generic field, curve and scalar-multiplication templates, run
//! through the host build of the kernels (feature `emulation`), against the `sm2` crate
//! (RustCrypto) as the independent reference.
#![cfg(feature = "emulation")]

use batchcrypt::emulation::sm2 as kern;
use rand::{rngs::StdRng, SeedableRng};
use sm2::elliptic_curve::sec1::ToEncodedPoint;
use sm2::elliptic_curve::{Field, PrimeField};
use sm2::{ProjectivePoint, Scalar};

fn be_to_limbs(b: &[u8]) -> [u32; 8] {
    std::array::from_fn(|i| u32::from_be_bytes(b[28 - 4 * i..32 - 4 * i].try_into().unwrap()))
}

fn scalar_limbs(s: &Scalar) -> [u32; 8] {
    be_to_limbs(&s.to_repr())
}

/// Affine limbs of a point (all zero for infinity), as the kernels write them.
fn point_limbs(p: &ProjectivePoint) -> [u32; 16] {
    let e = p.to_affine().to_encoded_point(false);
    let mut l = [0u32; 16];
    if let (Some(x), Some(y)) = (e.x(), e.y()) {
        l[..8].copy_from_slice(&be_to_limbs(x));
        l[8..].copy_from_slice(&be_to_limbs(y));
    }
    l
}

/// Scalars that exercise the edges: 0, 1, 2, n - 1, n - 2, and powers of two around windows.
fn edge_scalars() -> Vec<Scalar> {
    let mut v = vec![
        Scalar::ZERO,
        Scalar::ONE,
        Scalar::from(2u64),
        -Scalar::ONE,
        -Scalar::from(2u64),
    ];
    for shift in [7u32, 8, 11, 12, 127, 128, 251, 252, 255] {
        let mut s = Scalar::ONE;
        for _ in 0..shift {
            s = s.double();
        }
        v.push(s);
        v.push(-s);
    }
    v
}

#[test]
fn mul_base_matches_sm2_crate() {
    let mut rng = StdRng::seed_from_u64(11);
    let mut ks = edge_scalars();
    ks.extend((0..300).map(|_| Scalar::random(&mut rng)));
    let limbs: Vec<[u32; 8]> = ks.iter().map(scalar_limbs).collect();
    let want: Vec<[u32; 16]> = ks
        .iter()
        .map(|k| point_limbs(&(ProjectivePoint::GENERATOR * k)))
        .collect();
    for (k, (got, want)) in ks.iter().zip(kern::mul_base(&limbs).iter().zip(&want)) {
        assert_eq!(got, want, "k = {k:?}");
    }
    // Threads take items in fours: other batches end with a short group, and k = 0 (infinity)
    // shares an inversion with its neighbours.
    for n in [1, 2, 3, 5, 7] {
        assert_eq!(kern::mul_base(&limbs[..n]), want[..n], "{n} items");
    }
}

#[test]
fn mul_matches_sm2_crate() {
    let mut rng = StdRng::seed_from_u64(12);
    let points: Vec<ProjectivePoint> = (0..200)
        .map(|_| ProjectivePoint::GENERATOR * Scalar::random(&mut rng))
        .collect();
    let plimbs: Vec<[u32; 16]> = points.iter().map(point_limbs).collect();
    let mut keys = edge_scalars();
    keys.push(Scalar::random(&mut rng));
    for key in keys {
        for (i, got) in kern::mul(&scalar_limbs(&key), &plimbs)
            .into_iter()
            .enumerate()
        {
            assert_eq!(
                got,
                Some(point_limbs(&(points[i] * key))),
                "item {i}, key {key:?}"
            );
        }
    }
}

#[test]
fn mul_rejects_points_off_the_curve() {
    let g = point_limbs(&ProjectivePoint::GENERATOR);
    let mut bad = g;
    bad[8] ^= 1;
    let zero = [0u32; 16];
    let got = kern::mul(&scalar_limbs(&Scalar::from(5u64)), &[g, bad, zero]);
    assert_eq!(
        got[0],
        Some(point_limbs(
            &(ProjectivePoint::GENERATOR * Scalar::from(5u64))
        ))
    );
    assert_eq!(got[1], None);
    assert_eq!(
        got[2], None,
        "the all-zero encoding of infinity is not an input point"
    );
}

#[test]
fn mul_compressed_matches_cpu_path() {
    use batchcrypt::sm2::cpu;
    let mut rng = StdRng::seed_from_u64(13);
    let mut enc: Vec<[u8; 33]> = (0..150)
        .map(|_| cpu::compress(&(ProjectivePoint::GENERATOR * Scalar::random(&mut rng))))
        .collect();
    // Not points: a bad prefix, x = p, and x values whose cubic is not a square (some of 0..40).
    let mut bad = enc[0];
    bad[0] = 4;
    enc.push(bad);
    let mut at_p = [0xffu8; 33];
    at_p[0] = 2;
    at_p[1..].copy_from_slice(
        &hex::decode("FFFFFFFEFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF00000000FFFFFFFFFFFFFFFF").unwrap(),
    );
    enc.push(at_p);
    for i in 0..40u8 {
        let mut c = [0u8; 33];
        c[0] = 2 + (i & 1);
        c[32] = i;
        enc.push(c);
    }
    let limbs: Vec<[u32; 9]> = enc
        .iter()
        .map(|c| {
            let mut l = [0u32; 9];
            l[..8].copy_from_slice(&be_to_limbs(&c[1..]));
            l[8] = match c[0] {
                2 => 0,
                3 => 1,
                _ => 2,
            };
            l
        })
        .collect();
    for k in [Scalar::ZERO, Scalar::ONE, Scalar::random(&mut rng)] {
        let kb: [u8; 32] = k.to_repr().into();
        let want = cpu::mul_compressed(&kb, &enc, 1);
        assert!(
            want.iter().filter(|w| w.is_none()).count() > 2,
            "some of the x values are off the curve"
        );
        for ((w, got), c) in want
            .iter()
            .zip(kern::mul_compressed(&scalar_limbs(&k), &limbs))
            .zip(&enc)
        {
            let got_c = (got[8] & 2 != 0).then(|| {
                let mut o = [0u8; 33];
                if got[8] & 4 == 0 {
                    o[0] = 2 | (got[8] & 1) as u8;
                    for (i, l) in got[..8].iter().enumerate() {
                        o[29 - 4 * i..33 - 4 * i].copy_from_slice(&l.to_be_bytes());
                    }
                }
                o
            });
            assert_eq!(&got_c, w, "input {}", hex::encode(c));
        }
    }
}

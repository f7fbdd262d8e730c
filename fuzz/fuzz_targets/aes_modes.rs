//! AES CTR, GCM and XTS, differential: our portable backend, OpenSSL's (AES-NI/VAES) and the GPU
//! kernels' code compiled for the host, on any key, IV, associated data, length and data-unit
//! size. The three must write the same bytes and tags, and refuse the same calls.
#![no_main]

use arbitrary::Arbitrary;
use batchcrypt::aes::gcm::Gcm;
use batchcrypt::aes::xts::XtsKey;
use batchcrypt::aes::Key;
use batchcrypt::emulation::aes as kernel;
use batchcrypt::Backend;
use batchcrypt_fuzz::engine;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Mode {
    Ctr { iv: [u8; 16] },
    Gcm { iv: Vec<u8>, aad: Vec<u8>, decrypt: bool, tag: [u8; 16], seg_log2: u8 },
    Xts { tweak: [u8; 16], unit: u16, decrypt: bool },
}

#[derive(Arbitrary, Debug)]
struct Case {
    key: [u8; 64],
    key_len: u8,
    data: Vec<u8>,
    mode: Mode,
}

const BACKENDS: [Backend; 2] = [Backend::Portable, Backend::OpenSsl];

fuzz_target!(|c: Case| {
    let data = &c.data;
    match c.mode {
        Mode::Ctr { iv } => {
            let key = Key::new(&c.key[..[16, 32][c.key_len as usize % 2]]).unwrap();
            let want = kernel::ctr(&key, &iv, data);
            for b in BACKENDS {
                let mut out = vec![0u8; data.len()];
                engine(b).aes().ctr(&key, &iv, data, &mut out).unwrap();
                assert_eq!(out, want, "CTR on {b:?}");
            }
        }
        Mode::Gcm { iv, aad, decrypt, tag, seg_log2 } => {
            let key = Key::new(&c.key[..[16, 32][c.key_len as usize % 2]]).unwrap();
            let Ok(g) = Gcm::new(&key, &iv) else {
                for b in BACKENDS {
                    let mut out = vec![0u8; data.len()];
                    assert!(engine(b).aes().gcm_encrypt(&key, &iv, &aad, data, &mut out).is_err());
                }
                return;
            };
            let (out, z) = kernel::gcm(&g, data, decrypt, 1 << (seg_log2 % 8));
            let want_tag = g.tag(&aad, z, data.len() as u64);
            for b in BACKENDS {
                let aes = engine(b).aes();
                let mut got = vec![0u8; data.len()];
                if decrypt {
                    // The kernel's tag over the ciphertext is the right one; a fuzzed tag is not.
                    aes.gcm_decrypt(&key, &iv, &aad, data, &mut got, &want_tag).unwrap();
                    assert_eq!(got, out, "GCM decryption on {b:?}");
                    if tag != want_tag {
                        let r = aes.gcm_decrypt(&key, &iv, &aad, data, &mut got, &tag);
                        assert!(r.is_err(), "a wrong tag accepted on {b:?}");
                        assert!(got.iter().all(|&x| x == 0), "plaintext released after a wrong tag on {b:?}");
                    }
                } else {
                    let t = aes.gcm_encrypt(&key, &iv, &aad, data, &mut got).unwrap().value;
                    assert_eq!((got, t), (out.clone(), want_tag), "GCM encryption on {b:?}");
                }
            }
        }
        Mode::Xts { tweak, unit, decrypt } => {
            let Ok(key) = XtsKey::new(&c.key[..[32, 64][c.key_len as usize % 2]]) else { return };
            let unit = unit as usize;
            let layout_ok = batchcrypt::aes::xts::check(unit, data.len()).is_ok();
            let want = layout_ok.then(|| kernel::xts(&key, &tweak, unit, data, decrypt));
            for b in BACKENDS {
                let aes = engine(b).aes();
                let mut out = vec![0u8; data.len()];
                let r = if decrypt {
                    aes.xts_decrypt(&key, &tweak, unit, data, &mut out)
                } else {
                    aes.xts_encrypt(&key, &tweak, unit, data, &mut out)
                };
                match &want {
                    Some(w) => {
                        r.unwrap();
                        assert_eq!(&out, w, "XTS on {b:?}");
                    }
                    None => assert!(r.is_err(), "XTS accepted a layout the check refuses on {b:?}"),
                }
            }
        }
    }
});

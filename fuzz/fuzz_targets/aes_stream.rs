//! The chunked AES-GCM file format on decryption: streams sealed from the fuzzer's plaintext
//! and then edited (or raw bytes). Decryption must refuse every edited stream, write only
//! plaintext whose chunk authenticated (a prefix of the original), and agree between the
//! portable and OpenSSL backends.
#![no_main]

use arbitrary::Arbitrary;
use batchcrypt::aes::stream::{open, seal};
use batchcrypt::aes::Key;
use batchcrypt::Backend;
use batchcrypt_fuzz::{edit, engine, Edit};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Case {
    key: [u8; 32],
    long_key: bool,
    plaintext: Vec<u8>,
    /// Chunks of 2^12 plus this (so a few kilobytes of plaintext span several chunks).
    chunk_extra: u8,
    edits: Vec<Edit>,
    raw: Option<Vec<u8>>,
}

fuzz_target!(|c: Case| {
    let key = Key::new(&c.key[..if c.long_key { 32 } else { 16 }]).unwrap();
    let mut sealed = Vec::new();
    seal(&engine(Backend::Portable).aes(), &key, 12 + c.chunk_extra % 2, &c.plaintext[..], &mut sealed, |_| {}).unwrap();
    let stream = match c.raw {
        Some(raw) => raw,
        None => edit(sealed.clone(), &c.edits),
    };
    let mut verdicts = Vec::new();
    for b in [Backend::Portable, Backend::OpenSsl] {
        let mut out = Vec::new();
        let r = open(&engine(b).aes(), &key, &stream[..], &mut out, |_| {});
        match &r {
            Ok(n) => {
                assert_eq!(stream, sealed, "an altered stream authenticated on {b:?}");
                assert_eq!(*n as usize, c.plaintext.len());
                assert_eq!(out, c.plaintext);
            }
            Err(_) => assert!(c.plaintext.starts_with(&out), "unauthenticated plaintext released on {b:?}"),
        }
        verdicts.push((r.map_err(|e| e.to_string()), out));
    }
    assert_eq!(verdicts[0], verdicts[1], "the backends disagree");
});

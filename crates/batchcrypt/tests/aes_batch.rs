//! Batches of independent AES messages: every message equal to the one-message API and to
//! RustCrypto's `aes-gcm` on random layouts (empty messages, unaligned offsets, AES-128 and -256
//! mixed, one key for all), a tampered message failing alone, and malformed requests as errors.

use aes_gcm::aead::AeadInPlace;
use aes_gcm::KeyInit;
use batchcrypt::aes::xts::XtsKey;
use batchcrypt::aes::Key;
use batchcrypt::messages::Messages;
use batchcrypt::{Backend, Error, Primitive};

mod common;

/// The CPU backends (XTS batches have no GPU kernel yet: forcing the GPU is an error, checked
/// below; CTR and GCM batches on the GPU are checked against them at the end).
fn cpu_backends() -> Vec<Backend> {
    common::backends(Primitive::Aes)
        .into_iter()
        .filter(|b| *b != Backend::Cuda)
        .collect()
}

/// A buffer with `lens.len()` messages at unaligned offsets (a gap of a few bytes before each).
fn layout(rng: &mut common::Rng, lens: &[usize]) -> (Vec<u8>, Vec<u64>) {
    let mut offsets = vec![3u64];
    for &l in lens {
        let start = *offsets.last().unwrap();
        offsets.push(start + l as u64);
    }
    let data = rng.bytes(*offsets.last().unwrap() as usize);
    (data, offsets)
}

fn keys(rng: &mut common::Rng, n: usize) -> Vec<Key> {
    (0..n)
        .map(|i| Key::new(&rng.bytes(if i % 3 == 0 { 32 } else { 16 })).unwrap())
        .collect()
}

const LENS: [usize; 12] = [0, 1, 15, 16, 17, 64, 100, 1000, 4096, 5000, 70_001, 33];

#[test]
fn ctr_and_gcm_messages_match_the_single_message_api() {
    let mut rng = common::Rng(41);
    let (data, offsets) = layout(&mut rng, &LENS);
    let msgs = Messages::var(&data, &offsets).unwrap();
    let n = LENS.len();
    let keys = keys(&mut rng, n);
    let ivs: Vec<[u8; 16]> = (0..n)
        .map(|i| {
            let mut iv: [u8; 16] = rng.bytes(16).try_into().unwrap();
            if i % 2 == 0 {
                iv[8..].fill(0xff); // the 128-bit counter carries
            }
            iv
        })
        .collect();
    let nonces: Vec<[u8; 12]> = (0..n).map(|_| rng.bytes(12).try_into().unwrap()).collect();
    let aad_bytes: Vec<Vec<u8>> = (0..n).map(|i| rng.bytes(i * 7)).collect();
    let aads: Vec<&[u8]> = aad_bytes.iter().map(|a| a.as_slice()).collect();
    let one = common::engine(Backend::OpenSsl);
    for b in cpu_backends() {
        let e = common::engine(b);
        let mut out = vec![0u8; data.len()];
        e.aes().ctr_batch(&keys, &ivs, &msgs, &mut out).unwrap();
        for i in 0..n {
            let r = msgs.range(i);
            let mut want = vec![0u8; r.len()];
            one.aes()
                .ctr(&keys[i], &ivs[i], &data[r.clone()], &mut want)
                .unwrap();
            assert!(out[r] == want[..], "{b}: CTR message {i}");
        }
        let mut ct = vec![0u8; data.len()];
        let tags = e
            .aes()
            .gcm_encrypt_batch(&keys, &nonces, &aads, &msgs, &mut ct)
            .unwrap()
            .value;
        for i in 0..n {
            let r = msgs.range(i);
            // RustCrypto's AEAD, independent of our GCM code.
            let mut want = data[r.clone()].to_vec();
            let tag = match &keys[i] {
                Key::Aes128(k) => aes_gcm::Aes128Gcm::new(k.into()).encrypt_in_place_detached(
                    (&nonces[i]).into(),
                    aads[i],
                    &mut want,
                ),
                Key::Aes256(k) => aes_gcm::Aes256Gcm::new(k.into()).encrypt_in_place_detached(
                    (&nonces[i]).into(),
                    aads[i],
                    &mut want,
                ),
            }
            .unwrap();
            assert!(
                ct[r] == want[..] && tags[i][..] == tag[..],
                "{b}: GCM message {i}"
            );
        }
        // Decryption, with message 5's tag and message 7's ciphertext damaged.
        let mut bad_tags = tags.clone();
        bad_tags[5][0] ^= 1;
        let mut bad_ct = ct.clone();
        bad_ct[msgs.range(7).start + 3] ^= 0x80;
        let mut back = vec![0xeeu8; data.len()];
        let ok = e
            .aes()
            .gcm_decrypt_batch(
                &keys,
                &nonces,
                &aads,
                &Messages::var(&bad_ct, &offsets).unwrap(),
                &mut back,
                &bad_tags,
            )
            .unwrap()
            .value;
        for (i, &ok) in ok.iter().enumerate().take(n) {
            let r = msgs.range(i);
            if i == 5 || i == 7 {
                assert!(
                    !ok && back[r].iter().all(|&x| x == 0),
                    "{b}: message {i} must fail, zeroed"
                );
            } else {
                assert!(ok && back[r.clone()] == data[r], "{b}: message {i}");
            }
        }
    }
}

/// More messages than one CPU worker task takes (1 024), of random lengths after a leading gap:
/// every task must find its own messages' bytes, results in message order.
#[test]
fn many_messages_span_several_worker_tasks() {
    let mut rng = common::Rng(47);
    let lens: Vec<usize> = (0..3_000).map(|i| (i * 37 + 11) % 150).collect();
    let (data, offsets) = layout(&mut rng, &lens);
    let msgs = Messages::var(&data, &offsets).unwrap();
    let n = lens.len();
    let keys = keys(&mut rng, n);
    let nonces: Vec<[u8; 12]> = (0..n).map(|_| rng.bytes(12).try_into().unwrap()).collect();
    let one = common::engine(Backend::OpenSsl);
    for b in cpu_backends() {
        let e = common::engine(b);
        let mut out = vec![0u8; data.len()];
        let tags = e
            .aes()
            .gcm_encrypt_batch(&keys, &nonces, &[], &msgs, &mut out)
            .unwrap()
            .value;
        assert_eq!(
            out[..3],
            [0u8; 3],
            "{b}: the gap before the first message is not output"
        );
        for i in (0..n).step_by(7) {
            let r = msgs.range(i);
            let mut want = vec![0u8; r.len()];
            let tag = one
                .aes()
                .gcm_encrypt(&keys[i], &nonces[i], &[], &data[r.clone()], &mut want)
                .unwrap()
                .value;
            assert_eq!(out[r], want[..], "{b}: message {i}");
            assert_eq!(tags[i], tag, "{b}: tag {i}");
        }
        // Decrypting with one tag spoiled fails that message alone.
        let mut bad = tags.clone();
        bad[2_500][0] ^= 1;
        let ct = Messages::var(&out, &offsets).unwrap();
        let mut back = vec![0u8; data.len()];
        let ok = e
            .aes()
            .gcm_decrypt_batch(&keys, &nonces, &[], &ct, &mut back, &bad)
            .unwrap()
            .value;
        assert!(
            ok.iter().enumerate().all(|(i, &v)| v == (i != 2_500)),
            "{b}"
        );
        for i in (0..n).filter(|&i| i != 2_500) {
            assert_eq!(back[msgs.range(i)], data[msgs.range(i)], "{b}: message {i}");
        }
        assert!(back[msgs.range(2_500)].iter().all(|&x| x == 0), "{b}");
    }
}

#[test]
fn one_key_for_all_and_fixed_lengths() {
    let mut rng = common::Rng(43);
    let data = rng.bytes(64 * 1000);
    let msgs = Messages::fixed(&data, 64).unwrap();
    let key = keys(&mut rng, 1);
    let ivs: Vec<[u8; 16]> = (0..1000u32)
        .map(|i| {
            let mut iv = [0u8; 16];
            iv[..4].copy_from_slice(&i.to_be_bytes());
            iv
        })
        .collect();
    let mut outs = Vec::new();
    for b in cpu_backends() {
        let mut out = vec![0u8; data.len()];
        common::engine(b)
            .aes()
            .ctr_batch(&key, &ivs, &msgs, &mut out)
            .unwrap();
        outs.push(out);
    }
    assert!(outs.windows(2).all(|w| w[0] == w[1]));
    let mut want = vec![0u8; 64];
    common::engine(Backend::Portable)
        .aes()
        .ctr(&key[0], &ivs[999], &data[64 * 999..], &mut want)
        .unwrap();
    assert!(outs[0][64 * 999..] == want[..]);
}

#[test]
fn xts_messages_are_units_under_their_own_keys() {
    let mut rng = common::Rng(47);
    let lens = [16usize, 17, 31, 512, 4096, 4100, 65_536, 100];
    let (data, offsets) = layout(&mut rng, &lens);
    let msgs = Messages::var(&data, &offsets).unwrap();
    let keys: Vec<XtsKey> = (0..lens.len())
        .map(|i| XtsKey::new(&rng.bytes(if i % 2 == 0 { 32 } else { 64 })).unwrap())
        .collect();
    let tweaks: Vec<[u8; 16]> = (0..lens.len())
        .map(|_| rng.bytes(16).try_into().unwrap())
        .collect();
    let one = common::engine(Backend::OpenSsl);
    for b in cpu_backends() {
        let e = common::engine(b);
        let mut ct = vec![0u8; data.len()];
        e.aes()
            .xts_encrypt_batch(&keys, &tweaks, &msgs, &mut ct)
            .unwrap();
        for i in 0..lens.len() {
            let r = msgs.range(i);
            let mut want = vec![0u8; r.len()];
            one.aes()
                .xts_encrypt(&keys[i], &tweaks[i], r.len(), &data[r.clone()], &mut want)
                .unwrap();
            assert!(ct[r] == want[..], "{b}: XTS message {i}");
        }
        let mut back = vec![0u8; data.len()];
        e.aes()
            .xts_decrypt_batch(
                &keys,
                &tweaks,
                &Messages::var(&ct, &offsets).unwrap(),
                &mut back,
            )
            .unwrap();
        assert!(back[3..] == data[3..], "{b}: XTS round trip");
    }
}

#[test]
fn malformed_batches_are_errors() {
    let data = vec![1u8; 100];
    let offsets = [0u64, 10, 50, 100];
    let msgs = Messages::var(&data, &offsets).unwrap();
    let k = Key::Aes128([1; 16]);
    let xk = XtsKey::new(&[[1u8; 16], [2u8; 16]].concat()).unwrap();
    let invalid = |r: batchcrypt::Result<()>| matches!(r, Err(Error::InvalidInput(_)));
    for b in cpu_backends() {
        let e = common::engine(b);
        let aes = e.aes();
        let mut out = vec![0u8; 100];
        let two_keys = [k.clone(), k.clone()];
        assert!(
            invalid(
                aes.ctr_batch(&two_keys, &[[0; 16]; 3], &msgs, &mut out)
                    .map(|_| ())
            ),
            "{b}: 2 keys for 3"
        );
        assert!(
            invalid(
                aes.ctr_batch(std::slice::from_ref(&k), &[[0; 16]; 1], &msgs, &mut out)
                    .map(|_| ())
            ),
            "{b}: one IV for all"
        );
        assert!(
            invalid(
                aes.ctr_batch(
                    std::slice::from_ref(&k),
                    &[[0; 16]; 3],
                    &msgs,
                    &mut out[..99]
                )
                .map(|_| ())
            ),
            "{b}: output length"
        );
        assert!(
            invalid(
                aes.gcm_encrypt_batch(
                    std::slice::from_ref(&k),
                    &[[0; 12]; 3],
                    &[b"x"],
                    &msgs,
                    &mut out
                )
                .map(|_| ())
            ),
            "{b}: one AAD for 3"
        );
        out.fill(0xaa);
        assert!(
            invalid(
                aes.gcm_decrypt_batch(
                    std::slice::from_ref(&k),
                    &[[0; 12]; 3],
                    &[],
                    &msgs,
                    &mut out,
                    &[[0; 16]; 2]
                )
                .map(|_| ())
            ),
            "{b}: 2 tags"
        );
        assert!(
            out.iter().all(|&x| x == 0),
            "{b}: a failed decryption releases nothing"
        );
        // XTS: message 0 has 10 bytes, under one block.
        assert!(
            invalid(
                aes.xts_encrypt_batch(std::slice::from_ref(&xk), &[[0; 16]; 3], &msgs, &mut out)
                    .map(|_| ())
            ),
            "{b}: short XTS message"
        );
    }
    if common::backends(Primitive::Aes).contains(&Backend::Cuda) {
        let e = common::engine(Backend::Cuda);
        let mut out = vec![0u8; 100];
        assert!(invalid(
            e.aes()
                .ctr_batch(std::slice::from_ref(&k), &[[0; 16]; 2], &msgs, &mut out)
                .map(|_| ())
        ));
        assert!(invalid(
            e.aes()
                .xts_encrypt_batch(&[xk], &[[0; 16]; 3], &msgs, &mut out)
                .map(|_| ())
        ));
    }
}

/// CTR batches as the GPU runs them (layouts of every kind, per-message keys of both sizes or
/// one key for all), against OpenSSL.
fn ctr_cases(
    rng: &mut common::Rng,
) -> Vec<(Vec<Key>, Vec<[u8; 16]>, Vec<u8>, Option<Vec<u64>>, usize)> {
    let iv = |rng: &mut common::Rng, i: usize| -> [u8; 16] {
        let mut iv: [u8; 16] = rng.bytes(16).try_into().unwrap();
        if i.is_multiple_of(2) {
            iv[8..].fill(0xff); // the 128-bit counter carries
        }
        iv
    };
    let mut cases = Vec::new();
    // Offsets: empty messages, unaligned starts, messages over many thread items.
    let lens: Vec<usize> = (0..200)
        .map(|i| match i % 7 {
            0 => 0,
            1 => rng.below(16) as usize,
            2 => 256,
            3 => 257 + rng.below(600) as usize,
            _ => rng.below(100) as usize,
        })
        .chain(LENS)
        .collect();
    let (data, offsets) = layout(rng, &lens);
    let n = lens.len();
    let ivs = (0..n).map(|i| iv(rng, i)).collect();
    cases.push((keys(rng, n), ivs, data, Some(offsets), n));
    // Fixed lengths, a partial last block, one key for all and one per message.
    for len in [64usize, 100] {
        let n = 300;
        let data = rng.bytes(n * len);
        let ivs: Vec<[u8; 16]> = (0..n).map(|i| iv(rng, i)).collect();
        cases.push((keys(rng, 1), ivs.clone(), data.clone(), None, len));
        cases.push((keys(rng, n), ivs, data, None, len));
    }
    cases
}

fn messages<'a>(data: &'a [u8], offsets: &'a Option<Vec<u64>>, len: usize) -> Messages<'a> {
    match offsets {
        Some(o) => Messages::var(data, o).unwrap(),
        None => Messages::fixed(data, len).unwrap(),
    }
}

fn ctr_reference(keys: &[Key], ivs: &[[u8; 16]], msgs: &Messages<'_>) -> Vec<u8> {
    let mut want = vec![0u8; msgs.data().len()];
    common::engine(Backend::OpenSsl)
        .aes()
        .ctr_batch(keys, ivs, msgs, &mut want)
        .unwrap();
    want
}

/// GCM through OpenSSL for the same cases: nonces from the counter blocks, AADs for the
/// offsets layout; returns the nonces, AADs, output and tags.
type GcmRef = (Vec<[u8; 12]>, Vec<Vec<u8>>, Vec<u8>, Vec<[u8; 16]>);
fn gcm_reference(
    rng: &mut common::Rng,
    keys: &[Key],
    ivs: &[[u8; 16]],
    msgs: &Messages<'_>,
) -> GcmRef {
    let n = msgs.count();
    let nonces: Vec<[u8; 12]> = ivs.iter().map(|iv| iv[..12].try_into().unwrap()).collect();
    let aads: Vec<Vec<u8>> = match msgs.fixed_len() {
        true => vec![],
        false => (0..n).map(|i| rng.bytes(i % 40)).collect(),
    };
    let aad_refs: Vec<&[u8]> = aads.iter().map(|a| a.as_slice()).collect();
    let mut out = vec![0u8; msgs.data().len()];
    let tags = common::engine(Backend::OpenSsl)
        .aes()
        .gcm_encrypt_batch(keys, &nonces, &aad_refs, msgs, &mut out)
        .unwrap()
        .value;
    (nonces, aads, out, tags)
}

/// Only the messages' bytes: the bytes in gaps are the output buffer's own.
fn message_bytes(msgs: &Messages<'_>, buf: &[u8]) -> Vec<u8> {
    (0..msgs.count())
        .flat_map(|i| buf[msgs.range(i)].to_vec())
        .collect()
}

#[cfg(feature = "emulation")]
#[test]
fn batch_kernels_match_the_cpu() {
    use batchcrypt::emulation::aes::{ctr_batch, gcm_batch};
    let mut rng = common::Rng(47);
    for (keys, ivs, data, offsets, len) in ctr_cases(&mut rng) {
        let msgs = messages(&data, &offsets, len);
        let want = ctr_reference(&keys, &ivs, &msgs);
        let (nonces, aads, gcm_want, tags_want) = gcm_reference(&mut rng, &keys, &ivs, &msgs);
        let aads: Vec<&[u8]> = aads.iter().map(|a| a.as_slice()).collect();
        let ct_msgs = messages(&gcm_want, &offsets, len);
        // One chunk, and chunks of about 1 KiB.
        for chunk_bytes in [usize::MAX, 1024] {
            let what = format!("{} messages, chunks of {chunk_bytes} bytes", msgs.count());
            let got = ctr_batch(&keys, &ivs, &msgs, chunk_bytes);
            assert!(
                message_bytes(&msgs, &got) == message_bytes(&msgs, &want),
                "CTR, {what}"
            );
            let (ct, tags) = gcm_batch(&keys, &nonces, &aads, &msgs, false, chunk_bytes);
            assert!(
                message_bytes(&msgs, &ct) == message_bytes(&msgs, &gcm_want),
                "GCM, {what}"
            );
            assert_eq!(tags, tags_want, "GCM tags, {what}");
            // Decryption: the plaintext back, and the tags over the ciphertext (the input).
            let (pt, tags) = gcm_batch(&keys, &nonces, &aads, &ct_msgs, true, chunk_bytes);
            assert!(
                message_bytes(&msgs, &pt) == message_bytes(&msgs, &data),
                "GCM decryption, {what}"
            );
            assert_eq!(tags, tags_want, "GCM decryption tags, {what}");
        }
    }
}

#[test]
fn gpu_ctr_batches_match_the_cpu() {
    if !common::backends(Primitive::Aes).contains(&Backend::Cuda) {
        return;
    }
    let e = common::engine(Backend::Cuda);
    let mut rng = common::Rng(53);
    let mut cases = ctr_cases(&mut rng);
    // Several pipeline chunks (2^20 messages each at most).
    let n = (1 << 21) + 3;
    let data = rng.bytes(16 * n);
    let ivs: Vec<[u8; 16]> = (0..n).map(|_| rng.bytes(16).try_into().unwrap()).collect();
    cases.push((keys(&mut rng, n), ivs, data, None, 16));
    for (keys, ivs, data, offsets, len) in cases {
        let msgs = messages(&data, &offsets, len);
        let what = format!("{} messages", msgs.count());
        let want = ctr_reference(&keys, &ivs, &msgs);
        let mut got = vec![0u8; data.len()];
        let out = e.aes().ctr_batch(&keys, &ivs, &msgs, &mut got).unwrap();
        assert_eq!(out.backend, Backend::Cuda);
        assert!(
            message_bytes(&msgs, &got) == message_bytes(&msgs, &want),
            "CTR, {what}"
        );
        // GCM: encryption, then decryption with one message's tag and another's byte altered.
        let (nonces, aads, ct_want, tags_want) = gcm_reference(&mut rng, &keys, &ivs, &msgs);
        let aads: Vec<&[u8]> = aads.iter().map(|a| a.as_slice()).collect();
        let mut ct = vec![0u8; data.len()];
        let out = e
            .aes()
            .gcm_encrypt_batch(&keys, &nonces, &aads, &msgs, &mut ct)
            .unwrap();
        assert_eq!(out.backend, Backend::Cuda);
        assert!(
            message_bytes(&msgs, &ct) == message_bytes(&msgs, &ct_want),
            "GCM, {what}"
        );
        assert!(out.value == tags_want, "GCM tags, {what}");
        let mut tags = tags_want.clone();
        tags[1][0] ^= 1;
        let last = msgs.count() - 1;
        let bad_byte = msgs.range(last).start;
        let tampered_last = !msgs.range(last).is_empty();
        if tampered_last {
            ct[bad_byte] ^= 0x80;
        }
        let ct_msgs = messages(&ct, &offsets, len);
        let mut pt = vec![0xaau8; data.len()];
        let ok = e
            .aes()
            .gcm_decrypt_batch(&keys, &nonces, &aads, &ct_msgs, &mut pt, &tags)
            .unwrap();
        assert_eq!(ok.backend, Backend::Cuda);
        for i in 0..msgs.count() {
            let bad = i == 1 || (i == last && tampered_last);
            assert_eq!(ok.value[i], !bad, "GCM verdict of message {i}, {what}");
            let r = msgs.range(i);
            if bad {
                assert!(
                    pt[r].iter().all(|&b| b == 0),
                    "message {i} released, {what}"
                );
            } else {
                assert!(pt[r.clone()] == data[r], "message {i} decrypted, {what}");
            }
        }
    }
}

type XtsCase = (Vec<XtsKey>, Vec<[u8; 16]>, Vec<u8>, Option<Vec<u64>>, usize);

/// XTS batches as the GPU runs them: units ending in a partial block (alone in its thread item
/// or not), units over many thread items, both key sizes, one key for all and one per message.
fn xts_cases(rng: &mut common::Rng) -> Vec<XtsCase> {
    let xts_keys = |rng: &mut common::Rng, n: usize| -> Vec<XtsKey> {
        (0..n)
            .map(|i| XtsKey::new(&rng.bytes(if i % 3 == 0 { 64 } else { 32 })).unwrap())
            .collect()
    };
    let tweaks = |rng: &mut common::Rng, n: usize| -> Vec<[u8; 16]> {
        (0..n).map(|_| rng.bytes(16).try_into().unwrap()).collect()
    };
    let mut cases = Vec::new();
    let lens: Vec<usize> = [
        16usize, 17, 31, 32, 255, 256, 257, 261, 271, 512, 4096, 4099, 70_001,
    ]
    .into_iter()
    .chain((0..100).map(|_| 16 + rng.below(700) as usize))
    .collect();
    let (data, offsets) = layout(rng, &lens);
    let n = lens.len();
    cases.push((xts_keys(rng, n), tweaks(rng, n), data, Some(offsets), n));
    for len in [512usize, 100] {
        let n = 300;
        let data = rng.bytes(n * len);
        let t = tweaks(rng, n);
        cases.push((xts_keys(rng, 1), t.clone(), data.clone(), None, len));
        cases.push((xts_keys(rng, n), t, data, None, len));
    }
    cases
}

fn xts_reference(keys: &[XtsKey], tweaks: &[[u8; 16]], msgs: &Messages<'_>) -> Vec<u8> {
    let mut want = vec![0u8; msgs.data().len()];
    common::engine(Backend::OpenSsl)
        .aes()
        .xts_encrypt_batch(keys, tweaks, msgs, &mut want)
        .unwrap();
    want
}

#[cfg(feature = "emulation")]
#[test]
fn xts_batch_kernels_match_the_cpu() {
    use batchcrypt::emulation::aes::xts_batch;
    let mut rng = common::Rng(59);
    for (keys, tweaks, data, offsets, len) in xts_cases(&mut rng) {
        let msgs = messages(&data, &offsets, len);
        let want = xts_reference(&keys, &tweaks, &msgs);
        let ct_msgs = messages(&want, &offsets, len);
        for chunk_bytes in [usize::MAX, 1024] {
            let what = format!("{} messages, chunks of {chunk_bytes} bytes", msgs.count());
            let got = xts_batch(&keys, &tweaks, &msgs, false, chunk_bytes);
            assert!(
                message_bytes(&msgs, &got) == message_bytes(&msgs, &want),
                "XTS, {what}"
            );
            let back = xts_batch(&keys, &tweaks, &ct_msgs, true, chunk_bytes);
            assert!(
                message_bytes(&msgs, &back) == message_bytes(&msgs, &data),
                "XTS decryption, {what}"
            );
        }
    }
}

#[test]
fn gpu_xts_batches_match_the_cpu() {
    if !common::backends(Primitive::Aes).contains(&Backend::Cuda) {
        return;
    }
    let e = common::engine(Backend::Cuda);
    let mut rng = common::Rng(61);
    let mut cases = xts_cases(&mut rng);
    // Several pipeline chunks of 512-byte sectors, one key per sector.
    let n = 200_003;
    let data = rng.bytes(512 * n);
    let tweaks: Vec<[u8; 16]> = (0..n).map(|i| (i as u128).to_le_bytes()).collect();
    let keys: Vec<XtsKey> = (0..n)
        .map(|_| XtsKey::new(&rng.bytes(32)).unwrap())
        .collect();
    cases.push((keys, tweaks, data, None, 512));
    for (keys, tweaks, data, offsets, len) in cases {
        let msgs = messages(&data, &offsets, len);
        let what = format!("{} messages", msgs.count());
        let want = xts_reference(&keys, &tweaks, &msgs);
        let mut got = vec![0u8; data.len()];
        let out = e
            .aes()
            .xts_encrypt_batch(&keys, &tweaks, &msgs, &mut got)
            .unwrap();
        assert_eq!(out.backend, Backend::Cuda);
        assert!(
            message_bytes(&msgs, &got) == message_bytes(&msgs, &want),
            "XTS, {what}"
        );
        let ct_msgs = messages(&want, &offsets, len);
        let mut back = vec![0u8; data.len()];
        e.aes()
            .xts_decrypt_batch(&keys, &tweaks, &ct_msgs, &mut back)
            .unwrap();
        assert!(
            message_bytes(&msgs, &back) == message_bytes(&msgs, &data),
            "XTS decryption, {what}"
        );
    }
}

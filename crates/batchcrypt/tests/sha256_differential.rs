//! Every backend against the independent `sha2` crate, on random and boundary lengths, and every
//! backend against every other bit for bit (the GPU included where there is one).

mod common;
use batchcrypt::sha256::{Digest, Mode};
use batchcrypt::Primitive;
use common::{backends, engine, Rng};
use sha2::{Digest as _, Sha256};

fn reference(msg: &[u8], mode: Mode) -> Digest {
    let d: Digest = Sha256::digest(msg).into();
    match mode {
        Mode::Single => d,
        Mode::Double => Sha256::digest(d).into(),
    }
}

/// Random lengths 0..10 000 bytes, one variable-length batch per backend and mode.
#[test]
fn random_lengths_match_sha2_on_every_backend() {
    let mut rng = Rng(0x9e3779b97f4a7c15);
    let n = 1500;
    let mut offsets = vec![0u64];
    for i in 0..n {
        // Favour the padding boundaries (55, 56, 63, 64, ...) as well as uniform lengths.
        let len = if i % 3 == 0 {
            (rng.below(40) * 64 + [0, 1, 55, 56, 63, 64, 119, 120][rng.below(8) as usize]).min(9999)
        } else {
            rng.below(10_000)
        };
        offsets.push(offsets.last().unwrap() + len);
    }
    let data = rng.bytes(*offsets.last().unwrap() as usize);
    for mode in [Mode::Single, Mode::Double] {
        let expected: Vec<Digest> = offsets
            .windows(2)
            .map(|w| reference(&data[w[0] as usize..w[1] as usize], mode))
            .collect();
        for b in backends(Primitive::Sha256) {
            let out = engine(b).sha256().hash_var(&data, &offsets, mode).unwrap();
            assert_eq!(out.backend, b);
            for (i, (got, want)) in out.value.iter().zip(&expected).enumerate() {
                assert_eq!(
                    got,
                    want,
                    "backend {b}, mode {mode:?}, message {i} of length {}",
                    offsets[i + 1] - offsets[i]
                );
            }
        }
    }
}

/// Fixed-length batches, including the specialised 64- and 80-byte SHA256d kernels, with batch
/// sizes that leave SIMD lanes and GPU blocks partly filled.
#[test]
fn fixed_lengths_match_sha2_on_every_backend() {
    let mut rng = Rng(42);
    for len in [
        1usize, 31, 32, 55, 56, 63, 64, 65, 80, 119, 120, 128, 1000, 4096,
    ] {
        for n in [1usize, 7, 17, 257] {
            let data = rng.bytes(len * n);
            for mode in [Mode::Single, Mode::Double] {
                let expected: Vec<Digest> =
                    data.chunks_exact(len).map(|m| reference(m, mode)).collect();
                for b in backends(Primitive::Sha256) {
                    let out = engine(b).sha256().hash_fixed(&data, len, mode).unwrap();
                    assert_eq!(
                        out.value, expected,
                        "backend {b}, len {len}, n {n}, mode {mode:?}"
                    );
                }
            }
        }
    }
}

/// Many 64-byte merkle nodes: every backend, single- and multi-threaded, gives the same output.
#[test]
fn large_sha256d_64_batch_identical_across_backends() {
    let n = 100_003; // odd, and larger than the parallel threshold
    let data = Rng(7).bytes(64 * n);
    let mut first: Option<Vec<Digest>> = None;
    for b in backends(Primitive::Sha256) {
        let out = engine(b).sha256().sha256d_64(&data).unwrap().value;
        match &first {
            None => {
                for i in (0..n).step_by(997) {
                    assert_eq!(
                        out[i],
                        reference(&data[64 * i..64 * i + 64], Mode::Double),
                        "backend {b} item {i}"
                    );
                }
                first = Some(out);
            }
            Some(f) => assert!(f == &out, "backend {b} differs from the first backend"),
        }
    }
}

/// Batches spread over many buffers (requests of different sizes, some empty) hash as the same
/// messages joined in one buffer, on every backend (the GPU staging each part straight into its
/// upload buffer), for the specialised 64- and 80-byte kernels and the general one.
#[test]
fn parts_hash_as_their_messages_joined() {
    let mut rng = Rng(11);
    for (len, mode) in [(64, Mode::Double), (80, Mode::Double), (100, Mode::Single)] {
        let counts = [0usize, 1, 255, 0, 256, 3, 4096, 17];
        let bufs: Vec<Vec<u8>> = counts.iter().map(|&k| rng.bytes(k * len)).collect();
        let parts: Vec<&[u8]> = bufs.iter().map(|b| b.as_slice()).collect();
        let joined = bufs.concat();
        let expected: Vec<Digest> = joined
            .chunks_exact(len)
            .map(|m| reference(m, mode))
            .collect();
        let p = batchcrypt::sha256::FixedParts::new(&parts, len).unwrap();
        for b in backends(Primitive::Sha256) {
            let mut out = vec![[0u8; 32]; expected.len()];
            let ran = engine(b)
                .sha256()
                .hash_fixed_parts_into(&p, mode, &mut out)
                .unwrap();
            assert_eq!(ran.backend, b);
            assert!(out == expected, "backend {b}, len {len}, mode {mode:?}");
        }
        let mut short = vec![[0u8; 32]; expected.len() - 1];
        assert!(engine(backends(Primitive::Sha256)[0])
            .sha256()
            .hash_fixed_parts_into(&p, mode, &mut short)
            .is_err());
    }
}

/// Parts in page-locked blocks (a server's requests copied on arrival) hash as their messages
/// joined: on the GPU the blocks are read in place by the gather kernel where every part is a
/// whole number of 16-byte words (64- and 80-byte messages), and staged otherwise (100-byte
/// messages, or a batch with one part in ordinary memory); the digests come back into ordinary
/// memory and into a page-locked block. Without a GPU there are no blocks.
#[test]
fn page_locked_parts_hash_as_their_messages_joined() {
    use batchcrypt::backend::gpu::page_locked;
    if batchcrypt::backend::gpu::count() == 0 {
        assert!(page_locked(4096).is_none());
        return;
    }
    let mut rng = Rng(12);
    for (len, mode) in [(64, Mode::Double), (80, Mode::Double), (100, Mode::Single)] {
        let counts = [1usize, 255, 256, 3, 4096, 17];
        let bufs: Vec<Vec<u8>> = counts.iter().map(|&k| rng.bytes(k * len)).collect();
        let blocks: Vec<_> = bufs
            .iter()
            .map(|b| {
                let mut block = page_locked(b.len()).expect("a page-locked block");
                block.copy_from_slice(b);
                block
            })
            .collect();
        let expected: Vec<Digest> = bufs
            .concat()
            .chunks_exact(len)
            .map(|m| reference(m, mode))
            .collect();
        let locked: Vec<&[u8]> = blocks.iter().map(|b| &b[..]).collect();
        let mut mixed = locked.clone();
        mixed[2] = &bufs[2];
        for parts in [&locked, &mixed] {
            let p = batchcrypt::sha256::FixedParts::new(parts, len).unwrap();
            let mut out = vec![[0u8; 32]; expected.len()];
            let ran = engine(batchcrypt::Backend::Cuda)
                .sha256()
                .hash_fixed_parts_into(&p, mode, &mut out)
                .unwrap();
            assert_eq!(ran.backend, batchcrypt::Backend::Cuda);
            assert!(out == expected, "len {len}, mode {mode:?}");
            // Into a page-locked block as well (a server's batch outputs), which the GPU's copy
            // writes in place.
            let mut block = page_locked(32 * expected.len()).expect("a page-locked block");
            block.fill(0);
            engine(batchcrypt::Backend::Cuda)
                .sha256()
                .hash_fixed_parts_into(&p, mode, block.as_chunks_mut().0)
                .unwrap();
            assert!(
                block.as_chunks().0 == expected,
                "len {len}, mode {mode:?}, in place"
            );
        }
    }
}

/// The single-message entry point against sha2 for every length up to 300 bytes.
#[test]
fn single_message_digest() {
    let data = Rng(3).bytes(300);
    for len in 0..=300 {
        assert_eq!(
            batchcrypt::sha256::digest(&data[..len]),
            reference(&data[..len], Mode::Single),
            "len {len}"
        );
        assert_eq!(
            batchcrypt::sha256::digest_double(&data[..len]),
            reference(&data[..len], Mode::Double),
            "len {len}"
        );
    }
}

/// Auto mode returns the same digests as the reference and says which backend ran.
#[test]
fn auto_reports_its_backend() {
    let data = Rng(11).bytes(64 * 5000);
    let out = batchcrypt::Engine::with_backend(batchcrypt::BackendChoice::Auto)
        .sha256()
        .sha256d_64(&data)
        .unwrap();
    assert!(out.backend.is_available());
    assert_eq!(out.value[4999], reference(&data[64 * 4999..], Mode::Double));
}

/// Auto's batches chosen by comparing estimates are timed, and later choices weigh how they ran
/// against their estimates: where there is a GPU to compare with, a batch leaves its backend's
/// factor for its operation; without one nothing was compared, so nothing is counted.
#[test]
fn auto_counts_what_its_compared_batches_took() {
    let engine = batchcrypt::Engine::with_backend(batchcrypt::BackendChoice::Auto);
    let data = Rng(12).bytes(64 << 16);
    let out = engine.sha256().sha256d_64(&data).unwrap();
    assert_eq!(out.value[7], reference(&data[64 * 7..64 * 8], Mode::Double));
    let slowdowns = engine.dispatcher().slowdowns();
    if batchcrypt::backend::gpu::count() == 0 {
        assert!(slowdowns.is_empty(), "{slowdowns:?}");
        return;
    }
    let (_, _, factor) = *(slowdowns.iter())
        .find(|(op, b, _)| *op == "sha256d-64" && *b == out.backend)
        .unwrap_or_else(|| panic!("{:?} not counted: {slowdowns:?}", out.backend));
    // One batch: a quarter of its ratio's logarithm, the ratio within 1/8-8x.
    assert!((0.59..=1.69).contains(&factor), "{factor}");
}

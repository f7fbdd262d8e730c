//! Malformed batches and impossible backend requests give clear errors, never panics.

mod common;
use batchcrypt::sha256::{Messages, Mode};
use batchcrypt::{Backend, BackendChoice, Engine, Error, Primitive};
use common::{backends, engine};

#[test]
fn empty_batches_are_errors() {
    for b in backends(Primitive::Sha256) {
        let s = engine(b);
        assert!(matches!(
            s.sha256().hash_fixed(&[], 64, Mode::Single),
            Err(Error::EmptyBatch)
        ));
        assert!(matches!(
            s.sha256().hash_var(&[], &[0], Mode::Single),
            Err(Error::EmptyBatch)
        ));
        assert!(matches!(
            s.sha256().merkle_root(&[]),
            Err(Error::EmptyBatch)
        ));
    }
}

#[test]
fn zero_length_messages() {
    let empty =
        hex::decode("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855").unwrap();
    for b in backends(Primitive::Sha256) {
        // In a variable-length batch an empty message is ordinary, between non-empty ones too.
        let out = engine(b)
            .sha256()
            .hash_var(b"ab", &[0, 0, 1, 1, 2, 2], Mode::Single)
            .unwrap();
        assert_eq!(out.value.len(), 5);
        for i in [0, 2, 4] {
            assert_eq!(out.value[i].as_slice(), empty.as_slice(), "backend {b}");
        }
        // A fixed length of zero leaves the count undefined: refused with a pointer to the offsets form.
        let err = engine(b)
            .sha256()
            .hash_fixed(b"", 0, Mode::Single)
            .unwrap_err();
        assert!(err.to_string().contains("offsets"), "{err}");
    }
}

#[test]
fn malformed_offsets_and_lengths() {
    let data = [0u8; 100];
    let cases: [(&[u64], &str); 4] = [
        (&[], "n + 1 entries"),
        (&[0, 50, 40], "decrease"),
        (&[0, 101], "past the end"),
        (&[0, u64::MAX], "past the end"),
    ];
    for (offsets, want) in cases {
        let err = Messages::var(&data, offsets).unwrap_err();
        assert!(
            matches!(err, Error::InvalidInput(_)) && err.to_string().contains(want),
            "{offsets:?}: {err}"
        );
    }
    let err = Messages::fixed(&data, 64).unwrap_err();
    assert!(err.to_string().contains("whole number"), "{err}");
    // Offsets need not start at zero: a window into a larger buffer.
    let out = Engine::with_backend(BackendChoice::Cpu)
        .sha256()
        .hash_var(b"xxabc", &[2, 5], Mode::Single)
        .unwrap();
    assert_eq!(
        hex::encode(out.value[0]),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

#[test]
fn forced_backends_are_honoured_or_refused() {
    for b in Backend::ALL {
        let r = engine(b).sha256().sha256d_64(&[1u8; 64 * 32]);
        match b.availability() {
            Ok(()) if b.implements(Primitive::Sha256) => assert_eq!(r.unwrap().backend, b),
            // Unavailable here, or a backend of another primitive (libsecp256k1): refused, saying why.
            _ => assert!(
                matches!(&r, Err(Error::BackendUnavailable { why, .. }) if !why.is_empty()),
                "{b}: {r:?}"
            ),
        }
    }
    let cpu = Engine::with_backend(BackendChoice::Cpu)
        .sha256()
        .sha256d_64(&[1u8; 64 * 1000])
        .unwrap();
    assert!(!cpu.backend.is_gpu());
    let gpu = Engine::with_backend(BackendChoice::Gpu)
        .sha256()
        .sha256d_64(&[1u8; 64]);
    assert_eq!(gpu.is_ok(), Backend::Cuda.is_available());
}

#[test]
fn backend_names_parse() {
    for b in Backend::ALL {
        assert_eq!(
            b.name().parse::<BackendChoice>().unwrap(),
            BackendChoice::Exact(b)
        );
    }
    assert_eq!("GPU".parse::<BackendChoice>().unwrap(), BackendChoice::Gpu);
    assert_eq!(
        " auto ".parse::<BackendChoice>().unwrap(),
        BackendChoice::Auto
    );
    let err = "tpu".parse::<BackendChoice>().unwrap_err().to_string();
    assert!(err.contains("expected one of"), "{err}");
}

/// Tiny batches never pay for a GPU round trip under auto.
#[test]
fn auto_keeps_tiny_batches_on_the_cpu() {
    let out = Engine::with_backend(BackendChoice::Auto)
        .sha256()
        .sha256d_64(&[9u8; 64 * 4])
        .unwrap();
    assert!(!out.backend.is_gpu(), "4 messages went to {}", out.backend);
}

//! NIST CAVP SHAVS byte-oriented SHA-256 known answers (`SHA256ShortMsg.rsp`, `SHA256LongMsg.rsp`
//! from the CAVP "shabytetestvectors" set, CAVS 11.0) against every backend this machine has.
//!
//! Each file is hashed as one variable-length batch per backend (`hash_var`, exact backend choice),
//! and every vector is also hashed alone through `sha256::digest`. Unavailable backends (a machine
//! without a GPU, a CPU without AVX-512, ...) are skipped with a note.

use batchcrypt::sha256::{self, Mode};
use batchcrypt::{Backend, BackendChoice, Engine, Primitive};
use std::panic::{self, AssertUnwindSafe};

/// One `Len` / `Msg` / `MD` record.
struct Vector {
    /// Message length in bits, as the file states it.
    len_bits: usize,
    msg: Vec<u8>,
    md: [u8; 32],
}

/// Parses a CAVP `.rsp` file: `#` comments and `[L = 32]` headers are skipped; each record is
/// `Len = N`, `Msg = hex`, `MD = hex`, and the message is the first N/8 bytes of `Msg` (for
/// `Len = 0` the file writes `Msg = 00`, an empty message).
fn parse(file: &str) -> Vec<Vector> {
    let path = format!("{}/tests/data/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    let mut out = Vec::new();
    let (mut len_bits, mut msg): (Option<usize>, Option<Vec<u8>>) = (None, None);
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('[') {
            continue;
        }
        let at = || format!("{file} line {}", i + 1);
        let (key, value) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("{}: expected `key = value`, got {line:?}", at()));
        let (key, value) = (key.trim(), value.trim());
        match key {
            "Len" => {
                let n: usize = value
                    .parse()
                    .unwrap_or_else(|e| panic!("{}: bad Len {value:?}: {e}", at()));
                assert!(
                    n.is_multiple_of(8),
                    "{}: Len = {n} is not a whole number of bytes (byte-oriented file expected)",
                    at()
                );
                len_bits = Some(n);
                msg = None;
            }
            "Msg" => {
                let n = len_bits.unwrap_or_else(|| panic!("{}: Msg before Len", at()));
                let mut bytes =
                    hex::decode(value).unwrap_or_else(|e| panic!("{}: bad Msg hex: {e}", at()));
                assert!(
                    bytes.len() >= n / 8,
                    "{}: Msg has {} bytes, Len = {n} needs {}",
                    at(),
                    bytes.len(),
                    n / 8
                );
                bytes.truncate(n / 8);
                msg = Some(bytes);
            }
            "MD" => {
                let n = len_bits
                    .take()
                    .unwrap_or_else(|| panic!("{}: MD before Len", at()));
                let m = msg
                    .take()
                    .unwrap_or_else(|| panic!("{}: MD before Msg", at()));
                let md: [u8; 32] = hex::decode(value)
                    .unwrap_or_else(|e| panic!("{}: bad MD hex: {e}", at()))
                    .try_into()
                    .unwrap_or_else(|v: Vec<u8>| {
                        panic!("{}: MD has {} bytes, expected 32", at(), v.len())
                    });
                out.push(Vector {
                    len_bits: n,
                    msg: m,
                    md,
                });
            }
            other => panic!("{}: unexpected key {other:?}", at()),
        }
    }
    assert!(
        len_bits.is_none() && msg.is_none(),
        "{file}: last record has no MD"
    );
    out
}

/// Hashes all vectors as one variable-length batch on exactly `backend` and checks every digest.
fn check_batch(backend: Backend, file: &str, vectors: &[Vector]) {
    let mut data = Vec::new();
    let mut offsets = vec![0u64];
    for v in vectors {
        data.extend_from_slice(&v.msg);
        offsets.push(data.len() as u64);
    }
    let engine = Engine::with_backend(BackendChoice::Exact(backend));
    let out = engine
        .sha256()
        .hash_var(&data, &offsets, Mode::Single)
        .unwrap_or_else(|e| {
            panic!(
                "backend {backend}, {file}: hash_var of {} vectors failed: {e}",
                vectors.len()
            )
        });
    assert_eq!(
        out.backend, backend,
        "backend {backend}, {file}: the batch ran on {} instead",
        out.backend
    );
    assert_eq!(
        out.value.len(),
        vectors.len(),
        "backend {backend}, {file}: wrong number of digests"
    );
    for (v, got) in vectors.iter().zip(&out.value) {
        assert_eq!(
            hex::encode(got),
            hex::encode(v.md),
            "backend {backend}, {file}, Len = {}: digest differs from the NIST MD",
            v.len_bits
        );
    }
}

fn check_file(file: &str, expected_lens: std::ops::RangeInclusive<usize>, step: usize) {
    let vectors = parse(file);
    let lens: Vec<usize> = vectors.iter().map(|v| v.len_bits).collect();
    assert_eq!(
        lens,
        expected_lens.step_by(step).collect::<Vec<_>>(),
        "{file}: unexpected set of vector lengths"
    );

    // One message at a time through the single-message entry point (SHA-NI when present, else portable).
    let single = if Backend::ShaNi.is_available() {
        Backend::ShaNi
    } else {
        Backend::Portable
    };
    for v in &vectors {
        assert_eq!(
            hex::encode(sha256::digest(&v.msg)),
            hex::encode(v.md),
            "sha256::digest (single-message path, {single}), {file}, Len = {}",
            v.len_bits
        );
    }

    // The whole file as one batch, on each backend; every backend is tried even if one fails.
    let (mut tested, mut failures) = (Vec::new(), Vec::new());
    for backend in Backend::ALL
        .into_iter()
        .filter(|b| b.implements(Primitive::Sha256))
    {
        if let Err(why) = backend.availability() {
            println!("{file}: skipping backend {backend}: {why}");
            continue;
        }
        match panic::catch_unwind(AssertUnwindSafe(|| check_batch(backend, file, &vectors))) {
            Ok(()) => tested.push(backend.name()),
            Err(e) => {
                let msg = e
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| e.downcast_ref::<&str>().copied())
                    .unwrap_or("(non-string panic)");
                failures.push(format!("backend {backend}: {msg}"));
            }
        }
    }
    println!(
        "{file}: {} vectors passed on {}",
        vectors.len(),
        tested.join(", ")
    );
    assert!(
        failures.is_empty(),
        "{file}: {} backend(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(!tested.is_empty(), "{file}: no backend was tested");
}

#[test]
fn short_messages_every_backend() {
    // 65 vectors: Len = 0, 8, ..., 512 bits.
    check_file("SHA256ShortMsg.rsp", 0..=512, 8);
}

#[test]
fn long_messages_every_backend() {
    // 64 vectors: Len = 1304, 2096, ..., 51200 bits (step 792).
    check_file("SHA256LongMsg.rsp", 1304..=51200, 792);
}

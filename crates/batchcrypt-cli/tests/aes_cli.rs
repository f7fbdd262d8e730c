//! `batchcrypt encrypt` / `decrypt` as separate processes: CTR output round-trips through the
//! OpenSSL command line both ways, and the chunked GCM format detects tampering, truncation,
//! reordering and wrong keys without writing unauthenticated plaintext.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(
        std::env::var_os("BATCHCRYPT_BIN")
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_batchcrypt").into()),
    )
}

fn run(args: &[&str]) -> Output {
    bin()
        .args(args)
        .arg("--quiet")
        .output()
        .expect("run batchcrypt")
}

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("batchcrypt-aes-cli-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn data(n: usize, seed: u32) -> Vec<u8> {
    (0..n as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) ^ seed).to_le_bytes()[3])
        .collect()
}

const KEY128: &str = "000102030405060708090a0b0c0d0e0f";
const KEY256: &str = "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4";
const IV: &str = "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";

#[test]
fn ctr_interoperates_with_the_openssl_command_line() {
    if Command::new("openssl").arg("version").output().is_err() {
        eprintln!("note: no openssl command on this machine; skipped");
        return;
    }
    let d = dir();
    for (key, cipher, n) in [
        (KEY128, "-aes-128-ctr", 100_003usize),
        (KEY256, "-aes-256-ctr", 17),
        (KEY128, "-aes-128-ctr", 0),
    ] {
        let plain = d.join(format!("ctr-{n}.bin"));
        std::fs::write(&plain, data(n, 1)).unwrap();
        let (ours, theirs, back) = (d.join("ctr.ours"), d.join("ctr.theirs"), d.join("ctr.back"));
        let o = run(&[
            "encrypt",
            "--mode",
            "ctr",
            "--key",
            key,
            "--iv",
            IV,
            "-i",
            s(&plain),
            "-o",
            s(&ours),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let o = Command::new("openssl")
            .args([
                "enc",
                "-d",
                cipher,
                "-K",
                key,
                "-iv",
                IV,
                "-in",
                s(&ours),
                "-out",
                s(&back),
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(
            std::fs::read(&back).unwrap() == std::fs::read(&plain).unwrap(),
            "openssl cannot decrypt our CTR ({n} bytes)"
        );
        let o = Command::new("openssl")
            .args([
                "enc",
                cipher,
                "-K",
                key,
                "-iv",
                IV,
                "-in",
                s(&plain),
                "-out",
                s(&theirs),
            ])
            .output()
            .unwrap();
        assert!(o.status.success());
        assert!(
            std::fs::read(&theirs).unwrap() == std::fs::read(&ours).unwrap(),
            "CTR output differs from openssl's ({n} bytes)"
        );
        let o = run(&[
            "decrypt",
            "--mode",
            "ctr",
            "--key",
            key,
            "--iv",
            IV,
            "-i",
            s(&theirs),
            "-o",
            s(&back),
        ]);
        assert!(o.status.success());
        assert!(std::fs::read(&back).unwrap() == std::fs::read(&plain).unwrap());
    }
}

#[test]
fn gcm_files_round_trip_and_detect_every_change() {
    let d = dir();
    // 4 KiB chunks: 10 000 bytes make three chunks.
    for n in [0usize, 1, 4096, 10_000] {
        let plain = d.join(format!("gcm-{n}.bin"));
        std::fs::write(&plain, data(n, 2)).unwrap();
        let (sealed, back) = (
            d.join(format!("gcm-{n}.bcg")),
            d.join(format!("gcm-{n}.back")),
        );
        let o = run(&[
            "encrypt",
            "--key",
            KEY256,
            "--chunk-log2",
            "12",
            "-i",
            s(&plain),
            "-o",
            s(&sealed),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let o = run(&["decrypt", "--key", KEY256, "-i", s(&sealed), "-o", s(&back)]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(
            std::fs::read(&back).unwrap() == std::fs::read(&plain).unwrap(),
            "{n} bytes"
        );
    }
    let sealed = std::fs::read(d.join("gcm-10000.bcg")).unwrap();
    let (head, chunk) = (20usize, 4096 + 16);
    assert_eq!(sealed.len(), head + 2 * chunk + (10_000 - 8192) + 16);
    let mut flipped = sealed.clone();
    flipped[head + chunk + 5] ^= 1;
    let mut swapped = sealed.clone();
    swapped[head..head + 2 * chunk].rotate_left(chunk);
    let mut bad_header = sealed.clone();
    bad_header[15] ^= 1;
    let cases: [(&str, Vec<u8>, &str); 6] = [
        ("modified chunk", flipped, KEY256),
        ("chunks swapped", swapped, KEY256),
        (
            "truncated at a chunk boundary",
            sealed[..head + chunk].to_vec(),
            KEY256,
        ),
        (
            "truncated mid-chunk",
            sealed[..sealed.len() - 3].to_vec(),
            KEY256,
        ),
        ("header changed", bad_header, KEY256),
        (
            "wrong key",
            sealed.clone(),
            "ff3deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4",
        ),
    ];
    for (what, bytes, key) in cases {
        let (input, out) = (d.join("bad.bcg"), d.join("bad.out"));
        std::fs::write(&input, bytes).unwrap();
        let o = run(&["decrypt", "--key", key, "-i", s(&input), "-o", s(&out)]);
        assert!(!o.status.success(), "{what}: decryption succeeded");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("authentication") || err.contains("truncated"),
            "{what}: {err}"
        );
        // Nothing under the output's name, and no temporary file left beside it.
        assert!(err.contains("nothing was written"), "{what}: {err}");
        assert!(
            !out.exists(),
            "{what}: a failed decryption left {}",
            out.display()
        );
        let partial = std::fs::read_dir(&d)
            .unwrap()
            .filter_map(|e| e.ok())
            .any(|e| e.file_name().to_string_lossy().starts_with(".bad.out."));
        assert!(!partial, "{what}: a temporary file was left behind");
    }
    let o = run(&["decrypt", "--key", KEY128, "-i", s(&d.join("gcm-1.bcg"))]);
    assert!(
        !o.status.success() && String::from_utf8_lossy(&o.stderr).contains("AES-256"),
        "a key of the wrong size is named"
    );
}

/// An encryption killed midway leaves nothing under the output's name (only a temporary
/// `.NAME.*.partial` beside it, which no reader takes for the finished file).
#[test]
fn an_interrupted_encryption_leaves_no_output() {
    use std::io::Write;
    let d = dir().join("killed");
    std::fs::create_dir_all(&d).unwrap();
    let out = d.join("never.bcg");
    let mut child = bin()
        .args([
            "encrypt",
            "--key",
            KEY256,
            "--chunk-log2",
            "12",
            "-o",
            s(&out),
            "--quiet",
        ])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("run batchcrypt");
    // Some chunks in, the input still open: the process is mid-stream when it is killed.
    child
        .stdin
        .as_mut()
        .unwrap()
        .write_all(&data(100_000, 3))
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!out.exists(), "a killed encryption left {}", out.display());
}

#[test]
fn helpful_errors() {
    let o = run(&[
        "encrypt",
        "--mode",
        "ctr",
        "--key",
        KEY128,
        "-i",
        "/nonexistent/file",
    ]);
    assert!(
        !o.status.success() && String::from_utf8_lossy(&o.stderr).contains("/nonexistent/file")
    );
    let o = run(&["encrypt", "--mode", "ctr", "--key", KEY128, "-i", "-"]);
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("--iv"));
    let o = run(&["encrypt", "--key", "abcd", "-i", "-"]);
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("16 bytes"));
}

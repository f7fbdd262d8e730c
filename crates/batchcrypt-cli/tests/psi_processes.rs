//! `batchcrypt psi` as two processes on loopback: both write the known intersection; a peer
//! that goes away leaves an error and no output file.

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn set(dir: &Path, name: &str, ids: impl Iterator<Item = u32>) -> PathBuf {
    let p = dir.join(name);
    let mut f = std::fs::File::create(&p).unwrap();
    for i in ids {
        writeln!(f, "user{i}@example.org").unwrap();
    }
    p
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The binary under test: the one cargo built, or `BATCHCRYPT_BIN` where the tests run away from
/// the build tree.
fn psi(args: &[&str]) -> Command {
    let bin = std::env::var_os("BATCHCRYPT_BIN")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_batchcrypt").into());
    let mut c = Command::new(bin);
    c.arg("psi")
        .args(args)
        .arg("--quiet")
        .arg("--timeout")
        .arg("30")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

#[test]
fn two_processes_find_the_intersection() {
    let dir = std::env::temp_dir().join(format!("batchcrypt-psi-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let a = set(&dir, "a.txt", 0..1500);
    let b = set(&dir, "b.txt", (1000..2200).rev());
    let (oa, ob) = (dir.join("a.out"), dir.join("b.out"));
    let addr = format!("127.0.0.1:{}", free_port());
    let la = psi(&[
        "--listen",
        &addr,
        "-i",
        a.to_str().unwrap(),
        "-o",
        oa.to_str().unwrap(),
        "--chunk",
        "256",
    ])
    .spawn()
    .unwrap();
    let lb = psi(&[
        "--connect",
        &addr,
        "-i",
        b.to_str().unwrap(),
        "-o",
        ob.to_str().unwrap(),
        "--backend",
        "cpu",
    ])
    .spawn()
    .unwrap();
    let (ra, rb) = (
        la.wait_with_output().unwrap(),
        lb.wait_with_output().unwrap(),
    );
    assert!(
        ra.status.success(),
        "{}",
        String::from_utf8_lossy(&ra.stderr)
    );
    assert!(
        rb.status.success(),
        "{}",
        String::from_utf8_lossy(&rb.stderr)
    );
    let lines = |p: &Path| {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        lines(&oa),
        (1000..1500)
            .map(|i| format!("user{i}@example.org"))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        lines(&ob),
        (1000..1500)
            .rev()
            .map(|i| format!("user{i}@example.org"))
            .collect::<Vec<_>>()
    );
}

#[test]
fn a_vanished_peer_leaves_an_error_and_no_output() {
    let dir = std::env::temp_dir().join(format!("batchcrypt-psi-cli2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let a = set(&dir, "a.txt", 0..100);
    let out = dir.join("a.out");
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let child = psi(&[
        "--connect",
        &addr,
        "-i",
        a.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ])
    .spawn()
    .unwrap();
    drop(l.accept().unwrap()); // accept, then hang up at once
    let r = child.wait_with_output().unwrap();
    assert!(!r.status.success());
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("error:"), "{err}");
    assert!(!out.exists(), "no output after a failed run");
}

#[test]
fn duplicates_are_refused_before_connecting() {
    let dir = std::env::temp_dir().join(format!("batchcrypt-psi-cli3-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let a = set(&dir, "dup.txt", [1, 2, 1].into_iter());
    let r = psi(&[
        "--connect",
        "127.0.0.1:1",
        "-i",
        a.to_str().unwrap(),
        "-o",
        dir.join("x").to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(!r.status.success());
    assert!(String::from_utf8_lossy(&r.stderr).contains("lines 1 and 3"));
}

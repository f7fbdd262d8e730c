//! ECDH-PSI: two parties on loopback find exactly the known intersection, on every backend pair;
//! bad sets, a peer with another protocol version, a peer that sends points off the curve and a
//! peer that disconnects are clear errors, never a result.

use batchcrypt::psi::{self, Config, ItemFile, Quiet};
use batchcrypt::{Backend, Engine, Primitive};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

mod common;

fn write_set(name: &str, lines: impl IntoIterator<Item = String>) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("batchcrypt-psi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    let mut f = std::io::BufWriter::new(std::fs::File::create(&p).unwrap());
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
    p
}

fn pair() -> (TcpStream, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    (a, l.accept().unwrap().0)
}

fn cfg(chunk: usize) -> Config {
    Config {
        chunk,
        timeout: Duration::from_secs(20),
        ..Config::default()
    }
}

#[test]
fn finds_the_known_intersection_on_every_backend_pair() {
    // A: ids 0..3000, B: ids 2000..4500 and some of its own; common: 2000..3000.
    let a = write_set("a.txt", (0..3000).map(|i| format!("id-{i}")));
    let b = write_set(
        "b.txt",
        (2000..4500)
            .map(|i| format!("id-{i}"))
            .chain((0..100).map(|i| format!("other-{i}"))),
    );
    let (ia, ib) = (ItemFile::open(&a).unwrap(), ItemFile::open(&b).unwrap());
    let backends = common::backends(Primitive::Sm2);
    for &ba in &backends {
        for &bb in &backends {
            let (sa, sb) = pair();
            let (ea, eb) = (common::engine(ba), common::engine(bb));
            let (ra, rb) = std::thread::scope(|s| {
                let ta = s.spawn(|| psi::run(sa, &ia, &ea, &cfg(700), &Quiet));
                let rb = psi::run(sb, &ib, &eb, &cfg(512), &Quiet);
                (ta.join().unwrap(), rb)
            });
            let (ra, rb) = (ra.unwrap(), rb.unwrap());
            assert_eq!(
                ra.matched,
                (2000..3000).collect::<Vec<u64>>(),
                "{ba} x {bb}"
            );
            assert_eq!(rb.matched, (0..1000).collect::<Vec<u64>>(), "{ba} x {bb}");
            assert_eq!((ra.own_count, ra.peer_count), (3000, 2600));
        }
    }
    // The intersection file holds the common lines, in this party's order.
    let out = a.with_file_name("common.txt");
    ia.write_subset(&(2000..3000).collect::<Vec<u64>>(), &out)
        .unwrap();
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        (2000..3000).map(|i| format!("id-{i}")).collect::<Vec<_>>()
    );
}

#[test]
fn bad_sets_are_errors() {
    let empty = write_set("empty.txt", []);
    assert!(ItemFile::open(&empty)
        .unwrap_err()
        .to_string()
        .contains("no items"));
    let dup = write_set("dup.txt", ["x", "y", "z", "y"].map(String::from));
    let e = ItemFile::open(&dup).unwrap_err().to_string();
    assert!(e.contains("lines 2 and 4"), "{e}");
    let blank = write_set("blank.txt", ["x", "", "z"].map(String::from));
    assert!(ItemFile::open(&blank)
        .unwrap_err()
        .to_string()
        .contains("line 2 is empty"));
    assert!(ItemFile::open(&empty.with_file_name("missing.txt")).is_err());
    // A longer set: counted whole, and a duplicate far from its first line found.
    let many = |n: usize| (0..n).map(|i| format!("id-{i}"));
    let big = write_set("big.txt", many(150_000));
    assert_eq!(ItemFile::open(&big).unwrap().count(), 150_000);
    let far = write_set("far.txt", many(150_000).chain(["id-3".to_string()]));
    let e = ItemFile::open(&far).unwrap_err().to_string();
    assert!(e.contains("lines 4 and 150001"), "{e}");
}

/// A raw frame: type, little-endian length, payload.
fn frame(ty: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![ty];
    f.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    f.extend_from_slice(payload);
    f
}

fn hello(version: u16, count: u64) -> Vec<u8> {
    let mut p = b"BCPSI".to_vec();
    p.extend_from_slice(&version.to_le_bytes());
    p.push(batchcrypt::sm2::SUITE.len() as u8);
    p.extend_from_slice(batchcrypt::sm2::SUITE.as_bytes());
    p.extend_from_slice(&(batchcrypt::sm2::DEFAULT_DST.len() as u16).to_le_bytes());
    p.extend_from_slice(batchcrypt::sm2::DEFAULT_DST);
    p.extend_from_slice(&count.to_le_bytes());
    frame(1, &p)
}

/// Runs our party against a scripted peer that sends `script` and then drains or closes. Each
/// test names its own set file (tests run in parallel).
fn against(name: &str, script: Vec<u8>, close: bool) -> String {
    let set = write_set(name, (0..10).map(|i| format!("item-{i}")));
    let items = ItemFile::open(&set).unwrap();
    let (ours, mut theirs) = pair();
    let peer = std::thread::spawn(move || {
        theirs.write_all(&script).unwrap();
        if close {
            drop(theirs);
        } else {
            let mut sink = Vec::new();
            let _ = theirs.read_to_end(&mut sink);
        }
    });
    let engine = Engine::with_backend(batchcrypt::BackendChoice::Exact(Backend::Portable));
    let r = psi::run(ours, &items, &engine, &cfg(4), &Quiet);
    peer.join().unwrap();
    r.unwrap_err().to_string()
}

#[test]
fn a_peer_with_another_version_is_refused() {
    let e = against("version.txt", hello(99, 10), false);
    assert!(e.contains("version 99"), "{e}");
}

#[test]
fn points_off_the_curve_are_refused() {
    let mut bad = [0u8; 33];
    bad[0] = 4; // not a compressed prefix
    let mut script = hello(psi::PROTOCOL_VERSION, 10);
    script.extend(frame(2, &bad));
    let e = against("off-curve.txt", script, false);
    assert!(e.contains("not on the curve"), "{e}");
}

#[test]
fn a_peer_that_disconnects_is_an_error() {
    let e = against("disconnect.txt", hello(psi::PROTOCOL_VERSION, 10), true);
    assert!(
        e.contains("closed the connection") || e.contains("network"),
        "{e}"
    );
}

/// Found while fuzzing the protocol: the count a peer announces sized an allocation, so a handshake claiming 2^50
/// items aborted the process. It is a claim, checked as points arrive; nothing is reserved for it.
#[test]
fn a_peer_announcing_a_huge_set_gets_an_error_not_an_abort() {
    let e = against(
        "huge-count.txt",
        hello(psi::PROTOCOL_VERSION, 1 << 50),
        true,
    );
    assert!(
        e.contains("closed the connection") || e.contains("network"),
        "{e}"
    );
}

#[test]
fn garbage_instead_of_a_handshake_is_refused() {
    let e = against("garbage.txt", frame(1, b"HTTP/1.1 200 OK"), false);
    assert!(e.contains("handshake"), "{e}");
}

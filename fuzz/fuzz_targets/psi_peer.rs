//! One PSI party (ours, with two items) against a peer that sends the fuzzer's bytes over a real
//! loopback connection and then hangs up: handshakes with any version, suite or count, points
//! off the curve, wrong counts, oversized or truncated frames, tags before points. Every run must
//! end with an outcome or a clear error, never a panic, an abort or a hang.
#![no_main]

use batchcrypt::psi::{self, Config, ItemFile, Quiet};
use batchcrypt::Backend;
use batchcrypt_fuzz::engine;
use libfuzzer_sys::fuzz_target;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::OnceLock;
use std::time::Duration;

fn items() -> &'static ItemFile {
    static ITEMS: OnceLock<ItemFile> = OnceLock::new();
    ITEMS.get_or_init(|| {
        let path = std::env::temp_dir().join(format!("batchcrypt-fuzz-psi-{}.txt", std::process::id()));
        std::fs::write(&path, "alice\nbob\n").unwrap();
        ItemFile::open(&path).unwrap()
    })
}

/// One listener for the process: binding a fresh one per run made the kernel search for a free
/// port among the closed connections' ports, which took most of each run.
fn listener() -> &'static TcpListener {
    static L: OnceLock<TcpListener> = OnceLock::new();
    L.get_or_init(|| TcpListener::bind("127.0.0.1:0").unwrap())
}

fuzz_target!(|script: &[u8]| {
    let listener = listener();
    let ours = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (mut theirs, _) = listener.accept().unwrap();
    let script = script.to_vec();
    let peer = std::thread::spawn(move || {
        let _ = theirs.write_all(&script);
        let _ = theirs.shutdown(std::net::Shutdown::Write);
        let mut sink = Vec::new();
        let _ = theirs.read_to_end(&mut sink);
        // Closed with a reset: no connection of the run lingers in TIME_WAIT holding a port.
        let _ = socket2::SockRef::from(&theirs).set_linger(Some(Duration::ZERO));
    });
    let cfg = Config { chunk: 4, timeout: Duration::from_secs(5), ..Config::default() };
    let r = psi::run_with_key(ours, items(), engine(Backend::Portable), &cfg, &Quiet, &[7; 32]);
    peer.join().unwrap();
    if let Ok(outcome) = r {
        assert!(outcome.matched.len() <= 2);
    }
});

//! The service's local wire (`batchcrypt serve --frames-socket`): arbitrary bytes as one
//! client's side of a connection, served by the frames loop over the service's own handlers, in
//! process with the CPU backends. The first byte chooses whether the harness opens the
//! connection properly (the magic, and a hello) before the fuzzed bytes. Whatever comes in, the
//! server must answer in whole frames and close within a bound once the client has ended its
//! side: never a panic, a hang or a torn reply.
#![no_main]

use batchcrypt_serve::frames::{self, next_frame, MAGIC};
use batchcrypt_serve::server::Service;
use batchcrypt_serve::ServerConfig;
use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The largest frame the harness's server takes.
const MAX: usize = 1 << 16;

struct Harness {
    rt: tokio::runtime::Runtime,
    service: Arc<Service>,
}

fn harness() -> &'static Harness {
    static H: OnceLock<Harness> = OnceLock::new();
    H.get_or_init(|| {
        let dir =
            std::env::temp_dir().join(format!("batchcrypt-fuzz-frames-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut config = ServerConfig::new(dir);
        config.max_request_items = 4096;
        config.max_message_bytes = MAX;
        let (rt, service) = batchcrypt_fuzz::in_process_service(&config);
        Harness { rt, service }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let h = harness();
    let mut input = Vec::with_capacity(data.len() + 32);
    if mode & 1 == 0 {
        input.extend_from_slice(MAGIC);
        if mode & 2 == 0 {
            input.extend_from_slice(&[0; frames::HEADER]); // a hello with no token
        }
    }
    input.extend_from_slice(rest);
    h.rt.block_on(async {
        let (client, server) = tokio::net::UnixStream::pair().unwrap();
        let serving = tokio::spawn(frames::serve(
            server,
            h.service.clone(),
            MAX,
            std::future::pending(),
        ));
        let (mut rd, mut wr) = client.into_split();
        let writing = async {
            let _ = wr.write_all(&input).await;
            let _ = wr.shutdown().await;
        };
        let reading = async {
            let mut out = Vec::new();
            let _ = rd.read_to_end(&mut out).await;
            out
        };
        let (_, out) = tokio::time::timeout(Duration::from_secs(5), async {
            tokio::join!(writing, reading)
        })
        .await
        .expect("the server answered and closed within 5 s of the client's end");
        serving
            .await
            .expect("the connection's task did not panic")
            .ok();
        if out.is_empty() {
            return;
        }
        assert_eq!(&out[..MAGIC.len()], MAGIC, "a reply opens with the magic");
        let mut buf = BytesMut::from(&out[MAGIC.len()..]);
        while !buf.is_empty() {
            let f = next_frame(&mut buf, MAX + 1024)
                .expect("no reply over the limit")
                .expect("replies are whole frames");
            if f.tag == 0 {
                continue;
            }
            assert!(f.tag <= 16, "a reply's tag is OK or a gRPC code: {}", f.tag);
        }
    });
});

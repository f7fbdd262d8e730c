//! The service's request handling: protobuf bytes decoded as one of the batched calls'
//! requests, then handed to the service's own handler (the one `batchcrypt serve` runs behind
//! the network), in process with the CPU backends. Lists may come one by one or packed in
//! columns, or in a shared-memory region (registered once; the spans' region is pointed at it);
//! region names are fuzzed too. Every malformed request must get a clear status, never a panic
//! or a stuck batcher.
#![no_main]

use batchcrypt_serve::proto::batch_crypt_server::BatchCrypt;
use batchcrypt_serve::proto::*;
use batchcrypt_serve::server::Service;
use batchcrypt_serve::ServerConfig;
use libfuzzer_sys::fuzz_target;
use prost::Message;
use std::sync::{Arc, OnceLock};
use tonic::Request;

struct Harness {
    rt: tokio::runtime::Runtime,
    service: Arc<Service>,
    /// A registered shared-memory region of 1 MiB.
    region: u64,
}

fn harness() -> &'static Harness {
    static H: OnceLock<Harness> = OnceLock::new();
    H.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("batchcrypt-fuzz-serve-{}", std::process::id()));
        let shared = dir.join("shared");
        std::fs::create_dir_all(&shared).unwrap();
        let bytes: Vec<u8> = (0..1u32 << 20).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(shared.join("batchcrypt-fuzz"), bytes).unwrap();
        let mut config = ServerConfig::new(dir);
        config.max_request_items = 4096;
        config.shared_memory = Some(shared);
        let (rt, service) = batchcrypt_fuzz::in_process_service(&config);
        let name = RegisterSharedMemoryRequest { name: "batchcrypt-fuzz".into() };
        let region = rt.block_on(service.register_shared_memory(Request::new(name))).unwrap().into_inner().id;
        Harness { rt, service, region }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&kind, body)) = data.split_first() else { return };
    let h = harness();
    let s = &h.service;
    macro_rules! call {
        ($req:ty, $method:ident) => {{
            let Ok(r) = <$req>::decode(body) else { return };
            let _ = h.rt.block_on(s.$method(Request::new(r)));
        }};
    }
    match kind % 10 {
        0 => call!(VerifyEcdsaRequest, verify_ecdsa),
        1 => call!(VerifySchnorrRequest, verify_schnorr),
        2 => call!(VerifySm2Request, verify_sm2),
        3 => call!(HashRequest, hash),
        4 => call!(Sm2HashToCurveMulRequest, sm2_hash_to_curve_mul),
        5 => call!(Sm2MulCompressedRequest, sm2_mul_compressed),
        6 => call!(VerifyTransactionsRequest, verify_transactions),
        7 => call!(VerifyBlockRequest, verify_block),
        8 => {
            // A name registered is unregistered at once: regions hold files open.
            let Ok(r) = RegisterSharedMemoryRequest::decode(body) else { return };
            if let Ok(g) = h.rt.block_on(s.register_shared_memory(Request::new(r))) {
                let _ = h.rt.block_on(s.unregister_shared_memory(Request::new(g.into_inner())));
            }
        }
        _ => {
            // Spans of the registered region (an odd region id stays as it came: unknown).
            let Ok(mut r) = HashRequest::decode(body) else { return };
            let spans = r.messages_packed.as_mut().and_then(|c| c.shared.as_mut()).into_iter().chain(r.digests_to.as_mut());
            for span in spans {
                if span.region % 2 == 0 {
                    span.region = h.region;
                }
            }
            let _ = h.rt.block_on(s.hash(Request::new(r)));
        }
    }
});

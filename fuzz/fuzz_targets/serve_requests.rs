//! The service's request handling: protobuf bytes decoded as one of the batched calls'
//! requests, then handed to the service's own handler (the one `batchcrypt serve` runs behind
//! the network), in process with the CPU backends. Lists may come one by one or packed in
//! columns; every malformed request must get a clear status, never a panic or a stuck batcher.
#![no_main]

use batchcrypt::{Backend, BackendChoice, Engine};
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
}

fn harness() -> &'static Harness {
    static H: OnceLock<Harness> = OnceLock::new();
    H.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let dir = std::env::temp_dir().join(format!("batchcrypt-fuzz-serve-{}", std::process::id()));
        let mut config = ServerConfig::new(dir);
        config.max_request_items = 4096;
        let engine = Arc::new(Engine::with_backend(BackendChoice::Exact(Backend::Libsecp256k1)));
        let service = {
            let _in = rt.enter();
            Service::in_process(engine, &config).expect("the service starts")
        };
        Harness { rt, service }
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
    match kind % 8 {
        0 => call!(VerifyEcdsaRequest, verify_ecdsa),
        1 => call!(VerifySchnorrRequest, verify_schnorr),
        2 => call!(VerifySm2Request, verify_sm2),
        3 => call!(HashRequest, hash),
        4 => call!(Sm2HashToCurveMulRequest, sm2_hash_to_curve_mul),
        5 => call!(Sm2MulCompressedRequest, sm2_mul_compressed),
        6 => call!(VerifyTransactionsRequest, verify_transactions),
        _ => call!(VerifyBlockRequest, verify_block),
    }
});

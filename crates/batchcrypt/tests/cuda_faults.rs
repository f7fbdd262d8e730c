//! A failing CUDA call surfaces as an error of the call that made it. Through the test hook
//! `backend::cuda::fault`, one call fails at each stage (allocation, copy to the device, launch,
//! copy back, synchronization) of each GPU operation family: the operation must return that
//! error (never verdicts, digests or points, never a silent fallback to the CPU), and the next
//! call, with nothing injected, must succeed. Needs a GPU (required under BATCHCRYPT_REQUIRE_GPU=1).

mod common;

use batchcrypt::backend::cuda::fault;
use batchcrypt::secp256k1::{EcdsaOptions, SigFormat};
use batchcrypt::{Backend, Error, Primitive};
use secp256k1::{Message, PublicKey, SecretKey};
use std::sync::Mutex;

/// The hook is process-wide: these tests take turns.
static TURN: Mutex<()> = Mutex::new(());

const STAGES: [(&str, &str); 5] = [
    ("allocation", "cuMemAlloc"),
    ("copy to the device", "upload|HtoD"),
    ("launch", "launch"),
    ("copy back", "download|DtoH"),
    ("synchronization", "ync"),
];

/// Fails each stage of `run` in turn; every stage that `run` goes through must fail it, with the
/// injected error, and `launch` must be one of them. Returns the stages that were exercised.
fn each_stage<T>(what: &str, mut run: impl FnMut() -> batchcrypt::Result<T>) -> Vec<&'static str> {
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    run().unwrap_or_else(|e| panic!("{what} fails without any fault: {e}"));
    let mut hit = Vec::new();
    for (stage, pattern) in STAGES {
        fault::inject(pattern, 0);
        let r = run();
        let fired = !fault::pending();
        fault::clear();
        if !fired {
            assert!(
                r.is_ok(),
                "{what}: failed although no call matched {pattern}"
            );
            continue;
        }
        hit.push(stage);
        match r {
            Err(Error::Cuda { message, context }) => assert!(
                message.contains("injected"),
                "{what}: a failed {stage} ({context}) came back as another error: {message}"
            ),
            Err(e) => panic!("{what}: a failed {stage} came back as {e}"),
            Ok(_) => panic!("{what}: a failed {stage} was not reported (a result came back)"),
        }
        run().unwrap_or_else(|e| panic!("{what}: fails after a {stage} fault was cleared: {e}"));
    }
    assert!(
        hit.contains(&"launch"),
        "{what}: no kernel launch went through the hook"
    );
    eprintln!("{what}: faults at {hit:?} all reported");
    hit
}

fn gpu(p: Primitive) -> Option<batchcrypt::Engine> {
    common::backends(p)
        .contains(&Backend::Cuda)
        .then(|| common::engine(Backend::Cuda))
}

#[test]
fn ecdsa_verification_reports_every_failed_call() {
    let Some(engine) = gpu(Primitive::Secp256k1) else {
        return;
    };
    let n = 4096;
    let mut hashes = Vec::new();
    let (mut sigs, mut keys) = (Vec::new(), Vec::new());
    for i in 0..n as u32 {
        let sk = SecretKey::from_secret_bytes([(i % 250 + 1) as u8; 32]).unwrap();
        let h = [i as u8; 32];
        sigs.push(
            sk.sign_ecdsa(Message::from_digest(h))
                .serialize_der()
                .to_vec(),
        );
        keys.push(PublicKey::from_secret_key(&sk).serialize().to_vec());
        hashes.push(h);
    }
    let s: Vec<&[u8]> = sigs.iter().map(|v| &v[..]).collect();
    let k: Vec<&[u8]> = keys.iter().map(|v| &v[..]).collect();
    let opts = EcdsaOptions {
        format: SigFormat::Der,
        require_low_s: false,
    };
    // Its device buffers are kept between calls, so a warm call allocates nothing.
    let hit = each_stage("ECDSA verification", || {
        let v = engine.secp256k1().verify_ecdsa(&hashes, &s, &k, &opts)?;
        assert!(v.value.all_valid());
        Ok(())
    });
    assert!(
        hit.len() >= 4,
        "copies, launch and synchronization all go through the driver"
    );
}

#[test]
fn sha256d_reports_every_failed_call() {
    let Some(engine) = gpu(Primitive::Sha256) else {
        return;
    };
    let data = vec![7u8; 64 << 16];
    each_stage("SHA256d of 64-byte messages", || {
        engine.sha256().sha256d_64(&data).map(drop)
    });
}

#[test]
fn aes_gcm_reports_every_failed_call() {
    let Some(engine) = gpu(Primitive::Aes) else {
        return;
    };
    let key = batchcrypt::aes::Key::new(&[3; 16]).unwrap();
    let data = vec![5u8; 4 << 20];
    let mut out = vec![0u8; data.len()];
    each_stage("AES-GCM encryption", || {
        engine
            .aes()
            .gcm_encrypt(&key, &[1; 12], b"", &data, &mut out)
            .map(drop)
    });
}

#[test]
fn sm2_fixed_base_multiplication_reports_every_failed_call() {
    let Some(engine) = gpu(Primitive::Sm2) else {
        return;
    };
    let scalars: Vec<[u8; 32]> = (0..4096u32)
        .map(|i| {
            let mut k = [0x11; 32];
            k[..4].copy_from_slice(&i.to_be_bytes());
            k
        })
        .collect();
    each_stage("SM2 k·G", || engine.sm2().mul_base(&scalars).map(drop));
}

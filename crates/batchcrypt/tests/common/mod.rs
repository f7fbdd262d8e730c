//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod consensus;

use batchcrypt::{Backend, BackendChoice, Engine, Primitive};

/// Every backend this machine can run that implements `p`. With `BATCHCRYPT_REQUIRE_GPU=1` (the
/// GPU test script sets it) a missing GPU fails the test instead of being skipped, for a primitive
/// that has a GPU implementation.
pub fn backends(p: Primitive) -> Vec<Backend> {
    let ours: Vec<Backend> = Backend::ALL
        .into_iter()
        .filter(|b| b.implements(p))
        .collect();
    if std::env::var("BATCHCRYPT_REQUIRE_GPU").as_deref() == Ok("1")
        && ours.contains(&Backend::Cuda)
    {
        if let Err(why) = Backend::Cuda.availability() {
            panic!("BATCHCRYPT_REQUIRE_GPU=1 but the CUDA backend is unavailable: {why}");
        }
    }
    for b in &ours {
        if let Err(why) = b.availability() {
            eprintln!("note: skipping backend {b}: {why}");
        }
    }
    ours.into_iter().filter(|b| b.is_available()).collect()
}

pub fn engine(b: Backend) -> Engine {
    Engine::with_backend(BackendChoice::Exact(b))
}

pub use batchcrypt_testdata::shared_data;

/// The bytes of a shared test-data file, or `None` (with a note) when it is absent.
pub fn read_shared(name: &str) -> Option<Vec<u8>> {
    match shared_data(name) {
        Some(p) => Some(std::fs::read(p).expect("readable shared test data")),
        None => {
            eprintln!("note: shared {name} not present; skipped");
            None
        }
    }
}

/// Deterministic xorshift bytes.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

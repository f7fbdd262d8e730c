//! SM2 scalar multiplication: the GPU path against the CPU path (RustCrypto `sm2`), bit for bit,
//! where a GPU is present (required under BATCHCRYPT_REQUIRE_GPU=1), and the input checks.

use batchcrypt::sm2::{cpu, N};
use batchcrypt::Error;

mod common;

fn scalars(n: usize, seed: u64) -> Vec<[u8; 32]> {
    let mut rng = common::Rng(seed | 1);
    let mut v: Vec<[u8; 32]> = (0..n)
        .map(|_| {
            let mut k: [u8; 32] = rng.bytes(32).try_into().unwrap();
            k[0] &= 0x7f; // below n
            k
        })
        .collect();
    // Edges: 0, 1, n - 1.
    v[0] = [0; 32];
    v[1][..31].fill(0);
    v[1][31] = 1;
    let mut n_1 = N;
    n_1[31] -= 1;
    v[2] = n_1;
    v
}

#[test]
fn scalars_out_of_range_and_empty_batches_are_errors() {
    assert!(matches!(cpu::mul_base(&[]), Err(Error::EmptyBatch)));
    assert!(cpu::mul_base(&[N]).is_err());
    assert!(cpu::mul_shared(&[0xff; 32], &[[0; 64]]).is_err());
}

#[cfg(feature = "cuda")]
#[test]
fn gpu_matches_cpu() {
    use batchcrypt::sm2::gpu;
    if !common::backends(batchcrypt::Primitive::Secp256k1).contains(&batchcrypt::Backend::Cuda) {
        return; // no GPU here (noted by `backends`)
    }
    let ks = scalars(3000, 1);
    let cpu_base = cpu::mul_base(&ks).unwrap();
    assert_eq!(gpu::mul_base(&ks).unwrap(), cpu_base);
    // Points: the multiples just computed (skipping infinity), plus two off the curve.
    let mut points: Vec<[u8; 64]> = cpu_base.iter().filter(|p| **p != [0; 64]).copied().collect();
    let mut bad = points[5];
    bad[63] ^= 1;
    points.push(bad);
    points.push([0; 64]);
    let key = scalars(4, 2)[3];
    let want = cpu::mul_shared(&key, &points).unwrap();
    assert_eq!(want.iter().filter(|p| p.is_none()).count(), 2);
    assert_eq!(gpu::mul_shared(&key, &points).unwrap(), want);
}

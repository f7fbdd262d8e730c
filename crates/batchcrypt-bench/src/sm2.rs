//! SM2 scalar multiplication: fixed-base k·G and one scalar over many points (the ECDH-PSI
//! blinding step). OpenSSL (one core), RustCrypto `sm2` (one core; all cores is our CPU path)
//! and our GPU path, on the same scalars and points, results checked equal.

use crate::report::{time, Report};
use batchcrypt::sm2::{cpu, Point};
use openssl::bn::{BigNum, BigNumContext};
use openssl::ec::{EcGroup, EcPoint};
use openssl::nid::Nid;
use rayon::prelude::*;

const GROUP: &str = "sm2";
/// One-core rows run on a slice (the rate per item is what counts).
const SINGLE_MAX: usize = 1 << 11;

fn scalars(n: usize, seed: u64) -> Vec<[u8; 32]> {
    (0..n)
        .into_par_iter()
        .map(|i| {
            let mut k = batchcrypt::sha256::digest(&[seed.to_le_bytes(), (i as u64).to_le_bytes()].concat());
            k[0] &= 0x7f; // below n
            k
        })
        .collect()
}

/// OpenSSL's generic prime-curve code on SM2: k·G (`base`) or k·P, as `x || y`.
fn openssl_mul(group: &EcGroup, k: &[u8; 32], p: Option<&Point>, ctx: &mut BigNumContext) -> anyhow::Result<Point> {
    let k = BigNum::from_slice(k)?;
    let mut r = EcPoint::new(group)?;
    match p {
        None => r.mul_generator2(group, &k, ctx)?,
        Some(p) => {
            let pt = EcPoint::from_bytes(group, &[&[4u8][..], &p[..]].concat(), ctx)?;
            r.mul2(group, &pt, &k, ctx)?
        }
    }
    let (mut x, mut y) = (BigNum::new()?, BigNum::new()?);
    r.affine_coordinates(group, &mut x, &mut y, ctx)?;
    let mut out = [0u8; 64];
    out[..32].copy_from_slice(&x.to_vec_padded(32)?);
    out[32..].copy_from_slice(&y.to_vec_padded(32)?);
    Ok(out)
}

/// CPU all-core rows run on at most this many items (a million SM2 multiplications take most of
/// a minute on 16 cores; the rate per item is what counts). GPU results are checked against the
/// CPU on this slice.
const CPU_MAX: usize = 1 << 17;

fn has_gpu() -> bool {
    cfg!(feature = "cuda") && batchcrypt::Backend::Cuda.is_available()
}

/// k G for every scalar, on the GPU where there is one (to make inputs quickly).
fn points_for(ks: &[[u8; 32]]) -> anyhow::Result<Vec<Point>> {
    #[cfg(feature = "cuda")]
    if has_gpu() {
        return Ok(batchcrypt::sm2::gpu::mul_base(ks)?);
    }
    Ok(cpu::mul_base(ks)?)
}

pub fn run(rep: &mut Report, quick: bool) -> anyhow::Result<()> {
    let sizes: &[usize] = if quick { &[1 << 12] } else { &[100_000, 1_000_000] };
    let group = EcGroup::from_curve_name(Nid::SM2)?;
    let mut ctx = BigNumContext::new()?;
    rep.header("SM2 scalar multiplication: ours vs OpenSSL and RustCrypto sm2 (same scalars and points)");
    for &n in sizes {
        let ks = scalars(n, 1);
        let reps = if n >= 1_000_000 { 2 } else { 3 };
        let (single, cpu_n) = (n.min(SINGLE_MAX), n.min(CPU_MAX));
        // Fixed base.
        let case = format!("mul_base {n}");
        let want = cpu::mul_base(&ks[..cpu_n])?;
        let mut ossl = Vec::new();
        let t = time(1, || ossl = ks[..single].iter().map(|k| openssl_mul(&group, k, None, &mut ctx).unwrap()).collect());
        anyhow::ensure!(ossl[..] == want[..single], "OpenSSL and sm2 disagree on k G");
        rep.add(GROUP, &case, "openssl 1 core", single as u64, 0, t, None);
        let t = time(reps, || {
            ks[..single].iter().for_each(|k| {
                std::hint::black_box(cpu::mul_base(std::slice::from_ref(k)).unwrap());
            })
        });
        rep.add(GROUP, &case, "sm2 crate 1 core", single as u64, 0, t, Some("openssl 1 core"));
        let t = time(reps, || drop(cpu::mul_base(&ks[..cpu_n]).unwrap()));
        rep.add(GROUP, &case, "batchcrypt cpu (sm2 crate, all cores)", cpu_n as u64, 0, t, Some("openssl 1 core"));
        #[cfg(feature = "cuda")]
        if has_gpu() {
            use batchcrypt::sm2::gpu;
            let mut got = Vec::new();
            let t = time(reps, || got = gpu::mul_base(&ks).unwrap());
            anyhow::ensure!(got[..cpu_n] == want[..], "GPU k G differs from the CPU");
            rep.add(GROUP, &case, "batchcrypt cuda (end to end)", n as u64, 0, t, Some("openssl 1 core"));
            let t = gpu::mul_base_kernel_seconds(&ks, reps.max(3))?;
            rep.add(GROUP, &case, "batchcrypt cuda (kernel only)", n as u64, 0, t, Some("openssl 1 core"));
        }
        // One secret scalar over many points (the points: k G for the scalars above).
        let case = format!("mul one k, {n} points");
        let key = scalars(1, 2)[0];
        let points = points_for(&ks)?;
        anyhow::ensure!(points[..cpu_n] == want[..], "input points differ from the CPU's k G");
        let want = cpu::mul_shared(&key, &points[..cpu_n])?;
        let mut ossl = Vec::new();
        let t = time(1, || ossl = points[..single].iter().map(|p| openssl_mul(&group, &key, Some(p), &mut ctx).unwrap()).collect());
        anyhow::ensure!(ossl.iter().zip(&want[..single]).all(|(a, b)| Some(*a) == *b), "OpenSSL and sm2 disagree on k P");
        rep.add(GROUP, &case, "openssl 1 core", single as u64, 0, t, None);
        let t = time(reps, || {
            points[..single].iter().for_each(|p| {
                std::hint::black_box(cpu::mul_shared(&key, std::slice::from_ref(p)).unwrap());
            })
        });
        rep.add(GROUP, &case, "sm2 crate 1 core", single as u64, 0, t, Some("openssl 1 core"));
        let t = time(reps, || drop(cpu::mul_shared(&key, &points[..cpu_n]).unwrap()));
        rep.add(GROUP, &case, "batchcrypt cpu (sm2 crate, all cores)", cpu_n as u64, 0, t, Some("openssl 1 core"));
        #[cfg(feature = "cuda")]
        if has_gpu() {
            use batchcrypt::sm2::gpu;
            let mut got = Vec::new();
            let t = time(reps, || got = gpu::mul_shared(&key, &points).unwrap());
            anyhow::ensure!(got[..cpu_n] == want[..], "GPU k P differs from the CPU");
            rep.add(GROUP, &case, "batchcrypt cuda (end to end)", n as u64, 0, t, Some("openssl 1 core"));
            let t = gpu::mul_shared_kernel_seconds(&key, &points, reps.max(3))?;
            rep.add(GROUP, &case, "batchcrypt cuda (kernel only)", n as u64, 0, t, Some("openssl 1 core"));
        }
    }
    Ok(())
}

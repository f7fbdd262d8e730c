//! SM2 scalar multiplication: fixed-base k·G, one scalar over many points (the ECDH-PSI blinding
//! step, affine and compressed), and hash-to-curve fused with the multiplication. OpenSSL (one
//! core and all cores), RustCrypto `sm2` (one core; all cores is our CPU path) and our GPU path,
//! on the same scalars and points, results checked equal. OpenSSL has no hash-to-curve: that row
//! is compared with OpenSSL's k·P, the multiplication it contains. SM2 signature verification:
//! OpenSSL's EVP verifier (SM3 digest with Z_A, one core and all cores) against ours on the same
//! OpenSSL-made signatures.

use crate::report::{has_gpu, time, Report};
use batchcrypt::sm2::cpu;
use batchcrypt::sm2::{Compressed, Point, DEFAULT_DST};
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
            let mut k = batchcrypt::sha256::digest(
                &[seed.to_le_bytes(), (i as u64).to_le_bytes()].concat(),
            );
            k[0] &= 0x7f; // below n
            k
        })
        .collect()
}

/// OpenSSL's generic prime-curve code on SM2: k·G (`base`) or k·P, as `x || y`.
fn openssl_mul(
    group: &EcGroup,
    k: &[u8; 32],
    p: Option<&Point>,
    ctx: &mut BigNumContext,
) -> anyhow::Result<Point> {
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

/// k G for every scalar, on the GPU where there is one (to make inputs quickly).
fn points_for(ks: &[[u8; 32]]) -> anyhow::Result<Vec<Point>> {
    if has_gpu() {
        return Ok(batchcrypt::sm2::gpu::mul_base(ks)?);
    }
    Ok(cpu::mul_base(ks, batchcrypt::backend::cpu::threads()))
}

/// SEC1 compression of an affine `x || y` (not infinity).
fn compress_affine(p: &Point) -> Compressed {
    let mut c = [0u8; 33];
    c[0] = 2 | (p[63] & 1);
    c[1..].copy_from_slice(&p[..32]);
    c
}

/// OpenSSL on all cores (one context per thread), k·G or k·P for the first `n` items.
fn openssl_all(
    group: &EcGroup,
    ks: &[[u8; 32]],
    key: &[u8; 32],
    points: Option<&[Point]>,
    n: usize,
) -> Vec<Point> {
    (0..n)
        .into_par_iter()
        .map_init(
            || BigNumContext::new().unwrap(),
            |ctx, i| match points {
                None => openssl_mul(group, &ks[i], None, ctx).unwrap(),
                Some(p) => openssl_mul(group, key, Some(&p[i]), ctx).unwrap(),
            },
        )
        .collect()
}

pub fn run(rep: &mut Report, quick: bool) -> anyhow::Result<()> {
    let sizes: &[usize] = if quick {
        &[1 << 12]
    } else {
        &[100_000, 1_000_000]
    };
    let group = EcGroup::from_curve_name(Nid::SM2)?;
    let mut ctx = BigNumContext::new()?;
    rep.header(
        "SM2 scalar multiplication: ours vs OpenSSL and RustCrypto sm2 (same scalars and points)",
    );
    for &n in sizes {
        let ks = scalars(n, 1);
        let reps = if n >= 1_000_000 { 2 } else { 3 };
        let (single, cpu_n) = (n.min(SINGLE_MAX), n.min(CPU_MAX));
        // Fixed base.
        let case = format!("mul_base {n}");
        let all = batchcrypt::backend::cpu::threads();
        let want = cpu::mul_base(&ks[..cpu_n], all);
        let mut ossl = Vec::new();
        let t = time(1, || {
            ossl = ks[..single]
                .iter()
                .map(|k| openssl_mul(&group, k, None, &mut ctx).unwrap())
                .collect()
        });
        anyhow::ensure!(
            ossl[..] == want[..single],
            "OpenSSL and sm2 disagree on k G"
        );
        rep.add(GROUP, &case, "openssl 1 core", single as u64, 0, t, None);
        let t = time(1, || ossl = openssl_all(&group, &ks, &ks[0], None, cpu_n));
        anyhow::ensure!(ossl[..] == want[..], "OpenSSL and sm2 disagree on k G");
        rep.add(
            GROUP,
            &case,
            "openssl all cores",
            cpu_n as u64,
            0,
            t,
            Some("openssl 1 core"),
        );
        let t = time(reps, || {
            drop(std::hint::black_box(cpu::mul_base(&ks[..single], 1)))
        });
        rep.add(
            GROUP,
            &case,
            "sm2 crate 1 core",
            single as u64,
            0,
            t,
            Some("openssl 1 core"),
        );
        let t = time(reps, || drop(cpu::mul_base(&ks[..cpu_n], all)));
        rep.add(
            GROUP,
            &case,
            "batchcrypt cpu (sm2 crate, all cores)",
            cpu_n as u64,
            0,
            t,
            Some("openssl 1 core"),
        );
        if has_gpu() {
            use batchcrypt::sm2::gpu;
            let mut got = Vec::new();
            let t = time(reps, || got = gpu::mul_base(&ks).unwrap());
            anyhow::ensure!(got[..cpu_n] == want[..], "GPU k G differs from the CPU");
            rep.add(
                GROUP,
                &case,
                "batchcrypt cuda (end to end)",
                n as u64,
                0,
                t,
                Some("openssl 1 core"),
            );
            // The same into one buffer reused batch after batch (mapped by the first call).
            let mut reused = vec![[0u8; 64]; n];
            gpu::mul_base_into(&ks, &mut reused)?;
            let t = time(reps, || gpu::mul_base_into(&ks, &mut reused).unwrap());
            anyhow::ensure!(
                reused[..cpu_n] == want[..],
                "GPU k G into a buffer differs from the CPU"
            );
            rep.add(
                GROUP,
                &case,
                "batchcrypt cuda (end to end, into a reused buffer)",
                n as u64,
                0,
                t,
                Some("openssl 1 core"),
            );
            let t = gpu::mul_base_kernel_seconds(&ks, reps.max(3))?;
            rep.add(
                GROUP,
                &case,
                "batchcrypt cuda (kernel only)",
                n as u64,
                0,
                t,
                Some("openssl 1 core"),
            );
        }
        // One secret scalar over many points (the points: k G for the scalars above).
        let case = format!("mul one k, {n} points");
        let key = scalars(1, 2)[0];
        let points = points_for(&ks)?;
        anyhow::ensure!(
            points[..cpu_n] == want[..],
            "input points differ from the CPU's k G"
        );
        let want = cpu::mul_shared(&key, &points[..cpu_n], all);
        let mut ossl = Vec::new();
        let t = time(1, || {
            ossl = points[..single]
                .iter()
                .map(|p| openssl_mul(&group, &key, Some(p), &mut ctx).unwrap())
                .collect()
        });
        anyhow::ensure!(
            ossl.iter()
                .zip(&want[..single])
                .all(|(a, b)| Some(*a) == *b),
            "OpenSSL and sm2 disagree on k P"
        );
        rep.add(GROUP, &case, "openssl 1 core", single as u64, 0, t, None);
        let t = time(1, || {
            ossl = openssl_all(&group, &ks, &key, Some(&points), cpu_n)
        });
        anyhow::ensure!(
            ossl.iter().zip(&want).all(|(a, b)| Some(*a) == *b),
            "OpenSSL and sm2 disagree on k P"
        );
        rep.add(
            GROUP,
            &case,
            "openssl all cores",
            cpu_n as u64,
            0,
            t,
            Some("openssl 1 core"),
        );
        let t = time(reps, || {
            drop(std::hint::black_box(cpu::mul_shared(
                &key,
                &points[..single],
                1,
            )))
        });
        rep.add(
            GROUP,
            &case,
            "sm2 crate 1 core",
            single as u64,
            0,
            t,
            Some("openssl 1 core"),
        );
        let t = time(reps, || drop(cpu::mul_shared(&key, &points[..cpu_n], all)));
        rep.add(
            GROUP,
            &case,
            "batchcrypt cpu (sm2 crate, all cores)",
            cpu_n as u64,
            0,
            t,
            Some("openssl 1 core"),
        );
        if has_gpu() {
            use batchcrypt::sm2::gpu;
            let mut got = Vec::new();
            let t = time(reps, || got = gpu::mul_shared(&key, &points).unwrap());
            anyhow::ensure!(got[..cpu_n] == want[..], "GPU k P differs from the CPU");
            rep.add(
                GROUP,
                &case,
                "batchcrypt cuda (end to end)",
                n as u64,
                0,
                t,
                Some("openssl 1 core"),
            );
            let t = gpu::mul_shared_kernel_seconds(&key, &points, reps.max(3))?;
            rep.add(
                GROUP,
                &case,
                "batchcrypt cuda (kernel only)",
                n as u64,
                0,
                t,
                Some("openssl 1 core"),
            );
        }
        let openssl_kp = t_openssl_kp(rep, &case);
        // The same on compressed points (what ECDH-PSI sends), decompressed by the backend.
        let case = format!("mul one k, {n} compressed points");
        let packed: Vec<Compressed> = points.par_iter().map(compress_affine).collect();
        let want_c = cpu::mul_compressed(&key, &packed[..cpu_n], all);
        anyhow::ensure!(
            want_c
                .iter()
                .zip(&want)
                .all(|(c, p)| c.map(|c| c[1..] == p.unwrap()[..32]).unwrap_or(false)),
            "compressed and affine k P differ"
        );
        let t = time(reps, || {
            drop(cpu::mul_compressed(&key, &packed[..cpu_n], all))
        });
        rep.add_vs(
            GROUP,
            &case,
            "batchcrypt cpu (sm2 crate, all cores)",
            cpu_n as u64,
            t,
            openssl_kp,
            "openssl 1 core k P",
        );
        if has_gpu() {
            use batchcrypt::sm2::gpu;
            let mut got = Vec::new();
            let t = time(reps, || got = gpu::mul_compressed(&key, &packed).unwrap());
            anyhow::ensure!(
                got[..cpu_n] == want_c[..],
                "GPU compressed k P differs from the CPU"
            );
            rep.add_vs(
                GROUP,
                &case,
                "batchcrypt cuda (end to end)",
                n as u64,
                t,
                openssl_kp,
                "openssl 1 core k P",
            );
        }
        // Hash-to-curve (RFC 9380, SM3, SSWU) and the multiplication, fused.
        let case = format!("hash-to-curve + mul, {n} items");
        let items: Vec<Vec<u8>> = (0..n)
            .into_par_iter()
            .map(|i| format!("user{i:09}@example.org").into_bytes())
            .collect();
        let msgs: Vec<&[u8]> = items.iter().map(|m| m.as_slice()).collect();
        let want_h = cpu::hash_to_curve_mul(&key, &msgs[..cpu_n], DEFAULT_DST, all);
        let t = time(reps, || {
            drop(std::hint::black_box(cpu::hash_to_curve_mul(
                &key,
                &msgs[..single],
                DEFAULT_DST,
                1,
            )))
        });
        rep.add_vs(
            GROUP,
            &case,
            "batchcrypt cpu 1 core",
            single as u64,
            t,
            openssl_kp,
            "openssl 1 core k P",
        );
        let t = time(reps, || {
            drop(cpu::hash_to_curve_mul(
                &key,
                &msgs[..cpu_n],
                DEFAULT_DST,
                all,
            ))
        });
        rep.add_vs(
            GROUP,
            &case,
            "batchcrypt cpu (all cores)",
            cpu_n as u64,
            t,
            openssl_kp,
            "openssl 1 core k P",
        );
        if has_gpu() {
            use batchcrypt::sm2::gpu;
            let mut got = Vec::new();
            let t = time(reps, || {
                got = gpu::hash_to_curve_mul(&key, &msgs, DEFAULT_DST).unwrap()
            });
            anyhow::ensure!(
                got[..cpu_n] == want_h[..],
                "GPU hash-to-curve + mul differs from the CPU"
            );
            rep.add_vs(
                GROUP,
                &case,
                "batchcrypt cuda (end to end)",
                n as u64,
                t,
                openssl_kp,
                "openssl 1 core k P",
            );
            let t = gpu::hash_to_curve_mul_kernel_seconds(&key, &msgs, DEFAULT_DST, reps.max(3))?;
            rep.add_vs(
                GROUP,
                &case,
                "batchcrypt cuda (kernel only)",
                n as u64,
                t,
                openssl_kp,
                "openssl 1 core k P",
            );
        }
        verify_rows(rep, n, reps, single, cpu_n)?;
    }
    Ok(())
}

/// OpenSSL-made SM2 signatures: `m` distinct messages by 64 keys, signed on all cores.
struct Signed {
    keys: Vec<openssl::pkey::PKey<openssl::pkey::Private>>,
    sec1: Vec<Vec<u8>>,
    msgs: Vec<Vec<u8>>,
    sigs: Vec<Vec<u8>>,
}

impl Signed {
    fn new(m: usize) -> anyhow::Result<Self> {
        use openssl::ec::{EcKey, PointConversionForm};
        use openssl::hash::MessageDigest;
        let group = EcGroup::from_curve_name(Nid::SM2)?;
        let mut ctx = BigNumContext::new()?;
        let mut keys = Vec::new();
        let mut sec1 = Vec::new();
        for _ in 0..64 {
            let ec = EcKey::generate(&group)?;
            sec1.push(ec.public_key().to_bytes(
                &group,
                PointConversionForm::UNCOMPRESSED,
                &mut ctx,
            )?);
            keys.push(openssl::pkey::PKey::from_ec_key(ec)?);
        }
        let msgs: Vec<Vec<u8>> = (0..m)
            .map(|i| {
                format!(
                    "transfer {i} from account {} to account {}",
                    i * 31,
                    i * 17 + 5
                )
                .into_bytes()
            })
            .collect();
        let sigs = (0..m)
            .into_par_iter()
            .map(|i| {
                let mut s = openssl::sign::Signer::new(MessageDigest::sm3(), &keys[i % 64])?;
                s.update(&msgs[i])?;
                Ok(s.sign_to_vec()?)
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Signed {
            keys,
            sec1,
            msgs,
            sigs,
        })
    }

    /// OpenSSL's verdict on item `i mod m`.
    fn openssl_verify(&self, i: usize) -> bool {
        let i = i % self.msgs.len();
        let mut v =
            openssl::sign::Verifier::new(openssl::hash::MessageDigest::sm3(), &self.keys[i % 64])
                .unwrap();
        v.update(&self.msgs[i]).unwrap();
        v.verify(&self.sigs[i]).unwrap_or(false)
    }
}

/// The distinguishing ID of OpenSSL's EVP SM2 signatures when none is set: the empty one.
const OPENSSL_ID: &[u8] = b"";

fn verify_rows(
    rep: &mut Report,
    n: usize,
    reps: usize,
    single: usize,
    cpu_n: usize,
) -> anyhow::Result<()> {
    use batchcrypt::sig::SigFormat;
    use batchcrypt::sm2::{gpu, verify};
    let case = format!("verify {n}");
    let signed = Signed::new(n.min(1 << 14))?;
    let m = signed.msgs.len();
    let msgs: Vec<&[u8]> = (0..n).map(|i| signed.msgs[i % m].as_slice()).collect();
    let sigs: Vec<&[u8]> = (0..n).map(|i| signed.sigs[i % m].as_slice()).collect();
    let keys: Vec<&[u8]> = (0..n).map(|i| signed.sec1[i % m % 64].as_slice()).collect();
    let mut ok = false;
    let t = time(1, || ok = (0..single).all(|i| signed.openssl_verify(i)));
    anyhow::ensure!(ok, "OpenSSL rejects its own signatures");
    rep.add(GROUP, &case, "openssl 1 core", single as u64, 0, t, None);
    let t = time(1, || {
        ok = (0..cpu_n).into_par_iter().all(|i| signed.openssl_verify(i))
    });
    anyhow::ensure!(ok, "OpenSSL rejects its own signatures");
    rep.add(
        GROUP,
        &case,
        "openssl all cores",
        cpu_n as u64,
        0,
        t,
        Some("openssl 1 core"),
    );
    for (backend, label, count) in [
        (
            batchcrypt::Backend::Portable,
            "batchcrypt cpu (sm2 crate, all cores)",
            cpu_n,
        ),
        (batchcrypt::Backend::Cuda, "batchcrypt cuda (end to end)", n),
    ] {
        if backend == batchcrypt::Backend::Cuda && !has_gpu() {
            continue;
        }
        let engine = batchcrypt::Engine::with_backend(batchcrypt::BackendChoice::Exact(backend));
        let t = time(reps, || {
            ok = engine
                .sm2()
                .verify(
                    &msgs[..count],
                    &sigs[..count],
                    &keys[..count],
                    OPENSSL_ID,
                    SigFormat::Der,
                )
                .unwrap()
                .value
                .all_valid()
        });
        anyhow::ensure!(ok, "{label} rejects OpenSSL's signatures");
        rep.add(
            GROUP,
            &case,
            label,
            count as u64,
            0,
            t,
            Some("openssl 1 core"),
        );
    }
    if has_gpu() {
        // Digests given (computed once per distinct message here), and the kernel alone.
        let digests: Vec<[u8; 32]> = (0..m)
            .into_par_iter()
            .map(|i| {
                let xy: [u8; 64] = signed.sec1[i % 64][1..].try_into().unwrap();
                verify::message_digest(OPENSSL_ID, &xy, &signed.msgs[i]).unwrap()
            })
            .collect();
        let all_digests: Vec<[u8; 32]> = (0..n).map(|i| digests[i % m]).collect();
        let engine = batchcrypt::Engine::with_backend(batchcrypt::BackendChoice::Exact(
            batchcrypt::Backend::Cuda,
        ));
        let t = time(reps, || {
            ok = engine
                .sm2()
                .verify_digests(&all_digests, &sigs, &keys, SigFormat::Der)
                .unwrap()
                .value
                .all_valid()
        });
        anyhow::ensure!(ok, "GPU rejects OpenSSL's signatures given digests");
        let case_d = format!("verify {n}, digests given");
        rep.add_vs(
            GROUP,
            &case_d,
            "batchcrypt cuda (end to end)",
            n as u64,
            t,
            rep.per_item(GROUP, &case, "openssl 1 core")
                .unwrap_or(f64::NAN),
            "openssl 1 core verify",
        );
        let (t, verdicts) = gpu::verify_kernel_seconds(
            n,
            |i| {
                let (r, s, key) = verify::parts(sigs[i], keys[i], SigFormat::Der)?;
                let digest = gpu::Digest::Given(all_digests[i]);
                Ok(gpu::DeviceItem { r, s, key, digest })
            },
            None,
            reps.max(3),
        )?;
        anyhow::ensure!(
            verdicts.iter().all(|v| v.is_ok()),
            "GPU kernel rejects OpenSSL's signatures"
        );
        rep.add_vs(
            GROUP,
            &case_d,
            "batchcrypt cuda (kernel only)",
            n as u64,
            t,
            rep.per_item(GROUP, &case, "openssl 1 core")
                .unwrap_or(f64::NAN),
            "openssl 1 core verify",
        );
        // From messages: the preparation hashes each e = SM3(Z_A || M) on the device.
        let messages = gpu::Messages::new(OPENSSL_ID, &msgs);
        let (t, verdicts) = gpu::verify_kernel_seconds(
            n,
            |i| {
                let (r, s, key) = verify::parts(sigs[i], keys[i], SigFormat::Der)?;
                let digest = messages.digest(i, || unreachable!("short messages"))?;
                Ok(gpu::DeviceItem { r, s, key, digest })
            },
            Some(&messages),
            reps.max(3),
        )?;
        anyhow::ensure!(
            verdicts.iter().all(|v| v.is_ok()),
            "GPU kernel rejects OpenSSL's signatures from their messages"
        );
        rep.add(
            GROUP,
            &case,
            "batchcrypt cuda (kernel only, hashing included)",
            n as u64,
            0,
            t,
            Some("openssl 1 core"),
        );
    }
    Ok(())
}

/// Seconds per item of the OpenSSL one-core row of `case`.
fn t_openssl_kp(rep: &Report, case: &str) -> f64 {
    rep.per_item(GROUP, case, "openssl 1 core")
        .unwrap_or(f64::NAN)
}

/// k·G for 10^6 scalars on the GPU end to end into one reused buffer, sweeping the pipeline's
/// chunk (scalars per chunk; the library's default is `gpu::BASE_CHUNK`), each size timed 7 times in
/// an interleaved order so that the host's drift falls on all of them; the kernel alone for
/// reference. Checked against the CPU on the first 4 096.
pub fn run_chunks(rep: &mut Report, quick: bool) -> anyhow::Result<()> {
    if has_gpu() {
        use batchcrypt::sm2::gpu;
        let n = if quick { 1 << 16 } else { 1_000_000 };
        let ks = scalars(n, 1);
        let want = cpu::mul_base(&ks[..4096], batchcrypt::backend::cpu::threads());
        let case = format!("mul_base {n}");
        rep.header("SM2 k·G on the GPU end to end into a reused buffer, by pipeline chunk");
        let logs = [16u32, 17, 18, 19, 20];
        let mut times = vec![Vec::new(); logs.len()];
        let mut got = vec![[0u8; 64]; n];
        gpu::mul_base_into(&ks, &mut got)?; // warm-up: the table, the pinned buffers, the output
        for _ in 0..7 {
            for (j, &log) in logs.iter().enumerate() {
                got[..4096].fill([0; 64]);
                let t0 = std::time::Instant::now();
                gpu::mul_base_into_chunked(&ks, &mut got, 1 << log)?;
                times[j].push(t0.elapsed().as_secs_f64());
                anyhow::ensure!(got[..4096] == want[..], "GPU k G differs from the CPU");
            }
        }
        for (j, &log) in logs.iter().enumerate() {
            times[j].sort_by(f64::total_cmp);
            let name = format!("batchcrypt cuda (end to end, chunks of 2^{log})");
            rep.add(
                GROUP,
                &case,
                &name,
                n as u64,
                0,
                times[j][times[j].len() / 2],
                None,
            );
        }
        let t = gpu::mul_base_kernel_seconds(&ks, 5)?;
        rep.add(
            GROUP,
            &case,
            "batchcrypt cuda (kernel only)",
            n as u64,
            0,
            t,
            None,
        );
    }
    let _ = (rep, quick);
    Ok(())
}

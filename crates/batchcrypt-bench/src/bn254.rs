//! BN254 multi-scalar multiplication on G1 and G2: arkworks on all cores (the peer, and our CPU
//! backend) against our GPU path on the same bases and scalars, results checked equal. The GPU
//! rows are the call with the bases already in GPU memory (as a prover keeps its proving key) and
//! the scalars in host memory — conversion, upload, kernels and the final window sum — and the
//! kernels alone (device time, scalars resident).

use crate::report::{time, Report};
use ark_ec::CurveGroup;
use batchcrypt::bn254::{cpu, Bases, Group, G1, G2};
use batchcrypt::{Backend, BackendChoice, Engine};

const GROUP: &str = "bn254";

fn has_gpu() -> bool {
    Backend::Cuda.is_available()
}

pub fn run(rep: &mut Report, quick: bool) -> anyhow::Result<()> {
    // G2 points cost about three times G1's; a prover's G2 MSM (B2) is over the same scalars.
    let (g1, g2): (&[u32], &[u32]) = if quick {
        (&[12, 14], &[12])
    } else {
        (&[16, 18, 20, 22, 24], &[16, 18, 20, 22])
    };
    run_group::<G1>(rep, g1)?;
    run_group::<G2>(rep, g2)
}

fn run_group<P: Group>(rep: &mut Report, logs: &[u32]) -> anyhow::Result<()> {
    let name = P::NAME;
    let biggest = 1usize << logs.iter().max().unwrap();
    let t = std::time::Instant::now();
    let (points, scalars) = batchcrypt::bn254::sample::<P>(biggest, 42);
    println!(
        "\n(made {biggest} distinct {name} bases and scalars in {:.1} s)",
        t.elapsed().as_secs_f64()
    );
    rep.header(&format!("BN254 {} MSM: ours vs arkworks on all cores (same bases and scalars; results checked equal)", name.to_uppercase()));
    let threads = batchcrypt::backend::cpu::threads();
    let peer = format!("arkworks {threads} threads");
    for &log in logs {
        let n = 1usize << log;
        let case = format!("msm {name} 2^{log}");
        let reps = if log <= 20 { 5 } else { 2 };
        let bases = Bases::<P>::new(points[..n].to_vec());
        let ks = &scalars[..n];
        let mut want = None;
        let t = time(reps, || {
            want = Some(cpu::msm(bases.as_slice(), ks, threads))
        });
        let want = want.unwrap().into_affine();
        rep.add(GROUP, &case, &peer, n as u64, 0, t, None);
        println!("{:<34} {:<36} {:>10.2} ms", "", "arkworks", t * 1e3);
        let mut choices = Vec::new();
        if has_gpu() {
            choices.push((
                "ours gpu (bases resident)",
                BackendChoice::Exact(Backend::Cuda),
            ));
        }
        choices.push(("ours auto", BackendChoice::Auto));
        for (label, choice) in choices {
            let engine = Engine::with_backend(choice);
            let mut got = None;
            let t = time(reps, || {
                got = Some(engine.bn254().msm(&bases, ks).expect("MSM failed"))
            });
            let got = got.unwrap();
            anyhow::ensure!(
                got.value.into_affine() == want,
                "{label} disagrees with arkworks on {case}"
            );
            let label = crate::report::label(label, choice, got.backend);
            rep.add(GROUP, &case, &label, n as u64, 0, t, Some(&peer));
            println!("{:<34} {:<36} {:>10.2} ms", "", label, t * 1e3);
        }
        if has_gpu() {
            let t = batchcrypt::bn254::gpu::kernel_seconds(&bases, ks, reps)?;
            rep.add(
                GROUP,
                &case,
                "ours gpu kernels (scalars resident)",
                n as u64,
                0,
                t,
                Some(&peer),
            );
            println!("{:<34} {:<36} {:>10.2} ms", "", "gpu kernels", t * 1e3);
            drop(bases);
            precomputed(rep, &case, &peer, &points[..n], ks, reps, &want)?;
        }
    }
    Ok(())
}

/// The same MSM over precomputed bases (a few copies, and one per digit window): the call, the
/// kernels, and the one-time cost of the copies.
fn precomputed<P: Group>(
    rep: &mut Report,
    case: &str,
    peer: &str,
    points: &[batchcrypt::bn254::Affine<P>],
    ks: &[batchcrypt::bn254::Fr],
    reps: usize,
    want: &batchcrypt::bn254::Affine<P>,
) -> anyhow::Result<()> {
    let engine = Engine::with_backend(BackendChoice::Exact(Backend::Cuda));
    let n = ks.len() as u64;
    for copies in [4, 64] {
        let bases = Bases::<P>::new(points.to_vec()).with_precomputation(copies);
        let t0 = std::time::Instant::now();
        let held = bases.device()?.copies();
        let setup = t0.elapsed().as_secs_f64();
        let got = engine.bn254().msm(&bases, ks)?;
        anyhow::ensure!(
            got.value.into_affine() == *want,
            "precomputed bases ({held} copies) disagree with arkworks on {case}"
        );
        let t = time(reps, || {
            drop(engine.bn254().msm(&bases, ks).expect("MSM failed"))
        });
        let label = format!("ours gpu, {held} precomputed copies");
        rep.add(GROUP, case, &label, n, 0, t, Some(peer));
        let tk = batchcrypt::bn254::gpu::kernel_seconds(&bases, ks, reps)?;
        let klabel = format!("gpu kernels, {held} copies");
        rep.add(GROUP, case, &klabel, n, 0, tk, Some(peer));
        println!(
            "{:<34} {:<36} {:>10.2} ms  (kernels {:.2} ms; copies made in {:.0} ms)",
            "",
            label,
            t * 1e3,
            tk * 1e3,
            setup * 1e3
        );
    }
    Ok(())
}

const NTT_GROUP: &str = "ntt";

/// BN254 Fr NTTs: arkworks' radix-2 FFT on all cores (the peer, and our CPU backend) against our
/// GPU path on the same polynomial, results checked equal. The GPU rows are the call (values from
/// host memory and back) and the kernels alone (device time, values and twiddles resident).
pub fn run_ntt(rep: &mut Report, quick: bool) -> anyhow::Result<()> {
    use ark_ff::{FftField, UniformRand};
    use batchcrypt::bn254::ntt::Ntt;
    use batchcrypt::bn254::Fr;
    use rand::SeedableRng;
    let logs: &[u32] = if quick {
        &[10, 12]
    } else {
        &[10, 12, 14, 16, 18, 20, 22, 24, 26]
    };
    let biggest = 1usize << logs.iter().max().unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    let input: Vec<Fr> = (0..biggest).map(|_| Fr::rand(&mut rng)).collect();
    rep.header(
        "BN254 Fr NTT: ours vs arkworks on all cores (same polynomial; results checked equal)",
    );
    let threads = batchcrypt::backend::cpu::threads();
    let peer = format!("arkworks {threads} threads");
    for &log in logs {
        let n = 1usize << log;
        // The forward transform everywhere; the coset inverse (a prover's other step) at two sizes.
        let mut kinds = vec![("ntt", Ntt::forward(n))];
        if log == 20 || log == 24 {
            kinds.push(("coset intt", Ntt::inverse(n).on_coset(Fr::GENERATOR)));
        }
        for (what, t) in kinds {
            let case = format!("{what} 2^{log}");
            let reps = if log <= 20 { 5 } else { 2 };
            let mut want = input[..n].to_vec();
            cpu::ntt(&mut want, &t, threads);
            let mut scratch = input[..n].to_vec();
            let tc = time(reps, || cpu::ntt(&mut scratch, &t, threads));
            rep.add(NTT_GROUP, &case, &peer, n as u64, 0, tc, None);
            println!("{:<34} {:<36} {:>10.3} ms", "", "arkworks", tc * 1e3);
            let mut choices = Vec::new();
            if has_gpu() {
                choices.push((
                    "ours gpu (host memory in and out)",
                    BackendChoice::Exact(Backend::Cuda),
                ));
            }
            choices.push(("ours auto", BackendChoice::Auto));
            for (name, choice) in choices {
                let engine = Engine::with_backend(choice);
                let mut got = input[..n].to_vec();
                let ran = engine.bn254().ntt(&mut got, &t)?.backend;
                anyhow::ensure!(got == want, "{name} disagrees with arkworks on {case}");
                let tg = time(reps, || {
                    drop(engine.bn254().ntt(&mut scratch, &t).expect("NTT failed"))
                });
                let name = crate::report::label(name, choice, ran);
                rep.add(NTT_GROUP, &case, &name, n as u64, 0, tg, Some(&peer));
                println!("{:<34} {:<36} {:>10.3} ms", "", name, tg * 1e3);
            }
            if has_gpu() {
                let tk = batchcrypt::bn254::gpu::ntt_kernel_seconds(
                    &input[..n],
                    std::slice::from_ref(&t),
                    reps.max(3),
                )?;
                rep.add(
                    NTT_GROUP,
                    &case,
                    "ours gpu kernels (values resident)",
                    n as u64,
                    0,
                    tk,
                    Some(&peer),
                );
                println!("{:<34} {:<36} {:>10.3} ms", "", "gpu kernels", tk * 1e3);
            }
        }
    }
    Ok(())
}

//! Multi-scalar multiplication on G1 and G2 of BN254 and BLS12-381: arkworks on all cores (the
//! peer, and our CPU backend) against our GPU path on the same bases and scalars, results checked
//! equal. The GPU
//! rows are the call with the bases already in GPU memory (as a prover keeps its proving key) and
//! the scalars in host memory — conversion, upload, kernels and the final window sum — and the
//! kernels alone (device time, scalars resident). `MSM_LOGS` (e.g. "20 24") runs only those sizes
//! (log2 of the points) of each group's list.

use crate::report::{has_gpu, time, with_gpu_and_auto, Report};
use ark_ec::CurveGroup;
use batchcrypt::msm::{cpu, Affine, Bases, Group};
use batchcrypt::{Backend, BackendChoice, Engine};

/// BN254's groups (`batchcrypt-bench bn254`).
pub fn bn254(rep: &mut Report, quick: bool) -> anyhow::Result<()> {
    use batchcrypt::bn254::{G1, G2};
    // G2 points cost about three times G1's; a prover's G2 MSM (B2) is over the same scalars.
    let (g1, g2): (&[u32], &[u32]) = if quick {
        (&[12, 14], &[12])
    } else {
        (&[16, 18, 20, 22, 24], &[16, 18, 20, 22])
    };
    run_group::<G1>(rep, "bn254", "g1", g1)?;
    run_group::<G2>(rep, "bn254", "g2", g2)
}

/// BLS12-381's groups (`batchcrypt-bench bls12-381`).
pub fn bls12_381(rep: &mut Report, quick: bool) -> anyhow::Result<()> {
    use batchcrypt::bls12_381::{G1, G2};
    let (g1, g2): (&[u32], &[u32]) = if quick {
        (&[12, 14], &[12])
    } else {
        (&[16, 18, 20, 22, 24], &[16, 18, 20])
    };
    run_group::<G1>(rep, "bls12-381", "g1", g1)?;
    run_group::<G2>(rep, "bls12-381", "g2", g2)
}

/// The sizes of `logs` that `MSM_LOGS` names (all of them without it).
fn chosen(logs: &[u32]) -> Vec<u32> {
    match std::env::var("MSM_LOGS") {
        Ok(v) => {
            let want: Vec<u32> = v
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            logs.iter().copied().filter(|l| want.contains(l)).collect()
        }
        Err(_) => logs.to_vec(),
    }
}

fn run_group<P: Group>(
    rep: &mut Report,
    curve: &'static str,
    name: &str,
    logs: &[u32],
) -> anyhow::Result<()> {
    let logs = &chosen(logs)[..];
    if logs.is_empty() {
        return Ok(());
    }
    let group = curve;
    let biggest = 1usize << logs.iter().max().unwrap();
    let t = std::time::Instant::now();
    let (points, scalars) = batchcrypt::msm::sample::<P>(biggest, 42);
    println!(
        "\n(made {biggest} distinct {name} bases and scalars in {:.1} s)",
        t.elapsed().as_secs_f64()
    );
    // sppark on the GPU where it is built and there is a GPU; our GPU rows are then compared
    // with it, else with arkworks.
    let sppark = has_gpu().then(crate::peers::Sppark::load).flatten();
    rep.header(&format!(
        "{} {} MSM: ours vs {} (same bases and scalars; results checked equal)",
        curve.to_uppercase(),
        name.to_uppercase(),
        if sppark.is_some() {
            "sppark and arkworks on all cores"
        } else {
            "arkworks on all cores"
        }
    ));
    let threads = batchcrypt::backend::cpu::threads();
    let arkworks = format!("arkworks {threads} threads");
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
        rep.add(group, &case, &arkworks, n as u64, 0, t, None);
        println!("{:<34} {:<36} {:>10.2} ms", "", "arkworks", t * 1e3);
        let mut peer = arkworks.clone();
        if let Some(sp) = &sppark {
            let batch = crate::peers::Batch::new::<P>(bases.as_slice(), ks)?;
            for (label, resident) in [
                ("sppark (points resident)", true),
                ("sppark (points from host memory)", false),
            ] {
                // One warm-up call, then the median of the driver's own timings.
                let mut ts = Vec::new();
                for _ in 0..=reps {
                    let (got, t) = sp.msm::<P>(curve, name, &batch, resident)?;
                    anyhow::ensure!(got == want, "{label} disagrees with arkworks on {case}");
                    ts.push(t);
                }
                ts.remove(0);
                ts.sort_by(f64::total_cmp);
                let t = ts[ts.len() / 2];
                rep.add(group, &case, label, n as u64, 0, t, Some(&arkworks));
                println!("{:<34} {:<36} {:>10.2} ms", "", label, t * 1e3);
            }
            peer = "sppark (points resident)".into();
        }
        for (label, choice) in with_gpu_and_auto(Vec::new(), "ours gpu (bases resident)") {
            let engine = Engine::with_backend(choice);
            let mut got = None;
            let t = time(reps, || {
                got = Some(engine.msm(&bases, ks).expect("MSM failed"))
            });
            let got = got.unwrap();
            anyhow::ensure!(
                got.value.into_affine() == want,
                "{label} disagrees with arkworks on {case}"
            );
            let label = crate::report::label(label, choice, got.backend);
            rep.add(group, &case, &label, n as u64, 0, t, Some(&peer));
            println!("{:<34} {:<36} {:>10.2} ms", "", label, t * 1e3);
        }
        if has_gpu() {
            let t = batchcrypt::msm::gpu::kernel_seconds(&bases, ks, None, reps)?;
            rep.add(
                group,
                &case,
                "ours gpu kernels (scalars resident)",
                n as u64,
                0,
                t,
                Some(&peer),
            );
            println!("{:<34} {:<36} {:>10.2} ms", "", "gpu kernels", t * 1e3);
            drop(bases);
            precomputed(rep, group, &case, &peer, &points[..n], ks, reps, &want)?;
        }
    }
    Ok(())
}

/// The same MSM over precomputed bases (a few copies, and one per digit window): the call, the
/// kernels, and the one-time cost of the copies.
fn precomputed<P: Group>(
    rep: &mut Report,
    group: &str,
    case: &str,
    peer: &str,
    points: &[Affine<P>],
    ks: &[P::ScalarField],
    reps: usize,
    want: &Affine<P>,
) -> anyhow::Result<()> {
    let engine = Engine::with_backend(BackendChoice::Exact(Backend::Cuda));
    let n = ks.len() as u64;
    for copies in [4, 64] {
        let bases = Bases::<P>::new(points.to_vec()).with_precomputation(copies);
        let t0 = std::time::Instant::now();
        let held = bases.device()?.copies();
        let setup = t0.elapsed().as_secs_f64();
        let got = engine.msm(&bases, ks)?;
        anyhow::ensure!(
            got.value.into_affine() == *want,
            "precomputed bases ({held} copies) disagree with arkworks on {case}"
        );
        let t = time(reps, || drop(engine.msm(&bases, ks).expect("MSM failed")));
        let label = format!("ours gpu, {held} precomputed copies");
        rep.add(group, case, &label, n, 0, t, Some(peer));
        let tk = batchcrypt::msm::gpu::kernel_seconds(&bases, ks, None, reps)?;
        let klabel = format!("gpu kernels, {held} copies");
        rep.add(group, case, &klabel, n, 0, tk, Some(peer));
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

/// Device time of the G1 MSM kernels by window size around the one the library picks, over the
/// same bases and scalars (`batchcrypt-bench msm-windows`): the data the window choice
/// (`msm::Shape::new`) is fitted to. Ratios against the library's choice.
pub fn windows(rep: &mut Report, quick: bool) -> anyhow::Result<()> {
    let logs: &[u32] = if quick {
        &[12, 14]
    } else {
        &[16, 18, 20, 22, 24]
    };
    sweep::<batchcrypt::bn254::G1>(rep, "bn254", logs)?;
    sweep::<batchcrypt::bls12_381::G1>(rep, "bls12-381", logs)?;
    let large: Vec<u32> = logs.iter().copied().filter(|&l| l >= 20).collect();
    sweep_precomputed::<batchcrypt::bn254::G1>(rep, "bn254", &large)?;
    sweep_precomputed::<batchcrypt::bls12_381::G1>(rep, "bls12-381", &large)
}

/// The same over bases precomputed with one copy per digit window (one set of buckets), for
/// windows from the plain bases' up: wider windows take fewer additions per scalar, and
/// their buckets, one set for all windows, are few beside the entries.
fn sweep_precomputed<P: Group>(rep: &mut Report, curve: &str, logs: &[u32]) -> anyhow::Result<()> {
    let Some(&biggest) = logs.iter().max() else {
        return Ok(());
    };
    if !has_gpu() {
        return Ok(());
    }
    let group = "msm-windows";
    let (points, scalars) = batchcrypt::msm::sample::<P>(1 << biggest, 42);
    rep.header(&format!(
        "{} G1 MSM kernels over precomputed bases (one copy per digit window) by window size (ratio against the library's window)",
        curve.to_uppercase()
    ));
    for &log in logs {
        let n = 1usize << log;
        let ks = &scalars[..n];
        let bits = batchcrypt::msm::scalar_bits::<P>();
        let chosen = batchcrypt::msm::Shape::for_bases(n, n, 64, bits)?.c;
        let plain = batchcrypt::msm::Shape::new(n, bits)?.c;
        let case = format!("{curve} g1 msm 2^{log}, copies per window");
        let reps = if log <= 20 { 5 } else { 3 };
        let base = format!("window {chosen} (chosen)");
        // Each window's sum checked against the plain bases' (which the tests check).
        let engine = Engine::with_backend(BackendChoice::Exact(Backend::Cuda));
        let want = engine
            .msm(&Bases::<P>::new(points[..n].to_vec()), ks)?
            .value;
        let others = (plain..=(plain + 5).min(24)).filter(|&c| c != chosen);
        for c in std::iter::once(chosen).chain(others) {
            let bases = Bases::<P>::new(points[..n].to_vec())
                .with_precomputation(64)
                .with_window(c);
            anyhow::ensure!(
                engine.msm(&bases, ks)?.value == want,
                "precomputed bases at window {c} disagree on {case}"
            );
            let t = batchcrypt::msm::gpu::kernel_seconds(&bases, ks, None, reps)?;
            let (label, against) = if c == chosen {
                (base.clone(), None)
            } else {
                (format!("window {c}"), Some(base.as_str()))
            };
            rep.add(group, &case, &label, n as u64, 0, t, against);
            println!(
                "{:<34} {:<36} {:>10.2} ms  ({} copies)",
                case,
                label,
                t * 1e3,
                bases.device()?.copies()
            );
        }
    }
    Ok(())
}

fn sweep<P: Group>(rep: &mut Report, curve: &str, logs: &[u32]) -> anyhow::Result<()> {
    if !has_gpu() {
        println!("(no GPU: the window sweep needs one)");
        return Ok(());
    }
    let group = "msm-windows";
    let biggest = 1usize << logs.iter().max().unwrap();
    let (points, scalars) = batchcrypt::msm::sample::<P>(biggest, 42);
    rep.header(&format!(
        "{} G1 MSM kernels by window size (same bases and scalars; ratio against the library's window)",
        curve.to_uppercase()
    ));
    for &log in logs {
        let n = 1usize << log;
        let bases = Bases::<P>::new(points[..n].to_vec());
        let ks = &scalars[..n];
        let chosen = batchcrypt::msm::Shape::new(n, batchcrypt::msm::scalar_bits::<P>())?.c;
        let case = format!("{curve} g1 msm 2^{log}");
        let reps = if log <= 20 { 5 } else { 3 };
        let base = format!("window {chosen} (chosen)");
        let t = batchcrypt::msm::gpu::kernel_seconds(&bases, ks, Some(chosen), reps)?;
        rep.add(group, &case, &base, n as u64, 0, t, None);
        for c in (chosen.saturating_sub(5).max(4)..=(chosen + 2).min(22)).filter(|&c| c != chosen) {
            let t = batchcrypt::msm::gpu::kernel_seconds(&bases, ks, Some(c), reps)?;
            rep.add(
                group,
                &case,
                &format!("window {c}"),
                n as u64,
                0,
                t,
                Some(&base),
            );
        }
    }
    Ok(())
}

//! BN254 G1 multi-scalar multiplication: arkworks on all cores (the peer, and our CPU backend)
//! against our GPU path on the same bases and scalars, results checked equal. The GPU rows are
//! the call with the bases already in GPU memory (as a prover keeps its proving key) and the
//! scalars in host memory — conversion, upload, kernels and the final window sum — and the
//! kernels alone (device time, scalars resident).

use crate::report::{time, Report};
use ark_ec::CurveGroup;
use batchcrypt::bn254::{cpu, G1Bases};
use batchcrypt::{Backend, BackendChoice, Engine};

const GROUP: &str = "bn254";

fn has_gpu() -> bool {
    cfg!(feature = "cuda") && Backend::Cuda.is_available()
}

pub fn run(rep: &mut Report, quick: bool) -> anyhow::Result<()> {
    let logs: &[u32] = if quick {
        &[12, 14]
    } else {
        &[16, 18, 20, 22, 24]
    };
    let biggest = 1usize << logs.iter().max().unwrap();
    let t = std::time::Instant::now();
    let (points, scalars) = batchcrypt::bn254::sample(biggest, 42);
    println!(
        "\n(made {biggest} distinct bases and scalars in {:.1} s)",
        t.elapsed().as_secs_f64()
    );
    rep.header("BN254 G1 MSM: ours vs arkworks on all cores (same bases and scalars; results checked equal)");
    let threads = batchcrypt::backend::cpu::threads();
    for &log in logs {
        let n = 1usize << log;
        let case = format!("msm g1 2^{log}");
        let reps = if log <= 20 { 5 } else { 2 };
        let bases = G1Bases::new(points[..n].to_vec());
        let ks = &scalars[..n];
        let mut want = None;
        let t = time(reps, || {
            want = Some(cpu::msm_g1(bases.as_slice(), ks, threads))
        });
        let want = want.unwrap().into_affine();
        rep.add(
            GROUP,
            &case,
            &format!("arkworks {threads} threads"),
            n as u64,
            0,
            t,
            None,
        );
        println!("{:<34} {:<36} {:>10.2} ms", "", "arkworks", t * 1e3);
        let mut choices = Vec::new();
        if has_gpu() {
            choices.push((
                "ours gpu (bases resident)",
                BackendChoice::Exact(Backend::Cuda),
            ));
        }
        choices.push(("ours auto", BackendChoice::Auto));
        for (name, choice) in choices {
            let engine = Engine::with_backend(choice);
            let mut got = None;
            let t = time(reps, || {
                got = Some(engine.bn254().msm_g1(&bases, ks).expect("MSM failed"))
            });
            let got = got.unwrap();
            anyhow::ensure!(
                got.value.into_affine() == want,
                "{name} disagrees with arkworks on {case}"
            );
            let name = if choice == BackendChoice::Auto {
                format!("{name} (ran {})", got.backend)
            } else {
                name.to_string()
            };
            rep.add(
                GROUP,
                &case,
                &name,
                n as u64,
                0,
                t,
                Some(&format!("arkworks {threads} threads")),
            );
            println!("{:<34} {:<36} {:>10.2} ms", "", name, t * 1e3);
        }
        #[cfg(feature = "cuda")]
        if has_gpu() {
            let t = batchcrypt::bn254::gpu::kernel_seconds(bases.device()?, ks, reps)?;
            rep.add(
                GROUP,
                &case,
                "ours gpu kernels (scalars resident)",
                n as u64,
                0,
                t,
                Some(&format!("arkworks {threads} threads")),
            );
            println!("{:<34} {:<36} {:>10.2} ms", "", "gpu kernels", t * 1e3);
        }
    }
    Ok(())
}

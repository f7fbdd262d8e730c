//! BN254 Fr NTTs: arkworks' radix-2 FFT on all cores (the peer, and our CPU backend) against our
//! GPU path on the same polynomial.

use crate::report::{has_gpu, time, with_gpu_and_auto, Report};
use batchcrypt::bn254::cpu;
use batchcrypt::Engine;

const NTT_GROUP: &str = "ntt";

/// BN254 Fr NTTs: arkworks' radix-2 FFT on all cores (the peer, and our CPU backend) against our
/// GPU path on the same polynomial, results checked equal. The GPU rows are the call (values from
/// host memory and back) and the kernels alone (device time, values and twiddles resident).
pub fn run(rep: &mut Report, quick: bool) -> anyhow::Result<()> {
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
            let choices = with_gpu_and_auto(Vec::new(), "ours gpu (host memory in and out)");
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

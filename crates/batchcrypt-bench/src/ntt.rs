//! Fr NTTs of BN254 and BLS12-381: arkworks' radix-2 FFT on all cores (the peer, and our CPU
//! backend) against our GPU path on the same polynomial.

use crate::report::{has_gpu, time, with_gpu_and_auto, Report};
use batchcrypt::ntt::cpu;
use batchcrypt::{Backend, BackendChoice, Engine};

const NTT_GROUP: &str = "ntt";

/// Fr NTTs: BN254's at every size, BLS12-381's at the sizes of the Groth16 benchmarks.
pub fn run(rep: &mut Report, quick: bool) -> anyhow::Result<()> {
    let (bn, bls): (&[u32], &[u32]) = if quick {
        (&[10, 12], &[12])
    } else {
        (&[10, 12, 14, 16, 18, 20, 22, 24, 26], &[16, 20, 24])
    };
    field::<batchcrypt::bn254::Fr>(rep, "BN254", "", bn)?;
    field::<batchcrypt::bls12_381::Fr>(rep, "BLS12-381", "bls12-381 ", bls)
}

/// The NTTs over `F` of 2^log elements for each of `logs`, arkworks' results checked equal to
/// ours. The GPU rows are the call (values from host memory and back) and the kernels alone
/// (device time, values and twiddles resident); cases are named `<prefix>ntt 2^log`.
fn field<F: batchcrypt::ntt::Field>(
    rep: &mut Report,
    name: &str,
    prefix: &str,
    logs: &[u32],
) -> anyhow::Result<()> {
    use batchcrypt::ntt::Ntt;
    use rand::SeedableRng;
    let biggest = 1usize << logs.iter().max().unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    let input: Vec<F> = (0..biggest).map(|_| F::rand(&mut rng)).collect();
    rep.header(&format!(
        "{name} Fr NTT: ours vs arkworks on all cores (same polynomial; results checked equal)"
    ));
    let threads = batchcrypt::backend::cpu::threads();
    let peer = format!("arkworks {threads} threads");
    for &log in logs {
        let n = 1usize << log;
        // The forward transform everywhere; the coset inverse (a prover's other step) at two sizes.
        let mut kinds = vec![("ntt", Ntt::forward(n))];
        if log == 20 || log == 24 {
            kinds.push(("coset intt", Ntt::inverse(n).on_coset(F::GENERATOR)));
        }
        for (what, t) in kinds {
            let case = format!("{prefix}{what} 2^{log}");
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
                let ran = engine.ntt(&mut got, &t)?.backend;
                anyhow::ensure!(got == want, "{name} disagrees with arkworks on {case}");
                let tg = time(reps, || {
                    drop(engine.ntt(&mut scratch, &t).expect("NTT failed"))
                });
                let name = crate::report::label(name, choice, ran);
                rep.add(NTT_GROUP, &case, &name, n as u64, 0, tg, Some(&peer));
                println!("{:<34} {:<36} {:>10.3} ms", "", name, tg * 1e3);
            }
            if has_gpu() {
                // Canonical little-endian bytes in and out (numpy's limbs): converted nowhere.
                let engine = Engine::with_backend(BackendChoice::Exact(Backend::Cuda));
                let bytes = batchcrypt::msm::canonical_bytes(&input[..n]);
                let mut out = vec![0u8; bytes.len()];
                let steps = std::slice::from_ref(&t);
                engine.ntts_canonical(&bytes, &mut out, steps)?;
                anyhow::ensure!(
                    out == batchcrypt::msm::canonical_bytes(&want),
                    "canonical bytes disagree with arkworks on {case}"
                );
                let tb = time(reps, || {
                    drop(
                        engine
                            .ntts_canonical(&bytes, &mut out, steps)
                            .expect("NTT failed"),
                    )
                });
                let name = "ours gpu (canonical bytes in and out)";
                rep.add(NTT_GROUP, &case, name, n as u64, 0, tb, Some(&peer));
                println!("{:<34} {:<36} {:>10.3} ms", "", name, tb * 1e3);
                let tk = batchcrypt::ntt::gpu::ntt_kernel_seconds(
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

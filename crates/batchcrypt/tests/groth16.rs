//! Groth16 proofs for circuits built with the real toolchain (circom 2, snarkjs; fixtures from
//! scripts/zk-fixtures.sh): our proofs verify with snarkjs itself and with our verifier, our
//! verifier accepts snarkjs's proofs, every backend gives the same proof for the same randomness,
//! and bad files or witnesses give an error, never a proof.
//!
//! Without the fixtures the tests are skipped with a note; scripts/test.sh builds them and sets
//! BATCHCRYPT_REQUIRE_ZK_FIXTURES=1 (and BATCHCRYPT_REQUIRE_SNARKJS=1), so CI runs them all.

use ark_ff::{One, Zero};
use batchcrypt::bls12_381::Bls12_381;
use batchcrypt::bn254::{Bn254, Fr};
use batchcrypt::groth16::{self, Curve, CurveId, Proof};
use batchcrypt::{Error, Primitive};
use batchcrypt_testdata::zk_fixture as fixture;
use rand::SeedableRng;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

// The types of the tests that run on BN254's fixtures only.
type ProvingKey = groth16::ProvingKey<Bn254>;
type R1cs = groth16::R1cs<Fr>;
type Witness = groth16::Witness<Fr>;

/// `#[test] fn NAME()` running `BODY::<C>(circuits, primitive)` on each curve's fixtures.
macro_rules! on_both_curves {
    ($($name:ident => $body:ident),* $(,)?) => {$(
        #[test]
        fn $name() {
            $body::<Bn254>(&["mix", "chain-10"], Primitive::Bn254);
            $body::<Bls12_381>(&["mix-bls12381", "chain-10-bls12381"], Primitive::Bls12_381);
        }
    )*};
}

on_both_curves! {
    our_proofs_verify_with_snarkjs_on_every_backend => snarkjs_verifies_ours_on,
    a_precomputed_key_gives_the_same_proofs => precomputed_on,
    our_verifier_agrees_with_snarkjs => our_verifier_on,
    verification_key_json_reads_as_the_zkeys_key => verification_key_on,
    our_setup_makes_keys_snarkjs_proves_with => setup_on,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs the snarkjs command line; `None` where Node.js or snarkjs is absent.
fn snarkjs(args: &[&std::ffi::OsStr]) -> Option<(bool, String)> {
    let cli = root().join("scripts/zk/node_modules/snarkjs/build/cli.cjs");
    let run = Command::new("node").arg(&cli).args(args).output();
    match run {
        Ok(out) if cli.is_file() => {
            let text = String::from_utf8_lossy(&out.stdout).to_string()
                + &String::from_utf8_lossy(&out.stderr);
            Some((out.status.success(), text))
        }
        _ => {
            if std::env::var("BATCHCRYPT_REQUIRE_SNARKJS").as_deref() == Ok("1") {
                panic!("snarkjs cannot run (node, scripts/zk/node_modules): run scripts/zk-fixtures.sh");
            }
            eprintln!("note: snarkjs not available here; our own verifier only");
            None
        }
    }
}

/// `snarkjs groth16 verify`'s verdict, or `None` where snarkjs cannot run.
fn snarkjs_verify(vk: &Path, public: &Path, proof: &Path) -> Option<bool> {
    let (ok, text) = snarkjs(&[
        "groth16".as_ref(),
        "verify".as_ref(),
        vk.as_ref(),
        public.as_ref(),
        proof.as_ref(),
    ])?;
    Some(ok && text.contains("OK!"))
}

fn scratch(what: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("bc-groth16-{}-{what}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn load<C: Curve>(dir: &Path) -> (groth16::ProvingKey<C>, groth16::Witness<C::Fr>) {
    (
        groth16::ProvingKey::read(dir.join("circuit.zkey")).unwrap(),
        groth16::Witness::read(dir.join("witness.wtns")).unwrap(),
    )
}

fn rng(seed: u64) -> rand::rngs::StdRng {
    rand::rngs::StdRng::seed_from_u64(seed)
}

fn snarkjs_verifies_ours_on<C: Curve>(circuits: &[&str], primitive: Primitive) {
    for &name in circuits {
        let Some(dir) = fixture(name) else { return };
        let (pk, witness) = load::<C>(&dir);
        let expected_public = groth16::public_from_json::<C::Fr>(
            &std::fs::read_to_string(dir.join("snarkjs.public.json")).unwrap(),
        )
        .unwrap();
        let mut proofs = Vec::new();
        for b in common::backends(primitive) {
            let proved = common::engine(b)
                .groth16()
                .prove(&pk, &witness, &mut rng(7))
                .unwrap();
            assert_eq!(
                proved.public, expected_public,
                "{name} on {b}: public signals"
            );
            for s in &proved.stages {
                if let Some(ran) = s.backend {
                    assert_eq!(
                        ran, b,
                        "{name}: {} ran on {ran}, not the forced {b}",
                        s.name
                    );
                }
            }
            assert!(groth16::verify(&pk.vk, &proved.public, &proved.proof).unwrap());
            let out =
                std::env::temp_dir().join(format!("bc-groth16-{}-{name}-{b}", std::process::id()));
            std::fs::create_dir_all(&out).unwrap();
            let (proof_path, public_path) = (out.join("proof.json"), out.join("public.json"));
            std::fs::write(&proof_path, proved.proof.to_json()).unwrap();
            std::fs::write(&public_path, groth16::public_json(&proved.public)).unwrap();
            assert_eq!(
                Proof::<C>::from_json(&proved.proof.to_json()).unwrap(),
                proved.proof
            );
            if let Some(ok) = snarkjs_verify(
                &dir.join("verification_key.json"),
                &public_path,
                &proof_path,
            ) {
                assert!(
                    ok,
                    "{name} on {b}: snarkjs rejects our proof ({})",
                    out.display()
                );
                // And rejects it for other public signals: the check above is not vacuous.
                let mut other = proved.public.clone();
                other[0] += C::Fr::one();
                std::fs::write(&public_path, groth16::public_json(&other)).unwrap();
                assert_eq!(
                    snarkjs_verify(
                        &dir.join("verification_key.json"),
                        &public_path,
                        &proof_path
                    ),
                    Some(false)
                );
            }
            std::fs::remove_dir_all(&out).ok();
            proofs.push((b, proved.proof));
        }
        // The same randomness gives the same proof on every backend: bit-identical paths.
        for (b, p) in &proofs[1..] {
            assert_eq!(*p, proofs[0].1, "{name}: {b} and {} differ", proofs[0].0);
        }
    }
}

/// A key whose bases are precomputed on the GPU (shifted copies) gives the very same proof for
/// the same randomness, on every backend (the CPU reads the bases as they are).
fn precomputed_on<C: Curve>(circuits: &[&str], primitive: Primitive) {
    for &name in circuits {
        let Some(dir) = fixture(name) else { return };
        let (pk, witness) = load::<C>(&dir);
        let pre = groth16::ProvingKey::<C>::read(dir.join("circuit.zkey"))
            .unwrap()
            .with_precomputation(8);
        for b in common::backends(primitive) {
            let g = common::engine(b);
            let want = g.groth16().prove(&pk, &witness, &mut rng(9)).unwrap();
            for _ in 0..2 {
                let got = g.groth16().prove(&pre, &witness, &mut rng(9)).unwrap();
                assert_eq!(got.proof, want.proof, "{name} on {b}");
            }
        }
    }
}

fn our_verifier_on<C: Curve>(circuits: &[&str], _: Primitive) {
    for &name in circuits {
        let Some(dir) = fixture(name) else { return };
        let pk = groth16::ProvingKey::<C>::read(dir.join("circuit.zkey")).unwrap();
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
        let proof = Proof::<C>::from_json(&read("snarkjs.proof.json")).unwrap();
        let public = groth16::public_from_json::<C::Fr>(&read("snarkjs.public.json")).unwrap();
        assert!(groth16::verify(&pk.vk, &public, &proof).unwrap(), "{name}");
        // The same through the JSON entry point, which reads the curve from the key.
        assert!(groth16::verify_json(
            &read("verification_key.json"),
            &read("snarkjs.public.json"),
            &read("snarkjs.proof.json")
        )
        .unwrap());
        let mut wrong = public.clone();
        *wrong.last_mut().unwrap() += C::Fr::one();
        assert!(!groth16::verify(&pk.vk, &wrong, &proof).unwrap());
        let swapped = Proof {
            a: proof.c,
            c: proof.a,
            ..proof
        };
        assert!(!groth16::verify(&pk.vk, &public, &swapped).unwrap());
        assert!(
            groth16::verify(&pk.vk, &public[1..], &proof).is_err(),
            "public count"
        );
    }
}

fn verification_key_on<C: Curve>(circuits: &[&str], _: Primitive) {
    for &name in circuits {
        let Some(dir) = fixture(name) else { return };
        let pk = groth16::ProvingKey::<C>::read(dir.join("circuit.zkey")).unwrap();
        let text = std::fs::read_to_string(dir.join("verification_key.json")).unwrap();
        assert_eq!(
            groth16::VerifyingKey::<C>::from_json(&text).unwrap(),
            pk.vk,
            "{name}"
        );
        // Every file names its curve.
        let want = CurveId::parse(C::SNARKJS).unwrap();
        for f in ["circuit.zkey", "witness.wtns"] {
            assert_eq!(CurveId::of_file(dir.join(f)).unwrap(), want, "{name}/{f}");
        }
        // A point moved off its curve, a count that disagrees, another curve: errors.
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["vk_alpha_1"][1] = "5".into();
        assert!(groth16::VerifyingKey::<C>::from_json(&v.to_string()).is_err());
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["nPublic"] = (pk.vk.ic.len() as u64).into();
        assert!(groth16::VerifyingKey::<C>::from_json(&v.to_string()).is_err());
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["curve"] = if C::SNARKJS == "bn128" {
            "bls12381"
        } else {
            "bn128"
        }
        .into();
        assert!(groth16::VerifyingKey::<C>::from_json(&v.to_string()).is_err());
    }
}

/// A key, witness or proof of one curve given where the other's is expected: a clear error,
/// never a proof or a verdict.
#[test]
fn files_of_the_other_curve_are_errors() {
    let (Some(bn), Some(bls)) = (fixture("mix"), fixture("mix-bls12381")) else {
        return;
    };
    assert!(groth16::ProvingKey::<Bls12_381>::read(bn.join("circuit.zkey")).is_err());
    assert!(groth16::ProvingKey::<Bn254>::read(bls.join("circuit.zkey")).is_err());
    let e = groth16::Witness::<Fr>::read(bls.join("witness.wtns"))
        .err()
        .expect("a BLS12-381 witness is not a BN254 one");
    assert!(e.to_string().contains("circom --prime"), "{e}");
    let key = groth16::AnyProvingKey::read(bn.join("circuit.zkey")).unwrap();
    assert_eq!(key.curve(), CurveId::Bn254);
    let other = std::fs::read(bls.join("witness.wtns")).unwrap();
    assert!(key.check_witness(&other).is_err());
    let read = |d: &Path, f: &str| std::fs::read_to_string(d.join(f)).unwrap();
    assert!(groth16::Proof::<Bn254>::from_json(&read(&bls, "snarkjs.proof.json")).is_err());
    // A BLS12-381 proof against a BN254 key through the JSON entry point.
    assert!(groth16::verify_json(
        &read(&bn, "verification_key.json"),
        &read(&bls, "snarkjs.public.json"),
        &read(&bls, "snarkjs.proof.json")
    )
    .is_err());
    // And a proof by the prover of either curve verifies through the any-curve key.
    let key = groth16::AnyProvingKey::read(bls.join("circuit.zkey")).unwrap();
    let w = std::fs::read(bls.join("witness.wtns")).unwrap();
    let proved = key
        .prove(
            &common::engine(batchcrypt::Backend::Arkworks),
            &w,
            &mut rng(3),
        )
        .unwrap();
    assert!(key.verify(&proved.public, &proved.proof).unwrap());
    assert!(proved.proof.contains("bls12381"));
}

/// The engine under test for error cases: the default choice (the GPU where there is one),
/// one for all tests so its cost model is measured once.
fn prove(pk: &ProvingKey, w: &Witness) -> batchcrypt::Result<groth16::Proved> {
    static AUTO: std::sync::OnceLock<batchcrypt::Engine> = std::sync::OnceLock::new();
    AUTO.get_or_init(|| batchcrypt::Engine::with_backend(batchcrypt::BackendChoice::Auto))
        .groth16()
        .prove(pk, w, &mut rng(1))
}

#[test]
fn a_witness_that_does_not_satisfy_the_circuit_is_an_error() {
    let Some(dir) = fixture("mix") else { return };
    let (pk, witness) = load::<Bn254>(&dir);
    // A public signal and private ones changed in turn (a signal that no constraint mentions
    // may take any value: those are left out).
    for i in [1, pk.n_public + 1, pk.n_public + 2, pk.n_public + 4] {
        let mut bad = Witness {
            values: witness.values.clone(),
        };
        bad.values[i] += Fr::one();
        match prove(&pk, &bad) {
            Err(Error::InvalidInput(m)) => assert!(m.contains("does not satisfy"), "{m}"),
            Err(e) => panic!("signal {i}: unexpected error {e}"),
            Ok(_) => panic!("signal {i}: a proof for a witness that does not satisfy the circuit"),
        }
    }
    // All zeros but the constant.
    let mut zeros = Witness {
        values: vec![Fr::zero(); witness.values.len()],
    };
    zeros.values[0] = Fr::one();
    assert!(prove(&pk, &zeros).is_err());
}

#[test]
fn a_witness_of_another_circuit_is_an_error() {
    let (Some(a), Some(b)) = (fixture("mix"), fixture("chain-10")) else {
        return;
    };
    let (pk, _) = load::<Bn254>(&a);
    let (_, other) = load::<Bn254>(&b);
    let e = prove(&pk, &other).err().expect("an error");
    assert!(e.to_string().contains("different circuits"), "{e}");
}

#[test]
fn truncated_or_damaged_files_are_errors() {
    let Some(dir) = fixture("mix") else { return };
    let zkey = std::fs::read(dir.join("circuit.zkey")).unwrap();
    let wtns = std::fs::read(dir.join("witness.wtns")).unwrap();
    let mut r = common::Rng(99);
    let mut cuts: Vec<usize> = vec![0, 3, 4, 11, 12, 24, zkey.len() / 2, zkey.len() - 1];
    cuts.extend((0..40).map(|_| r.below(zkey.len() as u64) as usize));
    for cut in cuts {
        assert!(
            ProvingKey::parse(&zkey[..cut]).is_err(),
            "zkey cut at {cut}"
        );
    }
    for cut in 0..wtns.len() {
        assert!(Witness::parse(&wtns[..cut]).is_err(), "wtns cut at {cut}");
    }
    // The other's magic, a trailing byte.
    assert!(ProvingKey::parse(&wtns).is_err());
    assert!(Witness::parse(&zkey).is_err());
    let mut longer = wtns.clone();
    longer.push(0);
    assert!(Witness::parse(&longer).is_err());
    // A witness value at r: not a field element.
    let mut big = wtns.clone();
    let at = big.len() - 32;
    big[at..].copy_from_slice(&hex_le(
        "30644e72e131a029b85045b68181585d2833e84879b9709143e1f593f0000001",
    ));
    assert!(matches!(Witness::parse(&big), Err(Error::Corrupt(_))));
    // Random byte flips: an error or a key whose proofs still verify, never a panic or a bad proof.
    let (_, witness) = load::<Bn254>(&dir);
    for _ in 0..200 {
        let mut z = zkey.clone();
        let i = r.below(z.len() as u64) as usize;
        z[i] ^= 1 << r.below(8);
        if let Ok(pk) = ProvingKey::parse(&z) {
            if let Ok(p) = prove(&pk, &witness) {
                assert!(groth16::verify(&pk.vk, &p.public, &p.proof).unwrap());
            }
        }
    }
}

/// Found by fuzzing: a key whose header claimed a domain of 2^26 rows (its H query holding far
/// fewer) had 2 GB of coefficient tables made for it before the H query's size was checked. The
/// H query's size is now checked first; the key is refused.
#[test]
fn a_zkey_claiming_a_larger_domain_than_it_holds_is_an_error() {
    let Some(dir) = fixture("mix") else { return };
    let mut zkey = std::fs::read(dir.join("circuit.zkey")).unwrap();
    // Sections after the 12-byte file head: id (4), length (8), data. In the Groth16 header
    // (section 2), the domain size follows the two fields (4 + 32 bytes each) and two counts.
    let mut at = 12;
    while u32::from_le_bytes(zkey[at..at + 4].try_into().unwrap()) != 2 {
        at += 12 + u64::from_le_bytes(zkey[at + 4..at + 12].try_into().unwrap()) as usize;
    }
    let field = at + 12 + 2 * 36 + 8;
    zkey[field..field + 4].copy_from_slice(&(1u32 << 26).to_le_bytes());
    let t = std::time::Instant::now();
    let e = ProvingKey::parse(&zkey)
        .err()
        .expect("a domain the file does not hold");
    assert!(e.to_string().contains("H query"), "{e}");
    eprintln!("refused in {:?}", t.elapsed());
}

fn hex_le(be: &str) -> Vec<u8> {
    let mut v = hex::decode(be).unwrap();
    v.reverse();
    v
}

/// The constraint system reader: the fixture's witness satisfies it, a changed one does not.
/// Found by fuzzing: a header claiming 2^32 - 16 wires parsed, and whatever was sized by the
/// wire count (writing the file back, a setup) tried to allocate tens of gigabytes. The wire
/// count must now match the wire-to-label map.
#[test]
fn an_r1cs_header_claiming_more_wires_than_the_file_holds_is_an_error() {
    let r = R1cs {
        n_wires: 3,
        n_public: 1,
        n_outputs: 1,
        n_private_inputs: 1,
        constraints: vec![],
    };
    let good = r.to_bytes();
    assert!(R1cs::parse(&good).is_ok());
    // Layout: magic, version, section count (12 bytes); the empty constraints section (12);
    // the header's section head (12), field size (4) and modulus (32), then the wire count.
    let mut bad = good.clone();
    assert_eq!(u32::from_le_bytes(bad[72..76].try_into().unwrap()), 3);
    bad[72..76].copy_from_slice(&(u32::MAX - 15).to_le_bytes());
    let e = R1cs::parse(&bad)
        .err()
        .expect("a wire count the file does not hold");
    assert!(e.to_string().contains("wire-to-label map"), "{e}");
}

#[test]
fn r1cs_reader_checks_witnesses() {
    for name in ["mix", "chain-10"] {
        let Some(dir) = fixture(name) else { return };
        let r1cs = R1cs::read(dir.join("circuit.r1cs")).unwrap();
        let (pk, witness) = load::<Bn254>(&dir);
        assert_eq!(
            (r1cs.n_wires, r1cs.n_public),
            (pk.n_vars, pk.n_public),
            "{name}"
        );
        assert_eq!(r1cs.unsatisfied(&witness.values), None, "{name}");
        let mut bad = witness.values.clone();
        bad[pk.n_public + 1] += Fr::one();
        assert!(r1cs.unsatisfied(&bad).is_some(), "{name}");
        let raw = std::fs::read(dir.join("circuit.r1cs")).unwrap();
        for cut in [0, 4, 12, 40, raw.len() / 2, raw.len() - 1] {
            assert!(
                R1cs::parse(&raw[..cut]).is_err(),
                "{name}: r1cs cut at {cut}"
            );
        }
    }
}

/// Keys from our one-party setup follow snarkjs's conventions: snarkjs proves with them and
/// verifies our proofs, and our prover and verifier agree with both.
fn setup_on<C: Curve>(circuits: &[&str], _: Primitive) {
    for &name in circuits {
        let Some(dir) = fixture(name) else { return };
        let r1cs = groth16::R1cs::<C::Fr>::read(dir.join("circuit.r1cs")).unwrap();
        let witness = groth16::Witness::<C::Fr>::read(dir.join("witness.wtns")).unwrap();
        let zkey = groth16::setup::<C, _>(&r1cs, &mut rng(3)).unwrap();
        let pk = groth16::ProvingKey::<C>::parse(&zkey).unwrap();
        let theirs = groth16::ProvingKey::<C>::read(dir.join("circuit.zkey")).unwrap();
        assert_eq!(
            (pk.n_vars, pk.n_public, pk.domain_size),
            (theirs.n_vars, theirs.n_public, theirs.domain_size),
            "{name}: the same shape as snarkjs's key"
        );
        let proved = batchcrypt::Engine::with_backend(batchcrypt::BackendChoice::Cpu)
            .groth16()
            .prove(&pk, &witness, &mut rng(4))
            .unwrap();
        let out = scratch(&format!("setup-{name}"));
        let (zk, vk) = (out.join("our.zkey"), out.join("vk.json"));
        std::fs::write(&zk, &zkey).unwrap();
        let Some((ok, text)) = snarkjs(&[
            "zkey".as_ref(),
            "export".as_ref(),
            "verificationkey".as_ref(),
            zk.as_ref(),
            vk.as_ref(),
        ]) else {
            return;
        };
        assert!(ok, "{name}: snarkjs cannot read our key: {text}");
        let (p, public) = (out.join("proof.json"), out.join("public.json"));
        std::fs::write(&p, proved.proof.to_json()).unwrap();
        std::fs::write(&public, groth16::public_json(&proved.public)).unwrap();
        assert_eq!(
            snarkjs_verify(&vk, &public, &p),
            Some(true),
            "{name}: our proof, our key"
        );
        let (ok, text) = snarkjs(&[
            "groth16".as_ref(),
            "prove".as_ref(),
            zk.as_ref(),
            dir.join("witness.wtns").as_ref(),
            p.as_ref(),
            public.as_ref(),
        ])
        .unwrap();
        assert!(ok, "{name}: snarkjs cannot prove with our key: {text}");
        assert_eq!(
            snarkjs_verify(&vk, &public, &p),
            Some(true),
            "{name}: snarkjs's proof, our key"
        );
        let theirs = Proof::<C>::from_json(&std::fs::read_to_string(&p).unwrap()).unwrap();
        assert!(groth16::verify(&pk.vk, &proved.public, &theirs).unwrap());
        std::fs::remove_dir_all(&out).ok();
    }
}

/// The prover service: jobs in flight at once on one shared key all give valid proofs, a bad job
/// fails alone, and each job's waterfall starts with its queue wait.
#[test]
fn the_service_proves_many_at_once_and_isolates_failures() {
    use std::sync::Arc;
    let Some(dir) = fixture("mix") else { return };
    let (pk, witness) = load::<Bn254>(&dir);
    let pk = Arc::new(pk);
    for b in common::backends(Primitive::Bn254) {
        let service = groth16::ProverService::start(
            Arc::new(common::engine(b)),
            pk.clone(),
            groth16::ServiceConfig {
                workers: 3,
                queue: 2,
            },
        );
        let mut bad = witness.values.clone();
        bad[1] += Fr::one();
        let tickets: Vec<_> = (0..9)
            .map(|i| {
                let values = if i == 4 {
                    bad.clone()
                } else {
                    witness.values.clone()
                };
                service.submit(Witness { values })
            })
            .collect();
        for (i, t) in tickets.into_iter().enumerate() {
            match t.wait() {
                Ok(p) => {
                    assert_ne!(i, 4, "{b}: a proof for a bad witness");
                    assert!(groth16::verify(&pk.vk, &p.public, &p.proof).unwrap());
                    // The queue wait first, every step after it; the steps in order of their
                    // start (the prover's two chains overlap).
                    assert_eq!(p.stages[0].name, "queue wait");
                    let queued = p.stages[0].start + p.stages[0].seconds;
                    assert!(p.stages[1..].iter().all(|s| s.start >= queued - 1e-6));
                    assert!(p.stages.windows(2).all(|w| w[1].start >= w[0].start));
                    assert_eq!(p.stages.len(), 8, "{:?}", p.stages);
                }
                Err(e) => assert_eq!(i, 4, "{b}: job {i} failed: {e}"),
            }
        }
    }
}

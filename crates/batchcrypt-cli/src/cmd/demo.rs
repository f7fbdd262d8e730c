use anyhow::{bail, Result};
use batchcrypt::secp256k1::{EcdsaOptions, Verdicts};
use batchcrypt::sha256::{Digest, Mode};
use batchcrypt::{Backend, BackendChoice, Engine, Primitive};
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// log2 of the number of 64-byte messages in the main batch (the others scale with it).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(4..=26))]
    log_size: u32,
}

/// The genesis block header and its hash, a real-world check every backend must reproduce.
const GENESIS_HEADER: &str = "0100000000000000000000000000000000000000000000000000000000000000000000003ba3edfd7a7b12b27ac72c3e67768f617fc81bc3888a51323a9fb8aa4b1e5e4a29ab5f49ffff001d1dac2b7c";
const GENESIS_HASH: &str = "000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f";

fn pseudo_random(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

struct Workload {
    name: &'static str,
    data: Vec<u8>,
    offsets: Option<Vec<u64>>,
    len: usize,
    mode: Mode,
}

impl Workload {
    fn items(&self) -> usize {
        self.offsets
            .as_ref()
            .map_or_else(|| self.data.len() / self.len, |o| o.len() - 1)
    }
    fn run(&self, engine: &Engine) -> batchcrypt::Result<batchcrypt::Output<Vec<Digest>>> {
        match &self.offsets {
            Some(o) => engine.sha256().hash_var(&self.data, o, self.mode),
            None => engine.sha256().hash_fixed(&self.data, self.len, self.mode),
        }
    }
}

pub fn run(args: &Args) -> Result<()> {
    print!("{}", batchcrypt::describe_hardware());
    let backends: Vec<Backend> = Backend::ALL
        .into_iter()
        .filter(|b| b.implements(Primitive::Sha256) && b.is_available())
        .collect();
    println!(
        "backends: {}\n",
        backends
            .iter()
            .map(|b| b.name())
            .collect::<Vec<_>>()
            .join(", ")
    );

    // Known answers first.
    let header = hex::decode(GENESIS_HEADER)?;
    for &b in &backends {
        let e = Engine::with_backend(BackendChoice::Exact(b));
        let got = e.sha256().sha256d_80(&header)?.value[0];
        if batchcrypt::bitcoin::display_hash(&got) != GENESIS_HASH {
            bail!("{b}: genesis block hash is wrong");
        }
        let abc = e.sha256().hash_var(b"abc", &[0, 3], Mode::Single)?.value[0];
        if hex::encode(abc) != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
            bail!("{b}: SHA-256(\"abc\") is wrong");
        }
    }
    println!("known answers (genesis block hash, SHA-256(\"abc\")): correct on every backend\n");

    let n = 1usize << args.log_size;
    let mut var_offsets = vec![0u64];
    let mut x = 12345u64;
    for _ in 0..n / 16 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        var_offsets.push(var_offsets.last().unwrap() + (x >> 33) % 2000);
    }
    let var_bytes = *var_offsets.last().unwrap() as usize;
    let workloads = [
        Workload {
            name: "sha256d 64 B (merkle nodes)",
            data: pseudo_random(64 * n, 1),
            offsets: None,
            len: 64,
            mode: Mode::Double,
        },
        Workload {
            name: "sha256d 80 B (block headers)",
            data: pseudo_random(80 * n / 4, 2),
            offsets: None,
            len: 80,
            mode: Mode::Double,
        },
        Workload {
            name: "sha256 32 B (keys, hashes)",
            data: pseudo_random(32 * n, 3),
            offsets: None,
            len: 32,
            mode: Mode::Single,
        },
        Workload {
            name: "sha256 0..2000 B (mixed)",
            data: pseudo_random(var_bytes, 4),
            offsets: Some(var_offsets),
            len: 0,
            mode: Mode::Single,
        },
    ];

    println!(
        "{:<30} {:<9} {:>9} {:>10} {:>12} {:>10}  agrees",
        "operation", "backend", "items", "ms", "M items/s", "GB/s"
    );
    let mut all_agree = true;
    for w in &workloads {
        let mut reference: Option<Vec<Digest>> = None;
        for &b in &backends {
            let e = Engine::with_backend(BackendChoice::Exact(b));
            w.run(&e)?; // warm-up: module load, calibration, page faults
            let t = Instant::now();
            let out = w.run(&e)?;
            let s = t.elapsed().as_secs_f64();
            let agrees = match &reference {
                None => {
                    reference = Some(out.value);
                    "reference"
                }
                Some(r) if *r == out.value => "yes",
                Some(_) => {
                    all_agree = false;
                    "NO"
                }
            };
            println!(
                "{:<30} {:<9} {:>9} {:>10.2} {:>12.2} {:>10.2}  {agrees}",
                w.name,
                b.name(),
                w.items(),
                s * 1e3,
                w.items() as f64 / s / 1e6,
                w.data.len() as f64 / s / 1e9
            );
        }
        let auto = Engine::with_backend(BackendChoice::Auto);
        let out = w.run(&auto)?;
        println!(
            "{:<30} auto picked {} ({} threads)\n",
            "", out.backend, out.threads
        );
    }

    let txids: Vec<Digest> = pseudo_random(32 * n, 5)
        .chunks_exact(32)
        .map(|c| c.try_into().unwrap())
        .collect();
    let mut roots = Vec::new();
    for &b in &backends {
        let e = Engine::with_backend(BackendChoice::Exact(b));
        let t = Instant::now();
        let root = e.sha256().merkle_root(&txids)?.value;
        println!(
            "merkle root of {n} txids on {:<9} {} ({:.2} ms)",
            b.name(),
            hex::encode(root),
            t.elapsed().as_secs_f64() * 1e3
        );
        roots.push(root);
    }
    if roots.windows(2).any(|w| w[0] != w[1]) {
        all_agree = false;
    }
    all_agree &= signatures(1 << args.log_size.saturating_sub(6).max(10))?;
    all_agree &= sm2_psi(1 << args.log_size.saturating_sub(7).max(10))?;
    all_agree &= sm2_signatures(1 << args.log_size.saturating_sub(10).max(9))?;
    all_agree &= aes((64usize << args.log_size).max(1 << 20))?;
    all_agree &= bn254_msm(1 << args.log_size.saturating_sub(6).max(10))?;
    all_agree &= bn254_ntt(1 << args.log_size.saturating_sub(2).max(10))?;
    if !all_agree {
        bail!("backends disagree: this is a bug, please report it with the output of `batchcrypt info`");
    }
    println!("\nall backends agree");
    Ok(())
}

/// secp256k1: `n` ECDSA and `n` BIP340 signatures from deterministic keys, every 16th corrupted;
/// each backend must accept exactly the intact ones. Returns whether all backends agree.
fn signatures(n: usize) -> Result<bool> {
    use secp256k1::{ecdsa, schnorr, Keypair, Message};
    let corrupt = |i: usize| i % 16 == 5;
    let (mut hashes, mut der, mut keys, mut bip_sigs, mut xonly) =
        (vec![], vec![], vec![], vec![], vec![]);
    for i in 0..n {
        let hash = batchcrypt::sha256::digest(&(i as u64).to_le_bytes());
        let mut secret = batchcrypt::sha256::digest(&hash);
        secret[0] = 1; // far below n, never zero
        let kp = Keypair::from_secret_bytes(secret)?;
        der.push(
            ecdsa::sign(Message::from_digest(hash), &kp.secret_key())
                .serialize_der()
                .to_vec(),
        );
        keys.push(kp.public_key().serialize());
        bip_sigs.push(schnorr::sign_no_aux_rand(&hash, &kp).to_byte_array());
        xonly.push(kp.x_only_public_key().0.to_byte_array());
        let mut signed = hash;
        if corrupt(i) {
            signed[7] ^= 0x10;
        }
        hashes.push(signed);
    }
    let sigs: Vec<&[u8]> = der.iter().map(|s| s.as_slice()).collect();
    let key_refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
    let msgs: Vec<&[u8]> = hashes.iter().map(|h| h.as_slice()).collect();
    let expected: Vec<bool> = (0..n).map(|i| !corrupt(i)).collect();
    let mut agree = true;
    println!();
    for (name, scheme) in [
        ("secp256k1 ECDSA verify", 0),
        ("secp256k1 BIP340 verify", 1),
    ] {
        for b in Backend::ALL
            .into_iter()
            .filter(|b| b.implements(Primitive::Secp256k1) && b.is_available())
        {
            let e = Engine::with_backend(BackendChoice::Exact(b));
            let run = || -> batchcrypt::Result<Verdicts> {
                Ok(match scheme {
                    0 => {
                        e.secp256k1()
                            .verify_ecdsa(&hashes, &sigs, &key_refs, &EcdsaOptions::default())?
                            .value
                    }
                    _ => {
                        e.secp256k1()
                            .verify_schnorr(&msgs, &bip_sigs, &xonly)?
                            .value
                    }
                })
            };
            run()?; // warm-up: module load, tables
            let t = Instant::now();
            let v = run()?;
            let s = t.elapsed().as_secs_f64();
            let ok = v.results.iter().map(|r| r.is_ok()).collect::<Vec<_>>() == expected;
            agree &= ok;
            println!(
                "{:<30} {:<12} {:>9} {:>10.2} {:>12.4}  {}",
                name,
                b.name(),
                n,
                s * 1e3,
                n as f64 / s / 1e6,
                if ok { "yes" } else { "NO" }
            );
        }
    }
    Ok(agree)
}

/// The SM2/SM3 operations of ECDH-PSI on `n` identifiers, on every backend: SM3 of the
/// identifiers (checked against GB/T 32905's "abc" example first), hash-to-curve + blinding, and
/// the second blinding. All backends must give the same bytes, and the two blinding orders the
/// same points (a·b·H(x) = b·a·H(x)).
fn sm2_psi(n: usize) -> Result<bool> {
    const SM3_ABC: &str = "66c7f0f462eeedd9d1f2d46bdc10e4e24167c4875cf2f7a2297da02b8f4ba8e0";
    let ids: Vec<Vec<u8>> = (0..n)
        .map(|i| format!("user{i:08}@example.org").into_bytes())
        .collect();
    let msgs: Vec<&[u8]> = ids.iter().map(|m| m.as_slice()).collect();
    let id_len = ids[0].len();
    let flat: Vec<u8> = ids.concat();
    let (a, b) = (batchcrypt::psi::random_key(), batchcrypt::psi::random_key());
    let dst = batchcrypt::sm2::DEFAULT_DST;
    let mut agree = true;
    let mut reference: Option<(Vec<[u8; 32]>, Vec<[u8; 33]>, Vec<Option<[u8; 33]>>)> = None;
    println!();
    for be in Backend::ALL
        .into_iter()
        .filter(|x| x.implements(Primitive::Sm2) && x.is_available())
    {
        let e = Engine::with_backend(BackendChoice::Exact(be));
        let abc = e.sm3().hash_fixed(b"abc", 3)?.value[0];
        agree &= hex::encode(abc) == SM3_ABC;
        let timed =
            |name: &str, f: &mut dyn FnMut() -> batchcrypt::Result<()>| -> batchcrypt::Result<()> {
                f()?; // warm-up: module load, tables
                let t = Instant::now();
                f()?;
                let s = t.elapsed().as_secs_f64();
                println!(
                    "{:<30} {:<12} {:>9} {:>10.2} {:>12.4}",
                    name,
                    be.name(),
                    n,
                    s * 1e3,
                    n as f64 / s / 1e6
                );
                Ok(())
            };
        let (mut digests, mut blinded, mut twice) = (Vec::new(), Vec::new(), Vec::new());
        timed("SM3 of identifiers", &mut || {
            digests = e.sm3().hash_fixed(&flat, id_len)?.value;
            Ok(())
        })?;
        timed("SM2 hash-to-curve + mul", &mut || {
            blinded = e.sm2().hash_to_curve_mul(&a, &msgs, dst)?.value;
            Ok(())
        })?;
        timed("SM2 mul (compressed points)", &mut || {
            twice = e.sm2().mul_compressed(&b, &blinded)?.value;
            Ok(())
        })?;
        let other_order = e
            .sm2()
            .mul_compressed(&a, &e.sm2().hash_to_curve_mul(&b, &msgs, dst)?.value)?
            .value;
        let commutes = other_order == twice && twice.iter().all(Option::is_some);
        let same = reference
            .as_ref()
            .is_none_or(|r| r.0 == digests && r.1 == blinded && r.2 == twice);
        println!(
            "{:<30} {:<12} {}",
            "  agrees (and a·b = b·a)",
            be.name(),
            if same && commutes { "yes" } else { "NO" }
        );
        agree &= same && commutes;
        reference.get_or_insert((digests, blinded, twice));
    }
    Ok(agree)
}

/// SM2: `n` signatures from deterministic keys, every 16th digest corrupted; each backend must
/// accept exactly the intact ones. Returns whether all backends agree.
fn sm2_signatures(n: usize) -> Result<bool> {
    use batchcrypt::sig::SigFormat;
    let sample = batchcrypt::sm2::sign::Sample::new(n);
    let (mut digests, sigs, keys) = sample.batch(sample.sigs.len());
    let corrupt = |i: usize| i % 16 == 5;
    digests
        .iter_mut()
        .enumerate()
        .filter(|(i, _)| corrupt(*i))
        .for_each(|(_, d)| d[3] ^= 0x40);
    let expected: Vec<bool> = (0..digests.len()).map(|i| !corrupt(i)).collect();
    let mut agree = true;
    println!();
    for b in Backend::ALL
        .into_iter()
        .filter(|b| b.implements(Primitive::Sm2) && b.is_available())
    {
        let e = Engine::with_backend(BackendChoice::Exact(b));
        let run = || {
            e.sm2()
                .verify_digests(&digests, &sigs, &keys, SigFormat::Compact)
        };
        run()?; // warm-up: module load, tables
        let t = Instant::now();
        let v = run()?.value;
        let s = t.elapsed().as_secs_f64();
        let ok = v.results.iter().map(|r| r.is_ok()).collect::<Vec<_>>() == expected;
        agree &= ok;
        println!(
            "{:<30} {:<12} {:>9} {:>10.2} {:>12.4}  {}",
            "SM2 verify",
            b.name(),
            digests.len(),
            s * 1e3,
            digests.len() as f64 / s / 1e6,
            if ok { "yes" } else { "NO" }
        );
    }
    Ok(agree)
}

/// AES: the SP 800-38A CTR example, then CTR and GCM over `bytes` bytes on every backend; the
/// outputs and tags must match byte for byte and GCM must decrypt. Returns whether all agree.
fn aes(bytes: usize) -> Result<bool> {
    use batchcrypt::aes::Key;
    let key = Key::new(&hex::decode("2b7e151628aed2a6abf7158809cf4f3c")?)?;
    let iv: [u8; 16] = hex::decode("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff")?
        .try_into()
        .unwrap();
    let block = hex::decode("6bc1bee22e409f96e93d7e117393172a")?;
    let data = pseudo_random(bytes, 6);
    let mut out = vec![0u8; bytes];
    let mut reference: Option<(Vec<u8>, Vec<u8>, [u8; 16])> = None;
    let mut xts_reference: Option<Vec<u8>> = None;
    let xts_key = batchcrypt::aes::xts::XtsKey::new(&[key.bytes(), &iv[..]].concat())?;
    let mut agree = true;
    println!();
    for b in Backend::ALL
        .into_iter()
        .filter(|b| b.implements(Primitive::Aes) && b.is_available())
    {
        let e = Engine::with_backend(BackendChoice::Exact(b));
        let mut one = [0u8; 16];
        e.aes().ctr(&key, &iv, &block, &mut one)?;
        if hex::encode(one) != "874d6191b620e3261bef6864990db6ce" {
            bail!("{b}: the SP 800-38A AES-128 CTR example is wrong");
        }
        let mut row = |name: &str,
                       f: &mut dyn FnMut(&mut [u8]) -> batchcrypt::Result<[u8; 16]>|
         -> Result<(Vec<u8>, [u8; 16])> {
            f(&mut out)?; // warm-up
            let t = Instant::now();
            let tag = f(&mut out)?;
            let s = t.elapsed().as_secs_f64();
            println!(
                "{:<30} {:<12} {:>9} {:>10.2} {:>12.2} {:>10.2}",
                name,
                b.name(),
                bytes / 16,
                s * 1e3,
                bytes as f64 / 16.0 / s / 1e6,
                bytes as f64 / s / 1e9
            );
            Ok((out.clone(), tag))
        };
        let (ctr, _) = row("AES-128-CTR", &mut |o| {
            e.aes().ctr(&key, &iv, &data, o).map(|_| [0; 16])
        })?;
        let (gcm, tag) = row("AES-128-GCM encrypt", &mut |o| {
            e.aes()
                .gcm_encrypt(&key, &iv[..12], b"demo", &data, o)
                .map(|t| t.value)
        })?;
        let mut back = vec![0u8; bytes];
        e.aes()
            .gcm_decrypt(&key, &iv[..12], b"demo", &gcm, &mut back, &tag)?;
        agree &= back == data;
        match &reference {
            None => reference = Some((ctr, gcm, tag)),
            Some(r) => agree &= r.0 == ctr && r.1 == gcm && r.2 == tag,
        }
        // XTS over 4 KiB sectors.
        let (xts, _) = row("XTS-AES-128, 4 KiB sectors", &mut |o| {
            e.aes()
                .xts_encrypt(&xts_key, &[0; 16], 4096, &data, o)
                .map(|_| [0; 16])
        })?;
        let mut back = vec![0u8; bytes];
        e.aes()
            .xts_decrypt(&xts_key, &[0; 16], 4096, &xts, &mut back)?;
        agree &= back == data;
        match &xts_reference {
            None => xts_reference = Some(xts),
            Some(r) => agree &= *r == xts,
        }
    }
    println!(
        "AES (SP 800-38A example; CTR, GCM and XTS over {} MiB): {}",
        bytes >> 20,
        if agree {
            "every backend agrees"
        } else {
            "backends DISAGREE"
        }
    );
    Ok(agree)
}

/// BN254: one G1 multi-scalar multiplication over `n` sample bases and scalars on every backend;
/// the sums must be the same group element. Returns whether all backends agree.
fn bn254_msm(n: usize) -> Result<bool> {
    let (points, scalars) = batchcrypt::msm::sample::<batchcrypt::bn254::G1>(n, 3);
    let bases = batchcrypt::bn254::G1Bases::new(points);
    let mut sums = Vec::new();
    println!();
    for b in Backend::ALL
        .into_iter()
        .filter(|b| b.implements(Primitive::Bn254) && b.is_available())
    {
        let e = Engine::with_backend(BackendChoice::Exact(b));
        e.msm(&bases, &scalars)?; // warm-up: bases into GPU memory, module load
        let t = Instant::now();
        let sum = e.msm(&bases, &scalars)?.value;
        let s = t.elapsed().as_secs_f64();
        println!(
            "{:<30} {:<12} {:>9} {:>10.2} {:>12.4}",
            "BN254 G1 MSM",
            b.name(),
            n,
            s * 1e3,
            n as f64 / s / 1e6
        );
        sums.push(sum);
    }
    let agree = sums.windows(2).all(|w| w[0] == w[1]);
    println!(
        "BN254 G1 MSM of {n} points: {}",
        if agree {
            "every backend agrees"
        } else {
            "backends DISAGREE"
        }
    );
    Ok(agree)
}

/// BN254: a forward NTT of `n` elements then the inverse on the coset a Groth16 prover uses, on
/// every backend; the results must be equal, and the inverse must give the input back on a plain
/// round trip. Returns whether all backends agree.
fn bn254_ntt(n: usize) -> Result<bool> {
    use batchcrypt::{bn254::Fr, ntt::Ntt};
    let input: Vec<Fr> = (0..n as u64).map(|i| Fr::from(i * i + 7)).collect();
    let mut outs = Vec::new();
    for b in Backend::ALL
        .into_iter()
        .filter(|b| b.implements(Primitive::Bn254) && b.is_available())
    {
        let e = Engine::with_backend(BackendChoice::Exact(b));
        let (fwd, inv) = (Ntt::forward(n), Ntt::inverse(n));
        let mut v = input.clone();
        e.ntt(&mut v, &fwd)?; // warm-up: twiddles, module load
        let mut v = input.clone();
        let t = Instant::now();
        e.ntt(&mut v, &fwd)?;
        let s = t.elapsed().as_secs_f64();
        println!(
            "{:<30} {:<12} {:>9} {:>10.2} {:>12.4}",
            "BN254 NTT",
            b.name(),
            n,
            s * 1e3,
            n as f64 / s / 1e6
        );
        let mut back = v.clone();
        e.ntt(&mut back, &inv)?;
        outs.push((v, back == input));
    }
    let agree = outs.windows(2).all(|w| w[0].0 == w[1].0) && outs.iter().all(|o| o.1);
    println!(
        "BN254 NTT of {n} elements: {}",
        if agree {
            "every backend agrees, and the inverse gives the input back"
        } else {
            "backends DISAGREE"
        }
    );
    Ok(agree)
}

//! Batches split over every GPU of the machine give exactly what one GPU and the CPU give, and the
//! split really happens (each result names the GPUs that ran it). On a machine with one GPU the
//! split tests check one GPU against the CPU; without a GPU they are skipped with a note.

use batchcrypt::backend::gpu;
use batchcrypt::secp256k1::EcdsaOptions;
use batchcrypt::sha256::Mode;
use batchcrypt::{Backend, BackendChoice, Engine};

/// Every GPU of the process, or `None` (with a note) where there is none; with
/// `BATCHCRYPT_REQUIRE_GPU=1` (the GPU test script) a missing GPU fails instead.
fn gpus() -> Option<Vec<usize>> {
    match gpu::availability() {
        Ok(()) => Some((0..gpu::count()).collect()),
        Err(why) if std::env::var("BATCHCRYPT_REQUIRE_GPU").as_deref() == Ok("1") => {
            panic!("BATCHCRYPT_REQUIRE_GPU=1 but there is no GPU: {why}")
        }
        Err(why) => {
            eprintln!("skipped: no GPU ({why})");
            None
        }
    }
}

/// One engine on GPU 0 alone, one on every GPU, each forced onto the GPU.
fn engines(all: &[usize]) -> (Engine, Engine) {
    (
        Engine::with_gpus(BackendChoice::Gpu, &[0]),
        Engine::with_gpus(BackendChoice::Gpu, all),
    )
}

/// The GPUs a result names: GPU 0 alone for the one-GPU engine, all of them (from two) for the
/// other.
fn check_split<T>(one: &batchcrypt::Output<T>, many: &batchcrypt::Output<T>, all: &[usize]) {
    assert_eq!(one.backend, Backend::Cuda);
    assert_eq!(one.gpus, vec![0]);
    assert_eq!(many.backend, Backend::Cuda);
    assert_eq!(many.gpus, all, "the batch ran on every GPU");
}

fn bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s as u8
        })
        .collect()
}

#[test]
fn every_gpu_is_listed_once() {
    let Some(all) = gpus() else { return };
    let infos = gpu::infos().unwrap();
    assert_eq!(infos.len(), all.len());
    let mut ordinals: Vec<usize> = infos.iter().map(|i| i.ordinal).collect();
    ordinals.dedup();
    assert_eq!(ordinals.len(), infos.len());
    let text = batchcrypt::describe_hardware();
    for i in &all {
        assert!(text.contains(&format!("GPU {i}:")), "{text}");
    }
}

#[test]
fn sha256_batches_split_over_gpus_match_one_gpu_and_the_cpu() {
    let Some(all) = gpus() else { return };
    let (one, many) = engines(&all);
    let cpu = Engine::with_backend(BackendChoice::Cpu);
    // Fixed length: merkle nodes; an odd count so the slices are uneven.
    let data = bytes(64 * ((1 << 18) + 3), 1);
    let want = cpu.sha256().sha256d_64(&data).unwrap().value;
    let a = one.sha256().sha256d_64(&data).unwrap();
    let b = many.sha256().sha256d_64(&data).unwrap();
    check_split(&a, &b, &all);
    assert_eq!(a.value, want);
    assert_eq!(b.value, want);
    // Any lengths: each slice takes its messages' offsets.
    let n = 100_001;
    let mut offsets = vec![0u64];
    for i in 0..n {
        offsets.push(offsets[i] + (i as u64 * 7919) % 300);
    }
    let data = bytes(*offsets.last().unwrap() as usize, 2);
    let want = cpu
        .sha256()
        .hash_var(&data, &offsets, Mode::Single)
        .unwrap()
        .value;
    let a = one
        .sha256()
        .hash_var(&data, &offsets, Mode::Single)
        .unwrap();
    let b = many
        .sha256()
        .hash_var(&data, &offsets, Mode::Single)
        .unwrap();
    check_split(&a, &b, &all);
    assert_eq!(a.value, want);
    assert_eq!(b.value, want);
}

#[test]
fn aes_ctr_and_xts_split_over_gpus_match_one_gpu_and_the_cpu() {
    use batchcrypt::aes::{xts::XtsKey, Key};
    let Some(all) = gpus() else { return };
    let (one, many) = engines(&all);
    let cpu = Engine::with_backend(BackendChoice::Cpu);
    let key = Key::new(&bytes(32, 3)).unwrap();
    // Large enough to split (the dispatcher splits from 4096 of the CPU's 32 KiB segments); a
    // counter that carries into its upper 64 bits inside the buffer, and a partial last block.
    let mut iv = [0xff; 16];
    iv[0] = 7;
    let data = bytes((160 << 20) + 5, 4);
    let ctr = |e: &Engine| {
        let mut out = vec![0u8; data.len()];
        let r = e.aes().ctr(&key, &iv, &data, &mut out).unwrap();
        (r.map(|_| ()), out)
    };
    let (_, want) = ctr(&cpu);
    let ((a, x), (b, y)) = (ctr(&one), ctr(&many));
    check_split(&a, &b, &all);
    assert!(x == want && y == want, "CTR");
    // XTS: 4 KiB units from sector 2^64 - 3 (the tweak carries), a last unit of 528 bytes.
    let xkey = XtsKey::new(&bytes(64, 5)).unwrap();
    let tweak = (u128::from(u64::MAX) - 2).to_le_bytes();
    let data = bytes((40_000 * 4096) + 528, 6);
    for decrypt in [false, true] {
        let xts = |e: &Engine| {
            let mut out = vec![0u8; data.len()];
            let r = match decrypt {
                false => e.aes().xts_encrypt(&xkey, &tweak, 4096, &data, &mut out),
                true => e.aes().xts_decrypt(&xkey, &tweak, 4096, &data, &mut out),
            }
            .unwrap();
            (r.map(|_| ()), out)
        };
        let (_, want) = xts(&cpu);
        let ((a, x), (b, y)) = (xts(&one), xts(&many));
        check_split(&a, &b, &all);
        assert!(x == want && y == want, "XTS, decrypt {decrypt}");
    }
}

#[test]
fn signature_batches_split_over_gpus_keep_every_verdict_in_place() {
    use secp256k1::{ecdsa, schnorr, Keypair, Message, SecretKey};
    let Some(all) = gpus() else { return };
    let (one, many) = engines(&all);
    let cpu = Engine::with_backend(BackendChoice::Exact(Backend::Libsecp256k1));
    let n = 50_001;
    let (mut hashes, mut der, mut keys, mut sigs, mut xonly) =
        (vec![], vec![], vec![], vec![], vec![]);
    for i in 0..n as u64 {
        let mut seed = [0u8; 32];
        seed[..8].copy_from_slice(&(i + 1).to_le_bytes());
        seed[31] = 1;
        let sk = SecretKey::from_secret_bytes(seed).unwrap();
        let hash = batchcrypt::sha256::digest(&seed);
        let kp = Keypair::from_secret_key(&sk);
        let mut d = ecdsa::sign(Message::from_digest(hash), &sk)
            .serialize_der()
            .to_vec();
        let mut s = schnorr::sign_no_aux_rand(&hash, &kp).to_byte_array();
        // Bad signatures scattered over every slice, at its edges too.
        if i % 997 == 0 || i == n as u64 / 2 || i == n as u64 / 2 - 1 || i + 1 == n as u64 {
            let last = d.len() - 1;
            d[last] ^= 1;
            s[63] ^= 1;
        }
        hashes.push(hash);
        der.push(d);
        keys.push(kp.public_key().serialize().to_vec());
        sigs.push(s);
        xonly.push(kp.x_only_public_key().0.to_byte_array());
    }
    let d: Vec<&[u8]> = der.iter().map(|v| v.as_slice()).collect();
    let k: Vec<&[u8]> = keys.iter().map(|v| v.as_slice()).collect();
    let opts = EcdsaOptions::default();
    let want = cpu
        .secp256k1()
        .verify_ecdsa(&hashes, &d, &k, &opts)
        .unwrap()
        .value;
    assert!(!want.all_valid() && want.valid_count() > n / 2);
    let a = one
        .secp256k1()
        .verify_ecdsa(&hashes, &d, &k, &opts)
        .unwrap();
    let b = many
        .secp256k1()
        .verify_ecdsa(&hashes, &d, &k, &opts)
        .unwrap();
    check_split(&a, &b, &all);
    assert_eq!(a.value, want);
    assert_eq!(b.value, want);

    let msgs: Vec<&[u8]> = hashes.iter().map(|h| h.as_slice()).collect();
    let want = cpu
        .secp256k1()
        .verify_schnorr(&msgs, &sigs, &xonly)
        .unwrap()
        .value;
    assert!(!want.all_valid());
    let a = one
        .secp256k1()
        .verify_schnorr(&msgs, &sigs, &xonly)
        .unwrap();
    let b = many
        .secp256k1()
        .verify_schnorr(&msgs, &sigs, &xonly)
        .unwrap();
    check_split(&a, &b, &all);
    assert_eq!(a.value, want);
    assert_eq!(b.value, want);
}

#[test]
fn sm2_and_sm3_batches_split_over_gpus_match_the_cpu() {
    use batchcrypt::sig::SigFormat;
    let Some(all) = gpus() else { return };
    let (one, many) = engines(&all);
    let cpu = Engine::with_backend(BackendChoice::Cpu);
    let sample = batchcrypt::sm2::sign::Sample::new(20_001);
    let (digests, mut sigs, keys) = sample.batch(20_001);
    let mut bad = sigs[10_000].to_vec();
    bad[5] ^= 1;
    sigs[10_000] = &bad;
    let want = cpu
        .sm2()
        .verify_digests(&digests, &sigs, &keys, SigFormat::Compact)
        .unwrap()
        .value;
    assert_eq!(want.valid_count(), 20_000);
    let a = one
        .sm2()
        .verify_digests(&digests, &sigs, &keys, SigFormat::Compact)
        .unwrap();
    let b = many
        .sm2()
        .verify_digests(&digests, &sigs, &keys, SigFormat::Compact)
        .unwrap();
    check_split(&a, &b, &all);
    assert_eq!(a.value, want);
    assert_eq!(b.value, want);

    let scalars: Vec<[u8; 32]> = (0..20_001u32)
        .map(|i| {
            let mut k = batchcrypt::sm3::digest(&i.to_le_bytes());
            k[0] = 1;
            k
        })
        .collect();
    let want = cpu.sm2().mul_base(&scalars).unwrap().value;
    let b = many.sm2().mul_base(&scalars).unwrap();
    assert_eq!(b.gpus, all);
    assert_eq!(b.value, want);

    let data = bytes(64 * 30_001, 3);
    let want = cpu.sm3().hash_fixed(&data, 64).unwrap().value;
    let b = many.sm3().hash_fixed(&data, 64).unwrap();
    assert_eq!(b.gpus, all);
    assert_eq!(b.value, want);
}

#[test]
fn msm_and_ntt_batches_spread_over_gpus_match_the_cpu() {
    use batchcrypt::bn254::{Bases, Fr, G1, G2};
    use batchcrypt::msm::sample;
    use batchcrypt::ntt::Ntt;
    let Some(all) = gpus() else { return };
    let (one, many) = engines(&all);
    let cpu = Engine::with_backend(BackendChoice::Cpu);
    // Each GPU sums its part of the digit windows over every scalar (a prefix of the bases where
    // there are fewer scalars than bases).
    let (points, scalars) = sample::<G1>((1 << 16) + 5, 7);
    let bases = Bases::<G1>::new(points);
    for n in [scalars.len(), 40_000, 1000] {
        let want = cpu.msm(&bases, &scalars[..n]).unwrap().value;
        let a = one.msm(&bases, &scalars[..n]).unwrap();
        let b = many.msm(&bases, &scalars[..n]).unwrap();
        assert_eq!(a.gpus, vec![0]);
        // From 4,096 items a forced GPU choice spreads the batch over every GPU.
        if n >= 4096 {
            assert_eq!(b.gpus, all);
        }
        assert_eq!(a.value, want, "{n} scalars, one GPU");
        assert_eq!(b.value, want, "{n} scalars, every GPU");
    }
    // Canonical scalar bytes, each GPU staging and checking its cut of every chunk: the same
    // sum, and a scalar out of range (in the last GPU's cut) an input error naming it.
    let mut bytes = batchcrypt::msm::canonical_bytes(&scalars);
    let canonical = batchcrypt::msm::Scalars::canonical(&bytes).unwrap();
    let got = many.msm(&bases, canonical).unwrap();
    assert_eq!(got.gpus, all);
    assert_eq!(got.value, cpu.msm(&bases, &scalars).unwrap().value);
    let last = scalars.len() - 3;
    bytes[32 * last..32 * (last + 1)].fill(0xff);
    let bad = many.msm(&bases, batchcrypt::msm::Scalars::canonical(&bytes).unwrap());
    assert!(
        matches!(&bad, Err(batchcrypt::Error::InvalidInput(m)) if m.contains(&format!("scalar {last} "))),
        "{:?}",
        bad.map(|o| o.gpus)
    );
    // Precomputed copies, each GPU holding those of its windows (a few copies, one per digit
    // window), and G2.
    let (points, scalars) = sample::<G1>(1 << 15, 8);
    for copies in [4, 64] {
        let bases = Bases::<G1>::new(points.clone()).with_precomputation(copies);
        let want = cpu.msm(&bases, &scalars).unwrap().value;
        let got = many.msm(&bases, &scalars).unwrap();
        assert_eq!(got.gpus, all);
        assert_eq!(got.value, want, "{copies} copies");
        assert_eq!(
            many.msm(&bases, &scalars[..999]).unwrap().value,
            cpu.msm(&bases, &scalars[..999]).unwrap().value
        );
    }
    let (points, scalars) = sample::<G2>(1 << 13, 9);
    let bases = Bases::<G2>::new(points);
    let want = cpu.msm(&bases, &scalars).unwrap().value;
    assert_eq!(many.msm(&bases, &scalars).unwrap().value, want);

    // A batch of transforms: whole polynomials to each GPU, as many as its measured rate earns
    // (a GPU measured while another process used it may earn none of a small batch).
    let t = Ntt::forward(1 << 12);
    let polys = 32;
    let mut want: Vec<Fr> = (0..polys * t.size as u64)
        .map(|i| Fr::from(i * 7919 + 1))
        .collect();
    let mut got = want.clone();
    let input = batchcrypt::msm::canonical_bytes(&want);
    cpu.ntt(&mut want, &t).unwrap();
    let out = many.ntt(&mut got, &t).unwrap();
    assert!(
        (out.gpus.len() > 1 || all.len() == 1) && out.gpus.iter().all(|g| all.contains(g)),
        "{:?}",
        out.gpus
    );
    assert_eq!(got, want);
    // The same from canonical bytes, each GPU reading its polynomials' slice; an element out of
    // range in the last polynomial is an input error naming it by its index in the whole batch.
    let mut canonical = vec![0u8; input.len()];
    many.ntts_canonical(&input, &mut canonical, &[t]).unwrap();
    assert!(canonical == batchcrypt::msm::canonical_bytes(&want));
    let mut input = input;
    let last = polys as usize * t.size - 2;
    input[32 * last..32 * (last + 1)].fill(0xff);
    let bad = many.ntts_canonical(&input, &mut canonical, &[t]);
    assert!(
        matches!(&bad, Err(batchcrypt::Error::InvalidInput(m)) if m.contains(&format!(" {last} "))),
        "{:?}",
        bad.map(|o| o.gpus)
    );
}

/// An MSM large enough that its scalars cross in chunks: each chunk cut among the GPUs and copied
/// from GPU to GPU, every GPU summing its windows over all of them; the same sum as one GPU's.
#[test]
fn a_large_msm_over_gpus_matches_one_gpu() {
    use batchcrypt::bn254::{Bases, G1};
    use batchcrypt::msm::sample;
    let Some(all) = gpus() else { return };
    if all.len() < 2 {
        return;
    }
    let (one, many) = engines(&all);
    let (points, scalars) = sample::<G1>(9 << 20, 12);
    let bases = Bases::<G1>::new(points);
    let a = one.msm(&bases, &scalars).unwrap();
    let b = many.msm(&bases, &scalars).unwrap();
    assert_eq!((a.gpus, b.gpus), (vec![0], all));
    assert_eq!(a.value, b.value);
}

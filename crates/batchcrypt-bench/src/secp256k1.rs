//! secp256k1 ECDSA and BIP340 batch verification: our backends against libsecp256k1 called
//! directly, on one core and on all cores, on the same random signatures.

use crate::report::{time, time_interleaved, Report};
use batchcrypt::secp256k1::{EcdsaOptions, SigFormat};
use batchcrypt::{Backend, BackendChoice, Engine};
use rayon::prelude::*;
use secp256k1::{
    ecdsa::Signature, schnorr, Keypair, Message, PublicKey, SecretKey, XOnlyPublicKey,
};

const GROUP: &str = "secp256k1";

pub(crate) struct Batch {
    pub(crate) hashes: Vec<[u8; 32]>,
    pub(crate) sigs: Vec<Vec<u8>>,
    pub(crate) keys: Vec<Vec<u8>>,
    parsed: Vec<(Message, Signature, PublicKey)>,
    // BIP340 over the same hashes as 32-byte messages, with the same secret keys.
    schnorr: Vec<[u8; 64]>,
    xonly: Vec<[u8; 32]>,
    schnorr_parsed: Vec<(schnorr::Signature, XOnlyPublicKey)>,
}

/// `n` valid signatures over random hashes with random keys (DER, compressed keys), and BIP340
/// signatures of the same hashes.
pub(crate) fn batch(n: usize) -> Batch {
    type Item = (
        [u8; 32],
        Vec<u8>,
        Vec<u8>,
        (Message, Signature, PublicKey),
        [u8; 64],
        [u8; 32],
        (schnorr::Signature, XOnlyPublicKey),
    );
    let items: Vec<Item> = (0..n)
        .into_par_iter()
        .map(|i| {
            let mut seed = [0u8; 32];
            seed[..8].copy_from_slice(&(i as u64 + 1).to_le_bytes());
            seed[31] = 1;
            let sk = SecretKey::from_secret_bytes(seed).expect("nonzero key below n");
            let hash = batchcrypt::sha256::digest(&seed);
            let msg = Message::from_digest(hash);
            let sig = secp256k1::ecdsa::sign(msg, &sk);
            let pk = PublicKey::from_secret_key(&sk);
            let kp = Keypair::from_secret_key(&sk);
            let ssig = schnorr::sign_no_aux_rand(&hash, &kp);
            let xonly = kp.x_only_public_key().0;
            (
                hash,
                sig.serialize_der().to_vec(),
                pk.serialize().to_vec(),
                (msg, sig, pk),
                ssig.to_byte_array(),
                xonly.to_byte_array(),
                (ssig, xonly),
            )
        })
        .collect();
    let mut b = Batch {
        hashes: vec![],
        sigs: vec![],
        keys: vec![],
        parsed: vec![],
        schnorr: vec![],
        xonly: vec![],
        schnorr_parsed: vec![],
    };
    for (h, s, k, p, ss, x, sp) in items {
        b.hashes.push(h);
        b.sigs.push(s);
        b.keys.push(k);
        b.parsed.push(p);
        b.schnorr.push(ss);
        b.xonly.push(x);
        b.schnorr_parsed.push(sp);
    }
    b
}

/// CPU rows run on at most this many items (the rate per item is what counts; 2^22 verifications
/// on the CPU would take most of a minute per repetition).
const CPU_MAX: usize = 1 << 20;
/// libsecp256k1 on one core: a slice.
const SINGLE_MAX: usize = 1 << 13;

pub fn run(rep: &mut Report, quick: bool) -> anyhow::Result<()> {
    let max_log = if quick { 14 } else { 22 };
    let opts = EcdsaOptions {
        format: SigFormat::Der,
        require_low_s: false,
    };
    rep.header(
        "secp256k1 verification: ours vs libsecp256k1 (same signatures; DER, compressed keys)",
    );
    for log in (10..=max_log).step_by(2) {
        let n = 1usize << log;
        let b = batch(n);
        let reps = if log >= 20 {
            2
        } else if log >= 16 {
            3
        } else {
            5
        };
        let (cpu_n, single_n) = (n.min(CPU_MAX), n.min(SINGLE_MAX));
        let sigs: Vec<&[u8]> = b.sigs.iter().map(|s| s.as_slice()).collect();
        let keys: Vec<&[u8]> = b.keys.iter().map(|k| k.as_slice()).collect();
        let msgs: Vec<&[u8]> = b.hashes.iter().map(|h| h.as_slice()).collect();
        for schnorr_scheme in [false, true] {
            let case = format!(
                "{} verify 2^{log}",
                if schnorr_scheme { "schnorr" } else { "ecdsa" }
            );
            let peer = |k: usize| match schnorr_scheme {
                false => {
                    let (m, s, p) = &b.parsed[k];
                    secp256k1::ecdsa::verify(s, *m, p).is_ok()
                }
                true => {
                    let (s, x) = &b.schnorr_parsed[k];
                    schnorr::verify(s, &b.hashes[k], x).is_ok()
                }
            };
            let t = time(reps, || assert!((0..single_n).all(peer)));
            rep.add(
                GROUP,
                &case,
                "libsecp256k1 1 core",
                single_n as u64,
                0,
                t,
                None,
            );
            // The same from the encodings (libsecp256k1's own DER, key and x-only parsers), which
            // is the work our end-to-end rows do.
            let peer_encoded = |k: usize| match schnorr_scheme {
                false => match (
                    Signature::from_der(&b.sigs[k]),
                    PublicKey::from_slice(&b.keys[k]),
                ) {
                    (Ok(s), Ok(p)) => {
                        secp256k1::ecdsa::verify(&s, Message::from_digest(b.hashes[k]), &p).is_ok()
                    }
                    _ => false,
                },
                true => match XOnlyPublicKey::from_byte_array(b.xonly[k]) {
                    Ok(x) => schnorr::verify(
                        &schnorr::Signature::from_byte_array(b.schnorr[k]),
                        &b.hashes[k],
                        &x,
                    )
                    .is_ok(),
                    Err(_) => false,
                },
            };
            // The all-core rows take turns, repetition by repetition: the host's clock and its
            // neighbours drift over a run, and timing one row after the other gave that drift to
            // whichever ran last.
            let cpu_engine = Engine::with_backend(BackendChoice::Exact(Backend::Libsecp256k1));
            let ours_cpu = || match schnorr_scheme {
                false => cpu_engine.secp256k1().verify_ecdsa(
                    &b.hashes[..cpu_n],
                    &sigs[..cpu_n],
                    &keys[..cpu_n],
                    &opts,
                ),
                true => cpu_engine.secp256k1().verify_schnorr(
                    &msgs[..cpu_n],
                    &b.schnorr[..cpu_n],
                    &b.xonly[..cpu_n],
                ),
            };
            let mut ours_ok = true;
            let ts = time_interleaved(
                reps.max(3),
                &mut [
                    &mut || assert!((0..cpu_n).into_par_iter().all(peer)),
                    &mut || assert!((0..cpu_n).into_par_iter().all(peer_encoded)),
                    &mut || ours_ok &= ours_cpu().unwrap().value.all_valid(),
                ],
            );
            anyhow::ensure!(ours_ok, "libsecp256k1 backend: valid signatures rejected");
            for (name, t) in [
                "libsecp256k1 all cores",
                "libsecp256k1 all cores, parsing",
                "batchcrypt libsecp256k1 (end to end)",
            ]
            .into_iter()
            .zip(ts)
            {
                rep.add(
                    GROUP,
                    &case,
                    name,
                    cpu_n as u64,
                    0,
                    t,
                    Some("libsecp256k1 1 core"),
                );
            }
            if Backend::Cuda.is_available()
                && Backend::Cuda.implements(batchcrypt::backend::Primitive::Secp256k1)
            {
                let backend = Backend::Cuda;
                let e = Engine::with_backend(BackendChoice::Exact(backend));
                let m = n;
                let mut all = false;
                let t = time(reps, || {
                    let v = match schnorr_scheme {
                        false => e.secp256k1().verify_ecdsa(
                            &b.hashes[..m],
                            &sigs[..m],
                            &keys[..m],
                            &opts,
                        ),
                        true => {
                            e.secp256k1()
                                .verify_schnorr(&msgs[..m], &b.schnorr[..m], &b.xonly[..m])
                        }
                    };
                    all = v.unwrap().value.all_valid();
                });
                anyhow::ensure!(all, "{backend}: valid signatures rejected");
                rep.add(
                    GROUP,
                    &case,
                    &format!("batchcrypt {backend} (end to end)"),
                    m as u64,
                    0,
                    t,
                    Some("libsecp256k1 1 core"),
                );
                {
                    let (t, v) = match schnorr_scheme {
                        false => e.secp256k1().ecdsa_kernel_seconds(
                            &b.hashes,
                            &sigs,
                            &keys,
                            &opts,
                            reps.max(3),
                        )?,
                        true => e.secp256k1().schnorr_kernel_seconds(
                            &msgs,
                            &b.schnorr,
                            &b.xonly,
                            reps.max(3),
                        )?,
                    };
                    anyhow::ensure!(v.all_valid(), "GPU kernel rejected valid signatures");
                    rep.add(
                        GROUP,
                        &case,
                        "batchcrypt cuda (kernel only)",
                        n as u64,
                        0,
                        t,
                        Some("libsecp256k1 1 core"),
                    );
                }
            }
        }
    }
    Ok(())
}

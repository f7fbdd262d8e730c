//! secp256k1 ECDSA batch verification: our backends against libsecp256k1 called directly, on one
//! core and on all cores, on the same random signatures.

use crate::report::{time, Report};
use batchcrypt::secp256k1::{EcdsaOptions, SigFormat};
use batchcrypt::{Backend, BackendChoice, Engine};
use rayon::prelude::*;
use secp256k1::{ecdsa::Signature, Message, PublicKey, SecretKey};

const GROUP: &str = "secp256k1";

struct Batch {
    hashes: Vec<[u8; 32]>,
    sigs: Vec<Vec<u8>>,
    keys: Vec<Vec<u8>>,
    parsed: Vec<(Message, Signature, PublicKey)>,
}

/// `n` valid signatures over random hashes with random keys (DER, compressed keys).
fn batch(n: usize) -> Batch {
    let items: Vec<([u8; 32], Vec<u8>, Vec<u8>, (Message, Signature, PublicKey))> = (0..n)
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
            (hash, sig.serialize_der().to_vec(), pk.serialize().to_vec(), (msg, sig, pk))
        })
        .collect();
    let mut b = Batch { hashes: Vec::new(), sigs: Vec::new(), keys: Vec::new(), parsed: Vec::new() };
    for (h, s, k, p) in items {
        b.hashes.push(h);
        b.sigs.push(s);
        b.keys.push(k);
        b.parsed.push(p);
    }
    b
}

pub fn run(rep: &mut Report, quick: bool) -> anyhow::Result<()> {
    let max_log = if quick { 14 } else { 20 };
    let opts = EcdsaOptions { format: SigFormat::Der, require_low_s: false };
    rep.header("secp256k1 ECDSA verification: ours vs libsecp256k1 (same signatures)");
    for log in (10..=max_log).step_by(2) {
        let n = 1usize << log;
        let b = batch(n);
        let case = format!("ecdsa verify 2^{log}");
        let reps = if log >= 18 { 3 } else { 5 };
        let single_n = n.min(1 << 14); // one core: a slice keeps the run short; rate per item is what counts
        let t = time(reps, || {
            for (m, s, k) in &b.parsed[..single_n] {
                assert!(secp256k1::ecdsa::verify(s, *m, k).is_ok());
            }
        });
        rep.add(GROUP, &case, "libsecp256k1 1 core", single_n as u64, 0, t, None);
        let t = time(reps, || assert!(b.parsed.par_iter().all(|(m, s, k)| secp256k1::ecdsa::verify(s, *m, k).is_ok())));
        rep.add(GROUP, &case, "libsecp256k1 all cores", n as u64, 0, t, Some("libsecp256k1 1 core"));
        let sigs: Vec<&[u8]> = b.sigs.iter().map(|s| s.as_slice()).collect();
        let keys: Vec<&[u8]> = b.keys.iter().map(|k| k.as_slice()).collect();
        for backend in [Backend::Libsecp256k1, Backend::Cuda] {
            if !backend.is_available() || !backend.implements(batchcrypt::backend::Primitive::Secp256k1) {
                continue;
            }
            let e = Engine::with_backend(BackendChoice::Exact(backend));
            let mut all = false;
            let t = time(reps, || all = e.secp256k1().verify_ecdsa(&b.hashes, &sigs, &keys, &opts).unwrap().value.all_valid());
            anyhow::ensure!(all, "{backend}: valid signatures rejected");
            rep.add(GROUP, &case, &format!("batchcrypt {backend} (end to end)"), n as u64, 0, t, Some("libsecp256k1 1 core"));
            #[cfg(feature = "cuda")]
            if backend == Backend::Cuda {
                let (t, all) = e.secp256k1().ecdsa_kernel_seconds(&b.hashes, &sigs, &keys, &opts, reps)?;
                anyhow::ensure!(all, "GPU kernel rejected valid signatures");
                rep.add(GROUP, &case, "batchcrypt cuda (kernel only)", n as u64, 0, t, Some("libsecp256k1 1 core"));
            }
        }
    }
    Ok(())
}

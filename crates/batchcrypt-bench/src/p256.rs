//! P-256 ECDSA batch verification: ours (GPU, and the OpenSSL backend end to end) against
//! OpenSSL's libcrypto called directly, on one core and on all cores, on the same signatures.

use crate::report::{time, time_interleaved, Report};
use batchcrypt::ecdsa::EcdsaOptions;
use batchcrypt::p256::P256;
use batchcrypt::{Backend, BackendChoice, Engine};
use openssl::bn::BigNumContext;
use openssl::ec::{EcGroup, EcKey, EcPoint, PointConversionForm};
use openssl::ecdsa::EcdsaSig;
use openssl::nid::Nid;
use openssl::pkey::Public;
use rayon::prelude::*;

const GROUP: &str = "p256";
const PEER: &str = "OpenSSL all cores";

struct Batch {
    hashes: Vec<[u8; 32]>,
    sigs: Vec<Vec<u8>>,
    keys: Vec<Vec<u8>>,
    /// The same, parsed once by OpenSSL (the peer's rows without parsing).
    parsed: Vec<(EcdsaSig, EcKey<Public>)>,
}

/// `n` valid signatures by OpenSSL over random hashes with distinct keys (DER, compressed keys).
fn batch(n: usize) -> Batch {
    let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).expect("P-256");
    let items: Vec<_> = (0..n)
        .into_par_iter()
        .map(|i| {
            let mut ctx = BigNumContext::new().unwrap();
            let key = EcKey::generate(&group).unwrap();
            let hash = batchcrypt::sha256::digest(&(i as u64).to_le_bytes());
            let sig = EcdsaSig::sign(&hash, &key).unwrap();
            let sec1 = key
                .public_key()
                .to_bytes(&group, PointConversionForm::COMPRESSED, &mut ctx)
                .unwrap();
            let public = EcKey::from_public_key(&group, key.public_key()).unwrap();
            let der = sig.to_der().unwrap();
            (hash, der, sec1, (sig, public))
        })
        .collect();
    let mut b = Batch {
        hashes: vec![],
        sigs: vec![],
        keys: vec![],
        parsed: vec![],
    };
    for (h, s, k, p) in items {
        b.hashes.push(h);
        b.sigs.push(s);
        b.keys.push(k);
        b.parsed.push(p);
    }
    b
}

/// OpenSSL on one item from its encodings: DER signature, SEC1 key.
fn openssl_encoded(group: &EcGroup, hash: &[u8; 32], sig: &[u8], key: &[u8]) -> bool {
    let mut ctx = BigNumContext::new().unwrap();
    let (Ok(sig), Ok(point)) = (
        EcdsaSig::from_der(sig),
        EcPoint::from_bytes(group, key, &mut ctx),
    ) else {
        return false;
    };
    let Ok(key) = EcKey::from_public_key(group, &point) else {
        return false;
    };
    sig.verify(hash, &key).unwrap_or(false)
}

/// OpenSSL on one core: a slice (about 8 thousand verifications a second per core).
const SINGLE_MAX: usize = 1 << 12;

pub fn run(rep: &mut Report, quick: bool) -> anyhow::Result<()> {
    let max_log = if quick { 14 } else { 20 };
    let opts = EcdsaOptions::default();
    let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1)?;
    rep.header("P-256 ECDSA verification: ours vs OpenSSL (same signatures; DER, compressed keys)");
    for log in (12..=max_log).step_by(4) {
        let n = 1usize << log;
        let b = batch(n);
        let reps = if log >= 20 { 2 } else { 3 };
        let case = format!("p256 ecdsa verify 2^{log}");
        let sigs: Vec<&[u8]> = b.sigs.iter().map(Vec::as_slice).collect();
        let keys: Vec<&[u8]> = b.keys.iter().map(Vec::as_slice).collect();
        let peer = |k: usize| {
            let (s, p) = &b.parsed[k];
            s.verify(&b.hashes[k], p).unwrap_or(false)
        };
        let single_n = n.min(SINGLE_MAX);
        let t = time(reps, || assert!((0..single_n).all(peer)));
        rep.add(GROUP, &case, "OpenSSL 1 core", single_n as u64, 0, t, None);
        let cpu_engine = Engine::with_backend(BackendChoice::Exact(Backend::OpenSsl));
        let mut ours_ok = true;
        let ts = time_interleaved(
            reps,
            &mut [
                &mut || assert!((0..n).into_par_iter().all(peer)),
                &mut || {
                    assert!((0..n).into_par_iter().all(|k| openssl_encoded(
                        &group,
                        &b.hashes[k],
                        &b.sigs[k],
                        &b.keys[k]
                    )))
                },
                &mut || {
                    ours_ok &= cpu_engine
                        .ecdsa::<P256>()
                        .verify(&b.hashes, &sigs, &keys, &opts)
                        .unwrap()
                        .value
                        .all_valid()
                },
            ],
        );
        anyhow::ensure!(ours_ok, "OpenSSL backend: valid signatures rejected");
        for (name, t) in [
            PEER,
            "OpenSSL all cores, parsing",
            "batchcrypt openssl (end to end)",
        ]
        .into_iter()
        .zip(ts)
        {
            rep.add(GROUP, &case, name, n as u64, 0, t, Some(PEER));
        }
        if Backend::Cuda.is_available() {
            let e = Engine::with_backend(BackendChoice::Exact(Backend::Cuda));
            let mut all = false;
            let t = time(reps, || {
                all = e
                    .ecdsa::<P256>()
                    .verify(&b.hashes, &sigs, &keys, &opts)
                    .unwrap()
                    .value
                    .all_valid();
            });
            anyhow::ensure!(all, "cuda: valid signatures rejected");
            rep.add(
                GROUP,
                &case,
                "batchcrypt cuda (end to end)",
                n as u64,
                0,
                t,
                Some(PEER),
            );
            let (t, v) =
                e.ecdsa::<P256>()
                    .kernel_seconds(&b.hashes, &sigs, &keys, &opts, reps.max(3))?;
            anyhow::ensure!(v.all_valid(), "GPU kernel rejected valid signatures");
            rep.add(
                GROUP,
                &case,
                "batchcrypt cuda (kernel only)",
                n as u64,
                0,
                t,
                Some(PEER),
            );
        }
    }
    Ok(())
}

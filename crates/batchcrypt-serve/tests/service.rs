//! The service end to end on loopback: many clients at once with replies checked item by item
//! against the library; malformed, oversized and unauthenticated requests; clients that go
//! away; shared memory; AES streams; a Bitcoin block; proofs with a tiny memory budget, key eviction, exactly
//! one completion per job and graceful shutdown. Every wait is bounded.

use batchcrypt::secp256k1::{EcdsaOptions, SigFormat};
use batchcrypt::{BackendChoice, Engine};
use batchcrypt_serve::client::{Client, JobOptions, Options};
use batchcrypt_serve::proto::*;
use batchcrypt_serve::store::Store;
use batchcrypt_serve::{start, Running, ServerConfig};
use batchcrypt_testdata::{shared_folder, zk_fixture as fixture};
use bytes::Bytes;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tonic::Code;

const LIMIT: Duration = Duration::from_secs(180);

fn b(v: impl AsRef<[u8]>) -> Bytes {
    Bytes::copy_from_slice(v.as_ref())
}

fn bs<T: AsRef<[u8]>>(v: &[T]) -> Vec<Bytes> {
    v.iter().map(b).collect()
}

fn engine() -> Arc<Engine> {
    static E: OnceLock<Arc<Engine>> = OnceLock::new();
    E.get_or_init(|| Arc::new(Engine::with_backend(BackendChoice::Auto)))
        .clone()
}

fn data_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "batchcrypt-serve-test-{name}-{}-{}",
        std::process::id(),
        hex::encode(rand::random::<[u8; 4]>())
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn config(name: &str) -> ServerConfig {
    let mut c = ServerConfig::new(data_dir(name));
    c.listen = "127.0.0.1:0".parse().unwrap();
    c.metrics = Some("127.0.0.1:0".parse().unwrap());
    c
}

async fn serve(c: ServerConfig) -> (Running, Client) {
    let r = start(engine(), c).await.expect("server starts");
    let client = Client::connect(&r.addr.to_string())
        .await
        .expect("client connects");
    (r, client)
}

async fn bounded<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f)
        .await
        .expect("finished within the bound")
}

/// Signatures over distinct hashes, every 7th ECDSA signature altered (a mismatch or bad DER),
/// every 11th key cut short, every 13th BIP340 signature altered.
struct Sigs {
    hashes: Vec<[u8; 32]>,
    der: Vec<Vec<u8>>,
    keys: Vec<Vec<u8>>,
    schnorr: Vec<[u8; 64]>,
    xonly: Vec<[u8; 32]>,
}

fn sigs(n: usize) -> Sigs {
    use secp256k1::{Keypair, Message, PublicKey, SecretKey};
    let mut s = Sigs {
        hashes: vec![],
        der: vec![],
        keys: vec![],
        schnorr: vec![],
        xonly: vec![],
    };
    for i in 0..n {
        let mut seed = [0u8; 32];
        seed[..8].copy_from_slice(&(i as u64 + 77).to_le_bytes());
        seed[31] = 3;
        let sk = SecretKey::from_secret_bytes(seed).unwrap();
        let hash = batchcrypt::sha256::digest(&seed);
        let mut der = secp256k1::ecdsa::sign(Message::from_digest(hash), &sk)
            .serialize_der()
            .to_vec();
        let mut key = PublicKey::from_secret_key(&sk).serialize().to_vec();
        let kp = Keypair::from_secret_key(&sk);
        let mut sch = secp256k1::schnorr::sign_no_aux_rand(&hash, &kp).to_byte_array();
        if i % 7 == 3 {
            let at = 4 + i % (der.len() - 4);
            der[at] ^= 0x40;
        }
        if i % 11 == 5 {
            key.truncate(20);
        }
        if i % 13 == 2 {
            sch[40] ^= 1;
        }
        s.hashes.push(hash);
        s.der.push(der);
        s.keys.push(key);
        s.schnorr.push(sch);
        s.xonly.push(kp.x_only_public_key().0.to_byte_array());
    }
    s
}

fn strings(v: Vec<Result<(), batchcrypt::secp256k1::Reason>>) -> Vec<Result<(), String>> {
    v.into_iter()
        .map(|r| r.map_err(|e| e.to_string()))
        .collect()
}

fn slices(v: &[Vec<u8>]) -> Vec<&[u8]> {
    v.iter().map(|x| x.as_slice()).collect()
}

/// The library's verdicts on the DER signatures of `s`.
fn library_ecdsa(s: &Sigs) -> Vec<Result<(), String>> {
    let (der, keys) = (slices(&s.der), slices(&s.keys));
    strings(
        engine()
            .secp256k1()
            .verify_ecdsa(&s.hashes, &der, &keys, &EcdsaOptions::default())
            .unwrap()
            .value
            .results,
    )
}

/// The server's verdicts on DER signatures over secp256k1, by default rules.
async fn served_ecdsa(
    client: &mut Client,
    hashes: &[[u8; 32]],
    der: &[&[u8]],
    keys: &[&[u8]],
) -> Vec<Result<(), String>> {
    bounded(client.verify_ecdsa(
        EcdsaCurve::Secp256k1,
        hashes,
        der,
        keys,
        SigFormat::Der,
        false,
    ))
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_clients_get_what_the_library_gives() {
    let (server, client) = serve(config("many")).await;
    let n = 3000;
    let s = Arc::new(sigs(n));
    let e = engine();
    let want_ecdsa = library_ecdsa(&s);
    let msgs: Vec<&[u8]> = s.hashes.iter().map(|h| h.as_slice()).collect();
    let want_schnorr = strings(
        e.secp256k1()
            .verify_schnorr(&msgs, &s.schnorr, &s.xonly)
            .unwrap()
            .value
            .results,
    );
    assert!(want_ecdsa.iter().any(|v| v.is_ok()) && want_ecdsa.iter().any(|v| v.is_err()));
    assert!(want_schnorr.iter().any(|v| v.is_ok()) && want_schnorr.iter().any(|v| v.is_err()));
    let (want_ecdsa, want_schnorr) = (Arc::new(want_ecdsa), Arc::new(want_schnorr));

    let clients = 48;
    let mut tasks = Vec::new();
    for c in 0..clients {
        let (mut client, s) = (client.clone(), s.clone());
        let (we, ws) = (want_ecdsa.clone(), want_schnorr.clone());
        tasks.push(tokio::spawn(async move {
            for round in 0..3usize {
                let start = (c * 131 + round * 977) % (n - 300);
                let len = 1 + (c * 37 + round * 11) % 256;
                let r = start..start + len;
                let (der, keys) = (slices(&s.der[r.clone()]), slices(&s.keys[r.clone()]));
                let got = served_ecdsa(&mut client, &s.hashes[r.clone()], &der, &keys).await;
                assert_eq!(got, we[r.clone()], "ECDSA client {c} round {round}");
                let msgs: Vec<&[u8]> = s.hashes[r.clone()].iter().map(|h| h.as_slice()).collect();
                let got = client
                    .verify_schnorr(&msgs, &s.schnorr[r.clone()], &s.xonly[r.clone()])
                    .await
                    .unwrap();
                assert_eq!(got, ws[r.clone()], "BIP340 client {c} round {round}");
                // Messages of many lengths, 0 and block boundaries included.
                let texts: Vec<Vec<u8>> = (0..len)
                    .map(|i| vec![(c + i) as u8; (i * 13 + c) % 130])
                    .collect();
                let t: Vec<&[u8]> = texts.iter().map(|m| m.as_slice()).collect();
                for alg in [
                    HashAlgorithm::Sha256,
                    HashAlgorithm::Sha256d,
                    HashAlgorithm::Sm3,
                ] {
                    // The packed form: messages of one length back to back.
                    let one_len = 1 + (c * 5 + round) % 100;
                    let packed: Vec<u8> = (0..len * one_len).map(|i| (i * 3 + c) as u8).collect();
                    let got = client
                        .hash_packed(alg, &packed.chunks(one_len).collect::<Vec<_>>())
                        .await
                        .unwrap();
                    assert_eq!(got.len(), 32 * len);
                    for (m, d) in packed.chunks(one_len).zip(got.chunks(32)) {
                        let want = match alg {
                            HashAlgorithm::Sha256 => batchcrypt::sha256::digest(m),
                            HashAlgorithm::Sha256d => batchcrypt::sha256::digest_double(m),
                            HashAlgorithm::Sm3 => batchcrypt::sm3::digest(m),
                        };
                        assert_eq!(d, want, "packed {alg:?} of {one_len} bytes");
                    }
                    let got = client.hash(alg, &t).await.unwrap();
                    for (m, d) in t.iter().zip(&got) {
                        let want = match alg {
                            HashAlgorithm::Sha256 => batchcrypt::sha256::digest(m),
                            HashAlgorithm::Sha256d => batchcrypt::sha256::digest_double(m),
                            HashAlgorithm::Sm3 => batchcrypt::sm3::digest(m),
                        };
                        assert_eq!(*d, want, "{alg:?} of {} bytes", m.len());
                    }
                }
            }
        }));
    }
    for t in tasks {
        bounded(t).await.unwrap();
    }
    bounded(server.shutdown()).await.unwrap();
}

/// Hash batches stop gathering at their own size (`max_hash_items`), below the signatures'
/// `max_items`: concurrent requests of 200 messages under a hash cap of 300 each run in a batch
/// of their own, with the right digests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hash_batches_stop_at_their_own_size() {
    let mut c = config("hash-items");
    c.batch.max_items = 10_000;
    c.batch.max_hash_items = 300;
    c.batch.in_flight = 1;
    c.batch.max_delay = Duration::from_millis(50);
    let (server, client) = serve(c).await;
    let msgs: Vec<u8> = (0..200 * 64u32).map(|i| (i % 251) as u8).collect();
    let want: Vec<u8> = msgs
        .chunks(64)
        .flat_map(batchcrypt::sha256::digest_double)
        .collect();
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let (mut client, data) = (client.clone(), Bytes::from(msgs.clone()));
            tokio::spawn(async move {
                let request = HashRequest {
                    algorithm: HashAlgorithm::Sha256d as i32,
                    messages: Vec::new(),
                    messages_packed: Some(Column {
                        data,
                        width: 64,
                        ends: Vec::new(),
                        shared: None,
                    }),
                    digests_to: None,
                };
                bounded(client.raw().hash(request))
                    .await
                    .unwrap()
                    .into_inner()
            })
        })
        .collect();
    for t in tasks {
        let r = t.await.unwrap();
        assert_eq!(r.packed_digests, want);
        assert_eq!(r.batch_items, 200, "a batch over the hash cap of 300");
    }
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p256_requests_match_the_library_and_batch_apart_from_secp256k1() {
    use openssl::ec::{EcGroup, EcKey, PointConversionForm};
    use openssl::ecdsa::EcdsaSig;
    let (server, mut client) = serve(config("p256")).await;
    let group = EcGroup::from_curve_name(openssl::nid::Nid::X9_62_PRIME256V1).unwrap();
    let mut ctx = openssl::bn::BigNumContext::new().unwrap();
    let (mut hashes, mut sigs, mut keys) = (vec![], vec![], vec![]);
    for i in 0..60u32 {
        let ec = EcKey::generate(&group).unwrap();
        let form = if i % 2 == 0 {
            PointConversionForm::COMPRESSED
        } else {
            PointConversionForm::UNCOMPRESSED
        };
        keys.push(ec.public_key().to_bytes(&group, form, &mut ctx).unwrap());
        let hash = batchcrypt::sha256::digest(&i.to_le_bytes());
        let mut sig = EcdsaSig::sign(&hash, &ec).unwrap().to_der().unwrap();
        if i % 7 == 3 {
            let last = sig.len() - 1;
            sig[last] ^= 1;
        }
        hashes.push(hash);
        sigs.push(sig);
    }
    let sig_refs: Vec<&[u8]> = sigs.iter().map(|v| v.as_slice()).collect();
    let key_refs: Vec<&[u8]> = keys.iter().map(|v| v.as_slice()).collect();
    let want = strings(
        engine()
            .ecdsa::<batchcrypt::p256::P256>()
            .verify(&hashes, &sig_refs, &key_refs, &EcdsaOptions::default())
            .unwrap()
            .value
            .results,
    );
    assert_eq!(
        want.iter().filter(|v| v.is_ok()).count(),
        60 - 9,
        "the library's own verdicts"
    );
    // P-256 and secp256k1 requests at once: each batch runs its own curve.
    let mut other = client.clone();
    let (h2, s2, k2) = (hashes.clone(), sigs.clone(), keys.clone());
    let as_k1 = tokio::spawn(async move {
        other
            .verify_ecdsa(EcdsaCurve::Secp256k1, &h2, &s2, &k2, SigFormat::Der, false)
            .await
            .unwrap()
    });
    let got = client
        .verify_ecdsa(
            EcdsaCurve::P256,
            &hashes,
            &sigs,
            &keys,
            SigFormat::Der,
            false,
        )
        .await
        .unwrap();
    assert_eq!(got, want);
    let k1 = bounded(as_k1).await.unwrap();
    assert!(
        k1.iter().all(|v| v.is_err()),
        "P-256 signatures are not secp256k1 signatures"
    );
    // A curve the protocol does not name.
    let r = client
        .raw()
        .verify_ecdsa(VerifyEcdsaRequest {
            hashes: bs(&hashes[..1]),
            signatures: bs(&sigs[..1]),
            public_keys: bs(&keys[..1]),
            curve: 7,
            ..Default::default()
        })
        .await;
    assert_eq!(r.unwrap_err().code(), Code::InvalidArgument);
    bounded(server.shutdown()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sm2_and_psi_operations_match_the_library() {
    use openssl::ec::{EcGroup, EcKey, PointConversionForm};
    use openssl::hash::MessageDigest;
    use openssl::pkey::PKey;
    use openssl::sign::Signer;
    let (server, mut client) = serve(config("sm2")).await;
    let group = EcGroup::from_curve_name(openssl::nid::Nid::SM2).unwrap();
    let mut ctx = openssl::bn::BigNumContext::new().unwrap();
    let (mut msgs, mut sigs, mut keys) = (vec![], vec![], vec![]);
    for i in 0..40usize {
        let ec = EcKey::generate(&group).unwrap();
        keys.push(
            ec.public_key()
                .to_bytes(&group, PointConversionForm::COMPRESSED, &mut ctx)
                .unwrap(),
        );
        let pkey = PKey::from_ec_key(ec).unwrap();
        let msg = format!("payment {i}").into_bytes();
        let mut signer = Signer::new(MessageDigest::sm3(), &pkey).unwrap();
        signer.update(&msg).unwrap();
        let mut sig = signer.sign_to_vec().unwrap();
        if i % 5 == 1 {
            let last = sig.len() - 1;
            sig[last] ^= 1;
        }
        sigs.push(sig);
        msgs.push(msg);
    }
    let m: Vec<&[u8]> = msgs.iter().map(|v| v.as_slice()).collect();
    let s: Vec<&[u8]> = sigs.iter().map(|v| v.as_slice()).collect();
    let k: Vec<&[u8]> = keys.iter().map(|v| v.as_slice()).collect();
    // OpenSSL signs with the empty identifier.
    let got = client
        .verify_sm2(&m, &s, &k, b"", SigFormat::Der)
        .await
        .unwrap();
    let want = engine()
        .sm2()
        .verify(&m, &s, &k, b"", SigFormat::Der)
        .unwrap();
    assert_eq!(got, strings(want.value.results));
    assert_eq!(got.iter().filter(|v| v.is_ok()).count(), 32);
    // The same items over a stream, seven to a request: the same verdicts, in order.
    let requests = (0..40).step_by(7).map(|a| {
        let r = a..(a + 7).min(40);
        batchcrypt_serve::client::sm2_request(
            &m[r.clone()],
            &s[r.clone()],
            &k[r],
            b"",
            SigFormat::Der,
        )
    });
    let mut streamed = Vec::new();
    let stream = bounded(client.verify_sm2_stream()).await.unwrap();
    bounded(stream.each_reply(requests, |r| {
        streamed.extend(batchcrypt_serve::client::verdicts(r))
    }))
    .await
    .unwrap();
    assert_eq!(streamed, got);

    // A PSI party's two steps, against the library.
    let k1 = batchcrypt::psi::random_key();
    let ids: Vec<Vec<u8>> = (0..300)
        .map(|i| format!("user-{i}@example.com").into_bytes())
        .collect();
    let r = client
        .raw()
        .sm2_hash_to_curve_mul(Sm2HashToCurveMulRequest {
            scalar: b(k1),
            messages: bs(&ids),
            dst: b(b"batchcrypt-test"),
        })
        .await
        .unwrap()
        .into_inner();
    let idr: Vec<&[u8]> = ids.iter().map(|v| v.as_slice()).collect();
    let want = engine()
        .sm2()
        .hash_to_curve_mul(&k1, &idr, b"batchcrypt-test")
        .unwrap()
        .value;
    let got: Vec<[u8; 33]> = r.points.iter().map(|p| p[..].try_into().unwrap()).collect();
    assert_eq!(got, want);
    let k2 = batchcrypt::psi::random_key();
    let mut points = r.points.clone();
    points.push(b([2; 33])); // x = 0x0202..: no such point? either way the library decides
    points.push(b([5; 33])); // bad prefix
    points.push(b([2; 7])); // wrong length
    let r2 = client
        .raw()
        .sm2_mul_compressed(Sm2MulCompressedRequest {
            scalar: b(k2),
            points: points.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    let lib_in: Vec<[u8; 33]> = points[..points.len() - 1]
        .iter()
        .map(|p| p[..].try_into().unwrap())
        .collect();
    let want = engine().sm2().mul_compressed(&k2, &lib_in).unwrap().value;
    let mut want: Vec<Bytes> = want
        .into_iter()
        .map(|p| p.map_or(Bytes::new(), b))
        .collect();
    want.push(Bytes::new());
    assert_eq!(r2.points, want);
    assert!(
        r2.points[points.len() - 2].is_empty(),
        "bad prefix is not a point"
    );
    bounded(server.shutdown()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_oversized_requests_get_clear_codes() {
    let mut c = config("malformed");
    c.max_message_bytes = 1 << 20;
    c.max_request_items = 100;
    let (server, mut client) = serve(c).await;
    let s = sigs(4);
    let raw = client.raw();
    let bad = |r: Result<tonic::Response<VerifyReply>, tonic::Status>| r.unwrap_err().code();
    // Lists of different lengths.
    let r = raw
        .verify_ecdsa(VerifyEcdsaRequest {
            hashes: bs(&s.hashes),
            signatures: bs(&s.der[..3]),
            public_keys: bs(&s.keys),
            ..Default::default()
        })
        .await;
    assert_eq!(bad(r), Code::InvalidArgument);
    // A hash that is not 32 bytes.
    let r = raw
        .verify_ecdsa(VerifyEcdsaRequest {
            hashes: vec![b([1; 31])],
            signatures: vec![b(&s.der[0])],
            public_keys: vec![b(&s.keys[0])],
            ..Default::default()
        })
        .await;
    assert_eq!(bad(r), Code::InvalidArgument);
    // Hashes packed at another width than 32, or by ends with one of another length.
    for (len, width, ends) in [(62usize, 31u32, vec![]), (63, 0, vec![32, 63])] {
        let r = raw
            .verify_ecdsa(VerifyEcdsaRequest {
                hashes_packed: Some(Column {
                    data: vec![1u8; len].into(),
                    width,
                    ends,
                    shared: None,
                }),
                signatures: bs(&s.der[..2]),
                public_keys: bs(&s.keys[..2]),
                ..Default::default()
            })
            .await;
        assert_eq!(bad(r), Code::InvalidArgument, "width {width}");
    }
    // An unknown signature format.
    let r = raw
        .verify_ecdsa(VerifyEcdsaRequest {
            hashes: vec![b(s.hashes[0])],
            signatures: vec![b(&s.der[0])],
            public_keys: vec![b(&s.keys[0])],
            format: 9,
            ..Default::default()
        })
        .await;
    assert_eq!(bad(r), Code::InvalidArgument);
    // Too many items.
    let r = raw
        .hash(HashRequest {
            algorithm: 0,
            messages: vec![b([0; 4]); 101],
            ..Default::default()
        })
        .await;
    assert_eq!(r.unwrap_err().code(), Code::ResourceExhausted);
    // Over the size limit (gRPC's decoder answers OUT_OF_RANGE).
    let r = raw
        .hash(HashRequest {
            algorithm: 0,
            messages: vec![b(vec![0; 2 << 20])],
            ..Default::default()
        })
        .await;
    assert_eq!(r.unwrap_err().code(), Code::OutOfRange);
    // Packed messages that are not a whole number of messages, or both forms at once.
    let column = |data: Vec<u8>, width: u32, ends: Vec<u32>| {
        Some(Column {
            data: data.into(),
            width,
            ends,
            shared: None,
        })
    };
    for (packed, messages) in [
        (column(vec![0; 65], 64, vec![]), vec![]),
        (column(vec![0; 64], 64, vec![64]), vec![]),
        (column(vec![0; 64], 0, vec![30, 20, 64]), vec![]),
        (column(vec![0; 64], 0, vec![30, 63]), vec![]),
        (column(vec![0; 64], 0, vec![30, 65]), vec![]),
        (column(vec![0; 64], 64, vec![]), vec![b([1])]),
    ] {
        let r = raw
            .hash(HashRequest {
                algorithm: 1,
                messages,
                messages_packed: packed,
                digests_to: None,
            })
            .await;
        assert_eq!(r.unwrap_err().code(), Code::InvalidArgument);
    }
    // A packed column whose item count is over the limit is refused before it is split.
    let r = raw
        .hash(HashRequest {
            algorithm: 1,
            messages: vec![],
            messages_packed: column(vec![0; 101], 1, vec![]),
            digests_to: None,
        })
        .await;
    assert_eq!(r.unwrap_err().code(), Code::ResourceExhausted);
    // Packed with ends: empty messages included.
    let r = raw
        .hash(HashRequest {
            algorithm: 0,
            messages: vec![],
            messages_packed: column(b"abcxyz".to_vec(), 0, vec![3, 3, 6]),
            digests_to: None,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(&r.packed_digests[..32], batchcrypt::sha256::digest(b"abc"));
    assert_eq!(&r.packed_digests[32..64], batchcrypt::sha256::digest(b""));
    assert_eq!(&r.packed_digests[64..], batchcrypt::sha256::digest(b"xyz"));
    // Items with wrong lengths are verdicts of their own; the others are still checked.
    let r = raw
        .verify_schnorr(VerifySchnorrRequest {
            messages: bs(&s.hashes[..3]),
            signatures: vec![b(&s.schnorr[0][..63]), b(s.schnorr[1]), b(s.schnorr[2])],
            public_keys: vec![b(s.xonly[0]), b(s.xonly[1]), b(&s.xonly[2][..31])],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.valid, [false, true, false]);
    assert_eq!(
        r.failures.iter().map(|f| f.index).collect::<Vec<_>>(),
        [0, 2]
    );
    assert!(
        r.failures[0].reason.contains("64 bytes"),
        "{:?}",
        r.failures
    );
    // An empty request is an empty reply.
    let r = raw
        .verify_schnorr(VerifySchnorrRequest::default())
        .await
        .unwrap();
    assert!(r.into_inner().valid.is_empty());
    // Unknown circuit and job.
    let r = raw
        .submit_proof(SubmitProofRequest {
            circuit_id: "nope".into(),
            ..Default::default()
        })
        .await;
    assert_eq!(r.unwrap_err().code(), Code::NotFound);
    let r = raw
        .get_job(JobRef {
            job_id: "nope".into(),
        })
        .await;
    assert_eq!(r.unwrap_err().code(), Code::NotFound);
    // A key that is not a .zkey.
    let r = raw
        .register_circuit(RegisterCircuitRequest {
            zkey: b(b"zkey\x01\x00\x00\x00garbage"),
            ..Default::default()
        })
        .await;
    assert_eq!(r.unwrap_err().code(), Code::InvalidArgument);
    // The server still serves.
    let d = client.hash(HashAlgorithm::Sha256, &[b"abc"]).await.unwrap();
    assert_eq!(d[0], batchcrypt::sha256::digest(b"abc"));
    bounded(server.shutdown()).await.unwrap();
}

/// Streams of requests: ECDSA and hash requests sent ahead of their replies get the library's
/// results in the requests' order; a malformed request ends the stream with its status after
/// the replies before it; the rate limit counts a stream's messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn streams_of_requests_reply_in_order_and_end_at_a_failure() {
    use batchcrypt_serve::client::column;
    let (server, mut client) = serve(config("streams")).await;
    let s = sigs(200);
    let want = library_ecdsa(&s);
    let request = |r: std::ops::Range<usize>| VerifyEcdsaRequest {
        hashes_packed: Some(column(&s.hashes[r.clone()])),
        signatures_packed: Some(column(&s.der[r.clone()])),
        public_keys_packed: Some(column(&s.keys[r])),
        ..Default::default()
    };
    let mut stream = bounded(client.verify_ecdsa_stream()).await.unwrap();
    // Ten requests of different sizes in flight at once, then their replies.
    let cuts = [0, 1, 20, 21, 60, 100, 101, 150, 170, 199, 200];
    for w in cuts.windows(2) {
        bounded(stream.send(request(w[0]..w[1]))).await.unwrap();
    }
    for w in cuts.windows(2) {
        let reply = bounded(stream.reply()).await.unwrap().expect("a reply");
        let valid: Vec<bool> = want[w[0]..w[1]].iter().map(|v| v.is_ok()).collect();
        assert_eq!(reply.valid, valid, "items {}..{}", w[0], w[1]);
    }
    // A good request, a malformed one (fewer keys than signatures), then another good one.
    let mut bad = request(0..10);
    bad.public_keys_packed = Some(column(&s.keys[0..9]));
    for r in [request(0..5), bad, request(5..10)] {
        let _ = bounded(stream.send(r)).await;
    }
    let first = bounded(stream.reply()).await.unwrap().expect("a reply");
    assert_eq!(first.valid.len(), 5);
    let e = bounded(stream.reply()).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e}");
    assert!(!matches!(bounded(stream.reply()).await, Ok(Some(_))));
    // More requests than the stream's buffers and windows hold (about 28 MB), the fourth
    // malformed: each_reply ends with its error after three replies, its sender not left waiting.
    let mut requests: Vec<_> = (0..1000).map(|_| request(0..200)).collect();
    requests[3].public_keys_packed = Some(column(&s.keys[0..9]));
    let mut replies = 0;
    let stream = bounded(client.verify_ecdsa_stream()).await.unwrap();
    let e = bounded(stream.each_reply(requests, |_| replies += 1))
        .await
        .unwrap_err();
    assert_eq!((e.code(), replies), (Code::InvalidArgument, 3), "{e}");

    // Hashes: SHA256d of messages of several lengths, over one stream.
    let mut hashes = bounded(client.hash_stream()).await.unwrap();
    for len in [0usize, 1, 55, 64, 200] {
        let messages: Vec<Vec<u8>> = (0..7u8).map(|i| vec![i; len]).collect();
        let reply = bounded(hashes.call(HashRequest {
            algorithm: HashAlgorithm::Sha256d as i32,
            messages_packed: Some(column(&messages)),
            ..Default::default()
        }))
        .await
        .unwrap();
        let want: Vec<u8> = messages
            .iter()
            .flat_map(|m| batchcrypt::sha256::digest(&batchcrypt::sha256::digest(m)))
            .collect();
        assert_eq!(reply.packed_digests, want, "messages of {len} bytes");
    }

    // Echoes: the reply's size as asked, zeros; over the limit ends the stream.
    let mut echoes = bounded(client.echo_stream()).await.unwrap();
    for (sent, asked) in [(0usize, 0u32), (16 << 10, 8 << 10), (5, 1 << 20)] {
        let reply = bounded(echoes.call(EchoRequest {
            payload: vec![7u8; sent].into(),
            reply_bytes: asked,
        }))
        .await
        .unwrap();
        assert_eq!(reply.payload, vec![0u8; asked as usize]);
    }
    let e = bounded(echoes.call(EchoRequest {
        payload: Default::default(),
        reply_bytes: (1 << 20) + 1,
    }))
    .await
    .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e}");
    bounded(server.shutdown()).await.unwrap();

    // The rate limit takes one per message: a stream cannot pass it.
    let mut c = config("streams-rate");
    c.rate_limit = 3;
    let (server, mut client) = serve(c).await;
    let mut stream = bounded(client.hash_stream()).await.unwrap();
    let mut codes = Vec::new();
    for _ in 0..12 {
        let r = HashRequest {
            algorithm: HashAlgorithm::Sha256 as i32,
            messages_packed: Some(column(&[b"x"])),
            ..Default::default()
        };
        match bounded(stream.call(r)).await {
            Ok(_) => codes.push(Code::Ok),
            Err(e) => {
                codes.push(e.code());
                break;
            }
        }
    }
    assert_eq!(codes.last(), Some(&Code::ResourceExhausted), "{codes:?}");
    bounded(server.shutdown()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_and_rate_limit() {
    let mut c = config("auth");
    c.token = Some("s3cret-token".into());
    c.rate_limit = 3;
    let (server, mut anonymous) = serve(c).await;
    let addr = server.addr.to_string();
    let e = anonymous
        .hash(HashAlgorithm::Sha256, &[b"x"])
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated);
    let opts = |t: &str| Options {
        token: Some(t.into()),
        ..Default::default()
    };
    let mut wrong = Client::connect_with(&addr, opts("s3cret-tokeN"))
        .await
        .unwrap();
    assert_eq!(
        wrong
            .hash(HashAlgorithm::Sha256, &[b"x"])
            .await
            .unwrap_err()
            .code(),
        Code::Unauthenticated
    );
    // Wait for the bucket to refill after the two refused calls.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let mut good = Client::connect_with(&addr, opts("s3cret-token"))
        .await
        .unwrap();
    let mut codes = Vec::new();
    for _ in 0..12 {
        codes.push(match good.hash(HashAlgorithm::Sha256, &[b"x"]).await {
            Ok(_) => Code::Ok,
            Err(s) => s.code(),
        });
    }
    assert_eq!(codes[0], Code::Ok);
    assert!(codes.contains(&Code::ResourceExhausted), "{codes:?}");
    assert!(codes
        .iter()
        .all(|c| matches!(c, Code::Ok | Code::ResourceExhausted)));
    bounded(server.shutdown()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exposed_listener_needs_tls_and_token() {
    let mut c = config("exposed");
    c.listen = "0.0.0.0:0".parse().unwrap();
    let e = start(engine(), c.clone()).await.err().expect("refused");
    assert!(e.contains("--tls-cert"), "{e}");
    c.listen = "127.0.0.1:0".parse().unwrap();
    c.metrics = Some("0.0.0.0:0".parse().unwrap());
    assert!(start(engine(), c).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unix_socket_clients_get_what_tcp_clients_get() {
    let mut c = config("unix");
    let path = c.prover.data_dir.join("serve.sock");
    // A stale socket file (a server gone) is replaced.
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    c.unix_socket = Some(path.clone());
    let (server, mut tcp) = serve(c.clone()).await;
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o660, "owner and group only");
    // A second server does not take a socket a live one answers on.
    c.metrics = None;
    c.prover.data_dir = data_dir("unix-second");
    let e = start(engine(), c).await.err().expect("refused");
    assert!(e.contains("already answers"), "{e}");

    let mut unix = bounded(Client::connect(&format!("unix:{}", path.display())))
        .await
        .expect("connects over the socket");
    assert!(bounded(unix.ready()).await.unwrap());
    let s = sigs(300);
    let want = library_ecdsa(&s);
    assert!(want.iter().any(|v| v.is_ok()) && want.iter().any(|v| v.is_err()));
    let (der, keys) = (slices(&s.der), slices(&s.keys));
    for client in [&mut unix, &mut tcp] {
        assert_eq!(served_ecdsa(client, &s.hashes, &der, &keys).await, want);
    }
    let got = bounded(unix.hash(HashAlgorithm::Sha256d, &der))
        .await
        .unwrap();
    for (m, d) in der.iter().zip(&got) {
        assert_eq!(*d, batchcrypt::sha256::digest_double(m));
    }
    // TLS is not offered on the socket: the client says so rather than failing to handshake.
    let e = Client::connect_with(
        &format!("unix:{}", path.display()),
        Options {
            tls_ca: Some(b"not used".to_vec()),
            ..Options::default()
        },
    )
    .await
    .err()
    .expect("refused");
    assert!(e.contains("without TLS"), "{e}");
    drop(unix);
    bounded(server.shutdown()).await.unwrap();
    assert!(!path.exists(), "the socket file goes with the server");
}

/// A raw frame: header (length, id, tag) and body.
fn raw_frame(id: u32, tag: u8, body: &[u8]) -> Vec<u8> {
    let mut f = (body.len() as u32).to_le_bytes().to_vec();
    f.extend_from_slice(&id.to_le_bytes());
    f.push(tag);
    f.extend_from_slice(body);
    f
}

/// Reads one raw frame: (id, tag, body); None at the connection's end.
async fn read_raw_frame(io: &mut tokio::net::UnixStream) -> Option<(u32, u8, Vec<u8>)> {
    use tokio::io::AsyncReadExt;
    let mut h = [0u8; batchcrypt_serve::frames::HEADER];
    io.read_exact(&mut h).await.ok()?;
    let len = u32::from_le_bytes(h[..4].try_into().unwrap()) as usize;
    let mut body = vec![0u8; len];
    io.read_exact(&mut body).await.ok()?;
    Some((u32::from_le_bytes(h[4..8].try_into().unwrap()), h[8], body))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn frames_socket_clients_get_what_grpc_clients_get() {
    use batchcrypt_serve::frames::{FramesClient, Kind, MAGIC};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut c = config("frames");
    let path = c.prover.data_dir.join("frames.sock");
    c.frames_socket = Some(path.clone());
    let grpc_path = c.prover.data_dir.join("grpc.sock");
    c.unix_socket = Some(grpc_path.clone());
    c.token = Some("frames-token".into());
    c.max_message_bytes = 1 << 20;
    c.max_request_items = 2000;
    let r = start(engine(), c).await.expect("server starts");
    let mut grpc = Client::connect_with(
        &r.addr.to_string(),
        Options {
            token: Some("frames-token".into()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o660, "owner and group only");

    // The token is the hello's: none or a wrong one is refused with the reason.
    for token in [None, Some("frames-tokeN")] {
        let e = bounded(FramesClient::connect(&path, token))
            .await
            .err()
            .expect("refused");
        assert!(e.contains("bearer token"), "{e}");
    }
    let frames = bounded(FramesClient::connect(&path, Some("frames-token")))
        .await
        .expect("connects");
    // A gRPC socket is not mistaken for a frames one, nor the reverse.
    let e = bounded(FramesClient::connect(&grpc_path, Some("frames-token")))
        .await
        .err()
        .expect("refused");
    assert!(e.contains("--frames-socket"), "{e}");
    let opts = Options {
        token: Some("frames-token".into()),
        ..Default::default()
    };
    if let Ok(c) = bounded(Client::connect_with(
        &format!("unix:{}", path.display()),
        opts,
    ))
    .await
    {
        assert!(bounded(c.ready()).await.is_err());
    }

    // Many requests at once over one connection, each checked against the same request's
    // gRPC reply and the library.
    let s = Arc::new(sigs(600));
    let want = library_ecdsa(&s);
    assert!(want.iter().any(|v| v.is_ok()) && want.iter().any(|v| v.is_err()));
    let mut tasks = Vec::new();
    for k in 0..12 {
        let (frames, s) = (frames.clone(), s.clone());
        tasks.push(tokio::spawn(async move {
            let r = 50 * k..50 * (k + 1);
            let q = batchcrypt_serve::client::ecdsa_request(
                EcdsaCurve::Secp256k1,
                &s.hashes[r.clone()],
                &s.der[r.clone()],
                &s.keys[r.clone()],
                SigFormat::Der,
                false,
            );
            let v = bounded(frames.call(&q)).await.unwrap();
            (r, q, batchcrypt_serve::client::verdicts(v))
        }));
    }
    for t in tasks {
        let (r, q, got) = t.await.unwrap();
        assert_eq!(got, want[r]);
        let by_grpc = bounded(grpc.verify_ecdsa_request(q)).await.unwrap();
        assert_eq!(got, by_grpc);
    }
    let msgs: Vec<Vec<u8>> = (0..300u32)
        .map(|i| i.to_le_bytes().repeat(i as usize % 40))
        .collect();
    let hashed = bounded(frames.call(&HashRequest {
        algorithm: HashAlgorithm::Sha256d as i32,
        messages: bs(&msgs),
        ..Default::default()
    }))
    .await
    .unwrap();
    for (m, d) in msgs.iter().zip(&hashed.digests) {
        assert_eq!(d[..], batchcrypt::sha256::digest_double(m));
    }
    let schnorr = bounded(frames.call(&batchcrypt_serve::client::schnorr_request(
        &s.hashes[..100],
        &s.schnorr[..100],
        &s.xonly[..100],
    )))
    .await
    .unwrap();
    let v = batchcrypt_serve::client::verdicts(schnorr);
    assert!((0..100).all(|i| v[i].is_ok() == (i % 13 != 2)), "{v:?}");
    // Requests larger than the socket takes at once, from several tasks at once: each is queued
    // whole and in order behind the others, and each reply reaches its own caller.
    let big: Vec<_> = (0..8u32)
        .map(|k| {
            let frames = frames.clone();
            tokio::spawn(async move {
                let q = EchoRequest {
                    payload: vec![k as u8; 700_000].into(),
                    reply_bytes: 1000 + k,
                };
                bounded(frames.call(&q)).await.unwrap().payload.len()
            })
        })
        .collect();
    for (k, t) in big.into_iter().enumerate() {
        assert_eq!(t.await.unwrap(), 1000 + k);
    }
    // A request the service refuses comes back with the gRPC call's code and text.
    let bad = HashRequest {
        algorithm: 99,
        ..Default::default()
    };
    let e = bounded(frames.call(&bad)).await.unwrap_err();
    let by_grpc = bounded(grpc.raw().hash(bad)).await.unwrap_err();
    assert_eq!((e.code(), e.message()), (by_grpc.code(), by_grpc.message()));

    // Malformed frames, on a raw connection.
    let raw = || async {
        let mut io = tokio::net::UnixStream::connect(&path).await.unwrap();
        io.write_all(MAGIC).await.unwrap();
        let mut m = [0u8; 8];
        io.read_exact(&mut m).await.unwrap();
        assert_eq!(&m, MAGIC);
        io
    };
    // A request before the hello: refused, and the connection closed.
    let mut io = bounded(raw()).await;
    io.write_all(&raw_frame(4, Kind::Echo as u8, b""))
        .await
        .unwrap();
    let (id, tag, _) = bounded(read_raw_frame(&mut io)).await.unwrap();
    assert_eq!((id, tag), (4, Code::Unauthenticated as u8));
    assert!(bounded(read_raw_frame(&mut io)).await.is_none());
    // After the hello: an unknown tag and an undecodable body are refused, the connection goes
    // on; a frame over the limit is refused from its header and the connection closed.
    let mut io = bounded(raw()).await;
    io.write_all(&raw_frame(0, 0, b"frames-token"))
        .await
        .unwrap();
    assert_eq!(
        bounded(read_raw_frame(&mut io)).await.unwrap(),
        (0, 0, vec![])
    );
    io.write_all(&raw_frame(1, 200, b"x")).await.unwrap();
    io.write_all(&raw_frame(2, Kind::Hash as u8, &[0xff; 7]))
        .await
        .unwrap();
    let echo = EchoRequest {
        payload: Bytes::from_static(b"hi"),
        reply_bytes: 3,
    };
    io.write_all(&raw_frame(
        3,
        Kind::Echo as u8,
        &prost::Message::encode_to_vec(&echo),
    ))
    .await
    .unwrap();
    let mut got = Vec::new();
    for _ in 0..3 {
        let (id, tag, body) = bounded(read_raw_frame(&mut io)).await.unwrap();
        got.push((id, tag, body));
    }
    got.sort();
    assert_eq!((got[0].0, got[0].1), (1, Code::InvalidArgument as u8));
    assert!(String::from_utf8_lossy(&got[0].2).contains("tag 200"));
    assert_eq!((got[1].0, got[1].1), (2, Code::InvalidArgument as u8));
    assert_eq!((got[2].0, got[2].1), (3, 0));
    let reply: EchoReply = prost::Message::decode(&got[2].2[..]).unwrap();
    assert_eq!(reply.payload.len(), 3);
    let mut over = ((1u32 << 20) + 1).to_le_bytes().to_vec();
    over.extend_from_slice(&[5, 0, 0, 0, Kind::Hash as u8]);
    io.write_all(&over).await.unwrap();
    let (id, tag, body) = bounded(read_raw_frame(&mut io)).await.unwrap();
    assert_eq!((id, tag), (5, Code::ResourceExhausted as u8));
    assert!(String::from_utf8_lossy(&body).contains("split"));
    assert!(bounded(read_raw_frame(&mut io)).await.is_none());
    // A client that sends without reading: the server stops reading its requests once the
    // replies owed pass its bound, and every reply is there when the client reads at last.
    let mut io = bounded(raw()).await;
    io.write_all(&raw_frame(0, 0, b"frames-token"))
        .await
        .unwrap();
    bounded(read_raw_frame(&mut io)).await.unwrap();
    let big = prost::Message::encode_to_vec(&EchoRequest {
        payload: Bytes::new(),
        reply_bytes: 1 << 20,
    });
    let sends = 40u32;
    let (mut rd, mut wr) = io.into_split();
    let writer = tokio::spawn(async move {
        for id in 0..sends {
            wr.write_all(&raw_frame(100 + id, Kind::Echo as u8, &big))
                .await
                .unwrap();
        }
        wr
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut seen = 0;
    while seen < sends {
        let mut h = [0u8; batchcrypt_serve::frames::HEADER];
        bounded(rd.read_exact(&mut h)).await.unwrap();
        let len = u32::from_le_bytes(h[..4].try_into().unwrap()) as usize;
        assert_eq!((h[8], len), (0, (1 << 20) + 4), "an echo reply of 1 MiB");
        let mut body = vec![0u8; len];
        bounded(rd.read_exact(&mut body)).await.unwrap();
        seen += 1;
    }
    drop(bounded(writer).await.unwrap());
    // A connection that is not this protocol is closed without an answer.
    let mut io = tokio::net::UnixStream::connect(&path).await.unwrap();
    io.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .await
        .unwrap();
    let mut buf = Vec::new();
    // Closed with the rest unread: an end, or a reset.
    match bounded(io.read_to_end(&mut buf)).await {
        Ok(n) => assert_eq!(n, 0),
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset),
    }
    // A client gone mid-request leaves the server serving the others.
    let mut io = bounded(raw()).await;
    io.write_all(&raw_frame(0, 0, b"frames-token"))
        .await
        .unwrap();
    bounded(read_raw_frame(&mut io)).await.unwrap();
    let q = batchcrypt_serve::client::ecdsa_request(
        EcdsaCurve::Secp256k1,
        &s.hashes[..200],
        &s.der[..200],
        &s.keys[..200],
        SigFormat::Der,
        false,
    );
    let whole = raw_frame(
        9,
        Kind::VerifyEcdsa as u8,
        &prost::Message::encode_to_vec(&q),
    );
    io.write_all(&whole[..whole.len() / 2]).await.unwrap();
    drop(io);
    let v = bounded(frames.call(&q)).await.unwrap();
    assert_eq!(batchcrypt_serve::client::verdicts(v), want[..200]);

    // The typed client sends its batched calls over the frames socket when given one (here a
    // second server's, whose item limit tells which one answered), the rest over gRPC.
    let (plain, _) = serve(config("frames-plain")).await;
    let mut routed = bounded(Client::connect_with(
        &plain.addr.to_string(),
        Options {
            token: Some("frames-token".into()),
            frames: Some(path.clone()),
            ..Default::default()
        },
    ))
    .await
    .unwrap();
    assert!(bounded(routed.ready()).await.unwrap());
    let (der, keys) = (slices(&s.der), slices(&s.keys));
    let n = 100;
    let got = bounded(routed.verify_ecdsa(
        EcdsaCurve::Secp256k1,
        &s.hashes[..n],
        &der[..n],
        &keys[..n],
        SigFormat::Der,
        false,
    ))
    .await
    .unwrap();
    assert_eq!(got, want[..n]);
    let many = bounded(routed.hash_many(
        HashAlgorithm::Sha256d,
        vec![
            batchcrypt_serve::client::column(&der[..3]),
            batchcrypt_serve::client::column(&der[3..5]),
        ],
    ))
    .await
    .unwrap();
    assert_eq!(many[1][..32], batchcrypt::sha256::digest_double(der[3]));
    let too_many = 2001;
    let e = bounded(routed.hash_packed(HashAlgorithm::Sha256, &vec![b"x"; too_many]))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::ResourceExhausted, "{e}");
    bounded(plain.shutdown()).await.unwrap();

    // Shutdown drains: the client's calls end, the socket file goes.
    bounded(r.shutdown()).await.unwrap();
    assert!(!path.exists(), "the socket file goes with the server");
    assert_eq!(
        bounded(frames.call(&echo)).await.unwrap_err().code(),
        Code::Unavailable
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_memory_carries_requests_and_digests() {
    let mut c = config("shm");
    let dir = data_dir("shm-regions");
    c.shared_memory = Some(dir.clone());
    let (server, mut client) = serve(c).await;
    let region = bounded(client.shared_memory(&dir, "t1", 8192))
        .await
        .expect("registered");
    let file = dir.join("batchcrypt-t1");
    assert!(file.exists());

    // Fixed-width messages in, digests out, nothing but the spans over the connection.
    let msgs: Vec<[u8; 80]> = (0..50u8).map(|i| [i; 80]).collect();
    region.write_at(&msgs.concat(), 0).unwrap();
    let (input, output) = (region.span(0, 4000), region.span(4000, 1600));
    let batch = bounded(client.hash_shared(HashAlgorithm::Sha256, input, 80, output))
        .await
        .unwrap();
    assert!(batch >= 50);
    let mut got = vec![0u8; 1600];
    region.read_at(&mut got, 4000).unwrap();
    for (m, d) in msgs.iter().zip(got.chunks(32)) {
        assert_eq!(d, batchcrypt::sha256::digest(m));
    }
    // Messages of several lengths (ends), SHA256d, over a stream; digests in the reply.
    let mut stream = bounded(client.hash_stream()).await.unwrap();
    let request = HashRequest {
        algorithm: HashAlgorithm::Sha256d as i32,
        messages: vec![],
        messages_packed: Some(Column {
            data: Bytes::new(),
            width: 0,
            ends: vec![3, 3, 80, 4000],
            shared: Some(input),
        }),
        digests_to: None,
    };
    let reply = bounded(stream.call(request)).await.unwrap();
    let joined = msgs.concat();
    for (i, (a, z)) in [(0, 3), (3, 3), (3, 80), (80, 4000)]
        .into_iter()
        .enumerate()
    {
        let d = &reply.packed_digests[32 * i..32 * (i + 1)];
        assert_eq!(d, batchcrypt::sha256::digest_double(&joined[a..z]));
    }
    drop(stream);
    // Any packed column may come from shared memory: ECDSA's hashes, verdicts as the library's.
    let s = sigs(40);
    let want = library_ecdsa(&s);
    region.write_at(&s.hashes.concat(), 5600).unwrap();
    let ecdsa = || {
        batchcrypt_serve::client::ecdsa_request(
            EcdsaCurve::Secp256k1,
            &s.hashes,
            &s.der,
            &s.keys,
            SigFormat::Der,
            false,
        )
    };
    let mut request = ecdsa();
    request.hashes_packed = Some(Column {
        data: Bytes::new(),
        width: 32,
        ends: vec![],
        shared: Some(region.span(5600, 32 * 40)),
    });
    let mut verdicts = Vec::new();
    for request in [request, {
        // A whole request's columns moved into the region by the client.
        let mut request = ecdsa();
        let end = region.share(&mut request, 0).unwrap();
        assert!(end > 32 * 40 && end <= 5600, "{end}");
        assert!(request.signatures_packed.as_ref().unwrap().data.is_empty());
        request
    }] {
        let reply = bounded(client.raw().verify_ecdsa(request)).await.unwrap();
        verdicts.push(batchcrypt_serve::client::verdicts(reply.into_inner()));
    }
    for got in &verdicts {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.is_ok(), w.is_ok());
        }
    }

    // Bad spans and names: clear codes, nothing read or written.
    let hash = |input: SharedSpan, output: Option<SharedSpan>, data: &[u8]| HashRequest {
        algorithm: HashAlgorithm::Sha256 as i32,
        messages: vec![],
        messages_packed: Some(Column {
            data: b(data),
            width: 80,
            ends: vec![],
            shared: Some(input),
        }),
        digests_to: output,
    };
    let span = |region, offset, length| SharedSpan {
        region,
        offset,
        length,
    };
    let id = region.id();
    for (request, code) in [
        (hash(span(id, 8000, 240), None, b""), Code::InvalidArgument), // past the end
        (
            hash(span(id, u64::MAX, 2), None, b""),
            Code::InvalidArgument,
        ), // offset overflows
        (hash(span(id ^ 1, 0, 80), None, b""), Code::NotFound),        // no such region
        (hash(span(id, 0, 80), None, &[0; 80]), Code::InvalidArgument), // data and a span
        (
            hash(span(id, 0, 160), Some(span(id, 4000, 33)), b""),
            Code::InvalidArgument,
        ),
        (
            hash(span(id, 0, 160), Some(span(id, 8190, 64)), b""),
            Code::InvalidArgument,
        ),
        (hash(span(id, 0, 65 << 20), None, b""), Code::OutOfRange), // over the message limit
    ] {
        let e = bounded(client.raw().hash(request)).await.unwrap_err();
        assert_eq!(e.code(), code, "{e:?}");
    }
    for (name, code) in [
        ("../etc/passwd", Code::InvalidArgument),
        ("t1", Code::InvalidArgument),
        ("batchcrypt-", Code::InvalidArgument),
        ("batchcrypt-a/b", Code::InvalidArgument),
        ("batchcrypt-absent", Code::NotFound),
        ("batchcrypt-link", Code::InvalidArgument),
    ] {
        if name == "batchcrypt-link" {
            std::os::unix::fs::symlink(&file, dir.join(name)).unwrap();
        }
        let e = bounded(
            client
                .raw()
                .register_shared_memory(RegisterSharedMemoryRequest { name: name.into() }),
        )
        .await
        .unwrap_err();
        assert_eq!(e.code(), code, "{name}: {e:?}");
    }
    // A file shrunk under its registration: the request fails, the server goes on.
    region.file().set_len(100).unwrap();
    let e = bounded(client.hash_shared(HashAlgorithm::Sha256, input, 80, output))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert!(e.message().contains("shrunk"), "{e:?}");
    let got = bounded(client.hash(HashAlgorithm::Sha256, &[b"abc"]))
        .await
        .unwrap();
    assert_eq!(got[0], batchcrypt::sha256::digest(b"abc"));
    // Released: unregistered and removed.
    bounded(client.release_shared_memory(region)).await.unwrap();
    assert!(!file.exists());
    let e = bounded(client.hash_shared(HashAlgorithm::Sha256, input, 80, output))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    bounded(server.shutdown()).await.unwrap();

    // Off unless asked for, and refused with a listener beyond loopback.
    let (server, mut client) = serve(config("shm-off")).await;
    let e = bounded(client.shared_memory(&dir, "t2", 64))
        .await
        .err()
        .expect("refused");
    assert_eq!(e.code(), Code::FailedPrecondition);
    assert!(
        !dir.join("batchcrypt-t2").exists(),
        "the client removes its file"
    );
    bounded(server.shutdown()).await.unwrap();
    let mut exposed = config("shm-exposed");
    exposed.listen = "0.0.0.0:0".parse().unwrap();
    exposed.allow_insecure = true;
    exposed.shared_memory = Some(dir);
    let e = start(engine(), exposed).await.err().expect("refused");
    assert!(e.contains("shared memory"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_leaves_the_server_serving() {
    let (server, client) = serve(config("away")).await;
    let s = sigs(2000);
    let hashes: Vec<[u8; 32]> = (0..40).flat_map(|_| s.hashes.clone()).collect();
    let der: Vec<&[u8]> = (0..40)
        .flat_map(|_| s.der.iter().map(|v| v.as_slice()))
        .collect();
    let keys: Vec<&[u8]> = (0..40)
        .flat_map(|_| s.keys.iter().map(|v| v.as_slice()))
        .collect();
    let mut c1 = client.clone();
    // Dropped a few milliseconds in: its request is still queued or running.
    let r = tokio::time::timeout(
        Duration::from_millis(5),
        c1.verify_ecdsa(
            EcdsaCurve::Secp256k1,
            &hashes,
            &der,
            &keys,
            SigFormat::Der,
            false,
        ),
    )
    .await;
    assert!(r.is_err(), "80,000 verifications do not finish in 5 ms");
    let mut c2 = client.clone();
    let der: Vec<&[u8]> = s.der[..50].iter().map(|v| v.as_slice()).collect();
    let keys: Vec<&[u8]> = s.keys[..50].iter().map(|v| v.as_slice()).collect();
    let got = bounded(c2.verify_ecdsa(
        EcdsaCurve::Secp256k1,
        &s.hashes[..50],
        &der,
        &keys,
        SigFormat::Der,
        false,
    ))
    .await
    .unwrap();
    let want = engine()
        .secp256k1()
        .verify_ecdsa(&s.hashes[..50], &der, &keys, &EcdsaOptions::default())
        .unwrap();
    assert_eq!(got, strings(want.value.results));
    bounded(server.shutdown()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aes_streams_match_the_library_and_reject_tampering() {
    use batchcrypt::aes::{stream, Key};
    let (server, mut client) = serve(config("aes")).await;
    let key_bytes = [7u8; 32];
    let key = Key::new(&key_bytes).unwrap();
    let data: Vec<u8> = (0..300_001u32).map(|i| (i * 31 % 251) as u8).collect();
    async fn call(
        client: &mut Client,
        start: AesStart,
        parts: Vec<Vec<u8>>,
    ) -> Result<Vec<u8>, tonic::Status> {
        let parts: Vec<Bytes> = parts.into_iter().map(Bytes::from).collect();
        let mut msgs = vec![AesRequest {
            part: Some(aes_request::Part::Start(start)),
        }];
        msgs.extend(parts.into_iter().map(|d| AesRequest {
            part: Some(aes_request::Part::Data(d)),
        }));
        let mut replies = client
            .raw()
            .aes(tokio_stream::iter(msgs))
            .await?
            .into_inner();
        let mut out = Vec::new();
        while let Some(r) = replies.message().await? {
            out.extend(r.data);
        }
        Ok(out)
    }
    let parts: Vec<Vec<u8>> = data.chunks(70_000).map(|c| c.to_vec()).collect();
    let sealed = bounded(call(
        &mut client,
        AesStart {
            key: b(key_bytes),
            mode: AesMode::GcmChunked as i32,
            decrypt: false,
            iv: Bytes::new(),
            chunk_log2: 0,
        },
        parts.clone(),
    ))
    .await
    .unwrap();
    let mut opened = Vec::new();
    stream::open(&engine().aes(), &key, &sealed[..], &mut opened, |_| {}).unwrap();
    assert_eq!(opened, data);
    let back = bounded(call(
        &mut client,
        AesStart {
            key: b(key_bytes),
            mode: AesMode::GcmChunked as i32,
            decrypt: true,
            iv: Bytes::new(),
            chunk_log2: 0,
        },
        vec![sealed.clone()],
    ))
    .await
    .unwrap();
    assert_eq!(back, data);
    let mut tampered = sealed.clone();
    let at = tampered.len() / 2;
    tampered[at] ^= 1;
    let e = bounded(call(
        &mut client,
        AesStart {
            key: b(key_bytes),
            mode: AesMode::GcmChunked as i32,
            decrypt: true,
            iv: Bytes::new(),
            chunk_log2: 0,
        },
        vec![tampered],
    ))
    .await
    .unwrap_err();
    assert_eq!(e.code(), Code::DataLoss, "{e}");
    // CTR: what the library writes.
    let iv = [9u8; 16];
    let got = bounded(call(
        &mut client,
        AesStart {
            key: b(key_bytes),
            mode: AesMode::Ctr as i32,
            decrypt: false,
            iv: b(iv),
            chunk_log2: 0,
        },
        parts,
    ))
    .await
    .unwrap();
    let mut want = Vec::new();
    stream::ctr(&engine().aes(), &key, &iv, &data[..], &mut want, |_| {}).unwrap();
    assert_eq!(got, want);
    // Chunks of the client's size; over 2^26 either way (the memory a stream holds) refused
    // before anything is allocated.
    let gcm = |decrypt, chunk_log2| AesStart {
        key: b(key_bytes),
        mode: AesMode::GcmChunked as i32,
        decrypt,
        iv: Bytes::new(),
        chunk_log2,
    };
    let small = bounded(call(&mut client, gcm(false, 12), vec![data.clone()]))
        .await
        .unwrap();
    assert_eq!(small[10], 12);
    let mut opened = Vec::new();
    stream::open(&engine().aes(), &key, &small[..], &mut opened, |_| {}).unwrap();
    assert_eq!(opened, data);
    let e = call(&mut client, gcm(false, 27), vec![data.clone()])
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e}");
    let mut huge = Vec::new();
    stream::seal(&engine().aes(), &key, 28, &data[..1000], &mut huge, |_| {}).unwrap();
    let e = call(&mut client, gcm(true, 0), vec![huge])
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e}");
    // The first message must say what to do.
    let e = call(
        &mut client,
        AesStart {
            key: b([1; 5]),
            ..Default::default()
        },
        vec![],
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    bounded(server.shutdown()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bitcoin_block_and_its_transactions() {
    let Some(d) = shared_folder("bitcoin/blocks") else {
        return;
    };
    let (server, mut client) = serve(config("block")).await;
    let raw = std::fs::read(d.join("testnet3-928816.raw")).unwrap();
    let block = batchcrypt::bitcoin::parse_block(&raw).unwrap();
    let spent =
        batchcrypt::bitcoin::spent::read_spent_file(&d.join("testnet3-928816.undo"), &block)
            .unwrap();
    let request = VerifyBlockRequest {
        block: b(&raw),
        spent: spent.iter().map(Into::into).collect(),
        network: Network::Test as i32,
        height: 928816,
        skip_proof_of_work: false,
        median_time_past: None,
    };
    let r = bounded(client.verify_block(request.clone())).await.unwrap();
    assert!(r.valid, "{}", r.reason);
    assert_eq!(r.height, 928816);
    assert_eq!((r.transactions, r.inputs), (block.txs.len() as u64, 8693));
    // The rules at its height and the signatures the scripts asked for, with their backends.
    assert!(r.rules.split(',').any(|f| f == "TAPROOT"), "{}", r.rules);
    assert!(r.ecdsa_checks + r.schnorr_checks > 0);
    assert!(!r.ecdsa_backend.is_empty() || !r.schnorr_backend.is_empty());
    assert!(r.scripts_us > 0);
    // The .undo format has no creation heights: the reply says what that left unchecked.
    assert_eq!(r.unchecked.len(), 1, "{:?}", r.unchecked);
    assert!(
        r.unchecked[0].starts_with("coinbase maturity"),
        "{:?}",
        r.unchecked
    );
    // A median time past at the block's own time: the header is too old.
    let time = batchcrypt::bitcoin::Header::parse(block.header).time;
    let mut early = request.clone();
    early.median_time_past = Some(time);
    let r = bounded(client.verify_block(early)).await.unwrap();
    assert!(
        !r.valid && r.reason.starts_with("time-too-old"),
        "{}",
        r.reason
    );
    early = request.clone();
    early.median_time_past = Some(time - 1);
    assert!(bounded(client.verify_block(early)).await.unwrap().valid);
    // One spent script changed: invalid.
    let mut bad = request;
    let i = bad.spent.len() / 2;
    let mut spk = bad.spent[i].script_pubkey.to_vec();
    *spk.last_mut().unwrap() ^= 1;
    bad.spent[i].script_pubkey = spk.into();
    let r = bounded(client.raw().verify_block(bad))
        .await
        .unwrap()
        .into_inner();
    assert!(!r.valid);

    // Its transactions as loose ones, from two clients at once, one with a wrong amount.
    let per_tx = batchcrypt::bitcoin::block::spent_per_tx(&block, &spent).unwrap();
    let txs: Vec<LooseTransaction> = block.txs[1..]
        .iter()
        .zip(&per_tx[1..])
        .map(|(tx, s)| LooseTransaction {
            tx: b(tx.raw),
            spent: s.iter().map(Into::into).collect(),
            flags: String::new(),
            next_height: None,
            tip_mtp: None,
        })
        .collect();
    let half = txs.len() / 2;
    let (mut c1, mut c2) = (client.clone(), client.clone());
    let (a, b) = (txs[..half].to_vec(), txs[half..].to_vec());
    let mut b_bad = b.clone();
    b_bad[0].spent[0].value += 1;
    let (ra, rb) = tokio::join!(
        c1.raw()
            .verify_transactions(VerifyTransactionsRequest { transactions: a }),
        c2.raw().verify_transactions(VerifyTransactionsRequest {
            transactions: b_bad
        })
    );
    let (ra, rb) = (ra.unwrap().into_inner(), rb.unwrap().into_inner());
    assert!(
        ra.verdicts.iter().all(|v| v.valid),
        "{:?}",
        ra.verdicts.iter().find(|v| !v.valid)
    );
    assert!(!rb.verdicts[0].valid);
    assert!(rb.verdicts[1..].iter().all(|v| v.valid));
    // Checked against the chain, they need their spent outputs' heights, which .undo lacks:
    // each verdict says so rather than passing them.
    let mut at_tip = txs[..4].to_vec();
    for t in &mut at_tip {
        (t.next_height, t.tip_mtp) = (Some(928816), Some(i64::from(time) - 1));
    }
    let r = bounded(client.raw().verify_transactions(VerifyTransactionsRequest {
        transactions: at_tip.clone(),
    }))
    .await
    .unwrap()
    .into_inner();
    for v in &r.verdicts {
        assert!(
            !v.valid && v.reason.contains("no creation heights"),
            "{v:?}"
        );
    }
    // A tip half given is refused as the call's argument.
    at_tip[0].tip_mtp = None;
    let e = bounded(client.raw().verify_transactions(VerifyTransactionsRequest {
        transactions: at_tip,
    }))
    .await
    .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    bounded(server.shutdown()).await.unwrap();
}

fn check_proof(zkey: &std::path::Path, reply: &ProofReply) {
    use batchcrypt::groth16;
    let job = reply.job.as_ref().unwrap();
    assert_eq!(job.state, JobState::Done as i32, "{job:?}");
    let key = groth16::AnyProvingKey::read(zkey).unwrap();
    assert!(key.verify(&reply.public_json, &reply.proof_json).unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn proofs_under_a_tiny_memory_budget_all_finish_once() {
    // A BN254 circuit and a BLS12-381 one, served side by side.
    let (Some(chain), Some(mix)) = (fixture("chain-10"), fixture("mix-bls12381")) else {
        return;
    };
    let mut c = config("proofs");
    c.prover.memory = 1; // every job needs more: they run one at a time, evicting each other's keys
    let data = c.prover.data_dir.clone();
    let (server, mut client) = serve(c).await;
    let metrics = server.metrics_addr.unwrap();
    let mut ids = Vec::new();
    for (d, curve) in [(&chain, "bn128"), (&mix, "bls12381")] {
        let r = client
            .register(std::fs::read(d.join("circuit.zkey")).unwrap(), "")
            .await
            .unwrap();
        assert_eq!(r.curve, curve);
        ids.push(r.circuit_id);
    }
    // Registering again gives the same circuit.
    let again = client
        .register(std::fs::read(chain.join("circuit.zkey")).unwrap(), "again")
        .await
        .unwrap();
    assert_eq!(again.circuit_id, ids[0]);
    let mut tasks = Vec::new();
    for j in 0..12usize {
        let mut client = client.clone();
        let (dir, id) = if j % 2 == 0 {
            (chain.clone(), ids[0].clone())
        } else {
            (mix.clone(), ids[1].clone())
        };
        tasks.push(tokio::spawn(async move {
            let w = std::fs::read(dir.join("witness.wtns")).unwrap();
            let reply = client
                .prove(&id, w, JobOptions::priority((j % 3) as i32))
                .await
                .unwrap();
            check_proof(&dir.join("circuit.zkey"), &reply);
            reply.job.unwrap().job_id
        }));
    }
    let mut jobs = Vec::new();
    for t in tasks {
        jobs.push(bounded(t).await.unwrap());
    }
    // A trace for each finished job.
    let t = client
        .raw()
        .job_trace(JobRef {
            job_id: jobs[0].clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(
        t.chrome_trace_json.contains("traceEvents") && t.chrome_trace_json.contains("queue wait")
    );
    // A witness of the other circuit (and curve) is refused, not queued.
    let e = client
        .submit(
            &ids[0],
            std::fs::read(mix.join("witness.wtns")).unwrap(),
            "",
            JobOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    let text = reqwest_metrics(metrics).await;
    let evictions = metric(&text, "batchcrypt_key_evictions_total");
    assert!(
        evictions >= 1.0,
        "keys were evicted under the tiny budget:\n{text}"
    );
    assert!(
        text.contains("batchcrypt_proof_jobs{state=\"done\"} 12"),
        "{text}"
    );
    bounded(server.shutdown()).await.unwrap();
    let (store, requeued) = Store::open(&data.join("jobs.sqlite")).unwrap();
    assert_eq!(requeued, 0);
    let rows = store.jobs().unwrap();
    assert_eq!(rows.len(), 12);
    for r in rows {
        assert_eq!(
            (r.state, r.completions, r.attempts),
            (JobState::Done, 1, 1),
            "{r:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn abandoned_waits_cancel_and_shutdown_drains_running_proofs() {
    let Some(chain) = fixture("chain-10") else {
        return;
    };
    let mut c = config("drain");
    c.prover.workers = 1;
    c.prover.hold = Duration::from_millis(1500);
    let data = c.prover.data_dir.clone();
    let (server, mut client) = serve(c).await;
    let id = client
        .register(std::fs::read(chain.join("circuit.zkey")).unwrap(), "chain")
        .await
        .unwrap()
        .circuit_id;
    let w = std::fs::read(chain.join("witness.wtns")).unwrap();
    let first = client
        .submit(&id, w.clone(), "first", JobOptions::default())
        .await
        .unwrap();
    let second = client
        .submit(&id, w.clone(), "second", JobOptions::default())
        .await
        .unwrap();
    // The same request id is the same job.
    assert_eq!(
        client
            .submit(&id, w.clone(), "second", JobOptions::default())
            .await
            .unwrap()
            .job_id,
        second.job_id
    );
    // A waiter that gives up on the second job (queued behind the first) cancels it.
    let gave_up = tokio::time::timeout(
        Duration::from_millis(300),
        client.wait(&second.job_id, true),
    )
    .await;
    assert!(gave_up.is_err());
    let mut state = JobState::Queued as i32;
    for _ in 0..100 {
        state = client.job(&second.job_id).await.unwrap().state;
        if state == JobState::Cancelled as i32 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(state, JobState::Cancelled as i32);
    // Stopping while the first runs: it finishes before the server is down.
    for _ in 0..200 {
        if client.job(&first.job_id).await.unwrap().state == JobState::Running as i32 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let third = client
        .submit(&id, w, "third", JobOptions::default())
        .await
        .unwrap();
    bounded(server.shutdown()).await.unwrap();
    let (store, requeued) = Store::open(&data.join("jobs.sqlite")).unwrap();
    assert_eq!(requeued, 0, "nothing was left running");
    let state = |j: &str| store.job(j).unwrap().unwrap().state;
    assert_eq!(state(&first.job_id), JobState::Done);
    assert_eq!(state(&second.job_id), JobState::Cancelled);
    assert_eq!(
        state(&third.job_id),
        JobState::Queued,
        "queued jobs stay for the next start"
    );
}

async fn reqwest_metrics(addr: std::net::SocketAddr) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(
        format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out
}

fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|v| v.trim().parse().ok()))
        .unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn priorities_order_the_queue_and_deadlines_expire() {
    let Some(chain) = fixture("chain-10") else {
        return;
    };
    let mut c = config("priority");
    c.prover.workers = 1;
    c.prover.hold = Duration::from_millis(400);
    let (server, mut client) = serve(c).await;
    let id = client
        .register(std::fs::read(chain.join("circuit.zkey")).unwrap(), "chain")
        .await
        .unwrap()
        .circuit_id;
    let w = std::fs::read(chain.join("witness.wtns")).unwrap();
    let running = client
        .submit(&id, w.clone(), "", JobOptions::default())
        .await
        .unwrap();
    for _ in 0..200 {
        if client.job(&running.job_id).await.unwrap().state == JobState::Running as i32 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Queued behind it: a low, a high priority job, and one that must start within 50 ms.
    let low = client
        .submit(&id, w.clone(), "", JobOptions::default())
        .await
        .unwrap();
    let high = client
        .submit(&id, w.clone(), "", JobOptions::priority(5))
        .await
        .unwrap();
    let within = JobOptions::default().within(Duration::from_millis(50));
    let late = client.submit(&id, w.clone(), "", within).await.unwrap();
    for j in [&running, &low, &high] {
        bounded(client.wait(&j.job_id, false)).await.unwrap();
    }
    let expired = bounded(client.wait(&late.job_id, false)).await.unwrap();
    assert_eq!(expired.job.unwrap().state, JobState::Expired as i32);
    // The high-priority job, submitted after the low one, waited less.
    let waited = |trace: &str| -> f64 {
        let v: serde_json::Value = serde_json::from_str(trace).unwrap();
        v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == "queue wait")
            .map(|e| e["dur"].as_f64().unwrap())
            .unwrap()
    };
    let trace = |j: &str| {
        let mut c = client.clone();
        let j = j.to_string();
        async move {
            c.raw()
                .job_trace(JobRef { job_id: j })
                .await
                .unwrap()
                .into_inner()
                .chrome_trace_json
        }
    };
    let (tl, th) = (trace(&low.job_id).await, trace(&high.job_id).await);
    assert!(
        waited(&th) < waited(&tl),
        "high {} µs, low {} µs",
        waited(&th),
        waited(&tl)
    );
    bounded(server.shutdown()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_and_token_off_loopback() {
    let dir = data_dir("tls");
    let cert =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .unwrap();
    std::fs::write(dir.join("cert.pem"), cert.cert.pem()).unwrap();
    std::fs::write(dir.join("key.pem"), cert.signing_key.serialize_pem()).unwrap();
    let mut c = config("tls");
    c.tls = Some((dir.join("cert.pem"), dir.join("key.pem")));
    c.token = Some("t0ken".into());
    let server = start(engine(), c).await.unwrap();
    let addr = server.addr.to_string();
    let options = Options {
        token: Some("t0ken".into()),
        tls_ca: Some(cert.cert.pem().into_bytes()),
        ..Default::default()
    };
    let mut client = Client::connect_with(&addr, options).await.unwrap();
    let d = client.hash(HashAlgorithm::Sm3, &[b"abc"]).await.unwrap();
    assert_eq!(d[0], batchcrypt::sm3::digest(b"abc"));
    // Plain HTTP/2 to a TLS listener gets no answer.
    let plain = Client::connect(&addr).await;
    let failed = match plain {
        Err(_) => true,
        Ok(mut p) => p.hash(HashAlgorithm::Sha256, &[b"x"]).await.is_err(),
    };
    assert!(failed);
    bounded(server.shutdown()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn metrics_count_calls_by_operation_and_code() {
    let (server, mut client) = serve(config("counts")).await;
    let metrics = server.metrics_addr.unwrap();
    let msgs: Vec<[u8; 64]> = (0..3u8).map(|i| [i; 64]).collect();
    for _ in 0..3 {
        let got = bounded(client.hash(HashAlgorithm::Sha256d, &msgs))
            .await
            .unwrap();
        assert_eq!(got.len(), 3);
    }
    // A stream's messages count as calls too.
    let stream = bounded(client.hash_stream()).await.unwrap();
    let request = HashRequest {
        algorithm: HashAlgorithm::Sha256 as i32,
        messages: msgs.iter().map(|m| Bytes::copy_from_slice(m)).collect(),
        ..Default::default()
    };
    let replies = bounded(stream.all(vec![request.clone(), request]))
        .await
        .unwrap();
    assert_eq!(replies.len(), 2);
    let e = bounded(client.raw().hash(HashRequest {
        algorithm: 9,
        ..Default::default()
    }))
    .await
    .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    let text = reqwest_metrics(metrics).await;
    let count = |code: &str| {
        metric(
            &text,
            &format!("batchcrypt_requests_total{{op=\"hash\",code=\"{code}\"}}"),
        )
    };
    assert_eq!(count("OK"), 5.0, "{text}");
    assert_eq!(count("InvalidArgument"), 1.0, "{text}");
    // The stream's two messages, and only they, timed from their reading to the connection.
    let stage = |stage: &str| {
        metric(
            &text,
            &format!("batchcrypt_stage_seconds_count{{op=\"hash\",stage=\"{stage}\"}}"),
        )
    };
    assert_eq!((stage("sent"), stage("total")), (2.0, 5.0), "{text}");
    assert!(
        text.contains("batchcrypt_queue_items{op=\"hash\"} 0"),
        "nothing left queued:\n{text}"
    );
    bounded(server.shutdown()).await.unwrap();
}

//! `batchcrypt serve` as a process, killed with SIGKILL in the middle of a proof and started
//! again on the same data: every accepted job finishes, exactly once, and its proof verifies;
//! and `batchcrypt client` against it. Every wait is bounded.

use batchcrypt_serve::client::{Client, JobOptions};
use batchcrypt_serve::proto::JobState;
use batchcrypt_testdata::zk_fixture as fixture;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn bin() -> PathBuf {
    std::env::var_os("BATCHCRYPT_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_batchcrypt").into())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The server, killed when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(data: &Path, port: u16, hold_ms: u64) -> Server {
    serve_with(data, port, hold_ms, &[])
}

fn serve_with(data: &Path, port: u16, hold_ms: u64, more: &[&std::ffi::OsStr]) -> Server {
    let child = Command::new(bin())
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--metrics-listen",
            "none",
        ])
        .arg("--data")
        .arg(data)
        .args(["--workers", "1"])
        .args(more)
        .env("BATCHCRYPT_SERVE_HOLD_MS", hold_ms.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("batchcrypt serve starts");
    Server(child)
}

async fn connect(port: u16) -> Client {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match Client::connect(&format!("127.0.0.1:{port}")).await {
            Ok(c) if c.ready().await.unwrap_or(false) => return c,
            _ if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(50)).await,
            Ok(_) => panic!("the server never became ready"),
            Err(e) => panic!("{e}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_proof_every_accepted_job_finishes_exactly_once() {
    let Some(chain) = fixture("chain-10") else {
        return;
    };
    let data = std::env::temp_dir().join(format!("batchcrypt-serve-kill-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    let port = free_port();
    let zkey = std::fs::read(chain.join("circuit.zkey")).unwrap();
    let witness = std::fs::read(chain.join("witness.wtns")).unwrap();

    // Each proof holds 700 ms after it starts: the kill lands mid-proof.
    let mut server = serve(&data, port, 700);
    let mut c = connect(port).await;
    let circuit = c.register(zkey.clone(), "chain").await.unwrap().circuit_id;
    let mut jobs = Vec::new();
    for i in 0..4 {
        let j = c
            .submit(
                &circuit,
                witness.clone(),
                &format!("req-{i}"),
                JobOptions::default(),
            )
            .await
            .unwrap();
        jobs.push(j.job_id);
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if c.job(&jobs[0]).await.unwrap().state == JobState::Running as i32 {
            break;
        }
        assert!(Instant::now() < deadline, "the first job never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server.0.kill().unwrap(); // SIGKILL
    server.0.wait().unwrap();
    drop(server);

    let _server = serve(&data, port, 0);
    let mut c = connect(port).await;
    // Resubmitting under the same request ids finds the same jobs; nothing runs twice.
    for (i, id) in jobs.iter().enumerate() {
        let j = c
            .submit(
                &circuit,
                witness.clone(),
                &format!("req-{i}"),
                JobOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(&j.job_id, id);
    }
    let key = batchcrypt::groth16::ProvingKey::<batchcrypt::bn254::Bn254>::read(
        chain.join("circuit.zkey"),
    )
    .unwrap();
    for id in &jobs {
        let r = tokio::time::timeout(Duration::from_secs(120), c.wait(id, false))
            .await
            .expect("bounded")
            .unwrap();
        let job = r.job.clone().unwrap();
        assert_eq!(job.state, JobState::Done as i32, "{job:?}");
        let proof = batchcrypt::groth16::Proof::from_json(&r.proof_json).unwrap();
        let public = batchcrypt::groth16::public_from_json(&r.public_json).unwrap();
        assert!(batchcrypt::groth16::verify(&key.vk, &public, &proof).unwrap());
    }
    // The interrupted job ran twice and was recorded once; the others ran once.
    assert_eq!(c.job(&jobs[0]).await.unwrap().attempts, 2);
    drop(_server);
    let (store, _) = batchcrypt_serve::store::Store::open(&data.join("jobs.sqlite")).unwrap();
    let rows = store.jobs().unwrap();
    assert_eq!(rows.len(), 4);
    for r in rows {
        assert_eq!((r.state, r.completions), (JobState::Done, 1), "{r:?}");
    }

    // The command-line client against a fresh server on the same data: the circuit is still
    // registered, proofs come back as files.
    let _server = serve(&data, port, 0);
    connect(port).await;
    let dir = data.join("cli");
    std::fs::create_dir_all(&dir).unwrap();
    let o = Command::new(bin())
        .args([
            "client",
            "--server",
            &format!("127.0.0.1:{port}"),
            "prove",
            &circuit,
            "--priority",
            "2",
            "--deadline",
            "600",
        ])
        .arg(chain.join("witness.wtns"))
        .arg(dir.join("proof.json"))
        .arg(dir.join("public.json"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let proof = batchcrypt::groth16::Proof::from_json(
        &std::fs::read_to_string(dir.join("proof.json")).unwrap(),
    )
    .unwrap();
    let public = batchcrypt::groth16::public_from_json(
        &std::fs::read_to_string(dir.join("public.json")).unwrap(),
    )
    .unwrap();
    assert!(batchcrypt::groth16::verify(&key.vk, &public, &proof).unwrap());
    std::fs::write(dir.join("ids.txt"), "abc\nhello\n").unwrap();
    let o = Command::new(bin())
        .args([
            "client",
            "--server",
            &format!("127.0.0.1:{port}"),
            "hash",
            "--lines",
        ])
        .arg(dir.join("ids.txt"))
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).lines().next(),
        Some("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    );
    let _ = std::fs::remove_dir_all(&data);
}

/// `batchcrypt client hash` and `verify-*` on files of more lines than a request holds: the lines
/// go in requests over one stream, and every result comes back in the file's order; the same
/// through shared memory, over the frames socket, and both; `ping`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_commands_send_a_file_in_requests_and_print_in_order() {
    let data = std::env::temp_dir().join(format!("batchcrypt-serve-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    let shm = data.join("shm");
    std::fs::create_dir_all(&shm).unwrap();
    let port = free_port();
    let frames = data.join("frames.sock");
    let _server = serve_with(
        &data,
        port,
        0,
        &[
            "--shared-memory".as_ref(),
            shm.as_ref(),
            "--frames-socket".as_ref(),
            frames.as_ref(),
        ],
    );
    connect(port).await;
    let run = |per: &str, args: &[&str], file: &Path, (shared, framed): (bool, bool)| {
        let mut c = Command::new(bin());
        c.args(["client", "--server", &format!("127.0.0.1:{port}")])
            .args(["--per-request", per]);
        if shared {
            c.arg(format!("--shared-memory={}", shm.display()));
        }
        if framed {
            c.arg("--frames").arg(&frames);
        }
        c.args(args).arg(file).output().unwrap()
    };
    // Each command through the connection, then through shared memory, over the frames socket
    // and both: the same lines.
    let client = |per: &str, args: &[&str], file: &Path| {
        let o = run(per, args, file, (false, false));
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        for via in [(true, false), (false, true), (true, true)] {
            let other = run(per, args, file, via);
            assert!(
                other.status.success(),
                "{}",
                String::from_utf8_lossy(&other.stderr)
            );
            assert_eq!(
                String::from_utf8_lossy(&other.stdout),
                String::from_utf8_lossy(&o.stdout),
                "{args:?} (shared memory, frames): {via:?}"
            );
        }
        String::from_utf8(o.stdout).unwrap()
    };

    // 1,000 identifiers of different lengths, 64 to a request; among them an empty line and
    // one ended by "\r\n", read as `batchcrypt sha256 --lines` reads them.
    let mut ids: Vec<String> = (0..1000).map(|i| format!("id-{}", i * 7919)).collect();
    ids[10].clear();
    ids[20].push('\r');
    let file = data.join("ids.txt");
    std::fs::write(&file, ids.join("\n")).unwrap();
    let out = client("64", &["hash", "--double", "--lines"], &file);
    let want: Vec<String> = ids
        .iter()
        .map(|m| m.trim_end_matches('\r'))
        .map(|m| hex::encode(batchcrypt::sha256::digest_double(m.as_bytes())))
        .collect();
    assert_eq!(out.lines().collect::<Vec<_>>(), want);
    let local = Command::new(bin())
        .args(["sha256", "--double", "--lines"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(local.status.success());
    assert_eq!(String::from_utf8(local.stdout).unwrap(), out);

    // ECDSA and BIP340 signatures by keys of their own (secp256k1), every seventh ECDSA and
    // every fourth BIP340 signature with its last byte altered.
    use secp256k1::{Keypair, Message, PublicKey, SecretKey};
    let signed = |i: usize| {
        let mut seed = [7u8; 32];
        seed[..8].copy_from_slice(&(i as u64 + 1).to_le_bytes());
        let (sk, hash) = (
            SecretKey::from_secret_bytes(seed).unwrap(),
            batchcrypt::sha256::digest(&seed),
        );
        let der = secp256k1::ecdsa::sign(Message::from_digest(hash), &sk)
            .serialize_der()
            .to_vec();
        let kp = Keypair::from_secret_key(&sk);
        let schnorr = secp256k1::schnorr::sign_no_aux_rand(&hash, &kp)
            .to_byte_array()
            .to_vec();
        let (key, xonly) = (
            PublicKey::from_secret_key(&sk).serialize(),
            kp.x_only_public_key().0.to_byte_array(),
        );
        (hash, der, key, schnorr, xonly)
    };
    let altered = |mut sig: Vec<u8>| {
        *sig.last_mut().unwrap() ^= 1;
        sig
    };
    let mut lines = Vec::new();
    for i in 0..300 {
        let (h, der, key, ..) = signed(i);
        let der = if i % 7 == 3 { altered(der) } else { der };
        lines.push(format!(
            "{} {} {}",
            hex::encode(h),
            hex::encode(der),
            hex::encode(key)
        ));
    }
    let file = data.join("ecdsa.txt");
    std::fs::write(&file, lines.join("\n")).unwrap();
    // Each line's verdict, in order: valid exactly where `good(line index)`.
    let check = |out: String, n: usize, good: &dyn Fn(usize) -> bool| {
        let verdicts: Vec<&str> = out.lines().collect();
        assert_eq!(verdicts.len(), n);
        for (i, v) in verdicts.iter().enumerate() {
            assert_eq!(*v == "valid", good(i), "line {}: {v}", i + 1);
        }
    };
    check(client("16", &["verify-ecdsa"], &file), 300, &|i| i % 7 != 3);

    // BIP340, 3 to a request.
    let lines: Vec<String> = (0..20)
        .map(|i| {
            let (h, _, _, sig, xonly) = signed(i);
            let sig = if i % 4 == 1 { altered(sig) } else { sig };
            format!(
                "{} {} {}",
                hex::encode(h),
                hex::encode(sig),
                hex::encode(xonly)
            )
        })
        .collect();
    let file = data.join("schnorr.txt");
    std::fs::write(&file, lines.join("\n")).unwrap();
    check(client("3", &["verify-schnorr"], &file), 20, &|i| i % 4 != 1);

    // Every region was released, its file removed; a directory the server does not use is
    // refused with a hint.
    let left: Vec<_> = std::fs::read_dir(&shm).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
    // `hash` of the file with `option`: it fails, and says so with `hint`.
    let refused = |option: &[&std::ffi::OsStr], hint: &str| {
        let o = Command::new(bin())
            .args(["client", "--server", &format!("127.0.0.1:{port}")])
            .args(option)
            .args(["hash", "--lines"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(!o.status.success());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(hint), "{err}");
    };
    let elsewhere = format!("--shared-memory={}", data.display());
    refused(&[elsewhere.as_ref()], "started with --shared-memory");
    // So is a frames socket no server answers on.
    let nothing = data.join("no-such.sock");
    refused(&["--frames".as_ref(), nothing.as_ref()], "--frames-socket");

    // Round trips that compute nothing; a reply over the echo's limit is refused with a reason.
    let ping = |args: &[&str]| {
        Command::new(bin())
            .args(["client", "--server", &format!("127.0.0.1:{port}"), "ping"])
            .args(args)
            .output()
            .unwrap()
    };
    let o = ping(&["--count", "50"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(
        out.starts_with("50 round trips of 16384 bytes up and 8192 down") && out.contains("p99"),
        "{out}"
    );
    let o = ping(&["--count", "1", "--reply-bytes", "2000000"]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("over the echo's limit"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let _ = std::fs::remove_dir_all(&data);
}

/// `batchcrypt client encrypt`, `decrypt`, `verify-sm2`, `verify-tx` and `verify-block` against a
/// server process give what the local commands give on the same input.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn served_commands_give_what_the_local_ones_give() {
    let data = std::env::temp_dir().join(format!("batchcrypt-serve-same-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    std::fs::create_dir_all(&data).unwrap();
    let port = free_port();
    let _server = serve(&data, port, 0);
    connect(port).await;
    let server = format!("127.0.0.1:{port}");
    let run = |args: &[&std::ffi::OsStr]| Command::new(bin()).args(args).output().unwrap();
    let client = |args: &[&std::ffi::OsStr]| {
        let mut all: Vec<&std::ffi::OsStr> =
            vec!["client".as_ref(), "--server".as_ref(), server.as_ref()];
        all.extend(args);
        run(&all)
    };
    let ok = |o: &std::process::Output| {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    let p = |name: &str| data.join(name).into_os_string();

    // AES: 3 MB (several of the client's 1 MiB messages, and chunks of 2^16 bytes), each way.
    let plain: Vec<u8> = (0..3_000_001u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    std::fs::write(data.join("plain"), &plain).unwrap();
    std::fs::write(data.join("k.hex"), "000102030405060708090a0b0c0d0e0f\n").unwrap();
    let aes = |via_server: bool, args: &[&str], input: &str, output: &str| {
        let mut a: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
        a.extend([
            "--key-file".into(),
            p("k.hex"),
            "-i".into(),
            p(input),
            "-o".into(),
            p(output),
        ]);
        let a: Vec<&std::ffi::OsStr> = a.iter().map(|s| s.as_os_str()).collect();
        if via_server {
            client(&a)
        } else {
            run(&a)
        }
    };
    let read = |name: &str| std::fs::read(data.join(name)).unwrap();
    ok(&aes(
        true,
        &["encrypt", "--chunk-log2", "16"],
        "plain",
        "served.bcg",
    ));
    ok(&aes(false, &["decrypt"], "served.bcg", "opened"));
    assert_eq!(read("opened"), plain);
    ok(&aes(false, &["encrypt"], "plain", "local.bcg"));
    ok(&aes(true, &["decrypt"], "local.bcg", "opened-served"));
    assert_eq!(read("opened-served"), plain);
    let ctr = ["--mode", "ctr", "--iv", "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"];
    ok(&aes(
        true,
        &[&["encrypt"][..], &ctr].concat(),
        "plain",
        "ctr-served",
    ));
    ok(&aes(
        false,
        &[&["encrypt"][..], &ctr].concat(),
        "plain",
        "ctr-local",
    ));
    assert_eq!(read("ctr-served"), read("ctr-local"));
    // One byte changed: no output file, and the reason.
    let mut bad = read("local.bcg");
    bad[2_000_000] ^= 1;
    std::fs::write(data.join("bad.bcg"), bad).unwrap();
    let o = aes(true, &["decrypt"], "bad.bcg", "never");
    assert!(!o.status.success());
    assert!(!data.join("never").exists());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("failed authentication"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Chunks over what the server holds, either way: refused with the range.
    let o = aes(true, &["encrypt", "--chunk-log2", "28"], "plain", "never");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("out of range"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    ok(&aes(
        false,
        &["encrypt", "--chunk-log2", "28"],
        "plain",
        "huge.bcg",
    ));
    let o = aes(true, &["decrypt"], "huge.bcg", "never");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("over the 2^26 accepted"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!data.join("never").exists());

    // SM2, signed by OpenSSL (with the empty identifier), every third signature altered.
    use openssl::ec::{EcGroup, EcKey, PointConversionForm};
    let group = EcGroup::from_curve_name(openssl::nid::Nid::SM2).unwrap();
    let mut ctx = openssl::bn::BigNumContext::new().unwrap();
    let lines: Vec<String> = (0..12)
        .map(|i| {
            let ec = EcKey::generate(&group).unwrap();
            let key = ec
                .public_key()
                .to_bytes(&group, PointConversionForm::COMPRESSED, &mut ctx)
                .unwrap();
            let pkey = openssl::pkey::PKey::from_ec_key(ec).unwrap();
            let msg = format!("invoice {i}");
            let mut signer =
                openssl::sign::Signer::new(openssl::hash::MessageDigest::sm3(), &pkey).unwrap();
            signer.update(msg.as_bytes()).unwrap();
            let mut sig = signer.sign_to_vec().unwrap();
            if i % 3 == 2 {
                *sig.last_mut().unwrap() ^= 1;
            }
            format!(
                "{} {} {}",
                hex::encode(msg),
                hex::encode(sig),
                hex::encode(key)
            )
        })
        .collect();
    std::fs::write(data.join("sm2.txt"), lines.join("\n")).unwrap();
    let o = client(&[
        "--per-request".as_ref(),
        "5".as_ref(),
        "verify-sm2".as_ref(),
        "--id".as_ref(),
        "".as_ref(),
        p("sm2.txt").as_os_str(),
    ]);
    ok(&o);
    let out = String::from_utf8(o.stdout).unwrap();
    let verdicts: Vec<&str> = out.lines().collect();
    assert_eq!(verdicts.len(), 12);
    for (i, v) in verdicts.iter().enumerate() {
        assert_eq!(*v == "valid", i % 3 != 2, "line {}: {v}", i + 1);
    }
    // Under GM/T's default identifier, which these were not signed with: none is valid.
    let o = client(&["verify-sm2".as_ref(), p("sm2.txt").as_os_str()]);
    ok(&o);
    assert!(String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .all(|v| v.starts_with("invalid")));

    // Loose transactions: the same JSON lines as the local command's. A version 0 witness
    // program spent without a witness passes with no rules named (NONE) and fails under the
    // default, every consensus rule.
    let tx = "0100000001000000000000000000000000000000000000000000000000000000000000000001000000000000000001e803000000000000015100000000";
    let p2wpkh = format!("0014{}", "ab".repeat(20));
    let txs = format!(
        "{{\"tx\":\"{tx}\",\"spent\":[{{\"value\":2000,\"script_pubkey\":\"51\"}}]}}\n\
         {{\"tx\":\"{tx}\",\"spent\":[{{\"value\":2000,\"script_pubkey\":\"00\"}}],\"flags\":\"P2SH\"}}\n\
         {{\"tx\":\"{tx}\",\"spent\":[{{\"value\":2000,\"script_pubkey\":\"{p2wpkh}\"}}],\"flags\":\"NONE\"}}\n\
         {{\"tx\":\"{tx}\",\"spent\":[{{\"value\":2000,\"script_pubkey\":\"{p2wpkh}\"}}]}}\n\
         {{\"tx\":\"{tx}\",\"spent\":[{{\"value\":10,\"script_pubkey\":\"51\"}}]}}\n"
    );
    std::fs::write(data.join("txs.jsonl"), txs).unwrap();
    let local = run(&[
        "bitcoin".as_ref(),
        "verify-tx".as_ref(),
        p("txs.jsonl").as_os_str(),
    ]);
    let served = client(&["verify-tx".as_ref(), p("txs.jsonl").as_os_str()]);
    ok(&local);
    ok(&served);
    assert_eq!(
        String::from_utf8_lossy(&served.stdout),
        String::from_utf8_lossy(&local.stdout)
    );
    let valid: Vec<bool> = String::from_utf8_lossy(&local.stdout)
        .lines()
        .map(|l| l.contains("\"valid\":true"))
        .collect();
    assert_eq!(valid, [true, false, true, false, false]);

    // Real blocks with their spent outputs in two formats; and one given a median time past
    // that its own time does not pass.
    if let Some(d) = batchcrypt_testdata::shared_folder("bitcoin/blocks") {
        let report = |o: &std::process::Output| -> Vec<String> {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter(|l| {
                    ["block ", "rules ", "size ", "unchecked ", "verdict "]
                        .iter()
                        .any(|k| l.starts_with(k))
                })
                .map(String::from)
                .collect()
        };
        let block_time = |name: &str| {
            let raw = std::fs::read(d.join(name)).unwrap();
            u32::from_le_bytes(raw[68..72].try_into().unwrap()).to_string()
        };
        for (block, spent, more) in [
            ("mainnet-367891.raw", "mainnet-367891.spent.json", None),
            ("testnet3-928816.raw", "testnet3-928816.undo", None),
            (
                "mainnet-367891.raw",
                "mainnet-367891.spent.json",
                Some(block_time("mainnet-367891.raw")),
            ),
        ] {
            let mut args: Vec<std::ffi::OsString> =
                vec![d.join(block).into(), "--spent".into(), d.join(spent).into()];
            if let Some(t) = &more {
                args.extend(["--median-time-past".into(), t.into()]);
            }
            let args: Vec<&std::ffi::OsStr> = args.iter().map(|s| s.as_os_str()).collect();
            let local = run(&[&["bitcoin".as_ref(), "verify-block".as_ref()][..], &args].concat());
            let served = client(&[&["verify-block".as_ref()][..], &args].concat());
            assert_eq!(report(&served), report(&local), "{block}");
            assert_eq!(served.status.code(), local.status.code(), "{block}");
            let verdict = report(&local).pop().unwrap();
            if more.is_some() {
                assert!(
                    verdict.starts_with("verdict    INVALID: time-too-old"),
                    "{verdict}"
                );
                assert_eq!(local.status.code(), Some(1));
            } else {
                assert_eq!(verdict, "verdict    VALID", "{block}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&data);
}

/// `batchcrypt psi --server`: one party hashes and multiplies on a server process, the other in
/// its own; both write the intersection. A server that is not there is an error that says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_psi_party_multiplies_on_the_server() {
    let data = std::env::temp_dir().join(format!("batchcrypt-serve-psi-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    std::fs::create_dir_all(&data).unwrap();
    let port = free_port();
    let _server = serve(&data, port, 0);
    let mut client = connect(port).await;
    // The client's two calls give the library's points; a point off the curve gives None.
    let engine = batchcrypt::Engine::with_backend(batchcrypt::BackendChoice::Cpu);
    let (key, msgs) = ([9u8; 32], [&b"alice"[..], b"", b"bob"]);
    let dst = batchcrypt::sm2::DEFAULT_DST;
    let want = engine
        .sm2()
        .hash_to_curve_mul(&key, &msgs, dst)
        .unwrap()
        .value;
    let got = client
        .sm2_hash_to_curve_mul(&key, &msgs, dst)
        .await
        .unwrap();
    assert_eq!(got, want);
    let mut points = want.clone();
    points[1][0] = 7;
    let want = engine.sm2().mul_compressed(&key, &points).unwrap().value;
    assert_eq!(want[1], None);
    assert_eq!(
        client.sm2_mul_compressed(&key, &points).await.unwrap(),
        want
    );
    let set = |name: &str, ids: &mut dyn Iterator<Item = u32>| {
        let lines: Vec<String> = ids.map(|i| format!("member-{i}")).collect();
        std::fs::write(data.join(name), lines.join("\n") + "\n").unwrap();
        data.join(name)
    };
    let (a, b) = (
        set("a.txt", &mut (0..900)),
        set("b.txt", &mut (600..1400).rev()),
    );
    let peer = format!("127.0.0.1:{}", free_port());
    let party = |role: &str, input: &Path, output: &str, more: &[&str]| {
        Command::new(bin())
            .args([
                "psi",
                role,
                &peer,
                "--quiet",
                "--timeout",
                "30",
                "--chunk",
                "128",
            ])
            .arg("-i")
            .arg(input)
            .arg("-o")
            .arg(data.join(output))
            .args(more)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let server = format!("127.0.0.1:{port}");
    let la = party("--listen", &a, "a.out", &["--server", &server]);
    let lb = party("--connect", &b, "b.out", &["--backend", "cpu"]);
    for o in [
        la.wait_with_output().unwrap(),
        lb.wait_with_output().unwrap(),
    ] {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let read = |name: &str| std::fs::read_to_string(data.join(name)).unwrap();
    let want = |ids: &mut dyn Iterator<Item = u32>| {
        ids.map(|i| format!("member-{i}\n")).collect::<String>()
    };
    assert_eq!(read("a.out"), want(&mut (600..900)));
    assert_eq!(read("b.out"), want(&mut (600..900).rev()));

    let nobody = format!("127.0.0.1:{}", free_port());
    let o = party("--listen", &a, "never.out", &["--server", &nobody])
        .wait_with_output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("is `batchcrypt serve` running there?"),
        "{err}"
    );
    assert!(!data.join("never.out").exists());
    let _ = std::fs::remove_dir_all(&data);
}

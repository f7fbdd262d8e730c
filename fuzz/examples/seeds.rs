//! Writes the seed corpus of every fuzz target into fuzz/seeds/<target>/: valid inputs made with
//! the library and the reference crates (real signatures, a regtest block that validates, packed
//! service requests...), so the fuzzer starts past the first checks. Deterministic: run it again
//! after a format changes (`cargo run --manifest-path fuzz/Cargo.toml --example seeds`).

use batchcrypt::bitcoin::block::{verify_block, BlockContext};
use batchcrypt::bitcoin::script::{push_data, Flags};
use batchcrypt::bitcoin::sighash::{self, tagged_hash, Precomputed};
use batchcrypt::bitcoin::spent::encode_core_block_undo;
use batchcrypt::bitcoin::tx::write_compact_size;
use batchcrypt::bitcoin::validate::{Network, PrevMedianTime};
use batchcrypt::bitcoin::{parse_block, parse_tx, SpentOutput, TxOut};
use batchcrypt::psi::wire::{encode, Frame, Hello};
use batchcrypt::{Backend, BackendChoice, Engine};
use batchcrypt_serve::proto::{self, Column};
use prost::Message;
use secp256k1::{Keypair, Message as Msg, PublicKey, Scalar, SecretKey};
use std::path::{Path, PathBuf};

fn write(target: &str, name: &str, bytes: &[u8]) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds").join(target);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(name), bytes).unwrap();
}

/// Bytes from a fixed generator (splitmix64), for the targets whose input is arbitrary choices.
fn pattern(n: usize, seed: u64) -> Vec<u8> {
    let mut z = seed;
    (0..n)
        .map(|_| {
            z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut x = z;
            x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (x ^ (x >> 31)) as u8
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Transactions

struct In {
    script_sig: Vec<u8>,
    witness: Vec<Vec<u8>>,
}

fn tx_bytes(inputs: &[In], outputs: &[(i64, Vec<u8>)], coinbase: bool) -> Vec<u8> {
    let segwit = inputs.iter().any(|i| !i.witness.is_empty());
    let mut t = 2u32.to_le_bytes().to_vec();
    if segwit {
        t.extend_from_slice(&[0, 1]);
    }
    write_compact_size(&mut t, inputs.len() as u64);
    for (k, i) in inputs.iter().enumerate() {
        if coinbase {
            t.extend_from_slice(&[0; 32]);
            t.extend_from_slice(&u32::MAX.to_le_bytes());
        } else {
            t.extend_from_slice(&[0x11 + k as u8; 32]);
            t.extend_from_slice(&(k as u32).to_le_bytes());
        }
        write_compact_size(&mut t, i.script_sig.len() as u64);
        t.extend_from_slice(&i.script_sig);
        t.extend_from_slice(&0xffff_fffeu32.to_le_bytes());
    }
    write_compact_size(&mut t, outputs.len() as u64);
    for (v, spk) in outputs {
        t.extend_from_slice(&v.to_le_bytes());
        write_compact_size(&mut t, spk.len() as u64);
        t.extend_from_slice(spk);
    }
    if segwit {
        for i in inputs {
            write_compact_size(&mut t, i.witness.len() as u64);
            for w in &i.witness {
                write_compact_size(&mut t, w.len() as u64);
                t.extend_from_slice(w);
            }
        }
    }
    t.extend_from_slice(&0u32.to_le_bytes());
    t
}

fn hash160(data: &[u8]) -> Vec<u8> {
    use ripemd::Digest;
    ripemd::Ripemd160::digest(batchcrypt::sha256::digest(data)).to_vec()
}

/// A transaction spending a P2PKH, a P2WPKH and a P2TR (key path) output with real signatures
/// (the first `n` of them), and the outputs it spends.
fn signed_spend(n: usize) -> (Vec<u8>, Vec<(i64, Vec<u8>)>) {
    let sk = SecretKey::from_secret_bytes([0x42; 32]).unwrap();
    let pk = PublicKey::from_secret_key(&sk).serialize();
    let h = hash160(&pk);
    let p2pkh = [&[0x76, 0xa9, 0x14][..], &h, &[0x88, 0xac]].concat();
    let p2wpkh = [&[0x00, 0x14][..], &h].concat();
    let kp = Keypair::from_secret_bytes([0x43; 32]).unwrap();
    let internal = kp.x_only_public_key().0.to_byte_array();
    let tweak = Scalar::from_be_bytes(tagged_hash("TapTweak", &[&internal])).unwrap();
    let tweaked = kp.add_xonly_tweak(&tweak).unwrap();
    let p2tr = [&[0x51, 0x20][..], &tweaked.x_only_public_key().0.to_byte_array()].concat();
    let mut spent = vec![(50_000, p2pkh.clone()), (60_000, p2wpkh), (70_000, p2tr)];
    spent.truncate(n);
    let outputs = vec![(spent.iter().map(|s| s.0).sum::<i64>() - 1_000, p2pkh.clone())];
    let mut unsigned = vec![In { script_sig: vec![], witness: vec![] }, In { script_sig: vec![], witness: vec![vec![0; 72], pk.to_vec()] }, In { script_sig: vec![], witness: vec![vec![0; 64]] }];
    unsigned.truncate(n);
    let raw = tx_bytes(&unsigned, &outputs, false);
    let tx = parse_tx(&raw).unwrap();
    let outs: Vec<TxOut> = spent.iter().map(|(v, s)| TxOut { value: *v, script_pubkey: s }).collect();
    let pre = Precomputed::with_spent(&tx, outs.iter().copied());
    let ecdsa = |digest: [u8; 32]| {
        let mut s = sk.sign_ecdsa(Msg::from_digest(digest)).serialize_der().to_vec();
        s.push(1); // SIGHASH_ALL
        s
    };
    let legacy = ecdsa(sighash::legacy(&tx, 0, &p2pkh, 1));
    let v0 = (n > 1).then(|| ecdsa(sighash::segwit_v0(&tx, &pre, 1, &p2pkh, 60_000, 1)));
    let tr = (n > 2).then(|| tweaked.sign_schnorr_no_aux_rand(&sighash::taproot(&tx, &pre, 2, 0, None, None).unwrap()).to_byte_array());
    let mut script_sig = Vec::new();
    push_data(&mut script_sig, &legacy);
    push_data(&mut script_sig, &pk);
    let mut inputs = vec![In { script_sig, witness: vec![] }];
    inputs.extend(v0.map(|s| In { script_sig: vec![], witness: vec![s, pk.to_vec()] }));
    inputs.extend(tr.map(|s| In { script_sig: vec![], witness: vec![s.to_vec()] }));
    (tx_bytes(&inputs, &outputs, false), spent)
}

fn script_case(flags: Flags, index: u8, spent: &[(i64, Vec<u8>)], tx: &[u8]) -> Vec<u8> {
    let mut v = flags_bits(flags).to_le_bytes().to_vec();
    v.push(index);
    v.push(spent.len() as u8);
    for (value, spk) in spent {
        v.extend_from_slice(&value.to_le_bytes());
        write_compact_size(&mut v, spk.len() as u64);
        v.extend_from_slice(spk);
    }
    v.extend_from_slice(tx);
    v
}

/// The fuzz target's flag bits (its table's order).
fn flags_bits(f: Flags) -> u32 {
    [Flags::P2SH, Flags::DERSIG, Flags::NULLDUMMY, Flags::CHECKLOCKTIMEVERIFY, Flags::CHECKSEQUENCEVERIFY, Flags::WITNESS, Flags::TAPROOT]
        .iter()
        .enumerate()
        .filter(|(_, x)| f.contains(**x))
        .fold(0, |a, (k, _)| a | 1 << k)
}

/// A regtest block at height 1 holding a coinbase and `tx`; valid, proof of work included.
fn block(tx: &[u8]) -> Vec<u8> {
    let mut cb_sig = vec![0x51]; // BIP34: height 1 as OP_1
    cb_sig.extend_from_slice(b"batchcrypt fuzz seed");
    let coinbase = tx_bytes(&[In { script_sig: cb_sig, witness: vec![] }], &[(50 * 100_000_000, vec![0x51])], true);
    let ids = [parse_tx(&coinbase).unwrap().txid(), parse_tx(tx).unwrap().txid()];
    let root = batchcrypt::sha256::digest_double(&[ids[0], ids[1]].concat());
    let mut body = Vec::new();
    write_compact_size(&mut body, 2);
    body.extend_from_slice(&coinbase);
    body.extend_from_slice(tx);
    for nonce in 0u32.. {
        let mut h = 4u32.to_le_bytes().to_vec();
        h.extend_from_slice(&[0; 32]);
        h.extend_from_slice(&root);
        h.extend_from_slice(&1_700_000_000u32.to_le_bytes());
        h.extend_from_slice(&0x207f_ffffu32.to_le_bytes());
        h.extend_from_slice(&nonce.to_le_bytes());
        let hash = batchcrypt::sha256::digest_double(&h);
        if hash[31] < 0x7f {
            return [h, body].concat();
        }
    }
    unreachable!()
}

fn main() {
    // Choice-driven targets: a few fixed byte strings of several lengths.
    for t in ["ecdsa_verify", "p256_verify", "schnorr_verify", "sm2_verify", "aes_modes", "aes_stream"] {
        for (k, n) in [64usize, 160, 600, 3000].into_iter().enumerate() {
            write(t, &format!("pattern-{n}"), &pattern(n, k as u64 + 1));
        }
    }

    // Scripts: each input of a real signed spend, under every consensus rule and under none.
    let (tx, spent) = signed_spend(3);
    for i in 0..3u8 {
        write("bitcoin_script", &format!("spend-{i}-all"), &script_case(Flags::CONSENSUS, i, &spent, &tx));
        write("bitcoin_script", &format!("spend-{i}-p2sh"), &script_case(Flags::P2SH, i, &spent, &tx));
    }

    // A valid regtest block spending the P2PKH output (legacy only: no witness commitment).
    let (legacy_tx, legacy_spent) = signed_spend(1);
    let raw_block = block(&legacy_tx);
    let undo: Vec<u8> = legacy_spent
        .iter()
        .flat_map(|(v, s)| {
            let mut r = v.to_le_bytes().to_vec();
            write_compact_size(&mut r, s.len() as u64);
            r.extend_from_slice(s);
            r
        })
        .collect();
    let spent_outputs: Vec<SpentOutput> = legacy_spent.iter().map(|(v, s)| SpentOutput::new(*v, s.clone())).collect();
    let engine = Engine::with_backend(BackendChoice::Exact(Backend::Libsecp256k1));
    let ctx = BlockContext { network: Network::Regtest, height: Some(1), times: &PrevMedianTime(None), check_pow: true };
    let report = verify_block(&engine, &parse_block(&raw_block).unwrap(), &spent_outputs, &ctx).unwrap();
    println!("seed block: {:?}", report.verdict);
    let mut case = (undo.len() as u16).to_le_bytes().to_vec();
    // Mode 0xc0: regtest (0xc0 mod 3 = 0), proof of work checked, height from the coinbase.
    case.extend_from_slice(&[0xc0, 0]);
    case.extend_from_slice(&undo);
    case.extend_from_slice(&raw_block);
    write("bitcoin_block", "regtest-spend", &case);

    // Spent-output formats.
    write("bitcoin_undo", "core", &[&[0u8][..], &encode_core_block_undo(&[spent_outputs.clone(), vec![SpentOutput { height: Some(7), coinbase: Some(true), ..SpentOutput::new(5_000_000_000, vec![0x51]) }]])].concat());
    write("bitcoin_undo", "bcoin", &[&[1u8][..], &undo].concat());
    let json = format!(
        "[{}]",
        legacy_spent
            .iter()
            .map(|(v, s)| format!(r#"{{"txout":{{"value":{v},"script_pubkey":"{}"}},"is_coinbase":false,"creation_height":1,"creation_time":1700000000}}"#, hex::encode(s)))
            .collect::<Vec<_>>()
            .join(",")
    );
    write("bitcoin_undo", "floresta", &[&[2u8][..], json.as_bytes()].concat());

    // Groth16 files of the test circuit over both curves, where the fixtures were built
    // (scripts/zk-fixtures.sh); the first byte picks the reader (see the target).
    let fixtures = std::env::var_os("BATCHCRYPT_ZK_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or(Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/zk-fixtures"));
    for (dir, prefix, kinds) in [("mix", "", [0u8, 1, 2]), ("mix-bls12381", "bls12381-", [0, 3, 4])] {
        for (kind, file) in kinds.into_iter().zip(["circuit.zkey", "witness.wtns", "circuit.r1cs"]) {
            match std::fs::read(fixtures.join(dir).join(file)) {
                Ok(b) => write("groth16_files", &format!("{prefix}{file}"), &[&[kind][..], &b].concat()),
                Err(e) => println!("skipping {dir}/{file}: {e}"),
            }
        }
    }

    // PSI: a whole conversation as a peer sends it.
    let hello = Frame::Hello(Hello {
        version: batchcrypt::psi::PROTOCOL_VERSION,
        suite: batchcrypt::sm2::SUITE.into(),
        dst: batchcrypt::sm2::DEFAULT_DST.to_vec(),
        count: 2,
    });
    let g = batchcrypt::sm2::cpu::compress(&batchcrypt::sm2::cpu::hash_to_curve(b"item", batchcrypt::sm2::DEFAULT_DST));
    let frames = [hello, Frame::Points(vec![g, g]), Frame::Tags(vec![[7; 16], [9; 16]]), Frame::Error("bye".into())];
    write("psi_wire", "conversation", &frames.iter().flat_map(encode).collect::<Vec<u8>>());
    write("psi_wire", "hello", &encode(&frames[0]));
    // As a peer of a party with two items: handshake, two points, tags for its two points.
    write("psi_peer", "conversation", &frames[..3].iter().flat_map(encode).collect::<Vec<u8>>());
    write("psi_peer", "hello-only", &encode(&frames[0]));

    // Service requests, one by one and packed.
    let sk = SecretKey::from_secret_bytes([0x42; 32]).unwrap();
    let digest = [0x5a; 32];
    let der = sk.sign_ecdsa(Msg::from_digest(digest)).serialize_der().to_vec();
    let pk = PublicKey::from_secret_key(&sk).serialize().to_vec();
    let req = |kind: u8, m: &dyn Fn(&mut Vec<u8>)| {
        let mut v = vec![kind];
        m(&mut v);
        v
    };
    let col = |items: &[&[u8]]| Column {
        data: items.concat().into(),
        width: 0,
        ends: items.iter().scan(0u32, |a, i| { *a += i.len() as u32; Some(*a) }).collect(),
        shared: None,
    };
    let ecdsa = proto::VerifyEcdsaRequest { hashes: vec![digest.to_vec().into()], signatures: vec![der.clone().into()], public_keys: vec![pk.clone().into()], ..Default::default() };
    write("serve_requests", "ecdsa", &req(0, &|v| ecdsa.encode(v).unwrap()));
    let packed = proto::VerifyEcdsaRequest { hashes_packed: Some(Column { data: [digest, digest].concat().into(), width: 32, ends: vec![], shared: None }), signatures_packed: Some(col(&[&der, &der])), public_keys_packed: Some(col(&[&pk, &pk])), ..Default::default() };
    write("serve_requests", "ecdsa-packed", &req(0, &|v| packed.encode(v).unwrap()));
    let kp = Keypair::from_secret_bytes([0x43; 32]).unwrap();
    let schnorr = proto::VerifySchnorrRequest { messages: vec![b"msg".to_vec().into()], signatures: vec![kp.sign_schnorr_no_aux_rand(b"msg").to_byte_array().to_vec().into()], public_keys: vec![kp.x_only_public_key().0.to_byte_array().to_vec().into()], ..Default::default() };
    write("serve_requests", "schnorr", &req(1, &|v| schnorr.encode(v).unwrap()));
    let sm2 = proto::VerifySm2Request { messages: vec![b"msg".to_vec().into()], signatures: vec![vec![1; 64].into()], public_keys: vec![g.to_vec().into()], ..Default::default() };
    write("serve_requests", "sm2", &req(2, &|v| sm2.encode(v).unwrap()));
    let hash = proto::HashRequest { messages_packed: Some(col(&[b"a", b"bc", b""])), ..Default::default() };
    write("serve_requests", "hash-packed", &req(3, &|v| hash.encode(v).unwrap()));
    let hash_mul = proto::Sm2HashToCurveMulRequest { scalar: vec![3; 32].into(), messages: vec![b"item".to_vec().into()], ..Default::default() };
    write("serve_requests", "hash-mul", &req(4, &|v| hash_mul.encode(v).unwrap()));
    let mul = proto::Sm2MulCompressedRequest { scalar: vec![3; 32].into(), points: vec![g.to_vec().into()], ..Default::default() };
    write("serve_requests", "mul", &req(5, &|v| mul.encode(v).unwrap()));
    let spent_proto = |s: &[(i64, Vec<u8>)]| s.iter().map(|(v, spk)| proto::SpentOutput { value: *v, script_pubkey: spk.clone().into(), ..Default::default() }).collect::<Vec<_>>();
    let txs = proto::VerifyTransactionsRequest { transactions: vec![proto::LooseTransaction { tx: tx.clone().into(), spent: spent_proto(&spent), flags: String::new(), next_height: None, tip_mtp: None }] };
    write("serve_requests", "transactions", &req(6, &|v| txs.encode(v).unwrap()));
    let blk = proto::VerifyBlockRequest { block: raw_block.clone().into(), spent: spent_proto(&legacy_spent), network: proto::Network::Regtest as i32, height: 1, skip_proof_of_work: false, median_time_past: None };
    write("serve_requests", "block", &req(7, &|v| blk.encode(v).unwrap()));
    let register = proto::RegisterSharedMemoryRequest { name: "batchcrypt-fuzz".into() };
    write("serve_requests", "shared-register", &req(8, &|v| register.encode(v).unwrap()));
    let span = |offset, length| proto::SharedSpan { region: 0, offset, length };
    let shared = proto::HashRequest { algorithm: proto::HashAlgorithm::Sha256d as i32, messages_packed: Some(Column { data: Default::default(), width: 64, ends: vec![], shared: Some(span(0, 4096)) }), digests_to: Some(span(8192, 2048)), ..Default::default() };
    write("serve_requests", "shared-hash", &req(9, &|v| shared.encode(v).unwrap()));

    // The frames wire: mode 0 (the harness opens with the magic and a hello), then frames of
    // each operation, one refused, and a header over the limit.
    let frame = |id: u32, tag: u8, body: &[u8]| {
        let mut f = (body.len() as u32).to_le_bytes().to_vec();
        f.extend_from_slice(&id.to_le_bytes());
        f.push(tag);
        f.extend_from_slice(body);
        f
    };
    let enc = |m: &dyn Fn(&mut Vec<u8>)| {
        let mut v = Vec::new();
        m(&mut v);
        v
    };
    let echo = proto::EchoRequest { payload: b"ping".to_vec().into(), reply_bytes: 8 };
    let calls = [
        frame(1, 1, &enc(&|v| packed.encode(v).unwrap())),
        frame(2, 2, &enc(&|v| schnorr.encode(v).unwrap())),
        frame(3, 3, &enc(&|v| sm2.encode(v).unwrap())),
        frame(4, 4, &enc(&|v| hash.encode(v).unwrap())),
        frame(5, 5, &enc(&|v| hash_mul.encode(v).unwrap())),
        frame(6, 6, &enc(&|v| mul.encode(v).unwrap())),
        frame(7, 7, &enc(&|v| echo.encode(v).unwrap())),
        frame(8, 99, b"no such operation"),
    ]
    .concat();
    write("serve_frames", "every-operation", &[&[0u8][..], &calls].concat());
    write("serve_frames", "no-hello", &[&[2u8][..], &frame(1, 7, &enc(&|v| echo.encode(v).unwrap()))].concat());
    write("serve_frames", "over-the-limit", &[&[0u8][..], &(1u32 << 20).to_le_bytes(), &[1, 0, 0, 0, 4]].concat());
    write("serve_frames", "raw-magic", &[&[1u8][..], b"BCFRAME1", &frame(0, 0, b"token")].concat());
}

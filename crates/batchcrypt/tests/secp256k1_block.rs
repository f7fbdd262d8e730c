//! Real signatures: every ECDSA signature of Bitcoin mainnet block 413567 (shared data, skipped when
//! absent), verified as one batch on every backend that implements secp256k1.
//!
//! The block (May 2016) predates segwit, so every input is legacy: 3 957 P2PKH and 929 P2SH
//! multisig spends, 5 815 signatures, all SIGHASH_ALL. The previous outputs are not in the block,
//! but each input carries what its script code needs: a P2PKH scriptCode is
//! `DUP HASH160 <hash160(pubkey)> EQUALVERIFY CHECKSIG`, a P2SH one is the redeem script. The
//! legacy sighash is then SHA256d of the transaction with every scriptSig emptied except this
//! input's (replaced by the scriptCode), followed by the 4-byte hash type.

mod common;
use batchcrypt::bitcoin::parse_block;
use batchcrypt::secp256k1::{EcdsaOptions, Reason, SigFormat};
use batchcrypt::sha256::{digest, digest_double};
use batchcrypt::{Backend, Primitive};
use common::{backends, engine, read_shared};
use ripemd::{Digest as _, Ripemd160};

const SIGHASH_ALL: u8 = 1;
const OP_CHECKMULTISIG: u8 = 0xae;

/// The parts of a legacy transaction the sighash rebuilds it from.
struct LegacyTx<'a> {
    version: &'a [u8],
    inputs: Vec<Input<'a>>,
    /// Output count and outputs, serialized as in the transaction.
    outputs: &'a [u8],
    locktime: &'a [u8],
}

struct Input<'a> {
    outpoint: &'a [u8],
    script_sig: &'a [u8],
    sequence: &'a [u8],
}

struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        head
    }
    fn varint(&mut self) -> usize {
        match self.take(1)[0] {
            0xfd => u16::from_le_bytes(self.take(2).try_into().unwrap()) as usize,
            0xfe => u32::from_le_bytes(self.take(4).try_into().unwrap()) as usize,
            0xff => u64::from_le_bytes(self.take(8).try_into().unwrap()) as usize,
            b => b as usize,
        }
    }
    fn var_bytes(&mut self) -> &'a [u8] {
        let n = self.varint();
        self.take(n)
    }
}

fn parse_legacy(raw: &[u8]) -> LegacyTx<'_> {
    let mut c = Cursor(raw);
    let version = c.take(4);
    assert_ne!(c.0[0], 0, "a segwit transaction in a pre-segwit block");
    let inputs = (0..c.varint())
        .map(|_| Input {
            outpoint: c.take(36),
            script_sig: c.var_bytes(),
            sequence: c.take(4),
        })
        .collect();
    let outputs_start = c.0;
    for _ in 0..c.varint() {
        c.take(8);
        c.var_bytes();
    }
    let outputs = &outputs_start[..outputs_start.len() - c.0.len()];
    let locktime = c.take(4);
    assert!(c.0.is_empty());
    LegacyTx {
        version,
        inputs,
        outputs,
        locktime,
    }
}

fn write_varint(out: &mut Vec<u8>, n: usize) {
    match n {
        0..=0xfc => out.push(n as u8),
        0xfd..=0xffff => {
            out.push(0xfd);
            out.extend((n as u16).to_le_bytes());
        }
        _ => {
            out.push(0xfe);
            out.extend((n as u32).to_le_bytes());
        }
    }
}

/// Legacy SIGHASH_ALL digest of input `i` signing `script_code`.
fn legacy_sighash(tx: &LegacyTx<'_>, i: usize, script_code: &[u8]) -> [u8; 32] {
    let mut m = tx.version.to_vec();
    write_varint(&mut m, tx.inputs.len());
    for (j, input) in tx.inputs.iter().enumerate() {
        m.extend(input.outpoint);
        let script: &[u8] = if j == i { script_code } else { &[] };
        write_varint(&mut m, script.len());
        m.extend(script);
        m.extend(input.sequence);
    }
    m.extend(tx.outputs);
    m.extend(tx.locktime);
    m.extend((SIGHASH_ALL as u32).to_le_bytes());
    digest_double(&m)
}

/// The data pushes of a push-only script (OP_0 pushes nothing); `None` if it has other opcodes.
fn pushes(script: &[u8]) -> Option<Vec<&[u8]>> {
    let mut c = Cursor(script);
    let mut out = vec![];
    while !c.0.is_empty() {
        let n = match c.take(1)[0] {
            0 => 0,
            op @ 1..=0x4b => op as usize,
            0x4c => c.take(1)[0] as usize,
            0x4d => u16::from_le_bytes(c.take(2).try_into().unwrap()) as usize,
            _ => return None,
        };
        out.push(c.take(n));
    }
    Some(out)
}

/// `m` and the keys of a bare `OP_m <keys> OP_n OP_CHECKMULTISIG` script.
fn multisig(redeem: &[u8]) -> Option<(usize, Vec<&[u8]>)> {
    let (&first, rest) = redeem.split_first()?;
    let (&last, rest) = rest.split_last()?;
    let (&op_n, body) = rest.split_last()?;
    if !(0x51..=0x60).contains(&first) || !(0x51..=0x60).contains(&op_n) || last != OP_CHECKMULTISIG
    {
        return None;
    }
    let keys = pushes(body)?;
    (keys.len() == (op_n - 0x50) as usize).then_some(((first - 0x50) as usize, keys))
}

fn p2pkh_script_code(pubkey: &[u8]) -> Vec<u8> {
    let hash160 = Ripemd160::digest(digest(pubkey));
    [&[0x76, 0xa9, 0x14][..], &hash160, &[0x88, 0xac]].concat()
}

/// One signature check: DER signature (hash type removed), key, digest.
struct Check {
    sig: Vec<u8>,
    key: Vec<u8>,
    hash: [u8; 32],
}

/// A multisig input: its `m` signatures are checks `first..first + m * keys` (each signature
/// against each key, in order), matched the way CHECKMULTISIG does.
struct Multisig {
    first: usize,
    sigs: usize,
    keys: usize,
}

/// The DER part of a pushed signature, which must end in SIGHASH_ALL.
fn der_of(push: &[u8]) -> Vec<u8> {
    let (&hash_type, der) = push.split_last().unwrap();
    assert_eq!(hash_type, SIGHASH_ALL);
    der.to_vec()
}

/// Every check of the block, and which are P2PKH signatures or multisig groups.
struct BlockChecks {
    checks: Vec<Check>,
    p2pkh: Vec<usize>,
    multisig: Vec<Multisig>,
    signatures: usize,
}

fn block_checks(raw: &[u8]) -> BlockChecks {
    let block = parse_block(raw).unwrap();
    let mut b = BlockChecks {
        checks: vec![],
        p2pkh: vec![],
        multisig: vec![],
        signatures: 0,
    };
    for tx in block.txs.iter().skip(1) {
        let t = parse_legacy(tx.raw);
        for (i, input) in t.inputs.iter().enumerate() {
            let p = pushes(input.script_sig).expect("push-only scriptSig");
            if let Some((m, keys)) = multisig(p.last().unwrap()) {
                // OP_0 (CHECKMULTISIG's extra pop), m signatures, the redeem script.
                assert_eq!((p.len(), p[0]), (m + 2, &[][..]));
                let hash = legacy_sighash(&t, i, p[m + 1]);
                b.multisig.push(Multisig {
                    first: b.checks.len(),
                    sigs: m,
                    keys: keys.len(),
                });
                for sig in &p[1..=m] {
                    b.checks.extend(keys.iter().map(|k| Check {
                        sig: der_of(sig),
                        key: k.to_vec(),
                        hash,
                    }));
                }
                b.signatures += m;
            } else {
                assert_eq!(p.len(), 2, "P2PKH scriptSig is <sig> <pubkey>");
                let hash = legacy_sighash(&t, i, &p2pkh_script_code(p[1]));
                b.p2pkh.push(b.checks.len());
                b.checks.push(Check {
                    sig: der_of(p[0]),
                    key: p[1].to_vec(),
                    hash,
                });
                b.signatures += 1;
            }
        }
    }
    b
}

/// CHECKMULTISIG's matching: each signature, in order, takes the first remaining key that verifies.
fn multisig_passes(g: &Multisig, ok: &[bool]) -> bool {
    let mut key = 0;
    for s in 0..g.sigs {
        while key < g.keys && !ok[g.first + s * g.keys + key] {
            key += 1;
        }
        if key == g.keys {
            return false;
        }
        key += 1;
    }
    true
}

fn verify(b: Backend, checks: &[Check], opts: &EcdsaOptions) -> Vec<Result<(), Reason>> {
    let hashes: Vec<[u8; 32]> = checks.iter().map(|c| c.hash).collect();
    let sigs: Vec<&[u8]> = checks.iter().map(|c| c.sig.as_slice()).collect();
    let keys: Vec<&[u8]> = checks.iter().map(|c| c.key.as_slice()).collect();
    let out = engine(b)
        .secp256k1()
        .verify_ecdsa(&hashes, &sigs, &keys, opts)
        .unwrap();
    assert_eq!(out.backend, b);
    out.value.results
}

#[test]
fn block_413567_signatures_verify() {
    let Some(raw) = read_shared("block413567.raw") else {
        return;
    };
    let BlockChecks {
        checks,
        p2pkh,
        multisig: groups,
        signatures,
    } = block_checks(&raw);
    assert_eq!(
        (p2pkh.len(), groups.len(), signatures),
        (3957, 929, 5815),
        "P2PKH inputs, multisig inputs, signatures"
    );
    for b in backends(Primitive::Secp256k1) {
        let lax = EcdsaOptions {
            format: SigFormat::Der,
            require_low_s: false,
        };
        let results = verify(b, &checks, &lax);
        let ok: Vec<bool> = results.iter().map(Result::is_ok).collect();
        for &i in &p2pkh {
            assert_eq!(results[i], Ok(()), "P2PKH check {i} on {b}");
        }
        for (n, g) in groups.iter().enumerate() {
            assert!(multisig_passes(g, &ok), "multisig input {n} on {b}");
        }
        // With low S required a check can only change to HighS; count the inputs that would fail.
        let strict = verify(
            b,
            &checks,
            &EcdsaOptions {
                require_low_s: true,
                ..lax
            },
        );
        for (i, (l, s)) in results.iter().zip(&strict).enumerate() {
            assert!(
                s == l || *s == Err(Reason::HighS),
                "check {i} on {b}: {l:?} then {s:?}"
            );
        }
        let strict_ok: Vec<bool> = strict.iter().map(Result::is_ok).collect();
        let failing = p2pkh.iter().filter(|&&i| !strict_ok[i]).count()
            + groups
                .iter()
                .filter(|g| !multisig_passes(g, &strict_ok))
                .count();
        eprintln!("block 413567 on {b}: {signatures} signatures valid ({} checks with the multisig key trials); {failing} inputs fail with low S required", checks.len());
    }
}

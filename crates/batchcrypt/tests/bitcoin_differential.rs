//! The script interpreter against Bitcoin Core's own, libbitcoinconsensus (Core 26.0 through the
//! `bitcoinconsensus` crate; taproot included, since it is given every spent output): the same
//! input under the same flags must get the same verdict from both.
//!
//! - Every non-coinbase input of the shared blocks, under the block's own consensus flags (as
//!   Core's GetBlockScriptFlags sets them by height) and under the full consensus set; under the
//!   block's flags every input must also be valid.
//! - Mutated copies of a deterministic sample of those inputs: one bit flipped in a signature (in
//!   the scriptSig or the witness), in the spent amount, or in the spent scriptPubKey. Both must
//!   agree whatever the verdict; most mutations must be rejected.
//! - Random small scripts (bare, P2SH, P2WSH, P2SH-P2WSH, P2WPKH, tapscript, taproot key path)
//!   from a fixed alphabet with real signatures made for them, spent by a small fixed family of
//!   transactions, under several flag sets.
//!
//! Any disagreement fails the test. libbitcoinconsensus only takes the consensus flags (P2SH,
//! DERSIG, NULLDUMMY, CHECKLOCKTIMEVERIFY, CHECKSEQUENCEVERIFY, WITNESS, TAPROOT).

mod common;

use batchcrypt::bitcoin::checker::{CpuVerifier, TxChecker};
use batchcrypt::bitcoin::script::opcodes::*;
use batchcrypt::bitcoin::script::{
    push_data, tapleaf_hash, verify_script, Flags, Ops, ScriptError,
};
use batchcrypt::bitcoin::sighash::{self, tagged_hash, Precomputed};
use batchcrypt::bitcoin::spent::{parse_bcoin_undo, parse_floresta_json};
use batchcrypt::bitcoin::tx::write_compact_size;
use batchcrypt::bitcoin::{parse_block, parse_tx, SpentOutput, Tx, TxOut};
use common::consensus::{core_verdict, CORE_FLAGS};
use common::Rng;
use rayon::prelude::*;
use std::time::Instant;

// ---------------------------------------------------------------------------------------------
// The two verifiers

fn core_flags(f: Flags) -> u32 {
    assert_eq!(
        f - Flags::CONSENSUS,
        Flags::NONE,
        "not a consensus flag: {}",
        f.names()
    );
    assert!(
        !f.has(Flags::WITNESS) || f.has(Flags::P2SH),
        "Core asserts that WITNESS comes with P2SH"
    );
    CORE_FLAGS
        .iter()
        .filter(|(ours, _)| f.contains(*ours))
        .fold(0, |acc, (_, theirs)| acc | theirs)
}

/// libbitcoinconsensus's verdict on input `i` of the serialized transaction `raw`. A refusal
/// other than a failed script (bad index, undeserializable transaction...) is a bug of this
/// harness.
fn core_verify(raw: &[u8], spent: &[TxOut], i: usize, flags: Flags) -> bool {
    core_verdict(raw, spent, i, core_flags(flags)).unwrap_or_else(|e| {
        panic!(
            "libbitcoinconsensus refused the call ({e:?}): a harness bug; tx {}",
            hex::encode(raw)
        )
    })
}

fn our_verify(
    tx: &Tx,
    pre: &Precomputed,
    spent: &[TxOut],
    i: usize,
    flags: Flags,
) -> Result<(), ScriptError> {
    let mut checker = TxChecker::new(tx, i, spent[i].value, pre, CpuVerifier);
    let input = &tx.inputs[i];
    verify_script(
        input.script_sig,
        spent[i].script_pubkey,
        &input.witness,
        flags,
        &mut checker,
    )
}

/// Both verdicts on one input: ours (with its error) and Core's.
fn both(
    tx: &Tx,
    pre: &Precomputed,
    spent: &[TxOut],
    i: usize,
    flags: Flags,
) -> (Result<(), ScriptError>, bool) {
    (
        our_verify(tx, pre, spent, i, flags),
        core_verify(tx.raw, spent, i, flags),
    )
}

fn describe(
    what: &str,
    tx: &Tx,
    spent: &[TxOut],
    i: usize,
    flags: Flags,
    ours: Result<(), ScriptError>,
    core: bool,
) -> String {
    let spent_hex: Vec<String> = spent
        .iter()
        .map(|o| format!("{}:{}", o.value, hex::encode(o.script_pubkey)))
        .collect();
    format!(
        "{what}: input {i} under [{}]: ours {}, libbitcoinconsensus {}\n  tx {}\n  spent (amount:scriptPubKey) {}",
        flags.names(),
        match ours {
            Ok(()) => "valid".to_string(),
            Err(e) => format!("invalid ({})", e.name()),
        },
        if core { "valid" } else { "invalid" },
        hex::encode(tx.raw),
        spent_hex.join(" ")
    )
}

/// splitmix64, to seed one generator per input or case whatever the thread order.
fn rng_for(a: u64, b: u64) -> Rng {
    let mut z = a.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ b.wrapping_add(0x6a09_e667_f3bc_c909);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    Rng((z ^ (z >> 31)) | 1)
}

// ---------------------------------------------------------------------------------------------
// Real blocks

struct BlockFile {
    name: &'static str,
    testnet: bool,
    height: u32,
    json: bool,
}

const BLOCKS: [BlockFile; 9] = [
    BlockFile {
        name: "mainnet-300025",
        testnet: false,
        height: 300_025,
        json: false,
    },
    BlockFile {
        name: "mainnet-367891",
        testnet: false,
        height: 367_891,
        json: true,
    },
    BlockFile {
        name: "testnet3-928816",
        testnet: true,
        height: 928_816,
        json: false,
    },
    BlockFile {
        name: "testnet3-928828",
        testnet: true,
        height: 928_828,
        json: false,
    },
    BlockFile {
        name: "testnet3-928831",
        testnet: true,
        height: 928_831,
        json: false,
    },
    BlockFile {
        name: "testnet3-928848",
        testnet: true,
        height: 928_848,
        json: false,
    },
    BlockFile {
        name: "testnet3-928849",
        testnet: true,
        height: 928_849,
        json: false,
    },
    BlockFile {
        name: "testnet3-928927",
        testnet: true,
        height: 928_927,
        json: false,
    },
    BlockFile {
        name: "testnet3-1087400",
        testnet: true,
        height: 1_087_400,
        json: false,
    },
];

/// Core's GetBlockScriptFlags: P2SH, WITNESS and TAPROOT from genesis (none of these blocks is
/// one of its two exceptions), DERSIG, CLTV and CSV from their buried heights, NULLDUMMY with
/// segwit's.
fn block_flags(testnet: bool, height: u32) -> Flags {
    let (bip66, bip65, csv, segwit) = if testnet {
        (330_776, 581_885, 770_112, 834_624)
    } else {
        (363_725, 388_381, 419_328, 481_824)
    };
    let mut f = Flags::P2SH | Flags::WITNESS | Flags::TAPROOT;
    for (h, flag) in [
        (bip66, Flags::DERSIG),
        (bip65, Flags::CHECKLOCKTIMEVERIFY),
        (csv, Flags::CHECKSEQUENCEVERIFY),
        (segwit, Flags::NULLDUMMY),
    ] {
        if height >= h {
            f = f | flag;
        }
    }
    f
}

/// Inputs of one transaction handed to libbitcoinconsensus at most: it deserializes the whole
/// transaction on every call, so the 20,000-input transaction of mainnet 367891 (840 kB) is
/// compared on an even sample of its inputs (all of them still verified by us).
const MAX_ORACLE_INPUTS_PER_TX: usize = 500;
/// Every this many inputs (counted through each block) is mutated.
const MUTATE_EVERY: usize = 7;

#[derive(Default)]
struct BlockTally {
    inputs: usize,
    /// Inputs libbitcoinconsensus saw (the rest were verified by us alone).
    compared_inputs: usize,
    /// (input, flag set) pairs compared.
    comparisons: usize,
    /// Inputs that are not valid under their block's flags (either side).
    invalid: Vec<String>,
    /// Valid-block inputs that fail under the full consensus set (both sides agreeing).
    fail_full_set: usize,
    /// Per mutation kind (signature, amount, scriptPubKey): comparisons, rejected by both,
    /// accepted by both; and for amounts, the same restricted to inputs with a witness.
    mutations: [usize; 3],
    rejected: [usize; 3],
    accepted: [usize; 3],
    witness_amount_mutations: usize,
    witness_amount_rejected: usize,
    disagreements: Vec<String>,
}

impl BlockTally {
    fn merge(mut self, o: BlockTally) -> BlockTally {
        self.inputs += o.inputs;
        self.compared_inputs += o.compared_inputs;
        self.comparisons += o.comparisons;
        self.invalid.extend(o.invalid);
        self.fail_full_set += o.fail_full_set;
        for k in 0..3 {
            self.mutations[k] += o.mutations[k];
            self.rejected[k] += o.rejected[k];
            self.accepted[k] += o.accepted[k];
        }
        self.witness_amount_mutations += o.witness_amount_mutations;
        self.witness_amount_rejected += o.witness_amount_rejected;
        self.disagreements.extend(o.disagreements);
        self
    }
}

/// A DER signature with its hash-type byte as Core pushes it: 0x30, a length that covers the
/// rest but the hash type.
fn looks_like_der(d: &[u8]) -> bool {
    (9..=73).contains(&d.len()) && d[0] == 0x30 && d[1] as usize + 3 == d.len()
}

/// Where the signatures of input `i` lie in `tx.raw`: (offset, length) of each.
fn signature_spans(tx: &Tx, i: usize, spk: &[u8]) -> Vec<(usize, usize)> {
    let base = tx.raw.as_ptr() as usize;
    let span = |d: &[u8]| {
        let at = d.as_ptr() as usize - base;
        assert!(at + d.len() <= tx.raw.len());
        (at, d.len())
    };
    let input = &tx.inputs[i];
    let mut out: Vec<(usize, usize)> = Ops::new(input.script_sig)
        .filter_map(|op| op.ok())
        .filter(|op| looks_like_der(op.data))
        .map(|op| span(op.data))
        .collect();
    let taproot = spk.len() == 34 && spk[0] == OP_1 && spk[1] == 32;
    for item in &input.witness {
        if looks_like_der(item) || (taproot && matches!(item.len(), 64 | 65)) {
            out.push(span(item));
        }
    }
    out
}

fn compare_mutation(
    t: &mut BlockTally,
    kind: usize,
    what: &str,
    tx: &Tx,
    pre: &Precomputed,
    spent: &[TxOut],
    i: usize,
    flag_sets: &[Flags],
) {
    for &flags in flag_sets {
        let (ours, core) = both(tx, pre, spent, i, flags);
        t.mutations[kind] += 1;
        if ours.is_ok() != core {
            t.disagreements
                .push(describe(what, tx, spent, i, flags, ours, core));
        } else if core {
            t.accepted[kind] += 1;
        } else {
            t.rejected[kind] += 1;
        }
        if kind == 1 && !tx.inputs[i].witness.is_empty() {
            t.witness_amount_mutations += 1;
            t.witness_amount_rejected += usize::from(!core && ours.is_err());
        }
    }
}

/// One transaction of a block: every input under the block's flags and the full set, and the
/// mutations of every MUTATE_EVERY-th input.
fn check_block_tx(
    block: &str,
    seed: u64,
    tx: &Tx,
    spent: &[TxOut],
    first: usize,
    block_flags: Flags,
) -> BlockTally {
    let mut t = BlockTally::default();
    let pre = Precomputed::with_spent(tx, spent.iter().copied());
    let n = tx.inputs.len();
    let stride = n.div_ceil(MAX_ORACLE_INPUTS_PER_TX);
    let mut flag_sets = vec![block_flags];
    if block_flags != Flags::CONSENSUS {
        flag_sets.push(Flags::CONSENSUS);
    }
    for i in 0..n {
        t.inputs += 1;
        let ours = our_verify(tx, &pre, spent, i, block_flags);
        if let Err(e) = ours {
            t.invalid.push(format!(
                "{block} input {} (tx input {i}): ours {}",
                first + i,
                e.name()
            ));
        }
        if i % stride != 0 && i + 1 != n {
            continue;
        }
        t.compared_inputs += 1;
        for &flags in &flag_sets {
            let (ours, core) = both(tx, &pre, spent, i, flags);
            t.comparisons += 1;
            if ours.is_ok() != core {
                t.disagreements.push(describe(
                    &format!("{block} input {}", first + i),
                    tx,
                    spent,
                    i,
                    flags,
                    ours,
                    core,
                ));
            }
            if flags == block_flags && !core {
                t.invalid.push(format!(
                    "{block} input {} (tx input {i}): libbitcoinconsensus rejects it",
                    first + i
                ));
            }
            if flags != block_flags && !core && ours.is_err() {
                t.fail_full_set += 1;
            }
        }
        if !(first + i).is_multiple_of(MUTATE_EVERY) {
            continue;
        }
        let mut rng = rng_for(seed, (first + i) as u64);
        let what = |k: &str| format!("{block} input {} with {k}", first + i);

        // (a) One bit of a signature (its DER, its hash type, or a Schnorr signature).
        let sigs = signature_spans(tx, i, spent[i].script_pubkey);
        if !sigs.is_empty() {
            let (at, len) = sigs[rng.below(sigs.len() as u64) as usize];
            let byte = at + rng.below(len as u64) as usize;
            let bit = rng.below(8);
            let mut raw = tx.raw.to_vec();
            raw[byte] ^= 1 << bit;
            let tx2 =
                parse_tx(&raw).expect("a flipped signature bit keeps the transaction parsable");
            let pre2 = Precomputed::with_spent(&tx2, spent.iter().copied());
            let w = what(&format!("signature byte {} bit {bit} flipped", byte - at));
            compare_mutation(&mut t, 0, &w, &tx2, &pre2, spent, i, &flag_sets);
        }

        // (b) One bit of the spent amount (bits 0..51 keep it a non-negative amount).
        let bit = rng.below(51);
        let mut spent2 = spent.to_vec();
        spent2[i].value ^= 1 << bit;
        let pre2 = Precomputed::with_spent(tx, spent2.iter().copied());
        compare_mutation(
            &mut t,
            1,
            &what(&format!("amount bit {bit} flipped")),
            tx,
            &pre2,
            &spent2,
            i,
            &flag_sets,
        );

        // (c) One bit of the spent scriptPubKey.
        let spk = spent[i].script_pubkey;
        if !spk.is_empty() {
            let byte = rng.below(spk.len() as u64) as usize;
            let bit = rng.below(8);
            let mut spk2 = spk.to_vec();
            spk2[byte] ^= 1 << bit;
            let mut spent2 = spent.to_vec();
            spent2[i].script_pubkey = &spk2;
            let pre2 = Precomputed::with_spent(tx, spent2.iter().copied());
            let w = what(&format!("scriptPubKey byte {byte} bit {bit} flipped"));
            compare_mutation(&mut t, 2, &w, tx, &pre2, &spent2, i, &flag_sets);
        }
    }
    t
}

struct LoadedBlock {
    file: &'static BlockFile,
    raw: Vec<u8>,
    spent: Vec<SpentOutput>,
}

fn load_blocks() -> Option<Vec<LoadedBlock>> {
    let mut out = Vec::new();
    for file in &BLOCKS {
        let raw = common::read_shared(&format!("bitcoin/blocks/{}.raw", file.name))?;
        let spent = if file.json {
            let text = common::read_shared(&format!("bitcoin/blocks/{}.spent.json", file.name))?;
            parse_floresta_json(std::str::from_utf8(&text).unwrap()).unwrap()
        } else {
            parse_bcoin_undo(&common::read_shared(&format!(
                "bitcoin/blocks/{}.undo",
                file.name
            ))?)
            .unwrap()
        };
        out.push(LoadedBlock { file, raw, spent });
    }
    Some(out)
}

#[test]
fn blocks_agree_with_libbitcoinconsensus() {
    let Some(blocks) = load_blocks() else { return };
    let start = Instant::now();
    let parsed: Vec<_> = blocks
        .iter()
        .map(|b| parse_block(&b.raw).unwrap())
        .collect();
    // One job per non-coinbase transaction: (block, tx, index of its first input in the block).
    let mut jobs = Vec::new();
    for (bi, (b, block)) in blocks.iter().zip(&parsed).enumerate() {
        let mut k = 0;
        for (ti, tx) in block.txs.iter().enumerate().skip(1) {
            jobs.push((bi, ti, k));
            k += tx.inputs.len();
        }
        assert_eq!(
            k,
            b.spent.len(),
            "{}: one spent output per non-coinbase input",
            b.file.name
        );
    }
    // The biggest transactions first, so that no thread is left with one at the end.
    jobs.sort_by_key(|&(bi, ti, _)| std::cmp::Reverse(parsed[bi].txs[ti].inputs.len()));
    let tally = jobs
        .par_iter()
        .map(|&(bi, ti, k)| {
            let b = &blocks[bi];
            let tx = &parsed[bi].txs[ti];
            let spent: Vec<TxOut> = b.spent[k..k + tx.inputs.len()]
                .iter()
                .map(SpentOutput::as_txout)
                .collect();
            check_block_tx(
                b.file.name,
                bi as u64,
                tx,
                &spent,
                k,
                block_flags(b.file.testnet, b.file.height),
            )
        })
        .reduce(BlockTally::default, BlockTally::merge);
    let kinds = ["signature", "amount", "scriptPubKey"];
    eprintln!(
        "{} blocks, {} inputs: {} compared with libbitcoinconsensus ({} input-flag comparisons; \
         {} fail under the full consensus set on both sides), {} invalid under their block's flags",
        blocks.len(),
        tally.inputs,
        tally.compared_inputs,
        tally.comparisons,
        tally.fail_full_set,
        tally.invalid.len()
    );
    for (k, kind) in kinds.iter().enumerate() {
        eprintln!(
            "  {kind} bit flips: {} comparisons, {} rejected by both, {} accepted by both",
            tally.mutations[k], tally.rejected[k], tally.accepted[k]
        );
    }
    eprintln!(
        "  amount flips of inputs with a witness: {} comparisons, {} rejected by both",
        tally.witness_amount_mutations, tally.witness_amount_rejected
    );
    eprintln!(
        "  {} disagreements, {:.1} s",
        tally.disagreements.len(),
        start.elapsed().as_secs_f64()
    );
    assert!(
        tally.disagreements.is_empty(),
        "{} disagreements with libbitcoinconsensus:\n{}",
        tally.disagreements.len(),
        tally.disagreements[..tally.disagreements.len().min(20)].join("\n")
    );
    assert!(
        tally.invalid.is_empty(),
        "{} inputs of valid blocks are invalid:\n{}",
        tally.invalid.len(),
        tally.invalid[..tally.invalid.len().min(20)].join("\n")
    );
    assert!(
        tally.inputs > 60_000 && tally.compared_inputs > 40_000,
        "too few inputs"
    );
    // Every kind of change is mostly caught, and a changed amount always where a witness signs it.
    for k in [0, 2] {
        assert!(
            tally.mutations[k] > 1000,
            "only {} {} mutations",
            tally.mutations[k],
            kinds[k]
        );
        assert!(
            tally.rejected[k] * 10 >= tally.mutations[k] * 9,
            "only {} of {} {} mutations rejected",
            tally.rejected[k],
            tally.mutations[k],
            kinds[k]
        );
    }
    assert!(tally.witness_amount_mutations > 1000);
    assert!(tally.witness_amount_rejected * 100 >= tally.witness_amount_mutations * 99);
}

// ---------------------------------------------------------------------------------------------
// Random scripts

use secp256k1::{ecdsa, Keypair, Message, PublicKey, Scalar, SecretKey, XOnlyPublicKey};

fn sha256(d: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(d).into()
}

fn hash160(d: &[u8]) -> [u8; 20] {
    use ripemd::Digest;
    ripemd::Ripemd160::digest(sha256(d)).into()
}

fn script_num(n: i64) -> Vec<u8> {
    let mut v = Vec::new();
    let mut a = n.unsigned_abs();
    while a > 0 {
        v.push(a as u8);
        a >>= 8;
    }
    if let Some(&last) = v.last() {
        if last & 0x80 != 0 {
            v.push(if n < 0 { 0x80 } else { 0 });
        } else if n < 0 {
            *v.last_mut().unwrap() |= 0x80;
        }
    }
    v
}

/// One push instruction of `data`, in one of the encodings Core accepts for it (minimal pushes
/// are policy, not consensus).
fn push_ins(rng: &mut Rng, data: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    match (data, rng.below(8)) {
        ([], 0) => v.extend([OP_PUSHDATA1, 0]),
        ([], _) => v.push(OP_0),
        ([n @ 1..=16], 0..=4) => v.push(OP_1 + n - 1),
        ([0x81], 0..=4) => v.push(OP_1NEGATE),
        (d, 0) if d.len() < 256 => {
            v.extend([OP_PUSHDATA1, d.len() as u8]);
            v.extend(d);
        }
        (d, 1) if rng.below(4) == 0 => {
            v.push(OP_PUSHDATA2);
            v.extend((d.len() as u16).to_le_bytes());
            v.extend(d);
        }
        (d, _) => push_data(&mut v, d),
    }
    v
}

/// Lock times and sequences for the spending transactions, and the numbers scripts compare them
/// with.
const LOCK_TIMES: [u32; 4] = [0, 500, 499_999_999, 1_600_000_000];
const SEQUENCES: [u32; 6] = [0xffff_ffff, 0xffff_fffe, 10, (1 << 22) | 5, 1 << 31, 0];
const NUMBERS: [i64; 22] = [
    0,
    1,
    2,
    3,
    5,
    10,
    11,
    16,
    17,
    -1,
    -2,
    127,
    128,
    255,
    256,
    499,
    500,
    501,
    0x7fff_ffff,
    0x8000_0000,
    1_600_000_000,
    (1 << 22) | 5,
];

/// A stack item in the unlocking part; signatures are made once the locking script is known.
#[derive(Clone, Debug)]
enum Item {
    Data(Vec<u8>),
    /// key, hash type, variant (0 good, 1 high S / bit flip, 2 padded R / explicit 0x00 hash
    /// type, 3 corrupted, 4 other hash type appended), which OP_CODESEPARATOR it signs from
    /// (0: none).
    Sig {
        key: usize,
        ht: u8,
        variant: u8,
        cs: usize,
    },
    /// A non-push opcode (bare scriptSigs only).
    Op(u8),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Bare,
    P2sh,
    P2wsh,
    P2shP2wsh,
    P2wpkh,
    Tapscript,
    KeyPath,
    /// A witness program of any version and length (native or in P2SH) with random items.
    Program,
}

/// In a locking script: the push of the first signature of the unlocking items, which legacy
/// CHECKSIG removes from the script it hashes (FindAndDelete) when it is pushed as Core pushes it.
const SIG_IN_SCRIPT: [u8; 3] = [0xff, 0xfe, 0xfd];

struct Keys {
    sk: [SecretKey; 3],
    kp: [Keypair; 3],
    pk: [PublicKey; 3],
}

impl Keys {
    fn new() -> Keys {
        let sk = [1u8, 2, 3].map(|i| SecretKey::from_secret_bytes([i * 0x11; 32]).unwrap());
        Keys {
            sk,
            kp: sk.map(|s| s.keypair()),
            pk: sk.map(|s| s.public_key()),
        }
    }
    fn xonly(&self, k: usize) -> [u8; 32] {
        self.kp[k].x_only_public_key().0.to_byte_array()
    }
    /// An ECDSA public key: compressed, uncompressed, hybrid, or not a point.
    fn ecdsa_pk(&self, k: usize, form: u64) -> Vec<u8> {
        match form {
            0..=5 => self.pk[k].serialize().to_vec(),
            6 | 7 => self.pk[k].serialize_uncompressed().to_vec(),
            8 => {
                let mut v = self.pk[k].serialize_uncompressed();
                v[0] = 6 | (v[64] & 1);
                v.to_vec()
            }
            _ => {
                let mut v = self.pk[k].serialize();
                v[1..].fill(0x05); // x = 0x0505...: no point has it (checked below)
                v.to_vec()
            }
        }
    }
    /// A tapscript key: x-only, or (rarely) 33 bytes (an unknown key type, which succeeds),
    /// empty (an error), or 32 bytes that are no point.
    fn tap_pk(&self, k: usize, form: u64) -> Vec<u8> {
        match form {
            0..=7 => self.xonly(k).to_vec(),
            8 => self.pk[k].serialize().to_vec(),
            9 => vec![],
            _ => vec![0x05; 32],
        }
    }
}

struct Case {
    mode: Mode,
    version: i32,
    lock_time: u32,
    sequence: u32,
    /// Which of the two inputs is tested, and how many outputs there are.
    idx: usize,
    n_out: usize,
    amount: i64,
    other_witness: bool,
    /// The locking script as instructions (the scriptPubKey, redeem, witness or leaf script).
    locking: Vec<Vec<u8>>,
    unlocking: Vec<Item>,
    /// Tapscript: leaf version, merkle path, internal key index; taproot: the annex.
    leaf_version: u8,
    path: Vec<[u8; 32]>,
    annex: Option<Vec<u8>>,
    /// A corruption outside the scripts: 1 non-empty scriptSig for a native witness spend /
    /// witness for a bare one, 2 wrong control-block parity, 3 a truncated control block. For
    /// Mode::Program, 1 puts the program in P2SH.
    oddity: u64,
}

/// A random data item for the unlocking part or a push in the locking part.
fn random_data(rng: &mut Rng, keys: &Keys, tap: bool) -> Vec<u8> {
    match rng.below(16) {
        0..=5 => script_num(NUMBERS[rng.below(NUMBERS.len() as u64) as usize]),
        6 => vec![],
        7 => [
            vec![0x80],
            vec![0x00],
            vec![0x01, 0x00],
            vec![0, 0, 0, 0, 0x80],
            vec![1, 0, 0, 0, 0],
        ][rng.below(5) as usize]
            .clone(),
        8 | 9 => {
            let n = 1 + rng.below(8) as usize;
            rng.bytes(n)
        }
        10 => hash160(&keys.pk[rng.below(3) as usize].serialize()).to_vec(),
        11 => sha256(b"preimage").to_vec(),
        12 => b"preimage".to_vec(),
        13 if tap => keys.tap_pk(rng.below(3) as usize, rng.below(11)),
        13 => keys.ecdsa_pk(rng.below(3) as usize, rng.below(10)),
        14 => vec![rng.below(256) as u8; [20, 32, 33, 520, 521][rng.below(5) as usize]],
        _ => vec![1],
    }
}

#[rustfmt::skip]
const ALPHABET: &[u8] = &[
    OP_DUP, OP_DROP, OP_SWAP, OP_OVER, OP_ROT, OP_PICK, OP_ROLL, OP_2DUP, OP_3DUP, OP_IFDUP, OP_DEPTH,
    OP_SIZE, OP_NIP, OP_TUCK, OP_2DROP, OP_2SWAP, OP_2OVER, OP_2ROT, OP_TOALTSTACK, OP_FROMALTSTACK,
    OP_HASH160, OP_SHA256, OP_HASH256, OP_RIPEMD160, OP_SHA1, OP_EQUAL, OP_EQUALVERIFY, OP_VERIFY,
    OP_CHECKSIG, OP_CHECKSIGVERIFY, OP_CHECKMULTISIG, OP_CHECKMULTISIGVERIFY, OP_IF, OP_NOTIF, OP_ELSE,
    OP_ENDIF, OP_ADD, OP_SUB, OP_1ADD, OP_1SUB, OP_NEGATE, OP_ABS, OP_NOT, OP_0NOTEQUAL, OP_BOOLAND,
    OP_BOOLOR, OP_NUMEQUAL, OP_NUMEQUALVERIFY, OP_NUMNOTEQUAL, OP_LESSTHAN, OP_GREATERTHAN,
    OP_LESSTHANOREQUAL, OP_GREATERTHANOREQUAL, OP_MIN, OP_MAX, OP_WITHIN, OP_NOP, OP_NOP1,
    OP_CHECKLOCKTIMEVERIFY, OP_CHECKSEQUENCEVERIFY, OP_NOP4, OP_NOP10, OP_CODESEPARATOR, OP_CHECKSIGADD,
];
/// Disabled, reserved and failing opcodes (OP_SUCCESSx in tapscript), drawn rarely.
#[rustfmt::skip]
const RARE: &[u8] = &[
    OP_RETURN, OP_CAT, OP_MUL, OP_2MUL, OP_LSHIFT, OP_INVERT, OP_VERIF, OP_VERNOTIF, OP_RESERVED, OP_VER,
    OP_RESERVED1, OP_INVALIDOPCODE, 0xbb, 0xc0, 0xfe,
];

fn random_ins(rng: &mut Rng, keys: &Keys, tap: bool) -> Vec<u8> {
    match rng.below(20) {
        0..=6 => {
            let d = random_data(rng, keys, tap);
            push_ins(rng, &d)
        }
        7 => vec![RARE[rng.below(RARE.len() as u64) as usize]],
        _ => vec![ALPHABET[rng.below(ALPHABET.len() as u64) as usize]],
    }
}

fn random_sig(rng: &mut Rng, key: usize, tap: bool) -> Item {
    let ht = if tap {
        [0, 0, 0, 1, 2, 3, 0x81, 0x82, 0x83, 4, 0x84][rng.below(11) as usize]
    } else {
        [1, 1, 1, 1, 2, 3, 0x81, 0x82, 0x83, 0, 4, 0x41][rng.below(12) as usize]
    };
    let variant = if rng.below(3) == 0 {
        1 + rng.below(4) as u8
    } else {
        0
    };
    Item::Sig {
        key,
        ht,
        variant,
        cs: rng.below(3) as usize,
    }
}

fn pk_push(rng: &mut Rng, keys: &Keys, k: usize, tap: bool) -> Vec<u8> {
    let form = if rng.below(4) == 0 { rng.below(11) } else { 0 };
    let pk = if tap {
        keys.tap_pk(k, form)
    } else {
        keys.ecdsa_pk(k, form)
    };
    push_ins(rng, &pk)
}

fn num_push(rng: &mut Rng, n: i64) -> Vec<u8> {
    push_ins(rng, &script_num(n))
}

/// A locking script and the unlocking items meant for it (before random damage).
fn template(rng: &mut Rng, keys: &Keys, mode: Mode) -> (Vec<Vec<u8>>, Vec<Item>) {
    let tap = mode == Mode::Tapscript;
    let k = rng.below(3) as usize;
    let k2 = (k + 1 + rng.below(2) as usize) % 3;
    let op = |o: u8| vec![o];
    let pick = |rng: &mut Rng, xs: &[i64]| xs[rng.below(xs.len() as u64) as usize];
    match rng.below(12) {
        0 => (
            vec![pk_push(rng, keys, k, tap), op(OP_CHECKSIG)],
            vec![random_sig(rng, k, tap)],
        ),
        1 if !tap => {
            let pk = keys.ecdsa_pk(k, if rng.below(4) == 0 { 6 } else { 0 });
            (
                vec![
                    op(OP_DUP),
                    op(OP_HASH160),
                    push_ins(rng, &hash160(&pk)),
                    op(OP_EQUALVERIFY),
                    op(OP_CHECKSIG),
                ],
                vec![random_sig(rng, k, tap), Item::Data(pk)],
            )
        }
        2 if !tap => {
            // m-of-n CHECKMULTISIG with the dummy, signatures in key order.
            let n = 1 + rng.below(3) as usize;
            let m = 1 + rng.below(n as u64) as usize;
            let mut lock = vec![num_push(rng, m as i64)];
            for i in 0..n {
                lock.push(pk_push(rng, keys, i, false));
            }
            lock.push(num_push(rng, n as i64));
            lock.push(op(if rng.below(4) == 0 {
                OP_CHECKMULTISIGVERIFY
            } else {
                OP_CHECKMULTISIG
            }));
            if lock.last() == Some(&vec![OP_CHECKMULTISIGVERIFY]) {
                lock.push(op(OP_1));
            }
            let dummy = if rng.below(5) == 0 { vec![1] } else { vec![] };
            let mut un = vec![Item::Data(dummy)];
            let mut keys_used: Vec<usize> = (0..n).collect();
            while keys_used.len() > m {
                keys_used.remove(rng.below(keys_used.len() as u64) as usize);
            }
            for i in keys_used {
                un.push(random_sig(rng, i, false));
            }
            (lock, un)
        }
        2 => {
            // Tapscript k-of-3 with CHECKSIGADD; empty signatures for the keys not signing.
            let mut lock = Vec::new();
            for i in 0..3 {
                lock.push(pk_push(rng, keys, i, true));
                lock.push(op(if i == 0 { OP_CHECKSIG } else { OP_CHECKSIGADD }));
            }
            let m = 1 + rng.below(3) as i64;
            lock.push(num_push(rng, m));
            lock.push(op(OP_NUMEQUAL));
            let un = (0..3)
                .rev()
                .map(|i| {
                    if rng.below(3) == 0 {
                        Item::Data(vec![])
                    } else {
                        random_sig(rng, i, true)
                    }
                })
                .collect();
            (lock, un)
        }
        3 | 4 => {
            let (check, xs): (u8, &[i64]) = if rng.below(2) == 0 {
                (
                    OP_CHECKLOCKTIMEVERIFY,
                    &[
                        0,
                        499,
                        500,
                        501,
                        499_999_999,
                        1_600_000_000,
                        1_600_000_001,
                        -1,
                    ],
                )
            } else {
                (
                    OP_CHECKSEQUENCEVERIFY,
                    &[
                        0,
                        9,
                        10,
                        11,
                        (1 << 22) | 5,
                        (1 << 22) | 6,
                        1 << 31,
                        0x7fff_ffff,
                        -1,
                    ],
                )
            };
            let n = pick(rng, xs);
            (
                vec![
                    num_push(rng, n),
                    op(check),
                    op(OP_DROP),
                    pk_push(rng, keys, k, tap),
                    op(OP_CHECKSIG),
                ],
                vec![random_sig(rng, k, tap)],
            )
        }
        5 => {
            let sel = [vec![1], vec![], vec![2], vec![1, 0]][rng.below(4) as usize].clone();
            let signer = if sel.is_empty() { k2 } else { k };
            (
                vec![
                    op(OP_IF),
                    pk_push(rng, keys, k, tap),
                    op(OP_CHECKSIG),
                    op(OP_ELSE),
                    pk_push(rng, keys, k2, tap),
                    op(OP_CHECKSIG),
                    op(OP_ENDIF),
                ],
                vec![random_sig(rng, signer, tap), Item::Data(sel)],
            )
        }
        6 => {
            // Signatures over the script after an OP_CODESEPARATOR.
            let mut s2 = random_sig(rng, k2, tap);
            if let Item::Sig { cs, .. } = &mut s2 {
                *cs = rng.below(3) as usize;
            }
            (
                vec![
                    pk_push(rng, keys, k, tap),
                    op(OP_CHECKSIGVERIFY),
                    op(OP_CODESEPARATOR),
                    pk_push(rng, keys, k2, tap),
                    op(OP_CHECKSIG),
                ],
                vec![s2, random_sig(rng, k, tap)],
            )
        }
        7 => {
            let (a, b) = (pick(rng, &NUMBERS), pick(rng, &NUMBERS));
            let arith =
                [OP_ADD, OP_SUB, OP_MIN, OP_MAX, OP_BOOLAND, OP_BOOLOR][rng.below(6) as usize];
            let c = match arith {
                OP_ADD => a.wrapping_add(b),
                OP_SUB => b.wrapping_sub(a),
                OP_MIN => a.min(b),
                OP_MAX => a.max(b),
                OP_BOOLAND => i64::from(a != 0 && b != 0),
                _ => i64::from(a != 0 || b != 0),
            };
            (
                vec![
                    num_push(rng, a),
                    op(arith),
                    num_push(rng, c),
                    op(OP_NUMEQUAL),
                ],
                vec![Item::Data(script_num(b))],
            )
        }
        8 => (
            vec![
                op(OP_SHA256),
                push_ins(rng, &sha256(b"preimage")),
                op(OP_EQUAL),
            ],
            vec![Item::Data(b"preimage".to_vec())],
        ),
        9 if !tap => (
            vec![
                SIG_IN_SCRIPT.to_vec(),
                op(OP_DROP),
                pk_push(rng, keys, k, false),
                op(OP_CHECKSIG),
            ],
            vec![random_sig(rng, k, false)],
        ),
        9 => {
            // Signature checks against tapscript's budget (50 per check, 50 + the witness size).
            let mut lock = vec![pk_push(rng, keys, k, true)];
            for _ in 0..1 + rng.below(8) {
                lock.extend([op(OP_2DUP), op(OP_CHECKSIGVERIFY)]);
            }
            lock.push(op(OP_CHECKSIG));
            let mut sig = random_sig(rng, k, true);
            if let Item::Sig { variant, cs, .. } = &mut sig {
                (*variant, *cs) = (0, 0);
            }
            (lock, vec![sig])
        }
        _ => {
            let n = 1 + rng.below(10) as usize;
            let lock = (0..n).map(|_| random_ins(rng, keys, tap)).collect();
            let m = rng.below(5) as usize;
            let un = (0..m)
                .map(|_| {
                    if rng.below(4) == 0 {
                        let key = rng.below(3) as usize;
                        random_sig(rng, key, tap)
                    } else {
                        Item::Data(random_data(rng, keys, tap))
                    }
                })
                .collect();
            (lock, un)
        }
    }
}

fn random_case(case: u64, keys: &Keys) -> Case {
    let mut rng = rng_for(0xd1ff, case);
    let mode = match rng.below(21) {
        0..=5 => Mode::Bare,
        6..=8 => Mode::P2sh,
        9..=11 => Mode::P2wsh,
        12 => Mode::P2shP2wsh,
        13 | 14 => Mode::P2wpkh,
        15..=17 => Mode::Tapscript,
        18 | 19 => Mode::KeyPath,
        _ => Mode::Program,
    };
    let tap = mode == Mode::Tapscript;
    let (mut locking, mut unlocking) = match mode {
        Mode::P2wpkh => {
            let k = rng.below(3) as usize;
            let pk = keys.ecdsa_pk(k, if rng.below(6) == 0 { rng.below(10) } else { 0 });
            // The script BIP143 signs for P2WPKH, keyed by the program.
            let mut hash = Vec::new();
            push_data(&mut hash, &hash160(&pk));
            let lock = vec![
                vec![OP_DUP],
                vec![OP_HASH160],
                hash,
                vec![OP_EQUALVERIFY],
                vec![OP_CHECKSIG],
            ];
            (lock, vec![random_sig(&mut rng, k, false), Item::Data(pk)])
        }
        Mode::KeyPath => {
            let key = rng.below(3) as usize;
            (vec![], vec![random_sig(&mut rng, key, true)])
        }
        Mode::Program => {
            // The "locking script" is the program: version opcode and push.
            let version = [OP_0, OP_0, OP_1, OP_1, OP_2, OP_16, OP_1NEGATE][rng.below(7) as usize];
            let len = [0, 1, 2, 20, 20, 32, 32, 33, 40, 41][rng.below(10) as usize];
            let prog = rng.bytes(len);
            let items = (0..rng.below(4))
                .map(|_| Item::Data(random_data(&mut rng, keys, false)))
                .collect();
            (vec![vec![version], push_ins(&mut rng, &prog)], items)
        }
        _ => template(&mut rng, keys, mode),
    };
    // Random damage to half of them.
    if rng.below(2) == 0 {
        for _ in 0..1 + rng.below(2) {
            match rng.below(7) {
                0 if !locking.is_empty()
                    && !matches!(mode, Mode::KeyPath | Mode::P2wpkh | Mode::Program) =>
                {
                    locking.remove(rng.below(locking.len() as u64) as usize);
                }
                1 | 2 if !matches!(mode, Mode::KeyPath | Mode::P2wpkh | Mode::Program) => {
                    let at = rng.below(locking.len() as u64 + 1) as usize;
                    locking.insert(at, random_ins(&mut rng, keys, tap));
                }
                3 if !unlocking.is_empty() => {
                    unlocking.remove(rng.below(unlocking.len() as u64) as usize);
                }
                4 => {
                    let at = rng.below(unlocking.len() as u64 + 1) as usize;
                    let item = if mode == Mode::Bare && rng.below(3) == 0 {
                        Item::Op(ALPHABET[rng.below(ALPHABET.len() as u64) as usize])
                    } else {
                        Item::Data(random_data(&mut rng, keys, tap))
                    };
                    unlocking.insert(at, item);
                }
                5 if unlocking.len() >= 2 => {
                    let a = rng.below(unlocking.len() as u64) as usize;
                    let b = rng.below(unlocking.len() as u64) as usize;
                    unlocking.swap(a, b);
                }
                _ if !unlocking.is_empty() => {
                    let at = rng.below(unlocking.len() as u64) as usize;
                    unlocking.insert(at, unlocking[at].clone());
                }
                _ => {}
            }
        }
    }
    let leaf_version = match rng.below(30) {
        0 => 0xc2,
        1 => 0x50 & 0xfe, // 0x50 is the annex tag; as a leaf version it is just unknown
        _ => 0xc0,
    };
    let path = (0..[0, 0, 1, 2][rng.below(4) as usize])
        .map(|_| rng.bytes(32).try_into().unwrap())
        .collect();
    let annex = (matches!(mode, Mode::Tapscript | Mode::KeyPath) && rng.below(6) == 0).then(|| {
        let mut a = vec![0x50];
        let n = rng.below(5) as usize;
        a.extend(rng.bytes(n));
        a
    });
    Case {
        mode,
        version: [1, 2, 2, 3][rng.below(4) as usize],
        lock_time: LOCK_TIMES[rng.below(LOCK_TIMES.len() as u64) as usize],
        sequence: SEQUENCES[rng.below(SEQUENCES.len() as u64) as usize],
        idx: rng.below(2) as usize,
        n_out: 1 + rng.below(2) as usize,
        amount: [0, 1, 10_000, 2_100_000_000_000_000][rng.below(4) as usize],
        other_witness: rng.below(2) == 0,
        locking,
        unlocking,
        leaf_version,
        path,
        annex,
        oddity: match mode {
            Mode::Program => u64::from(rng.below(3) == 0),
            _ if rng.below(25) == 0 => 1 + rng.below(3),
            _ => 0,
        },
    }
}

/// The spending transaction: two inputs (input `idx` is tested, the other spends a P2WPKH
/// output), `n_out` outputs.
fn write_tx(c: &Case, script_sig: &[u8], witness: &[Vec<u8>]) -> Vec<u8> {
    let other_witness: Vec<Vec<u8>> = if c.other_witness {
        vec![vec![0x30; 71], vec![0x02; 33]]
    } else {
        vec![]
    };
    // (scriptSig, witness, sequence) of each input.
    type Input<'a> = (&'a [u8], &'a [Vec<u8>], u32);
    let ins: [Input; 2] = if c.idx == 0 {
        [
            (script_sig, witness, c.sequence),
            (&[], &other_witness, 0xffff_fffe),
        ]
    } else {
        [
            (&[], &other_witness, 0xffff_fffe),
            (script_sig, witness, c.sequence),
        ]
    };
    let segwit = ins.iter().any(|i| !i.1.is_empty());
    let mut v = c.version.to_le_bytes().to_vec();
    if segwit {
        v.extend([0, 1]);
    }
    write_compact_size(&mut v, 2);
    for (n, (ss, _, seq)) in ins.iter().enumerate() {
        v.extend([0xab - n as u8; 32]);
        v.extend((n as u32).to_le_bytes());
        write_compact_size(&mut v, ss.len() as u64);
        v.extend(*ss);
        v.extend(seq.to_le_bytes());
    }
    write_compact_size(&mut v, c.n_out as u64);
    for n in 0..c.n_out {
        v.extend((1000 * n as i64 + 546).to_le_bytes());
        let spk: &[u8] = if n == 0 {
            &[OP_1]
        } else {
            &[
                OP_0, 20, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
            ]
        };
        write_compact_size(&mut v, spk.len() as u64);
        v.extend(spk);
    }
    if segwit {
        for (_, wit, _) in &ins {
            write_compact_size(&mut v, wit.len() as u64);
            for w in *wit {
                write_compact_size(&mut v, w.len() as u64);
                v.extend(w);
            }
        }
    }
    v.extend(c.lock_time.to_le_bytes());
    v
}

const OTHER_SPK: [u8; 22] = [
    OP_0, 20, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9,
];

/// n - s, to make a high-S signature.
fn negate_scalar(s: &[u8]) -> [u8; 32] {
    const N: [u8; 32] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xfe, 0xba, 0xae, 0xdc, 0xe6, 0xaf, 0x48, 0xa0, 0x3b, 0xbf, 0xd2, 0x5e, 0x8c, 0xd0, 0x36,
        0x41, 0x41,
    ];
    let mut out = [0u8; 32];
    let mut borrow = 0i16;
    for i in (0..32).rev() {
        let d = N[i] as i16 - s[i] as i16 - borrow;
        out[i] = d.rem_euclid(256) as u8;
        borrow = i16::from(d < 0);
    }
    out
}

fn ecdsa_sig(keys: &Keys, key: usize, msg: [u8; 32], ht: u8, variant: u8) -> Vec<u8> {
    let sig = keys.sk[key].sign_ecdsa(Message::from_digest(msg));
    let mut der = match variant {
        1 => {
            let mut c = sig.serialize_compact();
            let s = negate_scalar(&c[32..]);
            c[32..].copy_from_slice(&s);
            ecdsa::Signature::from_compact(&c)
                .unwrap()
                .serialize_der()
                .to_vec()
        }
        2 => {
            // R padded with a zero byte: lax DER takes it, strict DER does not.
            let der = sig.serialize_der().to_vec();
            let rlen = der[3] as usize;
            let mut v = vec![0x30, der[1] + 1, 0x02, rlen as u8 + 1, 0];
            v.extend(&der[4..]);
            v
        }
        _ => sig.serialize_der().to_vec(),
    };
    if variant == 3 {
        let n = der.len();
        der[n - 5] ^= 0x10;
    }
    der.push(if variant == 4 { ht ^ 0x02 } else { ht });
    der
}

fn schnorr_sig(keypair: &Keypair, msg: Option<[u8; 32]>, ht: u8, variant: u8) -> Vec<u8> {
    // An undefined hash type has no message; sign something so that the length is right.
    let mut sig = keypair
        .sign_schnorr_no_aux_rand(&msg.unwrap_or([0x42; 32]))
        .to_byte_array()
        .to_vec();
    match variant {
        1 | 3 => sig[17] ^= 0x01,
        _ => {}
    }
    if ht != 0 || variant == 2 {
        sig.push(if variant == 4 { ht ^ 0x01 } else { ht });
    }
    sig
}

/// The transaction, the outputs it spends and the tested input, with every signature made.
fn build(c: &Case, keys: &Keys) -> (Vec<u8>, Vec<SpentOutput>, usize) {
    // What signatures sign: the locking script without its own signature push (legacy
    // FindAndDelete takes it out of the hashed script); the real script is known once they are
    // made.
    let stripped: Vec<Vec<u8>> = c
        .locking
        .iter()
        .filter(|i| **i != SIG_IN_SCRIPT)
        .cloned()
        .collect();
    let script: Vec<u8> = stripped.concat();
    let codeseps: Vec<usize> = stripped
        .iter()
        .enumerate()
        .filter(|(_, i)| **i == [OP_CODESEPARATOR])
        .map(|(n, _)| n)
        .collect();
    // The tapscript tree, or the key-path output key.
    let internal = keys.xonly(2);
    let leaf = tapleaf_hash(c.leaf_version, &script);
    let mut root = leaf;
    for node in &c.path {
        let (a, b) = if root <= *node {
            (root, *node)
        } else {
            (*node, root)
        };
        root = tagged_hash("TapBranch", &[&a, &b]);
    }
    let key_k = match c.unlocking.first() {
        Some(Item::Sig { key, .. }) => *key,
        _ => 0,
    };
    let (output_key, parity, tweaked) = match c.mode {
        Mode::KeyPath => {
            let p = keys.xonly(key_k);
            let t = Scalar::from_be_bytes(tagged_hash("TapTweak", &[&p])).unwrap();
            let kp = keys.kp[key_k].add_xonly_tweak(&t).unwrap();
            let (q, parity) = kp.x_only_public_key();
            (q.to_byte_array(), parity, Some(kp))
        }
        _ => {
            let t = Scalar::from_be_bytes(tagged_hash("TapTweak", &[&internal, &root])).unwrap();
            let (q, parity) = XOnlyPublicKey::from_byte_array(internal)
                .unwrap()
                .add_tweak(&t)
                .unwrap();
            (q.to_byte_array(), parity, None)
        }
    };
    let p2sh = |s: &[u8]| [&[OP_HASH160, 20][..], &hash160(s), &[OP_EQUAL]].concat();
    let spk_of = |script: &[u8]| match c.mode {
        Mode::Bare => script.to_vec(),
        Mode::P2sh => p2sh(script),
        Mode::P2wsh => [&[OP_0, 32][..], &sha256(script)].concat(),
        Mode::P2shP2wsh => p2sh(&[&[OP_0, 32][..], &sha256(script)].concat()),
        Mode::P2wpkh => [&[OP_0, 20][..], &script[3..23]].concat(),
        Mode::Tapscript | Mode::KeyPath => [&[OP_1, 32][..], &output_key].concat(),
        Mode::Program if c.oddity == 1 => p2sh(script),
        Mode::Program => script.to_vec(),
    };
    let spent_with = |spk: Vec<u8>| {
        let mut spent = vec![
            SpentOutput::new(c.amount, spk),
            SpentOutput::new(7_000, OTHER_SPK.to_vec()),
        ];
        if c.idx == 1 {
            spent.swap(0, 1);
        }
        spent
    };
    // Only taproot hashes sign the spent scripts, and tapscripts have no signature push.
    let spent = spent_with(spk_of(&script));
    // Signature hashes depend on neither scriptSigs nor witnesses: take them on the skeleton.
    let skeleton = write_tx(c, &[], &[]);
    let tx = parse_tx(&skeleton).unwrap();
    let pre = Precomputed::new(&tx, Some(&spent));
    let mut rng = rng_for(0x519, c.amount as u64 ^ script.len() as u64);
    let items: Vec<Option<Vec<u8>>> = c
        .unlocking
        .iter()
        .map(|item| match *item {
            Item::Data(ref d) => Some(d.clone()),
            Item::Op(_) => None,
            Item::Sig {
                key,
                ht,
                variant,
                cs,
            } => {
                // Signing from the cs-th OP_CODESEPARATOR, where there is one.
                let sep = cs.checked_sub(1).and_then(|j| codeseps.get(j).copied());
                let code = match sep {
                    Some(n) => stripped[n + 1..].concat(),
                    None => script.clone(),
                };
                Some(match c.mode {
                    Mode::Bare | Mode::P2sh | Mode::Program => ecdsa_sig(
                        keys,
                        key,
                        sighash::legacy(&tx, c.idx, &code, ht as i32),
                        ht,
                        variant,
                    ),
                    Mode::P2wsh | Mode::P2shP2wsh | Mode::P2wpkh => {
                        let msg = sighash::segwit_v0(&tx, &pre, c.idx, &code, c.amount, ht as i32);
                        ecdsa_sig(keys, key, msg, ht, variant)
                    }
                    Mode::Tapscript => {
                        let pos = sep.map_or(u32::MAX, |n| n as u32);
                        let msg = sighash::taproot(
                            &tx,
                            &pre,
                            c.idx,
                            ht,
                            c.annex.as_deref(),
                            Some((&leaf, pos)),
                        );
                        schnorr_sig(&keys.kp[key], msg, ht, variant)
                    }
                    Mode::KeyPath => {
                        let kp = if key == key_k {
                            tweaked.unwrap()
                        } else {
                            keys.kp[key]
                        };
                        let msg = sighash::taproot(&tx, &pre, c.idx, ht, c.annex.as_deref(), None);
                        schnorr_sig(&kp, msg, ht, variant)
                    }
                })
            }
        })
        .collect();
    // The real locking script, with the first signature pushed where the template wants it.
    let first_sig = c
        .unlocking
        .iter()
        .zip(&items)
        .find(|(i, _)| matches!(i, Item::Sig { .. }))
        .and_then(|(_, d)| d.clone());
    let script: Vec<u8> = c
        .locking
        .iter()
        .flat_map(|i| {
            if *i == SIG_IN_SCRIPT {
                let sig = first_sig.clone().unwrap_or_else(|| vec![0x30; 71]);
                // As Core pushes it (FindAndDelete finds it), or not.
                if rng.below(4) == 0 {
                    push_ins(&mut rng, &sig)
                } else {
                    [&[sig.len() as u8][..], &sig].concat()
                }
            } else {
                i.clone()
            }
        })
        .collect();
    let spent = spent_with(spk_of(&script));
    let p2wsh = [&[OP_0, 32][..], &sha256(&script)].concat();
    let as_script_sig = |rng: &mut Rng| -> Vec<u8> {
        let mut s = Vec::new();
        for (item, d) in c.unlocking.iter().zip(&items) {
            match (item, d) {
                (Item::Op(o), _) => s.push(*o),
                (_, Some(d)) => s.extend(push_ins(rng, d)),
                _ => unreachable!(),
            }
        }
        s
    };
    let stack: Vec<Vec<u8>> = items.iter().flatten().cloned().collect();
    let (mut script_sig, mut witness) = match c.mode {
        Mode::Bare => (as_script_sig(&mut rng), vec![]),
        Mode::P2sh => {
            let mut s = as_script_sig(&mut rng);
            s.extend(push_ins(&mut rng, &script));
            (s, vec![])
        }
        Mode::P2wsh | Mode::P2shP2wsh => {
            let mut w = stack;
            w.push(script.clone());
            let s = if c.mode == Mode::P2shP2wsh {
                push_ins(&mut rng, &p2wsh)
            } else {
                vec![]
            };
            (s, w)
        }
        Mode::P2wpkh => (vec![], stack),
        Mode::Tapscript => {
            let mut w = stack;
            w.push(script.clone());
            let mut control = vec![c.leaf_version | parity.to_u8()];
            control.extend(internal);
            for node in &c.path {
                control.extend(node);
            }
            match c.oddity {
                2 => control[0] ^= 1,
                3 => {
                    control.pop();
                }
                _ => {}
            }
            w.push(control);
            (vec![], w)
        }
        Mode::KeyPath => (vec![], stack),
        Mode::Program if c.oddity == 1 => (push_ins(&mut rng, &script), stack),
        Mode::Program => (vec![], stack),
    };
    if let Some(a) = &c.annex {
        if matches!(c.mode, Mode::Tapscript | Mode::KeyPath) {
            witness.push(a.clone());
        }
    }
    if c.oddity == 1 && c.mode != Mode::Program {
        if witness.is_empty() {
            witness.push(vec![1]);
        } else if script_sig.is_empty() {
            script_sig.push(OP_0);
        }
    }
    (write_tx(c, &script_sig, &witness), spent, c.idx)
}

/// The random-script flag sets: none, the historical steps, the full set, and TAPROOT without
/// WITNESS; plus one random subset per case. WITNESS always comes with P2SH: Core asserts it
/// (VerifyScript aborts the process otherwise).
const RANDOM_FLAG_SETS: [Flags; 7] = [
    Flags::NONE,
    Flags::P2SH,
    Flags(
        Flags::P2SH.0
            | Flags::DERSIG.0
            | Flags::CHECKLOCKTIMEVERIFY.0
            | Flags::CHECKSEQUENCEVERIFY.0,
    ),
    Flags(Flags::P2SH.0 | Flags::WITNESS.0),
    Flags(Flags::P2SH.0 | Flags::WITNESS.0 | Flags::TAPROOT.0),
    Flags::CONSENSUS,
    Flags(Flags::P2SH.0 | Flags::TAPROOT.0 | Flags::NULLDUMMY.0),
];

/// Random cases (BATCHCRYPT_DIFF_CASES overrides it, for longer hunts).
const RANDOM_CASES: u64 = 20_000;

#[test]
fn random_scripts_agree_with_libbitcoinconsensus() {
    let start = Instant::now();
    let keys = Keys::new();
    assert!(
        PublicKey::from_slice(&keys.ecdsa_pk(0, 9)).is_err(),
        "the invalid key must be invalid"
    );
    assert!(
        XOnlyPublicKey::from_byte_array([0x05; 32]).is_err(),
        "the invalid x-only key must be invalid"
    );
    let modes = [
        Mode::Bare,
        Mode::P2sh,
        Mode::P2wsh,
        Mode::P2shP2wsh,
        Mode::P2wpkh,
        Mode::Tapscript,
        Mode::KeyPath,
        Mode::Program,
    ];
    let cases: u64 = std::env::var("BATCHCRYPT_DIFF_CASES")
        .map_or(RANDOM_CASES, |v| v.parse().expect("a number of cases"));
    // Per mode: cases, valid under the full set (both), and comparisons, disagreements.
    // Per case: mode, whether it has a signature in its locking script, valid under the full set
    // (both), comparisons, disagreements.
    let results: Vec<(Mode, bool, bool, usize, Vec<String>)> = (0..cases)
        .into_par_iter()
        .map(|n| {
            let c = random_case(n, &keys);
            let (raw, spent, idx) = build(&c, &keys);
            let tx = parse_tx(&raw).unwrap();
            let pre = Precomputed::new(&tx, Some(&spent));
            let spent: Vec<TxOut> = spent.iter().map(SpentOutput::as_txout).collect();
            let mut rng = rng_for(0xf1a6, n);
            let mut random = Flags::NONE;
            for (f, _) in CORE_FLAGS {
                if rng.below(2) == 0 {
                    random = random | f;
                }
            }
            if random.has(Flags::WITNESS) {
                random = random | Flags::P2SH;
            }
            let mut disagreements = Vec::new();
            let mut valid_full = false;
            let mut comparisons = 0;
            for flags in RANDOM_FLAG_SETS.into_iter().chain([random]) {
                let (ours, core) = both(&tx, &pre, &spent, idx, flags);
                comparisons += 1;
                if ours.is_ok() != core {
                    disagreements.push(describe(
                        &format!("random case {n} ({:?})", c.mode),
                        &tx,
                        &spent,
                        idx,
                        flags,
                        ours,
                        core,
                    ));
                }
                if flags == Flags::CONSENSUS {
                    valid_full = core && ours.is_ok();
                }
            }
            (
                c.mode,
                c.locking.contains(&SIG_IN_SCRIPT.to_vec()),
                valid_full,
                comparisons,
                disagreements,
            )
        })
        .collect();
    let comparisons: usize = results.iter().map(|r| r.3).sum();
    let disagreements: Vec<&String> = results.iter().flat_map(|r| &r.4).collect();
    eprintln!("{cases} random script cases, {comparisons} comparisons with libbitcoinconsensus:");
    for m in modes {
        let cases = results.iter().filter(|r| r.0 == m).count();
        let valid = results.iter().filter(|r| r.0 == m && r.2).count();
        eprintln!("  {m:?}: {cases} cases, {valid} valid under the full consensus set");
        assert!(
            cases > 0 && valid * 20 >= cases && valid * 20 <= cases * 19,
            "{m:?}: {valid} of {cases} valid"
        );
    }
    let find_and_delete = results.iter().filter(|r| r.1).count();
    let find_and_delete_valid = results.iter().filter(|r| r.1 && r.2).count();
    eprintln!("  of which {find_and_delete} push a signature in the locking script, {find_and_delete_valid} valid");
    assert!(find_and_delete_valid > 0);
    eprintln!(
        "  {} disagreements, {:.1} s",
        disagreements.len(),
        start.elapsed().as_secs_f64()
    );
    assert!(
        disagreements.is_empty(),
        "{} disagreements with libbitcoinconsensus:\n{}",
        disagreements.len(),
        disagreements[..disagreements.len().min(20)]
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The oracle itself: the example of the crate's documentation (a P2PKH spend) passes both, the
/// flag values are Core's, and a broken signature fails both.
#[test]
fn oracle_sanity() {
    for (ours, theirs) in CORE_FLAGS {
        assert_eq!(ours.0, theirs, "{}", ours.names());
    }
    assert!(bitcoinconsensus::version() >= 1);
    let spending = hex::decode(
        "02000000013f7cebd65c27431a90bba7f796914fe8cc2ddfc3f2cbd6f7e5f2fc854534da95000000006b483045022100de1ac3bcdfb0332207c4a91f3832bd2c2915840165f876ab47c5f8996b971c3602201c6c053d750fadde599e6f5c4e1963df0f01fc0d97815e8157e3d59fe09ca30d012103699b464d1d8bc9e47d4fb1cdaa89a1c5783d68363c4dbc4b524ed3d857148617feffffff02836d3c01000000001976a914fc25d6d5c94003bf5b0c7b640a248e2c637fcfb088ac7ada8202000000001976a914fbed3d9b11183209a57999d54d59f67c019e756c88ac6acb0700",
    )
    .unwrap();
    let spk = hex::decode("76a9144bfbaf6afb76cc5771bc6404810d1cc041a6933988ac").unwrap();
    let check = |raw: &[u8], expect: bool| {
        let tx = parse_tx(raw).unwrap();
        let spent = [TxOut {
            value: 630_482_530,
            script_pubkey: &spk,
        }];
        let pre = Precomputed::with_spent(&tx, spent);
        for flags in [Flags::NONE, Flags::P2SH, Flags::CONSENSUS] {
            let (ours, core) = both(&tx, &pre, &spent, 0, flags);
            assert_eq!((ours.is_ok(), core), (expect, expect), "{}", flags.names());
        }
    };
    check(&spending, true);
    let mut broken = spending.clone();
    broken[60] ^= 1; // inside the signature's R
    check(&broken, false);
}

//! Signature hashes: legacy, BIP143 (segwit v0) and BIP341/342 (taproot), byte for byte as Bitcoin
//! Core's `SignatureHash`, `SignatureHashSchnorr` and `PrecomputedTransactionData`
//! (src/script/interpreter.cpp) compute them, quirks included.
//!
//! There is no streaming SHA-256, so each preimage is written into a per-thread buffer that is
//! reused across calls and hashed in one go. What every input of a transaction shares is hashed
//! once, in [`Precomputed`], so signing all inputs of a segwit or taproot transaction stays linear.
//! (Legacy hashes stay quadratic: that is the legacy algorithm itself.)

use super::tx::{write_compact_size, OutPoint, SpentOutput, Tx, TxOut};
use crate::backend::cpu::with_kept;
use crate::sha256::{digest, digest_double, Digest};
use std::sync::OnceLock;

pub const SIGHASH_ALL: u32 = 1;
pub const SIGHASH_NONE: u32 = 2;
pub const SIGHASH_SINGLE: u32 = 3;
pub const SIGHASH_ANYONECANPAY: u32 = 0x80;
/// Taproot only: a 64-byte signature without a hash-type byte; signs like `SIGHASH_ALL`.
pub const SIGHASH_DEFAULT: u8 = 0;

const OP_PUSHDATA1: u8 = 0x4c;
const OP_PUSHDATA2: u8 = 0x4d;
const OP_PUSHDATA4: u8 = 0x4e;
const OP_CODESEPARATOR: u8 = 0xab;

/// Per-transaction hashes, computed once and shared by every input's signature hash.
///
/// The hashes of the transaction's own data ([`TxHashes`]) are made on first use: a
/// transaction whose inputs carry no witness never reaches a BIP143 or BIP341 hash (Bitcoin
/// Core's `Init` skips them too), and most of a pre-segwit block's transactions are such.
#[derive(Clone, Debug)]
pub struct Precomputed {
    tx_hashes: OnceLock<TxHashes>,
    spent: Option<SpentHashes>,
}

/// The hashes of a transaction's outpoints, sequences and outputs.
///
/// The `sha_*` fields are BIP341's single SHA-256 hashes; BIP143's `hash_*` are one more SHA-256
/// of them (SHA256d of the same data), which is how Core derives them too.
#[derive(Clone, Debug)]
pub struct TxHashes {
    /// SHA-256 of every input's outpoint (txid, index) in order.
    pub sha_prevouts: Digest,
    /// SHA-256 of every input's sequence (4 bytes LE each).
    pub sha_sequences: Digest,
    /// SHA-256 of every output serialized (value, compact size, script).
    pub sha_outputs: Digest,
    /// BIP143 hashPrevouts: SHA256d of the outpoints.
    pub hash_prevouts: Digest,
    /// BIP143 hashSequence.
    pub hash_sequence: Digest,
    /// BIP143 hashOutputs.
    pub hash_outputs: Digest,
}

/// What BIP341 needs of the outputs being spent.
#[derive(Clone, Debug)]
struct SpentHashes {
    /// SHA-256 of every spent amount (8 bytes LE each).
    sha_amounts: Digest,
    /// SHA-256 of every spent scriptPubKey with its compact-size length.
    sha_scriptpubkeys: Digest,
    /// The spent outputs serialized as Core's CTxOut, back to back (what ANYONECANPAY commits
    /// to), and where each starts: `txouts[at[i]..at[i + 1]]` is input i's.
    txouts: Vec<u8>,
    at: Vec<usize>,
}

impl Precomputed {
    /// `spent`: the outputs spent by each input, in input order, when known. BIP341 needs all of
    /// them; with `None` only [`legacy`] and [`segwit_v0`] hashes can be computed, and [`taproot`]
    /// returns `None` (Core's missing-data failure).
    ///
    /// # Panics
    /// If `spent` is given with a length other than the number of inputs (Core asserts the same).
    pub fn new(tx: &Tx, spent: Option<&[SpentOutput]>) -> Precomputed {
        match spent {
            Some(spent) => Self::with_spent(tx, spent.iter().map(SpentOutput::as_txout)),
            None => Self::without_spent(),
        }
    }

    /// As [`Precomputed::new`] with the spent outputs given as [`TxOut`]s, one per input.
    ///
    /// # Panics
    /// If `spent` does not yield exactly one output per input.
    pub fn with_spent<'s>(tx: &Tx, spent: impl IntoIterator<Item = TxOut<'s>>) -> Precomputed {
        let mut pre = Self::without_spent();
        let n = tx.inputs.len();
        let mut amounts = Vec::with_capacity(8 * n);
        let mut scripts = Vec::new();
        let mut txouts = Vec::new();
        let mut at = Vec::with_capacity(n + 1);
        at.push(0);
        for out in spent {
            amounts.extend_from_slice(&out.value.to_le_bytes());
            put_script(&mut scripts, out.script_pubkey);
            put_txout(&mut txouts, out.value, out.script_pubkey);
            at.push(txouts.len());
        }
        assert_eq!(at.len() - 1, n, "one spent output per input");
        pre.spent = Some(SpentHashes {
            sha_amounts: digest(&amounts),
            sha_scriptpubkeys: digest(&scripts),
            txouts,
            at,
        });
        pre
    }

    fn without_spent() -> Precomputed {
        Precomputed {
            tx_hashes: OnceLock::new(),
            spent: None,
        }
    }

    /// The hashes of `tx`'s own data, made on the first call. `tx` must be the transaction this
    /// was computed from.
    pub fn tx_hashes(&self, tx: &Tx) -> &TxHashes {
        self.tx_hashes.get_or_init(|| TxHashes::new(tx))
    }

    /// Whether the spent outputs were given (taproot hashes need them).
    pub fn has_spent_outputs(&self) -> bool {
        self.spent.is_some()
    }

    /// BIP341's sha_amounts, where the spent outputs were given.
    pub fn sha_amounts(&self) -> Option<&Digest> {
        self.spent.as_ref().map(|s| &s.sha_amounts)
    }

    /// BIP341's sha_scriptpubkeys, where the spent outputs were given.
    pub fn sha_scriptpubkeys(&self) -> Option<&Digest> {
        self.spent.as_ref().map(|s| &s.sha_scriptpubkeys)
    }
}

impl TxHashes {
    fn new(tx: &Tx) -> TxHashes {
        let mut prevouts = Vec::with_capacity(36 * tx.inputs.len());
        let mut sequences = Vec::with_capacity(4 * tx.inputs.len());
        for txin in &tx.inputs {
            put_outpoint(&mut prevouts, &txin.prevout);
            sequences.extend_from_slice(&txin.sequence.to_le_bytes());
        }
        let mut outputs = Vec::new();
        for out in &tx.outputs {
            put_txout(&mut outputs, out.value, out.script_pubkey);
        }
        let (sha_prevouts, sha_sequences, sha_outputs) =
            (digest(&prevouts), digest(&sequences), digest(&outputs));
        TxHashes {
            sha_prevouts,
            sha_sequences,
            sha_outputs,
            hash_prevouts: digest(&sha_prevouts),
            hash_sequence: digest(&sha_sequences),
            hash_outputs: digest(&sha_outputs),
        }
    }
}

/// Core's `SignatureHash` for `SigVersion::BASE` (pre-segwit scripts).
///
/// `script_code` is the scriptCode as the interpreter has it (after FindAndDelete); its
/// OP_CODESEPARATORs are dropped here, as Core's serializer does. `hash_type` is the raw value
/// (Core passes the signature's last byte as an int; the test vectors use any i32); it is
/// serialized as 4 bytes LE.
///
/// # Panics
/// If `input` is not an input of `tx`.
pub fn legacy(tx: &Tx, input: usize, script_code: &[u8], hash_type: i32) -> Digest {
    assert!(input < tx.inputs.len(), "input {input} out of range");
    let base = hash_type & 0x1f;
    let anyone_can_pay = hash_type & SIGHASH_ANYONECANPAY as i32 != 0;
    let single = base == SIGHASH_SINGLE as i32;
    let none = base == SIGHASH_NONE as i32;
    if single && input >= tx.outputs.len() {
        // Core's historical bug, now consensus: SINGLE without a matching output signs the
        // number one (uint256 ONE, little-endian) instead of failing.
        let mut one = [0u8; 32];
        one[0] = 1;
        return one;
    }
    with_kept(|buf: &mut Vec<u8>| {
        buf.extend_from_slice(&tx.version.to_le_bytes());
        // ANYONECANPAY: only the input being signed.
        let signed = if anyone_can_pay {
            input..input + 1
        } else {
            0..tx.inputs.len()
        };
        write_compact_size(buf, signed.len() as u64);
        for i in signed {
            let txin = &tx.inputs[i];
            put_outpoint(buf, &txin.prevout);
            if i == input {
                put_script_code_without_separators(buf, script_code);
                buf.extend_from_slice(&txin.sequence.to_le_bytes());
            } else {
                // Other inputs' scripts are blanked; with NONE or SINGLE their sequences are
                // zeroed too, so others may update them.
                buf.push(0);
                let sequence = if single || none { 0 } else { txin.sequence };
                buf.extend_from_slice(&sequence.to_le_bytes());
            }
        }
        let n_outputs = if none {
            0
        } else if single {
            input + 1
        } else {
            tx.outputs.len()
        };
        write_compact_size(buf, n_outputs as u64);
        for (i, out) in tx.outputs[..n_outputs].iter().enumerate() {
            if single && i != input {
                // SINGLE: outputs before the signed one are null CTxOuts (value -1, no script).
                put_txout(buf, -1, &[]);
            } else {
                put_txout(buf, out.value, out.script_pubkey);
            }
        }
        buf.extend_from_slice(&tx.lock_time.to_le_bytes());
        buf.extend_from_slice(&hash_type.to_le_bytes());
        digest_double(buf)
    })
}

/// BIP143's signature hash (`SigVersion::WITNESS_V0`). `script_code` is used as given (no
/// OP_CODESEPARATOR removal), serialized with its compact-size length; `amount` is the value of
/// the output being spent. `pre` must have been computed from `tx`.
///
/// # Panics
/// If `input` is not an input of `tx`.
pub fn segwit_v0(
    tx: &Tx,
    pre: &Precomputed,
    input: usize,
    script_code: &[u8],
    amount: i64,
    hash_type: i32,
) -> Digest {
    let txin = &tx.inputs[input];
    let base = hash_type & 0x1f;
    let anyone_can_pay = hash_type & SIGHASH_ANYONECANPAY as i32 != 0;
    let single = base == SIGHASH_SINGLE as i32;
    let single_or_none = single || base == SIGHASH_NONE as i32;
    let zero = [0u8; 32];
    let hashes = pre.tx_hashes(tx);
    let hash_prevouts = if anyone_can_pay {
        zero
    } else {
        hashes.hash_prevouts
    };
    let hash_sequence = if anyone_can_pay || single_or_none {
        zero
    } else {
        hashes.hash_sequence
    };
    let hash_outputs = if !single_or_none {
        hashes.hash_outputs
    } else if single && input < tx.outputs.len() {
        let out = &tx.outputs[input];
        let mut ser = Vec::with_capacity(9 + out.script_pubkey.len() + 8);
        put_txout(&mut ser, out.value, out.script_pubkey);
        digest_double(&ser)
    } else {
        // NONE, or SINGLE without a matching output (no bug-compatible ONE here).
        zero
    };
    with_kept(|buf: &mut Vec<u8>| {
        buf.extend_from_slice(&tx.version.to_le_bytes());
        buf.extend_from_slice(&hash_prevouts);
        buf.extend_from_slice(&hash_sequence);
        put_outpoint(buf, &txin.prevout);
        put_script(buf, script_code);
        buf.extend_from_slice(&amount.to_le_bytes());
        buf.extend_from_slice(&txin.sequence.to_le_bytes());
        buf.extend_from_slice(&hash_outputs);
        buf.extend_from_slice(&tx.lock_time.to_le_bytes());
        buf.extend_from_slice(&hash_type.to_le_bytes());
        digest_double(buf)
    })
}

/// BIP341/342's signature hash (Core's `SignatureHashSchnorr`).
///
/// `hash_type` is the taproot hash-type byte (0x00 for a 64-byte signature). `annex` is the
/// annex with its 0x50 prefix, where the witness has one. `leaf` is, for a tapscript spend
/// (BIP342), the tapleaf hash and the position of the last executed OP_CODESEPARATOR
/// (0xffffffff when none); `None` for a key-path spend.
///
/// Returns `None` where Core returns false: the spent outputs were not given, `hash_type` is
/// not one of 0x00-0x03 or 0x81-0x83, or SIGHASH_SINGLE has no output at `input`.
///
/// # Panics
/// If `input` is not an input of `tx`.
pub fn taproot(
    tx: &Tx,
    pre: &Precomputed,
    input: usize,
    hash_type: u8,
    annex: Option<&[u8]>,
    leaf: Option<(&[u8; 32], u32)>,
) -> Option<Digest> {
    let tag = tag_hash("TapSighash");
    with_kept(|buf: &mut Vec<u8>| {
        buf.extend_from_slice(&tag);
        buf.extend_from_slice(&tag);
        put_taproot_message(buf, tx, pre, input, hash_type, annex, leaf)?;
        Some(digest(buf))
    })
}

/// The message [`taproot`] hashes with the "TapSighash" tag: the epoch byte 0x00 followed by
/// BIP341's SigMsg (and BIP342's extension). For tests and debugging.
pub fn taproot_message(
    tx: &Tx,
    pre: &Precomputed,
    input: usize,
    hash_type: u8,
    annex: Option<&[u8]>,
    leaf: Option<(&[u8; 32], u32)>,
) -> Option<Vec<u8>> {
    let mut msg = Vec::with_capacity(256);
    put_taproot_message(&mut msg, tx, pre, input, hash_type, annex, leaf)?;
    Some(msg)
}

fn put_taproot_message(
    buf: &mut Vec<u8>,
    tx: &Tx,
    pre: &Precomputed,
    input: usize,
    hash_type: u8,
    annex: Option<&[u8]>,
    leaf: Option<(&[u8; 32], u32)>,
) -> Option<()> {
    let txin = &tx.inputs[input];
    let spent = pre.spent.as_ref()?;
    if !(hash_type <= 0x03 || (0x81..=0x83).contains(&hash_type)) {
        return None;
    }
    let output_type = match hash_type {
        SIGHASH_DEFAULT => SIGHASH_ALL as u8,
        _ => hash_type & 0x03,
    };
    let anyone_can_pay = hash_type & SIGHASH_ANYONECANPAY as u8 != 0;
    let single = output_type == SIGHASH_SINGLE as u8;
    // Core fails this case only after writing part of the message; the result is the same.
    if single && input >= tx.outputs.len() {
        return None;
    }

    buf.push(0); // epoch
    buf.push(hash_type);
    buf.extend_from_slice(&tx.version.to_le_bytes());
    buf.extend_from_slice(&tx.lock_time.to_le_bytes());
    let hashes = pre.tx_hashes(tx);
    if !anyone_can_pay {
        buf.extend_from_slice(&hashes.sha_prevouts);
        buf.extend_from_slice(&spent.sha_amounts);
        buf.extend_from_slice(&spent.sha_scriptpubkeys);
        buf.extend_from_slice(&hashes.sha_sequences);
    }
    if output_type == SIGHASH_ALL as u8 {
        buf.extend_from_slice(&hashes.sha_outputs);
    }

    // spend_type = ext_flag * 2 + annex_present; ext_flag is 1 for tapscript.
    buf.push(2 * leaf.is_some() as u8 + annex.is_some() as u8);
    if anyone_can_pay {
        put_outpoint(buf, &txin.prevout);
        buf.extend_from_slice(&spent.txouts[spent.at[input]..spent.at[input + 1]]);
        buf.extend_from_slice(&txin.sequence.to_le_bytes());
    } else {
        buf.extend_from_slice(&(input as u32).to_le_bytes());
    }
    if let Some(annex) = annex {
        // sha_annex hashes the annex serialized as a byte vector: with its length.
        let mut ser = Vec::with_capacity(annex.len() + 9);
        put_script(&mut ser, annex);
        buf.extend_from_slice(&digest(&ser));
    }

    if single {
        let out = &tx.outputs[input];
        let mut ser = Vec::with_capacity(9 + out.script_pubkey.len() + 8);
        put_txout(&mut ser, out.value, out.script_pubkey);
        buf.extend_from_slice(&digest(&ser));
    }

    if let Some((tapleaf_hash, codeseparator_pos)) = leaf {
        buf.extend_from_slice(tapleaf_hash);
        buf.push(0); // key_version: 32-byte x-only keys
        buf.extend_from_slice(&codeseparator_pos.to_le_bytes());
    }
    Some(())
}

/// BIP340's tagged hash: SHA256(SHA256(tag) || SHA256(tag) || parts...).
pub fn tagged_hash(tag: &str, parts: &[&[u8]]) -> Digest {
    let tag = tag_hash(tag);
    with_kept(|buf: &mut Vec<u8>| {
        buf.extend_from_slice(&tag);
        buf.extend_from_slice(&tag);
        for part in parts {
            buf.extend_from_slice(part);
        }
        digest(buf)
    })
}

/// SHA256(tag), cached for the tags consensus uses.
fn tag_hash(tag: &str) -> Digest {
    const CACHED: [&str; 5] = [
        "TapSighash",
        "TapLeaf",
        "TapBranch",
        "TapTweak",
        "BIP0340/challenge",
    ];
    static HASHES: OnceLock<[Digest; 5]> = OnceLock::new();
    match CACHED.iter().position(|&t| t == tag) {
        Some(i) => HASHES.get_or_init(|| CACHED.map(|t| digest(t.as_bytes())))[i],
        None => digest(tag.as_bytes()),
    }
}

/// A script (or any byte vector) as Core serializes it: compact-size length, then the bytes.
fn put_script(buf: &mut Vec<u8>, script: &[u8]) {
    write_compact_size(buf, script.len() as u64);
    buf.extend_from_slice(script);
}

fn put_outpoint(buf: &mut Vec<u8>, outpoint: &OutPoint) {
    buf.extend_from_slice(&outpoint.txid);
    buf.extend_from_slice(&outpoint.vout.to_le_bytes());
}

fn put_txout(buf: &mut Vec<u8>, value: i64, script_pubkey: &[u8]) {
    buf.extend_from_slice(&value.to_le_bytes());
    put_script(buf, script_pubkey);
}

/// Core's `GetScriptOp` on `script[pos..]`: `Ok((opcode, next))` for a parsed operation, or
/// `Err(stop)` where parsing stops: at the end, or inside a truncated push. Like Core, a
/// truncated push leaves `stop` past the opcode and whatever length bytes could be read.
fn next_op(script: &[u8], pos: usize) -> Result<(u8, usize), usize> {
    let Some(&opcode) = script.get(pos) else {
        return Err(pos);
    };
    let mut pc = pos + 1;
    let len_bytes = match opcode {
        OP_PUSHDATA1 => 1,
        OP_PUSHDATA2 => 2,
        OP_PUSHDATA4 => 4,
        _ => 0,
    };
    let size = if opcode < OP_PUSHDATA1 {
        opcode as usize
    } else if len_bytes > 0 {
        let Some(len) = script.get(pc..pc + len_bytes) else {
            return Err(pc);
        };
        pc += len_bytes;
        len.iter().rev().fold(0usize, |n, &b| n << 8 | b as usize)
    } else {
        0
    };
    if script.len() - pc < size {
        return Err(pc);
    }
    Ok((opcode, pc + size))
}

/// Core's `CTransactionSignatureSerializer::SerializeScriptCode`: the scriptCode with every
/// OP_CODESEPARATOR opcode removed (a 0xab byte inside a push is data and stays). Core writes
/// the length (the script's size less the separators found) and then the kept bytes only up to
/// where opcode parsing stopped, so a script ending in a truncated push is serialized short
/// of its declared length; that is consensus, so it is reproduced here.
fn put_script_code_without_separators(buf: &mut Vec<u8>, script: &[u8]) {
    let mut separators = Vec::new();
    let mut pos = 0;
    let stop = loop {
        match next_op(script, pos) {
            Ok((opcode, next)) => {
                if opcode == OP_CODESEPARATOR {
                    separators.push(pos);
                }
                pos = next;
            }
            Err(stop) => break stop,
        }
    };
    write_compact_size(buf, (script.len() - separators.len()) as u64);
    let mut start = 0;
    for at in separators {
        buf.extend_from_slice(&script[start..at]);
        start = at + 1;
    }
    buf.extend_from_slice(&script[start..stop]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script_code(script: &[u8]) -> Vec<u8> {
        let mut buf = Vec::new();
        put_script_code_without_separators(&mut buf, script);
        buf
    }

    #[test]
    fn codeseparators_removed_but_not_inside_pushes() {
        // OP_1 OP_CODESEPARATOR <ab ab> OP_CODESEPARATOR OP_CHECKSIG
        assert_eq!(
            script_code(&[0x51, 0xab, 0x02, 0xab, 0xab, 0xab, 0xac]),
            [5, 0x51, 0x02, 0xab, 0xab, 0xac]
        );
        // OP_CODESEPARATOR OP_PUSHDATA1 <ab> OP_CODESEPARATOR
        assert_eq!(
            script_code(&[0xab, 0x4c, 0x01, 0xab, 0xab]),
            [3, 0x4c, 0x01, 0xab]
        );
        // Only separators.
        assert_eq!(script_code(&[0xab, 0xab]), [0]);
        assert_eq!(script_code(&[]), [0]);
        // No separators: unchanged.
        assert_eq!(script_code(&[0x76, 0xa9, 0x88]), [3, 0x76, 0xa9, 0x88]);
    }

    #[test]
    fn truncated_push_serialized_as_core_does() {
        // A push of 5 bytes with 2 present: Core declares 3 bytes but writes only the opcode
        // (parsing stopped right after it).
        assert_eq!(script_code(&[0x05, 0x01, 0x02]), [3, 0x05]);
        // After a separator, likewise; the separator found before still counts.
        assert_eq!(script_code(&[0xab, 0x05, 0x01, 0x02]), [3, 0x05]);
        // PUSHDATA2 with one length byte: stops after the opcode.
        assert_eq!(script_code(&[0x51, 0x4d, 0x01]), [3, 0x51, 0x4d]);
        // PUSHDATA1 whose length byte is present but data short: stops after the length byte,
        // and an 0xab in the unread data is not a separator.
        assert_eq!(script_code(&[0x4c, 0x03, 0xab]), [3, 0x4c, 0x03]);
    }

    #[test]
    fn next_op_reads_push_lengths_little_endian() {
        let mut s = vec![OP_PUSHDATA2, 0x02, 0x01];
        s.extend(std::iter::repeat_n(0, 0x102));
        assert_eq!(next_op(&s, 0), Ok((OP_PUSHDATA2, s.len())));
        let s = [OP_PUSHDATA4, 1, 0, 0, 0, 0xab];
        assert_eq!(next_op(&s, 0), Ok((OP_PUSHDATA4, 6)));
        assert_eq!(next_op(&s, 6), Err(6));
    }

    #[test]
    fn compact_size_boundaries() {
        for (n, want) in [
            (0xfcu64, vec![0xfc]),
            (0xfd, vec![0xfd, 0xfd, 0x00]),
            (0xffff, vec![0xfd, 0xff, 0xff]),
            (0x1_0000, vec![0xfe, 0, 0, 1, 0]),
            (0x1_0000_0000, vec![0xff, 0, 0, 0, 0, 1, 0, 0, 0]),
        ] {
            let mut buf = Vec::new();
            write_compact_size(&mut buf, n);
            assert_eq!(buf, want, "{n:#x}");
        }
    }

    #[test]
    fn tagged_hash_matches_definition() {
        for tag in ["TapLeaf", "SomethingElse"] {
            let t = digest(tag.as_bytes());
            let mut m = [t, t].concat();
            m.extend_from_slice(b"data");
            assert_eq!(tagged_hash(tag, &[b"da", b"ta"]), digest(&m));
        }
    }
}

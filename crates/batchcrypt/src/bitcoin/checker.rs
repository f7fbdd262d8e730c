//! Signature checks behind an interface, as in Bitcoin Core: the interpreter asks a
//! [`SignatureChecker`]; [`TxChecker`] turns each request into a message (the signature hash)
//! and an encoding-normalized signature, and hands the arithmetic to a [`SigVerifier`], which
//! may verify at once ([`CpuVerifier`]) or record the check for a batch and answer later
//! ([`crate::bitcoin::batch`]).

pub use super::script::check::{NoTxChecker, SignatureChecker};
use super::script::{ExecData, ScriptError, SigVersion};
use super::sighash::{self, Precomputed};
use super::Tx;
use crate::secp256k1::EcdsaOptions;
use crate::sig::SigFormat;

/// The arithmetic of one signature, on a message already hashed.
pub trait SigVerifier {
    /// `sig` is `r || s` with S made low; `pubkey` SEC1 (02/03 and 33 bytes, or 04 and 65).
    fn ecdsa(&mut self, msg: &[u8; 32], sig: &[u8; 64], pubkey: &[u8]) -> bool;
    fn schnorr(&mut self, msg: &[u8; 32], sig: &[u8; 64], pubkey: &[u8; 32]) -> bool;
    /// Whether this verifier defers its checks to a batch, so that checks a script may ask for
    /// later ([`Self::expect_ecdsa`]) are worth naming now. The default: it verifies at once.
    fn defers(&self) -> bool {
        false
    }
    /// A check the script may ask for next (see [`SignatureChecker::expect_multisig`]): a
    /// batching verifier may verify it with the others. The default ignores it.
    fn expect_ecdsa(&mut self, msg: &[u8; 32], sig: &[u8; 64], pubkey: &[u8]) {
        let _ = (msg, sig, pubkey);
    }
}

impl<V: SigVerifier + ?Sized> SigVerifier for &mut V {
    fn ecdsa(&mut self, msg: &[u8; 32], sig: &[u8; 64], pubkey: &[u8]) -> bool {
        (**self).ecdsa(msg, sig, pubkey)
    }
    fn schnorr(&mut self, msg: &[u8; 32], sig: &[u8; 64], pubkey: &[u8; 32]) -> bool {
        (**self).schnorr(msg, sig, pubkey)
    }
    fn defers(&self) -> bool {
        (**self).defers()
    }
    fn expect_ecdsa(&mut self, msg: &[u8; 32], sig: &[u8; 64], pubkey: &[u8]) {
        (**self).expect_ecdsa(msg, sig, pubkey)
    }
}

/// libsecp256k1 on this thread, one check at a time, through the same parsing as the batches.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuVerifier;

pub(crate) const BITCOIN_ECDSA: EcdsaOptions = EcdsaOptions {
    format: SigFormat::Compact,
    require_low_s: false,
};

impl SigVerifier for CpuVerifier {
    fn ecdsa(&mut self, msg: &[u8; 32], sig: &[u8; 64], pubkey: &[u8]) -> bool {
        crate::secp256k1::cpu::verify_ecdsa_encoded(msg, sig, pubkey, &BITCOIN_ECDSA).is_ok()
    }
    fn schnorr(&mut self, msg: &[u8; 32], sig: &[u8; 64], pubkey: &[u8; 32]) -> bool {
        crate::secp256k1::cpu::verify_schnorr_encoded(sig, pubkey, msg).is_ok()
    }
}

/// A public key as Bitcoin Core accepts it for ECDSA: CPubKey's length rule by prefix (02/03:
/// 33 bytes; 04/06/07: 65), hybrid keys (06/07) with the y parity their prefix states, given to
/// the verifier as 04. Whether the point is on the curve is the verifier's question.
pub fn consensus_pubkey(pk: &[u8]) -> Option<std::borrow::Cow<'_, [u8]>> {
    match (pk.first()?, pk.len()) {
        (2 | 3, 33) | (4, 65) => Some(pk.into()),
        (&prefix @ (6 | 7), 65) => {
            if (pk[64] & 1) != (prefix & 1) {
                return None;
            }
            let mut v = pk.to_vec();
            v[0] = 4;
            Some(v.into())
        }
        _ => None,
    }
}

/// A DER signature (without the sighash byte) as Bitcoin Core parses it for consensus: lax DER
/// (libsecp256k1's `ecdsa_signature_parse_der_lax`), S made low. An r or s that overflows the
/// group order parses as zero, which no verifier accepts. None if even lax DER fails.
pub fn consensus_signature(der: &[u8]) -> Option<[u8; 64]> {
    let mut sig = secp256k1::ecdsa::Signature::from_der_lax(der).ok()?;
    sig.normalize_s();
    Some(sig.serialize_compact())
}

const SEQUENCE_FINAL: u32 = 0xffff_ffff;
const LOCKTIME_THRESHOLD: i64 = 500_000_000;
const SEQUENCE_LOCKTIME_DISABLE_FLAG: i64 = 1 << 31;
const SEQUENCE_LOCKTIME_TYPE_FLAG: i64 = 1 << 22;
const SEQUENCE_LOCKTIME_MASK: i64 = 0xffff;

/// The checker of one input of a transaction (Core's TransactionSignatureChecker).
pub struct TxChecker<'t, 'a, V> {
    pub tx: &'t Tx<'a>,
    pub input: usize,
    /// The value of the output this input spends (BIP143 signs it).
    pub amount: i64,
    pub pre: &'t Precomputed,
    pub verifier: V,
    /// The messages of the last multisig's signatures, by hash type, for its script code: its
    /// loop asks each signature against several keys, one sighash serves them all.
    multisig: Option<MultisigMessages>,
}

struct MultisigMessages {
    sv: SigVersion,
    script_code: Vec<u8>,
    by_hash_type: Vec<(u8, [u8; 32])>,
}

impl<'t, 'a, V: SigVerifier> TxChecker<'t, 'a, V> {
    /// The checker of input `input` of `tx`, which spends an output of value `amount`; `pre`
    /// computed from `tx`.
    pub fn new(
        tx: &'t Tx<'a>,
        input: usize,
        amount: i64,
        pre: &'t Precomputed,
        verifier: V,
    ) -> Self {
        TxChecker {
            tx,
            input,
            amount,
            pre,
            verifier,
            multisig: None,
        }
    }

    /// The message an ECDSA signature with `hash_type` signs (legacy or BIP143 by `sv`), kept
    /// for the rest of a multisig when it is that multisig's script code.
    fn ecdsa_message(&mut self, script_code: &[u8], hash_type: u8, sv: SigVersion) -> [u8; 32] {
        let multisig = self
            .multisig
            .as_mut()
            .filter(|m| m.sv == sv && m.script_code == script_code);
        if let Some(&(_, msg)) = multisig
            .as_ref()
            .and_then(|m| m.by_hash_type.iter().find(|(h, _)| *h == hash_type))
        {
            return msg;
        }
        let msg = match sv {
            SigVersion::Base => sighash::legacy(self.tx, self.input, script_code, hash_type as i32),
            _ => sighash::segwit_v0(
                self.tx,
                self.pre,
                self.input,
                script_code,
                self.amount,
                hash_type as i32,
            ),
        };
        if let Some(m) = multisig {
            m.by_hash_type.push((hash_type, msg));
        }
        msg
    }
}

impl<V: SigVerifier> SignatureChecker for TxChecker<'_, '_, V> {
    fn check_ecdsa(
        &mut self,
        sig: &[u8],
        pubkey: &[u8],
        script_code: &[u8],
        sv: SigVersion,
    ) -> bool {
        let Some(key) = consensus_pubkey(pubkey) else {
            return false;
        };
        let Some((&hash_type, der)) = sig.split_last() else {
            return false;
        };
        let Some(rs) = consensus_signature(der) else {
            return false;
        };
        let msg = self.ecdsa_message(script_code, hash_type, sv);
        self.verifier.ecdsa(&msg, &rs, &key)
    }

    fn expect_multisig(
        &mut self,
        sigs: &[&[u8]],
        keys: &[&[u8]],
        script_code: &[u8],
        sv: SigVersion,
    ) {
        if !self.verifier.defers() {
            return;
        }
        let m = self.multisig.get_or_insert_with(|| MultisigMessages {
            sv,
            script_code: Vec::new(),
            by_hash_type: Vec::new(),
        });
        m.sv = sv;
        m.script_code.clear();
        m.script_code.extend_from_slice(script_code);
        m.by_hash_type.clear();
        let slack = keys.len() - sigs.len();
        for (i, sig) in sigs.iter().enumerate() {
            let Some((&hash_type, der)) = sig.split_last() else {
                continue;
            };
            let Some(rs) = consensus_signature(der) else {
                continue;
            };
            let msg = self.ecdsa_message(script_code, hash_type, sv);
            for key in &keys[i..=i + slack] {
                if let Some(key) = consensus_pubkey(key) {
                    self.verifier.expect_ecdsa(&msg, &rs, &key);
                }
            }
        }
    }

    fn check_schnorr(
        &mut self,
        sig: &[u8],
        pubkey: &[u8; 32],
        sv: SigVersion,
        exec: &ExecData,
    ) -> Result<(), ScriptError> {
        let (rs, hash_type) = match sig.len() {
            64 => (sig, 0),
            65 if sig[64] == 0 => return Err(ScriptError::SchnorrSigHashtype),
            65 => (&sig[..64], sig[64]),
            _ => return Err(ScriptError::SchnorrSigSize),
        };
        let leaf = match (sv, &exec.tapleaf_hash) {
            (SigVersion::Tapscript, Some(h)) => Some((h, exec.codeseparator_pos)),
            _ => None,
        };
        let msg = sighash::taproot(
            self.tx,
            self.pre,
            self.input,
            hash_type,
            exec.annex.as_deref(),
            leaf,
        )
        .ok_or(ScriptError::SchnorrSigHashtype)?;
        if self.verifier.schnorr(&msg, rs.try_into().unwrap(), pubkey) {
            Ok(())
        } else {
            Err(ScriptError::SchnorrSig)
        }
    }

    fn check_lock_time(&self, lock_time: i64) -> bool {
        let tx_lock = self.tx.lock_time as i64;
        // Heights and times are not comparable.
        if (tx_lock < LOCKTIME_THRESHOLD) != (lock_time < LOCKTIME_THRESHOLD) {
            return false;
        }
        if lock_time > tx_lock {
            return false;
        }
        // A final input would let the transaction's own lock time be ignored.
        self.tx.inputs[self.input].sequence != SEQUENCE_FINAL
    }

    fn check_sequence(&self, sequence: i64) -> bool {
        let tx_seq = self.tx.inputs[self.input].sequence as i64;
        if (self.tx.version as u32) < 2 || tx_seq & SEQUENCE_LOCKTIME_DISABLE_FLAG != 0 {
            return false;
        }
        let mask = SEQUENCE_LOCKTIME_TYPE_FLAG | SEQUENCE_LOCKTIME_MASK;
        let (have, want) = (tx_seq & mask, sequence & mask);
        if (have < SEQUENCE_LOCKTIME_TYPE_FLAG) != (want < SEQUENCE_LOCKTIME_TYPE_FLAG) {
            return false;
        }
        want <= have
    }
}

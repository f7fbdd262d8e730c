//! What the interpreter asks of the transaction around a script (Core's BaseSignatureChecker):
//! signature and lock-time checks behind one interface, so that an implementation may verify at
//! once or defer the arithmetic to a batch ([`crate::bitcoin::checker`]); and the two pieces of
//! signature arithmetic the interpreter runs itself (the low-S test and the taproot tweak).

use super::{ExecData, ScriptError, SigVersion};
use crate::bitcoin::sighash;

/// What the interpreter asks of the transaction it runs in (Core's BaseSignatureChecker).
pub trait SignatureChecker {
    /// An ECDSA check: `sig` with its sighash byte, `script_code` the script from the last
    /// OP_CODESEPARATOR (after FindAndDelete in legacy scripts). False for anything malformed.
    fn check_ecdsa(
        &mut self,
        sig: &[u8],
        pubkey: &[u8],
        script_code: &[u8],
        sv: SigVersion,
    ) -> bool;
    /// A BIP340 check (key path or tapscript): a 64- or 65-byte signature, else an error.
    fn check_schnorr(
        &mut self,
        sig: &[u8],
        pubkey: &[u8; 32],
        sv: SigVersion,
        exec: &ExecData,
    ) -> Result<(), ScriptError>;
    fn check_lock_time(&self, lock_time: i64) -> bool;
    fn check_sequence(&self, sequence: i64) -> bool;
    /// Before CHECKMULTISIG's loop, which asks `check_ecdsa` for `sigs[i]` against `keys[j]`
    /// only where `0 <= j - i <= keys.len() - sigs.len()`, and which of those pairs it asks
    /// depends on the answers. A checker that defers its checks to a batch may verify every such
    /// pair at once instead of learning the answers a round at a time. Decides nothing: the
    /// default ignores it.
    fn expect_multisig(
        &mut self,
        sigs: &[&[u8]],
        keys: &[&[u8]],
        script_code: &[u8],
        sv: SigVersion,
    ) {
        let _ = (sigs, keys, script_code, sv);
    }
}

/// A checker outside any transaction: every signature and lock time fails.
pub struct NoTxChecker;

impl SignatureChecker for NoTxChecker {
    fn check_ecdsa(&mut self, _: &[u8], _: &[u8], _: &[u8], _: SigVersion) -> bool {
        false
    }
    fn check_schnorr(
        &mut self,
        _: &[u8],
        _: &[u8; 32],
        _: SigVersion,
        _: &ExecData,
    ) -> Result<(), ScriptError> {
        Err(ScriptError::SchnorrSig)
    }
    fn check_lock_time(&self, _: i64) -> bool {
        false
    }
    fn check_sequence(&self, _: i64) -> bool {
        false
    }
}

/// Whether a DER signature (without sighash byte) has a low S (Core's CPubKey::CheckLowS: a
/// signature that does not even parse laxly is not low).
pub fn is_low_s(der: &[u8]) -> bool {
    let Ok(sig) = secp256k1::ecdsa::Signature::from_der_lax(der) else {
        return false;
    };
    let mut normalized = sig;
    normalized.normalize_s();
    normalized == sig
}

/// BIP341: whether `output` is `internal + t·G` with `t = TapTweak(internal || merkle_root)` and
/// the stated parity.
pub fn check_tap_tweak(
    internal: &[u8; 32],
    merkle_root: &[u8; 32],
    output: &[u8; 32],
    odd: bool,
) -> bool {
    use secp256k1::{Parity, Scalar, XOnlyPublicKey};
    let Ok(p) = XOnlyPublicKey::from_byte_array(*internal) else {
        return false;
    };
    let Ok(q) = XOnlyPublicKey::from_byte_array(*output) else {
        return false;
    };
    let t = sighash::tagged_hash("TapTweak", &[internal, merkle_root]);
    let Ok(t) = Scalar::from_be_bytes(t) else {
        return false;
    };
    p.tweak_add_check(&q, if odd { Parity::Odd } else { Parity::Even }, t)
}

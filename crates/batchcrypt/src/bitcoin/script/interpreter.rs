//! The interpreter: Bitcoin Core's EvalScript, VerifyScript and VerifyWitnessProgram, rule for
//! rule. Signature checks go through a [`SignatureChecker`], which may verify at once or defer.

use super::check::{check_tap_tweak, is_low_s, SignatureChecker};
use super::num::{cast_to_bool, clamp_int, decode, encode};
use super::opcodes::*;
use super::*;
use std::borrow::Cow;

type Stack = Vec<StackItem>;

/// What a signature check needs beyond the script (Core's ScriptExecutionData).
#[derive(Clone, Debug, Default)]
pub struct ExecData {
    /// The tapleaf hash of the script being run (tapscript only).
    pub tapleaf_hash: Option<[u8; 32]>,
    /// Opcode position of the last executed OP_CODESEPARATOR (0xffffffff for none).
    pub codeseparator_pos: u32,
    /// The annex, with its 0x50 prefix (taproot only).
    pub annex: Option<Vec<u8>>,
    /// BIP342's validation weight budget left.
    pub validation_weight_left: i64,
}

const LOCKTIME_DISABLE_FLAG: i64 = 1 << 31;
const VALIDATION_WEIGHT_PER_SIGOP_PASSED: i64 = 50;
const VALIDATION_WEIGHT_OFFSET: i64 = 50;
const TAPROOT_LEAF_MASK: u8 = 0xfe;
const TAPROOT_LEAF_TAPSCRIPT: u8 = 0xc0;
const TAPROOT_CONTROL_BASE_SIZE: usize = 33;
const TAPROOT_CONTROL_NODE_SIZE: usize = 32;
const TAPROOT_CONTROL_MAX_SIZE: usize = 33 + 32 * 128;
const ANNEX_TAG: u8 = 0x50;

fn top(stack: &Stack, i: usize) -> Result<&StackItem, ScriptError> {
    stack
        .len()
        .checked_sub(i)
        .map(|k| &stack[k])
        .ok_or(ScriptError::InvalidStackOperation)
}

fn need(stack: &Stack, n: usize) -> Result<(), ScriptError> {
    if stack.len() < n {
        Err(ScriptError::InvalidStackOperation)
    } else {
        Ok(())
    }
}

fn bool_item(b: bool) -> StackItem {
    if b {
        StackItem::from_slice(&[1])
    } else {
        StackItem::new()
    }
}

/// Core's CheckMinimalPush.
fn minimal_push(data: &[u8], opcode: u8) -> bool {
    match data.len() {
        0 => opcode == OP_0,
        1 if (1..=16).contains(&data[0]) => false,
        1 if data[0] == 0x81 => false,
        n if n <= 75 => opcode as usize == n,
        n if n <= 255 => opcode == OP_PUSHDATA1,
        n if n <= 65535 => opcode == OP_PUSHDATA2,
        _ => true,
    }
}

/// BIP66's strict DER with the sighash byte (Core's IsValidSignatureEncoding).
pub fn is_valid_signature_encoding(sig: &[u8]) -> bool {
    let n = sig.len();
    if !(9..=73).contains(&n) || sig[0] != 0x30 || sig[1] as usize != n - 3 {
        return false;
    }
    let len_r = sig[3] as usize;
    if 5 + len_r >= n {
        return false;
    }
    let len_s = sig[5 + len_r] as usize;
    if len_r + len_s + 7 != n {
        return false;
    }
    if sig[2] != 0x02 || len_r == 0 || sig[4] & 0x80 != 0 {
        return false;
    }
    if len_r > 1 && sig[4] == 0 && sig[5] & 0x80 == 0 {
        return false;
    }
    if sig[len_r + 4] != 0x02 || len_s == 0 || sig[len_r + 6] & 0x80 != 0 {
        return false;
    }
    !(len_s > 1 && sig[len_r + 6] == 0 && sig[len_r + 7] & 0x80 == 0)
}

/// Core's CheckSignatureEncoding (the empty signature always passes).
fn check_signature_encoding(sig: &[u8], flags: Flags) -> Result<(), ScriptError> {
    if sig.is_empty() {
        return Ok(());
    }
    if flags.has(Flags::DERSIG | Flags::LOW_S | Flags::STRICTENC)
        && !is_valid_signature_encoding(sig)
    {
        return Err(ScriptError::SigDer);
    }
    if flags.has(Flags::LOW_S) && !is_low_s(&sig[..sig.len() - 1]) {
        return Err(ScriptError::SigHighS);
    }
    if flags.has(Flags::STRICTENC) {
        let base = sig[sig.len() - 1] & !0x80;
        if !(1..=3).contains(&base) {
            return Err(ScriptError::SigHashtype);
        }
    }
    Ok(())
}

/// Core's CheckPubKeyEncoding.
fn check_pubkey_encoding(pk: &[u8], flags: Flags, sv: SigVersion) -> Result<(), ScriptError> {
    let compressed = pk.len() == 33 && (pk[0] == 2 || pk[0] == 3);
    let uncompressed = pk.len() == 65 && pk[0] == 4;
    if flags.has(Flags::STRICTENC) && !compressed && !uncompressed {
        return Err(ScriptError::PubkeyType);
    }
    if flags.has(Flags::WITNESS_PUBKEYTYPE) && sv == SigVersion::WitnessV0 && !compressed {
        return Err(ScriptError::WitnessPubkeyType);
    }
    Ok(())
}

/// The push of `data` as a script would hold it (FindAndDelete's pattern), without a heap
/// allocation for a signature.
fn push_of(data: &[u8]) -> smallvec::SmallVec<[u8; 80]> {
    let mut v = smallvec::SmallVec::new();
    push_data(&mut v, data);
    v
}

/// CHECKSIG outside tapscript: the script code from the last OP_CODESEPARATOR, the signature
/// removed from it in legacy scripts (FindAndDelete), encodings checked, then the checker.
fn checksig_pre_tapscript(
    sig: &[u8],
    pubkey: &[u8],
    script_code: &[u8],
    flags: Flags,
    checker: &mut dyn SignatureChecker,
    sv: SigVersion,
) -> Result<bool, ScriptError> {
    // Only legacy scripts remove the signature from the script code (FindAndDelete).
    let mut code = Cow::Borrowed(script_code);
    if sv == SigVersion::Base {
        let (deleted, found) = find_and_delete(script_code, &push_of(sig));
        if found > 0 && flags.has(Flags::CONST_SCRIPTCODE) {
            return Err(ScriptError::SigFindAndDelete);
        }
        code = deleted;
    }
    check_signature_encoding(sig, flags)?;
    check_pubkey_encoding(pubkey, flags, sv)?;
    let ok = checker.check_ecdsa(sig, pubkey, &code, sv);
    if !ok && flags.has(Flags::NULLFAIL) && !sig.is_empty() {
        return Err(ScriptError::NullFail);
    }
    Ok(ok)
}

/// CHECKSIG in tapscript (BIP342): the order of these rules is consensus.
fn checksig_tapscript(
    sig: &[u8],
    pubkey: &[u8],
    exec: &mut ExecData,
    flags: Flags,
    checker: &mut dyn SignatureChecker,
) -> Result<bool, ScriptError> {
    let success = !sig.is_empty();
    if success {
        exec.validation_weight_left -= VALIDATION_WEIGHT_PER_SIGOP_PASSED;
        if exec.validation_weight_left < 0 {
            return Err(ScriptError::TapscriptValidationWeight);
        }
    }
    match pubkey.len() {
        0 => return Err(ScriptError::TapscriptEmptyPubkey),
        32 => {
            if success {
                checker.check_schnorr(
                    sig,
                    pubkey.try_into().unwrap(),
                    SigVersion::Tapscript,
                    exec,
                )?;
            }
        }
        _ => {
            if flags.has(Flags::DISCOURAGE_UPGRADABLE_PUBKEYTYPE) {
                return Err(ScriptError::DiscourageUpgradablePubkeyType);
            }
        }
    }
    Ok(success)
}

/// Core's EvalScript: runs `script` on `stack`.
pub fn eval_script(
    stack: &mut Stack,
    script: &[u8],
    flags: Flags,
    checker: &mut dyn SignatureChecker,
    sv: SigVersion,
    exec: &mut ExecData,
) -> Result<(), ScriptError> {
    use ScriptError as E;
    let legacy_limits = matches!(sv, SigVersion::Base | SigVersion::WitnessV0);
    if legacy_limits && script.len() > MAX_SCRIPT_SIZE {
        return Err(E::ScriptSize);
    }
    let minimal = flags.has(Flags::MINIMALDATA);
    let mut altstack: Stack = Vec::new();
    // The condition stack as Core keeps it: its size and the position of the first false.
    let mut cond_size = 0usize;
    let mut first_false: Option<usize> = None;
    let mut op_count = 0usize;
    let mut code_start = 0usize;
    exec.codeseparator_pos = u32::MAX;
    let num = |v: &[u8]| decode(v, minimal, 4);

    let mut ops = Ops::new(script);
    let mut opcode_pos: u32 = 0;
    while let Some(op) = ops.next() {
        let Op { opcode, data } = op.map_err(|_| E::BadOpcode)?;
        let executing = first_false.is_none();
        if data.len() > MAX_SCRIPT_ELEMENT_SIZE {
            return Err(E::PushSize);
        }
        if legacy_limits && opcode > OP_16 {
            op_count += 1;
            if op_count > MAX_OPS_PER_SCRIPT {
                return Err(E::OpCount);
            }
        }
        if matches!(
            opcode,
            OP_CAT
                | OP_SUBSTR
                | OP_LEFT
                | OP_RIGHT
                | OP_INVERT
                | OP_AND
                | OP_OR
                | OP_XOR
                | OP_2MUL
                | OP_2DIV
                | OP_MUL
                | OP_DIV
                | OP_MOD
                | OP_LSHIFT
                | OP_RSHIFT
        ) {
            return Err(E::DisabledOpcode);
        }
        if opcode == OP_CODESEPARATOR
            && sv == SigVersion::Base
            && flags.has(Flags::CONST_SCRIPTCODE)
        {
            return Err(E::OpCodeSeparator);
        }

        if executing && opcode <= OP_PUSHDATA4 {
            if minimal && !minimal_push(data, opcode) {
                return Err(E::MinimalData);
            }
            stack.push(StackItem::from_slice(data));
        } else if executing || (OP_IF..=OP_ENDIF).contains(&opcode) {
            match opcode {
                OP_1NEGATE | OP_1..=OP_16 => {
                    stack.push(encode(opcode as i64 - (OP_1 as i64 - 1)));
                }
                OP_NOP => {}
                OP_CHECKLOCKTIMEVERIFY => {
                    if flags.has(Flags::CHECKLOCKTIMEVERIFY) {
                        let n = decode(top(stack, 1)?, minimal, 5)?;
                        if n < 0 {
                            return Err(E::NegativeLocktime);
                        }
                        if !checker.check_lock_time(n) {
                            return Err(E::UnsatisfiedLocktime);
                        }
                    }
                }
                OP_CHECKSEQUENCEVERIFY => {
                    if flags.has(Flags::CHECKSEQUENCEVERIFY) {
                        let n = decode(top(stack, 1)?, minimal, 5)?;
                        if n < 0 {
                            return Err(E::NegativeLocktime);
                        }
                        if n & LOCKTIME_DISABLE_FLAG == 0 && !checker.check_sequence(n) {
                            return Err(E::UnsatisfiedLocktime);
                        }
                    }
                }
                OP_NOP1 | OP_NOP4..=OP_NOP10 => {
                    if flags.has(Flags::DISCOURAGE_UPGRADABLE_NOPS) {
                        return Err(E::DiscourageUpgradableNops);
                    }
                }
                OP_IF | OP_NOTIF => {
                    let mut value = false;
                    if executing {
                        let v = stack.last().ok_or(E::InvalidStackOperation)?;
                        if sv == SigVersion::Tapscript
                            && (v.len() > 1 || (v.len() == 1 && v[0] != 1))
                        {
                            return Err(E::TapscriptMinimalIf);
                        }
                        if sv == SigVersion::WitnessV0
                            && flags.has(Flags::MINIMALIF)
                            && (v.len() > 1 || (v.len() == 1 && v[0] != 1))
                        {
                            return Err(E::MinimalIf);
                        }
                        value = cast_to_bool(v) != (opcode == OP_NOTIF);
                        stack.pop();
                    }
                    if first_false.is_none() && !value {
                        first_false = Some(cond_size);
                    }
                    cond_size += 1;
                }
                OP_ELSE => {
                    if cond_size == 0 {
                        return Err(E::UnbalancedConditional);
                    }
                    // Toggle the top: only matters when no false lies below it.
                    match first_false {
                        None => first_false = Some(cond_size - 1),
                        Some(f) if f == cond_size - 1 => first_false = None,
                        _ => {}
                    }
                }
                OP_ENDIF => {
                    if cond_size == 0 {
                        return Err(E::UnbalancedConditional);
                    }
                    cond_size -= 1;
                    if first_false == Some(cond_size) {
                        first_false = None;
                    }
                }
                OP_VERIFY => {
                    if !cast_to_bool(top(stack, 1)?) {
                        return Err(E::Verify);
                    }
                    stack.pop();
                }
                OP_RETURN => return Err(E::OpReturn),
                OP_TOALTSTACK => {
                    need(stack, 1)?;
                    altstack.push(stack.pop().unwrap());
                }
                OP_FROMALTSTACK => {
                    stack.push(altstack.pop().ok_or(E::InvalidAltstackOperation)?);
                }
                OP_2DROP => {
                    need(stack, 2)?;
                    stack.truncate(stack.len() - 2);
                }
                OP_2DUP => {
                    need(stack, 2)?;
                    let n = stack.len();
                    stack.extend_from_within(n - 2..);
                }
                OP_3DUP => {
                    need(stack, 3)?;
                    let n = stack.len();
                    stack.extend_from_within(n - 3..);
                }
                OP_2OVER => {
                    need(stack, 4)?;
                    let n = stack.len();
                    stack.extend_from_within(n - 4..n - 2);
                }
                OP_2ROT => {
                    need(stack, 6)?;
                    let n = stack.len();
                    let moved: Vec<_> = stack.drain(n - 6..n - 4).collect();
                    stack.extend(moved);
                }
                OP_2SWAP => {
                    need(stack, 4)?;
                    let n = stack.len();
                    stack.swap(n - 4, n - 2);
                    stack.swap(n - 3, n - 1);
                }
                OP_IFDUP => {
                    let v = top(stack, 1)?;
                    if cast_to_bool(v) {
                        stack.push(v.clone());
                    }
                }
                OP_DEPTH => stack.push(encode(stack.len() as i64)),
                OP_DROP => {
                    need(stack, 1)?;
                    stack.pop();
                }
                OP_DUP => stack.push(top(stack, 1)?.clone()),
                OP_NIP => {
                    need(stack, 2)?;
                    stack.remove(stack.len() - 2);
                }
                OP_OVER => stack.push(top(stack, 2)?.clone()),
                OP_PICK | OP_ROLL => {
                    need(stack, 2)?;
                    let n = clamp_int(num(top(stack, 1)?)?);
                    stack.pop();
                    if n < 0 || n as usize >= stack.len() {
                        return Err(E::InvalidStackOperation);
                    }
                    let at = stack.len() - 1 - n as usize;
                    let v = if opcode == OP_ROLL {
                        stack.remove(at)
                    } else {
                        stack[at].clone()
                    };
                    stack.push(v);
                }
                OP_ROT => {
                    need(stack, 3)?;
                    let n = stack.len();
                    stack.swap(n - 3, n - 2);
                    stack.swap(n - 2, n - 1);
                }
                OP_SWAP => {
                    need(stack, 2)?;
                    let n = stack.len();
                    stack.swap(n - 2, n - 1);
                }
                OP_TUCK => {
                    let v = top(stack, 1)?.clone();
                    need(stack, 2)?;
                    stack.insert(stack.len() - 2, v);
                }
                OP_SIZE => stack.push(encode(top(stack, 1)?.len() as i64)),
                OP_EQUAL | OP_EQUALVERIFY => {
                    need(stack, 2)?;
                    let equal = stack.pop() == stack.pop();
                    if opcode == OP_EQUALVERIFY {
                        if !equal {
                            stack.push(bool_item(false));
                            return Err(E::EqualVerify);
                        }
                    } else {
                        stack.push(bool_item(equal));
                    }
                }
                OP_1ADD | OP_1SUB | OP_NEGATE | OP_ABS | OP_NOT | OP_0NOTEQUAL => {
                    let a = num(top(stack, 1)?)?;
                    let r = match opcode {
                        OP_1ADD => a + 1,
                        OP_1SUB => a - 1,
                        OP_NEGATE => -a,
                        OP_ABS => a.abs(),
                        OP_NOT => (a == 0) as i64,
                        _ => (a != 0) as i64,
                    };
                    stack.pop();
                    stack.push(encode(r));
                }
                OP_ADD
                | OP_SUB
                | OP_BOOLAND
                | OP_BOOLOR
                | OP_NUMEQUAL
                | OP_NUMEQUALVERIFY
                | OP_NUMNOTEQUAL
                | OP_LESSTHAN
                | OP_GREATERTHAN
                | OP_LESSTHANOREQUAL
                | OP_GREATERTHANOREQUAL
                | OP_MIN
                | OP_MAX => {
                    need(stack, 2)?;
                    let a = num(top(stack, 2)?)?;
                    let b = num(top(stack, 1)?)?;
                    let r = match opcode {
                        OP_ADD => a + b,
                        OP_SUB => a - b,
                        OP_BOOLAND => (a != 0 && b != 0) as i64,
                        OP_BOOLOR => (a != 0 || b != 0) as i64,
                        OP_NUMEQUAL | OP_NUMEQUALVERIFY => (a == b) as i64,
                        OP_NUMNOTEQUAL => (a != b) as i64,
                        OP_LESSTHAN => (a < b) as i64,
                        OP_GREATERTHAN => (a > b) as i64,
                        OP_LESSTHANOREQUAL => (a <= b) as i64,
                        OP_GREATERTHANOREQUAL => (a >= b) as i64,
                        OP_MIN => a.min(b),
                        _ => a.max(b),
                    };
                    stack.truncate(stack.len() - 2);
                    stack.push(encode(r));
                    if opcode == OP_NUMEQUALVERIFY {
                        if !cast_to_bool(top(stack, 1)?) {
                            return Err(E::NumEqualVerify);
                        }
                        stack.pop();
                    }
                }
                OP_WITHIN => {
                    need(stack, 3)?;
                    let x = num(top(stack, 3)?)?;
                    let lo = num(top(stack, 2)?)?;
                    let hi = num(top(stack, 1)?)?;
                    stack.truncate(stack.len() - 3);
                    stack.push(bool_item(lo <= x && x < hi));
                }
                OP_RIPEMD160 | OP_SHA1 | OP_SHA256 | OP_HASH160 | OP_HASH256 => {
                    let v = stack.pop().ok_or(E::InvalidStackOperation)?;
                    stack.push(hash_op(opcode, &v));
                }
                OP_CODESEPARATOR => {
                    code_start = ops.pos;
                    exec.codeseparator_pos = opcode_pos;
                }
                OP_CHECKSIG | OP_CHECKSIGVERIFY => {
                    need(stack, 2)?;
                    let (sig, pubkey) = (top(stack, 2)?, top(stack, 1)?);
                    let ok = if sv == SigVersion::Tapscript {
                        checksig_tapscript(sig, pubkey, exec, flags, checker)?
                    } else {
                        checksig_pre_tapscript(
                            sig,
                            pubkey,
                            &script[code_start..],
                            flags,
                            checker,
                            sv,
                        )?
                    };
                    stack.truncate(stack.len() - 2);
                    if opcode == OP_CHECKSIGVERIFY {
                        if !ok {
                            stack.push(bool_item(false));
                            return Err(E::CheckSigVerify);
                        }
                    } else {
                        stack.push(bool_item(ok));
                    }
                }
                OP_CHECKSIGADD => {
                    if legacy_limits {
                        return Err(E::BadOpcode);
                    }
                    need(stack, 3)?;
                    let n = num(top(stack, 2)?)?;
                    let (sig, pubkey) = (top(stack, 3)?, top(stack, 1)?);
                    let ok = checksig_tapscript(sig, pubkey, exec, flags, checker)?;
                    stack.truncate(stack.len() - 3);
                    stack.push(encode(n + ok as i64));
                }
                OP_CHECKMULTISIG | OP_CHECKMULTISIGVERIFY => {
                    if sv == SigVersion::Tapscript {
                        return Err(E::TapscriptCheckMultisig);
                    }
                    let ok = checkmultisig(
                        stack,
                        &script[code_start..],
                        flags,
                        checker,
                        sv,
                        &mut op_count,
                    )?;
                    if opcode == OP_CHECKMULTISIGVERIFY {
                        if !ok {
                            stack.push(bool_item(false));
                            return Err(E::CheckMultisigVerify);
                        }
                    } else {
                        stack.push(bool_item(ok));
                    }
                }
                _ => return Err(E::BadOpcode),
            }
        }
        if stack.len() + altstack.len() > MAX_STACK_SIZE {
            return Err(E::StackSize);
        }
        opcode_pos = opcode_pos.wrapping_add(1);
    }
    if cond_size != 0 {
        return Err(E::UnbalancedConditional);
    }
    Ok(())
}

fn hash_op(opcode: u8, v: &[u8]) -> StackItem {
    use ripemd::Digest as _;
    let sha = crate::sha256::digest;
    match opcode {
        OP_RIPEMD160 => StackItem::from_slice(&ripemd::Ripemd160::digest(v)),
        OP_SHA1 => StackItem::from_slice(&sha1::Sha1::digest(v)),
        OP_SHA256 => StackItem::from_slice(&sha(v)),
        OP_HASH160 => StackItem::from_slice(&ripemd::Ripemd160::digest(sha(v))),
        _ => StackItem::from_slice(&crate::sha256::digest_double(v)),
    }
}

/// CHECKMULTISIG: leaves the arguments popped and returns the verdict (Core's order of checks,
/// its extra dummy argument, NULLDUMMY and NULLFAIL).
fn checkmultisig(
    stack: &mut Stack,
    script_code: &[u8],
    flags: Flags,
    checker: &mut dyn SignatureChecker,
    sv: SigVersion,
    op_count: &mut usize,
) -> Result<bool, ScriptError> {
    use ScriptError as E;
    let minimal = flags.has(Flags::MINIMALDATA);
    let mut i = 1usize;
    need(stack, i)?;
    let mut keys = clamp_int(decode(top(stack, i)?, minimal, 4)?);
    if !(0..=MAX_PUBKEYS_PER_MULTISIG).contains(&keys) {
        return Err(E::PubkeyCount);
    }
    *op_count += keys as usize;
    if *op_count > MAX_OPS_PER_SCRIPT {
        return Err(E::OpCount);
    }
    i += 1;
    let mut ikey = i;
    // The last non-signature item, counting from the top (1): NULLFAIL's clean-up boundary.
    let mut ikey2 = keys as usize + 2;
    i += keys as usize;
    need(stack, i)?;
    let mut sigs = clamp_int(decode(top(stack, i)?, minimal, 4)?);
    if sigs < 0 || sigs > keys {
        return Err(E::SigCount);
    }
    i += 1;
    let mut isig = i;
    i += sigs as usize;
    need(stack, i)?;

    let mut code = Cow::Borrowed(script_code);
    if sv == SigVersion::Base {
        for k in 0..sigs as usize {
            let (deleted, found) = find_and_delete(&code, &push_of(top(stack, isig + k)?));
            if found > 0 {
                if flags.has(Flags::CONST_SCRIPTCODE) {
                    return Err(E::SigFindAndDelete);
                }
                code = Cow::Owned(deleted.into_owned());
            }
        }
    }

    if sigs > 0 && keys > sigs {
        let items = |from: usize, n: i32| -> Result<Vec<&[u8]>, ScriptError> {
            (0..n as usize)
                .map(|k| Ok(&top(stack, from + k)?[..]))
                .collect()
        };
        checker.expect_multisig(&items(isig, sigs)?, &items(ikey, keys)?, &code, sv);
    }
    let mut success = true;
    while success && sigs > 0 {
        let sig = top(stack, isig)?;
        let pubkey = top(stack, ikey)?;
        check_signature_encoding(sig, flags)?;
        check_pubkey_encoding(pubkey, flags, sv)?;
        if checker.check_ecdsa(sig, pubkey, &code, sv) {
            isig += 1;
            sigs -= 1;
        }
        ikey += 1;
        keys -= 1;
        if sigs > keys {
            success = false;
        }
    }

    while i > 1 {
        i -= 1;
        if !success && flags.has(Flags::NULLFAIL) && ikey2 == 0 && !top(stack, 1)?.is_empty() {
            return Err(E::NullFail);
        }
        ikey2 = ikey2.saturating_sub(1);
        stack.pop();
    }
    let dummy = stack.pop().ok_or(E::InvalidStackOperation)?;
    if flags.has(Flags::NULLDUMMY) && !dummy.is_empty() {
        return Err(E::SigNullDummy);
    }
    Ok(success)
}

/// The size of the witness stack serialized (BIP342's validation weight budget).
fn witness_serialized_size(witness: &[&[u8]]) -> usize {
    let cs = |n: usize| crate::bitcoin::tx::compact_size_len(n as u64);
    cs(witness.len()) + witness.iter().map(|w| cs(w.len()) + w.len()).sum::<usize>()
}

/// Runs a witness script (P2WSH, P2WPKH's implied script, a tapscript leaf) on its stack.
fn execute_witness_script(
    stack: &[&[u8]],
    script: &[u8],
    flags: Flags,
    sv: SigVersion,
    checker: &mut dyn SignatureChecker,
    exec: &mut ExecData,
) -> Result<(), ScriptError> {
    use ScriptError as E;
    if sv == SigVersion::Tapscript {
        // OP_SUCCESSx anywhere decides before anything else, even a later malformed push.
        for op in Ops::new(script) {
            let op = op.map_err(|_| E::BadOpcode)?;
            if is_op_success(op.opcode) {
                if flags.has(Flags::DISCOURAGE_OP_SUCCESS) {
                    return Err(E::DiscourageOpSuccess);
                }
                return Ok(());
            }
        }
        if stack.len() > MAX_STACK_SIZE {
            return Err(E::StackSize);
        }
    }
    if stack.iter().any(|e| e.len() > MAX_SCRIPT_ELEMENT_SIZE) {
        return Err(E::PushSize);
    }
    // Room for what the common scripts push (P2WPKH's implied script: two more items).
    let mut st: Stack = Vec::with_capacity(stack.len() + 4);
    st.extend(stack.iter().map(|e| StackItem::from_slice(e)));
    eval_script(&mut st, script, flags, checker, sv, exec)?;
    if st.len() != 1 {
        return Err(E::CleanStack);
    }
    if !cast_to_bool(&st[0]) {
        return Err(E::EvalFalse);
    }
    Ok(())
}

/// The tapleaf hash of a leaf script.
pub fn tapleaf_hash(leaf_version: u8, script: &[u8]) -> [u8; 32] {
    let mut v = Vec::with_capacity(script.len() + 10);
    v.push(leaf_version);
    crate::bitcoin::tx::write_compact_size(&mut v, script.len() as u64);
    v.extend_from_slice(script);
    crate::bitcoin::sighash::tagged_hash("TapLeaf", &[&v])
}

/// BIP341: the control block's path hashes the leaf up to the merkle root, and the output key
/// must be the internal key tweaked by it, with the parity the control block states.
fn verify_taproot_commitment(control: &[u8], program: &[u8], leaf: &[u8; 32]) -> bool {
    let mut k = *leaf;
    for node in control[TAPROOT_CONTROL_BASE_SIZE..].chunks_exact(TAPROOT_CONTROL_NODE_SIZE) {
        k = if k[..] < node[..] {
            crate::bitcoin::sighash::tagged_hash("TapBranch", &[&k, node])
        } else {
            crate::bitcoin::sighash::tagged_hash("TapBranch", &[node, &k])
        };
    }
    let internal: &[u8; 32] = control[1..33].try_into().unwrap();
    let output: &[u8; 32] = program.try_into().unwrap();
    check_tap_tweak(internal, &k, output, control[0] & 1 == 1)
}

fn verify_witness_program(
    witness: &[&[u8]],
    version: u8,
    program: &[u8],
    flags: Flags,
    checker: &mut dyn SignatureChecker,
    is_p2sh: bool,
) -> Result<(), ScriptError> {
    use ScriptError as E;
    let mut exec = ExecData {
        codeseparator_pos: u32::MAX,
        ..Default::default()
    };
    match (version, program.len()) {
        (0, 32) => {
            let (script, stack) = witness.split_last().ok_or(E::WitnessProgramWitnessEmpty)?;
            if crate::sha256::digest(script)[..] != program[..] {
                return Err(E::WitnessProgramMismatch);
            }
            execute_witness_script(
                stack,
                script,
                flags,
                SigVersion::WitnessV0,
                checker,
                &mut exec,
            )
        }
        (0, 20) => {
            if witness.len() != 2 {
                return Err(E::WitnessProgramMismatch);
            }
            let mut script = [0u8; 25];
            script[..3].copy_from_slice(&[OP_DUP, OP_HASH160, 20]);
            script[3..23].copy_from_slice(program);
            script[23..].copy_from_slice(&[OP_EQUALVERIFY, OP_CHECKSIG]);
            execute_witness_script(
                witness,
                &script,
                flags,
                SigVersion::WitnessV0,
                checker,
                &mut exec,
            )
        }
        (0, _) => Err(E::WitnessProgramWrongLength),
        (1, 32) if !is_p2sh => {
            if !flags.has(Flags::TAPROOT) {
                return Ok(());
            }
            let mut stack = witness;
            if stack.is_empty() {
                return Err(E::WitnessProgramWitnessEmpty);
            }
            if stack.len() >= 2 && stack[stack.len() - 1].first() == Some(&ANNEX_TAG) {
                exec.annex = Some(stack[stack.len() - 1].to_vec());
                stack = &stack[..stack.len() - 1];
            }
            if stack.len() == 1 {
                return checker.check_schnorr(
                    stack[0],
                    program.try_into().unwrap(),
                    SigVersion::Taproot,
                    &exec,
                );
            }
            let (control, rest) = stack.split_last().unwrap();
            let (script, stack) = rest.split_last().unwrap();
            if control.len() < TAPROOT_CONTROL_BASE_SIZE
                || control.len() > TAPROOT_CONTROL_MAX_SIZE
                || !(control.len() - TAPROOT_CONTROL_BASE_SIZE)
                    .is_multiple_of(TAPROOT_CONTROL_NODE_SIZE)
            {
                return Err(E::TaprootWrongControlSize);
            }
            let leaf = tapleaf_hash(control[0] & TAPROOT_LEAF_MASK, script);
            if !verify_taproot_commitment(control, program, &leaf) {
                return Err(E::WitnessProgramMismatch);
            }
            exec.tapleaf_hash = Some(leaf);
            if control[0] & TAPROOT_LEAF_MASK == TAPROOT_LEAF_TAPSCRIPT {
                exec.validation_weight_left =
                    witness_serialized_size(witness) as i64 + VALIDATION_WEIGHT_OFFSET;
                return execute_witness_script(
                    stack,
                    script,
                    flags,
                    SigVersion::Tapscript,
                    checker,
                    &mut exec,
                );
            }
            if flags.has(Flags::DISCOURAGE_UPGRADABLE_TAPROOT_VERSION) {
                return Err(E::DiscourageUpgradableTaprootVersion);
            }
            Ok(())
        }
        // Pay-to-anchor (BIP 433's `OP_1 <0x4e73>`): spendable, never discouraged.
        (1, 2) if !is_p2sh && program == [0x4e, 0x73] => Ok(()),
        _ => {
            if flags.has(Flags::DISCOURAGE_UPGRADABLE_WITNESS_PROGRAM) {
                return Err(E::DiscourageUpgradableWitnessProgram);
            }
            Ok(())
        }
    }
}

/// Core's VerifyScript: the scriptSig, then the scriptPubKey on the same stack, then P2SH's redeem
/// script and any witness program, then the clean-stack and unexpected-witness rules.
pub fn verify_script(
    script_sig: &[u8],
    spk: &[u8],
    witness: &[&[u8]],
    flags: Flags,
    checker: &mut dyn SignatureChecker,
) -> Result<(), ScriptError> {
    use ScriptError as E;
    if flags.has(Flags::SIGPUSHONLY) && !is_push_only(script_sig) {
        return Err(E::SigPushOnly);
    }
    let mut exec = ExecData::default();
    let mut stack: Stack = Vec::new();
    eval_script(
        &mut stack,
        script_sig,
        flags,
        checker,
        SigVersion::Base,
        &mut exec,
    )?;
    // Only a P2SH output reads the copy: other inputs skip the copy of their stack.
    let stack_copy = (flags.has(Flags::P2SH) && is_p2sh(spk)).then(|| stack.clone());
    eval_script(&mut stack, spk, flags, checker, SigVersion::Base, &mut exec)?;
    if !stack.last().is_some_and(|v| cast_to_bool(v)) {
        return Err(E::EvalFalse);
    }
    let mut had_witness = false;
    if flags.has(Flags::WITNESS) {
        if let Some((version, program)) = witness_program(spk) {
            had_witness = true;
            if !script_sig.is_empty() {
                return Err(E::WitnessMalleated);
            }
            verify_witness_program(witness, version, program, flags, checker, false)?;
            stack.truncate(1);
        }
    }
    if let Some(copy) = stack_copy {
        if !is_push_only(script_sig) {
            return Err(E::SigPushOnly);
        }
        stack = copy;
        let redeem = stack
            .pop()
            .expect("the P2SH hash check ran on a non-empty stack");
        eval_script(
            &mut stack,
            &redeem,
            flags,
            checker,
            SigVersion::Base,
            &mut exec,
        )?;
        if !stack.last().is_some_and(|v| cast_to_bool(v)) {
            return Err(E::EvalFalse);
        }
        if flags.has(Flags::WITNESS) {
            if let Some((version, program)) = witness_program(&redeem) {
                had_witness = true;
                let mut single_push = Vec::with_capacity(redeem.len() + 3);
                push_data(&mut single_push, &redeem);
                if script_sig != single_push.as_slice() {
                    return Err(E::WitnessMalleatedP2sh);
                }
                verify_witness_program(witness, version, program, flags, checker, true)?;
                stack.truncate(1);
            }
        }
    }
    if flags.has(Flags::CLEANSTACK) && stack.len() != 1 {
        return Err(E::CleanStack);
    }
    if flags.has(Flags::WITNESS) && !had_witness && !witness.is_empty() {
        return Err(E::WitnessUnexpected);
    }
    Ok(())
}

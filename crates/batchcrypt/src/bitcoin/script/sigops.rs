//! Signature-operation counts, as Bitcoin Core counts them for the block limit (80,000 sigop cost).

use super::opcodes::*;
use super::{is_p2sh, witness_program, Flags, Ops, MAX_PUBKEYS_PER_MULTISIG};

/// Core's GetSigOpCount: CHECKSIG counts 1; CHECKMULTISIG counts the key count pushed just before
/// it when `accurate` (and it is OP_1..OP_16), else 20. Counting stops at a malformed push.
pub fn count(script: &[u8], accurate: bool) -> u32 {
    let mut n = 0u32;
    let mut last = OP_INVALIDOPCODE;
    for op in Ops::new(script) {
        let Ok(op) = op else { break };
        match op.opcode {
            OP_CHECKSIG | OP_CHECKSIGVERIFY => n += 1,
            OP_CHECKMULTISIG | OP_CHECKMULTISIGVERIFY => {
                n += if accurate && (OP_1..=OP_16).contains(&last) {
                    (last - OP_1 + 1) as u32
                } else {
                    MAX_PUBKEYS_PER_MULTISIG as u32
                }
            }
            _ => {}
        }
        last = op.opcode;
    }
    n
}

/// The last item a push-only scriptSig pushes (None if it is not push-only).
fn last_push(script_sig: &[u8]) -> Option<&[u8]> {
    let mut last: &[u8] = &[];
    for op in Ops::new(script_sig) {
        let op = op.ok()?;
        if op.opcode > OP_16 {
            return None;
        }
        last = op.data;
    }
    Some(last)
}

/// Sigops of a P2SH spend: those of the redeem script, counted accurately (Core's
/// GetSigOpCount(scriptSig)); for other outputs the output's own accurate count.
pub fn p2sh_count(spk: &[u8], script_sig: &[u8]) -> u32 {
    if !is_p2sh(spk) {
        return count(spk, true);
    }
    last_push(script_sig).map_or(0, |redeem| count(redeem, true))
}

fn witness_program_sigops(version: u8, program: &[u8], witness: &[&[u8]]) -> u32 {
    match (version, program.len(), witness.last()) {
        (0, 20, _) => 1,
        (0, 32, Some(script)) => count(script, true),
        _ => 0,
    }
}

/// Core's CountWitnessSigOps.
pub fn witness_count(script_sig: &[u8], spk: &[u8], witness: &[&[u8]], flags: Flags) -> u32 {
    if !flags.has(Flags::WITNESS) {
        return 0;
    }
    if let Some((v, prog)) = witness_program(spk) {
        return witness_program_sigops(v, prog, witness);
    }
    if is_p2sh(spk) && super::is_push_only(script_sig) {
        // Core takes the last push even when the walk is cut short; push-only already parsed it all.
        let redeem = last_push(script_sig).unwrap_or(&[]);
        if let Some((v, prog)) = witness_program(redeem) {
            return witness_program_sigops(v, prog, witness);
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multisig_counts() {
        // 2 <k1> <k2> <k3> 3 CHECKMULTISIG
        let mut s = vec![OP_2];
        for _ in 0..3 {
            s.push(33);
            s.extend([2u8; 33]);
        }
        s.extend([OP_3, OP_CHECKMULTISIG]);
        assert_eq!(count(&s, true), 3);
        assert_eq!(count(&s, false), 20);
        assert_eq!(count(&[OP_CHECKSIG, OP_CHECKSIGVERIFY, 0x4c], false), 2);
    }
}

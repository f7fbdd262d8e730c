//! Bitcoin Script: one interpreter for every rule set (legacy, P2SH, segwit v0, taproot and
//! tapscript), switched by [`Flags`] per rule as Bitcoin Core's `interpreter.cpp` is, with every
//! signature check behind [`check::SignatureChecker`] so checks can be
//! deferred into a batch.

pub mod asm;
pub mod check;
pub mod error;
pub mod flags;
mod interpreter;
pub mod num;
pub mod opcodes;
pub mod sigops;

pub use error::ScriptError;
pub use flags::Flags;
pub use interpreter::{
    eval_script, is_valid_signature_encoding, tapleaf_hash, verify_script, ExecData,
};

use opcodes::*;
use std::borrow::Cow;

/// One item of the interpreter's stack. Inline up to 80 bytes (a DER signature with its hash
/// type is at most 73, a key 65): an input's pushes, copies and hashes allocate nothing.
pub type StackItem = smallvec::SmallVec<[u8; 80]>;

/// Which rules a script runs under (Core's SigVersion).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SigVersion {
    /// Legacy scripts and P2SH redeem scripts.
    Base,
    /// BIP143: P2WPKH and P2WSH.
    WitnessV0,
    /// BIP341 key path (no script runs).
    Taproot,
    /// BIP342 leaf scripts.
    Tapscript,
}

/// Core's limits.
pub const MAX_SCRIPT_SIZE: usize = 10_000;
pub const MAX_SCRIPT_ELEMENT_SIZE: usize = 520;
pub const MAX_OPS_PER_SCRIPT: usize = 201;
pub const MAX_PUBKEYS_PER_MULTISIG: i32 = 20;
pub const MAX_STACK_SIZE: usize = 1000;

/// One parsed instruction: the opcode and, for pushes, the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Op<'a> {
    pub opcode: u8,
    pub data: &'a [u8],
}

/// Walks a script instruction by instruction (Core's GetScriptOp). A push that runs past the end
/// yields `Err(pos)` where `pos` is where Core leaves its cursor (after the opcode and the length
/// bytes it could read), and the walk stops.
pub struct Ops<'a> {
    script: &'a [u8],
    pub pos: usize,
    failed: bool,
}

impl<'a> Ops<'a> {
    pub fn new(script: &'a [u8]) -> Self {
        Ops {
            script,
            pos: 0,
            failed: false,
        }
    }
}

impl<'a> Iterator for Ops<'a> {
    type Item = Result<Op<'a>, usize>;

    fn next(&mut self) -> Option<Self::Item> {
        let s = self.script;
        if self.failed || self.pos >= s.len() {
            return None;
        }
        let opcode = s[self.pos];
        self.pos += 1;
        if opcode > OP_PUSHDATA4 {
            return Some(Ok(Op { opcode, data: &[] }));
        }
        let width = match opcode {
            OP_PUSHDATA1 => 1,
            OP_PUSHDATA2 => 2,
            OP_PUSHDATA4 => 4,
            _ => 0,
        };
        let len = if width == 0 {
            opcode as usize
        } else {
            if s.len() - self.pos < width {
                self.failed = true;
                return Some(Err(self.pos));
            }
            let mut le = [0u8; 8];
            le[..width].copy_from_slice(&s[self.pos..self.pos + width]);
            self.pos += width;
            u64::from_le_bytes(le) as usize
        };
        if s.len() - self.pos < len {
            self.failed = true;
            return Some(Err(self.pos));
        }
        let data = &s[self.pos..self.pos + len];
        self.pos += len;
        Some(Ok(Op { opcode, data }))
    }
}

/// Core's IsPushOnly: every instruction parses and is a push or OP_1NEGATE..OP_16 (OP_RESERVED
/// included, as in Core).
pub fn is_push_only(script: &[u8]) -> bool {
    Ops::new(script).all(|op| op.is_ok_and(|op| op.opcode <= OP_16))
}

/// `OP_HASH160 <20 bytes> OP_EQUAL`.
pub fn is_p2sh(spk: &[u8]) -> bool {
    spk.len() == 23 && spk[0] == OP_HASH160 && spk[1] == 0x14 && spk[22] == OP_EQUAL
}

/// A witness program: a version opcode (OP_0, OP_1..OP_16) and one push of 2 to 40 bytes.
pub fn witness_program(spk: &[u8]) -> Option<(u8, &[u8])> {
    if !(4..=42).contains(&spk.len()) {
        return None;
    }
    let version = match spk[0] {
        OP_0 => 0,
        v @ OP_1..=OP_16 => v - OP_1 + 1,
        _ => return None,
    };
    (spk[1] as usize + 2 == spk.len()).then(|| (version, &spk[2..]))
}

/// Appends the push of `data` as Core's `CScript() << data` writes it (the shortest push opcode
/// for its length, OP_0 for empty data).
pub fn push_data(out: &mut impl Extend<u8>, data: &[u8]) {
    let n = data.len();
    if n < OP_PUSHDATA1 as usize {
        out.extend([n as u8]);
    } else if n <= 0xff {
        out.extend([OP_PUSHDATA1, n as u8]);
    } else if n <= 0xffff {
        out.extend([OP_PUSHDATA2]);
        out.extend((n as u16).to_le_bytes());
    } else {
        out.extend([OP_PUSHDATA4]);
        out.extend((n as u32).to_le_bytes());
    }
    out.extend(data.iter().copied());
}

/// Core's FindAndDelete: removes every occurrence of `pattern` that starts at an instruction
/// boundary (matches may repeat back to back). Returns the script, borrowed where nothing was
/// removed, and how many were removed.
pub fn find_and_delete<'s>(script: &'s [u8], pattern: &[u8]) -> (Cow<'s, [u8]>, usize) {
    if pattern.is_empty() {
        return (Cow::Borrowed(script), 0);
    }
    // Built only once a match is found: most scripts hold none, and a copy per CHECKSIG showed
    // in profiles.
    let mut result: Option<Vec<u8>> = None;
    let mut found = 0;
    let (mut pc, mut pc2) = (0usize, 0usize);
    let mut ops = Ops::new(script);
    loop {
        let at = pc;
        while script.len() - pc >= pattern.len() && &script[pc..pc + pattern.len()] == pattern {
            pc += pattern.len();
            found += 1;
        }
        if pc != at {
            let r = result.get_or_insert_with(|| Vec::with_capacity(script.len()));
            r.extend_from_slice(&script[pc2..at]);
            pc2 = pc;
        }
        ops.pos = pc;
        match ops.next() {
            Some(Ok(_)) => pc = ops.pos,
            _ => break,
        }
    }
    match result {
        Some(mut r) => {
            r.extend_from_slice(&script[pc2..]);
            (Cow::Owned(r), found)
        }
        None => (Cow::Borrowed(script), 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_stop_at_truncated_pushes() {
        let v: Vec<_> = Ops::new(&[0x02, 0xaa, 0xbb, 0x76, 0x4c]).collect();
        assert_eq!(v.len(), 3);
        assert_eq!(
            v[0],
            Ok(Op {
                opcode: 2,
                data: &[0xaa, 0xbb]
            })
        );
        assert_eq!(v[2], Err(5));
        assert_eq!(Ops::new(&[0x4d, 0x01]).next(), Some(Err(1)));
        assert_eq!(Ops::new(&[0x03, 0x01]).next(), Some(Err(1)));
    }

    #[test]
    fn find_and_delete_as_core() {
        // Core's script_FindAndDelete cases.
        let cases: &[(&[u8], &[u8], &[u8], usize)] = &[
            (&[0xab, 0xab, 0x61], &[0xab], &[0x61], 2),
            (&[0x03, 0x02, 0xff, 0x03], &[0x03, 0x02, 0xff, 0x03], &[], 1),
            (
                &[0x03, 0x02, 0xff, 0x03, 0x03, 0x02, 0xff, 0x03],
                &[0x03, 0x02, 0xff, 0x03],
                &[],
                2,
            ),
            (
                &[0x03, 0x02, 0xff, 0x03, 0x03, 0x02, 0xff, 0x03],
                &[0x02],
                &[0x03, 0x02, 0xff, 0x03, 0x03, 0x02, 0xff, 0x03],
                0,
            ),
            (&[0x01, 0x02, 0x01, 0x02], &[0x01, 0x02], &[], 2),
            (&[0x00, 0x00, 0x61], &[0x00], &[0x61], 2),
            // A match inside a push is not at a boundary.
            (
                &[0x02, 0x01, 0x02, 0x01, 0x02],
                &[0x01, 0x02],
                &[0x02, 0x01, 0x02],
                1,
            ),
        ];
        for &(script, pat, want, n) in cases {
            let (s, found) = find_and_delete(script, pat);
            assert_eq!(found, n, "{script:02x?}");
            assert_eq!(&s[..], want, "{script:02x?}");
            assert_eq!(matches!(s, Cow::Borrowed(_)), n == 0);
        }
    }

    #[test]
    fn witness_programs() {
        let mut p2wpkh = vec![0x00, 0x14];
        p2wpkh.extend([7; 20]);
        assert_eq!(witness_program(&p2wpkh), Some((0, &[7u8; 20][..])));
        let mut p2tr = vec![0x51, 0x20];
        p2tr.extend([7; 32]);
        assert_eq!(witness_program(&p2tr).unwrap().0, 1);
        assert_eq!(witness_program(&[0x51, 0x02, 0x4e, 0x73]).unwrap().0, 1);
        assert_eq!(witness_program(&[0x51, 0x01, 0x4e]), None);
    }
}

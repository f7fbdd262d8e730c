//! Script assembly as Bitcoin Core's test data writes it (Core's ParseScript): decimal numbers
//! pushed as script numbers, `0x..` raw bytes inserted as they are, `'text'` pushed, opcode names
//! with or without `OP_`.

use super::num;
use super::opcodes::{self, OP_0, OP_1};

/// Parses Core's script assembly.
pub fn parse(s: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for w in s.split_whitespace() {
        let digits = w.strip_prefix('-').unwrap_or(w);
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            let n: i64 = w
                .parse()
                .ok()
                .filter(|n: &i64| n.abs() <= 0xffff_ffff)
                .ok_or_else(|| format!("number {w} outside -0xffffffff..0xffffffff"))?;
            match n {
                0 => out.push(OP_0),
                -1 | 1..=16 => out.push((n + (OP_1 as i64 - 1)) as u8),
                _ => super::push_data(&mut out, &num::encode(n)),
            }
        } else if let Some(hex) = w.strip_prefix("0x").filter(|h| !h.is_empty()) {
            out.extend(hex::decode(hex).map_err(|e| format!("bad hex {w}: {e}"))?);
        } else if w.len() >= 2 && w.starts_with('\'') && w.ends_with('\'') {
            super::push_data(&mut out, &w.as_bytes()[1..w.len() - 1]);
        } else {
            // Core's table has OP_RESERVED and the opcodes from OP_NOP on, not the push opcodes.
            let op = opcodes::by_name(w)
                .filter(|&op| op == opcodes::OP_RESERVED || op >= opcodes::OP_NOP)
                .filter(|&op| op <= opcodes::OP_CHECKSIGADD)
                .ok_or_else(|| format!("unknown opcode {w}"))?;
            out.push(op);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_core_forms() {
        assert_eq!(
            parse("0 1 16 -1 17").unwrap(),
            vec![0x00, 0x51, 0x60, 0x4f, 0x01, 0x11]
        );
        assert_eq!(
            parse("DUP OP_HASH160 0x14 0x0102").unwrap(),
            vec![0x76, 0xa9, 0x14, 1, 2]
        );
        assert_eq!(parse("'ab'").unwrap(), vec![2, b'a', b'b']);
        assert_eq!(parse("NOP2 CHECKSEQUENCEVERIFY").unwrap(), vec![0xb1, 0xb2]);
        assert!(parse("FOO").is_err());
        assert!(parse("PUSHDATA1").is_err());
    }
}

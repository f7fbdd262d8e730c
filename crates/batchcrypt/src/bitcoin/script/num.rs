//! Script numbers: little-endian sign-magnitude, at most 4 bytes as operands (5 for lock times),
//! results of any size up to 64 bits. Core's CScriptNum.

use super::{ScriptError, StackItem};

/// A number read from the stack. Core throws on overflow or a non-minimal encoding, which the
/// interpreter reports as `SCRIPTNUM`.
pub fn decode(v: &[u8], require_minimal: bool, max_size: usize) -> Result<i64, ScriptError> {
    if v.len() > max_size {
        return Err(ScriptError::ScriptNum);
    }
    if require_minimal && !v.is_empty() {
        let last = v[v.len() - 1];
        // A last byte of 0x00/0x80 is only needed when the byte before has its top bit set.
        if last & 0x7f == 0 && (v.len() == 1 || v[v.len() - 2] & 0x80 == 0) {
            return Err(ScriptError::ScriptNum);
        }
    }
    if v.is_empty() {
        return Ok(0);
    }
    let mut r: i64 = 0;
    for (i, &b) in v.iter().enumerate() {
        r |= (b as i64) << (8 * i);
    }
    let sign_bit = 0x80i64 << (8 * (v.len() - 1));
    Ok(if r & sign_bit != 0 {
        -(r & !sign_bit)
    } else {
        r
    })
}

/// The minimal encoding of `n`.
pub fn encode(n: i64) -> StackItem {
    if n == 0 {
        return StackItem::new();
    }
    let neg = n < 0;
    let mut abs = n.unsigned_abs();
    let mut out = StackItem::new();
    while abs > 0 {
        out.push(abs as u8);
        abs >>= 8;
    }
    if out[out.len() - 1] & 0x80 != 0 {
        out.push(if neg { 0x80 } else { 0 });
    } else if neg {
        *out.last_mut().unwrap() |= 0x80;
    }
    out
}

/// CScriptNum::getint: the value clamped to a 32-bit int.
pub fn clamp_int(n: i64) -> i32 {
    n.clamp(i32::MIN as i64, i32::MAX as i64) as i32
}

/// Core's CastToBool: any non-zero byte, except a lone sign bit in the last byte (negative zero).
pub fn cast_to_bool(v: &[u8]) -> bool {
    for (i, &b) in v.iter().enumerate() {
        if b != 0 {
            return !(i == v.len() - 1 && b == 0x80);
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for n in [
            0i64,
            1,
            -1,
            127,
            128,
            -128,
            255,
            256,
            0x7fff_ffff,
            -0x7fff_ffff,
            1 << 40,
        ] {
            assert_eq!(decode(&encode(n), true, 8), Ok(n), "{n}");
        }
        assert_eq!(encode(-1)[..], [0x81]);
        assert_eq!(encode(128)[..], [0x80, 0x00]);
        assert_eq!(encode(-128)[..], [0x80, 0x80]);
    }

    #[test]
    fn minimality_and_size() {
        assert_eq!(decode(&[0x00], true, 4), Err(ScriptError::ScriptNum));
        assert_eq!(decode(&[0x80], true, 4), Err(ScriptError::ScriptNum));
        assert_eq!(decode(&[0x80], false, 4), Ok(0));
        assert_eq!(decode(&[0x01, 0x00], true, 4), Err(ScriptError::ScriptNum));
        assert_eq!(decode(&[0x80, 0x00], true, 4), Ok(128));
        assert_eq!(
            decode(&[1, 2, 3, 4, 5], false, 4),
            Err(ScriptError::ScriptNum)
        );
        assert_eq!(decode(&[1, 2, 3, 4, 5], false, 5), Ok(0x05_0403_0201));
    }

    #[test]
    fn booleans() {
        assert!(!cast_to_bool(&[]));
        assert!(!cast_to_bool(&[0, 0, 0x80]));
        assert!(cast_to_bool(&[0, 0x80, 0]));
        assert!(cast_to_bool(&[1]));
    }
}

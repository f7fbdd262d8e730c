//! What signature verification shares across curves and schemes: the verdict of one item
//! ([`Reason`]) and of a batch ([`Verdicts`]), the signature encodings (strict DER, compact
//! `r || s`), SEC1 public keys, and range checks against a curve's n and p. The rules of each
//! scheme (low S, BIP340's x-only keys, SM2's t = r + s) live with the scheme.

pub(crate) mod batch;
pub(crate) mod items;
pub(crate) mod order;

/// Why one item of a batch did not verify. A malformed item is not an error of the batch: its slot
/// holds the reason and the other items are still checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum Reason {
    /// The signature is not strict DER (BIP66): bad tags or lengths, a negative or non-minimally
    /// encoded integer, an integer over 33 bytes, or bytes after the sequence.
    #[error("signature is not strict DER")]
    BadDer,
    /// A compact signature that is not 64 bytes.
    #[error("compact signature must be 64 bytes")]
    BadLength,
    #[error("signature r is zero")]
    RZero,
    /// ECDSA `r >= n`; Schnorr `r >= p`.
    #[error("signature r is out of range")]
    ROutOfRange,
    #[error("signature s is zero")]
    SZero,
    /// `s >= n`.
    #[error("signature s is out of range")]
    SOutOfRange,
    /// `s > n/2` while low S is required (BIP62/BIP146).
    #[error("signature s is high (above n/2) and low S is required")]
    HighS,
    /// Wrong length or prefix: not 33 bytes with 02/03 or 65 bytes with 04 (hybrid 06/07 included).
    #[error("public key encoding is not SEC1 compressed or uncompressed")]
    BadPublicKeyEncoding,
    /// A coordinate is not below the field prime p.
    #[error("public key coordinate is not below the field prime")]
    PublicKeyOutOfRange,
    /// The coordinates are field elements but not a point of the curve (or, for an x alone, no
    /// point has that x).
    #[error("public key is not a point on the curve")]
    PublicKeyNotOnCurve,
    /// Everything is well formed and the verification equation is false.
    #[error("signature does not match the message and public key")]
    SignatureMismatch,
}

/// One verdict per item, in input order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdicts {
    pub results: Vec<std::result::Result<(), Reason>>,
}

impl Verdicts {
    pub fn all_valid(&self) -> bool {
        self.results.iter().all(|r| r.is_ok())
    }

    pub fn valid_count(&self) -> usize {
        self.results.iter().filter(|r| r.is_ok()).count()
    }

    pub fn len(&self) -> usize {
        self.results.len()
    }

    pub fn is_empty(&self) -> bool {
        self.results.is_empty()
    }
}

/// How a signature `(r, s)` is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum SigFormat {
    /// Strict DER `SEQUENCE { INTEGER r, INTEGER s }` (BIP66's rules; GM/T 0009's encoding for
    /// SM2), as OpenSSL and Bitcoin transactions carry them (without a sighash byte).
    #[default]
    Der,
    /// 64 bytes, `r || s` big-endian.
    Compact,
}

/// The common length of the batch's slices.
pub(crate) fn batch_len(slices: &[(&str, usize)]) -> crate::Result<usize> {
    let n = slices[0].1;
    if slices.iter().any(|&(_, len)| len != n) {
        let counts: Vec<String> = slices
            .iter()
            .map(|(what, len)| format!("{len} {what}"))
            .collect();
        return Err(crate::Error::invalid(format!(
            "{}: every item needs one of each",
            counts.join(", ")
        )));
    }
    if n == 0 {
        return Err(crate::Error::EmptyBatch);
    }
    Ok(n)
}

/// A SEC1 public key after the encoding and range rules, before any curve arithmetic (which
/// decides whether a point has these coordinates).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sec1Key {
    /// `x` and the parity of `y` (02/03, or a BIP340 x-only key with even y).
    Compressed { x: [u8; 32], odd: bool },
    /// Both coordinates (04).
    Uncompressed { x: [u8; 32], y: [u8; 32] },
}

impl Sec1Key {
    /// The SEC1 encoding (33 bytes compressed, 65 uncompressed).
    pub fn to_sec1(&self) -> Vec<u8> {
        match self {
            Sec1Key::Compressed { x, odd } => [&[2 + *odd as u8][..], x].concat(),
            Sec1Key::Uncompressed { x, y } => [&[4u8][..], x, y].concat(),
        }
    }
}

/// A signature's `(r, s)`, each in `[1, n-1]`.
pub fn signature_scalars(
    sig: &[u8],
    format: SigFormat,
    n: &[u8; 32],
) -> Result<([u8; 32], [u8; 32]), Reason> {
    let (r, s) = match format {
        SigFormat::Der => parse_der(sig)?,
        SigFormat::Compact => {
            let sig: &[u8; 64] = sig.try_into().map_err(|_| Reason::BadLength)?;
            let (r, s) = split(sig);
            (Some(r), Some(s))
        }
    };
    let r = scalar(r, n, Reason::RZero, Reason::ROutOfRange)?;
    let s = scalar(s, n, Reason::SZero, Reason::SOutOfRange)?;
    Ok((r, s))
}

/// A SEC1 public key's coordinates: compressed or uncompressed, nothing else, below p.
pub fn sec1_key(pk: &[u8], p: &[u8; 32]) -> Result<Sec1Key, Reason> {
    let coord = |b: &[u8]| -> Result<[u8; 32], Reason> {
        field_element(b, p)?;
        Ok(b.try_into().expect("32 bytes"))
    };
    match (pk.len(), pk.first()) {
        (33, Some(&prefix @ (0x02 | 0x03))) => Ok(Sec1Key::Compressed {
            x: coord(&pk[1..33])?,
            odd: prefix == 0x03,
        }),
        (65, Some(0x04)) => Ok(Sec1Key::Uncompressed {
            x: coord(&pk[1..33])?,
            y: coord(&pk[33..65])?,
        }),
        _ => Err(Reason::BadPublicKeyEncoding),
    }
}

/// A coordinate below p (32 bytes).
pub(crate) fn field_element(x: &[u8], p: &[u8; 32]) -> Result<(), Reason> {
    match <&[u8; 32]>::try_from(x) {
        Ok(x) if below(x, p) => Ok(()),
        _ => Err(Reason::PublicKeyOutOfRange),
    }
}

/// An integer as a signature encodes it: `None` when it does not fit in 256 bits.
type Encoded = Option<[u8; 32]>;

/// An encoded integer of the signature, required in `[1, n-1]`.
fn scalar(
    v: Encoded,
    n: &[u8; 32],
    zero: Reason,
    out_of_range: Reason,
) -> Result<[u8; 32], Reason> {
    let v = v.ok_or(out_of_range)?;
    if v == [0; 32] {
        Err(zero)
    } else if below(&v, n) {
        Ok(v)
    } else {
        Err(out_of_range)
    }
}

/// Strict DER `SEQUENCE { INTEGER r, INTEGER s }` as BIP66 checks it (without the sighash byte).
/// An integer too large for 256 bits is `None` (out of range, not malformed).
fn parse_der(sig: &[u8]) -> Result<(Encoded, Encoded), Reason> {
    // 6 bytes of tags and lengths plus two integers of 1 to 33 bytes.
    if !(8..=72).contains(&sig.len()) || sig[0] != 0x30 || sig[1] as usize != sig.len() - 2 {
        return Err(Reason::BadDer);
    }
    let (r, rest) = der_integer(&sig[2..])?;
    let (s, rest) = der_integer(rest)?;
    if !rest.is_empty() {
        return Err(Reason::BadDer);
    }
    Ok((r, s))
}

/// One DER INTEGER at the start of `b`: its value and the bytes after it.
fn der_integer(b: &[u8]) -> Result<(Encoded, &[u8]), Reason> {
    let [0x02, len, rest @ ..] = b else {
        return Err(Reason::BadDer);
    };
    // Lengths here are below 128, so only the short form is DER; a long form fails the bound.
    let len = *len as usize;
    if len == 0 || len > 33 || len > rest.len() {
        return Err(Reason::BadDer);
    }
    let (v, rest) = rest.split_at(len);
    let negative = v[0] & 0x80 != 0;
    let needless_zero = len > 1 && v[0] == 0 && v[1] & 0x80 == 0;
    if negative || needless_zero {
        return Err(Reason::BadDer);
    }
    // A 33-byte integer fits only behind its sign byte.
    if len == 33 && v[0] != 0 {
        return Ok((None, rest));
    }
    let digits = &v[len.saturating_sub(32)..];
    let mut out = [0u8; 32];
    out[32 - digits.len()..].copy_from_slice(digits);
    Ok((Some(out), rest))
}

pub(crate) fn split(sig: &[u8; 64]) -> ([u8; 32], [u8; 32]) {
    let mut r = [0u8; 32];
    let mut s = [0u8; 32];
    r.copy_from_slice(&sig[..32]);
    s.copy_from_slice(&sig[32..]);
    (r, s)
}

/// `a < b` for big-endian integers of equal width. Word by word: the byte arrays' own order calls
/// `memcmp`, a fifth of the time parsing an item took.
pub(crate) fn below(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let word = |x: &[u8; 32], i: usize| u64::from_be_bytes(x[8 * i..8 * i + 8].try_into().unwrap());
    for i in 0..4 {
        let (x, y) = (word(a, i), word(b, i));
        if x != y {
            return x < y;
        }
    }
    false
}

/// `a - b` for big-endian 256-bit integers, `a >= b`.
pub(crate) fn sub(a: &[u8; 32], b: &[u8; 32]) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut borrow = 0u16;
    for i in (0..32).rev() {
        let d = (a[i] as u16).wrapping_sub(b[i] as u16).wrapping_sub(borrow);
        out[i] = d as u8;
        borrow = (d >> 8) & 1;
    }
    out
}

pub(crate) const fn hex32(s: &str) -> [u8; 32] {
    const fn nibble(c: u8) -> u8 {
        match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => panic!("not a lower-case hex digit"),
        }
    }
    let s = s.as_bytes();
    assert!(s.len() == 64);
    let mut out = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        out[i] = nibble(s[2 * i]) << 4 | nibble(s[2 * i + 1]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_orders_as_the_big_endian_bytes_do() {
        // Pairs that differ in one byte, at every position and in both directions, and equal
        // pairs: each word of the comparison decides, and ties fall through to the next.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || crate::backend::cpu::xorshift64(&mut state) as u8;
        for _ in 0..200 {
            let a: [u8; 32] = std::array::from_fn(|_| next());
            for i in 0..32 {
                let mut b = a;
                b[i] = b[i].wrapping_add(next() | 1);
                assert_eq!(below(&a, &b), a < b);
                assert_eq!(below(&b, &a), b < a);
            }
            assert!(!below(&a, &a));
        }
    }

    #[test]
    fn subtraction_borrows_across_bytes() {
        let mut one = [0u8; 32];
        one[31] = 1;
        let mut want = [0xffu8; 32];
        want[0] = 0;
        let mut top = [0u8; 32];
        top[0] = 1;
        assert_eq!(sub(&top, &one), want);
        assert_eq!(sub(&want, &want), [0; 32]);
    }

    #[test]
    fn der_integers() {
        assert_eq!(
            der_integer(&[2, 1, 5, 9]),
            Ok((Some(hex32_tail(&[5])), &[9u8][..]))
        );
        assert_eq!(
            der_integer(&[2, 2, 0, 0x80]),
            Ok((Some(hex32_tail(&[0x80])), &[][..]))
        );
        assert_eq!(der_integer(&[2, 2, 0, 0x7f]), Err(Reason::BadDer)); // needless zero
        assert_eq!(der_integer(&[2, 1, 0x80]), Err(Reason::BadDer)); // negative
        assert_eq!(der_integer(&[2, 0]), Err(Reason::BadDer));
        assert_eq!(der_integer(&[2, 3, 1, 2]), Err(Reason::BadDer)); // truncated
        assert_eq!(der_integer(&[3, 1, 1]), Err(Reason::BadDer));
        let mut big = vec![2, 33, 1];
        big.extend([0u8; 32]);
        assert_eq!(der_integer(&big), Ok((None, &[][..])));
    }

    fn hex32_tail(v: &[u8]) -> [u8; 32] {
        let mut out = [0u8; 32];
        out[32 - v.len()..].copy_from_slice(v);
        out
    }
}

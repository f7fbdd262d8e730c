//! What the fuzz targets share: byte edits for structure-aware mutation, the engines they run,
//! and encodings the targets build valid inputs with before editing them.
//!
//! A target builds a valid input from the fuzzer's choices (a key, a message, a signature made
//! with them), then applies the fuzzer's [`Edit`]s: plain random bytes would rarely get past the
//! first check of a parser, while an edited valid input reaches every later one.

use arbitrary::Arbitrary;
use batchcrypt::{Backend, BackendChoice, Engine};
use std::sync::OnceLock;

/// One change to a byte string.
#[derive(Arbitrary, Debug, Clone)]
pub enum Edit {
    Flip { at: u16, bit: u8 },
    Set { at: u16, byte: u8 },
    Insert { at: u16, byte: u8 },
    Remove { at: u16 },
    Truncate { len: u16 },
    Extend { bytes: Vec<u8> },
}

/// Applies `edits` in order (positions wrap around the current length).
pub fn edit(mut v: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        let n = v.len();
        let at = |i: u16, m: usize| if m == 0 { 0 } else { i as usize % m };
        match *e {
            Edit::Flip { at: i, bit } if n > 0 => v[at(i, n)] ^= 1 << (bit % 8),
            Edit::Set { at: i, byte } if n > 0 => v[at(i, n)] = byte,
            Edit::Insert { at: i, byte } => v.insert(at(i, n + 1), byte),
            Edit::Remove { at: i } if n > 0 => {
                v.remove(at(i, n));
            }
            Edit::Truncate { len } => v.truncate(len as usize),
            Edit::Extend { ref bytes } => v.extend_from_slice(bytes),
            _ => {}
        }
    }
    v
}

/// An engine that runs everything on `backend`, made once per process.
pub fn engine(backend: Backend) -> &'static Engine {
    static ENGINES: OnceLock<Vec<(Backend, Engine)>> = OnceLock::new();
    let all = ENGINES.get_or_init(|| {
        [Backend::Portable, Backend::Libsecp256k1, Backend::OpenSsl]
            .into_iter()
            .map(|b| (b, Engine::with_backend(BackendChoice::Exact(b))))
            .collect()
    });
    &all.iter().find(|(b, _)| *b == backend).expect("an engine for this backend").1
}

/// The service's handlers in process, as `batchcrypt serve` runs them behind the network, with
/// `config` and libsecp256k1 for ECDSA (the serve targets): on a runtime of two threads of its own.
pub fn in_process_service(
    config: &batchcrypt_serve::ServerConfig,
) -> (tokio::runtime::Runtime, std::sync::Arc<batchcrypt_serve::server::Service>) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let engine = std::sync::Arc::new(Engine::with_backend(BackendChoice::Exact(Backend::Libsecp256k1)));
    let service = {
        let _in = rt.enter();
        batchcrypt_serve::server::Service::in_process(engine, config).expect("the service starts")
    };
    (rt, service)
}

/// Key encodings the reference crates read but batchcrypt refuses, so that the targets compare
/// like with like: hybrid keys (tags 06/07, which SEC1 allows and libsecp256k1 reads, but
/// batchcrypt's signature APIs do not take) and tag 05, the x-only "compact" form of an
/// Internet-Draft that RustCrypto's `sec1` reads and neither SEC1 nor GM/T 0003 defines.
pub fn refused_key_tag(key: &[u8]) -> bool {
    matches!(key.first(), Some(5 | 6 | 7))
}

/// Strict DER of an ECDSA signature `(r, s)` (big-endian 32-byte scalars).
pub fn der(r: &[u8; 32], s: &[u8; 32]) -> Vec<u8> {
    fn int(out: &mut Vec<u8>, x: &[u8; 32]) {
        let start = x.iter().position(|&b| b != 0).unwrap_or(31);
        let body = &x[start..];
        let pad = body[0] & 0x80 != 0;
        out.push(0x02);
        out.push((body.len() + pad as usize) as u8);
        if pad {
            out.push(0);
        }
        out.extend_from_slice(body);
    }
    let mut body = Vec::with_capacity(72);
    int(&mut body, r);
    int(&mut body, s);
    let mut out = vec![0x30, body.len() as u8];
    out.extend_from_slice(&body);
    out
}

/// `n - s` for big-endian 32-byte numbers with `s < n`.
pub fn negate(n: &[u8; 32], s: &[u8; 32]) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut borrow = 0i16;
    for i in (0..32).rev() {
        let d = n[i] as i16 - s[i] as i16 - borrow;
        borrow = (d < 0) as i16;
        out[i] = (d + 256 * borrow) as u8;
    }
    out
}

/// An ECDSA case of the differential targets, whatever the curve: a key and a signature made
/// valid by the curve's own signer, then encoded and edited as the fuzzer chose.
#[derive(Arbitrary, Debug)]
pub struct EcdsaCase {
    pub secret: [u8; 32],
    pub hash: [u8; 32],
    /// Sign another hash than the one verified.
    pub signed: Option<[u8; 32]>,
    pub compressed: bool,
    pub compact: bool,
    pub high_s: bool,
    pub require_low_s: bool,
    pub sig_edits: Vec<Edit>,
    pub key_edits: Vec<Edit>,
    /// Replaces the signature outright.
    pub raw_sig: Option<Vec<u8>>,
}

impl EcdsaCase {
    /// The hash the signer signs.
    pub fn signed_hash(&self) -> [u8; 32] {
        self.signed.unwrap_or(self.hash)
    }

    /// The signature `(r, s)` (S made high on request, for a group of order `n`) and the SEC1 key
    /// as the case encodes and edits them, with the options it verifies under.
    pub fn encode(
        &self,
        n: &[u8; 32],
        r: [u8; 32],
        s: [u8; 32],
        key: Vec<u8>,
    ) -> (Vec<u8>, Vec<u8>, batchcrypt::ecdsa::EcdsaOptions) {
        let s = if self.high_s { negate(n, &s) } else { s };
        let sig = match (&self.raw_sig, self.compact) {
            (Some(raw), _) => raw.clone(),
            (None, true) => [r, s].concat(),
            (None, false) => der(&r, &s),
        };
        let opts = batchcrypt::ecdsa::EcdsaOptions {
            format: if self.compact { batchcrypt::sig::SigFormat::Compact } else { batchcrypt::sig::SigFormat::Der },
            require_low_s: self.require_low_s,
        };
        (edit(sig, &self.sig_edits), edit(key, &self.key_edits), opts)
    }
}

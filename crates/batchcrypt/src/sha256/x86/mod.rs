//! x86-64 SHA-256 backends, each a token type constructed only after run-time feature detection.

pub mod avx2;
pub mod avx512;
pub mod shani;

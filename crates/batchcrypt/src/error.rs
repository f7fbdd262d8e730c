//! One error type for the whole library: every failure says what went wrong and what to do.

use std::fmt;

/// Everything a batchcrypt call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The batch has no items; a batch API needs at least one.
    #[error("empty batch: pass at least one item")]
    EmptyBatch,
    /// A caller-supplied argument is malformed (bad offsets, lengths, sizes).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The caller forced a backend that this machine or build does not have.
    #[error("backend {backend} is not available here: {why}")]
    BackendUnavailable { backend: String, why: String },
    /// Authenticated decryption found the key, IV, associated data, ciphertext or tag wrong; no
    /// plaintext was released.
    #[error("authentication failed: wrong key, IV or associated data, or the data or tag was modified (no plaintext was released)")]
    AuthenticationFailed,
    /// Encrypted data is damaged, truncated or not in the expected format.
    #[error("{0}")]
    Corrupt(String),
    /// Reading or writing a stream failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// A call into a library backend (OpenSSL) failed.
    #[error("{library} failed: {message}")]
    Library {
        library: &'static str,
        message: String,
    },
    /// A CUDA driver call failed.
    #[error("CUDA error in {context}: {message}")]
    Cuda {
        context: &'static str,
        message: String,
    },
}

impl Error {
    pub(crate) fn invalid(msg: impl fmt::Display) -> Self {
        Error::InvalidInput(msg.to_string())
    }

    /// An I/O error that names what was being done; it stays an I/O error (its kind kept).
    pub fn io(e: std::io::Error, doing: impl fmt::Display) -> Self {
        Error::Io(std::io::Error::new(e.kind(), format!("{doing}: {e}")))
    }
}

pub type Result<T> = std::result::Result<T, Error>;

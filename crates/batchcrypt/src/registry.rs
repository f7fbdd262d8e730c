//! Every operation of the library in one list: `batchcrypt info`, `batchcrypt calibrate` and
//! [`Backend::implements`] read it rather than a list per primitive.

use crate::backend::{Backend, Primitive};
pub use crate::operation::Operation;

/// Every operation, by primitive.
pub static REGISTRY: &[&Operation] = &[
    &crate::sha256::SHA256D_64,
    &crate::sha256::SHA256D_80,
    &crate::sha256::SHA256_FIXED,
    &crate::sha256::SHA256_VAR,
    &crate::secp256k1::ECDSA,
    &crate::secp256k1::SCHNORR,
    &crate::p256::ECDSA,
    &crate::sm2::MUL_BASE,
    &crate::sm2::MUL,
    &crate::sm2::HASH_MUL,
    &crate::sm2::VERIFY,
    &crate::sm3::FIXED,
    &crate::aes::CTR,
    &crate::aes::GCM,
    &crate::aes::XTS,
    &crate::aes::batch::CTR_BATCH,
    &crate::aes::batch::CTR_BATCH_SHORT,
    &crate::aes::batch::GCM_BATCH,
    &crate::aes::batch::GCM_BATCH_SHORT,
    &crate::aes::batch::XTS_BATCH,
    &crate::aes::batch::XTS_BATCH_SHORT,
    &crate::bn254::MSM_G1,
    &crate::bn254::MSM_G2,
    &crate::bn254::NTT,
    &crate::bls12_381::MSM_G1,
    &crate::bls12_381::MSM_G2,
    &crate::bls12_381::NTT,
];

impl Backend {
    /// Whether this build has some operation of `p` on this backend (whether the machine can run
    /// it is [`Backend::availability`]), as the registry declares.
    pub fn implements(self, p: Primitive) -> bool {
        REGISTRY
            .iter()
            .any(|o| o.primitive == p && o.implements(self))
    }
}

/// The operation with cost key `key`.
pub fn find(key: &str) -> Option<&'static Operation> {
    REGISTRY.iter().copied().find(|o| o.key == key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique_and_every_primitive_has_operations() {
        let mut keys: Vec<&str> = REGISTRY.iter().map(|o| o.key).collect();
        keys.sort_unstable();
        let n = keys.len();
        keys.dedup();
        assert_eq!(keys.len(), n, "duplicate cost keys");
        for p in Primitive::ALL {
            assert!(REGISTRY.iter().any(|o| o.primitive == p), "{p:?}");
        }
        assert!(find("secp256k1-ecdsa").is_some_and(|o| o.implements(Backend::Libsecp256k1)));
    }
}

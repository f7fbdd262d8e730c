//! OpenSSL's libcrypto as the CPU backend of ECDSA verification on any curve it names: the
//! reference for curves without a dedicated library (P-256).

use crate::sig::{Reason, Sec1Key};
use openssl::bn::{BigNum, BigNumContext};
use openssl::ec::{EcGroupRef, EcKey, EcPoint};
use openssl::ecdsa::EcdsaSig;

/// The ECDSA equation for one item that passed [`super::parts`]. OpenSSL decodes the key (a square
/// root for a compressed one, the curve equation for an uncompressed one). An allocation failure
/// inside OpenSSL reads as a mismatch: never a wrong `true`.
pub(crate) fn verify(
    group: &EcGroupRef,
    hash: &[u8; 32],
    r: &[u8; 32],
    s: &[u8; 32],
    key: &Sec1Key,
) -> Result<(), Reason> {
    let mismatch = |_| Reason::SignatureMismatch;
    let mut ctx = BigNumContext::new().map_err(mismatch)?;
    let point = EcPoint::from_bytes(group, &key.to_sec1(), &mut ctx)
        .map_err(|_| Reason::PublicKeyNotOnCurve)?;
    let key = EcKey::from_public_key(group, &point).map_err(|_| Reason::PublicKeyNotOnCurve)?;
    let sig = EcdsaSig::from_private_components(
        BigNum::from_slice(r).map_err(mismatch)?,
        BigNum::from_slice(s).map_err(mismatch)?,
    )
    .map_err(mismatch)?;
    match sig.verify(hash, &key) {
        Ok(true) => Ok(()),
        _ => Err(Reason::SignatureMismatch),
    }
}

/// A valid signature by the key with secret `d` (big-endian, in [1, n-1]) over `hash`: (DER
/// signature, compressed SEC1 key). For measuring and tests.
pub(crate) fn sign(group: &EcGroupRef, d: &[u8; 32], hash: &[u8; 32]) -> (Vec<u8>, Vec<u8>) {
    let run = || -> Result<(Vec<u8>, Vec<u8>), openssl::error::ErrorStack> {
        let mut ctx = BigNumContext::new()?;
        let d = BigNum::from_slice(d)?;
        let mut q = EcPoint::new(group)?;
        q.mul_generator2(group, &d, &mut ctx)?;
        let key = EcKey::from_private_components(group, &d, &q)?;
        let sig = EcdsaSig::sign(hash, &key)?.to_der()?;
        let sec1 = q.to_bytes(
            group,
            openssl::ec::PointConversionForm::COMPRESSED,
            &mut ctx,
        )?;
        Ok((sig, sec1))
    };
    run().expect("OpenSSL signs with a valid secret")
}

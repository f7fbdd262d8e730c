//! Signature hashes: legacy, BIP143 (segwit v0) and BIP341 (taproot).

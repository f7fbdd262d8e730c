//! libbitcoinconsensus (Bitcoin Core 26 through the `bitcoinconsensus` crate) as the oracle of the
//! script interpreter: our consensus flags in its terms, and its verdict on one input. Shared by
//! the differential test and the script fuzz target (fuzz/, which includes this file by path).

use batchcrypt::bitcoin::script::Flags;
use batchcrypt::bitcoin::TxOut;

/// Our flags and libbitcoinconsensus's, bit for bit (it takes only the consensus flags).
pub const CORE_FLAGS: [(Flags, u32); 7] = [
    (Flags::P2SH, bitcoinconsensus::VERIFY_P2SH),
    (Flags::DERSIG, bitcoinconsensus::VERIFY_DERSIG),
    (Flags::NULLDUMMY, bitcoinconsensus::VERIFY_NULLDUMMY),
    (
        Flags::CHECKLOCKTIMEVERIFY,
        bitcoinconsensus::VERIFY_CHECKLOCKTIMEVERIFY,
    ),
    (
        Flags::CHECKSEQUENCEVERIFY,
        bitcoinconsensus::VERIFY_CHECKSEQUENCEVERIFY,
    ),
    (Flags::WITNESS, bitcoinconsensus::VERIFY_WITNESS),
    (Flags::TAPROOT, bitcoinconsensus::VERIFY_TAPROOT),
];

/// libbitcoinconsensus's verdict on input `i` of the serialized transaction `raw`, given every
/// output it spends (taproot needs them all), under its `flags`: whether the scripts hold, or the
/// error with which it refused the call before running any (a transaction it does not
/// deserialize the same way, a bad index...).
pub fn core_verdict(
    raw: &[u8],
    spent: &[TxOut],
    i: usize,
    flags: u32,
) -> Result<bool, bitcoinconsensus::Error> {
    let utxos: Vec<bitcoinconsensus::Utxo> = spent
        .iter()
        .map(|o| bitcoinconsensus::Utxo {
            script_pubkey: o.script_pubkey.as_ptr(),
            script_pubkey_len: o.script_pubkey.len() as u32,
            value: o.value,
        })
        .collect();
    let amount = spent[i].value as u64;
    match bitcoinconsensus::verify_with_flags(
        spent[i].script_pubkey,
        amount,
        raw,
        Some(&utxos),
        i,
        flags,
    ) {
        Ok(()) => Ok(true),
        Err(bitcoinconsensus::Error::ERR_SCRIPT) => Ok(false),
        Err(e) => Err(e),
    }
}

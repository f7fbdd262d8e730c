//! The regtest chain from its genesis block, validated in order with the UTXO set built as it
//! goes, in windows whose scripts form one batch; and refused where a block is changed.

mod common;
use batchcrypt::bitcoin::chain::ChainState;
use batchcrypt::bitcoin::validate::Network;
use batchcrypt::{BackendChoice, Engine};

fn chain() -> Option<Vec<Vec<u8>>> {
    let text = common::read_shared("bitcoin/blocks/regtest-chain-206.hex")?;
    Some(
        std::str::from_utf8(&text)
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| hex::decode(l.trim()).unwrap())
            .collect(),
    )
}

#[test]
fn regtest_chain_validates_from_genesis() {
    let Some(blocks) = chain() else { return };
    assert_eq!(blocks.len(), 206);
    for window in [1usize, 16, 206] {
        let engine = Engine::with_backend(BackendChoice::Auto);
        let mut state = ChainState::at_genesis(Network::Regtest);
        let mut inputs = 0;
        for w in blocks.chunks(window) {
            let r = state.connect(&engine, w).unwrap();
            assert_eq!(r.blocks.len(), w.len());
            for b in &r.blocks {
                assert_eq!(b.verdict, Ok(()), "height {}", b.height);
                inputs += b.inputs;
            }
        }
        assert_eq!(state.height(), 206);
        assert!(inputs > 206, "the chain spends coins");
    }
}

#[test]
fn a_changed_block_stops_the_chain_there() {
    let Some(blocks) = chain() else { return };
    let engine = Engine::with_backend(BackendChoice::Auto);
    // Block at height 150 with one byte of its last transaction changed: the merkle root fails.
    let mut bad = blocks.clone();
    let n = bad[149].len();
    bad[149][n - 10] ^= 1;
    let mut state = ChainState::at_genesis(Network::Regtest);
    let r = state.connect(&engine, &bad[..200]).unwrap();
    assert_eq!(r.blocks.len(), 150);
    let last = r.blocks.last().unwrap();
    assert_eq!(last.height, 150);
    assert!(last.verdict.is_err());
    assert_eq!(state.height(), 149, "the blocks before it stay connected");
    // The chain goes on from there with the real block.
    let r = state.connect(&engine, &blocks[149..]).unwrap();
    assert!(r.blocks.iter().all(|b| b.verdict.is_ok()));
    assert_eq!(state.height(), 206);
    // A block out of order does not extend the chain.
    let mut state = ChainState::at_genesis(Network::Regtest);
    let r = state.connect(&engine, &blocks[1..3]).unwrap();
    assert!(r.blocks[0]
        .verdict
        .as_ref()
        .unwrap_err()
        .reason
        .contains("does not extend"));
}

#[test]
fn a_block_not_after_the_median_time_past_is_refused() {
    let Some(blocks) = chain() else { return };
    let engine = Engine::with_backend(BackendChoice::Auto);
    // Block 150 stamped with the median of the eleven times before it, mined again (regtest's
    // target passes about half of all hashes; a top byte under 0x7f always does).
    let mut times: Vec<u32> = blocks[138..149]
        .iter()
        .map(|b| u32::from_le_bytes(b[68..72].try_into().unwrap()))
        .collect();
    times.sort_unstable();
    let restamp = |time: u32| {
        let mut b = blocks[149].clone();
        b[68..72].copy_from_slice(&time.to_le_bytes());
        let nonce = (0u32..)
            .find(|n| {
                b[76..80].copy_from_slice(&n.to_le_bytes());
                batchcrypt::sha256::digest_double(&b[..80])[31] < 0x7f
            })
            .unwrap();
        b[76..80].copy_from_slice(&nonce.to_le_bytes());
        b
    };
    let mut state = ChainState::at_genesis(Network::Regtest);
    let r = state.connect(&engine, &blocks[..149]).unwrap();
    assert!(r.blocks.iter().all(|b| b.verdict.is_ok()));
    let r = state.connect(&engine, &[restamp(times[5])]).unwrap();
    let e = r.blocks[0].verdict.as_ref().unwrap_err();
    assert!(e.reason.starts_with("time-too-old"), "{e}");
    assert_eq!(state.height(), 149);
    // One second later it connects.
    let r = state.connect(&engine, &[restamp(times[5] + 1)]).unwrap();
    assert_eq!(r.blocks[0].verdict, Ok(()));
    assert_eq!(state.height(), 150);
}

//! The CUDA kernel sources compiled for the host (feature `emulation`) against the CPU backends:
//! catches kernel logic errors on machines without a GPU. The GPU itself is checked by the other
//! tests wherever one is present.
#![cfg(feature = "emulation")]

mod common;
use batchcrypt::emulation::sha256 as emulated;
use batchcrypt::sha256::{Messages, Mode};
use batchcrypt::{Backend, BackendChoice, Engine};
use common::Rng;

fn cpu(msgs: &Messages<'_>, mode: Mode) -> Vec<[u8; 32]> {
    Engine::with_backend(BackendChoice::Exact(Backend::Portable))
        .sha256()
        .hash(msgs, mode)
        .unwrap()
        .value
}

#[test]
fn fixed_length_kernels_match_cpu() {
    let mut rng = Rng(5);
    for len in [1usize, 32, 55, 56, 63, 64, 65, 80, 119, 120, 200, 1000] {
        let data = rng.bytes(len * 33);
        for mode in [Mode::Single, Mode::Double] {
            let m = Messages::fixed(&data, len).unwrap();
            assert_eq!(
                emulated::hash(&m, mode),
                cpu(&m, mode),
                "len {len} mode {mode:?}"
            );
        }
    }
}

#[test]
fn variable_length_kernel_matches_cpu() {
    let mut rng = Rng(6);
    let mut offsets = vec![3u64];
    for _ in 0..300 {
        offsets.push(offsets.last().unwrap() + rng.below(700));
    }
    let data = rng.bytes(*offsets.last().unwrap() as usize + 5);
    for mode in [Mode::Single, Mode::Double] {
        let m = Messages::var(&data, &offsets).unwrap();
        assert_eq!(emulated::hash(&m, mode), cpu(&m, mode), "mode {mode:?}");
    }
}

/// The gather kernel (a batch's parts joined on the device) against the parts concatenated:
/// parts of every size from none to thousands of words, in any order.
#[test]
fn gather_kernel_joins_parts_in_order() {
    let mut rng = Rng(21);
    let words = |k: usize, rng: &mut Rng| -> Vec<[u32; 4]> {
        (0..k)
            .map(|_| std::array::from_fn(|_| rng.below(1 << 32) as u32))
            .collect()
    };
    for counts in [
        vec![1],
        vec![0, 3, 0],
        vec![1024, 1, 7, 4096, 0, 2],
        vec![5; 200],
    ] {
        let bufs: Vec<Vec<[u32; 4]>> = counts.iter().map(|&k| words(k, &mut rng)).collect();
        let parts: Vec<&[[u32; 4]]> = bufs.iter().map(|b| b.as_slice()).collect();
        assert_eq!(
            batchcrypt::emulation::pipeline::gather(&parts),
            bufs.concat()
        );
    }
}

//! The PSI wire protocol as a peer speaks it: a byte stream of frames (handshake, points, tags,
//! error), read until the stream ends or a frame is refused. Every frame read must encode back
//! to the bytes it came from; a handshake is checked against ours; points are decompressed as the
//! protocol does (an off-curve point is refused, not multiplied).
#![no_main]

use batchcrypt::psi::wire::{encode, read_frame, Frame, Hello};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let ours = Hello {
        version: batchcrypt::psi::PROTOCOL_VERSION,
        suite: batchcrypt::sm2::SUITE.into(),
        dst: batchcrypt::sm2::DEFAULT_DST.to_vec(),
        count: 1,
    };
    let mut r = data;
    for _ in 0..64 {
        let before = r;
        let Ok(frame) = read_frame(&mut r) else { return };
        let used = &before[..before.len() - r.len()];
        match &frame {
            Frame::Hello(h) => {
                let _ = ours.check_peer(h);
                assert_eq!(encode(&frame), used);
            }
            Frame::Points(points) => {
                assert_eq!(encode(&frame), used);
                for p in points.iter().take(16) {
                    let _ = batchcrypt::sm2::cpu::decompress(p);
                }
            }
            Frame::Tags(_) => assert_eq!(encode(&frame), used),
            Frame::Error(_) => {}
        }
    }
});

//! batchcrypt as a service: `batchcrypt serve` owns the machine's GPUs and serves many clients
//! over gRPC (proto/batchcrypt/v1/batchcrypt.proto), merging their small requests into the large
//! batches a GPU needs, and queueing proofs durably, admitted by the GPU memory they need.
//!
//! Layers: [`batcher`] forms batches for any [`batcher::Batched`] operation; [`ops`] maps each
//! batched operation onto the library; [`prover`] and [`store`] are the proof queue; [`server`]
//! is the gRPC face with its guards and [`metrics`] (its request streams answered in front of
//! tonic by `grpc_streams`), serving its connections on [`shards`] and
//! local clients' data through [`shared`] memory, and the batched operations to local clients
//! also in plain [`frames`] over a Unix socket;
//! [`client`] is the Rust client (and [`frames::FramesClient`] the local one); both encode with
//! [`codec`].

pub mod aes;
pub mod batcher;
pub mod client;
pub mod codec;
pub mod frames;
mod grpc_streams;
mod io;
pub mod metrics;
pub mod ops;
pub mod prover;
pub mod server;
pub mod shards;
pub mod shared;
pub mod store;

pub mod proto {
    #![allow(clippy::all)]
    tonic::include_proto!("batchcrypt.v1");

    impl From<&batchcrypt::bitcoin::SpentOutput> for SpentOutput {
        fn from(s: &batchcrypt::bitcoin::SpentOutput) -> Self {
            SpentOutput {
                value: s.value,
                script_pubkey: s.script_pubkey.clone().into(),
                height: s.height,
                coinbase: s.coinbase,
                time: s.time,
            }
        }
    }

    impl From<&batchcrypt::bitcoin::txs::LooseTx> for LooseTransaction {
        fn from(t: &batchcrypt::bitcoin::txs::LooseTx) -> Self {
            use batchcrypt::bitcoin::script::Flags;
            LooseTransaction {
                tx: t.raw.clone().into(),
                spent: t.spent.iter().map(Into::into).collect(),
                // Empty means every consensus rule: no rule at all is named.
                flags: match t.flags {
                    Flags::NONE => "NONE".into(),
                    f => f.names(),
                },
                next_height: t.next.map(|n| n.height),
                tip_mtp: t.next.map(|n| n.prev_mtp),
            }
        }
    }

    impl From<batchcrypt::bitcoin::validate::Network> for Network {
        fn from(n: batchcrypt::bitcoin::validate::Network) -> Self {
            use batchcrypt::bitcoin::validate::Network as N;
            match n {
                N::Main => Network::Main,
                N::Test => Network::Test,
                N::Regtest => Network::Regtest,
            }
        }
    }

    impl From<Network> for batchcrypt::bitcoin::validate::Network {
        fn from(n: Network) -> Self {
            use batchcrypt::bitcoin::validate::Network as N;
            match n {
                Network::Main => N::Main,
                Network::Test => N::Test,
                Network::Regtest => N::Regtest,
            }
        }
    }

    impl TryFrom<LooseTransaction> for batchcrypt::bitcoin::txs::LooseTx {
        type Error = tonic::Status;
        fn try_from(t: LooseTransaction) -> Result<Self, tonic::Status> {
            use batchcrypt::bitcoin::script::Flags;
            use batchcrypt::bitcoin::txs::NextBlock;
            let invalid = |field: &str, e: &dyn std::fmt::Display| {
                tonic::Status::invalid_argument(format!("{field}: {e}"))
            };
            // Empty means every consensus rule, as the reverse writes them.
            let flags = match t.flags.as_str() {
                "" => Flags::CONSENSUS,
                f => Flags::parse(f).map_err(|e| invalid("flags", &e))?,
            };
            let next = NextBlock::given(t.next_height, t.tip_mtp)
                .map_err(|e| invalid("next_height and tip_mtp", &e))?;
            Ok(batchcrypt::bitcoin::txs::LooseTx {
                raw: t.tx.to_vec(),
                spent: t.spent.into_iter().map(Into::into).collect(),
                flags,
                next,
            })
        }
    }

    impl From<SpentOutput> for batchcrypt::bitcoin::SpentOutput {
        fn from(s: SpentOutput) -> Self {
            let mut o = batchcrypt::bitcoin::SpentOutput::new(s.value, s.script_pubkey.to_vec());
            o.height = s.height;
            o.coinbase = s.coinbase;
            o.time = s.time;
            o
        }
    }
}

pub use client::Client;
pub use frames::FramesClient;
pub use io::{raise_open_files, ReadBuffered};
pub use server::{start, Running, ServerConfig};

// HTTP/2 flow control and framing, the same on both ends (and public for clients that speak HTTP/2
// themselves). h2's defaults (64 KiB windows, 16 KiB frames) cut a request of a few hundred items
// into several frames and answer most requests with window updates: more system calls per call
// than the call's own frames.
/// The HTTP/2 connection's flow-control window the service and its client advertise.
pub const H2_CONNECTION_WINDOW: u32 = 16 << 20;
/// The HTTP/2 stream's flow-control window the service and its client advertise.
pub const H2_STREAM_WINDOW: u32 = 4 << 20;
/// The largest HTTP/2 frame the service and its client accept.
pub const H2_MAX_FRAME: u32 = 1 << 20;

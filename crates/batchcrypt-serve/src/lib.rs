//! batchcrypt as a service: `batchcrypt serve` owns the machine's GPUs and serves many clients
//! over gRPC (proto/batchcrypt/v1/batchcrypt.proto), merging their small requests into the large
//! batches a GPU needs, and queueing proofs durably, admitted by the GPU memory they need.
//!
//! Layers: [`batcher`] forms batches for any [`batcher::Batched`] operation; [`ops`] maps each
//! batched operation onto the library; [`prover`] and [`store`] are the proof queue; [`server`]
//! is the gRPC face with its guards and [`metrics`], serving its connections on [`shards`] and
//! local clients' data through [`shared`] memory, and the batched operations to local clients
//! also in plain [`frames`] over a Unix socket;
//! [`client`] is the Rust client (and [`frames::FramesClient`] the local one); both encode with
//! [`codec`].

pub mod aes;
pub mod batcher;
pub mod client;
pub mod codec;
pub mod frames;
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
}

pub use client::Client;
pub use frames::FramesClient;
pub use io::raise_open_files;
pub use server::{start, Running, ServerConfig};

// HTTP/2 flow control and framing, the same on both ends. h2's defaults (64 KiB windows, 16 KiB
// frames) cut a request of a few hundred items into several frames and answer most requests with
// window updates: more system calls per call than the call's own frames.
const H2_CONNECTION_WINDOW: u32 = 16 << 20;
const H2_STREAM_WINDOW: u32 = 4 << 20;
const H2_MAX_FRAME: u32 = 1 << 20;

//! The service's gRPC codec: prost's, with buffers sized for the service's messages.
//!
//! tonic's codecs start each call's (and each stream's) encode and decode buffers at 8 KiB. A
//! request of a few hundred items is larger (256 messages of 64 bytes: 16 KiB), so every one grew
//! its buffer by reallocating it, copying what it held, on both ends (under 1,000 clients' SHA256d
//! requests, 14% of the server's connection threads' samples grew that buffer). 64 KiB buffers
//! hold such a message with room for the next ones, and are the largest a `BytesMut` keeps as the
//! size to grow by once its first allocation is shared out.

use tonic::codec::BufferSettings;
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

/// Bytes a buffer starts with (and grows by); encoded messages go out once this many wait.
const BUFFER: usize = 64 << 10;

fn settings() -> BufferSettings {
    BufferSettings::new(BUFFER, BUFFER)
}

/// prost's codec with [`BUFFER`]-byte buffers (named by the generated server and client).
pub struct Codec<T, U>(std::marker::PhantomData<(T, U)>);

impl<T, U> Default for Codec<T, U> {
    fn default() -> Self {
        Codec(std::marker::PhantomData)
    }
}

impl<T, U> tonic::codec::Codec for Codec<T, U>
where
    T: prost::Message + Send + 'static,
    U: prost::Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = ProstDecoder<U>;

    fn encoder(&mut self) -> ProstEncoder<T> {
        ProstCodec::<T, U>::raw_encoder(settings())
    }

    fn decoder(&mut self) -> ProstDecoder<U> {
        ProstCodec::<T, U>::raw_decoder(settings())
    }
}

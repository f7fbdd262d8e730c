//! Generates the gRPC server and client from proto/ with the protoc binary the
//! `protoc-bin-vendored` crate carries, so a build needs no protoc installed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::var_os("PROTOC").is_none() {
        std::env::set_var("PROTOC", protoc_bin_vendored::protoc_bin_path()?);
    }
    tonic_prost_build::configure()
        // Byte fields as `Bytes`: the items of a request slice its buffer instead of copying.
        .bytes(".")
        // prost's codec with buffers sized for the service's requests (src/codec.rs).
        .codec_path("crate::codec::Codec")
        .compile_protos(&["proto/batchcrypt/v1/batchcrypt.proto"], &["proto"])?;
    Ok(())
}

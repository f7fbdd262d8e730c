pub mod aes;
pub mod calibrate;
pub mod demo;
pub mod groth16;
pub mod info;
pub mod merkle;
pub mod psi;
pub mod sha256;

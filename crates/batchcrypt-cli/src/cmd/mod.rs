pub mod aes;
pub mod calibrate;
pub mod demo;
pub mod info;
pub mod merkle;
pub mod prove;
pub mod psi;
pub mod sha256;

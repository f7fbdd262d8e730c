//! The script interpreter.

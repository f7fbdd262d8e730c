//! Signature checks behind an interface.

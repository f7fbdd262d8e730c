//! Where the workspace's tests find the data they read in place: the shared test data beside the
//! checkout (`../shared/data`, or `BATCHCRYPT_SHARED_DATA`) and the Groth16 fixtures that
//! `scripts/zk-fixtures.sh` builds (`target/zk-fixtures`, or `BATCHCRYPT_ZK_FIXTURES`). The
//! variables matter where the tests run from a bundle, away from the checkout they were built in.
//!
//! Data that is absent skips a test with a note, except that `BATCHCRYPT_REQUIRE_ZK_FIXTURES=1`
//! (CI sets it) makes a missing fixture fail the test.

use std::path::{Path, PathBuf};

/// The workspace's root, as it was when the tests were built.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The shared test data's folder, whether or not it is there.
pub fn shared_data_dir() -> PathBuf {
    std::env::var_os("BATCHCRYPT_SHARED_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared/data"))
}

/// A file of the shared test data, if present.
pub fn shared_data(name: &str) -> Option<PathBuf> {
    let p = shared_data_dir().join(name);
    p.is_file().then_some(p)
}

/// A folder of the shared test data, or `None` (with a note) when it is absent.
pub fn shared_folder(name: &str) -> Option<PathBuf> {
    let d = shared_data_dir().join(name);
    if d.is_dir() {
        Some(d)
    } else {
        eprintln!("note: shared {name} not present; skipped");
        None
    }
}

/// The folder of a Groth16 fixture, whether or not it was built.
pub fn zk_fixture_dir(name: &str) -> PathBuf {
    std::env::var_os("BATCHCRYPT_ZK_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/zk-fixtures"))
        .join(name)
}

/// Whether a missing fixture fails the test (`BATCHCRYPT_REQUIRE_ZK_FIXTURES=1`) rather than
/// skipping it.
pub fn zk_fixtures_required() -> bool {
    std::env::var("BATCHCRYPT_REQUIRE_ZK_FIXTURES").as_deref() == Ok("1")
}

/// The folder of a built Groth16 fixture (one with its `circuit.zkey`), or `None` (with a note)
/// where the fixtures were not built.
///
/// # Panics
/// When the fixture is missing and `BATCHCRYPT_REQUIRE_ZK_FIXTURES=1`.
pub fn zk_fixture(name: &str) -> Option<PathBuf> {
    let dir = zk_fixture_dir(name);
    if dir.join("circuit.zkey").is_file() {
        return Some(dir);
    }
    assert!(
        !zk_fixtures_required(),
        "fixture {} missing: run scripts/zk-fixtures.sh",
        dir.display()
    );
    eprintln!("note: Groth16 fixture {name} not built (scripts/zk-fixtures.sh); skipped");
    None
}

#!/usr/bin/env bash
# Sets up (if needed) and runs every test: compiles every CUDA kernel (a kernel that does not
# compile fails here), the Rust unit and integration tests, and the Python package's tests.
# GPU tests run wherever a GPU is present; elsewhere they are skipped with a note.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export BATCHCRYPT_REQUIRE_CUDA=1   # nvcc must be found and every kernel must compile

echo "== Groth16 fixtures: circuits compiled by circom 2, keys and reference proofs by snarkjs"
scripts/zk-fixtures.sh
# The Groth16 tests must find the fixtures and check our proofs with snarkjs itself.
export BATCHCRYPT_REQUIRE_ZK_FIXTURES=1 BATCHCRYPT_REQUIRE_SNARKJS=1

# No incremental state (it only pays off when editing, and it is most of a build's disk use).
export CARGO_INCREMENTAL=0
# `cargo test` builds every library, binary and test of the workspace (there are no benches or
# examples) in its own profile: a `cargo build` beforehand would compile all of it a second time.
echo "== Rust: build everything, run all tests"
cargo test --workspace --exclude batchcrypt-py --features batchcrypt/emulation
echo "== Rust: library without the CUDA backend"
cargo test -p batchcrypt --no-default-features --lib
echo "== Lints: clippy on every crate and target, warnings as errors"
cargo clippy --workspace --all-targets --features batchcrypt/emulation -- -D warnings
cargo clippy -p batchcrypt --no-default-features --lib -- -D warnings

echo "== Fuzz targets: each for 20 s from its seeds (a crash, hang or memory blow-up fails)"
scripts/fuzz.sh 20

echo "== Python package: a repaired manylinux wheel, checked in a fresh virtual environment"
wheel=$(scripts/wheel.sh)
fresh=$(mktemp -d)
python3 -m venv "$fresh/venv"
"$fresh/venv/bin/python" -m pip install -q "$wheel"
(cd "$fresh" && "$fresh/venv/bin/python" "$OLDPWD/crates/batchcrypt-py/tests/wheel_check.py")
rm -rf "$fresh"
echo "== Python tests (the same wheel; Ray tests on a two-node local cluster)"
.venv/bin/python -m pip install -q --force-reinstall --no-deps "$wheel"
BATCHCRYPT_REQUIRE_RAY=1 .venv/bin/python -m pytest -q crates/batchcrypt-py/tests

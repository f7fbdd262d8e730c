#!/usr/bin/env bash
# Sets up (if needed), builds, and runs the main job: `batchcrypt demo` over built-in data on every
# backend present, checked against each other, with a throughput table. Extra arguments go to demo.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release -p batchcrypt-cli
./target/release/batchcrypt info
./target/release/batchcrypt demo "$@"

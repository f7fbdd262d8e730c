#!/usr/bin/env bash
# Builds the Python package as a repaired manylinux wheel in target/wheels: the shared libraries
# it needs beyond the manylinux baseline (OpenSSL's libcrypto and libssl) are copied into the
# wheel and its extension points at them, so `pip install` works on a machine that has only
# Python. The CUDA driver is not bundled: it is loaded at run time where a GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
rm -rf target/wheels
(. .venv/bin/activate && maturin build --release -q --auditwheel repair \
  -m crates/batchcrypt-py/Cargo.toml -o target/wheels >/dev/null)
ls target/wheels/batchcrypt-*manylinux*.whl

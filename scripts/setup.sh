#!/usr/bin/env bash
# One-time set-up on a fresh machine: a project-local Python environment (.venv) with the pinned
# CUDA compiler, maturin, numpy and pytest. Needs a Rust toolchain (cargo) and OpenSSL headers.
# Idempotent: re-runs only when scripts/requirements-dev.txt changes.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v cargo >/dev/null || { echo "error: cargo not found; install Rust (https://rustup.rs) and re-run" >&2; exit 1; }
# The tests lint with clippy: rustup installs it where the toolchain lacks it.
cargo clippy --version >/dev/null 2>&1 || { command -v rustup >/dev/null && rustup component add clippy; } ||
  { echo "error: cargo clippy not found; install it (rustup component add clippy) and re-run" >&2; exit 1; }
if ! pkg-config --exists openssl 2>/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing OpenSSL headers (libssl-dev) for the benchmark peers..."
    apt-get update -qq && apt-get install -y -qq libssl-dev pkg-config >/dev/null
  else
    echo "error: OpenSSL development files not found; install libssl-dev (Debian/Ubuntu) or openssl-devel" >&2; exit 1
  fi
fi

stamp=.venv/.requirements.sha256
want=$(sha256sum scripts/requirements-dev.txt | cut -d' ' -f1)
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setting up .venv (CUDA compiler, maturin, numpy, pytest)..."
  python3 -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r scripts/requirements-dev.txt
  echo "$want" > "$stamp"
fi
nvcc=$(ls .venv/lib/python3*/site-packages/nvidia/cu13/bin/nvcc 2>/dev/null | head -1)
[ -x "$nvcc" ] || { echo "error: nvcc missing from .venv after install" >&2; exit 1; }
echo "setup ok: $("$nvcc" --version | tail -1)"

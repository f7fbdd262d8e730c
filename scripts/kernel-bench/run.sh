#!/usr/bin/env bash
# Kernel-only timing of the verification kernels for variants of the kernel sources, side by side
# on a machine with an NVIDIA GPU. Each argument is a directory holding a copy of kernels/ (edited
# as the variant needs); none means this checkout's kernels/. Each variant is compiled for the
# GPU present with its nvcc, then all are timed in turns, twice.
#   scripts/kernel-bench/run.sh [variant-dir ...]
# CURVES: any of SECP SM2 P256 (default SECP); LOGN: batch size 2^LOGN (default 20);
# NVCC (default /usr/local/cuda/bin/nvcc); ARCH (default sm_90).
set -euo pipefail
. "$(dirname "$0")/common.sh"
[ $# -gt 0 ] || set -- "$root"
bins=()
for v in "$@"; do
  v=$(cd "$v" && pwd)
  name=$(basename "$v")
  # Items per thread of the BIP340 kernel, as the variant's source sets it (1 where it has none).
  per=$(sed -n 's/^constexpr int SCHNORR_ITEMS = \([0-9]*\);.*/\1/p' "$v/kernels/secp256k1/secp256k1.cu")
  per=${per:-1}
  # Whether ECDSA items go through the device's preparation kernel (e, s into u1, u2) first.
  prep=$(grep -c 'ecdsa_prepare' "$v/kernels/include/bc/verify.cuh" || true)
  for c in ${CURVES:-SECP}; do
    out="$build/$name-$c"
    bins+=("$out")
    "$NVCC" -O3 -std=c++17 -arch="${ARCH:-sm_90}" -Xptxas -v -DCURVE_$c -DSCHNORR_PER=$per -DHAS_PREPARE=$((prep > 0)) \
      -DVARIANT="\"$name\"" -I "$v/kernels/include" -I "$v/kernels" -o "$out" "$here/verify.cu" \
      > "$out.log" 2>&1 &
  done
done
wait
for b in "${bins[@]}"; do
  [ -x "$b" ] || { echo "$(basename "$b"): build failed"; tail -5 "$b.log"; continue; }
  echo "$(basename "$b"): $(grep -E -A3 'Compiling entry.*(verify|mul_base)' "$b.log" | grep -E 'Used|spill' | sed 's/ptxas info *: //' | tr -s ' \n' ' ')"
done
for round in 1 2; do
  for b in "${bins[@]}"; do [ -x "$b" ] && "$b" "${LOGN:-20}"; done
done

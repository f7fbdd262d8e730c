#!/usr/bin/env bash
# Kernel-only timing of field products, squares and mixed additions (BN254, BLS12-381) for
# variants of kernels/include/bc/field.cuh chosen by preprocessor flags, side by side on a machine
# with an NVIDIA GPU. Each argument is one variant's flags ("" for the default build); all are
# compiled with the machine's nvcc, then timed in turns, twice. Equal checksums mean equal results.
#   scripts/kernel-bench/field.sh "" "-DFLAG" ...
# NVCC (default /usr/local/cuda/bin/nvcc); ARCH (default sm_90); THREADS, ITERS.
set -euo pipefail
. "$(dirname "$0")/common.sh"
[ $# -gt 0 ] || set -- ""
bins=()
i=0
for flags in "$@"; do
  out="$build/v$i"
  bins+=("$out")
  # shellcheck disable=SC2086
  "$NVCC" -O3 -std=c++17 -arch="${ARCH:-sm_90}" -Xptxas -v $flags -DVARIANT="\"${flags:-default}\"" \
    -I "$root/kernels/include" -I "$root/kernels" -o "$out" "$here/field.cu" > "$out.log" 2>&1 &
  i=$((i + 1))
done
wait
for b in "${bins[@]}"; do
  [ -x "$b" ] || { echo "$(basename "$b"): build failed"; tail -5 "$b.log"; }
done
for round in 1 2; do
  for b in "${bins[@]}"; do [ -x "$b" ] && "$b" "${THREADS:-262144}" "${ITERS:-256}"; done
done

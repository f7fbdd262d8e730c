#!/usr/bin/env bash
# Run the sppark MSM benchmark on the GPU machine (from the repository root or anywhere).
# Needs only the NVIDIA driver (libcuda.so): CUDA runtime, libstdc++ and blst are linked in.
#
# Default workloads (about 15 s in all on an H100 80GB HBM3 with 16 host cores):
#   correctness: n=2^10 GPU result vs naive host double-and-add, C ABI, edge cases (per group)
#   BN254 G1 n=2^20, 2^24 | BN254 G2 n=2^20 | BLS12-381 G1 n=2^20, 2^24 | BLS12-381 G2 n=2^20
# One line per workload:
#   sppark <curve> <group> msm n=2^k end_to_end_ms=.. resident_ms=.. end_to_end_pinned_ms=..
#          upload_ms=.. end_to_end_min_ms=.. resident_min_ms=.. runs=5 check=PASS|FAIL
# Extra arguments go to msm_bench (e.g. --g1=20 --g2= --runs=9 --curves=bn254; --help).
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=peers/out/sppark/msm_bench
[ -x "$BIN" ] || { echo "missing $BIN (build it with peers/sppark/build.sh)"; exit 1; }
[ -f peers/out/sppark/BUILD_INFO ] && sed 's/^/# /' peers/out/sppark/BUILD_INFO | grep -E 'commit|nvcc='
if command -v nvidia-smi >/dev/null 2>&1; then
    echo "# gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>/dev/null | head -1)"
fi
echo "# host: $(nproc) cpus, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
exec timeout 900 "$BIN" "$@"

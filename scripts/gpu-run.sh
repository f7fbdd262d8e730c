#!/usr/bin/env bash
# Runs every GPU test and benchmark in one call on a machine with an NVIDIA GPU, from the bundle
# that scripts/gpu-bundle.sh built. Logs and JSON results go to $OUT (default ./results); a short
# table is printed last. Usage: scripts/gpu-run.sh [--quick]
set -uo pipefail
cd "$(dirname "$0")/.."
BUNDLE=.gpu-bundle
DEST=${OUT:-$PWD/results}   # at the end: results.tgz (every log), the JSON files, summary.txt
OUT=$(mktemp -d)            # logs are written here first
quick=${1:-}
[ -f "$BUNDLE/bin.tgz" ] || { echo "no $BUNDLE/bin.tgz: run scripts/gpu-bundle.sh first" >&2; exit 1; }
# The bundle unpacked: binaries and kernel images (compressed in the bundle), the rest linked.
B=$(mktemp -d)
tar -xzf "$BUNDLE/bin.tgz" -C "$B"
for f in tests.tgz wheels data build-root; do ln -s "$PWD/$BUNDLE/$f" "$B/$f"; done
# Groth16 fixtures: test circuits as they are; benchmark circuits get a development key here.
mkdir -p "$B/zk"
for d in "$BUNDLE"/zk/*/; do
  [ -d "$d" ] || continue
  name=$(basename "$d")
  cp -r "$d" "$B/zk/$name"
  if [ -f "$d/circuit.r1cs.gz" ]; then
    gunzip "$B/zk/$name"/*.gz
    "$B/bin/batchcrypt" groth16-setup "$B/zk/$name/circuit.r1cs" "$B/zk/$name/circuit.zkey"
  fi
done
export BATCHCRYPT_ZK_FIXTURES=$B/zk
# GPU_RUN_DRY=1 runs the same steps on a machine without a GPU (to check this script itself).
[ "${GPU_RUN_DRY:-0}" = 1 ] || export BATCHCRYPT_REQUIRE_GPU=1
export BATCHCRYPT_SHARED_DATA=$B/data RUST_BACKTRACE=1 BATCHCRYPT_BIN=$B/bin/batchcrypt
# Test binaries locate tests/data by the path of the checkout they were built in.
root=$(cat "$B/build-root")
if [ ! -e "$root" ]; then mkdir -p "$(dirname "$root")" && ln -s "$PWD" "$root"; fi

declare -a summary
step() { # name, command...
  local name=$1; shift
  local t0=$SECONDS
  if "$@" >"$OUT/$name.log" 2>&1; then status=ok; else status=FAIL; fi
  summary+=("$(printf '%-28s %-5s %4ss' "$name" "$status" $((SECONDS - t0)))")
  [ $status = ok ] || tail -30 "$OUT/$name.log"
}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 | tee "$OUT/gpu.txt"
"$B/bin/batchcrypt" info | tee -a "$OUT/gpu.txt"

tests=$(mktemp -d) && tar -xzf "$B/tests.tgz" -C "$tests"
run_tests() { local rc=0; for t in "$tests"/tests/*; do echo "### $t"; "$t" --test-threads=4 || rc=1; done; return $rc; }
step rust-tests run_tests
PYTHON=${PYTHON:-python3}   # needs numpy and pytest
py_tests() {
  "$PYTHON" -m pip install -q --no-index --no-deps --upgrade --target /tmp/bc-site "$B"/wheels/*.whl &&
  PYTHONPATH=/tmp/bc-site "$PYTHON" -m pytest -q -p no:cacheprovider crates/batchcrypt-py/tests
}
step python-tests py_tests
step demo "$B/bin/batchcrypt" demo
step merkle "$B/bin/batchcrypt" merkle "$B/data/block413567.raw"
step calibrate "$B/bin/batchcrypt" calibrate
# BENCH picks benchmark groups (default: all), e.g. BENCH="sm2" to spend device time on one.
for g in ${BENCH:-sha256 secp256k1 sm2 aes bn254 ntt groth16}; do
  step "bench-$g" "$B/bin/batchcrypt-bench" "$g" $quick --json "$OUT/bench-$g.json"
done
# One proof of the largest benchmark circuit from the command line, with its trace.
big=$(ls -d "$B"/zk/chain-* 2>/dev/null | sort -t- -k2 -n | tail -1)
[ -n "$big" ] && step prove "$B/bin/batchcrypt" prove "$big/circuit.zkey" "$big/witness.wtns" \
  "$OUT/proof.json" "$OUT/public.json" --repeat 3 --timings --trace "$OUT/groth16-trace.json"
# ECDH-PSI between two processes on this machine, both on the GPU (PSI_N items per side).
step psi-gpu scripts/psi-loopback.sh "${PSI_N:-10000000}" "$B/bin/batchcrypt" --backend gpu
# Machine code of every kernel (instruction mix for the throughput bounds) and ptxas's report.
if command -v cuobjdump >/dev/null; then
  for fb in "$B"/kernels/*.fatbin; do cuobjdump -sass "$fb" > "$OUT/$(basename "$fb" .fatbin).sass" 2>&1; done
fi
cp "$B"/kernels/ptxas-report.txt "$OUT/" 2>/dev/null

echo; echo "== logs in $DEST/results.tgz"
grep -hE '^test result|passed|failed' "$OUT/rust-tests.log" "$OUT/python-tests.log" | tail -20
echo; grep -hE 'gpu|cpu ' "$OUT/bench-sha256.log" 2>/dev/null | tail -20
echo; grep -hE 'verify 2' "$OUT/bench-secp256k1.log" 2>/dev/null | tail -40
echo; grep -hE '^(mul|hash|verify)' "$OUT/bench-sm2.log" 2>/dev/null | tail -40
echo; grep -hE '^(ctr|gcm|host|link)' "$OUT/bench-aes.log" 2>/dev/null | tail -80
echo; grep -hE '^msm| ms$' "$OUT/bench-bn254.log" 2>/dev/null | tail -40
echo; grep -hE 'prove|ms|proofs/s' "$OUT/bench-groth16.log" 2>/dev/null | tail -40
echo; cat "$OUT/psi-gpu.log"
echo; printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
mkdir -p "$DEST"
tar -czf "$DEST/results.tgz" -C "$OUT" .
cp "$OUT"/*.json "$OUT/summary.txt" "$DEST/" 2>/dev/null
grep -q FAIL "$OUT/summary.txt" && exit 1 || exit 0

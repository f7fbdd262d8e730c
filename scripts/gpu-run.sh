#!/usr/bin/env bash
# Runs every GPU test and benchmark in one call on a machine with an NVIDIA GPU, from the bundle
# that scripts/gpu-bundle.sh built. Logs and JSON results go to $OUT (default ./results); a short
# table is printed last. Usage: scripts/gpu-run.sh [--quick]
# STEPS picks what runs (default: all): any of tests python demo merkle bitcoin calibrate bench pybench prove psi
# sass sanitize (compute-sanitizer over test binaries; only when named) fuzz (the fuzz targets on the
# CPU cores beside the other steps; only when named) ray (bench/ray_scaling.py; only
# when named; RAY_WHEELS: Ray wheels to install from where it is missing) peers (the GPU peers built under
# peers/out, each by its peers/<name>/run.sh; only when named; PEERS picks them), e.g. STEPS="tests bench" BENCH="bn254 groth16" to spend device time on one area.
set -uo pipefail
cd "$(dirname "$0")/.."
BUNDLE=.gpu-bundle
DEST=${OUT:-$PWD/results}   # at the end: results.tgz (every log), the JSON files, summary.txt
OUT=$(mktemp -d)            # logs are written here first
quick=${1:-}
[ -f "$BUNDLE/bin.txz" ] || { echo "no $BUNDLE/bin.txz: run scripts/gpu-bundle.sh first" >&2; exit 1; }
# The bundle unpacked: binaries and kernel images (compressed in the bundle), the rest linked.
B=$(mktemp -d)
tar -xJf "$BUNDLE/bin.txz" -C "$B"
for f in tests.txz wheels data build-root; do ln -s "$PWD/$BUNDLE/$f" "$B/$f"; done
[ -f "$BUNDLE/bitcoin-data.txz" ] && [ ! -d "$BUNDLE/data/bitcoin" ] && tar -xJf "$BUNDLE/bitcoin-data.txz" -C "$BUNDLE/data"
want() { [[ " ${STEPS:-all} " == *" all "* || " ${STEPS:-all} " == *" $1 "* ]]; }
# Groth16 fixtures: the test circuits as they are; the benchmark circuits (ZK_BENCH: domain
# sizes 2^K) written here with a development key.
mkdir -p "$B/zk"
cp -r "$BUNDLE"/zk/. "$B/zk/"
# An entry K:bls12381 writes the circuit over BLS12-381 (chain-K-bls12381).
for entry in ${ZK_BENCH:-16 20}; do
  # Only the Groth16 benchmarks (groth16, the scaling groups, Ray's) and the prove step use them.
  want prove || [[ " ${STEPS:-} " == *" ray "* ]] ||
    { want bench && [[ " ${BENCH:-groth16} " =~ \ (groth16|scaling|scaling-groth16)\  ]]; } || break
  k=${entry%%:*} curve=bn128 dir="$B/zk/chain-$k"
  [ "$entry" = "$k" ] || { curve=${entry#*:}; dir="$B/zk/chain-$k-$curve"; }
  "$B/bin/batchcrypt-bench" --chain-circuit "$k" "$dir" "$curve" &&
    "$B/bin/batchcrypt" groth16-setup "$dir/circuit.r1cs" "$dir/circuit.zkey"
done
export BATCHCRYPT_ZK_FIXTURES=$B/zk
# snarkjs from the bundle, where this machine has none: the tests verify with it, the Groth16
# benchmark runs it as the peer.
if [ -f "$BUNDLE/node.tar.xz" ]; then
  mkdir -p "$B/node" && tar -xJf "$BUNDLE/node.tar.xz" -C "$B/node"
  [ -d scripts/zk/node_modules/snarkjs ] || { rm -rf scripts/zk/node_modules && mv "$B/node/node_modules" scripts/zk/; }
  command -v node >/dev/null || export PATH=$B/node:$PATH
  export BATCHCRYPT_REQUIRE_SNARKJS=1
fi
# GPU_RUN_DRY=1 runs the same steps on a machine without a GPU (to check this script itself).
[ "${GPU_RUN_DRY:-0}" = 1 ] || export BATCHCRYPT_REQUIRE_GPU=1
export BATCHCRYPT_SHARED_DATA=$B/data RUST_BACKTRACE=1 BATCHCRYPT_BIN=$B/bin/batchcrypt
# Test binaries locate tests/data by the path of the checkout they were built in.
root=$(cat "$B/build-root")
if [ ! -e "$root" ]; then mkdir -p "$(dirname "$root")" && ln -s "$PWD" "$root"; fi

declare -a summary
# The summary and the results archive, at the end or when stopped from outside (a time limit):
# what ran is kept.
finish() {
echo; echo "== logs in $DEST/results.tgz"
grep -hE '^test result|passed|failed' "$OUT/rust-tests.log" "$OUT/python-tests.log" 2>/dev/null | tail -20
echo; grep -hE 'gpu|cpu ' "$OUT/bench-sha256.log" 2>/dev/null | tail -20
echo; grep -hE 'verify 2' "$OUT/bench-secp256k1.log" 2>/dev/null | tail -40
echo; grep -hE '^(mul|hash|verify)' "$OUT/bench-sm2.log" 2>/dev/null | tail -40
echo; grep -hE '^(ctr|gcm|host|link)' "$OUT/bench-aes.log" 2>/dev/null | tail -80
echo; grep -hE '^(ctr|gcm) [0-9]' "$OUT/bench-aes-batch.log" 2>/dev/null | tail -40
echo; grep -hE '^msm| ms$' "$OUT/bench-bn254.log" "$OUT/bench-bls12-381.log" 2>/dev/null | tail -80
echo; grep -hE 'prove|ms|proofs/s' "$OUT/bench-groth16.log" 2>/dev/null | tail -40
echo; grep -hE '^(ultrafast|gecc|icicle|sppark) ' "$OUT"/peer-*.log 2>/dev/null
echo; cat "$OUT/psi-gpu.log" 2>/dev/null
echo; cat "$OUT/python-bench.log" 2>/dev/null
echo; cat "$OUT/ray-bench.log" 2>/dev/null
echo; cat "$OUT/bench-scaling.log" 2>/dev/null | grep -vE "^(CPU|GPU [0-9]+):"
echo; cat "$OUT/bench-bitcoin.log" 2>/dev/null | grep -vE '^(CPU|GPU):'
echo; grep -hE 'signatures|throughput|verdict' "$OUT"/bitcoin-*.log 2>/dev/null
echo; printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
mkdir -p "$DEST"
tar -czf "$DEST/results.tgz" -C "$OUT" .
cp "$OUT"/*.json "$OUT/summary.txt" "$DEST/" 2>/dev/null
}
trap 'summary+=("interrupted"); finish; exit 1' TERM INT
step() { # name, command...
  local name=$1; shift
  local t0=$SECONDS
  if "$@" >"$OUT/$name.log" 2>&1; then status=ok; else status=FAIL; fi
  summary+=("$(printf '%-28s %-5s %4ss' "$name" "$status" $((SECONDS - t0)))")
  [ $status = ok ] || tail -30 "$OUT/$name.log"
}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 | tee "$OUT/gpu.txt"
"$B/bin/batchcrypt" info | tee -a "$OUT/gpu.txt"

tests=$(mktemp -d) && tar -xJf "$B/tests.txz" -C "$tests"
# TESTS picks test binaries by name prefix (default: all), e.g. TESTS="bitcoin secp256k1".
run_tests() {
  local rc=0
  for t in "$tests"/tests/*; do
    if [ -n "${TESTS:-}" ]; then
      local hit=0; for p in $TESTS; do [[ $(basename "$t") == "$p"* ]] && hit=1; done
      [ $hit = 1 ] || continue
    fi
    echo "### $t"; "$t" --test-threads=4 || rc=1
  done
  return $rc
}
# Fuzzing (only when STEPS names "fuzz"): the targets scripts/gpu-bundle.sh packed with FUZZ=1
# (.gpu-fuzz), all at once on the CPU cores while the GPU steps run. FUZZ_PLAN: "target:processes
# ..." (default: every target, one process each), FUZZ_SECONDS each (default 300; the step takes
# about half a minute more to start and end). The corpus (fuzz/corpus, packed in
# .gpu-fuzz/corpus.txz) grows in place and comes back, with any failing inputs (fuzz/artifacts),
# as $DEST/fuzz-corpus.txz.
fuzz_all() {
  local bin pids=() names=() rc=0 i
  bin=$(mktemp -d) && tar -xJf .gpu-fuzz/fuzz.txz -C "$bin" || return
  [ ! -f .gpu-fuzz/corpus.txz ] || tar -xJf .gpu-fuzz/corpus.txz || return
  for e in ${FUZZ_PLAN:-$(ls "$bin" | sed 's/$/:1/')}; do
    # Its working files under $OUT: a run stopped by a time limit keeps the workers' logs.
    mkdir -p "$OUT/fuzz-tmp/${e%%:*}"
    TMPDIR=$OUT/fuzz-tmp/${e%%:*} FUZZ_BIN=$bin FUZZ_JOBS=${e#*:} scripts/fuzz.sh "${FUZZ_SECONDS:-300}" \
      "${e%%:*}" >"$OUT/fuzz-${e%%:*}.log" 2>&1 &
    pids+=($!) names+=("${e%%:*}")
  done
  for i in "${!pids[@]}"; do wait "${pids[$i]}" || { rc=1; echo "FAILED: ${names[$i]}"; }; done
  printf '%-16s %-7s %12s %8s %8s\n' target status executions coverage corpus
  for t in "${names[@]}"; do grep -E "^$t " "$OUT/fuzz-$t.log" | tail -1; done
  mkdir -p "$DEST" && tar -cJf "$DEST/fuzz-corpus.txz" fuzz/corpus fuzz/artifacts
  return $rc
}
fuzz_pid= fuzz_t0=$SECONDS
if [[ " ${STEPS:-} " == *" fuzz "* ]]; then
  { fuzz_all; echo "exit $?"; } >"$OUT/fuzz.log" 2>&1 &
  fuzz_pid=$!
fi
want tests && step rust-tests run_tests
# compute-sanitizer over test binaries (SANITIZE_TESTS: name prefixes, default the AES ones, each
# optionally "tool,tool:prefix" and "prefix/filter", a test-name filter for that run, so one
# binary's tests can be shared out as several runs; the tools in SANITIZE_TOOLS, default all four;
# SANITIZE_FILTER: a filter for the runs that name none): each run must report 0 errors. Slow (the kernels run instrumented), so only when named
# in STEPS; a run past SANITIZE_TIMEOUT seconds (default 300) is reported as not finished. The
# (tool, binary) runs are shared out over every GPU, each run on one (multi_gpu on all of them).
sanitize_one() { # tool, test binary, GPU list, test-name filter (optional)
  local cs=${COMPUTE_SANITIZER:-/usr/local/cuda/bin/compute-sanitizer} tool=$1 t=$2 log r
  local filter=${4:-${SANITIZE_FILTER:-}} name
  name=$(basename "$t")${4:+/$4}
  echo "### $tool $name (GPU $3)"   # first: a run stopped from outside is named
  log=$(CUDA_VISIBLE_DEVICES=$3 timeout "${SANITIZE_TIMEOUT:-300}" "$cs" --tool "$tool" --error-exitcode 99 \
    --print-limit 20 "$t" --test-threads=1 $filter 2>&1)
  r=$?
  tail -40 <<<"$log"
  # A binary whose tests make no GPU call (kernel checks that run only in emulation builds).
  [[ $r != 0 && $log == *"terminated before first instrumented API call"* ]] && r=gpu-free
  case $r in
    0) echo "### $tool $name: 0 errors" ;;
    gpu-free) echo "### $tool $name: no GPU call to check" ;;
    124) echo "### $tool $name: NOT FINISHED (over ${SANITIZE_TIMEOUT:-300} s)" ;;
    *) echo "### $tool $name: exit $r"; return 1 ;;
  esac
}
sanitize() {
  local jobs=() gpus all rc=0 g
  # In the order named, the runs wanted most first; "tool,tool:prefix" names the tools for one.
  for p in ${SANITIZE_TESTS:-aes}; do
    local tools=${SANITIZE_TOOLS:-memcheck racecheck initcheck synccheck} filter=
    [[ $p == *:* ]] && tools=${p%%:*} && tools=${tools//,/ } && p=${p#*:}
    [[ $p == */* ]] && filter=${p#*/} && p=${p%%/*}
    for t in "$tests"/tests/"$p"*; do
      for tool in $tools; do [ -x "$t" ] && jobs+=("$tool $t $filter"); done
    done
  done
  gpus=$(nvidia-smi -L 2>/dev/null | wc -l); [ "$gpus" -ge 1 ] || gpus=1
  all=$(seq -s, 0 $((gpus - 1)))
  # One worker per GPU takes the next run from a shared counter; each run's log is kept in $OUT.
  local q=$OUT/sanitize; mkdir -p "$q" && echo 0 >"$q/next"
  local workers=()
  for ((g = 0; g < gpus; g++)); do
    ( while :; do
        n=$(flock "$q/next" sh -c 'n=$(cat "$1"); echo $((n + 1)) >"$1"; echo "$n"' _ "$q/next")
        [ "$n" -lt ${#jobs[@]} ] || break
        set -- ${jobs[$n]}
        d=$g; [[ $(basename "$2") == multi_gpu* ]] && d=$all
        sanitize_one "$1" "$2" "$d" "${3:-}" >"$q/run-$n.log" 2>&1 || echo "$n" >>"$q/failed"
      done ) &
    workers+=($!)
  done
  wait "${workers[@]}"
  for ((n = 0; n < ${#jobs[@]}; n++)); do cat "$q/run-$n.log"; done
  grep -h '^### .*: ' "$q"/run-*.log | sort
  [ ! -s "$q/failed" ] || rc=1
  return $rc
}
[[ " ${STEPS:-} " == *" sanitize "* ]] && step sanitize sanitize
PYTHON=${PYTHON:-python3}   # needs numpy and pytest
py_install() { "$PYTHON" -m pip install -q --no-index --no-deps --upgrade --target /tmp/bc-site "$B"/wheels/*.whl; }
py_tests() {
  py_install && BATCHCRYPT_ZK_FIXTURES="$B/zk" PYTHONPATH=/tmp/bc-site "$PYTHON" -m pytest -q -p no:cacheprovider crates/batchcrypt-py/tests
}
want python && step python-tests py_tests
# BIP340 from Python (numpy arrays, flat bytes, lists), then a G1 MSM and an NTT; compare with
# bench-secp256k1's, bench-scaling-msm's and bench-ntt's Rust figures.
py_bench() {
  py_install && PYTHONPATH=/tmp/bc-site "$PYTHON" crates/batchcrypt-py/bench/verify_throughput.py 20 gpu &&
    PYTHONPATH=/tmp/bc-site "$PYTHON" crates/batchcrypt-py/bench/msm_throughput.py gpu &&
    PYTHONPATH=/tmp/bc-site "$PYTHON" crates/batchcrypt-py/bench/ntt_throughput.py gpu
}
want pybench && step python-bench py_bench
# Ray (only when STEPS names "ray"): one actor per GPU against one engine in one process
# (bench/ray_scaling.py); Ray is installed from the wheels in RAY_WHEELS where it is not importable
# (a machine without network).
ray_bench() {
  py_install || return
  if ! PYTHONPATH=/tmp/bc-site:/tmp/ray-site "$PYTHON" -c "import ray" 2>/dev/null; then
    "$PYTHON" -m pip install -q --no-index --find-links "${RAY_WHEELS:?no Ray here: set RAY_WHEELS to a folder of wheels}" \
      --target /tmp/ray-site ray || return
  fi
  PYTHONPATH=/tmp/bc-site:/tmp/ray-site "$PYTHON" crates/batchcrypt-py/bench/ray_scaling.py ${RAY_BENCH:-22 24}
}
[[ " ${STEPS:-} " == *" ray "* ]] && step ray-bench ray_bench
want demo && step demo "$B/bin/batchcrypt" demo
want merkle && step merkle "$B/bin/batchcrypt" merkle "$B/data/block413567.raw"
# Bitcoin validation from the command line: one block on each backend, the regtest chain.
bd=$B/data/bitcoin/blocks
want bitcoin && [ -d "$bd" ] && for b in auto cpu gpu; do
  step "bitcoin-block-$b" "$B/bin/batchcrypt" --backend $b bitcoin verify-block "$bd/mainnet-367891.raw" --spent "$bd/mainnet-367891.spent.json"
done
want bitcoin && [ -d "$bd" ] && step bitcoin-chain "$B/bin/batchcrypt" bitcoin verify-chain --hex "$bd/regtest-chain-206.hex" --network regtest --quiet
want calibrate && step calibrate "$B/bin/batchcrypt" calibrate
# BENCH picks benchmark groups (default: all), e.g. BENCH="sm2" to spend device time on one.
# QUICK names groups to run in their short form even without --quick, e.g. QUICK="secp256k1".
want bench && for g in ${BENCH:-sha256 secp256k1 p256 sm2 aes xts aes-batch bn254 bls12-381 ntt groth16 bitcoin}; do
  q=$quick; [[ " ${QUICK:-} " == *" $g "* ]] && q=--quick
  step "bench-$g" "$B/bin/batchcrypt-bench" "$g" $q --json "$OUT/bench-$g.json"
done
# The GPU peers' own benchmarks (peers/README.md), beside ours in the same run. sppark's MSM also
# runs inside the MSM benchmark, on our batch.
run_peer() { bash "peers/$1/run.sh"; }
if [[ " ${STEPS:-} " == *" peers "* ]]; then
  for p in ${PEERS:-ultrafast gecc icicle sppark}; do
    [ -d "peers/out/$p" ] && step "peer-$p" run_peer "$p"
  done
fi
# One proof of the largest benchmark circuit from the command line, with its trace.
big=$(ls -d "$B"/zk/chain-* 2>/dev/null | sort -t- -k2 -n | tail -1)
want prove && [ -n "$big" ] && step prove "$B/bin/batchcrypt" prove "$big/circuit.zkey" "$big/witness.wtns" \
  "$OUT/proof.json" "$OUT/public.json" --repeat 3 --timings --trace "$OUT/groth16-trace.json"
# ECDH-PSI between two processes on this machine, both on the GPU (PSI_N items per side).
want psi && step psi-gpu scripts/psi-loopback.sh "${PSI_N:-10000000}" "$B/bin/batchcrypt" --backend gpu
# Machine code of every kernel (instruction mix for the throughput bounds) and ptxas's report.
if want sass && command -v cuobjdump >/dev/null; then
  for fb in "$B"/kernels/*.fatbin; do cuobjdump -sass "$fb" > "$OUT/$(basename "$fb" .fatbin).sass" 2>&1; done
fi
cp "$B"/kernels/ptxas-report.txt "$OUT/" 2>/dev/null

if [ -n "$fuzz_pid" ]; then
  wait "$fuzz_pid"; cat "$OUT/fuzz.log"
  grep -qx "exit 0" "$OUT/fuzz.log" && status=ok || status=FAIL
  summary+=("$(printf '%-28s %-5s %4ss' fuzz "$status" $((SECONDS - fuzz_t0)))")
fi
finish
grep -q FAIL "$OUT/summary.txt" && exit 1 || exit 0

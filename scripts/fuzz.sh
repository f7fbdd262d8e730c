#!/usr/bin/env bash
# Builds the fuzz targets (fuzz/, libFuzzer through cargo-fuzz on the stable toolchain) and runs
# each for a while, starting from its seeds (fuzz/seeds/<target>, in the repository) and the
# corpus earlier runs grew (fuzz/corpus/<target>, not in the repository). Any crash, hang
# (10 s on one input) or memory blow-up (2 GiB) fails the run; the input that caused it is
# kept in fuzz/artifacts/<target>/. A table of executions and coverage per target is printed last.
#
#   scripts/fuzz.sh                      # every target, 20 s each (what CI runs)
#   scripts/fuzz.sh 600 ecdsa_verify     # one target for 10 minutes
#   FUZZ_JOBS=8 scripts/fuzz.sh 300      # 8 processes per target, sharing its corpus
#   FUZZ_BIN=DIR scripts/fuzz.sh 300     # prebuilt targets (a machine without Rust), no build
#   scripts/fuzz.sh --build-only         # build the targets into fuzz/target only
#
# Reproduce a finding: fuzz/target/x86_64-unknown-linux-gnu/release/<target> <artifact file>.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
seconds=20
if [ "${1:-}" = --build-only ]; then
  build_only=1; shift
elif [[ "${1:-}" =~ ^[0-9]+$ ]]; then
  seconds=$1; shift
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=($(ls fuzz/fuzz_targets | sed 's/\.rs$//'))

bin=${FUZZ_BIN:+$(cd "$FUZZ_BIN" && pwd)}
if [ -z "$bin" ]; then
  if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz (the libFuzzer driver)..."
    cargo install -q cargo-fuzz --version 0.13.2 --locked
  fi
  # -s none: no sanitizer, which builds on stable (the code under test is safe Rust apart from
  # the FFI to C and C++ libraries); -a: overflow checks and debug assertions stay on.
  echo "== building the fuzz targets"
  cargo fuzz build -s none -O -a --fuzz-dir fuzz "${targets[@]:0:$([ ${#targets[@]} -eq 1 ] && echo 1 || echo 0)}"
  bin=$PWD/fuzz/target/x86_64-unknown-linux-gnu/release
fi
[ -z "${build_only:-}" ] || exit 0

jobs=${FUZZ_JOBS:-1}
# One input at a time per process, so the processes are the parallelism: a thread pool as wide
# as the machine in each of many processes makes them contend on a many-core host.
export RAYON_NUM_THREADS=${RAYON_NUM_THREADS:-1}
summary=()
failed=()
for t in "${targets[@]}"; do
  corpus=fuzz/corpus/$t artifacts=fuzz/artifacts/$t
  mkdir -p "$corpus" "$artifacts"
  seeds=()
  [ -d "fuzz/seeds/$t" ] && seeds=("$root/fuzz/seeds/$t")
  log=$(mktemp)
  echo "== $t: ${seconds} s, $jobs process(es)"
  args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix="$root/$artifacts/")
  # Several processes share the corpus directory (each a long-lived fuzzer: the differential
  # targets build their kernel tables once per process, which fork mode would redo per job).
  [ "$jobs" -gt 1 ] && args+=(-jobs="$jobs" -workers="$jobs")
  work=$(mktemp -d)
  if (cd "$work" && "$bin/$t" "${args[@]}" "$root/$corpus" "${seeds[@]}") >"$log" 2>&1; then
    status=ok
  else
    status=FAILED
    failed+=("$t")
  fi
  cat "$work"/fuzz-*.log >>"$log" 2>/dev/null || true
  rm -rf "$work"
  if grep -qE "panicked|ERROR: libFuzzer|Test unit written" "$log"; then
    [ "$status" = FAILED ] || { status=FAILED; failed+=("$t"); }
    grep -E "panicked|ERROR|SUMMARY|Test unit written" "$log" | head -20 || true
  fi
  # Executions and coverage: every process's final statistics.
  execs=$(grep -oP 'stat::number_of_executed_units: \K[0-9]+' "$log" | awk '{s+=$1} END {print s+0}')
  cov=$(grep -oP 'cov: \K[0-9]+' "$log" | sort -n | tail -1)
  files=$(ls "$corpus" | wc -l)
  summary+=("$(printf '%-16s %-7s %12s %8s %8s' "$t" "$status" "${execs:-0}" "${cov:-0}" "$files")")
  cp "$log" "$artifacts/last-run.log"
  rm -f "$log"
done
echo
printf '%-16s %-7s %12s %8s %8s\n' target status executions coverage corpus
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzzing found a failure in: ${failed[*]} (inputs in fuzz/artifacts/<target>/)" >&2
  exit 1
fi

#!/usr/bin/env bash
# Run the open-icicle v4 peer on the GPU machine. From the repository root:
#   peers/icicle/run.sh            (needs peers/out/icicle from peers/icicle/build.sh)
# Env: REPS (timed repetitions per figure, default 5), ICICLE_CASES_TIMEOUT (s per process, 150).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=$ROOT/peers/out/icicle
REPS=${REPS:-5}
TMO=${ICICLE_CASES_TIMEOUT:-150}
BIN=$OUT/bin
[ -x "$BIN/icicle_bench" ] || { echo "missing $BIN/icicle_bench: run peers/icicle/build.sh first" >&2; exit 1; }

# icicle v4 loads its backend at run time: icicle_load_backend_from_env_or_default() dlopens every
# *icicle_backend*.so under $ICICLE_BACKEND_INSTALL_DIR (recursively; default /opt/icicle/lib/backend).
export ICICLE_BACKEND_INSTALL_DIR=$OUT/lib/backend
# The backend libraries carry no rpath: their dependencies (the frontend libs and the backend field
# lib needed by the backend curve lib) are found through LD_LIBRARY_PATH.
LDP=$OUT/lib:$OUT/lib/backend/bn254/cuda:$OUT/lib/backend/cuda
# Built with g++ 12: use the bundled libstdc++ only when the system one is older.
NEED=$(cat "$OUT/lib/compat/GLIBCXX_NEEDED" 2>/dev/null || echo GLIBCXX_3.4.30)
SYS_STDCXX=$(ldconfig -p 2>/dev/null | awk '/libstdc\+\+\.so\.6 .*x86-64/ {print $NF; exit}')
if [ -z "$SYS_STDCXX" ] || ! grep -qa "$NEED" "$SYS_STDCXX"; then
  LDP=$LDP:$OUT/lib/compat
  echo "# system libstdc++ lacks $NEED: using the bundled one"
fi
export LD_LIBRARY_PATH=$LDP${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

echo "# $(head -1 "$OUT/BUILD_INFO.txt" 2>/dev/null)"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

LOG=$(mktemp)
run() { # one process per group, so that a failure loses only its own figures
  echo "## icicle_bench $*"
  timeout "$TMO" "$BIN/icicle_bench" --reps "$REPS" "$@" 2>&1 | tee -a "$LOG"
  local rc=${PIPESTATUS[0]}
  [ "$rc" = 0 ] || echo "## icicle_bench $* exited with $rc" | tee -a "$LOG"
}
run g1:20 g1:24
run g2:20
run ntt:20 ntt:24
run --pc 8 g1pc:20 g1pc:24 # extra: MSM on precomputed bases (precompute not timed)

# upstream examples, fixed sizes (MSM 2^10 G1 and G2; NTT 2^20 batch 2), for reference only
for ex in msm ntt; do
  echo "## upstream example_$ex CUDA"
  timeout 60 "$BIN/example_$ex" CUDA 2>&1 | tail -n 40
done

echo
echo "## summary (median of $REPS timed calls after 1 warm-up; wall clock around one synchronous call)"
awk '/^RESULT / {
  split($0, p, " [|] timed: "); timed = p[2]
  what = $4; for (i = 5; i <= NF && $i !~ /^n=/; i++) what = what " " $i
  for (j = 1; j <= NF; j++) { split($j, kv, "="); v[kv[1]] = kv[2] }
  printf "icicle bn254 %s n=%s ms=%s (mode=%s; %s; min %s ms; check %s)\n", what, v["n"], v["ms_median"], v["mode"], timed, v["ms_min"], v["check"]
}' "$LOG"
grep -q "check=FAIL\|exited with" "$LOG" && echo "## WARNING: some check failed or a run exited abnormally (see above)"
rm -f "$LOG"

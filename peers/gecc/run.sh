#!/usr/bin/env bash
# Run gECC's SM2 benchmarks on the GPU machine (from the repository root).
# Needs: peers/out/gecc/*_test.gz (build.sh), an NVIDIA driver (libcuda.so.1).
#
# The peer's Performance tests sweep hard-coded batch sizes count = SMs << i
# (sign/verify: i = 13..16, point mults: i = 11..16) and, for each, 12 x 2 launch
# configurations.  Batch size cannot be set without editing the peer, so we stop each
# Performance test once the block with i = GECC_SHIFT (default 13, i.e. 132<<13 =
# 1,081,344 on a 132-SM H100/H200) has printed its best result, and kill it.
# Correctness tests (sign, verify only; 2^22 fixed inputs) run to completion first.
#
# Env: GECC_SHIFT (13), GECC_TIMEOUT (s per Performance binary, 170),
#      GECC_CORRECTNESS (1 = run the Correctness tests too).
# About 140 s on an H100.
set -uo pipefail
OUT="${GECC_OUT:-peers/out/gecc}"
SHIFT="${GECC_SHIFT:-13}"
TMO="${GECC_TIMEOUT:-170}"
CORR="${GECC_CORRECTNESS:-1}"
echo "gecc commit: $(cat "$OUT/COMMIT" 2>/dev/null || echo unknown)"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>/dev/null || true
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
BIN="$TMP/bin"; mkdir -p "$BIN"
for f in "$OUT"/*_test.gz; do   # build.sh ships the binaries gzipped
  b="$(basename "$f" .gz)"; gzip -dc "$f" > "$BIN/$b"; chmod +x "$BIN/$b"
done
LB=""; command -v stdbuf >/dev/null && LB="stdbuf -oL -eL"   # line-buffer the peer's printf

done_block() {  # log: has the block "(<SM> << SHIFT)" printed its "fatested" line?
  awk -v s="<< $SHIFT)" 'index($0, s) {blk=1; next} /^-----/ {blk=0}
                         blk && /fatested speed/ {f=1} END {exit !f}' "$1"
}

perf() {  # name
  local bin="$BIN/$1_test" log="$TMP/$1.perf.log"
  echo "=== $1 --gtest_filter=*Performance* (stopped after the << $SHIFT block) ==="
  : > "$log"
  $LB "$bin" --gtest_filter='*Performance*' > "$log" 2>&1 &
  local pid=$! t0=$SECONDS
  tail -n +1 -f --pid=$pid "$log" &
  local tailpid=$!
  while kill -0 $pid 2>/dev/null; do
    if done_block "$log"; then echo "[run.sh] target block done, stopping $1"; kill $pid; break; fi
    if (( SECONDS - t0 > TMO )); then echo "[run.sh] timeout ${TMO}s, stopping $1"; kill $pid; break; fi
    sleep 1
  done
  wait $pid 2>/dev/null; sleep 0.5; kill $tailpid 2>/dev/null; wait $tailpid 2>/dev/null
}

corr() {  # name
  echo "=== $1 --gtest_filter=*Correctness* ==="
  "$BIN/$1_test" --gtest_filter='*Correctness*' 2>&1 | tee "$TMP/$1.corr.log"
}

if [ "$CORR" = 1 ]; then corr ecdsa_sign_bk3; corr ecdsa_verify_bk3; fi
perf ecdsa_sign_bk3
perf ecdsa_verify_bk3
perf ecdsa_ec_fixed_pmul_bk4
perf ecdsa_ec_unknown_pmul_bk4

# Best line of a block:  "... blc_num B thd_num: T time: <s> the fatested speed : <ops/s> signs/s"
summ() {  # name label
  awk -v want="<< $SHIFT)" -v label="$2" '
    /^-----/ { hdr=$0; n=$0; sub(/^-+ */, "", n); sub(/ .*/, "", n); blk=index($0, want) > 0 }
    /fatested speed/ {
      sp=$0; sub(/.*fatested speed : */, "", sp); sub(/ .*/, "", sp)
      cfg=$0; sub(/^.*blc_num /, "", cfg); sub(/ time:.*/, "", cfg); gsub(/ thd_num: */, "x", cfg)
      last=sprintf("gecc %s n=%s M/s=%.3f (kernel only, host wall clock, best of launch-config sweep: %s blocks x threads)", label, n, sp/1e6, cfg)
      if (blk) { print last; found=1; exit } }
    END { if (!found) { if (last != "") print last " [target block not reached]";
                        else printf "gecc %s n=? M/s=? (no result; see raw output)\n", label } }' "$TMP/$1.perf.log"
}
echo "=== correctness ==="
for t in ecdsa_sign_bk3 ecdsa_verify_bk3; do
  [ -f "$TMP/$t.corr.log" ] && echo "gecc $t correctness: $(grep -Eo '\[ +(PASSED|FAILED) +\].*' "$TMP/$t.corr.log" | head -1)"
done
echo "=== summary ==="
summ ecdsa_sign_bk3            sm2_sign
summ ecdsa_verify_bk3          sm2_verify
summ ecdsa_ec_fixed_pmul_bk4   fixed_base_mul
summ ecdsa_ec_unknown_pmul_bk4 unknown_point_mul

#!/usr/bin/env bash
# Run UltrafastSecp256k1's CUDA benchmark on the GPU machine (from the repo root).
# Needs: peers/out/ultrafast/{secp256k1_cuda_bench,secp256k1_cuda_bench_b20}.gz (build.sh),
#        an NVIDIA driver (libcuda.so.1).  About 10 s on an H100.
# Prints the peer's full output, then one summary line per figure:
#   ultrafast <op> n=<batch> M/s=<throughput> (kernel only) [variant]
set -uo pipefail
OUT="${ULTRAFAST_OUT:-peers/out/ultrafast}"
BATCH="${BATCH:-1048576}"
echo "ultrafast commit: $(cat "$OUT/COMMIT" 2>/dev/null || echo unknown)"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>/dev/null || true

TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
LOG1="$TMP/unmodified.log"; LOG2="$TMP/b20.log"
for b in secp256k1_cuda_bench secp256k1_cuda_bench_b20; do   # build.sh ships them gzipped
  if [ -f "$OUT/$b.gz" ]; then gzip -dc "$OUT/$b.gz" > "$TMP/$b"; else cp "$OUT/$b" "$TMP/$b"; fi
  chmod +x "$TMP/$b"
done

echo "=== [1] secp256k1_cuda_bench --batch $BATCH  (unmodified peer benchmark) ==="
"$TMP/secp256k1_cuda_bench" --batch "$BATCH" 2>&1 | tee "$LOG1"
rc1=${PIPESTATUS[0]}
echo "=== [2] secp256k1_cuda_bench_b20 --batch $BATCH  (verify batch cap lifted) ==="
"$TMP/secp256k1_cuda_bench_b20" --batch "$BATCH" 2>&1 | tee "$LOG2"
rc2=${PIPESTATUS[0]}
echo "exit codes: unmodified=$rc1 b20=$rc2"

# Result lines look like:  "ECDSA Verify           |    12.34 us |      81.00 Mops/s | batch=16384"
summ() {  # log, bench-name, label, variant
  awk -F'|' -v want="$2" -v label="$3" -v variant="$4" '
    { name=$1; gsub(/^[ \t]+|[ \t]+$/, "", name) }
    name==want && $4 ~ /batch=/ {
      mops=$3; gsub(/[^0-9.]/, "", mops)
      n=$4;    gsub(/[^0-9]/, "", n)
      printf "ultrafast %s n=%s M/s=%s (kernel only)%s\n", label, n, mops, variant
      found=1; exit }
    END { if (!found) printf "ultrafast %s n=? M/s=? (not found in output)%s\n", label, variant }' "$1"
}
echo "=== summary ==="
summ "$LOG1" "ECDSA Verify"   ecdsa_verify     " [unmodified bench, batch capped at 2^14]"
summ "$LOG1" "Schnorr Verify" bip340_verify    " [unmodified bench, batch capped at 2^14]"
summ "$LOG2" "ECDSA Verify"   ecdsa_verify     " [b20 variant: cap lifted]"
summ "$LOG2" "Schnorr Verify" bip340_verify    " [b20 variant: cap lifted]"
summ "$LOG1" "ECDSA Sign"     ecdsa_sign       " [unmodified bench, batch capped at 2^14]"
summ "$LOG1" "Schnorr Sign"   bip340_sign      " [unmodified bench, batch capped at 2^14]"
summ "$LOG1" "Generator Mul (G*k)" fixed_base_mul " [unmodified bench, batch capped at 2^17]"
summ "$LOG1" "Scalar Mul (P*k)"    var_base_mul   " [unmodified bench, batch capped at 2^16]"

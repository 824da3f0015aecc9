#!/usr/bin/env bash
# GEMM family on one H200 (sm_90a): a per-configuration smoke of the sm_90a kernel (localizes a
# failure), the CUDA tests (test_gemm_epilogue.py, then test_gemm.py), a compute-sanitizer memcheck
# of the kernel, the benchmark (FP8 vs cuBLASLt blockwise / tensorwise / bf16 / CUTLASS, fused
# epilogues, bf16 vs cuBLAS and compiled glue) and, time permitting (about 4 minutes in all), the
# older backends' tests and the tile sweep (GEMM_SWEEP=1 forces a short one).
#   VARIANT=<built variant dir> OUT=<output dir> bash tools/gpu/gemm.sh
# Writes under $OUT: gemm.log (everything), bench_gemm.json, sweep_gemm.json. Prints a short table last.
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${VARIANT:?set VARIANT to the built variant directory}"
: "${OUT:?set OUT to the output directory}"
mkdir -p "$OUT"
export PYTHONPATH="$VARIANT:$PWD/tests:$PWD/benchmarks${PYTHONPATH:+:$PYTHONPATH}"
L="$OUT/gemm.log"
T0=$SECONDS
step() { echo "## [$((SECONDS - T0)) s] $*" >> "$L"; }
: > "$L"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> "$L" 2>&1

step "smoke: one ragged GEMM per configuration (tools/gpu/gemm_smoke.py)"
after=""
for attempt in 1 2 3; do
  timeout 60 python3 tools/gpu/gemm_smoke.py ${after:+--after "$after"} >> "$L" 2>&1
  rc=$?
  echo "exit $rc" >> "$L"
  [ $rc -ne 2 ] && break
  after=$(grep -o "FATAL [^:]*" "$L" | tail -1 | cut -d' ' -f2)
  [ -z "$after" ] && break
done

step "pytest tests/test_gemm_epilogue.py (CUDA)"
timeout 80 python3 -m pytest -q -x -rs -p no:cacheprovider --tb=short tests/test_gemm_epilogue.py \
  -k "cuda or forced or auto_configs or cublas" >> "$L" 2>&1
echo "exit $?" >> "$L"

step "benchmark (benchmarks/bench_gemm.py)"
timeout 140 python3 benchmarks/bench_gemm.py --json "$OUT/bench_gemm.json" > "$OUT/bench.log" 2>&1
echo "exit $?" >> "$L"
cat "$OUT/bench.log" >> "$L"

step "compute-sanitizer --tool memcheck python3 tools/sanitize/sanitize_gemm.py"
timeout 50 compute-sanitizer --tool memcheck --error-exitcode 3 python3 tools/sanitize/sanitize_gemm.py > "$OUT/memcheck.log" 2>&1
echo "exit $?" >> "$L"
tail -4 "$OUT/memcheck.log" >> "$L"; grep -m 5 -E "Invalid|Error|error" "$OUT/memcheck.log" >> "$L"; rm -f "$OUT/memcheck.log"

if [ $((SECONDS - T0)) -lt 175 ]; then
  step "pytest tests/test_gemm.py (CUDA, the sm90 / auto / sm90_cutlass backends)"
  timeout $((215 - (SECONDS - T0))) python3 -m pytest -q -rs -p no:cacheprovider --tb=line tests/test_gemm.py \
    -k "cuda and (sm90 or auto or cutlass)" >> "$L" 2>&1
  echo "exit $?" >> "$L"
fi
if [ $((SECONDS - T0)) -lt 200 ] || [ "${GEMM_SWEEP:-0}" = 1 ]; then
  step "sweep (benchmarks/sweep_gemm.py --quick)"
  timeout $((230 - (SECONDS - T0) > 30 ? 230 - (SECONDS - T0) : 30)) python3 benchmarks/sweep_gemm.py --quick \
    --json "$OUT/sweep_gemm.json" >> "$L" 2>&1
  echo "exit $?" >> "$L"
fi
step "done"

# ---- short table, last
grep -E "^## \[|^exit|passed|failed|FATAL|WRONG|ERROR SUMMARY|gemm_smoke:|geometric mean" "$L" | tail -30
sed -n '/== GEMM summary/,$p' "$OUT/bench.log"
rm -f "$OUT/bench.log"

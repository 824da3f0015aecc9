#!/usr/bin/env bash
# One GPU call for the neighborhood-attention family: CUDA tests, compute-sanitizer
# (memcheck, racecheck) over every natten kernel path, the configuration sweep, the benchmark and
# the LTX-2 decoder stages 1-3 end to end (ours vs diffusers' FlexAttention processor).
# Expects PYTHONPATH to hold the built variant, tests/ and benchmarks/ (and diffusers for the
# e2e rows). Writes at most 8 files under ${OUT:-build/natten-run}; prints a summary last.
#   bash scripts/natten_gpu_run.sh
set -uo pipefail
cd "$(dirname "$0")/.."
O=${OUT:-build/natten-run}
mkdir -p "$O"
C="$O/checks.log"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "## pytest tests/test_natten.py -k cuda"
  timeout 300 python3 -m pytest -q -rs -p no:cacheprovider tests/test_natten.py -k cuda 2>&1 | tail -15
  for tool in memcheck racecheck; do
    echo "## compute-sanitizer --tool $tool python3 scripts/sanitize_natten.py"
    timeout 150 compute-sanitizer --tool $tool --error-exitcode 3 python3 scripts/sanitize_natten.py 2>&1 | tail -4
    echo "exit ${PIPESTATUS[0]}"
  done
} > "$C" 2>&1
timeout 240 python3 benchmarks/sweep_natten.py --shapes 2,3 --tiles 0,6,7,8 --env LTX_KERNELS_NATTEN_SM90=0 \
  --json "$O/sweep_natten.json" > "$O/sweep.log" 2>&1
cat "$O/sweep.log" >> "$C"; rm -f "$O/sweep.log"
rm -rf "$O/res"
timeout 300 python3 benchmarks/run.py --only natten --out "$O/res" > "$O/bench.log" 2>&1
mv "$O/res/natten.json" "$O/natten.json" 2>/dev/null; mv "$O/res/results.md" "$O/results_natten.md" 2>/dev/null
rm -rf "$O/res"; grep -E "^\| |ceilings" "$O/bench.log" >> "$C"; rm -f "$O/bench.log"
for s in 1 2 3; do
  timeout 200 python3 benchmarks/e2e_ltx2_decoder.py --stage $s --iters 10 --warmup 3 \
    --out "$O/e2e_ltx2_decoder_stage$s.json" 2>&1 | tail -5 >> "$O/e2e_ltx2_decoder.log"
done
grep -E "^(##|exit|[0-9]+ passed|.*ERROR SUMMARY|.*RACECHECK SUMMARY|FAILED)" "$C"
grep -E "auto|tile|LTX" "$C" | head -24
grep -E "^\| na3d" "$C"
grep -E "^(flex|ours)" "$O/e2e_ltx2_decoder.log"

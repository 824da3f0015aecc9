#!/usr/bin/env bash
# diffusers' step caches with and without ltx_kernels, end to end on the GPU: LTX-Video 2B and
# LTX-2 19B transformers (the real configs, random weights, no VAE / text encoder: see
# benchmarks/e2e_ltx_video.py), bf16 and FP8, each uncached and with each cache, one full
# denoising loop per variant. Prints the table last (benchmarks/e2e_cache_report.py).
#   VARIANT=<built variant dir> OUT=<dir> bash tools/gpu/e2e_cache.sh
# Needs diffusers importable (the GPU machine has none: install the wheel the lead carries, or
# put .whl/*.whl here: they are installed to /tmp/ltx-site as tools/gpu/check.sh does).
# Time on an H200: 36 s for LTX-Video and 83 s for LTX-2 (measured; each run prints its time):
# - LTX-Video, 49x512x768, CFG 3, the full 30 steps: first_block, mag (ratios calibrated on the
#   model first), taylorseer; 14 loops;
# - LTX-2, 49x512x768, CFG 3, the full 30 steps (LTX2_STEPS): taylorseer only, as diffusers 0.42.1
#   refuses first_block and mag on LTX-2; 7 loops.
# Each model's run has a time limit (LTXV_LIMIT, LTX2_LIMIT seconds; default 150 and 240).
# No warm-up loops (--warmup-iterations 0): the uncached eager reference loop runs first, and two
# untimed steps follow each optimize(), so first calls stay out of the timed loops.
# Copy $OUT/e2e_cache_*.json to benchmarks/results/h200/ and run
# `python3 benchmarks/e2e_cache_report.py --docs` to put the table in docs/integrations.md.
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${VARIANT:?set VARIANT to the built variant directory (build/<dir>/variant.txt)}"
OUT=${OUT:-build/gpu-out/e2e-cache}
mkdir -p "$OUT"
LTXV_STEPS=${LTXV_STEPS:-30}
LTX2_STEPS=${LTX2_STEPS:-30}
LTXV_LIMIT=${LTXV_LIMIT:-150}
LTX2_LIMIT=${LTX2_LIMIT:-240}
EXTRA=${E2E_EXTRA:-}  # e.g. "--tiny" for a dry run on a CPU machine
if ! python3 -c "import diffusers" > /dev/null 2>&1 && ls .whl/*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/ltx-site \
    .whl/*.whl > "$OUT/pip.log" 2>&1
  export PYTHONPATH=/tmp/ltx-site:${PYTHONPATH:-}
fi
export PYTHONPATH="$VARIANT:${PYTHONPATH:-}"
if ! python3 -c "import diffusers" > "$OUT/diffusers.log" 2>&1; then
  echo "e2e_cache: diffusers is not importable here (see $OUT/diffusers.log); nothing run"
  exit 2
fi
rc_all=0
run() {  # name, time limit (s), script and arguments...
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s)
  timeout "$limit" python3 "$@" --out "$OUT/$name.json" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "e2e_cache: $name rc=$rc in $(( $(date +%s) - t0 )) s (log $OUT/$name.log)"
  [ $rc -eq 0 ] || { rc_all=1; tail -5 "$OUT/$name.log"; }
}
run e2e_cache_ltx_video "$LTXV_LIMIT" benchmarks/e2e_ltx_video.py --steps "$LTXV_STEPS" --warmup-iterations 0 \
  --quantization fp8 --cache first_block mag taylorseer $EXTRA
run e2e_cache_ltx2 "$LTX2_LIMIT" benchmarks/e2e_ltx2.py --steps "$LTX2_STEPS" --warmup-iterations 0 \
  --quantization fp8 --cache taylorseer $EXTRA
python3 benchmarks/e2e_cache_report.py "$OUT"/e2e_cache_*.json
exit $rc_all

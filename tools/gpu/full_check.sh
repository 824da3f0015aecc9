#!/usr/bin/env bash
# The GPU check loop, one command on a GPU machine:
#   build for this GPU -> C++ core tests -> whole pytest suite on CUDA -> compute-sanitizer
#   (memcheck + racecheck) on every kernel path -> benchmarks -> benchmarks/results/<gpu>/.
# Logs go to $OUT (or build/gpu-check). Prints the benchmark table last.
#   bash tools/gpu/full_check.sh [--quick] [--no-sanitize] [--no-tests] [--only norm,...] [--tests FILES]
#                                [--cuda-only] [--prebuilt build/<variant>]
set -uo pipefail
cd "$(dirname "$0")/../.."
LOG=${OUT:-build/gpu-check}
mkdir -p "$LOG"
QUICK="" ; SAN=1 ; TESTS=1 ; ONLY="" ; PREBUILT="" ; KSEL="" ; TFILES="tests/test_*.py" ; SANTOOLS="memcheck racecheck"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=--quick ;;
    --no-sanitize) SAN=0 ;;
    --memcheck-only) SANTOOLS="memcheck" ;;
    --no-tests) TESTS=0 ;;
    --cuda-only) KSEL="cuda" ;;  # only the CUDA cases (CI covers the CPU ones)
    --only) ONLY="--only $2"; shift ;;
    --tests) TFILES="$2"; shift ;;  # e.g. "tests/test_fp8.py tests/test_lowbit.py"
    --prebuilt) PREBUILT="$2"; shift ;;  # a build/<variant>/ made elsewhere (skips the build)
  esac
  shift
done
# Wheels carried to a machine without a registry (matplotlib for the plot): .whl/
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/ltx-site .whl/*.whl >/dev/null 2>&1 && export PYTHONPATH=/tmp/ltx-site:${PYTHONPATH:-}
fi
python3 - <<'PY' | tee "$LOG/env.txt"
import torch, platform
p = torch.cuda.get_device_properties(0)
print(f"gpu {p.name} sm_{p.major}{p.minor} {p.multi_processor_count} SMs, L2 {p.L2_cache_size>>20} MiB, "
      f"{p.total_memory>>30} GiB; torch {torch.__version__}; python {platform.python_version()}")
PY
if [ -z "${TORCH_CUDA_ARCH_LIST:-}" ]; then
  TORCH_CUDA_ARCH_LIST=$(python3 -c "import torch; M, m = torch.cuda.get_device_capability(); print(f'{M}.{m}' + ('a' if M in (9, 10, 12) else ''))")
  export TORCH_CUDA_ARCH_LIST
fi
if [ -n "$PREBUILT" ]; then
  VARIANT=$(cd "$PREBUILT" && pwd)
  echo "prebuilt: $VARIANT"
else
  t0=$(date +%s)
  cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release \
    > "$LOG/build.log" 2>&1 &&
    cmake --build build/gpu -j "$(nproc)" >> "$LOG/build.log" 2>&1 || { tail -40 "$LOG/build.log"; exit 1; }
  echo "build: $(( $(date +%s) - t0 )) s for $TORCH_CUDA_ARCH_LIST"
  VARIANT=$(cat build/gpu/variant.txt)
fi
export PYTHONPATH="$VARIANT:$PWD/tests:${PYTHONPATH:-}"
if [ -x build/gpu/ltx_core_tests ]; then build/gpu/ltx_core_tests --gtest_brief=1 2>&1 | tail -3; fi
status=0
if [ "$TESTS" = 1 ]; then
  # one pytest process per file, so that a crash in one cannot hide the others' results
  for f in $TFILES; do
    t0=$(date +%s)
    name=$(basename "$f" .py)
    timeout "${TEST_TIMEOUT:-900}" python3 -m pytest "$f" -q -rs -p no:cacheprovider ${KSEL:+-k "$KSEL"} > "$LOG/pytest_$name.log" 2>&1
    rc=$?; [ $rc = 0 ] || [ $rc = 5 ] || status=1  # 5: no test selected
    echo "pytest $name ($(( $(date +%s) - t0 )) s): $(tail -1 "$LOG/pytest_$name.log")" | tee -a "$LOG/pytest_summary.txt"
    grep -E "^(FAILED|ERROR)|Fatal Python error" "$LOG/pytest_$name.log" | head -15
  done
  cat "$LOG/pytest_summary.txt" "$LOG"/pytest_test_*.log > "$LOG/pytest.log"
  rm -f "$LOG"/pytest_test_*.log "$LOG/pytest_summary.txt"
fi
if [ "$SAN" = 1 ] && command -v compute-sanitizer >/dev/null; then
  for tool in $SANTOOLS; do
    compute-sanitizer --tool $tool --error-exitcode 3 python3 tools/sanitize/sanitize_smoke.py > "$LOG/sanitize_$tool.log" 2>&1
    echo "compute-sanitizer $tool: exit $? ($(grep -E 'SUMMARY' "$LOG/sanitize_$tool.log" | tail -1))"
  done
fi
# The benchmarks write a fresh folder (so only what this run measured comes back), then it is
# copied over benchmarks/results/<gpu>/.
RES="$LOG/results"
rm -rf "$RES"
timeout "${BENCH_TIMEOUT:-1200}" python3 benchmarks/run.py $QUICK $ONLY --out "$RES" > "$LOG/bench.log" 2>&1 || { status=1; tail -30 "$LOG/bench.log"; }
gpu=$(python3 -c "import sys, torch; sys.path.insert(0, 'benchmarks'); import run; print(run.gpu_slug(torch.cuda.get_device_name(0)))")
mkdir -p benchmarks/results/"$gpu" && cp "$RES"/*.json benchmarks/results/"$gpu"/ 2>/dev/null
# results.md and plot.png there cover every family JSON present, not only this run's
python3 benchmarks/report.py --results benchmarks/results/"$gpu" >> "$LOG/bench.log" 2>&1
# few files back: checks.log holds the environment, build, sanitizer and benchmark logs
cat "$LOG"/env.txt "$LOG"/build.log "$LOG"/sanitize_*.log "$LOG"/bench.log > "$LOG/checks.log" 2>/dev/null
rm -f "$LOG"/env.txt "$LOG"/build.log "$LOG"/sanitize_*.log
grep -E "^\| |ceilings" "$LOG/bench.log" | tail -120
rm -f "$LOG"/bench.log
exit $status

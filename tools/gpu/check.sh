#!/usr/bin/env bash
# One device call: build the extension as a user would (the machine's default compiler, CUTLASS
# from the nvidia-cutlass wheel), then run the selected steps, each under its own time limit,
# and print a short summary last. Logs and JSON go to $OUT (default build/gpu-out).
#   bash tools/gpu/check.sh [steps...]
# steps (in the order given): build (build-tuning: with -DLTX_KERNELS_TUNING=ON), crash, attn-tests, attn-bench, gemm (tools/gpu/gemm.sh), gemm-tests,
#   suite (every test file, CUDA cases only), suite-xdist (everything, 8 workers), suite-list (listed ids),
#   gemm-smoke, sanitize-attn (memcheck-attn: memcheck of every attention kernel and the quantizer, then
#   racecheck-attn: racecheck of the default kernels; either alone by name),
#   membound-tests (CUDA cases of the memory-bound families, 8 workers when pytest-xdist is importable),
#   membound-bench (benchmarks/run.py for $MEMBOUND_FAMILIES, JSON into $OUT/bench),
#   e2e-cudagraphs (LTX-Video --compare in both compile modes, default and reduce-overhead (CUDA graphs): compile,
#     the rowwise _scaled_mm peer and both FP8 recipes; skip reasons logged; JSON into $OUT),
#   multi-device (tests/test_multi_device.py: kernels on two GPUs of one process; nvidia-h200-x2),
#   e2e-compare (benchmarks/e2e_ltx_video.py --compare: both FP8 recipes, attention none / fp8, the
#     torch._scaled_mm peers, one policy op left to Inductor; JSON into $OUT, as
#     benchmarks/results/<gpu>/e2e_ltx_video.json),
#   e2e-profile (benchmarks/profile_e2e_step.py of ours and the rowwise peer at 49x512x768; JSON into
#     $OUT, as benchmarks/results/<gpu>/experiments/profile_step_*),
#   attn-tiles (tools/tune/attention_tiles.py $ATTN_TILES_ARGS: both warpgroup schedules of the default
#     attention kernels beside cuDNN; JSON into $OUT)
#   attn-schedule (tools/tune/attention_schedule.py $ATTN_SCHEDULE_ARGS: the 16-bit kernels per tile and
#     persistent against the key count, beside every SDPA backend; JSON into $OUT)
# Wheels to install first (no registry on the GPU machine): .whl/*.whl (nvidia-cutlass, ...).
# GIT_SHA=<sha of the tree sent>: names the results and pins the op namespace (the machine's copy
# of the tree may carry a stale git HEAD, which the build would otherwise take).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-build/gpu-out}
mkdir -p "$OUT"
SUMMARY="$OUT/summary.txt"
: > "$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }
if ls .whl/*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/ltx-site \
    .whl/*.whl > "$OUT/pip.log" 2>&1 && export PYTHONPATH=/tmp/ltx-site:${PYTHONPATH:-}
fi
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0a}
say "git ${GIT_SHA:-$(git rev-parse --short HEAD 2>/dev/null)}; $(g++ --version | head -1); $(nvcc --version | tail -1)"
python3 -c "import torch; p = torch.cuda.get_device_properties(0); print(f'{p.name}, {p.multi_processor_count} SMs, torch {torch.__version__}')" | tee -a "$SUMMARY"
VARIANT=""
step() {  # name, limit (s), command...
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s)
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  local tail1=$(grep -E "passed|failed|error" "$OUT/$name.log" | tail -1)
  say "$name: rc=$rc in $(( $(date +%s) - t0 )) s ${tail1}"
  return $rc
}
for s in "${@:-build attn-tests attn-bench}"; do
  for st in $s; do
    case "$st" in
      build|build-tuning)  # build-tuning: also the configurations under study (-DLTX_KERNELS_TUNING=ON)
        tuning=OFF; [ "$st" = build-tuning ] && tuning=ON
        # BUILD_KEEP=<dir>: the built variant is kept under <dir>/<sha>-<tuning> and reused by a
        # later call at the same commit while the machine is still held (no second build)
        sha=${GIT_SHA:-$(git rev-parse --short HEAD 2>/dev/null)}
        keep=${BUILD_KEEP:+$BUILD_KEEP/$sha-$tuning}
        if [ -n "$keep" ] && [ -n "$sha" ] && [ -f "$keep/variant.txt" ]; then
          VARIANT=$(cat "$keep/variant.txt"); say "build: reused $VARIANT (built at $sha earlier on this machine)"
          continue
        fi
        step build 420 bash -c "cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DLTX_KERNELS_TESTS=OFF -DLTX_KERNELS_TUNING=$tuning ${GIT_SHA:+-DLTX_KERNELS_SHA=$GIT_SHA} && cmake --build build/gpu -j $(nproc)" \
          || { tail -30 "$OUT/build.log"; exit 1; }
        VARIANT=$(cat build/gpu/variant.txt)
        if [ -n "$keep" ] && [ -n "$sha" ]; then
          mkdir -p "$keep" && cp -a "$VARIANT" "$keep/" && echo "$keep/$(basename "$VARIANT")" > "$keep/variant.txt"
        fi ;;
      crash)
        step crash 120 env PYTHONPATH="$VARIANT:tests:${PYTHONPATH:-}" python3 -m pytest -q -p no:cacheprovider tests/test_build_toolchain.py ;;
      attn-tests)
        # CUDA cases of the kernel (the sm90 tests included) and of its quantizer, one line per test
        NX=""; python3 -c "import xdist, execnet" 2>/dev/null && NX="-n 8"
        step attn-tests 300 env PYTHONPATH="$VARIANT:tests:${PYTHONPATH:-}" python3 -m pytest -v -p no:cacheprovider -rfEs $NX \
          tests/test_attention.py tests/test_attention_quant.py tests/test_attention_operands.py -k "cuda or sm90" ;;
      attn-bench)
        step attn-bench 150 env PYTHONPATH="$VARIANT:${PYTHONPATH:-}" python3 benchmarks/bench_attention.py --out "$OUT/attention.json" ;;
      gemm)
        step gemm 280 env VARIANT="$VARIANT" OUT="$OUT/gemm" bash tools/gpu/gemm.sh
        tail -25 "$OUT/gemm/gemm.log" > "$OUT/gemm_tail.log" ;;
      gemm-tests)
        step gemm-tests 300 env PYTHONPATH="$VARIANT:tests:${PYTHONPATH:-}" python3 -m pytest -q -p no:cacheprovider -x tests/test_gemm*.py -k cuda ;;
      suite)
        for f in tests/test_*.py; do
          n=$(basename "$f" .py)
          step "suite_$n" 240 env PYTHONPATH="$VARIANT:tests:${PYTHONPATH:-}" python3 -m pytest -q -p no:cacheprovider -rs "$f" -k cuda
        done ;;
      suite-xdist)  # every test file (or $SUITE_FILES), CPU and CUDA cases, 8 workers (pytest-xdist)
        # -v: one line per test, so a run cut by the step's limit still names what failed. The
        # whole suite (~5100 tests) needs more than one call's limit on the H200: split it with
        # SUITE_FILES (e.g. "tests/test_gemm*.py tests/test_attention.py" in one call, the rest in
        # another) or pass SUITE_K="cuda" to run the CUDA cases only.
        step suite "${SUITE_LIMIT:-300}" env PYTHONPATH="$VARIANT:tests:${PYTHONPATH:-}" python3 -m pytest ${SUITE_FILES:-tests} \
          ${SUITE_K:+-k "$SUITE_K"} -v -n "${SUITE_N:-8}" -p no:cacheprovider -rfE --timeout 240 --durations 25
        grep -E "(FAILED|ERROR) tests/|^(FAILED|ERROR) " "$OUT/suite.log" | head -40 | tee -a "$SUMMARY" ;;
      suite-list)  # the test ids listed in $SUITE_LIST (one per line), part $SUITE_PART ("i/n"), $SUITE_N workers
        # The list is what CI cannot run: the ids a CPU machine skips (tools/gpu/cuda_test_ids.py
        # writes it from a CPU run's JUnit XML). Parts split it into n contiguous slices, one per call.
        step suite "${SUITE_LIMIT:-300}" env PYTHONPATH="$VARIANT:tests:${PYTHONPATH:-}" python3 tools/gpu/run_listed.py \
          "$SUITE_LIST" "${SUITE_PART:-1/1}" -v -n "${SUITE_N:-16}" -p no:cacheprovider -rfE --timeout 240 --durations 25
        grep -E "(FAILED|ERROR) tests/|^(FAILED|ERROR) " "$OUT/suite.log" | head -40 | tee -a "$SUMMARY" ;;
      gemm-smoke)
        step gemm-smoke 150 env PYTHONPATH="$VARIANT:tests:${PYTHONPATH:-}" python3 tools/gpu/gemm_smoke.py
        grep -vE " OK$" "$OUT/gemm-smoke.log" | head -40 | tee -a "$SUMMARY" ;;
      sanitize-attn|memcheck-attn)  # every attention kernel (tools/sanitize/sanitize_attention.py), the quantizer's CUDA tests
        step sanitize-attn "${SANITIZE_LIMIT:-300}" env PYTHONPATH="$VARIANT:tests:${PYTHONPATH:-}" compute-sanitizer --tool memcheck \
          --error-exitcode 3 --print-limit 20 python3 tools/sanitize/sanitize_attention.py
        step sanitize-quant 120 env PYTHONPATH="$VARIANT:tests:${PYTHONPATH:-}" compute-sanitizer --tool memcheck \
          --error-exitcode 3 --print-limit 20 python3 -m pytest -q -p no:cacheprovider tests/test_attention_quant.py \
          -k "cuda and not 2_31 and not compile" ;;&
      sanitize-attn|racecheck-attn|memcheck-attn)  # the default kernels, both schedules
        [ "$st" = memcheck-attn ] || step racecheck-attn "${RACECHECK_LIMIT:-240}" env PYTHONPATH="$VARIANT:tests:${PYTHONPATH:-}" compute-sanitizer --tool racecheck \
          --error-exitcode 3 --print-limit 20 python3 tools/sanitize/sanitize_attention.py --quick ;;
      membound-tests)
        NX=""; python3 -c "import xdist, execnet" 2>/dev/null && NX="-n 8"
        step membound-tests 150 env PYTHONPATH="$VARIANT:tests:${PYTHONPATH:-}" python3 -m pytest -q -p no:cacheprovider -rfE $NX \
          tests/test_activation.py tests/test_fused_fp8.py tests/test_fused_norm.py tests/test_rms_norm.py tests/test_rope.py \
          tests/test_fp8.py tests/test_quantization.py tests/test_attention_quant.py -k cuda ;;
      membound-bench)
        step membound-bench 300 env PYTHONPATH="$VARIANT:tests:benchmarks:${PYTHONPATH:-}" python3 benchmarks/run.py \
          --only "${MEMBOUND_FAMILIES:-activation,fused_fp8,fp8,norm,fused_norm,rope}" --out "$OUT/bench" ${GIT_SHA:+--sha $GIT_SHA} ;;
      e2e-cudagraphs)  # LTX-Video compiled without and with CUDA graphs in one process: compile, the rowwise
        # _scaled_mm peer and both FP8 recipes, each in both modes; Inductor's reasons for skipping graphs logged
        step e2e-cudagraphs 420 env PYTHONPATH="$VARIANT:benchmarks:${PYTHONPATH:-}" TORCH_LOGS="perf_hints,cudagraphs" \
          python3 benchmarks/e2e_ltx_video.py --compare --compile-mode default reduce-overhead \
          --quantization fp8 fp8_rowwise --peers rowwise --steps 8 --warmup-iterations 1 --timed-runs 3 \
          --out "$OUT/e2e_ltx_video_cudagraphs.json"
        grep -ihE "skipping cudagraph" "$OUT/e2e-cudagraphs.log" | sort | uniq -c | head -5 | tee -a "$SUMMARY"
        tail -24 "$OUT/e2e-cudagraphs.log" | tee -a "$SUMMARY" ;;
      e2e-compare)  # LTX-Video: eager, compiled, the _scaled_mm peers, optimize() with each FP8 recipe and attention mode
        step e2e-compare 420 env PYTHONPATH="$VARIANT:benchmarks:${PYTHONPATH:-}" python3 benchmarks/e2e_ltx_video.py \
          --compare --quantization fp8 fp8_rowwise --attention none fp8 --peers tensorwise rowwise \
          --leave-variants gated_residual_epilogue --steps 8 --warmup-iterations 1 --timed-runs 3 \
          --out "$OUT/e2e_ltx_video.json"
        tail -24 "$OUT/e2e-compare.log" | tee -a "$SUMMARY" ;;
      e2e-profile)  # one step's GPU time by kernel kind: ours (both recipes) and the rowwise peer
        for v in peer:scaled_mm-rowwise+compile optimized+fp8+compile optimized+fp8_rowwise+compile; do
          f=${v//[:+]/_}
          step "e2e-profile-$f" 120 env PYTHONPATH="$VARIANT:benchmarks:${PYTHONPATH:-}" \
            python3 benchmarks/profile_e2e_step.py --variant "$v" --out "$OUT/profile_step_${f}.json"
          head -8 "$OUT/e2e-profile-$f.log" | tee -a "$SUMMARY"
        done ;;
      attn-tiles)
        step attn-tiles 300 env PYTHONPATH="$VARIANT:${PYTHONPATH:-}" python3 tools/tune/attention_tiles.py \
          ${ATTN_TILES_ARGS:-} --json "$OUT/attention_tiles.json"
        tail -30 "$OUT/attn-tiles.log" > "$OUT/attn_tiles_tail.log" ;;
      attn-schedule)  # the 16-bit kernels' tile schedules (per tile / persistent) against the key count
        step attn-schedule 300 env PYTHONPATH="$VARIANT:${PYTHONPATH:-}" python3 tools/tune/attention_schedule.py \
          ${ATTN_SCHEDULE_ARGS:-} --json "$OUT/attention_schedule.json"
        grep -E "persistent" "$OUT/attn-schedule.log" | tee -a "$SUMMARY" ;;
      multi-device)
        step multi-device 180 env PYTHONPATH="$VARIANT:tests:${PYTHONPATH:-}" python3 -m pytest -v -p no:cacheprovider -rfEs \
          tests/test_multi_device.py ;;
      *) say "unknown step $st" ;;
    esac
  done
done
[ -f "$OUT/attn-bench.log" ] && tail -12 "$OUT/attn-bench.log"
cat "$SUMMARY"

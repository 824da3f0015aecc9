#!/usr/bin/env bash
# GPU check of the layer refactor (params structs, per-key CUDA impls, the natten kernel chain in
# the core, the IPC registry in the core): the CUDA cases of every family it touched, the natten
# knobs (LTX_KERNELS_NATTEN_TILE / _SM90) and the multi-process IPC transport on one GPU. The
# kernels' device code is unchanged (scripts/sass_diff.sh); this runs the host paths around them.
#
#   VARIANT=build/<variant> OUT=<dir> bash scripts/gpu/r1_layers.sh
#
# Writes one pytest log per file and summary.txt under $OUT; prints the table last. The files run
# side by side (one process each, the one GPU shared), each under its own time limit, so the
# whole stays under about 3 minutes.
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${VARIANT:?set VARIANT to the built variant directory (build/torch...-cu...-x86_64-linux)}"
OUT=${OUT:-build/r1-layers}
mkdir -p "$OUT"
export PYTHONPATH="$VARIANT:tests:${PYTHONPATH:-}"

# file and -k selection (empty: every case)
RUNS=(
  "tests/test_rms_norm.py|cuda"
  "tests/test_activation.py|cuda"
  "tests/test_fused_norm.py|cuda"
  "tests/test_rope.py|cuda"
  "tests/test_fp8.py|cuda"
  "tests/test_lowbit.py|cuda"
  "tests/test_fused_fp8.py|cuda"
  "tests/test_natten.py|cuda"
  "tests/test_distributed.py|cuda"
  "tests/test_distributed_ipc.py|"
  "tests/test_gemm_epilogue.py|cuda and fp8_output"
  "tests/test_attention.py|errors or empty or opcheck or auto_picks"
)
LIMIT=${LIMIT:-170}  # seconds per file

run_one() {  # file selection -> $OUT/<name>.log, $OUT/<name>.rc, $OUT/<name>.secs
  local file=$1 sel=$2 name
  name=$(basename "$file" .py)
  local args=(-q -p no:cacheprovider -rfE)
  [ -n "$sel" ] && args+=(-k "$sel")
  local t0=$(date +%s)
  timeout "$LIMIT" python3 -m pytest "$file" "${args[@]}" >"$OUT/$name.log" 2>&1
  echo $? >"$OUT/$name.rc"
  echo $(( $(date +%s) - t0 )) >"$OUT/$name.secs"
}

for run in "${RUNS[@]}"; do
  IFS='|' read -r file sel <<<"$run"
  run_one "$file" "$sel" &
done
wait

printf '%-24s %7s %7s %7s %5s %s\n' file passed failed skipped secs rc > "$OUT/summary.txt"
status=0
for run in "${RUNS[@]}"; do
  IFS='|' read -r file sel <<<"$run"
  name=$(basename "$file" .py)
  rc=$(cat "$OUT/$name.rc")
  last=$(grep -E "passed|failed|skipped|error" "$OUT/$name.log" | tail -n 1)
  count() { echo "$last" | grep -oE "[0-9]+ $1" | grep -oE "^[0-9]+" || echo 0; }
  printf '%-24s %7s %7s %7s %5s %s\n' "$name" "$(count passed)" "$(count failed)" "$(count skipped)" \
    "$(cat "$OUT/$name.secs")" "$([ "$rc" = 124 ] && echo timeout || echo "$rc")" >> "$OUT/summary.txt"
  [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ] && status=1  # 5: nothing selected
done
cat "$OUT/summary.txt"
exit $status

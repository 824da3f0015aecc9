#!/usr/bin/env bash
# GPU steps of the accuracy / bad-input test work, for a built variant:
#   VARIANT=build/<variant> OUT=<dir> bash scripts/gpu/tests_accuracy.sh
# 1. the activation tests on CUDA (gelu over [-20, 0] against float64, special values exact, every
#    fp16/bf16 pattern), 2. every bad-input test on CUDA, each in a child process (a crash fails
#    that test with the signal named), 3. the CUDA cases of the test files whose bounds were
#    derived anew (norms, RoPE, fused FP8, natten), 4. a bandwidth check of the erfc gelu against
#    silu and a copy (CUDA events, medians, a 128 MiB input: past the 50 MiB L2).
# Logs and JSON in $OUT; a short table last. Stays well under 4 minutes on an H200.
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${VARIANT:?set VARIANT to the built variant folder (build/<variant>)}"
OUT=${OUT:-build/gpu-tests-accuracy}
mkdir -p "$OUT"
export PYTHONPATH="$VARIANT:tests${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python3}
declare -A RC

run() {  # name, timeout seconds, pytest args...
  local name=$1 limit=$2
  shift 2
  timeout "$limit" "$PY" -m pytest -q -rs -p no:cacheprovider --junitxml="$OUT/$name.xml" "$@" > "$OUT/$name.log" 2>&1
  RC[$name]=$?
  echo "$name: exit ${RC[$name]} ($(tail -1 "$OUT/$name.log"))"
}

run activation 90 tests/test_activation.py -k cuda
run bad_inputs 90 tests -m isolated -k cuda
run bounds 150 tests/test_rms_norm.py tests/test_fused_norm.py tests/test_rope.py tests/test_fused_fp8.py \
  tests/test_natten.py -k "cuda and not 2_pow_31"

"$PY" - "$OUT" <<'EOF' > "$OUT/bandwidth.log" 2>&1
import json, sys
import torch
import ltx_kernels as lk

out = sys.argv[1]
x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16) * 3  # 128 MiB
y = torch.empty_like(x)
nbytes = 2 * x.numel() * x.element_size()  # read + write
rows = {}
for name, fn in [("copy", lambda: y.copy_(x)), ("silu", lambda: lk.silu(x, out=y)),
                 ("gelu", lambda: lk.gelu(x, out=y)), ("gelu_tanh", lambda: lk.gelu_tanh(x, out=y))]:
    for _ in range(5):
        fn()
    times = []
    for _ in range(30):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    ms = sorted(times)[len(times) // 2]
    rows[name] = dict(median_ms=ms, gbps=nbytes / ms / 1e6)
for r in rows.values():
    r["fraction_of_copy"] = r["gbps"] / rows["copy"]["gbps"]
json.dump(dict(device=torch.cuda.get_device_name(), shape=[8192, 8192], dtype="bfloat16", rows=rows),
          open(f"{out}/bandwidth.json", "w"), indent=1)
print(f"{'op':10s} {'median ms':>10s} {'GB/s':>8s} {'of copy':>8s}")
for k, r in rows.items():
    print(f"{k:10s} {r['median_ms']:10.4f} {r['gbps']:8.0f} {r['fraction_of_copy']:8.2f}")
EOF
RC[bandwidth]=$?

echo
echo "== scripts/gpu/tests_accuracy.sh ($(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $(c++ --version | head -1))"
printf "%-12s %-6s %s\n" step exit summary
for n in activation bad_inputs bounds; do
  printf "%-12s %-6s %s\n" "$n" "${RC[$n]}" "$(tail -1 "$OUT/$n.log")"
done
printf "%-12s %-6s\n" bandwidth "${RC[bandwidth]}"
cat "$OUT/bandwidth.log"

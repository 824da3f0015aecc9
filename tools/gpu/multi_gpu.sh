#!/usr/bin/env bash
# Several GPUs of one host (device kinds nvidia-h200-x2 / -x4 / -x8): build as a user would, the
# CUDA-IPC transport across GPUs (tests/test_distributed_ipc.py), the Ulysses context-parallel
# integration test, and the bus bandwidth of our exchanges against NCCL's collectives for every
# world size 2, 4, 8 the machine has (benchmarks/multi_gpu_comm.py). JSON and logs go to $OUT.
#   GIT_SHA=<sha> OUT=<dir> bash tools/gpu/multi_gpu.sh
# Carry .whl/ (nvidia-cutlass, diffusers). NVLink multicast is not used (our IPC transport stores
# through P2P mappings; NCCL keeps its defaults).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-build/gpu-out}
mkdir -p "$OUT"
if ls .whl/*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/ltx-site \
    .whl/*.whl > "$OUT/pip.log" 2>&1 && export PYTHONPATH=/tmp/ltx-site:${PYTHONPATH:-}
fi
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0a}
NGPU=$(nvidia-smi -L | wc -l)
echo "git ${GIT_SHA:-?}; $(g++ --version | head -1); $NGPU GPUs" | tee "$OUT/summary.txt"
timeout 420 bash -c "cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DLTX_KERNELS_TESTS=OFF ${GIT_SHA:+-DLTX_KERNELS_SHA=$GIT_SHA} && cmake --build build/gpu -j $(nproc)" \
  > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
export PYTHONPATH="$(cat build/gpu/variant.txt):$PWD/tests:${PYTHONPATH:-}"
timeout 240 python3 -m pytest -q -p no:cacheprovider -rs tests/test_distributed_ipc.py tests/test_integrations_cp.py \
  > "$OUT/tests.log" 2>&1
echo "tests: rc=$? $(grep -E 'passed|failed' "$OUT/tests.log" | tail -1)" | tee -a "$OUT/summary.txt"
for w in 2 4 8; do
  [ "$w" -le "$NGPU" ] || continue
  GIT_SHA=${GIT_SHA:-} timeout 300 python3 -m torch.distributed.run --nproc-per-node "$w" benchmarks/multi_gpu_comm.py \
    --json "$OUT/multi_gpu_comm_w$w.json" > "$OUT/comm_w$w.log" 2>&1
  echo "comm W=$w: rc=$?" | tee -a "$OUT/summary.txt"
  grep -E "GB/s" "$OUT/comm_w$w.log" | tee -a "$OUT/summary.txt"
done

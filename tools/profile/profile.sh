#!/usr/bin/env bash
# Nsight Compute profiles of the ops that trail their alternative on the H200 (tools/profile/profile_heavy.py:
# attention vs cuDNN, the FP8 / bf16 GEMMs vs cuBLASLt / cuBLAS, the fused glue vs torch.compile's
# Triton kernels) and of the FP8 quantizers (tools/profile/profile_fp8.py), with the sections that explain
# a gap: speed of light, memory workload, occupancy, launch statistics (registers, shared memory),
# warp stall reasons, pipe utilisation (ComputeWorkloadAnalysis: the tensor pipe for the GEMMs).
# One CSV per family (`--page details`, one row per kernel and metric), with the
# NVTX range that names each launch, packed into $OUT/ncu.tar.gz.
#   VARIANT=<built variant dir> OUT=<dir> bash tools/profile/profile.sh [families...]
# families: attention cross gemm glue fp8 membound (default: all but cross and membound). Each family is capped at FAMILY_LIMIT s (120).
# MEMBOUND_FILTER: words that select membound's calls by name (e.g. "ours quantize_attention"); all when unset.
set -uo pipefail
OUT=${OUT:-build/gpu-out/profile}
FAMILY_LIMIT=${FAMILY_LIMIT:-120}
source "$(dirname "$0")/ncu_setup.sh"
SECTIONS=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis
          --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats)
for fam in ${@:-attention gemm glue fp8}; do
  t0=$(date +%s)
  extra=()
  case "$fam" in
    fp8) script=(tools/profile/profile_fp8.py) ;;
    # memory-bound ops beside torch.compile's kernels, at the benchmarks' clocks (not locked)
    membound) script=(tools/profile/profile_membound.py ${MEMBOUND_FILTER:+"$MEMBOUND_FILTER"})
              extra=(--clock-control none --metrics smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum) ;;
    *) script=(tools/profile/profile_heavy.py "$fam") ;;
  esac
  cmd=(ncu "${SECTIONS[@]}" "${extra[@]}" --csv --page details --profile-from-start off --nvtx
       --print-nvtx-rename kernel python3 "${script[@]}")
  timeout "$FAMILY_LIMIT" "${cmd[@]}" > "$WORK/$fam.csv" 2> "$WORK/$fam.log"
  echo "profile: $fam rc=$? in $(( $(date +%s) - t0 )) s, $(grep -c '' "$WORK/$fam.csv") CSV lines"
done
ncu_pack ncu.tar.gz

#!/usr/bin/env bash
# Nsight Compute `--set full` of the compute-bound kernels at the benchmarks' clocks (not locked),
# with the per-instruction stall samples of the source page: what explains the distance of the
# FP8 / bf16 GEMM and of attention from their alternatives (tensor-pipe activity, issue-slot use,
# warp stall reasons, where in the SASS the warps wait).
#   VARIANT=<built variant dir> OUT=<dir> [GEMM_CONFIGS="auto 256x128:c2"] bash tools/profile/ncu_full.sh [gemm] [gemm-small] [gemm-deep] [attention]
# gemm:       tools/profile/profile_gemm.py at 8192^3 (our default tile, the CUTLASS collective, cuBLASLt,
#             DeepGEMM when importable)
# gemm-small: the same at 5376 x 2048 x 2048 (auto's tile), an LTX-Video projection
# gemm-deep:  the same at 5376 x 2048 x 8192, the LTX-Video MLP down projection (the longest K)
# attention:  tools/profile/profile_heavy.py attention (ours bf16 / FP8 and cuDNN, d 64 and 128, 2688 tokens)
# Per family: <fam>.details.csv, <fam>.raw.csv (every collected metric), <fam>.source.csv (SASS with
# stall samples), packed into $OUT/ncu_full.tar.gz; tools/profile/ncu_summary.py reads them.
set -uo pipefail
OUT=${OUT:-build/gpu-out/ncu}
LIMIT=${FAMILY_LIMIT:-200}
GEMM_CONFIGS=${GEMM_CONFIGS:-auto}  # our GEMM configurations to profile (LTX_KERNELS_GEMM_CONFIG strings)
source "$(dirname "$0")/ncu_setup.sh"
for fam in ${@:-gemm attention}; do
  t0=$(date +%s)
  case "$fam" in
    gemm) target=(tools/profile/profile_gemm.py --shape 8192 8192 8192 --configs $GEMM_CONFIGS) ;;
    gemm-small) target=(tools/profile/profile_gemm.py --shape 5376 2048 2048 --configs $GEMM_CONFIGS) ;;
    gemm-deep) target=(tools/profile/profile_gemm.py --shape 5376 2048 8192 --configs $GEMM_CONFIGS) ;;
    attention) target=(tools/profile/profile_heavy.py attention) ;;
    *) echo "ncu_full: unknown family $fam"; continue ;;
  esac
  timeout "$LIMIT" ncu --set full --clock-control none --import-source no --profile-from-start off --nvtx \
    --print-nvtx-rename kernel -o "$WORK/$fam" python3 "${target[@]}" > "$WORK/$fam.log" 2>&1
  rc=$?
  if [ -f "$WORK/$fam.ncu-rep" ]; then
    ncu --import "$WORK/$fam.ncu-rep" --page details --csv --print-nvtx-rename kernel > "$WORK/$fam.details.csv" 2>> "$WORK/$fam.log"
    ncu --import "$WORK/$fam.ncu-rep" --page raw --csv --print-nvtx-rename kernel > "$WORK/$fam.raw.csv" 2>> "$WORK/$fam.log"
    ncu --import "$WORK/$fam.ncu-rep" --page source --csv --print-source sass --print-nvtx-rename kernel \
      > "$WORK/$fam.source.csv" 2>> "$WORK/$fam.log"
    rm -f "$WORK/$fam.ncu-rep"
  fi
  echo "ncu_full: $fam rc=$rc in $(( $(date +%s) - t0 )) s, $(grep -c '' "$WORK/$fam.raw.csv" 2>/dev/null || echo 0) raw lines"
done
ncu_pack ncu_full.tar.gz

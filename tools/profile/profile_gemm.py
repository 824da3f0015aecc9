"""One FP8 blockwise GEMM per named launch, for Nsight Compute's source-level view of the sm_90a
kernel: our kernel under each LTX_KERNELS_GEMM_CONFIG given (read per call), beside the CUTLASS
collective, cuBLASLt's blockwise GEMM and, when `import deep_gemm` works (tools/gpu/deepgemm.sh
builds it), DeepGEMM's fp8_gemm_nt on the same operands. Each launch runs once unprofiled
(module load, DeepGEMM's JIT compilation), then once inside an NVTX range named after it
("ours 128x192:c2", "cutlass", "cublaslt", "deepgemm").

    ncu --profile-from-start off --nvtx --nvtx-include "ours 128x192:c2/" --set full \\
        --import-source no -o r python3 tools/profile/profile_gemm.py --shape 8192 8192 8192 --configs 128x192:c2
    ncu --import r.ncu-rep --page source --csv --print-source sass > sass.csv
"""

import argparse
import sys
from pathlib import Path

import torch

import ltx_kernels as lk
from profile_heavy import profile_calls  # same directory: run as tools/profile/profile_gemm.py

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_gemm import deepgemm, deepgemm_scales  # noqa: E402  (the benchmark's DeepGEMM call)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", nargs=3, type=int, default=[8192, 8192, 8192], metavar=("M", "N", "K"))
    ap.add_argument("--configs", nargs="*", default=["auto"])
    args = ap.parse_args()
    m, n, k = args.shape
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.05
    a, sa = lk.quantize_fp8_per_token_group(x, 128, "mn_major")
    b, sb = lk.quantize_fp8_block(w)
    sa_cm = sa.contiguous().t().contiguous().t()  # cuBLASLt wants the 1x128 scales M-major
    y = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)

    def ours(cfg):
        def run():
            with lk.developer_config(LTX_KERNELS_GEMM_CONFIG=cfg):
                lk.fp8_blockwise_gemm(a, sa, b, sb, out=y, backend="sm90")
        return run

    calls = [(f"ours {c}", ours(c)) for c in args.configs]
    calls.append(("cutlass", lambda: lk.fp8_blockwise_gemm(a, sa, b, sb, out=y, backend="sm90_cutlass")))
    calls.append(("cublaslt", lambda: torch._scaled_mm(a, b.t(), scale_a=sa_cm, scale_b=sb.t(),
                                                       out_dtype=torch.bfloat16)))
    dg, dg_label = deepgemm()
    print(f"deepgemm: {dg_label}" if dg else f"deepgemm: not available ({dg_label})", flush=True)
    if dg is not None:
        sa_dg = deepgemm_scales(dg, sa)
        calls.append(("deepgemm", lambda: dg.fp8_gemm_nt((a, sa_dg), (b, sb), y, disable_ue8m0_cast=True)))
    profile_calls("profile_gemm", calls)


if __name__ == "__main__":
    main()

"""One FP8 blockwise GEMM per named launch, for Nsight Compute's source-level view of the sm_90a
kernel: our kernel under each LTX_KERNELS_GEMM_CONFIG given (read per call), beside the CUTLASS
collective and cuBLASLt's blockwise GEMM on the same operands. Each launch runs once unprofiled
(module load), then once inside an NVTX range named after it ("ours 128x192:c2", "cutlass",
"cublaslt").

    ncu --profile-from-start off --nvtx --nvtx-include "ours 128x192:c2/" --set full \\
        --import-source no -o r python3 tools/profile/profile_gemm.py --shape 8192 8192 8192 --configs 128x192:c2
    ncu --import r.ncu-rep --page source --csv --print-source sass > sass.csv
"""

import argparse

import torch

import ltx_kernels as lk
from profile_heavy import profile_calls  # same directory: run as tools/profile/profile_gemm.py


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
    profile_calls("profile_gemm", calls)


if __name__ == "__main__":
    main()

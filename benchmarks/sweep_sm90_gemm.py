"""Sweep of the sm_90a blockwise FP8 GEMM's run-time choices at bench_gemm.py's large-M LTX
shapes and 8192^3: tile configuration x persistent-scheduler raster order x swizzle, each in its own
process (the LTX_KERNELS_SM90_GEMM_* variables are read once per process), against cuBLASLt's
blockwise _scaled_mm timed in the parent. Prints, per shape, every setting's time and the best one,
and per setting the geometric mean of (cuBLASLt time / ours) over the 12 large-M shapes.

  python3 benchmarks/sweep_sm90_gemm.py [--json out.json]
"""

import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

SHAPES = [(m, n, k) for m in (5376, 12288) for (n, k) in
          [(2048, 2048), (8192, 2048), (2048, 8192), (4096, 4096), (16384, 4096), (4096, 16384)]] + [(8192, 8192, 8192)]
SETTINGS = [
    ("auto", {}),
    ("t128x128 raster m", {"LTX_KERNELS_SM90_GEMM_CONFIG": "t128x128", "LTX_KERNELS_SM90_GEMM_RASTER": "m"}),
    ("t128x128 raster n", {"LTX_KERNELS_SM90_GEMM_CONFIG": "t128x128", "LTX_KERNELS_SM90_GEMM_RASTER": "n"}),
    ("t128x128 raster m swz 4", {"LTX_KERNELS_SM90_GEMM_CONFIG": "t128x128", "LTX_KERNELS_SM90_GEMM_RASTER": "m",
                                 "LTX_KERNELS_SM90_GEMM_SWIZZLE": "4"}),
    ("t128x128 raster n swz 4", {"LTX_KERNELS_SM90_GEMM_CONFIG": "t128x128", "LTX_KERNELS_SM90_GEMM_RASTER": "n",
                                 "LTX_KERNELS_SM90_GEMM_SWIZZLE": "4"}),
    ("t64x128", {"LTX_KERNELS_SM90_GEMM_CONFIG": "t64x128"}),
    ("t128x128sk", {"LTX_KERNELS_SM90_GEMM_CONFIG": "t128x128sk"}),
]


def child():
    import torch

    import ltx_kernels as lk
    from bench_gemm import _inputs
    from common import n_copies, time_graph

    res = {}
    for m, n, k in SHAPES:
        sets = n_copies(m * k + n * k + 2 * m * n)
        ins = _inputs(m, n, k, sets)
        res[f"{m}x{n}x{k}"] = time_graph(lambda i: lk.fp8_blockwise_gemm(ins[i]["a"], ins[i]["sa"], ins[i]["b"],
                                                                          ins[i]["sb"], out=ins[i]["y"]), sets)
        del ins
        torch.cuda.empty_cache()
    print("RESULT " + json.dumps(res), flush=True)


def parent(json_path=None):
    import torch

    from bench_gemm import _inputs
    from common import n_copies, time_graph

    cublas = {}
    for m, n, k in SHAPES:
        sets = n_copies(m * k + n * k + 2 * m * n)
        ins = _inputs(m, n, k, sets)
        cublas[f"{m}x{n}x{k}"] = time_graph(lambda i: torch._scaled_mm(
            ins[i]["a"], ins[i]["b"].t(), scale_a=ins[i]["sa_cm"], scale_b=ins[i]["sb"].t(),
            out_dtype=torch.bfloat16), sets)
        del ins
        torch.cuda.empty_cache()
    times = {}
    for name, env in SETTINGS:
        e = dict(os.environ, **env)
        r = subprocess.run([sys.executable, __file__, "--child"], env=e, capture_output=True, text=True, timeout=300)
        line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
        if r.returncode != 0 or not line:
            print(f"{name}: failed ({r.returncode}): {r.stderr[-400:]}")
            continue
        times[name] = json.loads(line[0][7:])
        print(f"{name}: done", flush=True)
    print("\n| shape | cuBLASLt us | " + " | ".join(times) + " | best |")
    print("|---|---:|" + "---:|" * len(times) + "---|")
    for m, n, k in SHAPES:
        key = f"{m}x{n}x{k}"
        row = [f"{times[s][key]:.1f}" for s in times]
        best = min(times, key=lambda s: times[s][key])
        tfl = 2 * m * n * k / (times[best][key] * 1e-6) / 1e12
        print(f"| {key} | {cublas[key]:.1f} | " + " | ".join(row) +
              f" | {best} ({cublas[key] / times[best][key]:.2f}x cuBLASLt, {tfl:.0f} TFLOP/s) |")
    large = [f"{m}x{n}x{k}" for m, n, k in SHAPES[:12]]
    for s in times:
        g = math.exp(sum(math.log(cublas[key] / times[s][key]) for key in large) / len(large))
        print(f"geomean cuBLASLt/ours over the 12 large-M shapes, {s}: {g:.3f}x")
    g = math.exp(sum(math.log(cublas[key] / min(times[s][key] for s in times)) for key in large) / len(large))
    print(f"geomean with the best setting per shape: {g:.3f}x")
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "cublaslt_blockwise_us": cublas, "ours_us": times,
                       "settings": dict(SETTINGS), "method": "CUDA-graph replay, median of 15, inputs rotated past 3x L2"},
                      f, indent=1)


if __name__ == "__main__":
    if "--child" in sys.argv:
        child()
    else:
        parent(sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None)

"""tools/profile/ncu_summary.py on hand-written Nsight Compute CSVs (the raw page's two header rows, the
source page's per-kernel blocks): the stall shares, the pairing of source blocks with launches
(a kernel printed twice in a row counts once), the opcode shares and the split of the samples by
warp role at the setmaxnreg instructions."""

import csv
import importlib.util
import io
import json
import os

_SPEC = importlib.util.spec_from_file_location(
    "ncu_summary", os.path.join(os.path.dirname(__file__), "..", "tools", "profile", "ncu_summary.py"))
ns = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(ns)

STALL = "smsp__pcsamp_warps_issue_stalled_"


def raw_csv(launches):
    """launches: [(nvtx/kernel name, duration us, tensor pct, {stall: samples})]"""
    hdr = ["ID", "Kernel Name", "gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second",
           "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed", "launch__grid_size"]
    stalls = sorted({s for _, _, _, st in launches for s in st})
    hdr += [STALL + s for s in stalls] + [STALL + s + "_not_issued" for s in stalls]
    out = io.StringIO()
    w = csv.writer(out, quoting=csv.QUOTE_ALL)
    w.writerow(hdr)
    w.writerow(["", "", "us", "Ghz", "%", ""] + ["warp"] * (2 * len(stalls)))
    for i, (name, us, tensor, st) in enumerate(launches):
        w.writerow([str(i), name, f"{us:,.3f}", "1.5", str(tensor), "1,344"]
                   + [f"{st.get(s, 0):,}" for s in stalls] + ["999"] * len(stalls))
    return out.getvalue()


def source_csv(kernels):
    """kernels: [(name, [(sass, samples, {stall: n})])]"""
    out = io.StringIO()
    w = csv.writer(out, quoting=csv.QUOTE_ALL)
    for name, rows in kernels:
        w.writerow(["Kernel Name", name])
        w.writerow(["Address", "Source", ns.SAMPLES, "Instructions Executed", "stall_wait", "stall_barrier",
                    "stall_wait (Not Issued)"])
        for i, (sass, n, st) in enumerate(rows):
            w.writerow([hex(0x7F00 + 16 * i), f"      {sass}", str(n), "10", str(st.get("wait", 0)),
                        str(st.get("barrier", 0)), "7"])
    return out.getvalue()


def test_summary(tmp_path):
    raw = raw_csv([
        ("ours auto/void ltx_kernels::gemm::sm90::gemm_kernel<(bool)1, (int)128>(CUtensorMap_st)", 861.088, 75.6,
         {"wait": 3000, "barrier": 1000, "selected": 0}),
        ("cublaslt/nvjet_sm90_qqtst_128x128", 821.952, 80.5, {"wait": 1, "barrier": 3}),
    ])
    ours = [("MOV R1, c[0x0][0x28]", 5, {}),
            ("USETMAXREG.TRY_ALLOC.CTAPOOL UP1, 0xe8", 0, {}),
            ("QGMMA.64x192x32.F32.E4M3.E4M3 R24, gdesc[UR16], RZ, !UPT", 20, {"wait": 20}),
            ("WARPGROUP.DEPBAR.LE gsb0, 0x0", 40, {"barrier": 40}),
            ("FFMA R7, R24, R208, R7", 30, {"wait": 30}),
            ("@P0 BRA 0x7f00", 0, {}),
            ("USETMAXREG.DEALLOC.CTAPOOL 0x28", 0, {}),
            ("@!P4 SYNCS.ARRIVE.TRANS64.A1T0 RZ, [R2+UR5], RZ", 15, {"wait": 15}),
            ("UCGABAR_WAIT", 10, {"barrier": 10}),
            ("EXIT", 0, {})]
    (tmp_path / "gemm.raw.csv").write_text(raw)
    # the source page prints our kernel twice in a row (same code): one block for one launch
    (tmp_path / "gemm.source.csv").write_text(source_csv([
        ("void ltx_kernels::gemm::sm90::gemm_kernel<(bool)1, (int)128>(CUtensorMap_st)", ours),
        ("void ltx_kernels::gemm::sm90::gemm_kernel<(bool)1, (int)128>(CUtensorMap_st)", ours),
        ("nvjet_sm90_qqtst_128x128", [("HMMA R0, R1, R2, R3", 9, {})]),
    ]))
    out = tmp_path / "rec.json"
    ns.main([str(tmp_path), "--out", str(out), "--meta", "git_sha=abc", "command=x y"])
    rec = json.loads(out.read_text())
    assert rec["meta"] == {"git_sha": "abc", "command": "x y"}
    a, b = rec["gemm"]["launches"]
    assert a["call"] == "ours auto" and b["call"] == "cublaslt"
    assert a["duration_us"] == 861.088 and a["tensor_pipe_active_pct"] == 75.6 and a["grid"] == 1344
    assert a["stall_share_pct"] == {"wait": 75.0, "barrier": 25.0}  # not-issued columns and zeros left out
    assert list(rec["gemm"]["sass"]) == ["ours auto"]  # cuBLASLt's code is not ours
    v = rec["gemm"]["sass"]["ours auto"]
    assert v["samples"] == 120
    assert v["opcode_share_pct"]["WARPGROUP"] == round(100 * 40 / 120, 1)
    assert v["opcode_share_pct"]["SYNCS"] == round(100 * 15 / 120, 1)  # the predicate is skipped
    assert v["region_share_pct"] == {"before the split": round(100 * 5 / 120, 1), "consumers": 75.0,
                                     "producers": 12.5, "final cluster barrier (every warp)": round(100 * 10 / 120, 1)}
    assert v["consumer_opcode_share_pct"] == {"WARPGROUP": 44.4, "FFMA": 33.3, "QGMMA": 22.2}
    top = v["hottest"][0]
    assert top["sass"].startswith("WARPGROUP.DEPBAR") and top["stalls"] == {"barrier": 40}


def test_launches_and_source_blocks_that_do_not_pair(tmp_path):
    """With more source blocks than launches, the blocks are named by their kernel."""
    (tmp_path / "attention.raw.csv").write_text(raw_csv([("ours d64/void k()", 10.0, 50.0, {"wait": 1})]))
    (tmp_path / "attention.source.csv").write_text(source_csv([
        ("void ltx_kernels::a<1>(const T&)", [("MUFU.EX2 R1, R2", 3, {"wait": 3})]),
        ("void ltx_kernels::a<2>(const T&)", [("MUFU.EX2 R1, R2", 1, {"wait": 1})]),
    ]))
    out = tmp_path / "rec.json"
    ns.main([str(tmp_path), "--out", str(out)])
    sass = json.loads(out.read_text())["attention"]["sass"]
    assert list(sass) == ["void ltx_kernels::a<1>", "void ltx_kernels::a<2>"]
    assert "region_share_pct" not in sass["void ltx_kernels::a<1>"]  # no setmaxnreg split

"""The benchmark bookkeeping (CPU only): rows name their ceiling, report.py turns JSONs into
results.md and the README table, the committed results and the README agree, run.py finds every
family, and the user-facing text carries no work history."""

import ast
import json
import re
from pathlib import Path

import pytest

from conftest import load_bench

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def report():
    return load_bench("report")


def test_rows_name_their_ceiling(tmp_path, report):
    common = load_bench("common")
    # 4e9 bytes in 1000 us = 4000 GB/s = 100% of a 4000 GB/s copy ceiling
    mem = common.Row("rms_norm", [8], "bfloat16", 1000.0, {"eager": 2000.0, "torch.compile": 500.0},
                     bytes=4 * 10**9).finish(4000.0)
    assert mem.ceiling_name == "copy" and mem.fraction_of_ceiling == 1.0
    assert mem.best_baseline == "torch.compile" and mem.speedup_vs_best_baseline == 0.5
    # 1e12 FLOP in 10000 us = 100 TFLOP/s = 25% of a 400 TFLOP/s SDPA rate
    att = common.Row("na3d", [1], "bfloat16", 10000.0, {"flex": 30000.0}, flops=10**12).finish(4000.0)
    assert att.ceiling_name is None and att.fraction_of_ceiling is None  # no bytes: no copy ceiling
    att.against("SDPA", 400.0, sdpa_TFLOPs=400.0)
    assert att.ceiling_name == "SDPA" and att.fraction_of_ceiling == 0.25
    common.write_json(tmp_path / "fam.json", [mem, att], {"gpu": "TestGPU", "git_sha": "0123456789abcdef",
                                                          "git_dirty": False, "date": "2026-01-01"})
    (tmp_path / "notes.json").write_text(json.dumps({"something": "else"}))  # ignored
    results = report.load_results(tmp_path)
    assert list(results) == ["fam"]
    md = report.results_md(results)
    assert "| rms_norm | 8 | bfloat16 | 1000.00 | 4000 GB/s | 100.0 | copy |" in md
    assert "| na3d | 1 | bfloat16 | 10000.00 | 100 TFLOP/s | 25.0 | SDPA |" in md
    assert "git 0123456789" in md
    table = report.summary_table(results)
    assert "| fam | `na3d` | 1 | SDPA | 25% |" in table
    assert "| fam | `rms_norm` | 1 | copy | 100% |" in table


def test_forced_backends_stay_out_of_the_summary(report):
    assert report.default_path({"op": "fp8_blockwise_gemm[auto]"})
    assert report.default_path({"op": "adaln_rms_norm (per_token)"})
    assert not report.default_path({"op": "fp8_blockwise_gemm[sm89]"})


def test_committed_results_and_readme_are_generated(report):
    """results.md and the README table are what report.py makes of the committed JSONs
    (after adding JSONs: `python3 benchmarks/report.py --readme`)."""
    assert report.main(["--check", "--no-plot"]) == 0


def test_run_finds_every_family():
    run = load_bench("run")
    files = sorted(p.stem[len("bench_"):] for p in (ROOT / "benchmarks").glob("bench_*.py"))
    assert run.discover() == files and "norm" in files
    for fam in files:
        tree = ast.parse((ROOT / "benchmarks" / f"bench_{fam}.py").read_text())
        fns = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert "run" in fns, f"bench_{fam}.py has no run(copy_gbps, quick=False)"
        assert [a.arg for a in fns["run"].args.args][:2] == ["copy_gbps", "quick"], fam


def test_user_text_has_no_work_history():
    files = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "benchmarks").glob("*.py"),
             *(p for p in (ROOT / "tools").rglob("*") if p.suffix in (".py", ".sh", ".md")), *(ROOT / "torch-ext" / "ltx_kernels" / "integrations").rglob("*.py")]
    bad = re.compile(r"REFERENCE\.md|\.\./shared|\bsession \d|\bsessions? [0-9]|\bissue #?\d|\brun \d+\b|#\d+\b",
                     re.IGNORECASE)
    hits = [f"{p.relative_to(ROOT)}:{i}: {line.strip()}" for p in files if p.is_file()
            for i, line in enumerate(p.read_text().splitlines(), 1) if bad.search(line)]
    assert hits == []


def test_env_var_sets_and_restores_developer_settings():
    """common.env_var, which the sweeps force the library's developer settings with: the value
    inside the block, the kernels' own choice ("") for None, and whatever was set before afterwards
    (also after an error)."""
    import ltx_kernels as lk

    env_var = load_bench("common").env_var
    name = "LTX_KERNELS_NORM_SHAPE"
    before = lk.developer_setting(name)
    try:
        lk.set_developer_setting(name, "")
        with env_var(name, "b4"):
            assert lk.developer_setting(name) == "b4"
        assert lk.developer_setting(name) == ""
        lk.set_developer_setting(name, "w2")
        with env_var(name, None):
            assert lk.developer_setting(name) == ""
        assert lk.developer_setting(name) == "w2"
        with pytest.raises(RuntimeError):
            with env_var(name, "loop"):
                raise RuntimeError("refused")
        assert lk.developer_setting(name) == "w2"
        with pytest.raises(RuntimeError, match="unknown setting"):
            with env_var("LTX_KERNELS_NO_SUCH_KNOB", "1"):
                pass
    finally:
        lk.set_developer_setting(name, before)


# ---- records prove their commit (benchmarks/common.py provenance / record_meta) ------------------


def _git(repo, *args):
    import subprocess

    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    """A git checkout with one commit (src.py, benchmarks/results/r.json); returns (path, HEAD)."""
    r = tmp_path / "repo"
    (r / "benchmarks" / "results").mkdir(parents=True)
    (r / "src.py").write_text("x = 1\n")
    (r / "benchmarks" / "results" / "r.json").write_text("{}\n")
    _git(r, "init", "-q")
    _git(r, "add", ".")
    _git(r, "commit", "-q", "-m", "one")
    return r, _git(r, "rev-parse", "HEAD")


def _info(sha, **kw):
    return dict({"git_sha": sha, "git_dirty": False, "cxx_compiler": "GNU 13.3.0", "cuda_compiler": "NVIDIA 13.0.88",
                 "backend": "cuda"}, **kw)


def test_provenance_clean_tree_names_the_build_commit(repo):
    common = load_bench("common")
    r, head = repo
    p = common.provenance(info=_info(head), checkouts=[str(r)])
    assert p["git_sha"] == head and p["git_dirty"] is False and "diff_sha256" not in p
    assert p["build"]["cxx_compiler"] == "GNU 13.3.0"
    # a new record in the results folder, or the run's own output, is not a change of the tree
    (r / "benchmarks" / "results" / "r.json").write_text('{"rows": []}\n')
    (r / "benchmarks" / "results" / "new.json").write_text("{}\n")
    (r / "out.json").write_text("{}\n")
    assert common.provenance(info=_info(head), checkouts=[str(r)], exclude=[str(r / "out.json")])["git_dirty"] is False
    with pytest.raises(common.DirtyTree, match="out.json"):  # ... but any other untracked file is
        common.provenance(info=_info(head), checkouts=[str(r)])


def test_provenance_refuses_a_dirty_or_foreign_tree(repo, tmp_path):
    common = load_bench("common")
    r, head = repo
    (r / "src.py").write_text("x = 2\n")
    with pytest.raises(common.DirtyTree, match=r"uncommitted changes \(src.py\).*--allow-dirty"):
        common.provenance(info=_info(head), checkouts=[str(r)])
    p = common.provenance(True, info=_info(head), checkouts=[str(r)])
    assert p["git_dirty"] is True and p["git_sha"] == head and len(p["diff_sha256"]) == 64
    assert any("src.py" in why for why in p["dirty_reasons"])
    same = common.provenance(True, info=_info(head), checkouts=[str(r)])["diff_sha256"]
    (r / "src.py").write_text("x = 3\n")
    other = common.provenance(True, info=_info(head), checkouts=[str(r)])["diff_sha256"]
    assert same == p["diff_sha256"] and other != same  # the hash names the difference
    _git(r, "checkout", "-q", "src.py")
    assert common.provenance(info=_info(head), checkouts=[str(r)])["git_dirty"] is False
    # the build says it was built from a modified tree
    with pytest.raises(common.DirtyTree, match="build was made from a tree with uncommitted changes"):
        common.provenance(info=_info(head, git_dirty=True), checkouts=[str(r)])
    # the checkout moved on since the build
    (r / "src.py").write_text("x = 4\n")
    _git(r, "commit", "-q", "-am", "two")
    with pytest.raises(common.DirtyTree, match=f"at {_git(r, 'rev-parse', 'HEAD')[:10]}, the build at {head[:10]}"):
        common.provenance(info=_info(head), checkouts=[str(r)])
    # no build_info.json, a build that names no commit, a checkout that is not git
    with pytest.raises(common.DirtyTree, match="no build_info.json"):
        common.provenance(info={}, checkouts=[str(r)])
    with pytest.raises(common.DirtyTree, match="does not name its commit"):
        common.provenance(info=_info(None), checkouts=[str(r)])
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(common.DirtyTree, match="not a git checkout"):
        common.provenance(info=_info(head), checkouts=[str(plain)])


def test_build_info_is_read_beside_the_imported_package(tmp_path):
    import types

    common = load_bench("common")
    pkg = tmp_path / "variant"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    mod = types.SimpleNamespace(__file__=str(pkg / "__init__.py"))
    assert common.build_info(mod) == {}
    (pkg / "build_info.json").write_text(json.dumps(_info("ab" * 20)))
    assert common.build_info(mod)["git_sha"] == "ab" * 20
    # the build in use here: its build_info.json comes from cmake/write_variant.py
    import ltx_kernels

    assert Path(common.build_info_path()).parent == Path(ltx_kernels.__file__).resolve().parent


def test_record_meta_carries_command_gpu_clocks_and_timing(repo):
    common = load_bench("common")
    r, head = repo
    timing = common.graph_timing(trials=9)
    meta = common.record_meta("benchmarks/x.py", ["--json", str(ROOT / "benchmarks" / "o.json"), "--quick"], timing,
                              info=_info(head), checkouts=[str(r)])
    assert meta["git_sha"] == head and meta["git_dirty"] is False
    assert meta["command"] == "python3 benchmarks/x.py --json benchmarks/o.json --quick"  # no machine path
    assert meta["compiler"] == {"cxx_compiler": "GNU 13.3.0", "cuda_compiler": "NVIDIA 13.0.88",
                                "cuda_host_compiler": None}
    assert meta["timing"] == timing and "9 replays" in timing["repeats"] and timing["statistic"].startswith("median")
    for key in ("gpu", "torch", "cuda", "python", "date"):
        assert key in meta
    import torch

    if torch.cuda.is_available():
        assert meta["sms"] > 0 and "clocks" in meta


def test_write_variant_records_the_tree_state(repo):
    import importlib.util

    r, head = repo
    spec = importlib.util.spec_from_file_location("write_variant", ROOT / "cmake" / "write_variant.py")
    wv = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(wv)
    assert wv.git_state(str(r)) == {"git_sha": head, "git_dirty": False, "git_diff_sha256": None}
    (r / "benchmarks" / "results" / "r.json").write_text("[]\n")  # records are not built
    assert wv.git_state(str(r))["git_dirty"] is False
    (r / "new.cu").write_text("// untracked source\n")
    st = wv.git_state(str(r))
    assert st["git_dirty"] is True and len(st["git_diff_sha256"]) == 64
    assert wv.git_state(str(r / "benchmarks"))["git_sha"] is None  # not the top of its checkout


# ---- the end-to-end scripts' statistics and attention routing (pure helpers, CPU) ---------------


def test_e2e_runs_summary():
    e2e = load_bench("e2e_ltx_video")
    s = e2e.summarize_runs([[10.0, 12.0, 11.0], [20.0, 21.0, 22.0], [15.0, 14.0, 16.0]])
    assert s["per_step_ms"] == 15.0  # median over every step
    assert s["run_median_ms"] == [11.0, 21.0, 15.0] and s["spread_ms"] == [11.0, 21.0]
    assert s["run_mean_ms"] == [11.0, 21.0, 15.0] and s["mean_step_ms"] == 15.0 and s["mean_spread_ms"] == [11.0, 21.0]
    assert s["run_spread_pct"] == pytest.approx(100 * 10 / 15)
    cached = e2e.summarize_runs([[100.0, 1.0, 1.0, 1.0], [100.0, 2.0, 2.0, 2.0], [100.0, 1.0, 1.0, 1.0]])
    assert cached["per_step_ms"] == 1.5 and cached["mean_step_ms"] == pytest.approx(25.75)  # the cost of a loop


def test_e2e_counts_which_attention_ran():
    import torch
    import torch.nn.functional as F

    import ltx_kernels as lk

    e2e = load_bench("e2e_ltx_video")
    q = torch.randn(1, 8, 2, 16)

    def both(x):
        a = lk.attention(x, x, x)
        b = F.scaled_dot_product_attention(x.transpose(1, 2), x.transpose(1, 2), x.transpose(1, 2))
        return a, b

    assert e2e.count_attention_calls(lambda: both(q)) == {"ltx_kernels": 1, "sdpa": 1, "fp8": 0}
    assert e2e.count_attention_calls(lambda: (both(q), both(q))) == {"ltx_kernels": 2, "sdpa": 2, "fp8": 0}
    compiled = torch.compile(both, fullgraph=True, dynamic=False)
    compiled(q)
    assert e2e.count_attention_calls(lambda: compiled(q)) == {"ltx_kernels": 1, "sdpa": 1, "fp8": 0}
    assert e2e.count_attention_calls(lambda: lk.attention(*lk.quantize_attention_fp8(q, q, q))) == \
        {"ltx_kernels": 1, "sdpa": 0, "fp8": 1}
    assert e2e.attention_route("fp8", {"ltx_kernels": 0, "sdpa": 56}).startswith("sdpa: the routing rule")
    assert e2e.attention_route("bf16", {"ltx_kernels": 28, "sdpa": 28}) == "ltx_kernels bf16: 28, sdpa: 28 (of 56 calls)"
    assert e2e.attention_route("bf16", {"ltx_kernels": 56, "sdpa": 0}) == "ltx_kernels bf16: 56 (of 56 calls)"
    assert e2e.attention_route("fp8", {"ltx_kernels": 56, "sdpa": 0, "fp8": 28}) == \
        "ltx_kernels fp8: 28, ltx_kernels 16-bit: 28 (of 56 calls)"
    # the docs' tables say the same of a record's counts (benchmarks/figures.py route_label)
    fig = load_bench("figures")
    row = {"variant": "optimized+fp8+attn-fp8+compile"}
    assert fig.route_label(dict(row, attention_calls={"ltx_kernels": 56, "sdpa": 0, "fp8": 0})) == \
        "ours (16-bit) for 56 of 56 calls"
    assert fig.route_label(dict(row, attention_calls={"ltx_kernels": 56, "sdpa": 0, "fp8": 28})) == \
        "ours (fp8) for 28, ours (16-bit) for 28 of 56 calls"
    assert fig.route_label(dict(row, attention_calls={"ltx_kernels": 28, "sdpa": 28, "fp8": 28})) == \
        "ours (fp8) for 28, SDPA for 28 of 56 calls"
    assert fig.route_label(dict(row, attention_calls={"ltx_kernels": 0, "sdpa": 56, "fp8": 0})).startswith("SDPA")
    assert fig.route_label({"variant": "optimized+fp8+compile"}) is None


# ---- docs generated from records (benchmarks/report.py blocks, benchmarks/check_docs.py) --------


def test_docs_figures_come_from_the_records():
    """Every generated block of README.md and docs/ is what the generator makes of the committed
    records, no performance number or history is typed outside them, and the compile / attention
    policy agrees with the records (benchmarks/check_docs.py; after a run:
    `python3 benchmarks/report.py --readme`)."""
    assert load_bench("check_docs").main([]) == 0


def test_generated_blocks_are_rewritten_and_stale_ones_found(tmp_path, report):
    """A block is rewritten from the records in its own form (block or inline); an edited figure
    makes the block stale; an unknown name is an error."""
    doc = tmp_path / "doc.md"
    doc.write_text("Intro.\n\n<!-- generated: noise -->\nold\n<!-- /generated -->\n\n"
                   "inline <!-- generated: noise -->9%<!-- /generated --> here\n")
    new = report.render_blocks(doc.read_text())
    figures = load_bench("figures")
    want = f"{100 * figures.NOISE:g}%"
    assert new == (f"Intro.\n\n<!-- generated: noise -->\n{want}\n<!-- /generated -->\n\n"
                   f"inline <!-- generated: noise -->{want}<!-- /generated --> here\n")
    assert [name for _, name in report.stale_blocks([doc])] == ["noise", "noise"]
    doc.write_text(new)
    assert report.stale_blocks([doc]) == []
    doc.write_text("<!-- generated: no-such-block -->x<!-- /generated -->")
    with pytest.raises(SystemExit, match="unknown generated block 'no-such-block'"):
        report.render_blocks(doc.read_text())


def test_check_docs_finds_typed_numbers_and_history(tmp_path):
    check = load_bench("check_docs")
    doc = tmp_path / "README.md"
    doc.write_text("Fast: 1.23x cuDNN, 0.8-0.9x below, 1078 TFLOP/s, 4.2 GB/s, 45.7 ms/step, 80 us, 92% of copy.\n"
                   "Shapes 32 x 64 and 128x192, `0.5 x (1 + erf(x))`, 2^23 elements, 30 steps, e4m3.\n"
                   "<!-- generated: noise -->2.5x faster<!-- /generated -->\n"
                   "The former default, tried in 1a2b3c4d and measured on 7698fd2.\n")
    check.ROOT = tmp_path  # report paths relative to the temp folder
    perf = [h.split("'")[1] for h in check.scan(doc, check.PERF)]
    assert perf == ["1.23x", "0.8-0.9x", "1078 TFLOP/s", "4.2 GB/s", "45.7 ms/step", "80 us", "92%"]
    hist = [h.split("'")[1].lower() for h in check.scan(doc, check.HISTORY)]
    assert hist == ["former", "tried", "1a2b3c4d", "measured on 7698fd2"]


def test_attention_routing_points_from_the_records():
    """figures.attention_points: our time over SDPA as the processors call attention, FP8 with its
    quantization pass added (parsed from the row's note), from the committed attention record."""
    figures = load_bench("figures")
    assert figures.quantize_pass_us({"note": "x; quantize pass 80 us not included"}) == 80.0
    rec = figures.attention_records(figures.Records())
    rows = {tuple(e["shape"]): e for e in figures.attention_rows(rec)}
    e = rows[(2, 2688, 2688, 32, 64)]
    raw = {r["op"]: r for r in rec.rows("attention") if r["shape"] == [2, 2688, 2688, 32, 64]}
    sdpa = min(v for k, v in raw["attention bf16_bshd"]["baselines"].items() if k.startswith("sdpa_"))
    assert e["bf16"] == pytest.approx(sdpa / raw["attention bf16_bshd"]["ours_us"])
    fp8 = raw["attention fp8_kblock128"]
    assert e["fp8_128_with_pass"] == pytest.approx(sdpa / (fp8["ours_us"] + figures.quantize_pass_us(fp8)))
    assert e["fp8_128_with_pass"] < e["fp8_128"]


def test_check_policy_fails_where_a_record_disagrees(tmp_path):
    """check_policy on records made to contradict the code: our bf16 attention clearly slower at a
    shape the rule sends to our kernel, and a gated MLP op left to Inductor although our kernel
    is clearly faster in every row, are each reported; the committed records are not."""
    import shutil

    check = load_bench("check_policy")
    figures = load_bench("figures")
    pol = figures.load_policy()
    committed = figures.Records()
    errors, notes = [], []
    check.check_attention(committed, pol, errors, notes)
    check.check_left_to_inductor(committed, pol, errors, notes)
    assert errors == []
    for name in ("attention.json", "activation.json", "fused_norm.json"):
        src = figures.attention_records(committed).folder if name == "attention.json" else figures.DEFAULT_RESULTS
        shutil.copy(src / name, tmp_path / name)
    att = json.loads((tmp_path / "attention.json").read_text())
    for r in att["rows"]:
        if r["op"] == "attention bf16_bshd" and r["shape"] == [1, 14080, 14080, 32, 64]:
            r["ours_us"] = 1.2 * min(v for k, v in r["baselines"].items() if k.startswith("sdpa_"))
    (tmp_path / "attention.json").write_text(json.dumps(att))
    act = json.loads((tmp_path / "activation.json").read_text())
    for r in act["rows"]:
        if r["op"] == "silu_and_mul":
            r["ours_us"] = r["baselines"]["torch.compile"] / 1.2
    (tmp_path / "activation.json").write_text(json.dumps(act))
    errors = []
    check.check_attention(figures.Records(tmp_path), pol, errors, notes)
    assert any("14080 keys" in e and "runs our kernel there" in e for e in errors), errors
    bf16_keys = pol.MIN_KERNEL_ATTENTION_KEYS["bf16"]
    assert any(e.startswith(f"MIN_KERNEL_ATTENTION_KEYS['bf16'] = {bf16_keys} is outside") for e in errors), errors
    errors = []
    check.check_left_to_inductor(figures.Records(tmp_path), pol, errors, notes)
    assert len(errors) == 1 and errors[0].startswith("silu_and_mul is in LEFT_TO_INDUCTOR")


def test_e2e_profile_columns():
    """The step-profile table's columns: every gemm group is GEMM time; Triton kernels that a
    record put in the attention group because Inductor named them after fused attention-side ops
    are counted as glue (only those its top list names), never more than the group holds."""
    fig = load_bench("figures")
    rec = {"groups": {"gemm (ours, fp8)": 5.0, "gemm (cuBLAS / CUTLASS)": 7.0, "attention": 10.0,
                      "triton (torch.compile)": 3.0, "ltx_kernels (norm/rope/act/quant)": 2.0, "other": 0.5},
           "top": [["cudnn_sdpa_fprop", 8.0], ["triton_poi_fused__scaled_dot_product_cudnn_attention_add_2", 1.5],
                   ["triton_red_fused_rms_norm_1", 1.0], ["nvjet_sm90_qqtst", 6.0]]}
    gemm, attn, glue, moved = fig._profile_columns(rec)
    assert (gemm, attn, glue, moved) == (12.0, 8.5, 7.0, 1.5)
    rec["groups"]["attention"] = 1.0  # never move more than the group holds
    assert fig._profile_columns(rec)[1:] == (0.0, 6.5, 1.0)
    # the profiler script itself groups Inductor's kernels as Triton whatever ops they fuse
    kind = load_bench("profile_e2e_step").kind
    assert kind("triton_poi_fused__scaled_dot_product_cudnn_attention_add_2") == "triton (torch.compile)"
    assert kind("cudnn_generated_fort_native_sdpa_sm90_flash_fprop") == "attention"
    assert kind("nvjet_sm90_qqtst_128x128_128x6_4x2_h_bz_ovscale_bias_TNT") == "gemm (cuBLAS / CUTLASS)"

"""Re-derive the integrations' compile and attention policy from the committed records, and fail
where a record disagrees with the code.

    python3 benchmarks/check_policy.py [--results DIR] [--require-evidence]

What is checked (torch-ext/ltx_kernels/integrations/_compile_policy.py, read from the source tree
with its LTX_KERNELS_COMPILE_* knobs unset; no build needed, torch is):

- `use_kernel_attention` against every measured attention point (figures.attention_points:
  attention.json and the key-count sweep): where the rule runs our kernel it must not be
  clearly slower than SDPA, where it does not it must not be clearly faster, unless
  `kernel_attention_mode` runs the other mode of our kernel there instead (the "fp8" -> 16-bit
  fallback), which must then not be clearly slower than the refused one at the same point. The
  key thresholds (unmasked and with a key mask) are also re-derived: each must lie above every
  key count where our kernel was clearly slower and at or below every one where it was clearly
  faster.
- the per-input compile rules (`rms_norm_wins_compiled`, the exact `gelu_and_mul`'s `half_only`)
  against every benchmark row of their op (ours over torch.compile), row by row; the bounds of
  `rms_norm_wins_compiled` (RMS_NORM_MIN_NUMEL, RMS_NORM_MAX_COLS) re-derived from norm.json;
- the eager rule of the tanh GELU against PyTorch's own `F.gelu(approximate="tanh")` rows;
- the ops only the transformers integration uses and that have no per-input rule: left to
  Inductor (LEFT_TO_INDUCTOR) exactly when the median over their rows says Inductor's kernel is
  faster;
- the diffusers integration's ops, kept under compile because whole models ran faster with
  them: no end-to-end row that left one of them to Inductor (rows record the compile policy they
  ran under) may be clearly faster than a row of the same record that kept it. Without any such
  pair of rows the decision is reported as unverified (an error with --require-evidence).

"Clearly" means by more than figures.NOISE (and, for end-to-end rows, with the timed loops'
ranges apart): smaller differences are ties, and either decision passes.
"""

import argparse
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import figures  # noqa: E402

NOISE = figures.NOISE
# The ops the diffusers integration calls use_kernel for: kept under compile on end-to-end
# evidence, not by their one-op ratios (integrations/diffusers/).
END_TO_END_OPS = ("adaln_rms_norm", "gated_residual_adaln_rms_norm", "gelu_tanh", "gated_attention",
                  "quantize_fp8_per_token_group", "gated_residual_epilogue")
# The ops only the transformers integration calls use_kernel for (integrations/transformers.py).
TRANSFORMERS_OPS = ("rms_norm", "add_rms_norm", "silu_and_mul", "gelu_and_mul", "gelu_and_mul(tanh)")


def _x(v):
    return f"{v:.3f}x"


def _check_choice(errors, ours, v, if_slower, if_faster):
    """ours: the code runs our kernel; v: ours over the alternative (> 1: ours is faster). Running
    a clearly slower kernel appends the error if_slower, leaving a clearly faster one if_faster."""
    if ours and v < 1 - NOISE:
        errors.append(if_slower)
    if not ours and v > 1 + NOISE:
        errors.append(if_faster)


def _check_bound(name, value, at_least, below, errors, notes):
    """A bound of rms_norm_wins_compiled: `value` must be >= every entry of at_least and < every
    entry of below (sizes of norm.json rows that say so)."""
    lo, hi = max(at_least, default=0), min(below, default=None)
    notes.append(f"rms_norm: the records allow {name} in [{lo}, {hi}); the code has {value}")
    if value < lo or (hi is not None and value >= hi):
        errors.append(f"{name} = {value} is outside [{lo}, {hi}) that norm.json allows")


def check_attention(records, pol, errors, notes):
    pts = figures.attention_points(records)
    if not pts:
        errors.append("attention: no attention record to check use_kernel_attention against")
        return
    same = {(p["mode"], p["keys"], p["head_dim"], p["masked"], p["source"]): p["speedup"] for p in pts}
    for p in pts:
        runs = pol.use_kernel_attention(p["mode"], p["keys"], p["head_dim"], p["masked"])
        where = (f"attention={p['mode']!r}, head dim {p['head_dim']}, {p['keys']} keys"
                 f"{', key mask' if p['masked'] else ''} ({p['source']}): ours {_x(p['speedup'])} SDPA")
        instead = pol.kernel_attention_mode(p["mode"], p["keys"], p["head_dim"], p["masked"])
        if not runs and instead is not None and instead != p["mode"]:
            # refused in favour of another mode of our kernel (the "fp8" -> 16-bit fallback): that
            # one must not be clearly slower at the same point
            other = same.get((instead, p["keys"], p["head_dim"], p["masked"], p["source"]))
            if other is None:
                errors.append(f"{where}, but kernel_attention_mode runs {instead!r} there, which no record measures")
            elif other < p["speedup"] * (1 - NOISE):
                errors.append(f"{where}, but kernel_attention_mode runs {instead!r} there ({_x(other)} SDPA)")
            continue
        _check_choice(errors, runs, p["speedup"], f"{where}, but use_kernel_attention runs our kernel there",
                      f"{where}, but use_kernel_attention leaves it to SDPA")
    for masked, thresholds, all_dims in ((False, pol.MIN_KERNEL_ATTENTION_KEYS, pol.KERNEL_ATTENTION_HEAD_DIMS),
                                         (True, pol.MIN_MASKED_KERNEL_ATTENTION_KEYS,
                                          pol.MASKED_KERNEL_ATTENTION_HEAD_DIMS)):
        name = "MIN_MASKED_KERNEL_ATTENTION_KEYS" if masked else "MIN_KERNEL_ATTENTION_KEYS"
        for mode, threshold in thresholds.items():
            dims = all_dims[mode]
            cand = [p for p in pts if p["mode"] == mode and p["masked"] == masked and p["head_dim"] in dims]
            losing = [p["keys"] for p in cand if p["speedup"] < 1 - NOISE]
            winning = [p["keys"] for p in cand if p["speedup"] > 1 + NOISE]
            lo, hi = max(losing, default=0), min(winning, default=None)
            notes.append(f"attention {mode}{' with a key mask' if masked else ''}: the records allow a key "
                         f"threshold in ({lo}, {hi if hi else 'inf'}]; the code has {threshold}")
            if threshold <= lo or (hi is not None and threshold > hi):
                errors.append(f"{name}[{mode!r}] = {threshold} is outside ({lo}, {hi}] that the records allow")


def _meta(torch, r):
    return torch.empty(r["shape"], dtype=getattr(torch, r["dtype"]), device="meta")


def check_compiled_rules(records, pol, torch, errors, notes):
    for op, rule in pol.COMPILED_RULES.items():
        if op in END_TO_END_OPS:
            continue  # decided end to end (check_end_to_end)
        rows = figures.compile_ratios(records, op)
        if not rows:
            errors.append(f"{op}: no benchmark row to check {rule.__name__} against")
        for r, v in rows:
            kept = bool(rule(_meta(torch, r)))
            where = f"{op} {figures.shape(r['shape'])} {r['dtype']}: ours {_x(v)} torch.compile"
            _check_choice(errors, kept, v, f"{where}, but {rule.__name__} keeps our kernel under compile",
                          f"{where}, but {rule.__name__} leaves it to Inductor")
    # the bounds of rms_norm_wins_compiled, re-derived from the rows it decides
    rows = [(r, v) for r, v in figures.compile_ratios(records, "rms_norm") if r["dtype"] in ("bfloat16", "float16")]
    numel = {}
    for r, v in rows:
        n = 1
        for d in r["shape"]:
            n *= d
        numel[id(r)] = n
    narrow = [(numel[id(r)], v) for r, v in rows if r["shape"][-1] <= pol.RMS_NORM_MAX_COLS]
    _check_bound("RMS_NORM_MIN_NUMEL", pol.RMS_NORM_MIN_NUMEL, [n for n, v in narrow if v < 1 - NOISE],
                 [n for n, v in narrow if v > 1 + NOISE], errors, notes)
    big = [(r["shape"][-1], v) for r, v in rows if numel[id(r)] > pol.RMS_NORM_MIN_NUMEL]
    _check_bound("RMS_NORM_MAX_COLS", pol.RMS_NORM_MAX_COLS, [c for c, v in big if v > 1 + NOISE],
                 [c for c, v in big if v < 1 - NOISE], errors, notes)


def check_eager_rules(records, pol, torch, errors, notes):
    for op, rule in pol.EAGER_RULES.items():
        seen = 0
        for r in records.rows("activation"):
            if r["op"] != op:
                continue
            fused = next((k for k in r["baselines"] if k.startswith("F.")), None)
            v = figures.ratio(r, fused) if fused else None
            if v is None:
                continue
            seen += 1
            ours = bool(rule(_meta(torch, r)))
            where = f"{op} (eager) {figures.shape(r['shape'])} {r['dtype']}: ours {_x(v)} {fused}"
            _check_choice(errors, ours, v, f"{where}, but {rule.__name__} runs our kernel in eager mode",
                          f"{where}, but {rule.__name__} runs PyTorch's op in eager mode")
        if not seen:
            errors.append(f"{op}: no activation row to check its eager rule against")


def check_left_to_inductor(records, pol, errors, notes):
    for op in TRANSFORMERS_OPS:
        if op in pol.COMPILED_RULES:
            continue  # per input (check_compiled_rules)
        rs = [v for _, v in figures.compile_ratios(records, op)]
        if not rs:
            errors.append(f"{op}: no benchmark row to decide it under compile")
            continue
        med = statistics.median(rs)
        left = op in pol.LEFT_TO_INDUCTOR
        notes.append(f"{op}: ours over torch.compile {_x(min(rs))} - {_x(max(rs))}, median {_x(med)}: "
                     f"{'left to Inductor' if left else 'kept'}")
        _check_choice(errors, not left, med,
                      f"{op} keeps our kernel under compile, but torch.compile's is faster over its rows "
                      f"(median {_x(med)})",
                      f"{op} is in LEFT_TO_INDUCTOR, but our kernel is faster than torch.compile's over its "
                      f"rows (median {_x(med)})")


def _left_ops(row):
    pol = row.get("compile_policy")
    if pol is None:
        return None
    if pol.get("keep_all"):
        return set()
    return set(pol.get("left_to_inductor", [])) - set(pol.get("keep", []))


def _loops(row):
    runs = row.get("run_median_ms") or [row["per_step_ms"]]
    return min(runs), max(runs)


def check_end_to_end(records, pol, errors, notes, require):
    compared = {op: 0 for op in END_TO_END_OPS}
    sources = [(records, name) for name in figures.E2E_RECORDS]
    alt = figures.h100_records(records)  # the runs beside the _scaled_mm peers
    if alt is not None and alt is not records:
        sources += [(alt, name) for name in figures.E2E_RECORDS_H100]
    for recs, name in sources:
        d = recs.json(name)
        if not d:
            continue
        name = f"{recs.folder.name}/{name}"
        rows = [r for r in d.get("rows", []) if "+compile" in r["variant"] and "error" not in r
                and _left_ops(r) is not None]
        groups = {}
        for r in rows:  # same model, quantization and attention: the variant up to "+compile"
            groups.setdefault(r["variant"].split("+compile")[0], []).append(r)
        for base, grp in groups.items():
            for a in grp:
                for b in grp:
                    for op in END_TO_END_OPS:
                        if op in _left_ops(a) and op not in _left_ops(b):
                            compared[op] += 1
                            (a_lo, a_hi), (b_lo, b_hi) = _loops(a), _loops(b)
                            if a_hi < b_lo and a["per_step_ms"] < b["per_step_ms"] * (1 - NOISE):
                                errors.append(f"{name}: {a['variant']} (leaves {op} to Inductor) ran "
                                              f"{a['per_step_ms']:.1f} ms/step, {b['variant']} (keeps it) "
                                              f"{b['per_step_ms']:.1f}: the policy keeps {op}")
    for op, n in compared.items():
        kept = op not in pol.LEFT_TO_INDUCTOR
        if n == 0 and kept:
            msg = (f"{op}: kept under compile, but no committed end-to-end record compares it kept and left "
                   "(rows that record their compile_policy; benchmarks/e2e_ltx_video.py --compare --quantization fp8 "
                   f"--leave-variants {op})")
            (errors if require else notes).append(("" if require else "unverified: ") + msg)


def check(folder=figures.DEFAULT_RESULTS, require_evidence=False):
    """(errors, notes) of every check above on the records of `folder`."""
    import torch

    records = figures.Records(folder)
    pol = figures.load_policy()
    errors, notes = [], []
    check_attention(records, pol, errors, notes)
    check_compiled_rules(records, pol, torch, errors, notes)
    check_eager_rules(records, pol, torch, errors, notes)
    check_left_to_inductor(records, pol, errors, notes)
    check_end_to_end(records, pol, errors, notes, require_evidence)
    return errors, notes


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default=str(figures.DEFAULT_RESULTS))
    ap.add_argument("--require-evidence", action="store_true",
                    help="fail where a decision kept on end-to-end evidence has no record comparing it")
    ap.add_argument("-q", "--quiet", action="store_true", help="print only the disagreements")
    a = ap.parse_args(argv)
    errors, notes = check(a.results, a.require_evidence)
    if not a.quiet:
        for n in notes:
            print(f"check_policy: {n}")
    for e in errors:
        print(f"check_policy: DISAGREES: {e}")
    print(f"check_policy: {len(errors)} disagreement(s) with the records")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

"""Check that every performance figure of README.md and docs/**/*.md comes from the records.

    python3 benchmarks/check_docs.py [--no-policy]

Fails (exit 1, listing each finding) when

1. a generated block (`<!-- generated: NAME -->` ... `<!-- /generated -->`) differs from what
   benchmarks/figures.py makes of benchmarks/results/h200/*.json, or results.md is stale
   (benchmarks/report.py --check; fix: `python3 benchmarks/report.py --readme`);
2. prose outside the generated blocks carries a performance number: a speedup (`1.2x`), a rate
   (TFLOP/s, TF/s, GB/s, ...), a time (ms, us, ms/step, seconds, minutes) or a percentage, unless
   ALLOWED names it as something else (a threshold, an accuracy);
3. prose outside the blocks narrates history: a commit sha, "former default", "tried", "once
   measured", "measured on <commit>", ...; history belongs in commit messages;
4. a policy threshold disagrees with the records it cites (benchmarks/check_policy.py;
   `--no-policy` skips it, e.g. without torch).

The unit tests run it (tests/test_bench_report.py), so CI does.
"""

import argparse
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import report  # noqa: E402

PERF = re.compile(
    r"(?<![\w.])\d+(?:\.\d+)?(?:\s?-\s?\d+(?:\.\d+)?)?x(?![\w])"                      # 1.2x, 0.8-1.1x
    r"|\d[\d.,]*\s?(?:TF/s|TFLOP/s|TFLOPS|TOPS|GB/s|GiB/s|MB/s|TB/s)"                 # rates
    r"|(?<![\w.])\d+(?:\.\d+)?\s?(?:ms|us|µs|ns)(?:/step)?\b"                         # times
    r"|(?<![\w.])\d+(?:\.\d+)?\s?(?:s|sec|seconds|min|minutes|hours?)\b(?!-)"       # durations
    r"|(?<![\w.])\d+(?:\.\d+)?\s?%"                                                   # percentages
)
HISTORY = re.compile(
    r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b"       # a commit sha
    r"|\bformer(?:ly)?\b|\btried\b|\bonce measured\b|\bmeasured once\b|\bmeasured on [0-9a-f]{7}"
    r"|\bremoved again\b|\breverted\b|\bbefore its current\b|\bused to be\b|\bno longer\b|\bpreviously\b"
    r"|\bsession\b|\bexperiments/\w+_[0-9a-f]{7}\b",
    re.IGNORECASE)
# (file name, text around the match): numbers that are not performance figures, and names that
# look like shas but are not commits.
ALLOWED = [
    ("building.md", "-DLTX_KERNELS_SHA=abc1234"),  # a placeholder value of the option
    ("benchmarking.md", "(a speedup such as `1.2x`"),  # this check's own description
]


def outside_blocks(text: str):
    """(line number, line) of `text` with every generated block's body blanked out."""
    blanked = report.BLOCK.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    return list(enumerate(blanked.splitlines(), 1))


def scan(path: Path, pattern) -> list:
    out = []
    for n, line in outside_blocks(path.read_text()):
        for m in pattern.finditer(line):
            ctx = line[max(0, m.start() - 40):m.end() + 40]
            if any(path.name == f and allowed in line for f, allowed in ALLOWED):
                continue
            out.append(f"{path.relative_to(ROOT)}:{n}: '{m.group(0).strip()}' in \"{ctx.strip()}\"")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-policy", action="store_true", help="skip benchmarks/check_policy.py")
    a = ap.parse_args(argv)
    problems = []
    if report.main(["--check", "--no-plot"]) != 0:
        problems.append("generated blocks or results.md are stale (above); run `python3 benchmarks/report.py --readme`")
    files = report.doc_files()
    perf = [hit for f in files for hit in scan(f, PERF)]
    for hit in perf:
        print(f"check_docs: performance number outside a generated block: {hit}")
    if perf:
        problems.append(f"{len(perf)} performance number(s) typed outside generated blocks: move each into a "
                        "generated block (benchmarks/figures.py) or say it in words")
    hist = [hit for f in files for hit in scan(f, HISTORY)]
    for hit in hist:
        print(f"check_docs: history in user text: {hit}")
    if hist:
        problems.append(f"{len(hist)} commit sha(s) or narration(s) of past runs in README.md / docs/")
    if not a.no_policy:
        import check_policy

        if check_policy.main(["-q"]) != 0:
            problems.append("the compile / attention policy disagrees with the records (above)")
    for p in problems:
        print(f"check_docs: FAIL: {p}")
    if not problems:
        print(f"check_docs: {len(files)} files: every generated block matches the records, no performance "
              "number or history outside them" + ("" if a.no_policy else ", the policy agrees with the records"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

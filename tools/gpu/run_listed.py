"""Run one part of a list of pytest ids: run_listed.py LIST i/n [pytest options...].

LIST holds one test id per line (blank lines and lines starting with '#' are skipped). The ids
are split into n contiguous slices and slice i (1-based) runs, with the options given after it.
Ids that no longer exist make pytest report an error, so a stale list cannot pass silently.
"""

import sys

import pytest


def main(argv):
    if len(argv) < 2 or "/" not in argv[1]:
        sys.exit("usage: run_listed.py LIST i/n [pytest options...]")
    with open(argv[0]) as f:
        ids = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    i, n = (int(x) for x in argv[1].split("/"))
    if not 1 <= i <= n:
        sys.exit(f"run_listed.py: part {i}/{n} is out of range")
    lo, hi = len(ids) * (i - 1) // n, len(ids) * i // n
    print(f"run_listed.py: ids {lo}..{hi - 1} of {len(ids)} (part {i}/{n})", flush=True)
    return pytest.main(list(argv[2:]) + ids[lo:hi])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

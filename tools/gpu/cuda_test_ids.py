"""Write the ids of the tests a CPU machine skips (the CUDA suite) from a CPU run's JUnit XML.

    python3 -m pytest tests -q --junitxml=cpu.xml      # on a machine without a GPU
    python3 tools/gpu/cuda_test_ids.py cpu.xml > cuda_ids.txt

Then `SUITE_LIST=cuda_ids.txt SUITE_PART=1/2 bash tools/gpu/check.sh build suite-list` on the
GPU machine runs the first half. The ids are the tests CI never runs; every other test passed
or failed on the CPU machine already.
"""

import sys
import xml.etree.ElementTree as ET


def main(path):
    ids = []
    for case in ET.parse(path).getroot().iter("testcase"):
        if case.find("skipped") is None:
            continue
        cls, name = case.get("classname", ""), case.get("name", "")
        parts = cls.split(".")
        # classname is "tests.test_x" or "tests.test_x.TestClass"
        k = next(j for j in range(len(parts), 0, -1) if parts[j - 1].startswith("test_"))
        module = "/".join(parts[:k]) + ".py"
        ids.append("::".join([module, *parts[k:], name]))
    print("\n".join(ids))


if __name__ == "__main__":
    main(sys.argv[1])

"""Wall time of ``python -m vta regress`` with warm caches, per stage and in total.

Run from the repository root (needs Verilator)::

    python benchmarks/regress_time.py [--runs 2] [-- extra regress arguments]

The first run warms every cache (tsim libraries per configuration, the cocotb unit builds, the
compiler's object cache); the figures of the last run are the warm ones. Printed per run: the
exit status, the total wall time and the summed check time of each stage.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def one_run(extra: list[str]) -> tuple[int, float, dict]:
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "regress.xml"
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "vta", "regress", "--junit", str(junit), *extra],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - t0
        stages = {}
        if junit.exists():
            for suite in ET.parse(junit).getroot().iter("testsuite"):
                stages[suite.get("name")] = (
                    float(suite.get("time")),
                    int(suite.get("tests")),
                    int(suite.get("failures")),
                )
    tail = "\n".join(proc.stdout.splitlines()[-4:])
    print(tail)
    return proc.returncode, wall, stages


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: one run of the differential stage with 2 programs on the default configuration")
    ap.add_argument("extra", nargs="*", help="arguments passed to python -m vta regress")
    args = ap.parse_args()
    if args.quick:
        args.runs = 1
        args.extra = [
            "--stages",
            "differential",
            "--programs",
            "2",
            "--config",
            str(REPO / "configs" / "vta_config.json"),
            *args.extra,
        ]
    for k in range(args.runs):
        code, wall, stages = one_run(args.extra)
        print(f"run {k + 1}: exit {code}, {wall:.1f} s wall")
        for name, (secs, tests, failures) in stages.items():
            print(f"  {name:<13} {secs:8.1f} s  {tests:4d} checks  {failures} failed")


if __name__ == "__main__":
    main()

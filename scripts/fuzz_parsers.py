"""Long fuzzing runs of the parsers that take outside bytes (:mod:`vta.testing.fuzz`).

Each target is driven by its Hypothesis strategy (``tests/fuzz/strategies.py``) for a time
budget; every input that makes a target raise anything but its own specific errors is written
to ``tests/fuzz/regressions/<target>/`` (``.bin`` for bytes, ``.json`` for structured inputs),
where the test suite replays it. Prints, per target, the inputs tried, executions per second,
the failures found and, with ``--coverage``, the lines of the parser's modules reached.

Usage::

    python scripts/fuzz_parsers.py --seconds 60
    python scripts/fuzz_parsers.py --targets insn pack --seconds 600 --coverage
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

_REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_REPO))

from hypothesis import HealthCheck, Phase, given, settings

from tests.fuzz.strategies import inputs
from vta.testing.fuzz import TARGETS, run_target

REGRESSIONS = _REPO / "tests" / "fuzz" / "regressions"
#: Modules whose line coverage --coverage reports, per target.
MODULES = {"config_bytes": ["vta/env.py"], "config_json": ["vta/env.py"], "insn": ["vta/isa.py"],
           "program": ["vta/isa.py"], "uop": ["vta/isa.py"], "pack": ["vta/pack.py"],
           "rpc_frame": ["vta/rpc/protocol.py"], "rpc_value": ["vta/rpc/protocol.py"]}


def fuzz(name: str, seconds: float, chunk: int) -> dict:
    """Run one target for ``seconds``; return its counts and the failing inputs kept."""
    target = TARGETS[name]
    found: dict[str, object] = {}
    n = 0

    @settings(max_examples=chunk, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(inputs(target))
    def check(data):
        nonlocal n
        n += 1
        problem = run_target(target, data)
        if problem is not None:
            found.setdefault(problem.split(":")[0] + problem.split("\n")[0][-40:], (data, problem))

    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        check()
    elapsed = time.perf_counter() - start
    kept = []
    for data, problem in found.values():
        kept.append((_keep(name, data), problem))
    return {"inputs": n, "seconds": elapsed, "kept": kept}


def _keep(name: str, data) -> Path:
    folder = REGRESSIONS / name
    folder.mkdir(parents=True, exist_ok=True)
    if isinstance(data, (bytes, bytearray)):
        raw, suffix = bytes(data), ".bin"
    else:
        raw, suffix = json.dumps(data, allow_nan=True).encode(), ".json"
    path = folder / (hashlib.sha256(raw).hexdigest()[:16] + suffix)
    path.write_bytes(raw)
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--targets", nargs="*", choices=sorted(TARGETS), help="default: all")
    ap.add_argument("--seconds", type=float, default=30.0, help="time per target")
    ap.add_argument("--chunk", type=int, default=500, help="inputs per Hypothesis run")
    ap.add_argument("--coverage", action="store_true", help="measure line coverage of each target's modules")
    args = ap.parse_args(argv)
    names = args.targets or sorted(TARGETS)
    cov = None
    if args.coverage:
        import coverage

        cov = coverage.Coverage(data_file=None, include=[str(_REPO / m) for ms in MODULES.values() for m in ms])
    print(f"{'target':<13} {'inputs':>9} {'exec/s':>8} {'failures':>8}  coverage", flush=True)
    failures = 0
    for name in names:
        if cov is not None:
            cov.erase()
            cov.start()
        res = fuzz(name, args.seconds, args.chunk)
        reached = ""
        if cov is not None:
            cov.stop()
            parts = []
            for m in MODULES[name]:
                _, statements, _, missing, _ = cov.analysis2(str(_REPO / m))
                parts.append(f"{m} {100 * (len(statements) - len(missing)) / max(len(statements), 1):.0f}%")
            reached = ", ".join(parts)
        failures += len(res["kept"])
        print(f"{name:<13} {res['inputs']:>9} {res['inputs'] / res['seconds']:>8.0f} {len(res['kept']):>8}  {reached}",
              flush=True)
        for path, problem in res["kept"]:
            print(f"    kept {path.relative_to(_REPO)}: {problem[:160]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

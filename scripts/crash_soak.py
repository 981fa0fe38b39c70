"""Kill builds, exports, sweeps and uploads at random points and count what was lost.

Run ``python scripts/crash_soak.py`` (``--trials N`` per scenario, default 10; ``--seed``). For
each scenario of :mod:`vta.crash` it makes one clean run, then N trials in fresh
directories: half are killed with ``SIGKILL`` from outside at a uniformly random moment of the
clean run's duration, half kill themselves at a random crash point of :mod:`vta.atomic`
(``atomic.partial``, ``atomic.before_replace`` or ``atomic.after_replace``, at its 1st to 4th
hit). After each kill it checks that every file the killed run published equals the clean run's
(no corrupt cache entry, no half-written library, no torn sweep row or table), runs the scenario
again in the same directory and checks that it gives the clean run's results.

Prints, per scenario and in all: tried, killed (the run died before finishing), recovered (the
next run gave the clean results) and lost (a damaged file or a wrong result; goal 0).
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vta import crash  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=10, help="trials per scenario (default 10)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--scenarios", nargs="*", default=list(crash.SCENARIOS), choices=crash.SCENARIOS)
    args = p.parse_args()
    rng = random.Random(args.seed)
    totals = {"tried": 0, "killed": 0, "recovered": 0, "lost": 0}
    with tempfile.TemporaryDirectory(prefix="vta-crash-") as tmp:
        base = Path(tmp)
        for name in args.scenarios:
            d = base / name  # every run of a scenario in the same place (libraries name their runtime's path)
            clean = crash.clean_run(name, d)
            counts = {"tried": 0, "killed": 0, "recovered": 0, "lost": 0}
            for i in range(args.trials):
                if i % 2 == 0:
                    how = {"kill_after": rng.uniform(0.0, clean[2])}
                    label = f"SIGKILL after {how['kill_after']:.2f} s"
                else:
                    point = f"{rng.choice(crash.POINTS)}@{rng.randint(1, 4)}"
                    how = {"crash_at": point}
                    label = f"crash point {point}"
                try:
                    out = crash.trial(name, d, clean, **how)
                finally:
                    shutil.rmtree(d, ignore_errors=True)
                counts["tried"] += 1
                counts["killed"] += out.killed
                counts["recovered"] += out.recovered
                counts["lost"] += out.lost
                if out.lost:
                    print(f"  LOST {name} trial {i} ({label}): damaged {out.damaged} {out.detail}", flush=True)
            print(f"{name:7s} clean run {clean[2]:5.1f} s: tried {counts['tried']}, killed {counts['killed']}, "
                  f"recovered {counts['recovered']}, lost {counts['lost']}", flush=True)
            for k in totals:
                totals[k] += counts[k]
    print(f"all     tried {totals['tried']}, killed {totals['killed']}, recovered {totals['recovered']}, "
          f"lost {totals['lost']}")
    return 0 if totals["lost"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

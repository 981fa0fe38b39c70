"""The child process of :func:`vta.sim.tsim.pgo.train`: run the training program on an
instrumented tsim library (its profile is written when the process exits).

Run as ``python -m vta.sim.tsim.pgo_train LIBRARY CONFIG_JSON``.
"""

from __future__ import annotations

import json
import sys

from ...dram import DRAM
from ...env import Environment
from .pgo import RUNS, training_program
from .simulator import TSim


def main(library: str, cfg_json: str) -> None:
    """Run :data:`vta.sim.tsim.pgo.RUNS` runs of the training program on ``library``.

    Raises
    ------
    ConfigError
        If ``cfg_json`` is not a valid configuration.
    SimulationError
        If a run fails (the build that started this process then fails).
    """
    env = Environment(json.loads(cfg_json))
    with env, DRAM(1 << 26) as dram, TSim(env, dram, library=library) as dev:
        insn_addr, count, _ = training_program(env, dram)
        for _ in range(RUNS):
            dev.run(insn_addr, count)
    print(f"trained: {RUNS} runs of {count} instructions")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

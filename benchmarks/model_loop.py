"""The cycle model's compiled replay loop alone (:func:`vta.sim.model.loop.core`) on the conv-like stream.

Decodes the stream once, then times ``--repeat`` calls of the compiled loop (process CPU time) and
prints the median per instruction. With ``--vs REV`` the loop of git revision ``REV`` is compiled
as well and the two are called in turn (A B A B ...), each on the same decoded stream; the ratio
of the medians and the cycle counts of both are printed (they must agree).

    python benchmarks/model_loop.py [--groups 29000] [--repeat 20] [--dram ideal ddr4] [--vs c6a4f5d]

``--quick``: a 2,000-group stream, ideal memory, 3 calls. The exit status is 1 when the two loops
give different cycles.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

_REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_REPO))
sys.path.insert(0, str(_REPO / "benchmarks"))

from _configs import env_for  # noqa: E402
from fsim_throughput import conv_stream  # noqa: E402

from vta import isa  # noqa: E402
from vta.dram import DRAM  # noqa: E402
from vta.env import Environment  # noqa: E402
from vta.sim.model import loop, replay  # noqa: E402
from vta.sim.model.costs import Timing  # noqa: E402
from vta.sim.numba_cache import compile_into  # noqa: E402


def _compile(module) -> object:
    """``module``'s :func:`core`, compiled as :func:`vta.sim.model.replay.compiled` does."""
    import numba

    def options(name):
        opts = {"error_model": "numpy", "_nrt": False}
        if name != "core":
            opts["inline"] = "always"
        return opts

    ns = dict(vars(module))
    compile_into(ns, module.HELPERS + ("core",), numba.njit, options)
    return ns["core"]


def _old_module(rev: str):
    """loop.py of git revision ``rev`` as a module of its own."""
    text = subprocess.run(["git", "show", f"{rev}:vta/sim/model/loop.py"], cwd=_REPO, check=True,
                          capture_output=True, text=True).stdout
    # numba's cache needs the source file while it compiles: the directory lives as long as the
    # module (removed when the object is collected, at the latest at exit)
    tmp = tempfile.TemporaryDirectory(prefix="vta-model-loop-")
    path = Path(tmp.name) / f"loop_{rev}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(f"loop_{rev}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod._source_dir = tmp
    return mod


def _args(env: Environment, words: np.ndarray, insn_addr: int, work_size) -> tuple:
    """The arguments of :func:`core` for ``words`` (decoded by the replay's compiled decoder)."""
    timing = Timing()
    scratch = replay.Scratch()
    replay.replay(env, words, [0, 0, 0, 0], insn_addr, timing, scratch=scratch)
    n = words.shape[0]
    cols, outs, bursts, _work = scratch.take(n)
    cols = [np.array(c) for c in cols]
    outs = [np.empty(n, np.int64) for _ in outs]
    work = np.empty(work_size(n), np.int64)
    lat, bpc, outst = env.dram_timing
    fetch_buffer = int(getattr(replay.mc, "FETCH_BUFFER_INSNS", 0))
    return (n, *cols, np.zeros(4, np.int64), insn_addr, loop.QUEUE_DEPTH, int(timing.fetch_latency), fetch_buffer,
            int(lat), int(bpc), int(outst), *outs, np.empty((n, 3), np.int64), np.zeros(18, np.int64), work, 0,
            replay._NO_FOOT)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, nargs="*", default=[29_000],
                    help="groups of the conv-like stream (9 insns each); several: one stream each")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--dram", nargs="*", default=["ideal", "ddr4"])
    ap.add_argument("--vs", default=None, help="a git revision whose loop is timed in turn")
    ap.add_argument("--quick", action="store_true", help="a 2,000-group stream, ideal memory, 3 calls")
    args = ap.parse_args(argv)
    if args.quick:
        args.groups, args.dram, args.repeat = [2_000], ["ideal"], 3
    status = 0
    new = _compile(loop)
    engines = [("new", new, loop.work_size)]
    if args.vs:
        old = _old_module(args.vs)
        engines.insert(0, (args.vs, _compile(old), old.work_size))
    for memory, groups in ((m, g) for m in args.dram for g in args.groups):
        env = env_for("vta_config", memory)
        dram = DRAM(1 << 28)
        prog = conv_stream(env, dram, groups)
        words = isa.encode_program(prog.insns, env).astype(np.int64).reshape(-1, 2)
        calls = [(name, fn, _args(env, words, 4096, ws)) for name, fn, ws in engines]
        times = {name: [] for name, _f, _a in calls}
        cycles = {}
        for name, fn, a in calls:  # warm (and the first run's time)
            rc = fn(*a)
            cycles[name] = (rc, int(a[-4][0]))
        for k in range(args.repeat):
            for name, fn, a in (calls if k % 2 == 0 else calls[::-1]):  # each first in turn
                c0 = time.process_time()
                fn(*a)
                times[name].append(time.process_time() - c0)
        n = words.shape[0]
        meds = {name: statistics.median(t) for name, t in times.items()}
        for name in meds:
            print(f"{memory:6s} {name:8s} {n} insns: median {meds[name] * 1e3:8.2f} ms, "
                  f"{meds[name] / n * 1e9:6.1f} ns/insn; rc, cycles {cycles[name]}")
        if args.vs:
            pairs = statistics.median(x / y for x, y in zip(times["new"], times[args.vs], strict=True))
            same = cycles["new"] == cycles[args.vs]
            status = status or (0 if same else 1)
            print(f"{memory:6s} new / {args.vs}: x{meds['new'] / meds[args.vs]:.3f} (median of the pairs' ratios "
                  f"x{pairs:.3f}) (cycles {'equal' if same else 'DIFFER'})")
        prog.close()
        dram.close()
    return status


if __name__ == "__main__":
    sys.exit(main())

"""``debug_mode(DEBUG_DUMP_INSN)`` on tsim: each instruction printed as its RTL unit retires it.

Oracle: the hand-built GEMM program (``gemm_program.py``), whose ten instructions, stages and
tokens are known, and NumPy for its result. The load, compute and store units run concurrently,
so the printed order may interleave the stages; within a stage it is stream order, and the token
lines follow the flags in the printed order.
"""

from __future__ import annotations

import numpy as np
import pytest

from vta.dram import global_dram
from vta.env import Environment
from vta.runtime import vta_bridge
from vta.testing import simulator

from . import gemm_program

pytestmark = pytest.mark.verilator

TITLES = ["LOAD UOP", "LOAD INP", "LOAD WGT", "GEMM", "GEMM", "ALU - shr", "ALU - min", "ALU - max", "STORE OUT",
          "FINISH"]
STAGE = ["compute", "load", "load", "compute", "compute", "compute", "compute", "compute", "store", "compute"]
# (pop prev, pop next, push prev, push next) -> channel, per stage
CHANNELS = {"load": (None, "g2l", None, "l2g"), "compute": ("l2g", "s2g", "g2l", "g2s"),
            "store": ("g2s", None, "s2g", None)}


def test_tsim_dump_follows_the_units(env, tsim_library, capsys):
    from vta.sim.tsim import TSim

    tsim_env = Environment({**env.cfg_dict, "TARGET": "tsim"})
    dram = global_dram()
    dev = TSim(tsim_env, dram, library=tsim_library())
    old = vta_bridge.attach_device(tsim_env, dev)
    prog = gemm_program.build(env, dram, m=4, k=4, reps=2)
    try:
        with tsim_env:
            simulator.debug_mode(simulator.DEBUG_DUMP_INSN)
            with pytest.raises(ValueError, match="not supported by the tsim device"):
                simulator.debug_mode(simulator.DEBUG_SKIP_EXEC)
            dev.run(prog.insn_addr, prog.insn_count)
            simulator.debug_mode(0)
            text = capsys.readouterr().out
            dev.run(prog.insn_addr, prog.insn_count)
            assert capsys.readouterr().out == ""
        np.testing.assert_array_equal(prog.output(dram), prog.expected)
    finally:
        prog.free(dram)
        if old is not None:
            vta_bridge.attach_device(tsim_env, old)
            dev.close()
    assert text.startswith("There are 10 instructions\n")
    blocks = [b.splitlines() for b in text.split("INSTRUCTION ")[1:]]
    order = [int(b[0].split(":")[0]) for b in blocks]
    assert sorted(order) == list(range(10))
    for stage in ("load", "compute", "store"):
        mine = [i for i in order if STAGE[i] == stage]
        assert mine == sorted(mine), (stage, order)
    tokens = dict.fromkeys(("l2g", "g2l", "s2g", "g2s"), 0)
    for i, block in zip(order, blocks, strict=True):
        assert block[0] == f"{i}: {TITLES[i]}"
        flags = [int(x) for x in block[1].replace(",", "").split()[4::3]]
        for k, sign in ((0, -1), (1, -1), (2, 1), (3, 1)):
            if flags[k]:
                tokens[CHANNELS[STAGE[i]][k]] += sign
        assert min(tokens.values()) >= 0, "a pop printed before its push"
        assert block[-2:] == [f"\tl2g_queue = {tokens['l2g']}, g2l_queue = {tokens['g2l']}",
                              f"\ts2g_queue = {tokens['s2g']}, g2s_queue = {tokens['g2s']}"]

"""vta.lower / vta.build on schedules from the frontend: the structure of sections 3.1 and 3.2,
build_config(debug_flag), and clear errors for schedules VTA cannot run."""

from __future__ import annotations

import numpy as np
import pytest

from vta.build import build, build_config, lower
from vta import te
from vta.errors import ScheduleError
from vta.tir.printer import astext

from .. import workloads as W
from .helpers import calls, ints, sequence


def test_lower_vadd_matches_section_3_1(env):
    case = W.vadd(env, np.random.default_rng(0))
    f = lower(case.schedule, case.args, name="my_vadd", simple_mode=True)
    assert sequence(f.body) == [
        "coproc_scope=2", "VTALoadBuffer2D", "VTALoadBuffer2D",
        "coproc_uop_scope=VTAPushALUOp", "VTAUopLoopBegin", "uop_push", "VTAUopLoopEnd", "/coproc_uop_scope",
        "coproc_dep_push(2,3)", "/coproc_scope",
        "coproc_scope=3", "coproc_dep_pop(2,3)", "VTAStoreBuffer2D", "/coproc_scope",
        "coproc_sync",
    ]
    la, lb = calls(f.body, "VTALoadBuffer2D")
    assert ints(la, 2)[:8] == [0, 64, 1, 64, 0, 0, 0, 0] and ints(la)[-2:] == [0, 3]   # A -> acc tiles 0..63
    assert ints(lb)[-2:] == [64, 3]                                                   # B -> acc tiles 64..127
    assert ints(calls(f.body, "tir.vta.uop_push")[0]) == [1, 0, 0, 64, 0, 2, 0, 0]     # ADD dst 0 src 64
    assert ints(calls(f.body, "VTAUopLoopBegin")[0]) == [64, 1, 1, 0]
    st = calls(f.body, "VTAStoreBuffer2D")[0]
    assert ints(st)[1:3] == [0, 4] and ints(st, 4) == [0, 64, 1, 64]
    assert "VTAStoreBuffer2D" in astext(f) and f.attrs["global_symbol"] == "my_vadd"


def test_lower_matmul_matches_section_3_2(env):
    case = W.matrix_multiply(env, np.random.default_rng(0))
    f = lower(case.schedule, case.args, name="my_gemm")
    assert sequence(f.body) == [
        "coproc_scope=2",
        "coproc_uop_scope=VTAPushGEMMOp",
        "VTAUopLoopBegin",
        "uop_push",
        "VTAUopLoopEnd",
        "/coproc_uop_scope",
        "coproc_dep_push(2,1)",
        "/coproc_scope",
        "for ko",
        "coproc_scope=1",
        "coproc_dep_pop(2,1)",
        "VTALoadBuffer2D",
        "VTALoadBuffer2D",
        "coproc_dep_push(1,2)",
        "/coproc_scope",
        "coproc_scope=2",
        "coproc_dep_pop(1,2)",
        "coproc_uop_scope=VTAPushGEMMOp",
        "VTAUopLoopBegin",
        "uop_push",
        "VTAUopLoopEnd",
        "/coproc_uop_scope",
        "coproc_dep_push(2,1)",
        "/coproc_scope",
        "/for",
        "coproc_dep_push(2,3)",
        "coproc_dep_pop(2,1)",
        "coproc_scope=3",
        "coproc_dep_pop(2,3)",
        "VTAStoreBuffer2D",
        "/coproc_scope",
        "coproc_sync",
    ]
    reset, update = calls(f.body, "tir.vta.uop_push")
    assert ints(reset) == [0, 1, 0, 0, 0, 0, 0, 0] and ints(update) == [0, 0, 0, 0, 0, 0, 0, 0]
    assert [ints(c) for c in calls(f.body, "VTAUopLoopBegin")] == [[16, 1, 0, 0], [16, 1, 0, 1]]
    la, lw = calls(f.body, "VTALoadBuffer2D")
    assert ints(la, 3)[:7] == [1, 1, 1, 0, 0, 0, 0] and ints(la)[-1] == env.dev.MEM_ID_INP
    assert ints(lw, 3)[:7] == [1, 16, 16, 0, 0, 0, 0] and ints(lw)[-1] == env.dev.MEM_ID_WGT
    assert la.args[3].name == "ko" and lw.args[3].name == "ko"  # offsets advance one tile per ko


def test_debug_flag(env):
    case = W.vadd(env, np.random.default_rng(0))
    with build_config(debug_flag=env.DEBUG_DUMP_INSN):
        f = lower(case.schedule, case.args, name="dbg")
        mod = build(case.schedule, case.args, "ext_dev", name="dbg")
    assert sequence(f.body)[0] == "VTASetDebugMode" and ints(calls(f.body, "VTASetDebugMode")[0])[-1] == 2
    assert "VTASetDebugMode(vta_gen_cmd, 2);" in mod.get_source()
    plain = build(case.schedule, case.args, "ext_dev", name="dbg")
    assert "VTASetDebugMode" not in plain.get_source()
    with pytest.raises(ValueError, match="debug_flag"):
        with build_config(debug_flag="x"):
            pass


def test_build_rejects_other_targets(env):
    case = W.vadd(env, np.random.default_rng(0))
    with pytest.raises(ValueError, match="target 'ext_dev' only, got 'llvm'"):
        build(case.schedule, case.args, "llvm")


def _elementwise(env, fn, pragma_stage_dma=False):
    shape = (2, 4, env.BATCH, env.BLOCK_OUT)
    a = te.placeholder(shape, name="a", dtype=env.acc_dtype)
    b = te.placeholder(shape, name="b", dtype=env.acc_dtype)
    a_buf = te.compute(shape, lambda *i: a(*i), "a_buf")
    b_buf = te.compute(shape, lambda *i: b(*i), "b_buf")
    r_buf = te.compute(shape, lambda *i: fn(a_buf(*i), b_buf(*i)), "r_buf")
    r = te.compute(shape, lambda *i: r_buf(*i).astype(env.inp_dtype), "r")
    s = te.create_schedule(r.op)
    for t in (a_buf, b_buf, r_buf):
        s[t].set_scope(env.acc_scope)
    s[a_buf].pragma(s[a_buf].op.axis[0], env.dma_copy)
    s[b_buf].pragma(s[b_buf].op.axis[0], env.dma_copy)
    s[r_buf].pragma(s[r_buf].op.axis[0], env.dma_copy if pragma_stage_dma else env.alu)
    s[r].pragma(s[r].op.axis[0], env.dma_copy)
    return s, [a, b, r]


def test_clear_errors(env):
    s, args = _elementwise(env, lambda x, y: x // y)
    with pytest.raises(ScheduleError, match=r"alu stage writing .* FloorDiv is not an ALU operation"):
        lower(s, args)
    s, args = _elementwise(env, lambda x, y: x + y, pragma_stage_dma=True)
    with pytest.raises(ScheduleError, match=r"dma_copy of buffer .* at axis .*: the stored value must be a load"):
        lower(s, args)


def test_mock_environment_skips_dma_and_alu(env):
    """env.mock pragmas (skip_dma_copy, skip_alu) remove the copies and ALU stages entirely."""
    case = W.vadd(env.mock, np.random.default_rng(0))
    f = lower(case.schedule, case.args, name="mock")
    assert calls(f.body) == []
    src = build(case.schedule, case.args, "ext_dev", name="mock").get_source()
    assert "VTASynchronize" not in src and "VTALoadBuffer2D(" not in src

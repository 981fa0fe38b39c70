"""The GEMM tensor intrinsic of every shipped configuration (reference section 1.9)."""

from __future__ import annotations

from vta import intrin
from vta.tir import nodes as n


def _push(stmt):
    assert stmt.attr_key == "coproc_scope" and int(stmt.value) == 2
    inner = stmt.body
    assert inner.attr_key == "coproc_uop_scope" and inner.value.value == "VTAPushGEMMOp"
    call = inner.body.value
    assert isinstance(call, n.Call) and call.op == "tir.vta.uop_push" and len(call.args) == 8
    return call


def test_gemm_intrinsic(any_env):
    env = any_env
    g = intrin.gemm(env)
    inp, wgt, out = g.buffers
    assert (inp.scope, wgt.scope, out.scope) == (env.inp_scope, env.wgt_scope, env.acc_scope)
    assert [int(s) for s in inp.shape] == [env.BATCH, env.BLOCK_IN]
    assert [int(s) for s in wgt.shape] == [env.BLOCK_OUT, env.BLOCK_IN]
    assert [int(s) for s in out.shape] == [env.BATCH, env.BLOCK_OUT]
    assert (inp.dtype, wgt.dtype, out.dtype) == (env.inp_dtype, env.wgt_dtype, env.acc_dtype)
    assert inp.offset_factor == env.BATCH * env.BLOCK_IN
    assert wgt.offset_factor == env.BLOCK_OUT * env.BLOCK_IN
    assert out.offset_factor == env.BATCH * env.BLOCK_OUT
    body, reset, update = _push(g.body), _push(g.reset), _push(g.update)
    for call in (body, update):
        assert [int(a) for a in (call.args[0], call.args[1])] == [0, 0]
        ptrs = call.args[2:5]
        assert [p.args[1] for p in ptrs] == [out.data, inp.data, wgt.data]
        assert [int(p.args[4]) for p in ptrs] == [3, 1, 1]
        assert all(p.args[0].dtype == "int32" for p in ptrs)
    assert int(reset.args[1]) == 1 and all(int(a) == 0 for a in reset.args[3:])
    # One uop-scope string and one co-processor axis per environment (compared by identity).
    assert g.body.body.value is g.reset.body.value is intrin.vta_push_uop(env)
    assert g.body.node is intrin.vta_axis(env) and intrin.vta_axis(env).var.name == "vta"


def test_mock_gemm_and_env_hook(env):
    m = intrin.gemm(env, mock=True)
    assert all(isinstance(s, n.Evaluate) and int(s.value) == 0 for s in (m.body, m.reset, m.update))
    assert env.gemm is env.gemm and env.gemm.name == "GEMM"
    assert all(isinstance(s, n.Evaluate) for s in (env.mock.gemm.body,))

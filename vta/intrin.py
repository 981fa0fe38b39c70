"""The VTA GEMM tensor intrinsic (``env.gemm``; reference tvm-vta-software.md section 1.9).

``out[i, j] = sum_k int32(inp[i, k]) * int32(wgt[j, k])`` over one tile: ``inp`` is
(BATCH, BLOCK_IN) in the input SRAM, ``wgt`` is (BLOCK_OUT, BLOCK_IN) in the weight SRAM (one
row per output channel, i.e. transposed), ``out`` is (BATCH, BLOCK_OUT) in the accumulator SRAM.
Each operand buffer has ``offset_factor`` = ``data_alignment`` = its tile size in elements, so
tensorize only matches regions made of whole SRAM tiles.

The bodies are GEMM micro-ops in a compute-queue uop scope::

    attr [vta] "coproc_scope" = 2
    attr [vta] "coproc_uop_scope" = "VTAPushGEMMOp"
    vta.uop_push(0, reset, out.access_ptr("rw", "int32"), inp.access_ptr("r", "int32"),
                 wgt.access_ptr("r", "int32"), 0, 0, 0)

``body`` and ``update`` accumulate (reset 0); ``reset`` zeroes the output tile (reset 1, no
input operands). In mock mode all three are ``Evaluate(0)``.
"""

from __future__ import annotations

import sys
import weakref
from typing import Any

from .env import set_intrinsics
from .tir import nodes as n

__all__ = ["gemm", "vta_axis", "vta_push_uop"]

_SHARED: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


def _shared(env: Any) -> dict:
    # One co-processor axis and one uop-scope string per environment: passes compare them by
    # identity (LiftAttrScope merges GEMM uop scopes only when the value object is the same).
    d = _SHARED.get(env.dev)
    if d is None:
        from .te.operation import thread_axis

        d = {"vta_axis": thread_axis("vta"), "push_uop": n.StringImm("VTAPushGEMMOp")}
        _SHARED[env.dev] = d
    return d


def vta_axis(env: Any):
    """The ``vta`` thread IterVar that every ``coproc_scope`` attribute of ``env`` annotates."""
    return _shared(env)["vta_axis"]


def vta_push_uop(env: Any) -> n.StringImm:
    """The shared ``"VTAPushGEMMOp"`` string of ``env``'s GEMM uop scopes."""
    return _shared(env)["push_uop"]


def gemm(env: Any, mock: bool = False):
    """The GEMM tensor intrinsic of ``env``.

    Parameters
    ----------
    env : vta.Environment
    mock : bool
        Bodies that do nothing (for benchmarks that time everything but the GEMM).

    Returns
    -------
    vta.te.TensorIntrin

    Raises
    ------
    vta.errors.ConfigError
        Never for a loaded environment; listed because the shapes come from ``env``.
    """
    from . import te
    from .te.tensor_intrin import decl_buffer

    wgt_lanes = env.WGT_ELEM_BITS // env.WGT_WIDTH
    inp_lanes = env.INP_ELEM_BITS // env.INP_WIDTH
    out_lanes = env.ACC_ELEM_BITS // env.ACC_WIDTH
    wgt_shape = (env.BLOCK_OUT, env.BLOCK_IN)
    inp_shape = (env.BATCH, env.BLOCK_IN)
    out_shape = (env.BATCH, env.BLOCK_OUT)
    assert wgt_lanes == wgt_shape[0] * wgt_shape[1]
    assert inp_lanes == inp_shape[0] * inp_shape[1]
    assert out_lanes == out_shape[0] * out_shape[1]

    wgt = te.placeholder(wgt_shape, dtype=env.wgt_dtype, name=env.wgt_scope)
    inp = te.placeholder(inp_shape, dtype=env.inp_dtype, name=env.inp_scope)
    k = te.reduce_axis((0, env.BLOCK_IN), name="k")
    out = te.compute(
        out_shape,
        lambda i, j: te.sum(inp[i, k].astype(env.acc_dtype) * wgt[j, k].astype(env.acc_dtype), axis=[k]),
        name="out",
    )
    binds = {
        inp: decl_buffer(inp_shape, env.inp_dtype, env.inp_scope, scope=env.inp_scope,
                         data_alignment=inp_lanes, offset_factor=inp_lanes),
        wgt: decl_buffer(wgt_shape, env.wgt_dtype, env.wgt_scope, scope=env.wgt_scope,
                         data_alignment=wgt_lanes, offset_factor=wgt_lanes),
        out.op.output(0): decl_buffer(out_shape, env.acc_dtype, env.acc_scope, scope=env.acc_scope,
                                      data_alignment=out_lanes, offset_factor=out_lanes),
    }
    axis = vta_axis(env)
    push = vta_push_uop(env)

    def intrin_func(ins, outs):
        dinp, dwgt = ins
        dout = outs[0]

        def instr(reset: bool) -> n.Stmt:
            if mock:
                return n.Evaluate(n.IntImm(0))
            args = (
                n.IntImm(0), n.IntImm(1 if reset else 0), dout.access_ptr("rw", "int32"),
                n.IntImm(0) if reset else dinp.access_ptr("r", "int32"),
                n.IntImm(0) if reset else dwgt.access_ptr("r", "int32"),
                n.IntImm(0), n.IntImm(0), n.IntImm(0),
            )
            call = n.Evaluate(n.Call("int32", "tir.vta.uop_push", args))
            return n.AttrStmt(axis, "coproc_scope", n.IntImm(env.dev.QID_COMPUTE),
                              n.AttrStmt(axis, "coproc_uop_scope", push, call))

        return instr(False), instr(True), instr(False)

    return te.decl_tensor_intrin(out.op, intrin_func, name="GEMM", binds=binds)


set_intrinsics(sys.modules[__name__])  # env.gemm, env.dev.vta_axis and env.dev.vta_push_uop build here

"""Hand-built TIR of the worked examples (reference tvm-vta-software.md 3.1), used by several tests."""

from __future__ import annotations

from vta.tir import nodes as n
from vta.transform._util import VTA_AXIS, call_extern, call_intrin, command_handle, coproc_scope, uop_push


def arg_buffer(name: str, shape, dtype: str) -> tuple[n.Var, n.Buffer]:
    var = n.Var(name, "handle")
    return var, n.Buffer(var, dtype, tuple(shape), name)


def final_vadd() -> n.PrimFunc:
    """The vadd function exactly as the pipeline should leave it (section 3.1)."""
    (a, ab), (b, bb), (c, cb) = (arg_buffer("A", (1, 64, 1, 16), "int32"), arg_buffer("B", (1, 64, 1, 16), "int32"),
                                 arg_buffer("C", (1, 64, 1, 16), "int8"))
    cmd = command_handle()
    alu = n.AttrStmt(VTA_AXIS, "coproc_uop_scope", n.StringImm("VTAPushALUOp"), n.seq(
        n.Evaluate(call_extern("int32", "VTAUopLoopBegin", 64, 1, 1, 0)),
        uop_push(1, 0, 0, 64, 0, 2, 0, 0),
        n.Evaluate(call_extern("int32", "VTAUopLoopEnd")),
    ))
    body = n.seq(
        coproc_scope(VTA_AXIS, 2, n.seq(
            n.Evaluate(call_extern("int32", "VTALoadBuffer2D", cmd, a, 0, 64, 1, 64, 0, 0, 0, 0, 0, 3)),
            n.Evaluate(call_extern("int32", "VTALoadBuffer2D", cmd, b, 0, 64, 1, 64, 0, 0, 0, 0, 64, 3)),
            alu,
            n.Evaluate(call_intrin("int32", "tir.vta.coproc_dep_push", 2, 3)),
        )),
        coproc_scope(VTA_AXIS, 3, n.seq(
            n.Evaluate(call_intrin("int32", "tir.vta.coproc_dep_pop", 2, 3)),
            n.Evaluate(call_extern("int32", "VTAStoreBuffer2D", cmd, 0, 4, c, 0, 64, 1, 64)),
        )),
        n.Evaluate(call_intrin("int32", "tir.vta.coproc_sync")),
    )
    return n.PrimFunc((a, b, c), body, {a: ab, b: bb, c: cb})

"""C host code generation: emitted source, compilation, argument checks, running hand-built TIR."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from vta import nd
from vta.codegen import CodegenError, build_module, emit_c
from vta.errors import TVMError
from vta.runtime import cpu, ext_dev, load_module
from vta.testing import simulator
from vta.tir import nodes as n
from vta.transform._util import VTA_AXIS, call_extern, uop_push

from .tir_examples import arg_buffer, final_vadd


def _symbols(obj) -> dict[str, str]:
    out = subprocess.run(["nm", str(obj)], capture_output=True, text=True, check=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        syms[parts[-1]] = parts[-2]
    return syms


def test_source_layout():
    src = emit_c(final_vadd(), "my_vadd")
    assert 'const char __tvm_main__[] = "my_vadd";' in src
    assert "void* __tvm_module_ctx = NULL;" in src
    assert "if (VTAPushALUOp(&vta_gen_uop_handle_0, vta_gen_uop_init_0, NULL, 0) != 0) return -1;" in src
    assert "if (VTASynchronize(vta_gen_cmd, 2147483648u) != 0) return -1;" in src
    assert "if (VTADepPush(vta_gen_cmd, 2, 3) != 0) return -1;" in src
    # The recording function holds the loop and the uop, not the entry.
    init = src[src.index("static int vta_gen_uop_init_0"):src.index("int my_vadd(")]
    assert "VTAUopLoopBegin(64, 1, 1, 0);" in init and "VTAUopPush(1, 0, 0, 64, 0, 2, 0, 0);" in init


def test_object_symbols(env, tmp_path):
    mod = build_module(final_vadd(), "my_vadd")
    mod.save(tmp_path / "vadd.o")
    syms = _symbols(tmp_path / "vadd.o")
    assert syms["my_vadd"] == "T"
    assert syms["__tvm_main__"] in ("V", "R")  # exported (weak) data
    assert syms["__tvm_module_ctx"] == "V"  # weak data: several objects may share one library
    for ext in ("VTALoadBuffer2D", "VTAStoreBuffer2D", "VTAPushALUOp", "VTASynchronize", "VTATLSCommandHandle"):
        assert syms[ext] == "U"
    assert mod.get_source() == emit_c(final_vadd(), "my_vadd")


def test_two_objects_link_into_one_library(env, tmp_path):
    """Both objects define __tvm_main__ and __tvm_module_ctx; being weak, they link together."""
    import subprocess

    from vta.runtime.native_lib import runtime_library

    objs = []
    for name in ("first", "second"):
        mod = build_module(final_vadd(), name)
        mod.save(tmp_path / f"{name}.o")
        objs.append(str(tmp_path / f"{name}.o"))
    lib = runtime_library(env).path
    out = tmp_path / "both.so"
    subprocess.run(["cc", "-shared", "-o", str(out), *objs, str(lib)], check=True, capture_output=True)
    syms = _symbols(out)
    assert syms["first"] == "T" and syms["second"] == "T"


def _packed(shape, rng, dtype):
    return rng.integers(-128, 128, size=shape).astype(dtype)


def test_hand_built_vadd_runs(env, tmp_path):
    mod = build_module(final_vadd(), "my_vadd")
    mod.save(tmp_path / "vadd.o")
    f = load_module(tmp_path / "vadd.o")
    rng = np.random.default_rng(0)
    a, b = _packed((1, 64, 1, 16), rng, np.int32), _packed((1, 64, 1, 16), rng, np.int32)
    dev = ext_dev(0)
    with nd.array(a, dev) as A, nd.array(b, dev) as B, nd.empty((1, 64, 1, 16), "int8", dev) as C:
        simulator.clear_stats()
        f(A, B, C)
        np.testing.assert_equal(C.numpy(), (a + b).astype(np.int8))
        assert simulator.stats()["alu_counter"] == 64


@pytest.mark.parametrize("bad, message", [
    ("count", "expected 3 arguments, got 2"),
    ("dtype", r"argument 0 \(A\) must have dtype int32"),
    ("shape", r"argument 1 \(B\) must have shape \(1, 64, 1, 16\), got \(1, 32, 1, 16\)"),
    ("ndim", r"argument 2 \(C\) must have ndim 4, got 2"),
    ("scalar", r"argument 0 \(A\) must be an array"),
    ("device", r"argument 1 \(B\) must live on ext_dev \(device type 12\), got device type 1"),
])
def test_argument_checks(env, tmp_path, bad, message):
    mod = build_module(final_vadd(), "my_vadd")
    mod.save(tmp_path / "vadd.o")
    f = load_module(tmp_path / "vadd.o")
    dev = ext_dev(0)
    good = [nd.array(np.zeros((1, 64, 1, 16), np.int32), dev), nd.array(np.zeros((1, 64, 1, 16), np.int32), dev),
            nd.empty((1, 64, 1, 16), "int8", dev)]
    args = list(good)
    if bad == "count":
        args = good[:2]
    elif bad == "dtype":
        args[0] = nd.array(np.zeros((1, 64, 1, 16), np.int8), dev)
    elif bad == "shape":
        args[1] = nd.array(np.zeros((1, 32, 1, 16), np.int32), dev)
    elif bad == "ndim":
        args[2] = nd.empty((64, 16), "int8", dev)
    elif bad == "scalar":
        args[0] = 5
    elif bad == "device":
        args[1] = nd.array(np.zeros((1, 64, 1, 16), np.int32), cpu(0))
    with pytest.raises(TVMError, match=message):
        f(*args)


def test_closure_captures_one_int32():
    (a, ab) = arg_buffer("A", (4, 16), "int32")
    i = n.Var("i")
    body = n.For(
        i,
        n.IntImm(0),
        n.IntImm(4),
        n.ForKind.SERIAL,
        n.AttrStmt(VTA_AXIS, "coproc_uop_scope", n.StringImm("VTAPushGEMMOp"), uop_push(0, 0, i, 0, 0, 0, 0, 0)),
    )
    src = emit_c(n.PrimFunc((a,), body, {a: ab}), "f")
    assert "int32_t i = ((int32_t*)closure)[0];" in src
    assert "int32_t vta_gen_closure[1] = { i };" in src
    assert "VTAPushGEMMOp(&vta_gen_uop_handle_0, vta_gen_uop_init_0, vta_gen_closure, 4)" in src


def test_errors():
    (a, ab) = arg_buffer("A", (4, 16), "int32")
    i, j = n.Var("i"), n.Var("j")
    two = n.For(
        i,
        n.IntImm(0),
        n.IntImm(2),
        n.ForKind.SERIAL,
        n.For(
            j,
            n.IntImm(0),
            n.IntImm(2),
            n.ForKind.SERIAL,
            n.AttrStmt(VTA_AXIS, "coproc_uop_scope", n.StringImm("VTAPushGEMMOp"), uop_push(0, 0, i, j, 0, 0, 0, 0)),
        ),
    )
    with pytest.raises(CodegenError, match=r"at most one int32 variable.*\[i: int32, j: int32\]"):
        emit_c(n.PrimFunc((a,), two, {a: ab}), "f")
    sram = n.Allocate(n.Var("buf", "handle"), "int32", (n.IntImm(16),), n.IntImm(1, "bool"), n.Evaluate(n.IntImm(0)),
                      "local.acc_buffer")
    with pytest.raises(CodegenError, match="'local.acc_buffer' reached the host backend"):
        emit_c(n.PrimFunc((a,), sram, {a: ab}), "f")
    ptr = n.Evaluate(call_extern("int32", "VTAStoreBuffer2D", ab.access_ptr("r", "int32"), 0))
    with pytest.raises(CodegenError, match="tvm_access_ptr"):
        emit_c(n.PrimFunc((a,), ptr, {a: ab}), "f")
    with pytest.raises(CodegenError, match="not usable as a C symbol"):
        emit_c(final_vadd(), "1bad")


def test_dram_intermediate_freed_on_every_exit():
    (a, ab) = arg_buffer("A", (16,), "int32")
    tmp = n.Var("T", "handle")
    body = n.Allocate(tmp, "int32", (n.IntImm(16),), n.IntImm(1, "bool"), n.seq(
        n.Evaluate(n.Call("int32", "tir.vta.coproc_dep_push", (n.IntImm(2), n.IntImm(3)))),
        n.Store(tmp, n.IntImm(1), n.IntImm(0))), "global")
    src = emit_c(n.PrimFunc((a,), body, {a: ab}), "f")
    assert "void* T = VTABufferAlloc(64);" in src
    assert "if (VTADepPush(vta_gen_cmd, 2, 3) != 0) { VTABufferFree(T); return -1; }" in src
    assert src.count("VTABufferFree(T);") == 2


def test_sub_byte_cpu_code_rejected():
    (a, ab) = arg_buffer("A", (16,), "int4")
    body = n.Store(ab.data, n.IntImm(1, "int4"), n.IntImm(0))
    with pytest.raises(CodegenError, match="cannot compute on 'int4' values"):
        emit_c(n.PrimFunc((a,), body, {a: ab}), "f")

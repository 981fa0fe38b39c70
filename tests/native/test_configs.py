"""The runtime on every shipped configuration, with Python (through ctypes) as the host code.

A GEMM with a folded loop, an ALU shift with an immediate and a store, built with the runtime
API on each configuration (BATCH 2, BLOCK 32, 4-bit data), checked against NumPy.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from vta.dram import global_dram
from vta.runtime import vta_bridge

pytestmark = pytest.mark.native

FINIT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
N_OUT = 4  # output tiles


def pack_bits(values: np.ndarray, bits: int) -> np.ndarray:
    """Two's complement ``bits``-wide elements, packed low element first into bytes."""
    if bits == 8:
        return values.astype(np.int8).view(np.uint8).reshape(-1)
    assert bits == 4
    nib = (values.reshape(-1).astype(np.int64) & 0xF).astype(np.uint8)
    return nib[0::2] | (nib[1::2] << 4)


def declare(lib) -> None:
    u32 = ctypes.c_uint32
    lib.VTATLSCommandHandle.restype = ctypes.c_void_p
    lib.VTALoadBuffer2D.argtypes = [ctypes.c_void_p, ctypes.c_void_p] + [u32] * 10
    lib.VTAStoreBuffer2D.argtypes = [ctypes.c_void_p, u32, u32, ctypes.c_void_p] + [u32] * 4
    lib.VTAUopLoopBegin.argtypes = [u32] * 4
    lib.VTAUopPush.argtypes = [u32] * 7 + [ctypes.c_int32]
    lib.VTAPushGEMMOp.argtypes = [ctypes.POINTER(ctypes.c_void_p), FINIT, ctypes.c_void_p, ctypes.c_int]
    lib.VTAPushALUOp.argtypes = lib.VTAPushGEMMOp.argtypes
    lib.VTADepPush.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
    lib.VTADepPop.argtypes = lib.VTADepPush.argtypes
    lib.VTASynchronize.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    lib.TVMGetLastError.restype = ctypes.c_char_p


def test_gemm_shift_store_on_every_configuration(any_env):
    env = any_env
    lib = vta_bridge.runtime(env)
    declare(lib)
    dram = global_dram()
    rng = np.random.default_rng(12)
    lo, hi = -(1 << (env.INP_WIDTH - 1)), 1 << (env.INP_WIDTH - 1)
    inp = rng.integers(lo, hi, size=(env.BATCH, env.BLOCK_IN))
    wgt = rng.integers(lo, hi, size=(N_OUT, env.BLOCK_OUT, env.BLOCK_IN))
    acc = np.einsum("bk,ojk->obj", inp, wgt)  # (N_OUT, BATCH, BLOCK_OUT)
    shifted = acc >> 2
    out_bits = env.OUT_WIDTH
    expected = pack_bits(((shifted + (1 << (out_bits - 1))) % (1 << out_bits)) - (1 << (out_bits - 1)),
                         out_bits)

    def put(data: np.ndarray) -> int:
        phys = dram.alloc(data.size)
        dram.write(phys, data)
        return phys

    inp_phys = put(pack_bits(inp, env.INP_WIDTH))
    wgt_phys = put(pack_bits(wgt, env.WGT_WIDTH))
    out_phys = dram.alloc(N_OUT * env.OUT_ELEM_BYTES)
    base = dram.host_address
    assert pack_bits(inp, env.INP_WIDTH).size == env.INP_ELEM_BYTES  # one input tile

    def reset_init(_closure):
        lib.VTAUopLoopBegin(N_OUT, 1, 0, 0)
        lib.VTAUopPush(0, 1, 0, 0, 0, 0, 0, 0)
        lib.VTAUopLoopEnd()
        return 0

    def gemm_init(_closure):
        lib.VTAUopLoopBegin(N_OUT, 1, 0, 1)
        lib.VTAUopPush(0, 0, 0, 0, 0, 0, 0, 0)
        lib.VTAUopLoopEnd()
        return 0

    def shr_init(_closure):
        lib.VTAUopLoopBegin(N_OUT, 1, 1, 0)
        lib.VTAUopPush(1, 0, 0, 0, 0, 3, 1, 2)  # SHR by the immediate 2
        lib.VTAUopLoopEnd()
        return 0

    callbacks = [FINIT(reset_init), FINIT(gemm_init), FINIT(shr_init)]
    handles = [ctypes.c_void_p() for _ in callbacks]
    try:
        cmd = lib.VTATLSCommandHandle()
        assert lib.VTAPushGEMMOp(ctypes.byref(handles[0]), callbacks[0], None, 0) == 0
        assert lib.VTADepPush(cmd, 2, 1) == 0
        assert lib.VTADepPop(cmd, 2, 1) == 0
        lib.VTALoadBuffer2D(cmd, base + inp_phys, 0, 1, 1, 1, 0, 0, 0, 0, 0, 2)
        lib.VTALoadBuffer2D(cmd, base + wgt_phys, 0, N_OUT, 1, N_OUT, 0, 0, 0, 0, 0, 1)
        assert lib.VTADepPush(cmd, 1, 2) == 0
        assert lib.VTADepPop(cmd, 1, 2) == 0
        assert lib.VTAPushGEMMOp(ctypes.byref(handles[1]), callbacks[1], None, 0) == 0
        assert lib.VTAPushALUOp(ctypes.byref(handles[2]), callbacks[2], None, 0) == 0
        assert lib.VTADepPush(cmd, 2, 3) == 0
        assert lib.VTADepPop(cmd, 2, 3) == 0
        lib.VTAStoreBuffer2D(cmd, 0, 4, base + out_phys, 0, N_OUT, 1, N_OUT)
        assert lib.VTASynchronize(cmd, 1 << 31) == 0, lib.TVMGetLastError()
        got = np.frombuffer(dram.read(out_phys, N_OUT * env.OUT_ELEM_BYTES), dtype=np.uint8)
        np.testing.assert_array_equal(got, expected)
    finally:
        for phys in (inp_phys, wgt_phys, out_phys):
            dram.free(phys)

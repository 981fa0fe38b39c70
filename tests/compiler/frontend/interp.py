"""A TIR interpreter for tests only: runs a flat PrimFunc on NumPy arrays.

It is an independent oracle for the lowering: every expression is evaluated with plain Python
integers (wrapping at the dtype's width), loops run one iteration at a time, and the VTA GEMM
micro-op ``tir.vta.uop_push`` with ``tvm_access_ptr`` operands is executed as a tile operation
(``out[BATCH, BLOCK_OUT] += inp[BATCH, BLOCK_IN] @ wgt[BLOCK_OUT, BLOCK_IN].T`` or a reset).
Slow by design; only for small functions.
"""

from __future__ import annotations

import numpy as np

from vta.tir import nodes as n


def wrap(value: int, dtype: str) -> int:
    """Two's complement wrap of ``value`` to an integer dtype."""
    if dtype == "bool":
        return 1 if value else 0
    if not n.is_int_dtype(dtype):
        return value
    bits = n.dtype_bits(dtype)
    value = int(value) & ((1 << bits) - 1)
    if dtype.startswith("int") and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def _floordiv(a, b):
    return a // b


def _truncdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


class Interpreter:
    """Executes statements against ``memory``: a dict ``data Var -> flat NumPy array``."""

    def __init__(self, memory: dict, tile: tuple[int, int, int] = (1, 16, 16)):
        self.memory = memory
        self.batch, self.block_in, self.block_out = tile
        self.uop_count = 0

    # ---------------------------------------------------------------- expressions
    def eval(self, e, env: dict):
        if isinstance(e, n.IntImm):
            return e.value
        if isinstance(e, n.FloatImm):
            return e.value
        if isinstance(e, n.Var):
            if e not in env:
                raise KeyError(f"unbound variable {e.name!r}")
            return env[e]
        if isinstance(e, n.Cast):
            return wrap(self.eval(e.value, env), e.dtype)
        if isinstance(e, n.Load):
            buf = self.memory[e.buffer_var]
            return int(buf[self.eval(e.index, env)])
        if isinstance(e, n.Select):
            return self.eval(e.true_value if self.eval(e.condition, env) else e.false_value, env)
        if isinstance(e, n.Not):
            return 0 if self.eval(e.a, env) else 1
        if isinstance(e, n.And):
            return 1 if (self.eval(e.a, env) and self.eval(e.b, env)) else 0
        if isinstance(e, n.Or):
            return 1 if (self.eval(e.a, env) or self.eval(e.b, env)) else 0
        if isinstance(e, n.BinaryOp):
            a, b = self.eval(e.a, env), self.eval(e.b, env)
            ops = {
                n.Add: lambda: a + b, n.Sub: lambda: a - b, n.Mul: lambda: a * b,
                n.FloorDiv: lambda: _floordiv(a, b), n.FloorMod: lambda: a - _floordiv(a, b) * b,
                n.Div: lambda: _truncdiv(a, b), n.Mod: lambda: a - _truncdiv(a, b) * b,
                n.Min: lambda: min(a, b), n.Max: lambda: max(a, b),
                n.EQ: lambda: int(a == b), n.NE: lambda: int(a != b), n.LT: lambda: int(a < b),
                n.LE: lambda: int(a <= b), n.GT: lambda: int(a > b), n.GE: lambda: int(a >= b),
            }
            return wrap(ops[type(e)](), e.dtype)
        if isinstance(e, n.Call):
            if e.op == "tir.shift_right":
                return wrap(self.eval(e.args[0], env) >> self.eval(e.args[1], env), e.dtype)
            if e.op == "tir.shift_left":
                return wrap(self.eval(e.args[0], env) << self.eval(e.args[1], env), e.dtype)
            if e.op == "tir.if_then_else":
                c = self.eval(e.args[0], env)
                return self.eval(e.args[1] if c else e.args[2], env)
            if e.op == "tir.likely":
                return self.eval(e.args[0], env)
            raise NotImplementedError(f"interpreter: call {e.op!r}")
        raise NotImplementedError(f"interpreter: expression {type(e).__name__}")

    # ---------------------------------------------------------------- statements
    def run(self, s, env: dict) -> None:
        if isinstance(s, n.SeqStmt):
            for x in s.seq:
                self.run(x, env)
        elif isinstance(s, n.For):
            lo, ext = self.eval(s.min, env), self.eval(s.extent, env)
            for v in range(lo, lo + ext):
                env[s.loop_var] = v
                self.run(s.body, env)
            env.pop(s.loop_var, None)
        elif isinstance(s, n.AttrStmt):
            if s.attr_key == "virtual_thread":
                var = s.node.var
                for v in range(self.eval(s.value, env)):
                    env[var] = v
                    self.run(s.body, env)
                env.pop(var, None)
            else:
                self.run(s.body, env)
        elif isinstance(s, n.Allocate):
            size = 1
            for x in s.extents:
                size *= self.eval(x, env)
            self.memory[s.buffer_var] = np.zeros(size, dtype=s.dtype)
            self.run(s.body, env)
        elif isinstance(s, n.Store):
            buf = self.memory[s.buffer_var]
            buf[self.eval(s.index, env)] = wrap(self.eval(s.value, env), str(buf.dtype))
        elif isinstance(s, n.IfThenElse):
            if self.eval(s.condition, env):
                self.run(s.then_case, env)
            elif s.else_case is not None:
                self.run(s.else_case, env)
        elif isinstance(s, n.LetStmt):
            env[s.var] = self.eval(s.value, env)
            self.run(s.body, env)
        elif isinstance(s, n.Evaluate):
            if isinstance(s.value, n.Call) and s.value.op == "tir.vta.uop_push":
                self._uop_push(s.value, env)
            elif not isinstance(s.value, n.IntImm):
                raise NotImplementedError(f"interpreter: evaluate {s.value!r}")
        else:
            raise NotImplementedError(f"interpreter: statement {type(s).__name__}")

    def _ptr(self, call, env, rows: int, cols: int):
        if not (isinstance(call, n.Call) and call.op == "tir.tvm_access_ptr"):
            raise NotImplementedError(f"interpreter: uop operand {call!r}")
        buf = self.memory[call.args[1]]
        off = self.eval(call.args[2], env)
        ext = self.eval(call.args[3], env)
        assert ext == rows * cols, (ext, rows, cols)
        return buf[off:off + rows * cols].reshape(rows, cols)

    def _uop_push(self, call: n.Call, env: dict) -> None:
        mode, reset = self.eval(call.args[0], env), self.eval(call.args[1], env)
        assert mode == 0, "only GEMM uops are interpreted"
        self.uop_count += 1
        out = self._ptr(call.args[2], env, self.batch, self.block_out)
        if reset:
            out[...] = 0
            return
        inp = self._ptr(call.args[3], env, self.batch, self.block_in).astype(np.int64)
        wgt = self._ptr(call.args[4], env, self.block_out, self.block_in).astype(np.int64)
        acc = out.astype(np.int64) + inp @ wgt.T
        out[...] = ((acc + (1 << 31)) % (1 << 32) - (1 << 31)).astype(out.dtype)


def run_primfunc(func: n.PrimFunc, arrays: list[np.ndarray], tile=(1, 16, 16)) -> Interpreter:
    """Run ``func`` with ``arrays`` bound to its parameters (in order); arrays are updated in place."""
    if len(arrays) != len(func.params):
        raise ValueError(f"expected {len(func.params)} arrays, got {len(arrays)}")
    memory = {}
    for p, a in zip(func.params, arrays):
        buf = func.buffer_map[p]
        assert tuple(int(s) for s in buf.shape) == a.shape, (buf.name, buf.shape, a.shape)
        assert str(a.dtype) == buf.dtype, (buf.name, buf.dtype, a.dtype)
        memory[buf.data] = a.reshape(-1)  # a view: stores land in the caller's array
    it = Interpreter(memory, tile)
    it.run(func.body, {})
    return it

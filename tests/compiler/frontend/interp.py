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
from vta.tir.functor import post_order_visit


def wrap(value, dtype: str):
    """Two's complement wrap of ``value`` (an int or an int64 array) to an integer dtype."""
    if dtype == "bool":
        return (value != 0).astype(np.int64) if isinstance(value, np.ndarray) else (1 if value else 0)
    if not n.is_int_dtype(dtype):
        return value
    bits = n.dtype_bits(dtype)
    if isinstance(value, np.ndarray):
        value = value.astype(np.int64)
        if bits >= 64:
            return value
        value = value & ((1 << bits) - 1)
        if dtype.startswith("int"):
            value = np.where(value >= 1 << (bits - 1), value - (1 << bits), value)
        return value
    value = int(value) & ((1 << bits) - 1)
    if dtype.startswith("int") and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def storage_dtype(dtype: str) -> str:
    """NumPy dtype holding values of an IR dtype (sub-byte integers live in int8/uint8)."""
    if n.is_int_dtype(dtype) and n.dtype_bits(dtype) < 8:
        return "uint8" if dtype.startswith("uint") else "int8"
    return dtype


def _truncdiv(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _is_vec(*xs) -> bool:
    return any(isinstance(x, np.ndarray) for x in xs)


def _truth(x):
    return x.astype(np.int64) if isinstance(x, np.ndarray) else int(bool(x))


class Interpreter:
    """Executes statements against ``memory``: a dict ``data Var -> flat NumPy array``.

    The innermost loop around a single store is run as one NumPy operation when its
    iterations provably write distinct elements (the loop variable becomes an index array).
    """

    def __init__(self, memory: dict, tile: tuple[int, int, int] = (1, 16, 16)):
        self.memory = memory
        self.batch, self.block_in, self.block_out = tile
        self.uop_count = 0
        self.guarded = 0  # > 0 while evaluating a branch of a vector select: loads are clipped
        self._dtypes: dict[int, str] = {}  # node id -> dtype (BinaryOp.dtype recurses)
        self._vector_ok: dict[int, bool] = {}  # loop id -> decision of _vectorizable
        self.buffer_dtype: dict = {}  # data Var -> IR dtype (stores wrap to it)

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
            idx = self.eval(e.index, env)
            if isinstance(idx, np.ndarray):
                if self.guarded:
                    idx = np.clip(idx, 0, buf.size - 1)
                return buf[idx].astype(np.int64)
            if not 0 <= idx < buf.size:
                raise IndexError(f"load {e.buffer_var.name}[{idx}] outside [0, {buf.size})")
            return int(buf[idx])
        if isinstance(e, n.Select):
            return self._select(e.condition, e.true_value, e.false_value, env)
        if isinstance(e, n.Not):
            a = self.eval(e.a, env)
            return 1 - _truth(a)
        if isinstance(e, (n.And, n.Or)):
            a, b = _truth(self.eval(e.a, env)), _truth(self.eval(e.b, env))
            return (a & b) if isinstance(e, n.And) else (a | b)
        if isinstance(e, n.BinaryOp):
            a, b = self.eval(e.a, env), self.eval(e.b, env)
            vec = _is_vec(a, b)
            t = type(e)
            if t is n.Add:
                r = a + b
            elif t is n.Sub:
                r = a - b
            elif t is n.Mul:
                r = a * b
            elif t is n.FloorDiv:
                r = a // b
            elif t is n.FloorMod:
                r = a % b
            elif t is n.Div:
                r = _truncdiv(a, b)
            elif t is n.Mod:
                r = a - _truncdiv(a, b) * b
            elif t is n.Min:
                r = np.minimum(a, b) if vec else min(a, b)
            elif t is n.Max:
                r = np.maximum(a, b) if vec else max(a, b)
            else:
                r = _truth({n.EQ: lambda: a == b, n.NE: lambda: a != b, n.LT: lambda: a < b,
                            n.LE: lambda: a <= b, n.GT: lambda: a > b, n.GE: lambda: a >= b}[t]())
            dt = self._dtypes.get(id(e))
            if dt is None:
                dt = self._dtypes[id(e)] = e.dtype
            return wrap(r, dt)
        if isinstance(e, n.Call):
            if e.op == "tir.shift_right":
                return wrap(self.eval(e.args[0], env) >> self.eval(e.args[1], env), e.dtype)
            if e.op == "tir.shift_left":
                return wrap(self.eval(e.args[0], env) << self.eval(e.args[1], env), e.dtype)
            if e.op == "tir.if_then_else":
                return self._select(*e.args, env)
            if e.op == "tir.likely":
                return self.eval(e.args[0], env)
            if e.op == "tir.bitwise_not":
                return wrap(~self.eval(e.args[0], env), e.dtype)
            if e.op in ("tir.bitwise_and", "tir.bitwise_or", "tir.bitwise_xor"):
                a, b = self.eval(e.args[0], env), self.eval(e.args[1], env)
                r = {"tir.bitwise_and": a & b, "tir.bitwise_or": a | b, "tir.bitwise_xor": a ^ b}[e.op]
                return wrap(r, e.dtype)
            raise NotImplementedError(f"interpreter: call {e.op!r}")
        raise NotImplementedError(f"interpreter: expression {type(e).__name__}")

    def _select(self, cond, t, f, env):
        c = self.eval(cond, env)
        if not isinstance(c, np.ndarray):
            return self.eval(t if c else f, env)
        self.guarded += 1
        try:
            tv, fv = self.eval(t, env), self.eval(f, env)
        finally:
            self.guarded -= 1
        return np.where(c != 0, tv, fv)

    # ---------------------------------------------------------------- statements
    def run(self, s, env: dict) -> None:
        if isinstance(s, n.SeqStmt):
            for x in s.seq:
                self.run(x, env)
        elif isinstance(s, n.For):
            lo, ext = self.eval(s.min, env), self.eval(s.extent, env)
            ok = self._vector_ok.get(id(s))
            if ok is None:
                ok = self._vector_ok[id(s)] = self._vectorizable(s, lo, ext, env)
            if ok:
                env[s.loop_var] = np.arange(lo, lo + ext, dtype=np.int64)
                self.run(s.body, env)
                env.pop(s.loop_var, None)
                return
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
            self.memory[s.buffer_var] = np.zeros(size, dtype=storage_dtype(s.dtype))
            self.buffer_dtype[s.buffer_var] = s.dtype
            self.run(s.body, env)
        elif isinstance(s, n.Store):
            buf = self.memory[s.buffer_var]
            idx = self.eval(s.index, env)
            if not isinstance(idx, np.ndarray) and not 0 <= idx < buf.size:
                raise IndexError(f"store {s.buffer_var.name}[{idx}] outside [0, {buf.size})")
            buf[idx] = wrap(self.eval(s.value, env), self.buffer_dtype.get(s.buffer_var, str(buf.dtype)))
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

    def _vectorizable(self, loop: n.For, lo: int, ext: int, env: dict) -> bool:
        """A loop around one store to distinct elements, reading the stored buffer only there.

        Decided by evaluating the indices over the whole iteration range on the loop's first
        execution (no analysis of the IR under test is trusted); loop bounds and index
        coefficients are constants in the lowered functions, so the decision holds later too.
        """
        st = loop.body
        if not isinstance(st, n.Store) or ext < 2:
            return False
        env[loop.loop_var] = np.arange(lo, lo + ext, dtype=np.int64)
        try:
            idx = self.eval(st.index, env)
            if not isinstance(idx, np.ndarray) or np.unique(idx).size != ext:
                return False
            same = []

            def visit(x):
                if isinstance(x, n.Load) and x.buffer_var is st.buffer_var:
                    same.append(x.index)

            post_order_visit(st.value, visit)
            return all(np.array_equal(np.broadcast_to(self.eval(i, env), idx.shape), idx) for i in same)
        finally:
            env.pop(loop.loop_var, None)

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
    for p, a in zip(func.params, arrays, strict=True):
        buf = func.buffer_map[p]
        assert tuple(int(s) for s in buf.shape) == a.shape, (buf.name, buf.shape, a.shape)
        assert str(a.dtype) == storage_dtype(buf.dtype), (buf.name, buf.dtype, a.dtype)
        memory[buf.data] = a.reshape(-1)  # a view: stores land in the caller's array
    it = Interpreter(memory, tile)
    for buf in func.buffer_map.values():
        it.buffer_dtype[buf.data] = buf.dtype
    it.run(func.body, {})
    return it

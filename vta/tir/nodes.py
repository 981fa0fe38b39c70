"""Immutable TIR nodes: expressions, statements, buffers and functions.

The IR mirrors the subset of TVM's TIR that the VTA flow uses. Nodes are frozen dataclasses
compared by identity (``eq=False``): two ``Var`` objects with the same name are different
variables. Passes never mutate a node; they build new ones (see :mod:`vta.tir.functor`).

Data types are strings: ``"int8"``, ``"int32"``, ``"uint32"``, ``"float32"``, ``"bool"``,
``"handle"``.

Expressions overload Python's operators as TVM does: ``+ - * // % / >> << < <= > >= == !=``,
``& | ^ ~`` (logical on booleans, bitwise on integers) and ``astype``; the results are plain
nodes, simplification is the job of :mod:`vta.tir.simplify`. ``/`` needs a float operand
(integer division is spelled ``//`` or ``truncdiv``). ``a == b`` is an ``EQ`` node whose Python
truth value is identity (equal values for two constants), so nodes stay usable as dict keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence, Union

__all__ = [
    "PrimExpr", "Var", "SizeVar", "IntImm", "FloatImm", "StringImm", "Cast",
    "BinaryOp", "Add", "Sub", "Mul", "Div", "Mod", "FloorDiv", "FloorMod", "Min", "Max",
    "CmpOp", "EQ", "NE", "LT", "LE", "GT", "GE", "And", "Or", "Not", "Select",
    "Call", "Load", "BufferLoad", "ProducerLoad", "Let", "Ramp", "Broadcast",
    "Stmt", "LetStmt", "AttrStmt", "AssertStmt", "For", "ForKind", "Store", "BufferStore",
    "BufferRealize", "ProducerRealize", "ProducerStore", "Allocate", "SeqStmt", "IfThenElse", "Evaluate",
    "Buffer", "PrimFunc", "Range", "const", "convert", "seq", "dtype_bits", "is_int_dtype",
]


# ------------------------------------------------------------------------------------ dtypes
def dtype_bits(dtype: str) -> int:
    """Bit width of a scalar dtype string (``handle`` counts 64, ``bool`` 1).

    Raises
    ------
    ValueError
        If the dtype string is not of the form ``int<N>``, ``uint<N>``, ``float<N>``, ``bool``
        or ``handle``.
    """
    if dtype == "bool":
        return 1
    if dtype == "handle":
        return 64
    for prefix in ("uint", "int", "float"):
        if dtype.startswith(prefix) and dtype[len(prefix):].isdigit():
            return int(dtype[len(prefix):])
    raise ValueError(f"unknown dtype {dtype!r}; expected int<N>, uint<N>, float<N>, bool or handle")


def is_int_dtype(dtype: str) -> bool:
    """Whether ``dtype`` is a signed or unsigned integer type."""
    return dtype.startswith("int") or dtype.startswith("uint")


def _binary_dtype(a: "PrimExpr", b: "PrimExpr") -> str:
    if a.dtype == b.dtype:
        return a.dtype
    # An immediate adopts the other operand's type (unless it is a float and the other is
    # not); otherwise a float wins, then the wider type.
    if isinstance(a, (IntImm, FloatImm)) and not (a.dtype.startswith("float") and not b.dtype.startswith("float")):
        return b.dtype
    if isinstance(b, (IntImm, FloatImm)) and not (b.dtype.startswith("float") and not a.dtype.startswith("float")):
        return a.dtype
    if a.dtype.startswith("float") or b.dtype.startswith("float"):
        return a.dtype if a.dtype.startswith("float") else b.dtype
    return a.dtype if dtype_bits(a.dtype) >= dtype_bits(b.dtype) else b.dtype


def convert(value: Any, dtype: str | None = None) -> "PrimExpr":
    """Turn a Python number (or an expression) into a :class:`PrimExpr`.

    Raises
    ------
    TypeError
        If ``value`` is neither a number nor an expression.
    """
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, bool):
        return IntImm(int(value), dtype or "bool")
    if isinstance(value, int) or (hasattr(value, "__index__") and not isinstance(value, float)):
        return const(int(value), dtype) if dtype else IntImm(int(value), "int32")
    if isinstance(value, float):
        return FloatImm(value, dtype or "float32")
    var = getattr(value, "var", None)  # an IterVar stands for its loop variable, as in TVM
    if isinstance(var, Var):
        return var
    raise TypeError(f"cannot convert {value!r} ({type(value).__name__}) to a TIR expression")


def const(value: int | float, dtype: str = "int32") -> "PrimExpr":
    """A constant of the given dtype."""
    return FloatImm(float(value), dtype) if dtype.startswith("float") else IntImm(int(value), dtype)


def _operand(this: "PrimExpr", other: Any) -> "PrimExpr":
    """``other`` as the second operand of an operator on ``this``: a Python int takes the
    type of ``this`` (a float one's too), a Python float that of a float ``this`` and
    ``float32`` otherwise; expressions are kept as they are.

    Raises
    ------
    TypeError
        If ``other`` is neither a number nor an expression.
    """
    if isinstance(other, bool) or not isinstance(other, (int, float)):
        return convert(other)
    dtype = this.dtype
    if dtype in ("bool", "handle"):
        return convert(other)
    if isinstance(other, float) and not dtype.startswith("float"):
        return FloatImm(other, "float32")
    return const(other, dtype)


def _true_div(this: "PrimExpr", other: Any, reverse: bool) -> "PrimExpr":
    other = _operand(this, other)
    a, b = (other, this) if reverse else (this, other)
    if not a.dtype.startswith("float") and not b.dtype.startswith("float"):
        raise TypeError(
            f"`/` on integer expressions ({a!r} / {b!r}) is ambiguous: use `//` or tir.floordiv / "
            "tir.indexdiv (rounding down), or tir.truncdiv / tir.div (rounding toward zero)"
        )
    return Div(a, b)


def _shift(op: str, this: "PrimExpr", other: Any, reverse: bool = False) -> "PrimExpr":
    other = _operand(this, other)
    a, b = (other, this) if reverse else (this, other)
    for x in (a, b):
        if not is_int_dtype(x.dtype):
            raise TypeError(f"{op}: shifts need integer operands, got {x!r} of dtype {x.dtype!r}")
    return Call(a.dtype, op, (a, b))


def _logic_or_bitwise(this: "PrimExpr", other: Any, logic: type, bitwise: str, reverse: bool = False) -> "PrimExpr":
    """``& | ^``: the logical node on two booleans, else the bitwise call (a boolean operand is
    cast to the integer type of the other, as TVM promotes it)."""
    other = _operand(this, other)
    a, b = (other, this) if reverse else (this, other)
    if a.dtype == "bool" and b.dtype == "bool":
        return logic(a, b)
    for x in (a, b):
        if not (is_int_dtype(x.dtype) or x.dtype == "bool"):
            raise TypeError(f"{bitwise}: needs boolean or integer operands, got {x!r} of dtype {x.dtype!r}")
    if a.dtype == "bool":
        a = Cast(b.dtype, a)
    if b.dtype == "bool":
        b = Cast(a.dtype, b)
    return Call(_binary_dtype(a, b), bitwise, (a, b))


# ------------------------------------------------------------------------------------ expressions
class PrimExpr:
    """Base class of every expression. Subclasses define ``dtype``."""

    __slots__ = ()
    dtype: str

    def _bin(self, cls, other, reverse=False):
        other = _operand(self, other)
        a, b = (other, self) if reverse else (self, other)
        return cls(a, b)

    def __add__(self, o):
        return self._bin(Add, o)

    def __radd__(self, o):
        return self._bin(Add, o, True)

    def __sub__(self, o):
        return self._bin(Sub, o)

    def __rsub__(self, o):
        return self._bin(Sub, o, True)

    def __mul__(self, o):
        return self._bin(Mul, o)

    def __rmul__(self, o):
        return self._bin(Mul, o, True)

    def __floordiv__(self, o):
        return self._bin(FloorDiv, o)

    def __rfloordiv__(self, o):
        return self._bin(FloorDiv, o, True)

    def __mod__(self, o):
        return self._bin(FloorMod, o)

    def __rmod__(self, o):
        return self._bin(FloorMod, o, True)

    def __truediv__(self, o):
        return _true_div(self, o, False)

    def __rtruediv__(self, o):
        return _true_div(self, o, True)

    def __neg__(self):
        return Sub(const(0, self.dtype), self)

    def __rshift__(self, o):
        return _shift("tir.shift_right", self, o)

    def __rrshift__(self, o):
        return _shift("tir.shift_right", self, o, True)

    def __lshift__(self, o):
        return _shift("tir.shift_left", self, o)

    def __rlshift__(self, o):
        return _shift("tir.shift_left", self, o, True)

    # ``& | ^ ~``: logical on booleans (And, Or, NE, Not), bitwise calls on integers, as in TVM.
    def __and__(self, o):
        return _logic_or_bitwise(self, o, And, "tir.bitwise_and")

    def __rand__(self, o):
        return _logic_or_bitwise(self, o, And, "tir.bitwise_and", True)

    def __or__(self, o):
        return _logic_or_bitwise(self, o, Or, "tir.bitwise_or")

    def __ror__(self, o):
        return _logic_or_bitwise(self, o, Or, "tir.bitwise_or", True)

    def __xor__(self, o):
        return _logic_or_bitwise(self, o, NE, "tir.bitwise_xor")

    def __rxor__(self, o):
        return _logic_or_bitwise(self, o, NE, "tir.bitwise_xor", True)

    def __invert__(self):
        if self.dtype == "bool":
            return Not(self)
        if not is_int_dtype(self.dtype):
            raise TypeError(f"~ needs a boolean or integer expression, got dtype {self.dtype!r} in {self!r}")
        return Call(self.dtype, "tir.bitwise_not", (self,))

    def __lt__(self, o):
        return self._bin(LT, o)

    def __le__(self, o):
        return self._bin(LE, o)

    def __gt__(self, o):
        return self._bin(GT, o)

    def __ge__(self, o):
        return self._bin(GE, o)

    def __eq__(self, o):  # type: ignore[override]
        # As TVM: ``a == b`` builds an EQ node; its truth value is identity (or, for two
        # constants, equal values), so nodes still work as dict keys and in ``in`` tests.
        try:
            return self._bin(EQ, o)
        except TypeError:
            return NotImplemented

    def __ne__(self, o):  # type: ignore[override]
        try:
            return self._bin(NE, o)
        except TypeError:
            return NotImplemented

    def equal(self, o) -> "EQ":
        """An ``EQ`` node, the same as ``self == o``."""
        return self._bin(EQ, o)

    def astype(self, dtype: str) -> "PrimExpr":
        """A cast to ``dtype`` (no node when the type already matches)."""
        return self if dtype == self.dtype else Cast(dtype, self)

    def __bool__(self):
        raise TypeError(
            f"the TIR expression {self!r} has no truth value: Python's `and`, `or`, `not` and `if` cannot "
            "decide it; combine conditions with `&`, `|`, `~` (or tir.all / tir.any), and decide a "
            "constant one with vta.tir.simplify"
        )

    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False)
class Var(PrimExpr):
    """A variable, identified by the object itself (the name is only for printing)."""

    name: str
    dtype: str = "int32"

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True, eq=False)
class SizeVar(Var):
    """A variable known to be non-negative (a shape or an extent)."""


@dataclass(frozen=True, eq=False)
class IntImm(PrimExpr):
    value: int
    dtype: str = "int32"

    def __post_init__(self):
        if not isinstance(self.value, int):
            object.__setattr__(self, "value", int(self.value))

    def __index__(self) -> int:
        return self.value

    def __int__(self) -> int:
        return self.value

    def __bool__(self) -> bool:
        # A constant decides itself, as TVM's IntImm does (``if stride == 1``, ``if not pad``).
        return self.value != 0

    def __repr__(self) -> str:
        return str(self.value)


@dataclass(frozen=True, eq=False)
class FloatImm(PrimExpr):
    value: float
    dtype: str = "float32"


@dataclass(frozen=True, eq=False)
class StringImm(PrimExpr):
    value: str
    dtype: str = "handle"


@dataclass(frozen=True, eq=False)
class Cast(PrimExpr):
    dtype: str
    value: PrimExpr


class _BinaryDtype:
    """``BinaryOp.dtype``: derived from the operands on first use, then kept in the instance
    (a non-data descriptor, so the stored value shadows it; nodes are immutable)."""

    def __get__(self, obj: Any, cls: Any = None) -> Any:
        if obj is None:
            return self
        dtype = _binary_dtype(obj.a, obj.b)
        obj.__dict__["dtype"] = dtype
        return dtype


@dataclass(frozen=True, eq=False)
class BinaryOp(PrimExpr):
    """Base of two-operand arithmetic; ``dtype`` is derived from the operands."""

    a: PrimExpr
    b: PrimExpr

    dtype = _BinaryDtype()  # type: ignore[assignment]


class Add(BinaryOp):
    pass


class Sub(BinaryOp):
    pass


class Mul(BinaryOp):
    pass


class Div(BinaryOp):
    """Truncating division (C semantics)."""


class Mod(BinaryOp):
    """Truncating remainder (C semantics)."""


class FloorDiv(BinaryOp):
    pass


class FloorMod(BinaryOp):
    pass


class Min(BinaryOp):
    pass


class Max(BinaryOp):
    pass


class CmpOp(BinaryOp):
    """Base of comparisons; the result is ``bool``."""

    dtype = "bool"  # type: ignore[assignment]


def _same_value(a: Any, b: Any) -> bool:
    """The truth value of ``a == b`` on nodes: identity, or equal values for two constants."""
    if a is b:
        return True
    if isinstance(a, (IntImm, FloatImm)) and isinstance(b, (IntImm, FloatImm)):
        return a.value == b.value
    return False


class EQ(CmpOp):
    """``a == b``. Used as a Python truth value (``if a == b``, ``x in list``) it means
    identity of the operands, or equal values of two constants, as TVM's ``EqualOp``."""

    def __bool__(self):
        return _same_value(self.a, self.b)


class NE(CmpOp):
    """``a != b``; its Python truth value is the negation of :class:`EQ`'s."""

    def __bool__(self):
        return not _same_value(self.a, self.b)


class LT(CmpOp):
    pass


class LE(CmpOp):
    pass


class GT(CmpOp):
    pass


class GE(CmpOp):
    pass


class And(CmpOp):
    pass


class Or(CmpOp):
    pass


@dataclass(frozen=True, eq=False)
class Not(PrimExpr):
    a: PrimExpr
    dtype: str = "bool"


@dataclass(frozen=True, eq=False)
class Select(PrimExpr):
    """``true_value if condition else false_value`` (both sides may be evaluated)."""

    condition: PrimExpr
    true_value: PrimExpr
    false_value: PrimExpr

    def __post_init__(self):
        # Python numbers are accepted as in TVM's tir.Select; a number next to an expression
        # takes its type.
        t, f = self.true_value, self.false_value
        if not isinstance(t, PrimExpr) and isinstance(f, PrimExpr):
            t = _operand(f, t)
        elif not isinstance(f, PrimExpr) and isinstance(t, PrimExpr):
            f = _operand(t, f)
        for name, value in (("condition", self.condition), ("true_value", t), ("false_value", f)):
            if not isinstance(value, PrimExpr):
                object.__setattr__(self, name, convert(value))
            elif value is not getattr(self, name):
                object.__setattr__(self, name, value)

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return self.true_value.dtype


@dataclass(frozen=True, eq=False)
class Call(PrimExpr):
    """A call of a builtin or extern function.

    ``op`` names the callee: TVM builtins use their TVM names (``tir.shift_right``,
    ``tir.shift_left``, ``tir.if_then_else``, ``tir.tvm_access_ptr``, ``tir.tvm_thread_context``,
    ``tir.type_annotation``), VTA intrinsics ``tir.vta.uop_push``, ``tir.vta.command_handle``,
    ``tir.vta.coproc_sync``, ``tir.vta.coproc_dep_push``, ``tir.vta.coproc_dep_pop``, and a
    C function call is ``tir.call_extern`` with the function name as the first argument (a
    :class:`StringImm`).
    """

    dtype: str
    op: str
    args: tuple = ()

    def __post_init__(self):
        if not isinstance(self.args, tuple):
            object.__setattr__(self, "args", tuple(self.args))


@dataclass(frozen=True, eq=False)
class Load(PrimExpr):
    """A flat load ``buffer_var[index]`` after StorageFlatten."""

    dtype: str
    buffer_var: Var
    index: PrimExpr


@dataclass(frozen=True, eq=False)
class BufferLoad(PrimExpr):
    """A multi-dimensional load ``buffer[indices]`` before StorageFlatten."""

    buffer: "Buffer"
    indices: tuple

    def __post_init__(self):
        if not isinstance(self.indices, tuple):
            object.__setattr__(self, "indices", tuple(self.indices))

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return self.buffer.dtype


@dataclass(frozen=True, eq=False)
class ProducerLoad(PrimExpr):
    """A read of a tensor-expression tensor ``producer[indices]`` (before buffers exist)."""

    producer: Any  # vta.te.Tensor
    indices: tuple

    def __post_init__(self):
        if not isinstance(self.indices, tuple):
            object.__setattr__(self, "indices", tuple(self.indices))

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return self.producer.dtype


@dataclass(frozen=True, eq=False)
class Let(PrimExpr):
    var: Var
    value: PrimExpr
    body: PrimExpr

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return self.body.dtype


@dataclass(frozen=True, eq=False)
class Ramp(PrimExpr):
    base: PrimExpr
    stride: PrimExpr
    lanes: int

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return self.base.dtype


@dataclass(frozen=True, eq=False)
class Broadcast(PrimExpr):
    value: PrimExpr
    lanes: int

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return self.value.dtype


# ------------------------------------------------------------------------------------ statements
class Stmt:
    """Base class of every statement."""

    __slots__ = ()
    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False)
class LetStmt(Stmt):
    var: Var
    value: PrimExpr
    body: Stmt


@dataclass(frozen=True, eq=False)
class AttrStmt(Stmt):
    """An annotation ``attr_key`` on ``node`` with ``value`` around ``body``.

    Keys used by the VTA flow: ``pragma_<name>`` (node = the loop IterVar or var),
    ``coproc_scope`` (value = queue id), ``coproc_uop_scope`` (value = StringImm
    ``VTAPushGEMMOp``/``VTAPushALUOp``), ``virtual_thread`` (node = thread IterVar, value =
    extent), ``storage_scope``, ``buffer_bind_scope``, ``compute_scope``.
    """

    node: Any
    attr_key: str
    value: PrimExpr
    body: Stmt


@dataclass(frozen=True, eq=False)
class AssertStmt(Stmt):
    condition: PrimExpr
    message: str
    body: Stmt


class ForKind:
    """Loop kinds (strings, as printed)."""

    SERIAL = "serial"
    PARALLEL = "parallel"
    VECTORIZED = "vectorized"
    UNROLLED = "unrolled"
    THREAD_BINDING = "thread_binding"


@dataclass(frozen=True, eq=False)
class For(Stmt):
    loop_var: Var
    min: PrimExpr
    extent: PrimExpr
    kind: str
    body: Stmt
    annotations: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class Store(Stmt):
    """A flat store ``buffer_var[index] = value`` after StorageFlatten."""

    buffer_var: Var
    value: PrimExpr
    index: PrimExpr


@dataclass(frozen=True, eq=False)
class BufferStore(Stmt):
    buffer: "Buffer"
    value: PrimExpr
    indices: tuple

    def __post_init__(self):
        if not isinstance(self.indices, tuple):
            object.__setattr__(self, "indices", tuple(self.indices))


@dataclass(frozen=True, eq=False)
class ProducerStore(Stmt):
    producer: Any  # vta.te.Tensor
    value: PrimExpr
    indices: tuple


@dataclass(frozen=True, eq=False)
class Range:
    """The half-open interval ``[min, min + extent)``."""

    min: PrimExpr
    extent: PrimExpr

    @staticmethod
    def from_min_extent(min_value, extent) -> "Range":
        return Range(convert(min_value), convert(extent))


@dataclass(frozen=True, eq=False)
class BufferRealize(Stmt):
    buffer: "Buffer"
    bounds: tuple  # of Range
    condition: PrimExpr
    body: Stmt


@dataclass(frozen=True, eq=False)
class ProducerRealize(Stmt):
    producer: Any
    bounds: tuple
    condition: PrimExpr
    body: Stmt
    storage_scope: str = ""


@dataclass(frozen=True, eq=False)
class Allocate(Stmt):
    """Storage for ``buffer_var`` (``dtype`` elements, ``extents``) in ``scope`` around ``body``."""

    buffer_var: Var
    dtype: str
    extents: tuple
    condition: PrimExpr
    body: Stmt
    scope: str = "global"


@dataclass(frozen=True, eq=False)
class SeqStmt(Stmt):
    seq: tuple

    def __post_init__(self):
        if not isinstance(self.seq, tuple):
            object.__setattr__(self, "seq", tuple(self.seq))


@dataclass(frozen=True, eq=False)
class IfThenElse(Stmt):
    condition: PrimExpr
    then_case: Stmt
    else_case: Stmt | None = None


@dataclass(frozen=True, eq=False)
class Evaluate(Stmt):
    value: PrimExpr


def seq(*stmts: Stmt | None) -> Stmt:
    """Flatten statements into one: nested SeqStmts are spliced, ``None`` and no-ops dropped."""
    flat: list[Stmt] = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, SeqStmt):
            flat.extend(s.seq)
        else:
            flat.append(s)
    if not flat:
        return Evaluate(IntImm(0))
    return flat[0] if len(flat) == 1 else SeqStmt(tuple(flat))


# ------------------------------------------------------------------------------------ buffers
@dataclass(frozen=True, eq=False)
class Buffer:
    """A typed view of memory: ``data`` (a handle Var), ``shape``, optional ``strides``.

    ``elem_offset`` is counted in elements; ``scope`` is the storage scope (``global`` or a VTA
    SRAM scope such as ``local.acc_buffer``); ``offset_factor`` and ``data_alignment`` constrain
    where tensorized regions may start.
    """

    data: Var
    dtype: str
    shape: tuple
    name: str
    strides: tuple = ()
    elem_offset: PrimExpr = field(default_factory=lambda: IntImm(0))
    scope: str = "global"
    data_alignment: int = 64
    offset_factor: int = 1

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(convert(s) for s in self.shape))
        object.__setattr__(self, "strides", tuple(convert(s) for s in self.strides))

    def __repr__(self) -> str:
        return f"Buffer({self.name})"

    def vload(self, indices: Sequence[Any]) -> BufferLoad:
        """Load ``self[indices]``."""
        return BufferLoad(self, tuple(convert(i) for i in indices))

    def vstore(self, indices: Sequence[Any], value: PrimExpr) -> BufferStore:
        """Store ``value`` at ``self[indices]``."""
        return BufferStore(self, convert(value), tuple(convert(i) for i in indices))

    def access_ptr(self, access_mask: str | int, ptr_type: str = "handle", content_lanes: int = 1,
                   offset: Any = 0, extent: Any = None) -> Call:
        """``tir.tvm_access_ptr(type_annotation(ptr_type), data, elem_offset + offset, extent, mask)``.

        ``access_mask`` is ``"r"``, ``"w"``, ``"rw"`` or the bit mask (1 read, 2 write).
        """
        if isinstance(access_mask, str):
            mask = (1 if "r" in access_mask else 0) | (2 if "w" in access_mask else 0)
        else:
            mask = int(access_mask)
        if extent is None:
            total: PrimExpr = IntImm(1)
            for s in self.shape:
                total = total * s if not isinstance(total, IntImm) or total.value != 1 else s
            extent = total
        return Call("handle", "tir.tvm_access_ptr", (
            Call(ptr_type, "tir.type_annotation", ()),
            self.data,
            self.elem_offset + convert(offset) if not (isinstance(offset, int) and offset == 0) else self.elem_offset,
            convert(extent),
            IntImm(mask),
        ))


#: Renders a PrimFunc as text. The printer depends on the nodes, never the other way round, so
#: :mod:`vta.tir.printer` installs its ``astext`` here when it is imported (``vta.tir`` imports it).
_text_printer: Callable[[Any], str] | None = None


def set_text_printer(printer: Callable[[Any], str]) -> None:
    """Make ``str(prim_func)`` use ``printer`` (called once, by :mod:`vta.tir.printer`)."""
    global _text_printer
    _text_printer = printer


# ------------------------------------------------------------------------------------ functions
@dataclass(frozen=True, eq=False)
class PrimFunc:
    """A function: parameters (handle Vars), body, and the buffer bound to each parameter."""

    params: tuple
    body: Stmt
    buffer_map: Mapping[Var, Buffer] = field(default_factory=dict)
    attrs: Mapping[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        if _text_printer is None:  # only when vta.tir.printer was never imported
            return repr(self)
        return _text_printer(self)

    def with_body(self, body: Stmt) -> "PrimFunc":
        """A copy with a new body (everything else shared)."""
        return PrimFunc(self.params, body, self.buffer_map, self.attrs)

    def with_attr(self, key: str, value: Any) -> "PrimFunc":
        """A copy with one attribute added or replaced."""
        attrs = dict(self.attrs)
        attrs[key] = value
        return PrimFunc(self.params, self.body, self.buffer_map, attrs)


Node = Union[PrimExpr, Stmt, Buffer, PrimFunc, Range]

"""``astext(node)``: stable, diffable text for TIR functions, statements and expressions.

The format follows TVM's v0.8 text printer in spirit::

    primfn my_vadd(A: handle, B: handle, C: handle) {
      buffer_map = {A: Buffer(A_1, int32, [1, 64, 1, 16]), ...}
      allocate(A_buf, int32, [1024]), storage_scope = local.acc_buffer {
        attr [i0] "pragma_dma_copy" = 1;
        for (i1, 0, 64) {
          A_buf[i1*16 + i3] = A_1[i1*16 + i3]
        }
        ...
      }
    }

``allocate``, ``attr``, ``let`` and ``realize`` put braces around a body that is a sequence;
otherwise they end with ``;`` and their single body follows at the same indentation (as TVM
v0.8 prints them). Loops and branches always use braces. Distinct variables that share
a name get suffixes ``_1``, ``_2``... in order of first appearance, so the text is the same from
run to run. Expressions are parenthesised by precedence only.
"""

from __future__ import annotations

from typing import Any

from . import nodes as n

__all__ = ["astext"]

_BIN = {
    n.Add: ("+", 4), n.Sub: ("-", 4), n.Mul: ("*", 5), n.Div: ("/", 5), n.Mod: ("%", 5),
    n.EQ: ("==", 3), n.NE: ("!=", 3), n.LT: ("<", 3), n.LE: ("<=", 3), n.GT: (">", 3), n.GE: (">=", 3),
    n.And: ("&&", 2), n.Or: ("||", 1),
}
_FUNC = {n.FloorDiv: "floordiv", n.FloorMod: "floormod", n.Min: "min", n.Max: "max"}
_ATOM = 9


class _Printer:
    def __init__(self):
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        self.lines: list[str] = []

    # ---------------------------------------------------------------- names
    def name(self, var: Any) -> str:
        key = id(var)
        if key not in self.names:
            base = var.name if isinstance(var, (n.Var, n.Buffer)) else str(var)
            cand, k = base, 0
            while cand in self.used:
                k += 1
                cand = f"{base}_{k}"
            self.used.add(cand)
            self.names[key] = cand
        return self.names[key]

    def node_name(self, node: Any) -> str:
        if isinstance(node, n.Var):
            return self.name(node)
        var = getattr(node, "var", None)
        if isinstance(var, n.Var):  # an IterVar
            return self.name(var)
        if isinstance(node, tuple):
            return "(" + ", ".join(self.node_name(x) for x in node) + ")"
        if isinstance(node, n.Buffer):
            return self.name(node.data)
        if hasattr(node, "name"):
            return str(node.name)
        return repr(node)

    # ---------------------------------------------------------------- expressions
    def expr(self, e: Any, parent: int = 0) -> str:
        text, prec = self._expr(e)
        return f"({text})" if prec < parent else text

    def _expr(self, e: Any) -> tuple[str, int]:
        if isinstance(e, n.IntImm):
            if e.dtype == "bool":
                return ("True" if e.value else "False"), _ATOM
            if e.dtype == "int32":
                return (str(e.value), _ATOM) if e.value >= 0 else (f"({e.value})", _ATOM)
            return f"{e.dtype}({e.value})", _ATOM
        if isinstance(e, n.FloatImm):
            return (repr(e.value) + ("f" if e.dtype == "float32" else "")), _ATOM
        if isinstance(e, n.StringImm):
            return '"' + e.value.replace("\\", "\\\\").replace('"', '\\"') + '"', _ATOM
        if isinstance(e, n.Var):
            return self.name(e), _ATOM
        if type(e) in _BIN:
            op, prec = _BIN[type(e)]
            return f"{self.expr(e.a, prec)} {op} {self.expr(e.b, prec + 1)}" if prec < 5 else \
                f"{self.expr(e.a, prec)}*{self.expr(e.b, prec + 1)}" if op == "*" else \
                f"{self.expr(e.a, prec)} {op} {self.expr(e.b, prec + 1)}", prec
        if type(e) in _FUNC:
            return f"{_FUNC[type(e)]}({self.expr(e.a)}, {self.expr(e.b)})", _ATOM
        if isinstance(e, n.Not):
            return f"!{self.expr(e.a, _ATOM)}", 8
        if isinstance(e, n.Cast):
            return f"{e.dtype}({self.expr(e.value)})", _ATOM
        if isinstance(e, n.Select):
            return f"select({self.expr(e.condition)}, {self.expr(e.true_value)}, {self.expr(e.false_value)})", _ATOM
        if isinstance(e, n.Load):
            return f"{self.name(e.buffer_var)}[{self.expr(e.index)}]", _ATOM
        if isinstance(e, n.BufferLoad):
            return f"{self.name(e.buffer.data)}[{', '.join(self.expr(i) for i in e.indices)}]", _ATOM
        if isinstance(e, n.ProducerLoad):
            return f"{e.producer.name}[{', '.join(self.expr(i) for i in e.indices)}]", _ATOM
        if isinstance(e, n.Let):
            return f"let {self.name(e.var)} = {self.expr(e.value)} in {self.expr(e.body)}", 0
        if isinstance(e, n.Ramp):
            return f"ramp({self.expr(e.base)}, {self.expr(e.stride)}, {e.lanes})", _ATOM
        if isinstance(e, n.Broadcast):
            return f"broadcast({self.expr(e.value)}, {e.lanes})", _ATOM
        if isinstance(e, n.Call):
            return self._call(e)
        if hasattr(e, "combiner"):  # te.Reduce
            axes = ", ".join(self.name(iv.var) for iv in e.axis)
            return f"reduce_{e.combiner}({self.expr(e.source)}, axis=[{axes}])", _ATOM
        return repr(e), _ATOM

    def _call(self, e: n.Call) -> tuple[str, int]:
        op = e.op
        if op == "tir.shift_right" and len(e.args) == 2:
            return f"{self.expr(e.args[0], 7)} >> {self.expr(e.args[1], 7)}", 6
        if op == "tir.shift_left" and len(e.args) == 2:
            return f"{self.expr(e.args[0], 7)} << {self.expr(e.args[1], 7)}", 6
        if op == "tir.type_annotation":
            return f"type_annotation({e.dtype})", _ATOM
        args = ", ".join(self.expr(a) if isinstance(a, n.PrimExpr) else self.node_name(a) for a in e.args)
        short = op[4:] if op.startswith("tir.") else op
        if op == "tir.call_extern" and e.args and isinstance(e.args[0], n.StringImm):
            rest = ", ".join(self.expr(a) for a in e.args[1:])
            return f"@{e.args[0].value}({rest})", _ATOM
        return f"{short}({args})", _ATOM

    # ---------------------------------------------------------------- statements
    def emit(self, indent: int, text: str) -> None:
        self.lines.append("  " * indent + text)

    def scoped(self, indent: int, head: str, body: Any) -> None:
        """A scoping statement: braces around a sequence, else ``head;`` and the body below."""
        if isinstance(body, n.SeqStmt):
            self.emit(indent, head + " {")
            self.stmt(body, indent + 1)
            self.emit(indent, "}")
        else:
            self.emit(indent, head + ";")
            self.stmt(body, indent)

    def stmt(self, s: Any, indent: int) -> None:
        if isinstance(s, n.SeqStmt):
            for x in s.seq:
                self.stmt(x, indent)
        elif isinstance(s, n.For):
            kind = "" if s.kind == n.ForKind.SERIAL else f"{s.kind} "
            self.emit(indent, f"{kind}for ({self.name(s.loop_var)}, {self.expr(s.min)}, {self.expr(s.extent)}) {{")
            self.stmt(s.body, indent + 1)
            self.emit(indent, "}")
        elif isinstance(s, n.AttrStmt):
            value = self.expr(s.value) if isinstance(s.value, n.PrimExpr) else repr(s.value)
            self.scoped(indent, f"attr [{self.node_name(s.node)}] \"{s.attr_key}\" = {value}", s.body)
        elif isinstance(s, n.Allocate):
            ext = ", ".join(self.expr(x) for x in s.extents)
            self.scoped(
                indent, f"allocate({self.name(s.buffer_var)}, {s.dtype}, [{ext}]), storage_scope = {s.scope}", s.body
            )
        elif isinstance(s, n.Store):
            self.emit(indent, f"{self.name(s.buffer_var)}[{self.expr(s.index)}] = {self.expr(s.value)}")
        elif isinstance(s, n.BufferStore):
            idx = ", ".join(self.expr(i) for i in s.indices)
            self.emit(indent, f"{self.name(s.buffer.data)}[{idx}] = {self.expr(s.value)}")
        elif isinstance(s, n.ProducerStore):
            idx = ", ".join(self.expr(i) for i in s.indices)
            self.emit(indent, f"{s.producer.name}[{idx}] = {self.expr(s.value)}")
        elif isinstance(s, (n.BufferRealize, n.ProducerRealize)):
            who = self.name(s.buffer.data) if isinstance(s, n.BufferRealize) else s.producer.name
            scope = s.buffer.scope if isinstance(s, n.BufferRealize) else s.storage_scope
            bounds = ", ".join(f"[{self.expr(r.min)}, {self.expr(r.extent)}]" for r in s.bounds)
            self.scoped(indent, f"realize({who}, [{bounds}]), storage_scope = {scope}", s.body)
        elif isinstance(s, n.IfThenElse):
            self.emit(indent, f"if ({self.expr(s.condition)}) {{")
            self.stmt(s.then_case, indent + 1)
            if s.else_case is not None:
                self.emit(indent, "} else {")
                self.stmt(s.else_case, indent + 1)
            self.emit(indent, "}")
        elif isinstance(s, n.LetStmt):
            self.scoped(indent, f"let {self.name(s.var)} = {self.expr(s.value)}", s.body)
        elif isinstance(s, n.AssertStmt):
            msg = s.message.replace('"', '\\"')
            self.scoped(indent, f"assert({self.expr(s.condition)}, \"{msg}\")", s.body)
        elif isinstance(s, n.Evaluate):
            self.emit(indent, self.expr(s.value))
        else:
            self.emit(indent, repr(s))

    def func(self, f: n.PrimFunc, name: str | None) -> None:
        name = name or f.attrs.get("global_symbol", "main")
        params = ", ".join(f"{self.name(p)}: {p.dtype}" for p in f.params)
        self.emit(0, f"primfn {name}({params}) {{")
        bufs = []
        for p in f.params:
            b = f.buffer_map.get(p)
            if b is not None:
                shape = ", ".join(self.expr(s) for s in b.shape)
                bufs.append(f"{self.name(p)}: Buffer({self.name(b.data)}, {b.dtype}, [{shape}])")
        if bufs:
            self.emit(1, "buffer_map = {" + ", ".join(bufs) + "}")
        if f.attrs:
            attrs = ", ".join(f"{k!r}: {v!r}" for k, v in sorted(f.attrs.items()))
            self.emit(1, "attrs = {" + attrs + "}")
        self.stmt(f.body, 1)
        self.emit(0, "}")


def astext(node: Any, name: str | None = None) -> str:
    """Text of a PrimFunc, statement or expression (see the module docstring).

    Parameters
    ----------
    node : PrimFunc, Stmt or PrimExpr
    name : str, optional
        Function name to print (default: its ``global_symbol``).

    Raises
    ------
    TypeError
        If ``node`` is not a TIR node.
    """
    p = _Printer()
    if isinstance(node, n.PrimFunc):
        p.func(node, name)
        return "\n".join(p.lines) + "\n"
    if isinstance(node, n.Stmt):
        p.stmt(node, 0)
        return "\n".join(p.lines) + "\n"
    if isinstance(node, n.PrimExpr):
        return p.expr(node)
    raise TypeError(f"astext expects a PrimFunc, Stmt or PrimExpr, got {type(node).__name__}")


n.set_text_printer(astext)

"""Emit the C source of a packed host function from a fully lowered PrimFunc.

The input is the function :func:`vta.lower` returns: flat TIR whose remaining statements are
host loops, calls of the VTA runtime (``tir.call_extern``, ``tir.vta.*``), uop-kernel scopes
(``coproc_uop_scope`` attributes) and, rarely, CPU loads and stores. The output follows the
classic TVM C ABI (reference tvm-vta-software.md 5.2-5.4):

* the entry ``int name(TVMValue* args, int* type_codes, int num_args, TVMValue* ret,
  int* ret_code, void* resource_handle)`` checks every argument (count, type code, ndim, dtype,
  shape, strides, byte_offset, device type 12, device id) and reports a failed check through
  ``TVMAPISetLastError`` and ``return -1``;
* each uop scope becomes a file-static handle, a static recording function and a closure of at
  most one ``int32`` passed to ``VTAPushGEMMOp``/``VTAPushALUOp`` with a return-code check;
* ``VTASynchronize``, ``VTADepPush`` and ``VTADepPop`` are checked the same way;
* an intermediate (global) array lives in VTA DRAM (``VTABufferAlloc``, so DMA can reach it)
  and is freed with ``VTABufferFree`` on every exit of its scope, error returns included;
* ``__tvm_main__`` is an exported ``const char[]`` naming the entry and ``__tvm_module_ctx`` a
  ``void*`` the loader may fill.
"""

from __future__ import annotations

import keyword
import re
from typing import Any

from ..tir import nodes as n
from ..tir.functor import StmtExprVisitor
from .common import CodegenError, c_string, ctype
from .packed_args import CHECK_ARRAY_C, CPU, EXT_DEV, arg_checks

__all__ = ["emit_c", "CodegenError"]

_C_KEYWORDS = set(keyword.kwlist) | {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
    "union", "unsigned", "void", "volatile", "while", "args", "type_codes", "num_args",
    "out_ret_value", "out_ret_tcode", "resource_handle", "main",
}

_PRELUDE = r"""#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "tvm_c_abi.h"
#include "vta_runtime.h"

__attribute__((weak)) void* __tvm_module_ctx = NULL;  /* weak: several objects may share one library */

static int vta_gen_fail(const char* fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  TVMAPISetLastError(msg);
  return -1;
}

static inline int64_t vta_gen_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static inline int64_t vta_gen_floormod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
"""


_BITWISE_C = {"tir.bitwise_and": "&", "tir.bitwise_or": "|", "tir.bitwise_xor": "^"}


class _FreeVars(StmtExprVisitor):
    """Variables used in a statement but not bound inside it (loop vars, lets)."""

    def __init__(self):
        self.bound: set[int] = set()
        self.used: dict[int, n.Var] = {}

    def visit_For(self, node: n.For):
        self.bound.add(id(node.loop_var))
        self.generic_visit(node)

    def visit_LetStmt(self, node: n.LetStmt):
        self.bound.add(id(node.var))
        self.generic_visit(node)

    def visit_Let(self, node: n.Let):
        self.bound.add(id(node.var))
        self.generic_visit(node)

    def visit_AttrStmt(self, node: n.AttrStmt):
        # The node of an attribute (an IterVar or a Var) is an annotation, not a use.
        self.visit(node.value)
        self.visit(node.body)

    def visit_Var(self, v: n.Var):
        self.used[id(v)] = v

    visit_SizeVar = visit_Var

    def free(self) -> list[n.Var]:
        return [v for k, v in self.used.items() if k not in self.bound]


class _Emitter:
    """Turn statements and expressions into C text; one instance per generated file."""

    def __init__(self, func_name: str, host_memory: bool = False):
        self.func_name = func_name
        # Where intermediate arrays live: VTA DRAM (reachable by DMA) or, for functions built
        # for the host CPU, the C heap.
        self.alloc_fn, self.free_fn = ("malloc", "free") if host_memory else ("VTABufferAlloc", "VTABufferFree")
        self.names: dict[int, str] = {}
        self.taken: set[str] = set()
        self.statics: list[str] = []  # file-level definitions (uop handles and init functions)
        self.uop_sites = 0
        self.uses_cmd = False
        self.live: list[str] = []  # DRAM arrays allocated by the enclosing scopes

    # ------------------------------------------------------------------ names
    def name_of(self, var: n.Var) -> str:
        key = id(var)
        if key in self.names:
            return self.names[key]
        base = re.sub(r"\W", "_", var.name) or "v"
        if base[0].isdigit():
            base = "v_" + base
        if base in _C_KEYWORDS or base.startswith("vta_gen") or base.startswith("__"):
            base = "v_" + base
        name, k = base, 1
        while name in self.taken:
            name = f"{base}_{k}"
            k += 1
        self.taken.add(name)
        self.names[key] = name
        return name

    # ------------------------------------------------------------------ expressions
    def expr(self, e: Any) -> str:
        method = getattr(self, "e_" + type(e).__name__, None)
        if method is None:
            raise CodegenError(f"the C host backend cannot emit the expression {type(e).__name__} ({e!r})")
        return method(e)

    def e_IntImm(self, e: n.IntImm) -> str:
        v = e.value
        if e.dtype == "bool":
            return "1" if v else "0"
        if e.dtype.startswith("uint"):
            return f"{v}u" if v <= 0xFFFFFFFF else f"{v}ull"
        if -(1 << 31) < v < (1 << 31):
            return str(v) if v >= 0 else f"({v})"
        if v == -(1 << 31):
            return "(-2147483647 - 1)"
        return f"({v}ll)"

    def e_FloatImm(self, e: n.FloatImm) -> str:
        return repr(float(e.value)) + ("f" if e.dtype == "float32" else "")

    def e_StringImm(self, e: n.StringImm) -> str:
        return c_string(e.value)

    def e_Var(self, e: n.Var) -> str:
        return self.name_of(e)

    e_SizeVar = e_Var

    def e_Cast(self, e: n.Cast) -> str:
        return f"(({ctype(e.dtype)})({self.expr(e.value)}))"

    def _bin(self, op: str, e: n.BinaryOp) -> str:
        return f"({self.expr(e.a)} {op} {self.expr(e.b)})"

    def e_Add(self, e):
        return self._bin("+", e)

    def e_Sub(self, e):
        return self._bin("-", e)

    def e_Mul(self, e):
        return self._bin("*", e)

    def e_Div(self, e):
        return self._bin("/", e)

    def e_Mod(self, e):
        return self._bin("%", e)

    def e_FloorDiv(self, e):
        return f"(({ctype(e.dtype)})vta_gen_floordiv({self.expr(e.a)}, {self.expr(e.b)}))"

    def e_FloorMod(self, e):
        return f"(({ctype(e.dtype)})vta_gen_floormod({self.expr(e.a)}, {self.expr(e.b)}))"

    def e_Min(self, e):
        a, b = self.expr(e.a), self.expr(e.b)
        return f"(({a}) < ({b}) ? ({a}) : ({b}))"

    def e_Max(self, e):
        a, b = self.expr(e.a), self.expr(e.b)
        return f"(({a}) > ({b}) ? ({a}) : ({b}))"

    def e_EQ(self, e):
        return self._bin("==", e)

    def e_NE(self, e):
        return self._bin("!=", e)

    def e_LT(self, e):
        return self._bin("<", e)

    def e_LE(self, e):
        return self._bin("<=", e)

    def e_GT(self, e):
        return self._bin(">", e)

    def e_GE(self, e):
        return self._bin(">=", e)

    def e_And(self, e):
        return self._bin("&&", e)

    def e_Or(self, e):
        return self._bin("||", e)

    def e_Not(self, e):
        return f"(!{self.expr(e.a)})"

    def e_Select(self, e: n.Select) -> str:
        return f"({self.expr(e.condition)} ? {self.expr(e.true_value)} : {self.expr(e.false_value)})"

    def e_Load(self, e: n.Load) -> str:
        return f"((({ctype(e.dtype)}*){self.name_of(e.buffer_var)})[{self.expr(e.index)}])"

    def e_Let(self, e: n.Let) -> str:
        raise CodegenError(f"the C host backend does not emit let-expressions (variable {e.var.name!r}); use LetStmt")

    def e_Call(self, e: n.Call) -> str:
        op, args = e.op, e.args
        if op == "tir.call_extern":
            if not args or not isinstance(args[0], n.StringImm):
                raise CodegenError("tir.call_extern needs the function name as a StringImm first argument, "
                                   f"got {args[:1]!r}")
            return f"{args[0].value}({', '.join(self.expr(a) for a in args[1:])})"
        if op == "tir.vta.command_handle":
            self.uses_cmd = True
            return "vta_gen_cmd"
        if op == "tir.tvm_thread_context":
            return self.expr(args[0])
        if op == "tir.vta.uop_push":
            if len(args) != 8:
                raise CodegenError(f"tir.vta.uop_push takes 8 arguments, got {len(args)}")
            return f"VTAUopPush({', '.join(self.expr(a) for a in args)})"
        if op == "tir.vta.coproc_dep_push":
            self.uses_cmd = True
            return f"VTADepPush(vta_gen_cmd, {self.expr(args[0])}, {self.expr(args[1])})"
        if op == "tir.vta.coproc_dep_pop":
            self.uses_cmd = True
            return f"VTADepPop(vta_gen_cmd, {self.expr(args[0])}, {self.expr(args[1])})"
        if op == "tir.vta.coproc_sync":
            self.uses_cmd = True
            return "VTASynchronize(vta_gen_cmd, 2147483648u)"
        if op == "tir.shift_right":
            return f"({self.expr(args[0])} >> {self.expr(args[1])})"
        if op == "tir.shift_left":
            return f"({self.expr(args[0])} << {self.expr(args[1])})"
        if op == "tir.if_then_else":
            return f"({self.expr(args[0])} ? {self.expr(args[1])} : {self.expr(args[2])})"
        if op in _BITWISE_C:
            # C promotes narrow operands to int; the cast brings the result back to the IR type.
            return f"(({ctype(e.dtype)})({self.expr(args[0])} {_BITWISE_C[op]} {self.expr(args[1])}))"
        if op == "tir.bitwise_not":
            return f"(({ctype(e.dtype)})(~{self.expr(args[0])}))"
        if op == "tir.likely":
            return f"__builtin_expect(!!({self.expr(args[0])}), 1)"
        if op == "tir.tvm_access_ptr":
            raise CodegenError(
                f"tvm_access_ptr on buffer {args[1]!r} survived lowering; SRAM pointers must be lowered "
                "to tile indices by LowerDeviceStorageAccessInfo"
            )
        raise CodegenError(f"the C host backend cannot emit a call of {op!r}")

    # ------------------------------------------------------------------ statements
    #: Calls returning an int status that the generated code must check.
    _CHECKED = {"tir.vta.coproc_sync", "tir.vta.coproc_dep_push", "tir.vta.coproc_dep_pop"}

    def stmt(self, s: Any, ind: int, out: list[str]) -> None:
        method = getattr(self, "s_" + type(s).__name__, None)
        if method is None:
            raise CodegenError(f"the C host backend cannot emit the statement {type(s).__name__}")
        method(s, ind, out)

    def s_SeqStmt(self, s: n.SeqStmt, ind: int, out: list[str]) -> None:
        for child in s.seq:
            self.stmt(child, ind, out)

    def s_Evaluate(self, s: n.Evaluate, ind: int, out: list[str]) -> None:
        pad = "  " * ind
        v = s.value
        if isinstance(v, (n.IntImm, n.FloatImm)):
            return
        if isinstance(v, n.Call) and v.op in self._CHECKED:
            out.append(f"{pad}if ({self.expr(v)} != 0) {self.fail_return()}")
            return
        out.append(f"{pad}(void)({self.expr(v)});" if not isinstance(v, n.Call) else f"{pad}{self.expr(v)};")

    def s_For(self, s: n.For, ind: int, out: list[str]) -> None:
        pad = "  " * ind
        var = self.name_of(s.loop_var)
        ct = ctype(s.loop_var.dtype)
        lo, ext = self.expr(s.min), self.expr(s.extent)
        out.append(f"{pad}for ({ct} {var} = {lo}; {var} < ({lo} + {ext}); ++{var}) {{")
        self.stmt(s.body, ind + 1, out)
        out.append(f"{pad}}}")

    def s_IfThenElse(self, s: n.IfThenElse, ind: int, out: list[str]) -> None:
        pad = "  " * ind
        out.append(f"{pad}if ({self.expr(s.condition)}) {{")
        self.stmt(s.then_case, ind + 1, out)
        if s.else_case is not None:
            out.append(f"{pad}}} else {{")
            self.stmt(s.else_case, ind + 1, out)
        out.append(f"{pad}}}")

    def s_LetStmt(self, s: n.LetStmt, ind: int, out: list[str]) -> None:
        pad = "  " * ind
        out.append(f"{pad}{{")
        out.append(f"{pad}  {ctype(s.var.dtype)} {self.name_of(s.var)} = {self.expr(s.value)};")
        self.stmt(s.body, ind + 1, out)
        out.append(f"{pad}}}")

    def s_Store(self, s: n.Store, ind: int, out: list[str]) -> None:
        pad = "  " * ind
        ct = ctype(s.value.dtype)
        out.append(f"{pad}(({ct}*){self.name_of(s.buffer_var)})[{self.expr(s.index)}] = {self.expr(s.value)};")

    def s_AssertStmt(self, s: n.AssertStmt, ind: int, out: list[str]) -> None:
        pad = "  " * ind
        out.append(f"{pad}if (!({self.expr(s.condition)})) {{ "
                   f"vta_gen_fail(\"%s\", {c_string(s.message)}); {self.fail_return()} }}")
        self.stmt(s.body, ind, out)

    def s_Allocate(self, s: n.Allocate, ind: int, out: list[str]) -> None:
        if s.scope not in ("global", ""):
            raise CodegenError(
                f"allocation {s.buffer_var.name!r} in scope {s.scope!r} reached the host backend; "
                "on-chip buffers must be removed by LowerDeviceStorageAccessInfo"
            )
        pad = "  " * ind
        count = 1
        for e in s.extents:
            if not isinstance(e, n.IntImm):
                raise CodegenError(f"host allocation {s.buffer_var.name!r} needs constant extents, got {e!r}")
            count *= e.value
        # bool is stored as int32_t (ctype); sub-byte integers are packed, several per byte
        bits = 32 if s.dtype == "bool" else n.dtype_bits(s.dtype)
        nbytes = -(-max(count, 1) * bits // 8)
        # Intermediate arrays live in VTA DRAM (the DMA may read or write them); the CPU reaches
        # them through VTABufferCPUPtr (CPUAccessRewrite). Freed on every exit of the scope.
        var = self.name_of(s.buffer_var)
        out.append(f"{pad}{{")
        where = "host memory" if self.free_fn == "free" else "VTA DRAM"
        out.append(f"{pad}  void* {var} = {self.alloc_fn}({nbytes});")
        out.append(f"{pad}  if ({var} == NULL) {{ vta_gen_fail(\"cannot allocate {nbytes} bytes of {where} for "
                   f"{s.buffer_var.name}\"); {self.fail_return()} }}")
        self.live.append(var)
        self.stmt(s.body, ind + 1, out)
        self.live.pop()
        out.append(f"{pad}  {self.free_fn}({var});")
        out.append(f"{pad}}}")

    def fail_return(self) -> str:
        """``return -1;`` after freeing the DRAM arrays allocated by the enclosing scopes."""
        frees = "".join(f"{self.free_fn}({v}); " for v in reversed(self.live))
        return f"{{ {frees}return -1; }}" if frees else "return -1;"

    def s_AttrStmt(self, s: n.AttrStmt, ind: int, out: list[str]) -> None:
        if s.attr_key == "coproc_uop_scope":
            self._uop_scope(s, ind, out)
        else:
            # coproc_scope, pragmas and other annotations carry no code of their own.
            self.stmt(s.body, ind, out)

    # ------------------------------------------------------------------ uop kernels
    def _uop_scope(self, s: n.AttrStmt, ind: int, out: list[str]) -> None:
        push = s.value.value if isinstance(s.value, n.StringImm) else None
        if push not in ("VTAPushGEMMOp", "VTAPushALUOp"):
            raise CodegenError(f"coproc_uop_scope value must be 'VTAPushGEMMOp' or 'VTAPushALUOp', got {s.value!r}")
        fv = _FreeVars()
        fv.visit(s.body)
        free = fv.free()
        if len(free) > 1 or any(v.dtype not in ("int32",) for v in free):
            desc = ", ".join(f"{v.name}: {v.dtype}" for v in free)
            raise CodegenError(
                f"a uop kernel may capture at most one int32 variable (the runtime keys kernels by it), "
                f"but this {push} kernel uses [{desc}]"
            )
        site = self.uop_sites
        self.uop_sites += 1
        handle, init = f"vta_gen_uop_handle_{site}", f"vta_gen_uop_init_{site}"
        # The recording function: its own name table for the captured variable.
        body: list[str] = []
        saved_cmd, saved_live = self.uses_cmd, self.live
        self.uses_cmd, self.live = False, []
        if free:
            body.append(f"  int32_t {self.name_of(free[0])} = ((int32_t*)closure)[0];")
        else:
            body.append("  (void)closure;")
        inner: list[str] = []
        self.stmt(s.body, 1, inner)
        if self.uses_cmd:
            body.append("  VTACommandHandle vta_gen_cmd = VTATLSCommandHandle();")
        body.extend(inner)
        self.uses_cmd, self.live = saved_cmd, saved_live
        self.statics.append(
            f"static void* {handle} = NULL;\n"
            f"static int {init}(void* closure) {{\n" + "\n".join(body) + "\n  return 0;\n}\n"
        )
        pad = "  " * ind
        if free:
            out.append(f"{pad}{{")
            out.append(f"{pad}  int32_t vta_gen_closure[1] = {{ {self.name_of(free[0])} }};")
            out.append(f"{pad}  if ({push}(&{handle}, {init}, vta_gen_closure, 4) != 0) {self.fail_return()}")
            out.append(f"{pad}}}")
        else:
            out.append(f"{pad}if ({push}(&{handle}, {init}, NULL, 0) != 0) {self.fail_return()}")


def emit_c(func: n.PrimFunc, name: str, device_type: int = EXT_DEV) -> str:
    """C source of the packed function ``name`` computing ``func``.

    Parameters
    ----------
    func : PrimFunc
        The lowered function (after the phase 0-3 pipeline, or, for a host function, after the
        generic passes only).
    name : str
        The exported symbol; must be a C identifier.
    device_type : int
        Where the array arguments live: :data:`EXT_DEV` (12, the default) for accelerator
        functions, :data:`CPU` (1) for functions built for the host; a host function keeps its
        intermediate arrays on the C heap instead of VTA DRAM.

    Returns
    -------
    str
        A complete C translation unit including ``tvm_c_abi.h`` and ``vta_runtime.h``.

    Raises
    ------
    CodegenError
        If ``name`` is not a C identifier, or the function holds a construct the backend does
        not emit (an SRAM allocation, a surviving ``tvm_access_ptr``, a uop kernel capturing
        more than one int32, a non-constant argument shape ...).
    """
    if (not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_]\w*", name) or name in _C_KEYWORDS
            or name.startswith("__")):
        raise CodegenError(f"function name {name!r} is not usable as a C symbol; use letters, digits and '_' "
                           "(not starting with a digit or '__')")
    if device_type not in (EXT_DEV, CPU):
        raise CodegenError(f"device_type must be {EXT_DEV} (ext_dev) or {CPU} (cpu), got {device_type!r}")
    em = _Emitter(name, host_memory=device_type == CPU)
    em.taken.add(name)
    checks = arg_checks(em, func, name, device_type)
    body: list[str] = []
    em.stmt(func.body, 1, body)
    lines = [f"/* Generated by vta.build for the entry {name!r}; do not edit. */", _PRELUDE]
    if any(func.buffer_map.get(p) is not None for p in func.params):
        lines.append(CHECK_ARRAY_C)
    lines.append(f"__attribute__((weak)) const char __tvm_main__[] = {c_string(name)};\n")
    lines.extend(em.statics)
    lines.append(
        f"int {name}(TVMValue* args, int* type_codes, int num_args, TVMValue* out_ret_value, "
        "int* out_ret_tcode, void* resource_handle) {"
    )
    lines.append("  (void)out_ret_value; (void)out_ret_tcode; (void)resource_handle;")
    lines.extend(checks)
    if em.uses_cmd:
        lines.append("  VTACommandHandle vta_gen_cmd = VTATLSCommandHandle();")
    lines.extend(body)
    lines.append("  return 0;")
    lines.append("}")
    return "\n".join(lines) + "\n"

"""Accelerator nodes -> compiled functions: Q's builders, one function per distinct operator.

:class:`AcceleratorBuilder` compiles each ``vta.*`` node with the builder of its registration
(:attr:`vta.graph.accel_ops.AccelOp.build`: :func:`vta.topi.qnn.build_qconv2d`, ...); nodes with
equal specs share one function. Distinct operators are built in parallel worker processes (``VTA_BUILD_JOBS``,
default: the CPU count, at most 4) and remembered in the cache directory (:mod:`vta.cache`,
``graph_ops``), keyed by the operator, its spec, the configuration, the function name and a
hash of the compiler's sources (and a tuned tiling, :mod:`vta.topi.dispatch`), so a rebuilt
network only compiles what changed.
:func:`node_arguments` says, for each argument of the function in call order, which graph value
feeds it or which packed constant it is.
"""

from __future__ import annotations

import functools
import json
import os
import pickle
import re
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import atomic
from ..cache import cache_dir, content_key
from ..env import Environment
from ..errors import GraphError
from .accel_ops import ACCEL_OPS, ACTIVATION_ROLES
from .ir import Node, Value

__all__ = ["AcceleratorBuilder", "CompiledOp", "node_arguments", "out_view_shape"]


@dataclass
class CompiledOp:
    """One compiled accelerator function: its module, its name and its arguments (ArgLayout)."""

    func_name: str
    module: Any
    layout: Any


def c_identifier(name: str) -> str:
    """``name`` made a valid C identifier (other characters become ``_``)."""
    s = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return s if s and not s[0].isdigit() else f"_{s}"


@functools.lru_cache(maxsize=1)
def _compiler_fingerprint() -> str:
    """A hash of every source file below the graph layer (what can change the generated code)."""
    root = Path(__file__).resolve().parent.parent
    skip = ("graph", "frontend", "tvm", "autotvm")
    files = sorted(p for p in root.rglob("*.py") if p.relative_to(root).parts[0] not in skip)
    return content_key([str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() for p in files])


def _build_job(op: str, spec: Any, name: str, cfg: dict, tiling: Any = None) -> tuple[str, Any]:
    """Build one operator (in a worker process): ``(C source, ArgLayout)``; the object file lands
    in the shared codegen cache. ``tiling``: a tuned tiling (:mod:`vta.topi.dispatch`) or None."""
    from ..env import Environment as Env
    from .accel_ops import ACCEL_OPS

    result = ACCEL_OPS[op].build(spec, name, Env(cfg), **({} if tiling is None else {"tiling": tiling}))
    if result is None:
        return "", None
    mod, layout = result
    return mod.source, layout


def build_jobs() -> int:
    """Worker processes for building operators: ``VTA_BUILD_JOBS`` or the CPU count (at most 4).

    Raises
    ------
    ValueError
        If ``VTA_BUILD_JOBS`` is not a positive integer.
    """
    text = os.environ.get("VTA_BUILD_JOBS")
    if text is None:
        return max(1, min(4, os.cpu_count() or 1))
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"VTA_BUILD_JOBS={text!r} must be a positive integer")
    return int(text)


class AcceleratorBuilder:
    """Compiles accelerator nodes, sharing a function between nodes of equal specs.

    Parameters
    ----------
    env : Environment
        The configuration to compile for.
    use_cache : bool
        Reuse and store built operators in the cache directory.
    """

    def __init__(self, env: Environment, use_cache: bool = True):
        self.env = env
        self.use_cache = use_cache
        self.compiled: dict[tuple, CompiledOp] = {}
        self.order: list[CompiledOp] = []
        self._names: set[str] = set()
        self._planned: dict[tuple, str] = {}
        self.cache_hits = 0

    # ------------------------------------------------------------------ names and the cache
    def _name_for(self, node: Node) -> str:
        key = (node.op, node.attrs["spec"])
        name = self._planned.get(key)
        if name is None:
            name = c_identifier(f"vta_{node.name}")
            while name in self._names:
                name += "_"
            self._names.add(name)
            self._planned[key] = name
        return name

    def _tiling(self, node: Node) -> Any:
        """The tuned tiling of ``node`` under the active tuning records, or None (default chooser)."""
        from ..topi.tuned import operator_tiling

        return operator_tiling(node.op, node.attrs["spec"], self.env)

    def _cache_file(self, op: str, spec: Any, name: str, tiling: Any = None) -> Path:
        # TARGET only picks the device the runtime drives; the generated code is the same
        cfg = json.dumps({k: v for k, v in self.env.cfg_dict.items() if k != "TARGET"}, sort_keys=True)
        parts = [op, pickle.dumps(spec), cfg, name, _compiler_fingerprint()]
        key = content_key(parts + ([repr(tiling)] if tiling is not None else []))
        return cache_dir("graph_ops") / f"{name}-{key}.pkl"

    def _load_cached(self, path: Path) -> tuple[str, Any] | None:
        """A cached ``(source, layout)``; None when absent (a damaged entry is rebuilt and replaced)."""
        if not self.use_cache or not path.is_file():
            return None
        try:
            source, layout = pickle.loads(path.read_bytes())
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError):
            path.unlink(missing_ok=True)
            return None
        return source, layout

    def _store(self, path: Path, source: str, layout: Any) -> None:
        if not self.use_cache:
            return
        atomic.write_bytes(path, pickle.dumps((source, layout)))

    def _finish(self, key: tuple, name: str, source: str, layout: Any) -> CompiledOp:
        from ..codegen.compile import compile_object
        from ..runtime.cmodule import CompiledCModule

        mod = CompiledCModule(source, compile_object(source, name), entry_name=name)
        op = CompiledOp(name, mod, layout)
        self.compiled[key] = op
        self.order.append(op)
        return op

    def prebuild(self, nodes: Iterable[Node], jobs: int | None = None) -> None:
        """Build every distinct operator of ``nodes`` not built yet, ``jobs`` at a time.

        Raises
        ------
        GraphError
            If a builder declines an operator.
        ScheduleError, BuildError
            From the builders.
        """
        todo: dict[tuple, tuple[Node, str, Path, Any]] = {}
        for node in nodes:
            key = (node.op, node.attrs["spec"])
            if key in self.compiled or key in todo:
                continue
            name = self._name_for(node)
            tiling = self._tiling(node)
            path = self._cache_file(node.op, node.attrs["spec"], name, tiling)
            cached = self._load_cached(path)
            if cached is not None:
                self.cache_hits += 1
                self._finish(key, name, *cached)
            else:
                todo[key] = (node, name, path, tiling)
        jobs = build_jobs() if jobs is None else jobs
        if jobs <= 1 or len(todo) <= 1:
            return  # built one by one by build()
        cfg = dict(self.env.cfg_dict)
        with ProcessPoolExecutor(max_workers=min(jobs, len(todo))) as pool:
            futures = {key: pool.submit(_build_job, node.op, key[1], name, cfg, tiling)
                       for key, (node, name, _, tiling) in todo.items()}
            for key, fut in futures.items():
                node, name, path, _ = todo[key]
                source, layout = fut.result()
                if layout is None:
                    raise GraphError(f"node {node.name!r} ({node.op}): the accelerator cannot run {key[1]!r}")
                self._store(path, source, layout)
                self._finish(key, name, source, layout)

    def build(self, node: Node) -> CompiledOp:
        """The compiled function of ``node`` (built on first use of its spec).

        Raises
        ------
        GraphError
            If ``node`` is not an accelerator operator or its builder declines it.
        ScheduleError, BuildError
            From the builders.
        """
        accel = ACCEL_OPS.get(node.op)
        if accel is None:
            raise GraphError(f"node {node.name!r}: {node.op!r} is not an accelerator operator")
        spec = node.attrs["spec"]
        key = (node.op, spec)
        done = self.compiled.get(key)
        if done is not None:
            return done
        name = self._name_for(node)
        tiling = self._tiling(node)
        path = self._cache_file(node.op, spec, name, tiling)
        cached = self._load_cached(path)
        if cached is not None:
            self.cache_hits += 1
            return self._finish(key, name, *cached)
        result = accel.build(spec, name, self.env, **({} if tiling is None else {"tiling": tiling}))
        if result is None:
            raise GraphError(f"node {node.name!r} ({node.op}): the accelerator cannot run {spec!r}")
        mod, layout = result
        self._store(path, mod.source, layout)
        return self._finish(key, name, mod.source, layout)

    def root_module(self) -> Any:
        """One module holding every compiled function: the first, with the others imported.

        Returns None when nothing was compiled.
        """
        if not self.order:
            return None
        root = self.order[0].module
        for op in self.order[1:]:
            root.import_module(op.module)
        return root


def _pack_bias(layout: Any, bias: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """The packed bias, with the zero-point border correction also for a 1x1 output.

    ``ArgLayout.pack("bias")`` adds ``z_in * sum(w over padded taps)`` only when the bias tensor
    has more than one output pixel; a convolution whose whole output is one pixel (ResNet-18's
    last stride-2 layers at small inputs) needs it too. When the packer left it out, it is added
    here (and not twice, should the packer learn it).
    """
    arr = layout.pack("bias", bias, weight=weight)
    spec = layout.spec
    if not (getattr(layout, "needs_border_map", False) and arr.ndim == 6 and arr.shape[2:4] == (1, 1)):
        return arr
    from ..topi.qnn_layout import border_correction

    corr = border_correction(weight, spec.input_zero_point, spec.strides, spec.padding, spec.height,
                             spec.width)[:, 0, 0]
    co = bias.shape[0]
    packed_vec = arr[0, :, 0, 0, 0, :].reshape(-1)[:co].astype(np.int64)
    if corr.any() and np.array_equal(packed_vec, bias.astype(np.int64)):
        arr = layout.pack("bias", bias.astype(np.int64) + corr, weight=weight)
    return arr


def out_view_shape(node: Node, layout: Any) -> tuple[int, ...] | None:
    """The shape in which the function writes the node's output memory, when it is not the
    output's own (same size and dtype: the executor passes a view), else None."""
    res = layout.arg("out")
    return None if tuple(res.shape) == node.output_type.shape else tuple(int(d) for d in res.shape)


def node_arguments(node: Node, layout: Any, params: dict[str, np.ndarray]) -> list[tuple[str, Any]]:
    """The function's arguments but ``out``, in call order: ``("value", Value)`` for run-time
    inputs, ``("param", (name, packed array))`` for constants.

    Raises
    ------
    GraphError
        If a role has no source in the node or a packed shape disagrees with the graph.
    """
    roles = ACCEL_OPS[node.op].roles
    sources: dict[str, Value] = {}
    consts: dict[str, np.ndarray] = {}
    for role, v in zip(roles, node.inputs, strict=False):  # a residual is optional
        if role in ACTIVATION_ROLES:
            sources[role] = v
        else:
            consts[role] = params[v.name]
    weight, bias = consts.get("weight"), consts.get("bias")
    out: list[tuple[str, Any]] = []
    for a in layout.args:
        if a.role == "out":
            continue
        if a.is_param:
            if a.role == "weight":
                arr = layout.pack("weight", weight)
            elif a.role == "bias":
                arr = _pack_bias(layout, bias, weight)
            else:
                arr = layout.pack(a.role)
            out.append(("param", (f"{node.name}.{a.role}", arr)))
            continue
        v = sources.get(a.role)
        if v is None:
            raise GraphError(f"node {node.name!r} ({node.op}): no input feeds the argument {a.name!r} ({a.role})")
        if tuple(v.type.shape) != tuple(a.shape) or v.type.dtype != a.dtype:
            raise GraphError(f"node {node.name!r} ({node.op}): input {v.name!r} is {v.type} but the function's "
                             f"{a.role} argument {a.name!r} is {a.dtype}{list(a.shape)}")
        out.append(("value", v))
    res = layout.arg("out")
    if tuple(res.shape) != node.output_type.shape and int(np.prod(res.shape)) == node.output_type.size \
            and res.dtype == node.output_type.dtype:
        return out   # the function writes the output's memory in another shape (out_view_shape)
    if tuple(res.shape) != node.output_type.shape or res.dtype != node.output_type.dtype:
        raise GraphError(f"node {node.name!r} ({node.op}): output typed {node.output_type} but the function writes "
                         f"{res.dtype}{list(res.shape)}")
    return out

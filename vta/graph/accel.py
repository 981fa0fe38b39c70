"""Accelerator nodes -> compiled functions: Q's builders, one function per distinct operator.

:class:`AcceleratorBuilder` compiles each ``vta.*`` node with :func:`vta.topi.qnn.build_qconv2d`
(and ``build_qdense``, ``build_qadd``, ``build_maxpool``); nodes with equal specs share one
function. :func:`node_arguments` says, for each argument of the function in call order, which
graph value feeds it or which packed constant it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..env import Environment
from ..errors import GraphError
from .ir import Node, Value

__all__ = ["AcceleratorBuilder", "CompiledOp", "node_arguments", "BUILDERS"]

#: The Q builder of each accelerator operator (names in :mod:`vta.topi.qnn`).
BUILDERS = {"vta.conv2d": "build_qconv2d", "vta.dense": "build_qdense", "vta.add": "build_qadd",
            "vta.max_pool2d": "build_maxpool"}


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


class AcceleratorBuilder:
    """Compiles accelerator nodes, sharing a function between nodes of equal specs.

    Parameters
    ----------
    env : Environment
        The configuration to compile for.
    """

    def __init__(self, env: Environment):
        self.env = env
        self.compiled: dict[tuple, CompiledOp] = {}
        self.order: list[CompiledOp] = []
        self._names: set[str] = set()

    def build(self, node: Node) -> CompiledOp:
        """The compiled function of ``node`` (built on first use of its spec).

        Raises
        ------
        GraphError
            If ``node`` is not an accelerator operator or its builder declines it.
        ScheduleError, BuildError
            From the builders.
        """
        from ..topi import qnn

        builder_name = BUILDERS.get(node.op)
        if builder_name is None:
            raise GraphError(f"node {node.name!r}: {node.op!r} is not an accelerator operator")
        spec = node.attrs["spec"]
        key = (node.op, spec)
        done = self.compiled.get(key)
        if done is not None:
            return done
        name = c_identifier(f"vta_{node.name}")
        while name in self._names:
            name += "_"
        self._names.add(name)
        result = getattr(qnn, builder_name)(spec, name, env=self.env)
        if result is None:
            raise GraphError(f"node {node.name!r} ({node.op}): the accelerator cannot run {spec!r}")
        mod, layout = result
        op = CompiledOp(name, mod, layout)
        self.compiled[key] = op
        self.order.append(op)
        return op

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


def node_arguments(node: Node, layout: Any, params: dict[str, np.ndarray]) -> list[tuple[str, Any]]:
    """The function's arguments but ``out``, in call order: ``("value", Value)`` for run-time
    inputs, ``("param", (name, packed array))`` for constants.

    Raises
    ------
    GraphError
        If a role has no source in the node or a packed shape disagrees with the graph.
    """
    ins = node.inputs
    weight = bias = None
    if node.op in ("vta.conv2d", "vta.dense"):
        weight = params[ins[1].name]
        bias = params[ins[2].name]
    sources: dict[str, Value] = {}
    if node.op in ("vta.conv2d", "vta.dense", "vta.max_pool2d"):
        sources["data"] = ins[0]
        if len(ins) > 3:
            sources["residual"] = ins[3]
    elif node.op == "vta.add":
        sources["lhs"], sources["rhs"] = ins[0], ins[1]
    out: list[tuple[str, Any]] = []
    for a in layout.args:
        if a.role == "out":
            continue
        if a.is_param:
            if a.role == "weight":
                arr = layout.pack("weight", weight)
            elif a.role == "bias":
                arr = layout.pack("bias", bias, weight=weight)
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
    if tuple(res.shape) != node.output_type.shape or res.dtype != node.output_type.dtype:
        raise GraphError(f"node {node.name!r} ({node.op}): output typed {node.output_type} but the function writes "
                         f"{res.dtype}{list(res.shape)}")
    return out

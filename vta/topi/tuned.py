"""Tuned tilings of whole graph operators: the fused ``vta.conv2d`` (plain or grouped) /
``vta.dense`` specs and the ALU-only ``vta.add`` / ``vta.multiply`` specs mapped to the workloads
the schedules tile, and looked up in the active tiling context (:mod:`vta.topi.dispatch`) under
the kinds ``"conv2d"``, ``"group_conv2d"`` (workload ``(per-group workload, groups)``),
``"dense"``, ``"add"`` and ``"multiply"``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..env import Environment
from ._traverse import classify, epilogue_inputs
from .dense import DENSE_TAG, dense_workload
from .dispatch import active, tuned_tiling
from .group_conv2d import GROUP_CONV2D_TAG, group_conv2d_workload
from .qnn_build import alu_workload, declare_qadd, declare_qconv2d, declare_qdense, qconv2d_workload

__all__ = ["operator_tiling", "qdense_workload", "qgroup_conv2d_workload", "workload_kind"]


def qdense_workload(spec: Any, env: Environment) -> Any:
    """The :class:`~vta.topi.tiling.DenseWorkload` that :func:`~vta.topi.schedule_dense_packed`
    tiles for the fused dense layer ``spec`` (epilogue inputs, extra tiles, ALU stages)."""
    with env:
        out, _ = declare_qdense(spec, env)
        graph = classify(out, DENSE_TAG, "qdense_workload")
        biases, residuals = epilogue_inputs(graph, spatial_dims=(0,))
        extra = sum(int(op.attrs.get("extra_tile", 0)) for op in graph.ewise if op.attrs)
        wl = dense_workload(graph.core, biases, residuals)
        return replace(wl, alu_stages=len(graph.ewise), residuals=wl.residuals + extra)


def qgroup_conv2d_workload(spec: Any, env: Environment) -> tuple:
    """``(workload of one group, groups)`` that :func:`~vta.topi.schedule_group_conv2d_packed`
    tiles for the fused grouped convolution ``spec`` (epilogue inputs and ALU stages included)."""
    from .conv2d import epilogue_workload

    with env:
        out, _ = declare_qconv2d(spec, env)
        graph = classify(out, GROUP_CONV2D_TAG, "qgroup_conv2d_workload")
        wl, groups = group_conv2d_workload(graph.core)
        return epilogue_workload(graph, wl), groups


def workload_kind(op: str, spec: Any, env: Environment) -> tuple[str, Any] | None:
    """``(kind, workload)`` of a graph operator whose tiling can be tuned, or None for the others."""
    if op == "vta.conv2d":
        if getattr(spec, "groups", 1) > 1:
            return "group_conv2d", qgroup_conv2d_workload(spec, env)
        return "conv2d", qconv2d_workload(spec, env)
    if op == "vta.dense":
        return "dense", qdense_workload(spec, env)
    if op == "vta.add":
        return "add", alu_workload("add", spec, declare_qadd, env)
    if op == "vta.multiply":
        from .qnn_mul import declare_qmul

        return "multiply", alu_workload("multiply", spec, declare_qmul, env)
    return None


def operator_tiling(op: str, spec: Any, env: Environment) -> Any:
    """The tuned tiling of a graph operator (``"vta.conv2d"``, ``"vta.dense"``, ``"vta.add"`` or
    ``"vta.multiply"`` with its spec) under the active context, or None (no context, another
    operator, or no record)."""
    if active() is None:
        return None
    found = workload_kind(op, spec, env)
    return None if found is None else tuned_tiling(found[0], env, found[1])

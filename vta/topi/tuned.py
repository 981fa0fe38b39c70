"""Tuned tilings of whole graph operators: the fused ``vta.conv2d`` / ``vta.dense`` specs mapped to
the workloads the schedules tile, and looked up in the active tiling context
(:mod:`vta.topi.dispatch`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..env import Environment
from ._traverse import classify, epilogue_inputs
from .dense import DENSE_TAG, dense_workload
from .dispatch import active, tuned_tiling
from .qnn_build import declare_qdense, qconv2d_workload

__all__ = ["operator_tiling", "qdense_workload"]


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


def operator_tiling(op: str, spec: Any, env: Environment) -> Any:
    """The tuned tiling of a graph operator (``"vta.conv2d"`` or ``"vta.dense"`` with its fused
    spec) under the active context, or None (no context, another operator, or no record)."""
    if active() is None:
        return None
    if op == "vta.conv2d":
        return tuned_tiling("conv2d", env, qconv2d_workload(spec, env))
    if op == "vta.dense":
        return tuned_tiling("dense", env, qdense_workload(spec, env))
    return None

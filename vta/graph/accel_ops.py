"""The accelerator operators: one registration each, read by every graph pass.

An :class:`AccelOp` says everything the graph layer needs to know about one fused accelerator
operator (``vta.conv2d``, ``vta.dense``, ...):

==================  ==========================================================================
field               read by
==================  ==========================================================================
``sources``         FuseAccelerator: the graph operators a fusable chain starts from
``match``           FuseAccelerator, PlaceDevices: the chain matcher (or the reason it fails)
``gemm``            FuseAccelerator: a GEMM core (weights, bias, requantization; padding cost)
``pad``             PadChannels: the spec and constants with channels padded to the blocks
``layout``          PackLayout: the base of the packed layout (``NCHW`` or ``NC``)
``roles``           PackLayout (activation inputs), lowering (which input feeds which argument)
``build``           lowering: compiles the spec (:mod:`vta.topi.qnn`)
``macs``            :func:`vta.graph.mac_share`, reports: multiply-accumulates of the spec
``opdef``           shape inference (:func:`vta.graph.opdefs.infer_type`)
==================  ==========================================================================

Adding an accelerator operator is one entry of :data:`ACCEL_OPS` (plus its matcher, its
fusion in :class:`~vta.graph.passes.FuseAccelerator` keyed by ``kind``, and its builder);
``tests/graph/test_accel_ops.py`` checks that every pass handles every entry and that no pass
names an operator outside it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..env import Environment
from ..errors import GraphError
from .accel_match import (match_add, match_avg_pool, match_core, match_max_pool, match_minmax, match_mul,
                          match_upsampling)
from .infer import (_POOL, OpDef, infer_vta_avg_pool, infer_vta_conv2d, infer_vta_dense, infer_vta_multiply,
                    infer_vta_pool, infer_vta_same, infer_vta_upsampling)

__all__ = ["ACCEL_OPS", "ACTIVATION_ROLES", "AccelOp", "accel_op", "round_up"]

#: The argument roles that are run-time activations (the others are constants).
ACTIVATION_ROLES = ("data", "residual", "lhs", "rhs")


def round_up(n: int, block: int) -> int:
    """``n`` rounded up to a multiple of ``block``."""
    return -(-int(n) // block) * block


def _pad_axis(a: np.ndarray, axis: int, size: int, value: int = 0) -> np.ndarray:
    extra = size - a.shape[axis]
    if not extra:
        return a
    widths = [(0, 0)] * a.ndim
    widths[axis] = (0, extra)
    return np.pad(a, widths, constant_values=value)


def _pad_requant(rq, channels: int):
    if not rq.per_channel or rq.channels == channels:
        return rq
    return dataclasses.replace(rq, multiplier=_pad_axis(rq.multiplier, 0, channels, 0),
                               shift=_pad_axis(rq.shift, 0, channels, 1))


def _pad_gemm(spec: Any, consts: Mapping[str, np.ndarray], env: Environment) -> tuple[Any, dict[str, np.ndarray]]:
    """A GEMM core: input channels up to BLOCK_IN, output channels up to BLOCK_OUT; zero weight
    rows/columns, zero bias, per-channel multipliers zero (shift 1) in the padded outputs. A
    folded convolution's channels are ``C * KW`` after folding; the packing pads those."""
    conv = hasattr(spec, "in_channels")
    cin = spec.in_channels if conv else spec.in_features
    cout = spec.out_channels if conv else spec.out_features
    folds = conv and getattr(spec, "fold_width", False)
    pin, pout = (cin if folds else round_up(cin, env.BLOCK_IN)), round_up(cout, env.BLOCK_OUT)
    if (pin, pout) == (cin, cout):
        return spec, {}
    groups = getattr(spec, "groups", 1)
    if groups > 1:
        raise GraphError(f"a grouped convolution ({groups} groups) of {cin}->{cout} channels must come in whole "
                         f"blocks of {env.BLOCK_IN}/{env.BLOCK_OUT} (vta.topi.qnn_group)")
    w = _pad_axis(_pad_axis(consts["weight"], 0, pout), 1, pin)
    b = _pad_axis(consts["bias"], 0, pout)
    sizes = dict(in_channels=pin, out_channels=pout) if conv else dict(in_features=pin, out_features=pout)
    return dataclasses.replace(spec, requant=_pad_requant(spec.requant, pout), **sizes), {"weight": w, "bias": b}


def _pad_elementwise(spec: Any, consts: Mapping[str, np.ndarray], env: Environment) -> tuple[Any, dict]:
    """An element-wise operator: its channel count up to BLOCK_IN (no constants)."""
    del consts
    if spec.channels % env.BLOCK_IN == 0:
        return spec, {}
    return dataclasses.replace(spec, channels=round_up(spec.channels, env.BLOCK_IN)), {}


def _build_qconv2d(spec, name, env, **kw):
    from ..topi.qnn import build_qconv2d
    return build_qconv2d(spec, name, env=env, **kw)


def _build_qdense(spec, name, env, **kw):
    from ..topi.qnn import build_qdense
    return build_qdense(spec, name, env=env, **kw)


def _build_qadd(spec, name, env, **kw):
    from ..topi.qnn import build_qadd
    return build_qadd(spec, name, env=env, **kw)


def _build_qmul(spec, name, env, **kw):
    from ..topi.qnn_mul import build_qmul
    return build_qmul(spec, name, env=env, **kw)


def _build_maxpool(spec, name, env, **kw):
    from ..topi.qnn import build_maxpool
    return build_maxpool(spec, name, env=env, **kw)


def _build_avgpool(spec, name, env, **kw):
    from ..topi.qnn_avgpool import build_avgpool
    return build_avgpool(spec, name, env=env, **kw)


def _build_upsampling(spec, name, env, **kw):
    from ..topi.qnn_upsampling import build_upsampling
    return build_upsampling(spec, name, env=env, **kw)


def _build_qminmax(spec, name, env, **kw):
    from ..topi.qnn_minmax import build_qminmax
    return build_qminmax(spec, name, env=env, **kw)


def _no_macs(spec: Any) -> int:
    del spec
    return 0


@dataclass(frozen=True)
class AccelOp:
    """One fused accelerator operator (module docstring: which pass reads which field).

    Parameters
    ----------
    name : str
        The graph operator (``"vta.conv2d"``).
    kind : str
        The fusion chain kind and :class:`~vta.topi.qnn.ArgLayout` kind (``"conv2d"``).
    sources : tuple of str
        The graph operators a fusable chain starts from.
    match : callable
        ``(Matcher, Node, claimed) -> (Chain or None, reason)``.
    gemm : bool
        A GEMM core with constant weights and bias followed by a requantization.
    roles : tuple of str
        The function argument role fed by each input position (``data``, ``weight``, ...).
    layout : str
        ``"NCHW"`` or ``"NC"``: the packed layout is ``{layout}{BATCH}n{BLOCK}c``.
    pad : callable
        ``(spec, {role: constant}, env) -> (spec, {role: padded constant})``; the same spec
        object and no constants when nothing changes.
    build : callable
        ``(spec, name, env) -> (Module, ArgLayout)`` or None when the accelerator declines.
    macs : callable
        ``spec -> int``: multiply-accumulates of the spec.
    opdef : OpDef
        Default attributes, arity and shape inference.
    """

    name: str
    kind: str
    sources: tuple[str, ...]
    match: Callable
    gemm: bool
    roles: tuple[str, ...]
    layout: str
    pad: Callable
    build: Callable
    macs: Callable[[Any], int]
    opdef: OpDef

    @property
    def activation_inputs(self) -> tuple[int, ...]:
        """Positions of the inputs that are run-time activations (packed by PackLayout)."""
        return tuple(i for i, r in enumerate(self.roles) if r in ACTIVATION_ROLES)


_OUT = {"out_scale": None, "out_zero_point": None, "out_axis": None, "channels": None, "macs": None}


def _entries() -> dict[str, AccelOp]:
    ops = [
        AccelOp("vta.conv2d", "conv2d", ("qnn.conv2d",), match_core, True, ("data", "weight", "bias", "residual"),
                "NCHW", _pad_gemm, _build_qconv2d, lambda s: s.macs,
                OpDef({"spec": None, "layout": "NCHW", **_OUT}, (3, 4), infer_vta_conv2d)),
        AccelOp("vta.dense", "dense", ("qnn.dense",), match_core, True, ("data", "weight", "bias", "residual"),
                "NC", _pad_gemm, _build_qdense, lambda s: s.macs,
                OpDef({"spec": None, "layout": "NC", **_OUT}, (3, 4), infer_vta_dense)),
        AccelOp("vta.add", "add", ("qnn.add",), match_add, False, ("lhs", "rhs"), "NCHW", _pad_elementwise,
                _build_qadd, _no_macs, OpDef({"spec": None, "layout": "NCHW", **_OUT}, 2, infer_vta_same)),
        AccelOp("vta.multiply", "multiply", ("qnn.mul",), match_mul, False, ("lhs", "rhs"), "NCHW",
                _pad_elementwise, _build_qmul, _no_macs, OpDef({"spec": None, "layout": "NCHW", **_OUT}, 2,
                                                               infer_vta_multiply)),
        AccelOp("vta.max_pool2d", "max_pool2d", ("nn.max_pool2d",), match_max_pool, False, ("data",), "NCHW",
                _pad_elementwise, _build_maxpool, _no_macs,
                OpDef({**_POOL, "spec": None, **_OUT}, 1, infer_vta_pool)),
        AccelOp("vta.avg_pool2d", "avg_pool2d", ("qnn.avg_pool2d", "qnn.global_avg_pool2d"), match_avg_pool, False,
                ("data",), "NCHW", _pad_elementwise, _build_avgpool, _no_macs,
                OpDef({**_POOL, "spec": None, **_OUT}, 1, infer_vta_avg_pool)),
        AccelOp("vta.minmax", "minmax", ("qnn.maximum", "qnn.minimum"), match_minmax, False, ("lhs", "rhs"), "NCHW",
                _pad_elementwise, _build_qminmax, _no_macs,
                OpDef({"spec": None, "layout": "NCHW", **_OUT}, 2, infer_vta_same)),
        AccelOp("vta.upsampling", "upsampling", ("nn.upsampling",), match_upsampling, False, ("data",), "NCHW",
                _pad_elementwise, _build_upsampling, _no_macs,
                OpDef({"scale_h": 1, "scale_w": 1, "spec": None, "layout": "NCHW", **_OUT}, 1, infer_vta_upsampling)),
    ]
    return {op.name: op for op in ops}


#: Every accelerator operator by name.
ACCEL_OPS: Mapping[str, AccelOp] = _entries()


def accel_op(op: str) -> AccelOp | None:
    """The registration of the graph operator ``op`` (None when it is no accelerator operator)."""
    return ACCEL_OPS.get(op)

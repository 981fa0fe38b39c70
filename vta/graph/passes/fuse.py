"""FuseAccelerator: quantized chains -> one fused accelerator operator each.

``qnn.conv2d``/``qnn.dense`` + ``nn.bias_add`` + ``qnn.requantize`` [+ ``qnn.add`` residual]
[+ ``nn.relu``/``clip``] becomes ``vta.conv2d``/``vta.dense`` carrying a Q spec
(:class:`vta.topi.qnn.QConv2DSpec`); a standalone ``qnn.add`` becomes ``vta.add``, a ``qnn.mul``
``vta.multiply``, an 8-bit ``nn.max_pool2d`` ``vta.max_pool2d``, a ``qnn.avg_pool2d`` or
``qnn.global_avg_pool2d`` ``vta.avg_pool2d``, an 8-bit ``nn.upsampling`` ``vta.upsampling``, a
``qnn.maximum``/``qnn.minimum`` ``vta.minmax`` (the
registrations of :mod:`vta.graph.accel_ops` say which graph operator starts which chain). On the
way:

* a grouped or depthwise convolution gets groups of whole channel blocks with block-diagonal
  weights (:mod:`vta.topi.qnn_group`; zero groups fill the last block, its reason says so);
* ``-z_in * sum(w)`` is folded into the bias (padded pixels take ``z_in``, so the whole kernel
  sum is right at the borders too);
* uint8 tensors are moved to the int8 domain of the accelerator (``v - 128``, zero point - 128)
  by ``vta.to_int8`` at the region entry and back by ``vta.to_uint8`` after it; uint8 weights
  with zero point 128 become int8 weights with zero point 0;
* relu/clip bounds are folded into the spec's clip;
* with a residual, the layer's own int8 result is rounded and saturated as in the unfused graph
  (Q's ``IntermediateSpec``) and rescaled to the add's output scale, the residual by its own
  per-tensor multiplier: the fusion gives the bits of the unfused graph;
* the requantization gets a pre-shift when the layer's worst accumulator (``255 * sum|w| +
  |bias|``) can pass 23 bits, so that ``acc * m`` stays inside int32;
* every sum of two tensors (a standalone add, a residual) is compared with onnxruntime's on all
  65,536 input pairs (:func:`sum_problem`): where the fixed-point sum differs, the integer form
  fitted to onnxruntime's table takes its place (``QAddSpec.fit``, ``IntermediateSpec.fit``), or
  the add stays on the CPU (onnxruntime's table) when there is none.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...env import Environment, get_env
from ...errors import GraphError
from ..accel_match import Chain, Matcher, avg_pool_spec
from ...topi.qnn_group import accel_grouping, expand_group_weight
from ..accel_ops import ACCEL_OPS, AccelOp, _pad_axis, _pad_requant
from ..ort_tables import int8_offset
from ..ir import Graph, Node, Value
from ._rewrite import Rewriter
from .accumulator_bits import worst_accumulator_bits

__all__ = ["FUSED_KINDS", "FuseAccelerator", "chain_plans", "fold_clip"]

#: The accelerator operator that each graph operator may start a chain of.
_BY_SOURCE: dict[str, AccelOp] = {src: op for op in ACCEL_OPS.values() for src in op.sources}
#: The accelerator operator of each chain kind.
_BY_KIND: dict[str, AccelOp] = {op.kind: op for op in ACCEL_OPS.values()}


def _dtype_range(dtype: str) -> tuple[int, int]:
    info = np.iinfo(np.dtype(dtype))
    return int(info.min), int(info.max)


def fold_clip(activations: list[Node], dtype: str) -> tuple[int, int]:
    """The ``(lo, hi)`` of the output dtype narrowed by each relu/clip (in that dtype's domain)."""
    lo, hi = _dtype_range(dtype)
    for act in activations:
        if act.op == "nn.relu":
            lo = max(lo, 0)
        else:
            lo = max(lo, int(np.ceil(act.attrs["a_min"])))
            hi = min(hi, int(np.floor(act.attrs["a_max"])))
    return lo, max(lo, hi)


def _sum_operand_types(add: Node) -> tuple[tuple, tuple, tuple]:
    """``(dtype, scale, zero_point)`` of a ``qnn.add``'s left and right operands and output."""
    a = add.attrs
    sides = tuple((v.type.dtype, float(_scale(a[f"{side}_scale"])[0]), int(a[f"{side}_zero_point"]))
                  for v, side in zip(add.inputs, ("lhs", "rhs"), strict=True))
    return (*sides, (add.output_type.dtype, float(_scale(a["output_scale"])[0]), int(a["output_zero_point"])))


def sum_problem(add: Node, spec) -> str | None:
    """Why the accelerator's sum ``spec`` (a :class:`~vta.topi.qnn.QAddSpec` in the int8 domain,
    ``lhs`` the add's first input; its sizes and clip are not read) of the ``qnn.add`` node
    ``add`` cannot stand for onnxruntime's: the count of the 65,536 input pairs on which
    :func:`~vta.topi.qnn.qadd_np` (what ``vta.add`` and a fused residual compute) differs from
    onnxruntime's QDQ sum (:func:`vta.graph.ort_tables.sum_mismatches`). None when they agree on
    every pair, and when onnxruntime is not installed (nothing to compare with: the fixed-point
    sum stays)."""
    from ...topi.qnn import INT8_RANGE, qadd_np
    from ..ort_tables import available, sum_mismatches

    if not available():
        return None
    *sides, out = _sum_operand_types(add)
    out_dtype = out[0]
    grid = dataclasses.replace(spec, batch=1, channels=256, height=256, width=1, clip=INT8_RANGE)
    offsets = [int8_offset(dt) for dt, _, _ in sides]

    def ours(ga, gb):
        y = qadd_np(grid, (ga + offsets[0]).reshape(grid.out_shape), (gb + offsets[1]).reshape(grid.out_shape))
        return y.astype(np.int64).reshape(ga.shape) - int8_offset(out_dtype)

    n = sum_mismatches(*sides, out, ours)
    if n == 0:
        return None
    return (f"the accelerator's fixed-point sum differs from onnxruntime's on {n} of the 65536 input pairs: "
            "onnxruntime's sum on the CPU")


def _core_macs(core: Node) -> int:
    """Multiply-accumulates of a ``qnn.conv2d``/``qnn.dense`` node (its logical sizes)."""
    w = core.inputs[1].type.shape
    return int(core.output_type.size * int(np.prod(w[1:])))


def _scale(v) -> np.ndarray:
    return np.asarray(v, dtype=np.float64).reshape(-1)


def chain_plans(graph: Graph, env: Environment,
                pad_limit: float | None = None) -> tuple[dict[str, Chain], dict[str, str]]:
    """The chains to fuse (by the name of their last node) and, for every node left out, why."""
    m = Matcher(graph, env, frozenset(_BY_SOURCE))
    plans: dict[str, Chain] = {}
    reasons: dict[str, str] = {}
    claimed: set[str] = set()
    for node in graph.nodes:
        if node.name in claimed:
            continue
        op = _BY_SOURCE.get(node.op)
        if op is None:
            continue
        chain, reason = op.match(m, node, claimed)
        if chain is not None and op.gemm:
            reason = _spec_problem(chain) or _padding_problem(chain, env, pad_limit) or reason
            if reason != "supported":
                chain = None
        if chain is None:
            reasons[node.name] = reason
            continue
        if any(n.name in claimed for n in chain.nodes):
            reasons[node.name] = "its chain overlaps another fused operator"
            continue
        claimed.update(n.name for n in chain.nodes)
        plans[chain.last.name] = chain
    return plans, reasons


def _padding_problem(chain: Chain, env: Environment, pad_limit: float | None) -> str | None:
    """A reason to keep the layer on the CPU when channel padding costs more than ``pad_limit``."""
    if pad_limit is None:
        return None
    x, w = chain.core.inputs
    cin, cout = x.type.shape[1], w.type.shape[0]
    pin, pout = -(-cin // env.BLOCK_IN) * env.BLOCK_IN, -(-cout // env.BLOCK_OUT) * env.BLOCK_OUT
    cost = (pin * pout) / (cin * cout)
    if cost > pad_limit:
        return (f"channels {cin}->{cout} padded to {pin}->{pout} would cost {cost:.1f}x the MACs "
                f"(more than pad_limit={pad_limit:g}): on the CPU")
    return None


def _spec_problem(chain: Chain) -> str | None:
    """A reason the multipliers cannot be represented (Q's Requant), or None."""
    try:
        _requant_scales(chain)
    except ValueError as exc:
        return f"requantization not representable: {exc}"
    return None


def _requant_scales(chain: Chain):
    from ...topi.qnn import Requant

    rq = chain.requant
    if chain.add is not None:
        a = chain.add.attrs
        out_scale = _scale(a["output_scale"])
        Requant.from_scale(_scale(a["rhs_scale"]) / out_scale)
        Requant.from_scale(_scale(a["lhs_scale"]) / out_scale)
        mine = "lhs" if chain.add.inputs[0] == rq.output else "rhs"
        if int(a[f"{mine}_zero_point"]) != int(rq.attrs["output_zero_point"]):
            raise ValueError("the add's zero point of the layer's result differs from the requantize's")
    return Requant.from_scale(_scale(rq.attrs["input_scale"]) / _scale(rq.attrs["output_scale"]))


class FuseAccelerator:
    """Fuse quantized chains into ``vta.*`` operators (module docstring).

    Parameters
    ----------
    env : Environment, optional
        The configuration (BATCH decides what fits); the current one by default.
    requant_mode : {"fixed", "wide", "pow2"}
        The multiplier form of every requantization (``fixed``, default: 15 bits; ``wide``: up to
        24 bits where the accumulator bound allows; ``pow2``: upstream's shift-only scheme).
    """

    name = "FuseAccelerator"

    def __init__(self, env: Environment | None = None, requant_mode: str = "fixed",
                 pad_limit: float | None = None, residual_rounding: str = "intermediate",
                 fold_first_layer: bool = True):
        if residual_rounding not in ("intermediate", "direct"):
            raise ValueError(f"residual_rounding must be 'intermediate' or 'direct', got {residual_rounding!r}")
        self.residual_rounding = residual_rounding
        self.fold_first_layer = fold_first_layer
        self.env = env
        self.requant_mode = requant_mode
        self.pad_limit = pad_limit
        #: Why each matchable node of the last graph was not fused, and how a grouped convolution
        #: runs (node name -> reason or note).
        self.reasons: dict[str, str] = {}

    def __call__(self, graph: Graph) -> Graph:
        env = self.env or get_env()
        plans, reasons = chain_plans(graph, env, self.pad_limit)
        self.reasons.clear()
        self.reasons.update(reasons)
        plans = self._exact_sums(plans)
        absorbed = {n.name for c in plans.values() for n in c.nodes[:-1]}
        rw = Rewriter(graph)
        self._int8_cache: dict[str, Value] = {}
        self._int8_of_uint8: dict[str, Value] = {}
        self._accel_values: set[str] = set()
        for node in graph.nodes:
            if node.name in absorbed:
                continue
            chain = plans.get(node.name)
            if chain is None:
                if not self._concat_in_int8(rw, node, env):
                    rw.keep(node)
                continue
            out = self._fuse(rw, chain)
            rw.subst[node.name] = out
            self._accel_values.update(n.name for n in rw.nodes[-3:] if n.op in ACCEL_OPS)
        return rw.finish()

    # ------------------------------------------------------------------ helpers
    def _concat_in_int8(self, rw: Rewriter, node: Node, env: Environment) -> bool:
        """A channel concatenation of accelerator results runs on their int8 forms (then the
        packing pass keeps it in the packed layout, :func:`packed_concat_ok`): True when done."""
        if node.op != "concatenate" or node.output_type.ndim != 4 or int(node.attrs["axis"]) % 4 != 1:
            return False
        ins = [rw.map(v) for v in node.inputs]
        int8 = [self._int8_of_uint8.get(v.name, v if v.type.dtype == "int8" else None) for v in ins]
        if any(v is None or v.name not in self._accel_values for v in int8):
            return False
        if any(v.type.shape[1] % env.BLOCK_OUT for v in int8[:-1]):
            return False
        if node.output_type.dtype == "int8":
            rw.names.discard(node.name)
        name = node.name if node.output_type.dtype == "int8" else rw.fresh(f"{node.name}_i8")
        out = rw.emit("concatenate", int8, dict(node.attrs), name)
        rw.subst[node.name] = self._finish(rw, out, node.output_type.dtype, node)
        self._accel_values.add(out.name)
        return True

    def _to_int8(self, rw: Rewriter, v: Value) -> tuple[Value, int]:
        """``v`` in the int8 domain and the zero-point offset applied (0 or -128)."""
        v = rw.map(v)
        if v.type.dtype == "int8":
            return v, 0
        if v.name in self._int8_of_uint8:  # the uint8 form of an accelerator result: use the int8 one
            return self._int8_of_uint8[v.name], -128
        cached = self._int8_cache.get(v.name)
        if cached is None:
            cached = rw.emit("vta.to_int8", [v], {}, rw.fresh(f"{v.name}_i8"))
            self._int8_cache[v.name] = cached
        return cached, -128

    def _finish(self, rw: Rewriter, out: Value, dtype: str, last: Node) -> Value:
        if dtype == "uint8":
            u8 = rw.emit("vta.to_uint8", [out], {}, rw.fresh(f"{last.name}_u8"))
            self._int8_of_uint8[u8.name] = out
            return u8
        return out

    def _requant(self, scale: np.ndarray, acc_bits: int | None = None):
        from ...topi.qnn import Requant

        return Requant.from_scale(scale, mode=self.requant_mode, acc_bits=acc_bits)

    def _intermediate(self, zero_point: int, clip: tuple[int, int], scale: np.ndarray):
        from ...topi.qnn import IntermediateSpec

        return IntermediateSpec(int(zero_point), self._requant(scale), clip)

    def _residual(self, zero_point: int, scale: np.ndarray):
        from ...topi.qnn import ResidualSpec

        return ResidualSpec(int(zero_point), self._requant(scale))

    def _should_fold(self, spec, x: Value) -> bool:
        """Fold the kernel width into the channels of a first layer: few input channels (less than
        half a block), a kernel wider than 1, an input computed on the host (not by another
        accelerator operator), and fewer channel blocks after folding than kernel columns."""
        env = self.env or get_env()
        if not self.fold_first_layer or spec.kernel_w <= 1 or 2 * spec.in_channels > env.BLOCK_IN:
            return False
        if x.name in self._accel_values:
            return False
        folded_blocks = -(-spec.in_channels * spec.kernel_w // env.BLOCK_IN)
        return folded_blocks < spec.kernel_w

    def _exact_sums(self, plans: dict[str, Chain]) -> dict[str, Chain]:
        """The plans with every sum equal to onnxruntime's on every input pair
        (:func:`sum_problem`). A sum that is not keeps the accelerator with the integer form
        fitted to onnxruntime's outputs (:func:`vta.graph.ort_tables.pair_add_fit`, kept in
        ``_fits``) where one exists, else stays on the CPU. A convolution keeps an absorbed add
        whose sum is not exact with the fitted sum in its epilogue; without a fit, and in a dense
        layer (its epilogue builds no constant vectors), the add (and what follows it) leaves the
        chain for a standalone add. The reasons and notes go to :attr:`reasons` under the add's
        (or the convolution's) name."""
        kept: dict[str, Chain] = {}
        self._fits = {}
        for key, c in plans.items():
            if c.requant is not None and c.add is not None and self.residual_rounding == "intermediate":
                problem = sum_problem(c.add, self._residual_sum_spec(c))
                if problem is None or (c.kind == "conv2d" and self._fit_residual(c)):
                    kept[key] = c
                    continue
                add_chain = Chain("add", [c.add, *c.activations], c.add, add=c.add, activations=list(c.activations))
                c = dataclasses.replace(c, nodes=c.nodes[:c.nodes.index(c.add)], add=None, residual=None,
                                        activations=[])
                kept[c.last.name] = c
                a, b = add_chain.core.inputs
                if a.type.ndim != 4 or a.type.shape != b.type.shape:
                    self.reasons[add_chain.core.name] = problem
                    continue
                key, c = add_chain.last.name, add_chain
            if c.kind == "add" and not self._exact_add(c):
                continue
            kept[key] = c
        return kept

    def _fit_residual(self, c: Chain) -> bool:
        """Whether an integer form of the chain's residual sum fitted to onnxruntime's exists
        (kept in ``_fits`` under the layer's name, as a sum of the layer's int8 output and the
        residual; noted in :attr:`reasons`)."""
        from ...topi.qnn_fit import AffineSum
        from ..ort_tables import pair_add_fit

        fit = pair_add_fit(*_sum_operand_types(c.add))
        if fit is None:
            return False
        if c.add.inputs[0] != c.requant.output:     # the layer is the add's right operand
            fit = AffineSum(fit.rhs_multiplier, fit.lhs_multiplier, fit.offset, fit.shift)
        self._fits[c.core.name] = fit
        self.reasons[c.core.name] = (f"residual sum fitted to onnxruntime's outputs over every input pair: floor(("
                                     f"y * {fit.lhs_multiplier} + r * {fit.rhs_multiplier} + {fit.offset}) / "
                                     f"2**{fit.shift})")
        return True

    def _exact_add(self, c: Chain) -> bool:
        """Whether the standalone add of ``c`` runs on the accelerator: its fixed-point sum is
        onnxruntime's on every input pair, or an integer form fitted to onnxruntime's outputs
        exists (kept in ``_fits``, noted in :attr:`reasons`); otherwise the reason is recorded."""
        add = c.core
        problem = sum_problem(add, self._add_spec(c))
        if problem is None:
            return True
        from ..ort_tables import pair_add_fit

        fit = pair_add_fit(*_sum_operand_types(add))
        if fit is None:
            self.reasons[add.name] = f"{problem} (no integer form within the ALU's limits equals it)"
            return False
        self._fits[add.name] = fit
        self.reasons[add.name] = (f"the sum fitted to onnxruntime's outputs over every input pair: floor((a * "
                                  f"{fit.lhs_multiplier} + b * {fit.rhs_multiplier} + {fit.offset}) / "
                                  f"2**{fit.shift})")
        return True

    def _sum_operands(self, c: Chain):
        """``(mine, residual spec, intermediate spec)`` of a chain's absorbed add (``intermediate``
        rounding): which side of the add the layer's result is, and the two rescaled operands."""
        a, rq = c.add.attrs, c.requant
        out_scale = _scale(a["output_scale"])
        mine, other = ("lhs", "rhs") if c.add.inputs[0] == rq.output else ("rhs", "lhs")
        residual = self._residual(int(a[f"{other}_zero_point"]) + int8_offset(c.residual.type.dtype),
                                  _scale(a[f"{other}_scale"]) / out_scale)
        y_dtype = rq.output_type.dtype
        y_off = int8_offset(y_dtype)
        y_lo, y_hi = _dtype_range(y_dtype)
        intermediate = self._intermediate(int(a[f"{mine}_zero_point"]) + y_off, (y_lo + y_off, y_hi + y_off),
                                          _scale(a[f"{mine}_scale"]) / out_scale)
        return mine, residual, intermediate

    def _residual_sum_spec(self, c: Chain):
        """The sum a chain's epilogue computes after its intermediate (the layer's own int8
        result and the residual, rescaled and added as :class:`~vta.topi.qnn.QAddSpec` does), as
        a spec whose ``lhs`` is the add's first input."""
        from ...topi.qnn import INT8_RANGE, QAddSpec, ResidualSpec

        mine, residual, intermediate = self._sum_operands(c)
        layer = ResidualSpec(intermediate.zero_point, intermediate.requant)
        lhs, rhs = (layer, residual) if mine == "lhs" else (residual, layer)
        z_out = int(c.add.attrs["output_zero_point"]) + int8_offset(c.add.output_type.dtype)
        return QAddSpec(1, 1, 1, 1, lhs, rhs, z_out, INT8_RANGE)

    def _fuse(self, rw: Rewriter, chain: Chain) -> Value:
        return FUSED_KINDS[chain.kind](self, rw, chain)

    def _fuse_core(self, rw: Rewriter, c: Chain) -> Value:
        from ...topi.qnn import QConv2DSpec, QDenseSpec

        core, rq = c.core, c.requant
        x, dx = self._to_int8(rw, core.inputs[0])
        zx = int(core.attrs["input_zero_point"]) + dx
        w = rw.params[core.inputs[1].name].astype(np.int64) - int(core.attrs["kernel_zero_point"])
        bias_model = np.zeros(w.shape[0], dtype=np.int64)
        if c.bias is not None:
            bias_model += rw.params[rw.map(c.bias.inputs[1]).name].astype(np.int64)
        bias = bias_model - zx * w.reshape(w.shape[0], -1).sum(axis=1)
        if np.abs(bias).max(initial=0) >= 2 ** 31:
            raise GraphError(f"node {core.name!r}: the bias with -z_in*sum(w) folded in does not fit int32 "
                             f"(largest magnitude {int(np.abs(bias).max())})")
        last_q = c.add if c.add is not None else rq
        out_dtype = last_q.output_type.dtype
        doff = -128 if out_dtype == "uint8" else 0
        lo, hi = fold_clip(c.activations, out_dtype)
        # the largest |accumulator| any input gives (the bound the host's requantize uses too)
        acc_bits = rq.attrs.get("acc_bits") or worst_accumulator_bits(w, 0, bias_model)
        residual_spec = residual_val = intermediate = None
        if c.add is not None:
            a = c.add.attrs
            out_scale, z_out = _scale(a["output_scale"]), int(a["output_zero_point"])
            residual_val, _ = self._to_int8(rw, c.residual)
            # the layer's own int8 result, rounded and saturated as the unfused graph does, then rescaled
            _, residual_spec, intermediate = self._sum_operands(c)
            if core.name in self._fits:
                intermediate = dataclasses.replace(intermediate, fit=self._fits[core.name])
            if self.residual_rounding == "intermediate":
                requant = self._requant(_scale(rq.attrs["input_scale"]) / _scale(rq.attrs["output_scale"]), acc_bits)
            else:
                # straight to the add's output scale: one rounding, no intermediate saturation
                intermediate = None
                requant = self._requant(_scale(rq.attrs["input_scale"]) / out_scale, acc_bits)
        else:
            out_scale, z_out = _scale(rq.attrs["output_scale"]), int(rq.attrs["output_zero_point"])
            requant = self._requant(_scale(rq.attrs["input_scale"]) / out_scale, acc_bits)
        common = dict(input_zero_point=zx, requant=requant, output_zero_point=z_out + doff,
                      clip=(lo + doff, hi + doff), residual=residual_spec, intermediate=intermediate)
        xs = x.type.shape
        if c.kind == "conv2d":
            pad = core.attrs["padding"]
            pad = (pad,) * 4 if isinstance(pad, int) else tuple(int(p) for p in pad)
            pad = pad if len(pad) == 4 else (pad[0], pad[1], pad[0], pad[1])
            strides = core.attrs["strides"]
            strides = (strides, strides) if isinstance(strides, int) else tuple(int(s) for s in strides)
            groups = int(core.attrs["groups"])
            cin = xs[1]
            if groups > 1:
                # whole channel blocks per accelerator group, block-diagonal weights (vta.topi.qnn_group)
                env = self.env or get_env()
                grouping = accel_grouping(cin, w.shape[0], groups, env.BLOCK_IN, env.BLOCK_OUT)
                w = expand_group_weight(w, groups, grouping)
                ratio = (w.shape[0] * w.shape[1]) / (core.output_type.shape[1] * core.inputs[1].type.shape[1])
                note = (f"{groups} groups run as {grouping.groups} group(s) of whole channel "
                        f"blocks with block-diagonal weights ({ratio:.1f}x the layer's MACs)")
                self.reasons[core.name] = "; ".join(filter(None, (note, self.reasons.get(core.name))))
                cin, groups = grouping.in_channels, grouping.groups
                bias = _pad_axis(bias, 0, w.shape[0])
                common["requant"] = _pad_requant(requant, w.shape[0])
            spec = QConv2DSpec(xs[0], cin, w.shape[0], xs[2], xs[3], w.shape[2], w.shape[3], strides, pad, **common,
                               groups=groups)
            if groups == 1 and self._should_fold(spec, x):
                spec = dataclasses.replace(spec, fold_width=True)
                x = rw.emit("vta.fold_width", [x], dict(kernel_w=spec.kernel_w, stride_w=spec.strides[1],
                                                        padding=spec.padding, zero_point=zx),
                            rw.fresh(f"{core.name}_fold"))
        else:
            spec = QDenseSpec(xs[0], xs[1], w.shape[0], **common)
        accel = _BY_KIND[c.kind]
        wv = rw.const(rw.fresh(f"{core.name}.weight"), w.astype(np.int8))
        bv = rw.const(rw.fresh(f"{core.name}.bias"), bias.astype(np.int32))
        inputs = [x, wv, bv] + ([residual_val] if residual_val is not None else [])
        attrs = dict(spec=spec, layout=accel.layout, out_scale=tuple(out_scale)
                     if out_scale.size > 1 else float(out_scale[0]), out_zero_point=z_out + doff,
                     out_axis=None, channels=int(core.output_type.shape[1]), macs=_core_macs(core))
        rw.names.discard(core.name)
        out = rw.emit(accel.name, inputs, attrs, core.name)
        return self._finish(rw, out, out_dtype, c.last)

    def _add_spec(self, c: Chain):
        """The :class:`~vta.topi.qnn.QAddSpec` of a standalone add chain (the int8 domain)."""
        from ...topi.qnn import QAddSpec

        add = c.core
        a = add.attrs
        da, db = (int8_offset(v.type.dtype) for v in add.inputs)
        out_scale = _scale(a["output_scale"])
        out_dtype = add.output_type.dtype
        doff = int8_offset(out_dtype)
        lo, hi = fold_clip(c.activations, out_dtype)
        n, ch, h, w = add.inputs[0].type.shape
        return QAddSpec(n, ch, h, w, self._residual(int(a["lhs_zero_point"]) + da, _scale(a["lhs_scale"]) / out_scale),
                        self._residual(int(a["rhs_zero_point"]) + db, _scale(a["rhs_scale"]) / out_scale),
                        int(a["output_zero_point"]) + doff, (lo + doff, hi + doff))

    def _fuse_add(self, rw: Rewriter, c: Chain) -> Value:
        add = c.core
        a = add.attrs
        va, _ = self._to_int8(rw, add.inputs[0])
        vb, _ = self._to_int8(rw, add.inputs[1])
        out_dtype = add.output_type.dtype
        spec = self._add_spec(c)
        if add.name in self._fits:
            spec = dataclasses.replace(spec, fit=self._fits[add.name])
        attrs = dict(spec=spec, layout="NCHW", out_scale=float(_scale(a["output_scale"])[0]),
                     out_zero_point=spec.output_zero_point, out_axis=None, channels=spec.channels)
        rw.names.discard(add.name)
        out = rw.emit(_BY_KIND[c.kind].name, [va, vb], attrs, add.name)
        return self._finish(rw, out, out_dtype, c.last)

    def _fuse_mul(self, rw: Rewriter, c: Chain) -> Value:
        from ...topi.qnn_mul import QMulSpec, mul_requant

        node = c.core
        a = node.attrs
        sides = ("lhs", "rhs")
        if node.inputs[0].type.shape != node.output_type.shape:
            sides = ("rhs", "lhs")   # the broadcast operand is the function's rhs
        first, second = (node.inputs[0], node.inputs[1]) if sides[0] == "lhs" else (node.inputs[1], node.inputs[0])
        va, da = self._to_int8(rw, first)
        vb, db = self._to_int8(rw, second)
        out_scale = float(_scale(a["output_scale"])[0])
        out_dtype = node.output_type.dtype
        doff = -128 if out_dtype == "uint8" else 0
        lo, hi = fold_clip(c.activations, out_dtype)
        n, ch, h, w = va.type.shape
        rq = mul_requant(float(_scale(a["lhs_scale"])[0] * _scale(a["rhs_scale"])[0] / out_scale),
                         self.requant_mode)
        spec = QMulSpec(n, ch, h, w, int(a[f"{sides[0]}_zero_point"]) + da, int(a[f"{sides[1]}_zero_point"]) + db,
                        rq, int(a["output_zero_point"]) + doff, (lo + doff, hi + doff),
                        rhs_broadcast=vb.type.shape != va.type.shape)
        attrs = dict(spec=spec, layout="NCHW", out_scale=out_scale, out_zero_point=int(a["output_zero_point"]) + doff,
                     out_axis=None, channels=ch)
        rw.names.discard(node.name)
        out = rw.emit(_BY_KIND[c.kind].name, [va, vb], attrs, node.name)
        return self._finish(rw, out, out_dtype, c.last)

    def _fuse_pool(self, rw: Rewriter, c: Chain) -> Value:
        from ...topi.qnn import MaxPoolSpec

        pool = c.core
        x, dx = self._to_int8(rw, pool.inputs[0])
        n, ch, h, w = x.type.shape
        a = pool.attrs
        spec = MaxPoolSpec(n, ch, h, w, a["pool_size"], a["strides"], a["padding"])
        t = x.type
        zp = t.zero_point
        attrs = dict(spec=spec, layout="NCHW", pool_size=spec.pool_size, strides=spec.strides,
                     padding=spec.padding, out_scale=t.scale, out_zero_point=zp, out_axis=t.axis, channels=ch)
        rw.names.discard(pool.name)
        out = rw.emit(_BY_KIND[c.kind].name, [x], attrs, pool.name)
        return self._finish(rw, out, pool.output_type.dtype, c.last)

    def _fuse_avg_pool(self, rw: Rewriter, c: Chain) -> Value:
        pool = c.core
        x, dx = self._to_int8(rw, pool.inputs[0])
        a = pool.attrs
        z_in = a.get("input_zero_point")
        z_in = (pool.inputs[0].type.zero_point or 0) if z_in is None else z_in
        out_dtype = pool.output_type.dtype
        doff = -128 if out_dtype == "uint8" else 0
        lo, hi = fold_clip(c.activations, out_dtype)
        z_out = int(a.get("output_zero_point") or 0)
        spec = avg_pool_spec(pool, int(np.ravel(z_in)[0]) + dx, z_out + doff, (lo + doff, hi + doff),
                             self.requant_mode)
        s_out = a.get("output_scale")
        s_out = a.get("input_scale") if s_out is None else s_out
        s_out = pool.inputs[0].type.scale if s_out is None else s_out
        attrs = dict(spec=spec, layout="NCHW", pool_size=spec.pool_size, strides=spec.strides, padding=(0, 0, 0, 0),
                     out_scale=float(np.ravel(s_out)[0]), out_zero_point=z_out + doff, out_axis=None,
                     channels=spec.channels)
        rw.names.discard(pool.name)
        out = rw.emit(_BY_KIND[c.kind].name, [x], attrs, pool.name)
        return self._finish(rw, out, out_dtype, c.last)

    def _fuse_minmax(self, rw: Rewriter, c: Chain) -> Value:
        from ...topi.qnn_minmax import QMinMaxSpec, minmax_requant

        node = c.core
        a = node.attrs
        va, da = self._to_int8(rw, node.inputs[0])
        vb, db = self._to_int8(rw, node.inputs[1])
        out_scale = float(_scale(a["output_scale"])[0])
        out_dtype = node.output_type.dtype
        doff = -128 if out_dtype == "uint8" else 0
        lo, hi = fold_clip(c.activations, out_dtype)
        n, ch, h, w = va.type.shape
        rqs = [minmax_requant(float(_scale(a[f"{side}_scale"])[0]) / out_scale, self.requant_mode)
               for side in ("lhs", "rhs")]
        spec = QMinMaxSpec(n, ch, h, w, "max" if node.op == "qnn.maximum" else "min",
                           int(a["lhs_zero_point"]) + da, rqs[0], int(a["rhs_zero_point"]) + db, rqs[1],
                           int(a["output_zero_point"]) + doff, (lo + doff, hi + doff))
        attrs = dict(spec=spec, layout="NCHW", out_scale=out_scale, out_zero_point=int(a["output_zero_point"]) + doff,
                     out_axis=None, channels=ch)
        rw.names.discard(node.name)
        out = rw.emit(_BY_KIND[c.kind].name, [va, vb], attrs, node.name)
        return self._finish(rw, out, out_dtype, c.last)

    def _fuse_upsampling(self, rw: Rewriter, c: Chain) -> Value:
        from ...topi.qnn_upsampling import UpsamplingSpec

        node = c.core
        x, _ = self._to_int8(rw, node.inputs[0])
        n, ch, h, w = x.type.shape
        fh, fw = int(node.attrs["scale_h"]), int(node.attrs["scale_w"])
        t = x.type
        attrs = dict(spec=UpsamplingSpec(n, ch, h, w, fh, fw), layout="NCHW", scale_h=fh, scale_w=fw,
                     out_scale=t.scale, out_zero_point=t.zero_point, out_axis=t.axis, channels=ch)
        rw.names.discard(node.name)
        out = rw.emit(_BY_KIND[c.kind].name, [x], attrs, node.name)
        return self._finish(rw, out, node.output_type.dtype, c.last)


#: How :class:`FuseAccelerator` fuses a chain of each kind (``AccelOp.kind``).
FUSED_KINDS = {"conv2d": FuseAccelerator._fuse_core, "dense": FuseAccelerator._fuse_core,
               "add": FuseAccelerator._fuse_add, "multiply": FuseAccelerator._fuse_mul,
               "max_pool2d": FuseAccelerator._fuse_pool, "avg_pool2d": FuseAccelerator._fuse_avg_pool,
               "upsampling": FuseAccelerator._fuse_upsampling, "minmax": FuseAccelerator._fuse_minmax}

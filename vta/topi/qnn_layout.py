"""The arguments of a compiled quantized operator (:mod:`vta.topi.qnn`): their roles, packed shapes
and dtypes, and the NumPy packing to and from plain NCHW / OIHW / (N, I) arrays.

Packing pads the batch to a multiple of BATCH and the channels to multiples of BLOCK_IN (inputs)
and BLOCK_OUT (outputs) with zeros (zero weights, so padded channels contribute nothing);
unpacking crops back. Activations the accelerator writes (outputs, residuals, the operands of an
add or a pooling) use BLOCK_OUT, the input of a convolution or dense layer BLOCK_IN.

Roles: ``data``, ``weight``, ``bias`` (int32, per output channel broadcast over the spatial
positions; or, for a convolution whose padding must take a non-zero input zero point, a full
``(1, CO/BO, OH, OW, BATCH, BO)`` map holding the bias plus the border correction
``z_in * sum of the weights over the padded taps``, computed here from the weights), ``multiplier``
(and ``multiplier_lo`` when the multiplier is split in two bytes) and ``shift`` (per-channel
requantisation vectors, broadcast like the bias), ``clamp_lo``/``clamp_hi`` (per-channel clamp
bounds of the clamped requantisation, :func:`clamp_vectors`), ``residual``,
``lhs``/``rhs`` (the operands of an add), ``mask`` (maxpool: ones, whose zero padding marks the
padded pixels), ``out``. Roles in :data:`PARAM_ROLES` are constants of the model (pack them once).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..env import Environment
from .qnn_requant import mixed_shift_form

__all__ = ["MIXED_ROLES", "PARAM_ROLES", "ArgLayout", "ArgSpec", "border_correction", "clamp_vectors"]

#: Roles whose arrays are model constants (packed once, at compile time).
#: The per-channel clamp bounds and left shifts of :func:`~vta.topi.qnn_requant.mixed_shift_form`.
MIXED_ROLES = ("mixed_lo", "mixed_hi", "mixed_shl")
PARAM_ROLES = ("weight", "bias", "multiplier", "multiplier_lo", "shift", "clamp_lo", "clamp_hi", *MIXED_ROLES, "mask")

#: Roles packed from the spec alone (no array from the caller).
_SPEC_ROLES = ("multiplier", "multiplier_lo", "shift", "clamp_lo", "clamp_hi", *MIXED_ROLES)


def clamp_vectors(spec: Any) -> tuple[np.ndarray, np.ndarray, bool] | None:
    """The per-channel clamp bounds of a convolution's or dense layer's main requantisation
    (:func:`~vta.topi.qnn_requant.channel_clamp` with the clip that follows it: the output's, or
    an intermediate's), None when the clamp form does not apply (e.g. a residual is added before
    the clip). The builder and the packing share this decision."""
    from .qnn_requant import channel_clamp

    inter = getattr(spec, "intermediate", None)
    residual = getattr(spec, "residual", None)
    if residual is None and inter is None:
        lo, hi, post = spec.clip[0], spec.clip[1], spec.output_zero_point
    elif inter is not None:
        lo, hi, post = inter.clip[0] - inter.zero_point, inter.clip[1] - inter.zero_point, 0
    else:
        return None
    return channel_clamp(spec.requant, lo - post, hi - post)


@dataclass(frozen=True)
class ArgSpec:
    """One argument of a compiled operator: its name in the function, role, packed shape, dtype."""

    name: str
    role: str
    shape: tuple
    dtype: str

    @property
    def is_param(self) -> bool:
        return self.role in PARAM_ROLES


def _ceil(x: int, b: int) -> int:
    return -(-x // b) * b


def _pad_axes(a: np.ndarray, sizes: dict) -> np.ndarray:
    widths = [(0, 0)] * a.ndim
    for ax, size in sizes.items():
        if a.shape[ax] > size:
            raise ValueError(f"axis {ax} of shape {a.shape!r} exceeds {size}")
        widths[ax] = (0, size - a.shape[ax])
    return np.pad(a, widths) if any(w for _, w in widths) else a


def _pack6(a: np.ndarray, batch: int, block: int) -> np.ndarray:
    n, c, h, w = a.shape
    return np.ascontiguousarray(a.reshape(n // batch, batch, c // block, block, h, w).transpose(0, 2, 4, 5, 1, 3))


def _unpack6(a: np.ndarray) -> np.ndarray:
    nb, cb, h, w, b, c = a.shape
    return np.ascontiguousarray(a.transpose(0, 4, 1, 5, 2, 3).reshape(nb * b, cb * c, h, w))


def _pack4(a: np.ndarray, rows: int, cols: int) -> np.ndarray:
    r, c = a.shape
    return np.ascontiguousarray(a.reshape(r // rows, rows, c // cols, cols).transpose(0, 2, 1, 3))


def border_correction(weight: np.ndarray, zero_point: int, strides: tuple, padding: tuple, height: int,
                      width: int) -> np.ndarray:
    """``z * sum(w[o, :, dy, dx])`` over the taps of each output pixel that fall into the padding,
    shape ``(O, OH, OW)`` int64: what a zero-padded convolution misses against one padded with
    the zero point ``z``."""
    w = np.asarray(weight).astype(np.int64)
    o, _, kh, kw = w.shape
    pt, pl, pb, pr = padding
    sh, sw = strides
    pad_ind = np.ones((height + pt + pb, width + pl + pr), dtype=np.int64)
    pad_ind[pt:pt + height, pl:pl + width] = 0
    oh, ow = (height + pt + pb - kh) // sh + 1, (width + pl + pr - kw) // sw + 1
    wsum = w.sum(axis=1)
    corr = np.zeros((o, oh, ow), dtype=np.int64)
    for dy in range(kh):
        for dx in range(kw):
            win = pad_ind[dy:dy + sh * (oh - 1) + 1:sh, dx:dx + sw * (ow - 1) + 1:sw]
            corr += wsum[:, dy, dx, None, None] * win[None]
    return int(zero_point) * corr


@dataclass(frozen=True, eq=False)
class ArgLayout:
    """The arguments of one compiled quantized operator, in call order, and their packing.

    Attributes
    ----------
    kind : str
        ``"conv2d"``, ``"dense"``, ``"add"`` or ``"max_pool2d"``.
    spec : object
        The operator's spec (:class:`~vta.topi.qnn.QConv2DSpec`, ...).
    args : tuple of ArgSpec
        Every argument of the function, in call order; the last is ``out``.
    batch, block_in, block_out : int
        The configuration's blocks the packing uses.
    """

    kind: str
    spec: Any
    args: tuple
    batch: int
    block_in: int
    block_out: int

    @classmethod
    def for_env(cls, kind: str, spec: Any, args: list, env: Environment) -> ArgLayout:
        return cls(kind, spec, tuple(args), env.BATCH, env.BLOCK_IN, env.BLOCK_OUT)

    # -- lookup -------------------------------------------------------------------------------
    @property
    def roles(self) -> list:
        return [a.role for a in self.args]

    @property
    def names(self) -> list:
        return [a.name for a in self.args]

    def arg(self, role: str) -> ArgSpec:
        """The argument of ``role``.

        Raises
        ------
        KeyError
            If the operator has no argument of that role.
        """
        for a in self.args:
            if a.role == role:
                return a
        raise KeyError(f"{self.kind} has no argument of role {role!r}; roles: {self.roles!r}")

    def has(self, role: str) -> bool:
        return role in self.roles

    @property
    def params(self) -> list:
        """The constant arguments (weights, bias, requantisation vectors, masks)."""
        return [a for a in self.args if a.is_param]

    @property
    def inputs(self) -> list:
        """The run-time inputs (data, residual, lhs, rhs)."""
        return [a for a in self.args if not a.is_param and a.role != "out"]

    # -- packing --------------------------------------------------------------------------------
    def _nb(self, n: int) -> int:
        return _ceil(n, self.batch)

    def pack_activation(self, x: np.ndarray, block: int | None = None) -> np.ndarray:
        """NCHW (or ``(N, F)``) int8 -> packed, batch and channels zero-padded to the blocks."""
        x = np.asarray(x)
        block = self.block_out if block is None else block
        if x.ndim == 2:
            x = _pad_axes(x, {0: self._nb(x.shape[0]), 1: _ceil(x.shape[1], block)})
            return _pack4(x.astype(np.int8), self.batch, block)
        if x.ndim != 4:
            raise ValueError(f"{self.kind}: expected an NCHW (4-D) or (N, F) activation, got shape {x.shape!r}")
        x = _pad_axes(x, {0: self._nb(x.shape[0]), 1: _ceil(x.shape[1], block)})
        return _pack6(x.astype(np.int8), self.batch, block)

    def pack(self, role: str, array: Any = None, weight: np.ndarray | None = None) -> np.ndarray:
        """The packed array of argument ``role`` from its plain form.

        ``data``: NCHW / ``(N, I)``; ``residual``, ``lhs``, ``rhs``: like the output; ``weight``:
        OIHW / ``(O, I)``; ``bias``: ``(O,)`` int32 (a convolution needing the border map also needs
        ``weight``); ``multiplier``, ``shift``, ``mask``: from the spec (``array`` ignored).

        Raises
        ------
        KeyError
            If the operator has no argument of that role.
        ValueError
            If the array's shape disagrees with the spec, or the bias map needs the weights.
        """
        a = self.arg(role)
        s = self.spec
        if role in ("data", "residual", "lhs", "rhs") and len(a.shape) == 6 and np.ndim(array) == 2:
            array = np.asarray(array)[:, :, None, None]  # (N, C) as NCHW with H = W = 1
        if role == "data" and self.folds:
            out = self.pack_activation(self._fold_data(np.asarray(array)), self.block_in)
        elif role == "data":
            out = self.pack_activation(array, self.block_in if self.kind in ("conv2d", "dense") else self.block_out)
        elif role in ("residual", "lhs", "rhs"):
            out = self.pack_activation(array, self.block_out)
        elif role == "weight":
            w = np.asarray(array)
            if self.kind == "conv2d":
                want = (s.out_channels, s.in_channels // getattr(s, "groups", 1), s.kernel_h, s.kernel_w)
                if w.shape != want:
                    raise ValueError(f"conv2d: weight shape {w.shape!r} is not {want!r}")
                if self.folds:
                    w = self._fold_weight(w)
                w = _pad_axes(w, {0: _ceil(w.shape[0], self.block_out), 1: _ceil(w.shape[1], self.block_in)})
                out = _pack6(w.astype(np.int8), self.block_out, self.block_in)
            else:
                if w.shape != (s.out_features, s.in_features):
                    raise ValueError(f"dense: weight shape {w.shape!r} is not {(s.out_features, s.in_features)!r}")
                w = _pad_axes(w, {0: _ceil(w.shape[0], self.block_out), 1: _ceil(w.shape[1], self.block_in)})
                out = _pack4(w.astype(np.int8), self.block_out, self.block_in)
        elif role == "bias":
            out = self._pack_bias(array, weight)
        elif role in _SPEC_ROLES:
            # the vectors the ALU multiplies by (m, or its high and low bytes), the shifts after it,
            # and the clamp bounds of the clamped form (then m whole and the shifts of one multiply)
            plan = clamp_vectors(s) if self.kind in ("conv2d", "dense") else None
            mixed = mixed_shift_form(s.requant) if plan is None and self.kind in ("conv2d", "dense") else None
            rq = s.requant if mixed is None else mixed[0]
            if role in MIXED_ROLES:
                if mixed is None:
                    raise KeyError(f"{self.kind}: role {role!r} without multipliers on both sides of 1/2")
                vec = {"mixed_lo": mixed[1], "mixed_hi": mixed[2], "mixed_shl": -mixed[3]}[role]
            elif role == "shift":
                vec = rq.split_shifts(self.post_add, bounded=plan is not None)[0]
            elif role in ("clamp_lo", "clamp_hi"):
                if plan is None:
                    raise KeyError(f"{self.kind}: role {role!r} without a clamped requantisation")
                vec = plan[0 if role == "clamp_lo" else 1]
            elif plan is not None:
                vec = s.requant.multiplier
            else:
                vec = rq.alu_multipliers()[0 if role == "multiplier" else 1]
            out = self._broadcast_vector(np.asarray(vec, dtype=np.int64), a.shape)
        elif role == "mask":
            out = np.ones(a.shape, dtype=np.int8)
        else:
            raise KeyError(f"{self.kind}: role {role!r} has no packing")
        out = np.ascontiguousarray(out.astype(a.dtype))
        if out.shape != a.shape:
            raise ValueError(f"{self.kind}: packed {role} has shape {out.shape!r}, the function expects {a.shape!r}")
        return out

    def _channels_out(self) -> int:
        return self.spec.out_channels if self.kind == "conv2d" else self.spec.out_features

    def _broadcast_vector(self, vec: np.ndarray, shape: tuple) -> np.ndarray:
        """``(O,)`` -> the broadcast shape ``(1, O/BO, 1, 1, BATCH, BO)`` / ``(1, O/BO, BATCH, BO)``."""
        co = self._channels_out()
        if vec.shape == (1,):
            vec = np.full(co, vec[0], dtype=np.int64)
        if vec.shape != (co,):
            raise ValueError(f"{self.kind}: expected a vector of {co} entries, got shape {vec.shape!r}")
        vec = _pad_axes(vec, {0: _ceil(co, self.block_out)})
        tile = vec.reshape(1, -1, *([1] * (len(shape) - 4)), 1, self.block_out)
        return np.broadcast_to(tile, shape)

    def _pack_bias(self, bias: Any, weight: np.ndarray | None) -> np.ndarray:
        a = self.arg("bias")
        co = self._channels_out()
        b = np.zeros(co, dtype=np.int64) if bias is None else np.asarray(bias, dtype=np.int64).reshape(-1)
        if b.shape != (co,):
            raise ValueError(f"{self.kind}: bias has shape {np.shape(bias)!r}, expected ({co},)")
        if self.kind == "conv2d" and a.shape[2] * a.shape[3] > 1 and self.needs_border_map:
            if weight is None:
                raise ValueError("conv2d: the bias map of a padding with a non-zero input zero point needs the weights")
            s = self.spec.folded()
            w = self._fold_weight(np.asarray(weight)) if self.folds else weight
            corr = border_correction(w, s.input_zero_point, s.strides, s.padding, s.height, s.width)
            full = b[:, None, None] + corr  # (O, OH, OW)
            full = _pad_axes(full, {0: _ceil(co, self.block_out)})
            ob = full.shape[0] // self.block_out
            tile = full.reshape(ob, self.block_out, full.shape[1], full.shape[2]).transpose(0, 2, 3, 1)
            out = np.broadcast_to(tile[None, :, :, :, None, :], a.shape)
        else:
            out = self._broadcast_vector(b, a.shape)
        lo, hi = np.iinfo(np.int32).min, np.iinfo(np.int32).max
        if out.min(initial=0) < lo or out.max(initial=0) > hi:
            raise ValueError(f"{self.kind}: the bias does not fit int32")
        return out

    @property
    def post_add(self) -> int:
        """The constant the main requantisation's rounding step also adds (the output zero point
        when nothing follows it); the builders split the shifts with it."""
        if self.kind not in ("conv2d", "dense"):
            return 0
        s = self.spec
        last = s.residual is None and getattr(s, "intermediate", None) is None
        return s.output_zero_point if last else 0

    @property
    def needs_border_map(self) -> bool:
        """True for a convolution padded with a non-zero input zero point (module docstring)."""
        if self.kind != "conv2d":
            return False
        s = self.spec.folded()
        return s.input_zero_point != 0 and any(s.padding)

    @property
    def folds(self) -> bool:
        """True for a convolution run with its kernel width folded into the channels."""
        return self.kind == "conv2d" and bool(getattr(self.spec, "fold_width", False))

    def _fold_data(self, x: np.ndarray) -> np.ndarray:
        """NCHW -> ``(N, C*KW, H + top + bottom, OW)``: ``out[n, c*KW + dx, h, j] = xpad[n, c, h, j*sw + dx]``
        with ``xpad`` padded on all sides by the input zero point (``QConv2DSpec.folded``)."""
        s = self.spec
        if x.shape != (s.batch, s.in_channels, s.height, s.width):
            raise ValueError(f"conv2d: data shape {x.shape!r} is not {(s.batch, s.in_channels, s.height, s.width)!r}")
        pt, pl, pb, pr = s.padding
        sw, kw, ow = s.strides[1], s.kernel_w, s.out_width
        xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=s.input_zero_point)
        cols = np.stack([xp[:, :, :, dx:dx + sw * (ow - 1) + 1:sw] for dx in range(kw)], axis=2)
        return cols.reshape(s.batch, s.in_channels * kw, s.height + pt + pb, ow)

    def _fold_weight(self, w: np.ndarray) -> np.ndarray:
        """OIHW -> ``(O, I*KW, KH, 1)`` with ``out[o, c*KW + dx, dy, 0] = w[o, c, dy, dx]``."""
        o, i, kh, kw = w.shape
        return np.ascontiguousarray(w.transpose(0, 1, 3, 2).reshape(o, i * kw, kh, 1))

    def pack_params(self, weight: np.ndarray | None = None, bias: np.ndarray | None = None) -> dict:
        """``{argument name: packed array}`` of every constant argument."""
        out = {}
        for a in self.params:
            if a.role == "weight":
                out[a.name] = self.pack("weight", weight)
            elif a.role == "bias":
                out[a.name] = self.pack("bias", bias, weight=weight)
            else:
                out[a.name] = self.pack(a.role)
        return out

    def pack_args(self, **arrays: Any) -> list:
        """Packed arrays for every argument but ``out``, in call order, from plain arrays keyed by
        role (``data=``, ``weight=``, ``bias=``, ``residual=``, ``lhs=``, ``rhs=``).

        Raises
        ------
        ValueError
            If a run-time input is missing.
        """
        out = []
        for a in self.args:
            if a.role == "out":
                continue
            if a.role == "bias":
                out.append(self.pack("bias", arrays.get("bias"), weight=arrays.get("weight")))
            elif a.role in _SPEC_ROLES + ("mask",):
                out.append(self.pack(a.role))
            else:
                if a.role not in arrays:
                    raise ValueError(f"{self.kind}: missing the {a.role!r} array")
                out.append(self.pack(a.role, arrays[a.role]))
        return out

    def empty_output(self) -> np.ndarray:
        """A zero array of the packed output's shape and dtype."""
        a = self.arg("out")
        return np.zeros(a.shape, dtype=a.dtype)

    def unpack(self, packed: np.ndarray) -> np.ndarray:
        """The packed output -> plain NCHW (or ``(N, O)``), batch and channels cropped.

        Raises
        ------
        ValueError
            If the shape is not the packed output's.
        """
        a = self.arg("out")
        packed = np.asarray(packed)
        if packed.shape != a.shape:
            raise ValueError(f"{self.kind}: output of shape {packed.shape!r}, expected {a.shape!r}")
        shape = self.spec.out_shape
        if packed.ndim == 4:
            rb, cb, r, c = packed.shape
            plain = packed.transpose(0, 2, 1, 3).reshape(rb * r, cb * c)
            return np.ascontiguousarray(plain[:shape[0], :shape[1]])
        return np.ascontiguousarray(_unpack6(packed)[:shape[0], :shape[1]])

"""The specifications of the fused quantized accelerator operators (:mod:`vta.topi.qnn`), in plain
NCHW sizes before packing."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from .qnn_requant import INT8_RANGE, Requant

__all__ = ["IntermediateSpec", "MaxPoolSpec", "QAddSpec", "QConv2DSpec", "QDenseSpec", "ResidualSpec", "conv_out_size"]


def conv_out_size(size: int, kernel: int, stride: int, before: int, after: int) -> int:
    """Output extent of a convolution or pooling window along one axis."""
    return (size + before + after - kernel) // stride + 1


def _check_clip(clip: tuple, what: str) -> tuple[int, int]:
    lo, hi = (int(v) for v in clip)
    if not INT8_RANGE[0] <= lo <= hi <= INT8_RANGE[1]:
        raise ValueError(f"{what}: clip {clip!r} must satisfy -128 <= lo <= hi <= 127")
    return lo, hi


def _check_zp(z: int, what: str) -> int:
    if not -128 <= int(z) <= 127:
        raise ValueError(f"{what}: zero point {z!r} is outside the int8 domain [-128, 127]")
    return int(z)


@dataclass(frozen=True)
class ResidualSpec:
    """A second int8 operand added in the output scale: ``requantize(r - zero_point, requant)``
    (per-tensor ``requant``, no zero point, no clip) is added before the output zero point and
    the clip.

    Raises
    ------
    ValueError
        If ``requant`` is per channel or the zero point is outside int8.
    """

    zero_point: int
    requant: Requant

    def __post_init__(self):
        _check_zp(self.zero_point, "ResidualSpec")
        if self.requant.per_channel:
            raise ValueError("ResidualSpec: the residual's requant must be per tensor")
        if self.requant.pre_shift:
            raise ValueError("ResidualSpec: the residual's requant needs no pre-shift (|r - z| <= 255)")


@dataclass(frozen=True)
class IntermediateSpec:
    """The fused operator's own int8 output, kept exact inside a fusion with a residual add.

    ``conv -> requantize(z, clip) -> qnn.add`` rounds and saturates the convolution's output to
    int8 before the add rescales it. With an intermediate, the fused operator does the same:
    ``y = clip(requant(acc) + zero_point, *clip) - zero_point`` and then ``requantize(y,
    requant)`` into the add's output scale (``requant`` per tensor: the add's lhs scale over its
    output scale), so the fusion is bit-identical to the unfused graph. Without it the
    operator's requant goes straight to the output scale (one rounding, no intermediate clip).

    Raises
    ------
    ValueError
        If the zero point or clip is outside int8 or ``requant`` is per channel.
    """

    zero_point: int
    requant: Requant
    clip: tuple = INT8_RANGE
    #: a :class:`~vta.topi.qnn_fit.AffineSum` of (the operator's int8 output, the residual) that
    #: replaces both rescales and the rounding of the sum (fitted to onnxruntime's sum)
    fit: Any = None

    def __post_init__(self):
        _check_zp(self.zero_point, "IntermediateSpec")
        object.__setattr__(self, "clip", _check_clip(self.clip, "IntermediateSpec"))
        if self.requant.per_channel or self.requant.pre_shift:
            raise ValueError("IntermediateSpec: the rescale must be per tensor without pre-shift")


@dataclass(frozen=True)
class QConv2DSpec:
    """One fused accelerator convolution: ``clip(requant(conv(x, w) + bias) [+ residual] + z_out)``.

    Sizes are NCHW before packing. ``padding`` is ``(top, left, bottom, right)``; padded pixels
    take ``input_zero_point`` (int8 domain). The bias (int32, one per output channel) already
    holds ``-input_zero_point * sum(w)`` (folded by the caller). ``fold_width`` (opt-in, for
    first layers with few input channels) runs :meth:`folded` instead; the packed data argument
    then has the folded shape and must be packed with ``ArgLayout.pack("data", x)``. ``groups``:
    a grouped convolution (weight ``(out_channels, in_channels / groups, KH, KW)``); the
    accelerator runs it when every group holds whole channel blocks (a depthwise layer is given
    to it as groups of one block with a block-diagonal weight, :mod:`vta.topi.qnn_group`).

    Raises
    ------
    ValueError
        If a size is not positive, a stride not positive, a padding negative, the padded input
        smaller than the kernel, the clip outside int8, or a per-channel requant of the wrong
        length.
    """

    batch: int
    in_channels: int
    out_channels: int
    height: int
    width: int
    kernel_h: int
    kernel_w: int
    strides: tuple = (1, 1)
    padding: tuple = (0, 0, 0, 0)
    input_zero_point: int = 0
    requant: Requant = field(default_factory=Requant.identity)
    output_zero_point: int = 0
    clip: tuple = INT8_RANGE
    residual: ResidualSpec | None = None
    intermediate: IntermediateSpec | None = None
    fold_width: bool = False
    groups: int = 1

    def __post_init__(self):
        what = "QConv2DSpec"
        g = int(self.groups)
        if g <= 0 or self.in_channels % g or self.out_channels % g:
            raise ValueError(f"{what}: groups={self.groups!r} must be positive and divide the {self.in_channels} "
                             f"input and {self.out_channels} output channels")
        if g > 1 and self.fold_width:
            raise ValueError(f"{what}: a grouped convolution (groups={g}) cannot fold its kernel width")
        object.__setattr__(self, "groups", g)
        for name in ("batch", "in_channels", "out_channels", "height", "width", "kernel_h", "kernel_w"):
            if int(getattr(self, name)) <= 0:
                raise ValueError(f"{what}: {name} must be positive, got {getattr(self, name)!r}")
        st = tuple(int(v) for v in (self.strides if not isinstance(self.strides, int) else (self.strides,) * 2))
        pd = self.padding
        pd = (pd,) * 4 if isinstance(pd, int) else tuple(int(v) for v in pd)
        if len(pd) == 2:
            pd = (pd[0], pd[1], pd[0], pd[1])
        if len(st) != 2 or min(st) <= 0:
            raise ValueError(f"{what}: strides must be two positive ints, got {self.strides!r}")
        if len(pd) != 4 or min(pd) < 0:
            raise ValueError(f"{what}: padding must be 4 non-negative ints (top, left, bottom, right), "
                             f"got {self.padding!r}")
        object.__setattr__(self, "strides", st)
        object.__setattr__(self, "padding", pd)
        object.__setattr__(self, "clip", _check_clip(self.clip, what))
        _check_zp(self.input_zero_point, what)
        _check_zp(self.output_zero_point, what)
        if self.height + pd[0] + pd[2] < self.kernel_h or self.width + pd[1] + pd[3] < self.kernel_w:
            raise ValueError(f"{what}: the padded input is smaller than the {self.kernel_h}x{self.kernel_w} kernel")
        if self.requant.per_channel and self.requant.channels != self.out_channels:
            raise ValueError(f"{what}: {self.requant.channels} per-channel multipliers for {self.out_channels} "
                             f"output channels")

    @property
    def out_height(self) -> int:
        return conv_out_size(self.height, self.kernel_h, self.strides[0], self.padding[0], self.padding[2])

    def folded(self) -> QConv2DSpec:
        """The convolution the accelerator runs for ``fold_width``: the kernel's columns folded into
        the input channels (``c * kernel_w + dx``), the input's width already strided and the input
        padded on all sides with the zero point by the packing, so an unpadded ``kernel_h x 1``
        convolution of ``in_channels * kernel_w`` channels with stride ``(sh, 1)`` (no border map).
        A first layer with 3 input channels and a 7x7 kernel then fills 21 of 32 channels of two
        blocks instead of 3 of 16 (3.5x fewer GEMM micro-ops). ``self`` when not folding."""
        if not self.fold_width:
            return self
        pt, _, pb, _ = self.padding
        return replace(self, in_channels=self.in_channels * self.kernel_w, height=self.height + pt + pb,
                       width=self.out_width, kernel_w=1, strides=(self.strides[0], 1), padding=(0, 0, 0, 0),
                       fold_width=False)

    @property
    def out_width(self) -> int:
        return conv_out_size(self.width, self.kernel_w, self.strides[1], self.padding[1], self.padding[3])

    @property
    def out_shape(self) -> tuple:
        """NCHW output shape."""
        return (self.batch, self.out_channels, self.out_height, self.out_width)

    @property
    def macs(self) -> int:
        return (self.batch * self.out_channels * self.out_height * self.out_width * (self.in_channels // self.groups)
                * self.kernel_h * self.kernel_w)


@dataclass(frozen=True)
class QDenseSpec:
    """One fused accelerator dense layer: ``clip(requant(x . w^T + bias) [+ residual] + z_out)``.

    Raises
    ------
    ValueError
        If a size is not positive, the clip is outside int8, or a per-channel requant has the
        wrong length.
    """

    batch: int
    in_features: int
    out_features: int
    input_zero_point: int = 0
    requant: Requant = field(default_factory=Requant.identity)
    output_zero_point: int = 0
    clip: tuple = INT8_RANGE
    residual: ResidualSpec | None = None
    intermediate: IntermediateSpec | None = None

    def __post_init__(self):
        what = "QDenseSpec"
        for name in ("batch", "in_features", "out_features"):
            if int(getattr(self, name)) <= 0:
                raise ValueError(f"{what}: {name} must be positive, got {getattr(self, name)!r}")
        object.__setattr__(self, "clip", _check_clip(self.clip, what))
        _check_zp(self.input_zero_point, what)
        _check_zp(self.output_zero_point, what)
        if self.requant.per_channel and self.requant.channels != self.out_features:
            raise ValueError(f"{what}: {self.requant.channels} per-channel multipliers for {self.out_features} outputs")

    @property
    def out_shape(self) -> tuple:
        return (self.batch, self.out_features)

    @property
    def macs(self) -> int:
        return self.batch * self.in_features * self.out_features


@dataclass(frozen=True)
class QAddSpec:
    """``clip(requant_a(a - z_a) + requant_b(b - z_b) + z_out)`` of two int8 NCHW tensors (a dense
    activation ``(N, C)`` is ``height = width = 1``); with ``fit`` (a
    :class:`~vta.topi.qnn_fit.AffineSum` of the int8 operands, fitted to onnxruntime's outputs
    over every input pair) ``clip(fit(a, b))`` instead, the operands' requants unused.

    Raises
    ------
    ValueError
        If a size is not positive or the clip is outside int8.
    """

    batch: int
    channels: int
    height: int
    width: int
    lhs: ResidualSpec
    rhs: ResidualSpec
    output_zero_point: int = 0
    clip: tuple = INT8_RANGE
    fit: Any = None

    def __post_init__(self):
        for name in ("batch", "channels", "height", "width"):
            if int(getattr(self, name)) <= 0:
                raise ValueError(f"QAddSpec: {name} must be positive, got {getattr(self, name)!r}")
        object.__setattr__(self, "clip", _check_clip(self.clip, "QAddSpec"))
        _check_zp(self.output_zero_point, "QAddSpec")

    @property
    def out_shape(self) -> tuple:
        return (self.batch, self.channels, self.height, self.width)


@dataclass(frozen=True)
class MaxPoolSpec:
    """Max pooling of an int8 NCHW tensor; padded pixels never win (they are ``-inf``).

    Raises
    ------
    ValueError
        If a size, pool size or stride is not positive, a padding negative, or a padding as large
        as the pool (a window with no input pixel).
    """

    batch: int
    channels: int
    height: int
    width: int
    pool_size: tuple = (2, 2)
    strides: tuple = (2, 2)
    padding: tuple = (0, 0, 0, 0)

    def __post_init__(self):
        ps = tuple(int(v) for v in ((self.pool_size,) * 2 if isinstance(self.pool_size, int) else self.pool_size))
        st = tuple(int(v) for v in ((self.strides,) * 2 if isinstance(self.strides, int) else self.strides))
        pd = self.padding
        pd = (pd,) * 4 if isinstance(pd, int) else tuple(int(v) for v in pd)
        if len(pd) == 2:
            pd = (pd[0], pd[1], pd[0], pd[1])
        for name in ("batch", "channels", "height", "width"):
            if int(getattr(self, name)) <= 0:
                raise ValueError(f"MaxPoolSpec: {name} must be positive, got {getattr(self, name)!r}")
        if len(ps) != 2 or len(st) != 2 or min(ps) <= 0 or min(st) <= 0:
            raise ValueError(f"MaxPoolSpec: pool_size {self.pool_size!r} and strides {self.strides!r} "
                             "must be positive pairs")
        if len(pd) != 4 or min(pd) < 0 or max(pd[0], pd[2]) >= ps[0] or max(pd[1], pd[3]) >= ps[1]:
            raise ValueError(f"MaxPoolSpec: padding {self.padding!r} must be non-negative "
                             f"and smaller than the pool {ps!r}")
        object.__setattr__(self, "pool_size", ps)
        object.__setattr__(self, "strides", st)
        object.__setattr__(self, "padding", pd)

    @property
    def out_height(self) -> int:
        return conv_out_size(self.height, self.pool_size[0], self.strides[0], self.padding[0], self.padding[2])

    @property
    def out_width(self) -> int:
        return conv_out_size(self.width, self.pool_size[1], self.strides[1], self.padding[1], self.padding[3])

    @property
    def out_shape(self) -> tuple:
        return (self.batch, self.channels, self.out_height, self.out_width)

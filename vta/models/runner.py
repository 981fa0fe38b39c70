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

__all__ = ["BuiltModel", "build", "run", "run_digits", "format_layers", "format_top5", "LayerRow"]


@dataclass
class LayerRow:
    """One node of the compiled graph, accumulated over the runs."""

    name: str
    op: str
    device: str
    shape: tuple
    time_s: float = 0.0
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

    def close(self) -> None:
        self.module.close()


def build(model: Any, env, batch: int | None = None) -> BuiltModel:
    """Import ``model`` (path or ModelProto) and compile it for ``env``.

    Parameters
    ----------
    model : str, Path or onnx.ModelProto
    env : vta.Environment
        The configuration (its TARGET picks the simulator).
    batch : int, optional
        Batch size to run with (replaces the model's batch dimension).

    Raises
    ------
    FrontendError
        If the model cannot be imported (see :func:`vta.frontend.from_onnx`).
    GraphError, ScheduleError, BuildError
        If the graph cannot be compiled.
    """
    from ..frontend import from_onnx, load_model
    from ..graph import compile as compile_graph
    from ..graph.executor import GraphModule

    t0 = time.perf_counter()
    proto = load_model(model)
    shape = None
    if batch is not None:
        inits = {t.name for t in proto.graph.initializer}
        inp = next(i for i in proto.graph.input if i.name not in inits)
        dims = [d.dim_value for d in inp.type.tensor_type.shape.dim]
        shape = {inp.name: (batch, *dims[1:])}
    with env:
        graph, params = from_onnx(proto, shape=shape)
        graph_json, lib, cparams = compile_graph(graph, params, env=env)
        module = GraphModule(graph_json, lib)
        module.set_input(**cparams)
    x = graph.inputs[0]
    return BuiltModel(module, x.name, x.type.shape, x.type.dtype, env, time.perf_counter() - t0)


def run(built: BuiltModel, x: np.ndarray) -> list[np.ndarray]:
    """Run one batch; accumulate the per-layer records; return the outputs.

    Raises
    ------
    ValueError
        If ``x`` does not have the model's input shape.
    SimulationError
        If the device reports an error.
    """
    x = np.asarray(x)
    if tuple(x.shape) != tuple(built.input_shape):
        raise ValueError(f"input {built.input_name!r} must have shape {built.input_shape}, got {x.shape}")
    m = built.module
    with built.env:
        m.set_input(built.input_name, x.astype(built.input_dtype))
        m.run()
        outs = [m.get_output(i) for i in range(m.get_num_outputs())]
    for r in m.node_records():
        row = built.layers.get(r.name)
        if row is None:
            row = built.layers[r.name] = LayerRow(r.name, r.op, r.device, tuple(r.shape))
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
    head = f"{'layer':<34} {'op':<18} {'device':<6} {'output':<20} {'ms':>8} {'cycles' if has_cycles else 'GEMM ops':>10}"
    lines = [head, "-" * len(head)]
    for r in rows:
        metric = r.cycles // runs if has_cycles else r.gemm // runs
        shown = "" if r.device != "vta" else f"{metric:>10}"
        lines.append(f"{r.name[:34]:<34} {r.op[:18]:<18} {r.device:<6} {str(r.shape)[:20]:<20} "
                     f"{1e3 * r.time_s / runs:>8.3f} {shown:>10}")
    total_ms = 1e3 * sum(r.time_s for r in rows) / runs
    vta_ms = 1e3 * sum(r.time_s for r in rows if r.device == "vta") / runs
    lines.append("-" * len(head))
    if has_cycles:
        total = sum(r.cycles for r in rows) // runs
        lines.append(f"total: {total} cycles on the accelerator per run ({built.env.TARGET}); "
                     f"{total_ms:.2f} ms wall per run ({vta_ms:.2f} ms in accelerator nodes)")
    else:
        gemm = sum(r.gemm for r in rows) // runs
        lines.append(f"total: {gemm} GEMM ops per run; cycles: n/a on {built.env.TARGET} (fsim has no time; "
                     f"use --target model or tsim); {total_ms:.2f} ms wall per run")
    return "\n".join(lines)


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

"""Tasks from a network (``autotvm.task.extract_from_program``).

The network is a :class:`vta.graph.Graph` (what ``relay.frontend.from_onnx`` returns), an ONNX
model (a ``ModelProto`` or a path, imported with :func:`vta.frontend.from_onnx`), or the name
``"resnet18"`` (the package's seeded ResNet-18, quantized on a few random images). The graph goes
through the pass pipeline that the build runs (:func:`vta.graph.pipeline.optimize`); every
distinct accelerator operator of the kinds asked becomes one task that is measured exactly as the
build compiles it: ``nn.conv2d`` (plain: ``conv2d_packed.vta``; grouped and depthwise:
``group_conv2d_packed.vta``), ``nn.dense`` (``dense_packed.vta``), and the ALU-only ``add``
(``add.vta``) and ``multiply`` (``multiply.vta``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ..env import Environment, get_env
from .task import Task

__all__ = ["extract_from_program", "load_network"]

#: ``ops`` names that select each accelerator operator (TVM's and ours).
_OPS = {"nn.conv2d": "vta.conv2d", "conv2d": "vta.conv2d", "vta.conv2d": "vta.conv2d",
        "nn.dense": "vta.dense", "dense": "vta.dense", "vta.dense": "vta.dense",
        "add": "vta.add", "qnn.add": "vta.add", "vta.add": "vta.add",
        "multiply": "vta.multiply", "qnn.mul": "vta.multiply", "vta.multiply": "vta.multiply"}


def load_network(model: Any, seed: int = 0):
    """``(graph, params)`` of a Graph, an ONNX model or path, or ``"resnet18"``.

    Raises
    ------
    FileNotFoundError
        If a path does not exist.
    vta.errors.FrontendError
        If the ONNX model cannot be imported.
    TypeError
        For anything else.
    """
    from ..graph.ir import Graph

    if isinstance(model, Graph):
        return model, {}
    if isinstance(model, str) and model == "resnet18":
        model = resnet18_model(seed)
    if isinstance(model, (str, os.PathLike)):
        if not os.path.isfile(model):
            raise FileNotFoundError(f"model {os.fspath(model)!r} does not exist; give an .onnx file or 'resnet18'")
        import onnx

        model = onnx.load(os.fspath(model))
    try:
        import onnx
    except ImportError:  # pragma: no cover - the onnx extra is missing
        onnx = None
    if onnx is not None and isinstance(model, onnx.ModelProto):
        from ..frontend import from_onnx

        return from_onnx(model)
    raise TypeError(f"extract_from_program takes a vta.graph.Graph, an ONNX model or path, or 'resnet18'; "
                    f"got {type(model).__name__}")


def resnet18_model(seed: int = 0, images: int = 2):
    """The package's ResNet-18 (ImageNet shapes), quantized by onnxruntime on seeded random images."""
    import numpy as np

    from ..models import quantize, resnet18

    rng = np.random.default_rng(seed)
    calib = [rng.standard_normal((1, 3, 224, 224)).astype(np.float32) for _ in range(images)]
    return quantize(resnet18(seed=seed), calib)


def extract_from_program(mod: Any, params: Any = None, target: Any = None, target_host: Any = None,
                         ops: Sequence[Any] | None = None, env: Environment | None = None) -> list[Task]:
    """The tuning tasks of a network: one per distinct accelerator operator of the kinds ``ops``.

    Parameters
    ----------
    mod : Graph, onnx.ModelProto, path or "resnet18"
    params : mapping, optional
        Weights by name (merged over the graph's).
    target, target_host
        Accepted for compatibility (``env.target``).
    ops : sequence, optional
        Operator names to keep: ``"nn.conv2d"`` (plain and grouped), ``"nn.dense"``, ``"add"``
        (or ``"qnn.add"``), ``"multiply"`` (or ``"qnn.mul"``); default the first two, as
        upstream's ``tune_relay_vta.py`` (``tune_alu_vta.py`` asks for add and multiply).
    env : Environment, optional

    Raises
    ------
    ValueError
        If ``ops`` names an operator that has no template.
    vta.errors.GraphError, vta.errors.FrontendError
        If the network cannot be imported or optimised.
    """
    from ..graph.pipeline import optimize
    from .vta_ops import graph_task

    del target, target_host
    env = env or get_env()
    wanted = set()
    for op in ops or ("nn.conv2d", "nn.dense"):
        name = getattr(op, "name", op)
        if name not in _OPS:
            raise ValueError(f"extract_from_program: operator {name!r} has no template; accepted: {sorted(_OPS)!r}")
        wanted.add(_OPS[name])
    from ..graph.lower import _bind

    graph, gparams = load_network(mod)
    merged = dict(gparams or {})
    merged.update(params or {})
    with env:
        optimized = optimize(_bind(graph, merged or None), env)
        tasks: dict = {}
        for node in optimized.nodes:
            if node.op in wanted and node.attrs.get("device") == "vta":
                task = graph_task(node.op, node.attrs["spec"], env)
                key = (task.name, repr(task.args), repr(sorted(task.kwargs.items())))
                if key not in tasks:
                    task.layers = [node.name]
                    tasks[key] = task
                else:
                    tasks[key].layers.append(node.name)
    return list(tasks.values())


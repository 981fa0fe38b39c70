"""Whole ONNX models as workloads of ``python -m vta sweep`` and ``regress``.

Three kinds of names join the sweep's workload names (:mod:`vta.dse.workloads`):

``onnx:PATH``
    an ONNX model file (quantized or not: what the accelerator does not take runs on onnxruntime,
    as with ``python -m vta run``);
``zoo:NAME``
    a model of the zoo (:mod:`vta.models.zoo`), quantized once and cached;
``digits``
    the bundled int8 digits classifier.

A run imports and compiles the model for the point's configuration, feeds it seeded random inputs
(:meth:`vta.models.runner.BuiltModel.random_inputs`, seed 0) and returns the device's statistics
over the whole inference, so ``cycles`` are the accelerator's cycles of every accelerator node and
``macs`` the MACs placed on the accelerator (:func:`vta.graph.mac_share`). The outputs' bytes make
the row's digest, so the model and tsim rows of a point can be compared.

The compiled model of the last point is kept, so the MAC count and the run share one build.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from ..dse import workloads as wl
from ..env import Environment
from ..sim.device import Device
from ..sim.targets import attach_device
from . import runner

__all__ = ["KIND", "model_workload"]

#: The kind name of the ONNX model workloads.
KIND = "onnx"
_DIGITS = "digits"
#: (workload name, BITSTREAM, TARGET) -> the compiled model (one kept: a model holds its own buffers).
_BUILT: dict[tuple[str, str, str], runner.BuiltModel] = {}


def _model_file(workload: wl.Workload) -> Path:
    """The ONNX file of a workload (a zoo model is fetched and quantized on first use)."""
    name = workload.name
    if name == _DIGITS:
        from .digits import digits_model_path

        return Path(digits_model_path())
    if name.startswith("zoo:"):
        from . import zoo

        return zoo.resolve(name)
    return Path(name.removeprefix("onnx:"))


def model_workload(name: str) -> wl.Workload:
    """The workload of a prefixed model name (the factory behind ``onnx:`` and ``zoo:``).

    Raises
    ------
    KeyError
        If an ``onnx:`` file does not exist or a zoo name is not in the zoo.
    """
    if name.startswith("zoo:"):
        from . import zoo

        if name.removeprefix("zoo:") not in zoo.ZOO:
            raise KeyError(f"unknown workload {name!r}: the zoo has {', '.join(f'zoo:{n}' for n in sorted(zoo.ZOO))}")
    elif name.startswith("onnx:"):
        path = Path(name.removeprefix("onnx:"))
        if not path.is_file():
            raise KeyError(f"workload {name!r}: no ONNX file at {str(path)!r} (expected onnx:PATH_TO_MODEL.onnx)")
    else:
        raise KeyError(f"{name!r} is not a model workload name (onnx:PATH or zoo:NAME)")
    return wl.Workload(name, KIND, (name,))


def _fingerprint(workload: wl.Workload) -> str:
    """The model's identity: the file's bytes, or the zoo entry (its wheel, member and shape)."""
    if workload.name.startswith("zoo:"):
        from . import zoo

        return repr(zoo.ZOO[workload.name.removeprefix("zoo:")])
    return hashlib.sha256(_model_file(workload).read_bytes()).hexdigest()[:16]


def _built(workload: wl.Workload, env: Environment) -> runner.BuiltModel:
    key = (workload.name, env.BITSTREAM, env.TARGET)
    built = _BUILT.get(key)
    if built is None:
        for old in _BUILT.values():
            old.close()
        _BUILT.clear()
        built = _BUILT[key] = runner.build(_model_file(workload), env)
    return built


def _macs(workload: wl.Workload, env: Environment) -> int:
    return int(_built(workload, env).macs.get("vta_macs", 0))


def _run(workload: wl.Workload, env: Environment, device: Device) -> dict:
    built = _built(workload, env)
    with env:
        previous = attach_device(env, device)
        try:
            device.clear_stats()
            outputs = runner.run(built, built.random_inputs(0))
            stats = dict(device.stats())
        finally:
            if previous is not None and previous is not device:
                attach_device(env, previous)
    stats["outputs"] = b"".join(y.tobytes() for y in outputs)
    return stats


wl.register_kind(KIND, wl.Kind(_run, _macs, _fingerprint), {_DIGITS: (_DIGITS,)})
wl.register_prefix("onnx:", model_workload)
wl.register_prefix("zoo:", model_workload)

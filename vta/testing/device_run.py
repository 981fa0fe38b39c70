"""Run a built module on the configured device through the tutorial flow, and read it back.

The one recipe tests and benchmarks follow to run compiled code (reference
tvm-vta-software.md, the tutorials): ``Module.save("<name>.o")``; a session
(:class:`vta.rpc.LocalSession` unless one is given) uploads and loads it; every argument becomes
an ``ext_dev`` array; each call runs with the device's statistics cleared first (optionally
captured: the instructions it executed, ``Module.capture``); the outputs are read back.

:func:`run_built` takes a built module and the arguments in call order, :class:`Input` or
:class:`Output` (a bare NumPy array is an input); :func:`run_by_name` takes the tensors the
module was built with and the inputs by tensor name. Building is the caller's (``vta.build``
sits above this package).

Examples
--------
>>> run = run_built(mod, [x, w, Output.like(np.zeros((4, 16), np.int8))], tmp_path)  # doctest: +SKIP
>>> run.outputs[0], run.stats[0]["gemm_counter"]                                      # doctest: +SKIP
"""

from __future__ import annotations

import ctypes
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .. import nd, rpc
from ..runtime import subbyte
from . import simulator

__all__ = ["Input", "Output", "DeviceRun", "run_built", "run_by_name"]


@dataclass(frozen=True)
class Input:
    """An argument copied to the device before the first call.

    Attributes
    ----------
    array : numpy.ndarray
        The host values.
    dtype : str, optional
        Convert to this dtype on the device; a sub-byte one (``"int4"``) packs int8 values.
    """

    array: np.ndarray
    dtype: str | None = None


@dataclass(frozen=True)
class Output:
    """An argument the calls write, read back after the last one.

    Attributes
    ----------
    shape : tuple of int
    dtype : str
        Allocated empty (``ext_dev`` memory is zero-filled) unless ``init`` is given.
    init : numpy.ndarray, optional
        Copied to the device first (e.g. a layout's ``empty_output()``).
    """

    shape: tuple
    dtype: str
    init: np.ndarray | None = None

    @classmethod
    def like(cls, init: np.ndarray) -> "Output":
        """An output initialised from ``init`` (its shape and dtype).

        Parameters
        ----------
        init : numpy.ndarray

        Returns
        -------
        Output
        """
        init = np.asarray(init)
        return cls(tuple(init.shape), str(init.dtype), init)


@dataclass(frozen=True)
class DeviceRun:
    """What :func:`run_built` read back.

    Attributes
    ----------
    outputs : list of numpy.ndarray
        The :class:`Output` arguments after the last call, in argument order.
    stats : list of dict
        The device's statistics of each call (:func:`vta.testing.simulator.stats`).
    instructions : list, optional
        With ``capture``: the decoded instructions the last call executed.
    seconds : list of float
        Wall time of each call (for benchmarks to print; never to assert on).
    """

    outputs: list
    stats: list
    instructions: list | None = None
    seconds: list = field(default_factory=list)


def _check_calls(calls: int) -> None:
    """Refuse a ``calls`` that is not a positive int."""
    if isinstance(calls, bool) or not isinstance(calls, int) or calls < 1:
        raise ValueError(f"calls must be an int of at least 1, got {calls!r}")


def _argument(arg: Any) -> Input | Output:
    """``arg`` as an :class:`Input` or :class:`Output` (a bare array is an input)."""
    if isinstance(arg, (Input, Output)):
        return arg
    if isinstance(arg, np.ndarray):
        return Input(arg)
    raise TypeError(f"argument {arg!r} is neither a numpy.ndarray, an Input nor an Output; "
                    "wrap outputs in vta.testing.device_run.Output")


def _free_object_path(work_dir: Path, name: str) -> Path:
    """``work_dir/<name>.o``, or ``<name>_<i>.o`` with the first free ``i``: every module of a
    directory keeps its own file (a loaded library is never overwritten)."""
    path, i = work_dir / f"{name}.o", 1
    while path.exists():
        path, i = work_dir / f"{name}_{i}.o", i + 1
    return path


def _device_array(stack: ExitStack, arg: Input | Output, dev) -> Any:
    """``arg`` on device ``dev``, released when ``stack`` closes."""
    if isinstance(arg, Input):
        return stack.enter_context(nd.array(arg.array, dev, dtype=arg.dtype))
    if arg.init is not None:
        return stack.enter_context(nd.array(arg.init, dev))
    return stack.enter_context(nd.empty(arg.shape, arg.dtype, dev))


def _clear_queue_debug_flag() -> None:
    """``VTASetDebugMode(VTATLSCommandHandle(), 0)``: a module built with a debug flag sets the
    command queue's flag, which persists; a module built without one never clears it."""
    from ..runtime.native_lib import runtime_library

    lib = runtime_library().cdll
    lib.VTATLSCommandHandle.restype = ctypes.c_void_p
    lib.VTASetDebugMode(ctypes.c_void_p(lib.VTATLSCommandHandle()), 0)


def _call(f, arrays: list, capture: bool) -> tuple[list | None, float]:
    """One call with the statistics cleared first; (captured instructions or None, seconds)."""
    simulator.clear_stats()
    start = time.perf_counter()
    if capture:
        insns = f.capture(*arrays, execute=True).instructions()
    else:
        f(*arrays)
        insns = None
    return insns, time.perf_counter() - start


def run_built(mod, args: Sequence[Any], work_dir, *, name: str | None = None, remote=None, calls: int = 1,
              capture: bool = False, clear_debug_flag: bool = False) -> DeviceRun:
    """Save ``mod``, load it through a session and call it ``calls`` times on ``ext_dev`` arrays.

    Parameters
    ----------
    mod : vta.runtime.Module
        A built module (``vta.build``, ``vta.topi.qnn.build_qconv2d``, ...).
    args : sequence
        The call's arguments in order: :class:`Input`, :class:`Output`, or a NumPy array (an input).
    work_dir : str or Path
        Where the object file is written (``<name>.o``, numbered when taken).
    name : str, optional
        The object file's stem; default the module's entry name, else ``"op"``.
    remote : session, optional
        An open session (``vta.rpc.LocalSession`` or an RPC client); default a new
        :class:`vta.rpc.LocalSession`, closed afterwards.
    calls : int
        How many calls; every array stays on the device between them.
    capture : bool
        Call through ``Module.capture(..., execute=True)``; the last call's instructions are kept.
    clear_debug_flag : bool
        Clear the command queue's debug flag afterwards (``mod`` was built with one).

    Returns
    -------
    DeviceRun
        The outputs, the statistics of each call, the captured instructions.

    Raises
    ------
    ValueError
        If ``calls`` is not an int of at least 1.
    TypeError
        If an argument is neither a NumPy array, an :class:`Input` nor an :class:`Output`.
    vta.errors.ModuleLoadError
        If the saved module cannot be loaded.
    vta.errors.DTypeRangeError
        If an input's values do not fit its sub-byte ``dtype``.
    """
    _check_calls(calls)
    specs = [_argument(a) for a in args]
    if name is None:
        entry = getattr(mod, "entry_name", None)
        name = entry if isinstance(entry, str) and entry else "op"
    obj = _free_object_path(Path(work_dir), name)
    mod.save(obj)
    with ExitStack() as stack:
        if remote is None:
            remote = stack.enter_context(rpc.LocalSession())
        remote.upload(str(obj))
        f = remote.load_module(obj.name)
        dev = remote.ext_dev(0)
        arrays = [_device_array(stack, spec, dev) for spec in specs]
        stats, seconds, insns = [], [], None
        try:
            for _ in range(calls):
                insns, secs = _call(f, arrays, capture)
                stats.append(simulator.stats())
                seconds.append(secs)
        finally:
            if clear_debug_flag:
                _clear_queue_debug_flag()
        outputs = [a.numpy() for a, spec in zip(arrays, specs, strict=True) if isinstance(spec, Output)]
    return DeviceRun(outputs, stats, insns, seconds)


def run_by_name(mod, tensors: Sequence[Any], inputs: dict, work_dir, *, name: str | None = None, calls: int = 1,
                clear_debug_flag: bool = False) -> tuple[dict, list]:
    """Call ``mod`` (built from ``tensors``) ``calls`` times with its arguments named by tensor
    (:func:`run_built`).

    Parameters
    ----------
    mod : vta.runtime.Module
    tensors : sequence of vta.te.Tensor
        The arguments ``mod`` was built with, in order.
    inputs : dict
        Tensor name -> NumPy array (int8 values for a sub-byte tensor such as ``int4``, packed on
        the device); every other tensor is an output, allocated with its shape and dtype.
    work_dir : str or Path
    name : str, optional
        The object file's stem (default as for :func:`run_built`).
    calls : int
    clear_debug_flag : bool
        As for :func:`run_built`.

    Returns
    -------
    tuple
        ``(outputs by tensor name, statistics of each call (list of dicts))``.

    Raises
    ------
    ValueError, TypeError, vta.errors.ModuleLoadError, vta.errors.DTypeRangeError
        As for :func:`run_built`.
    """
    args = [_tensor_argument(t, inputs) for t in tensors]
    run = run_built(mod, args, work_dir, name=name, calls=calls, clear_debug_flag=clear_debug_flag)
    out_names = [t.name for t in tensors if t.name not in inputs]
    return dict(zip(out_names, run.outputs, strict=True)), run.stats


def _tensor_argument(tensor, inputs: dict) -> Input | Output:
    """Tensor ``tensor`` as an argument: its input array (packed when sub-byte) or an output."""
    dtype = str(tensor.dtype)
    if tensor.name in inputs:
        return Input(inputs[tensor.name], dtype if subbyte.parse(dtype) is not None else None)
    return Output(tuple(int(s) for s in tensor.shape), tensor.dtype)

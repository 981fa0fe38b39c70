"""``from vta import tvm``: the TVM names VTA programs use, backed by this package.

Upstream VTA tutorials and tests run with only their import lines changed::

    from vta import tvm
    from vta.tvm import te, rpc
    from vta.tvm.contrib import utils
    import vta

Sub-namespaces: :mod:`te <vta.tvm.te>`, :mod:`tir <vta.tvm.tir>`, :mod:`nd <vta.tvm.nd>`,
:mod:`rpc <vta.tvm.rpc>`, :mod:`runtime <vta.tvm.runtime>`, :mod:`target <vta.tvm.target>`,
:mod:`topi <vta.tvm.topi>`, :mod:`testing <vta.tvm.testing>`, :mod:`contrib <vta.tvm.contrib>`
(``graph_executor``, ``debugger.debug_executor``, ``pickle_memoize``), :mod:`relay <vta.tvm.relay>`
(``build``, ``frontend``, ``nn.get_pad_tuple2d``), :mod:`autotvm <vta.tvm.autotvm>` (:mod:`vta.autotvm`);
functions :func:`lower` and :func:`build`; devices ``cpu``/``ext_dev``/``device``; the global
registry ``register_func``/``get_global_func``. A name TVM has but this namespace does not
raises an AttributeError naming it.

Importing this package also makes ``vta.testing`` reachable as an attribute of ``vta`` and
gives :class:`vta.env.Environment` its upstream ``target`` property.
"""

from __future__ import annotations

from typing import Any, Sequence

from .. import testing as _vta_testing  # noqa: F401  (``vta.testing.simulator`` after ``import vta``)
from ..runtime import cpu, device, ext_dev, get_global_func, register_func
from ..tir import nodes as _n
from . import autotvm, contrib, nd, relay, rpc, runtime, target, te, testing, tir, topi
from ._missing import missing
from .target import Target

__all__ = [
    "te", "tir", "nd", "rpc", "runtime", "target", "topi", "testing", "contrib", "relay", "autotvm",
    "lower", "build", "Target", "cpu", "ext_dev", "device", "register_func", "get_global_func",
]



def lower(sch: Any, args: Sequence[Any], name: str = "main", binds: Any = None,
          simple_mode: bool = False) -> _n.PrimFunc:
    """``tvm.lower``: the schedule as TIR before any VTA pass (loops, SRAM-scoped buffers, pragmas).

    ``vta.lower`` is the one that applies the VTA passes; tutorials print both.

    Parameters
    ----------
    sch : vta.te.Schedule
    args : sequence of Tensor
        The function's arguments, in order.
    name : str
        The function's name.
    binds : None
        Explicit buffer bindings are not supported (must be None).
    simple_mode : bool
        Accepted for compatibility (no pass depends on it).

    Returns
    -------
    PrimFunc
        ``print()`` shows its TIR text.

    Raises
    ------
    ValueError
        If ``binds`` is given.
    ScheduleError
        If the schedule cannot be lowered.
    """
    del simple_mode
    if binds is not None:
        raise ValueError(f"tvm.lower: binds are not supported (got {binds!r}); pass None")
    from ..build import lower_host

    return lower_host(sch, args, name=name)


def _target_kind(t: Any) -> str:
    if t is None:
        return "ext_dev"
    if isinstance(t, dict):
        raise TypeError(
            f"tvm.build: a dict of targets {t!r} is not supported; pass Target('ext_dev', host=env.target_host)"
        )
    return (t if isinstance(t, Target) else Target(t)).kind.name


def build(inputs: Any, args: Sequence[Any] | None = None, target: Any = None, target_host: Any = None,
          name: str = "default_function", binds: Any = None):
    """``tvm.build``: ``vta.build`` with TVM's target forms, for the accelerator or the host CPU.

    Accepted targets: ``Target("ext_dev", host=env.target_host)``, ``env.target`` with
    ``target_host=...``, the strings ``"ext_dev"`` / ``"ext_dev -device=vta ..."``, or None
    (the accelerator: the VTA passes run); a host kind (``"llvm"``, ``"c"``,
    ``env.target_vta_cpu``, ``Target(env.target_vta_cpu, host=env.target_host)``): the plain
    schedule is compiled by our C code generator and its function takes ``cpu(0)`` arrays.

    Parameters
    ----------
    inputs : vta.te.Schedule
        The schedule (lowered functions are not accepted: ``vta.build`` lowers itself).
    args : sequence of Tensor
        The function's arguments, in order.
    target : Target or str, optional
    target_host : Target or str, optional
        Any host kind (``llvm``, ``c``): host code is always C compiled by the system compiler.
    name : str
        The entry function's name.
    binds : None
        Not supported.

    Returns
    -------
    vta.runtime.cmodule.CompiledCModule

    Raises
    ------
    TypeError
        If ``inputs`` is not a schedule or ``args`` is missing.
    ValueError
        If the target is neither ``ext_dev`` nor a host kind, the host is not a host kind, or
        ``binds`` is given.
    ScheduleError, CodegenError, BuildError
        As :func:`vta.build` and :func:`vta.build.build_host`.
    """
    from ..build import HOST_KINDS, build_host
    from ..build import build as vta_build
    from ..te import Schedule

    if not isinstance(inputs, Schedule):
        raise TypeError(
            f"tvm.build takes a schedule (te.create_schedule(...)) and its arguments, got {type(inputs).__name__}"
        )
    if args is None:
        raise TypeError("tvm.build needs the argument tensors: tvm.build(s, [A, B, C], target)")
    if binds is not None:
        raise ValueError(f"tvm.build: binds are not supported (got {binds!r}); pass None")
    kind = _target_kind(target)
    if kind in HOST_KINDS:
        return build_host(inputs, args, name=name)
    if kind != "ext_dev":
        raise ValueError(
            f"tvm.build compiles for the VTA accelerator or the host CPU: target kind {kind!r} (from {target!r}) "
            "is not accepted; use Target('ext_dev', host=env.target_host), env.target or env.target_vta_cpu"
        )
    host = target_host if target_host is not None else getattr(target, "host", None)
    if host is not None and _target_kind(host) == "ext_dev":
        raise ValueError(f"the host target must be a host kind (llvm, c), got {host!r}")
    return vta_build(inputs, args, "ext_dev", name=name)


def __getattr__(name: str) -> Any:
    raise missing(__name__, name, __all__)


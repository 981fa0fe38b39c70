"""Helpers for tests and tutorials: running on the configured target, simulator statistics.

:func:`run` is the upstream ``vta.testing.run``: it calls ``run_func(env, remote)`` with a
session suited to the configuration's ``TARGET`` (reference tvm-vta-software.md 8.1).
:mod:`vta.testing.simulator` reads and clears the statistics of the device the runtime uses;
:func:`trace` switches the profiler's tracing on for it (:mod:`vta.testing.trace`).
:mod:`vta.testing.dtypes` gives host data for the configured element types (``int4`` included):
value ranges, random values and the wrap-around of a narrowing store.
:func:`run_built` saves, loads and calls a built module on ``ext_dev`` arrays and reads back its
outputs, statistics and (captured) instructions; :func:`run_by_name` names the arguments by tensor
(:mod:`vta.testing.device_run`).
"""

from __future__ import annotations

import os
from typing import Any, Callable

from ..env import Environment, get_env
from . import simulator
from .device_run import DeviceRun, Input, Output, run_by_name, run_built
from .simulator import LOCAL_TARGETS
from .trace import trace

__all__ = ["run", "simulator", "trace", "LOCAL_TARGETS", "BOARD_TARGETS", "run_built", "run_by_name", "Input",
           "Output", "DeviceRun"]

#: Upstream board targets, reached only through an RPC server.
BOARD_TARGETS = ("pynq", "ultra96", "de10nano")


def _port(name: str, value: str) -> int:
    try:
        port = int(value)
    except ValueError:
        port = -1
    if not 0 < port < 65536:
        raise RuntimeError(f"{name}={value!r} is not a TCP port; set it to a number in 1..65535")
    return port


def _run_remote(run_func: Callable[[Environment, Any], Any], env: Environment, host: str,
                port: int) -> Any:
    from .. import rpc

    with rpc.connect(host, port) as remote:
        return run_func(env, remote)


def run(run_func: Callable[[Environment, Any], Any]) -> Any:
    """Call ``run_func(env, remote)`` with a session for the current configuration's target.

    * ``sim`` and ``tsim``: with ``VTA_LOCAL_SIM_RPC=<port>`` set, a session with the RPC
      server on ``127.0.0.1:<port>`` (to debug the server); otherwise an in-process
      :class:`vta.rpc.LocalSession`, closed afterwards.
    * ``pynq``, ``ultra96``, ``de10nano``: a session with the server at ``VTA_RPC_HOST`` and
      ``VTA_RPC_PORT``.

    Parameters
    ----------
    run_func : callable
        ``run_func(env, remote)``; its return value is returned.

    Returns
    -------
    object
        Whatever ``run_func`` returns.

    Raises
    ------
    RuntimeError
        If the target is unknown, a board target has no server address, a port variable is
        not a port number, or the simulator of ``sim`` is not available.
    vta.errors.RPCError
        If the RPC server cannot be reached.
    """
    env = get_env()
    target = env.TARGET
    if target in LOCAL_TARGETS:
        port = os.environ.get("VTA_LOCAL_SIM_RPC")
        if port:
            return _run_remote(run_func, env, "127.0.0.1", _port("VTA_LOCAL_SIM_RPC", port))
        if not simulator.enabled():
            raise RuntimeError(
                f"TARGET {target!r}: the VTA simulator is not available in this process "
                "(vta.simulator.profiler_clear is not registered)"
            )
        from .. import rpc

        with rpc.LocalSession() as remote:
            return run_func(env, remote)
    if target in BOARD_TARGETS:
        host = os.environ.get("VTA_RPC_HOST")
        port = os.environ.get("VTA_RPC_PORT")
        if not host or not port:
            raise RuntimeError(
                f"TARGET {target!r} runs on a board: set VTA_RPC_HOST and VTA_RPC_PORT to the "
                "address of its RPC server"
            )
        return _run_remote(run_func, env, host, _port("VTA_RPC_PORT", port))
    raise RuntimeError(
        f"Unknown target {target!r}; accepted: {', '.join(map(repr, LOCAL_TARGETS + BOARD_TARGETS))}"
    )

"""Statistics and debug switches of the simulated device (upstream ``vta.testing.simulator``).

The functions act on the device the native runtime runs for the current configuration (see
:mod:`vta.runtime.vta_bridge`), through the global functions upstream code calls:
``vta.simulator.profiler_*`` for ``TARGET`` ``sim`` and ``vta.tsim.profiler_*`` for ``tsim``
(reference tvm-vta-software.md 8.2).
"""

from __future__ import annotations

import json

from ..env import get_env
from ..runtime import vta_bridge  # registers the vta.simulator.* functions and the load hook
from ..runtime.registry import get_global_func
from ..sim import debug as _debug

#: Targets simulated in this process.
LOCAL_TARGETS = ("sim", "tsim", "model")

__all__ = ["enabled", "stats", "clear_stats", "debug_mode", "DEBUG_SKIP_EXEC", "DEBUG_DUMP_INSN", "LOCAL_TARGETS"]

#: ``debug_mode`` flag of upstream fsim: skip data movement and compute, keep the counters.
DEBUG_SKIP_EXEC = _debug.DEBUG_SKIP_EXEC
#: ``debug_mode`` flag: print each instruction as the device executes it, in the upstream dump
#: format (the bit of the runtime's ``VTA_DEBUG_DUMP_INSN``).
DEBUG_DUMP_INSN = _debug.DEBUG_DUMP_INSN


def _func(suffix: str):
    """The profiler function of the current target (the ``vta.simulator`` one for ``sim``)."""
    prefix = "vta.tsim" if get_env().TARGET == "tsim" else "vta.simulator"
    func = get_global_func(f"{prefix}.{suffix}", allow_missing=True)
    if func is None:
        func = get_global_func(f"vta.simulator.{suffix}")
    return func


def enabled() -> bool:
    """Whether the simulator's profiler is available (``vta.simulator.profiler_clear`` exists).

    Returns
    -------
    bool
        True when the global function is registered (it is once this module is imported) and the
        current target is simulated in this process.
    """
    registered = get_global_func("vta.simulator.profiler_clear", allow_missing=True) is not None
    return registered and get_env().TARGET in LOCAL_TARGETS


def stats() -> dict:
    """The device's counters since the last :func:`clear_stats`.

    Returns
    -------
    dict
        The upstream keys (``inp_load_nbytes``, ..., ``alu_counter``) and whatever else the
        device reports (instruction counts, tokens, cycles).

    Raises
    ------
    vta.errors.ConfigError
        If the current ``TARGET`` has no device.
    """
    return json.loads(_func("profiler_status")())


def clear_stats() -> None:
    """Zero the device's counters.

    Raises
    ------
    vta.errors.ConfigError
        If the current ``TARGET`` has no device.
    """
    _func("profiler_clear")()


def debug_mode(flag: int) -> None:
    """Set the debug flags of the current target's device (0 clears them; kept by clear_stats).

    ``DEBUG_DUMP_INSN`` prints every instruction the device executes, in execution order, in
    the upstream dump format (``INSTRUCTION <n>: ...`` with flags, fields and token counts; see
    :mod:`vta.sim.debug`), on fsim, the cycle model and tsim. ``DEBUG_SKIP_EXEC`` counts
    every instruction but executes only micro-op loads (fsim and the cycle model).

    Parameters
    ----------
    flag : int
        A sum of ``DEBUG_*`` bits.

    Raises
    ------
    TypeError
        If ``flag`` is not an int.
    ValueError
        If the device does not implement a bit of ``flag``.
    vta.errors.ConfigError
        If the current ``TARGET`` has no device.
    """
    get_global_func("vta.simulator.profiler_debug_mode")(flag)


# Keep the bridge module referenced: importing it is what installs the runtime hooks.
_BRIDGE = vta_bridge

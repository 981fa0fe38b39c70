"""``vta.program_fpga`` and ``vta.reconfig_runtime``: preparing a board before a run.

On a board, upstream uploads a bitstream and rebuilds the device runtime for the active
configuration before running. The simulators (``sim``, ``tsim``, ``model``) need neither: the
device is created from the configuration in the same process, so both functions do nothing
there. No bitstream or board runtime ships with this package, so on a board target they
raise instead of pretending.
"""

from __future__ import annotations

from typing import Any

from .env import get_env
from .errors import RPCError

__all__ = ["program_fpga", "reconfig_runtime", "SIMULATED_TARGETS"]

#: The TARGET values whose device is a simulator in the running process.
SIMULATED_TARGETS = ("sim", "tsim", "model")


def _board_error(what: str) -> RPCError:
    target = get_env().TARGET
    return RPCError(
        f"{what}: TARGET {target!r} is a board, and this package ships no bitstream or board runtime; "
        f"use a simulated target ({', '.join(SIMULATED_TARGETS)})"
    )


def program_fpga(remote: Any, bitstream: Any = None) -> None:
    """Program the board behind ``remote`` with ``bitstream`` (a no-op on the simulators).

    Parameters
    ----------
    remote : session
        The RPC session (unused on the simulators).
    bitstream : path, optional
        The bitstream file; upstream downloads the configuration's default when None.

    Raises
    ------
    RPCError
        If the active configuration's TARGET is a board.
    """
    del remote, bitstream
    if get_env().TARGET not in SIMULATED_TARGETS:
        raise _board_error("program_fpga")


def reconfig_runtime(remote: Any) -> None:
    """Rebuild the device runtime of ``remote`` for the active configuration (a no-op on the simulators).

    Raises
    ------
    RPCError
        If the active configuration's TARGET is a board.
    """
    del remote
    if get_env().TARGET not in SIMULATED_TARGETS:
        raise _board_error("reconfig_runtime")

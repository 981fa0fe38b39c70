"""Simulators of the accelerator behind one small device contract, one package per level.

* :mod:`vta.sim.device`: the contract every level implements (:class:`~vta.sim.device.Device`,
  :class:`~vta.sim.device.NullDevice` for compile-only tests, the upstream statistics keys);
* :mod:`vta.sim.targets`: the levels by ``TARGET`` name, and the process's devices;
* :mod:`vta.sim.fsim`: the functional simulator (``TARGET`` ``sim``), the executable ISA spec;
* :mod:`vta.sim.model`: the cycle-level model (``TARGET`` ``model``);
* :mod:`vta.sim.tsim`: the Verilated RTL (``TARGET`` ``tsim``), with its build and the RTL
  package generator.

Importing this package registers the three levels, so the runtime above finds each by name.
The modules of the earlier flat layout (``vta.sim.tsim_build``, ``vta.sim.hwgen``, ...) stay
importable under their old names as aliases of their new homes.
"""

import importlib

from . import fsim, model, tsim

__all__ = ["fsim", "model", "tsim"]

#: Old flat module names -> their new homes.
_MOVED = {
    "fsim_jit": "vta.sim.fsim.jit",
    "fsim_kernels": "vta.sim.fsim.kernels",
    "fsim_loops": "vta.sim.fsim.loops",
    "fsim_sched": "vta.sim.fsim.sched",
    "fsim_units": "vta.sim.fsim.units",
    "model_costs": "vta.sim.model.costs",
    "hwgen": "vta.sim.tsim.hwgen",
    "verilator": "vta.sim.tsim.verilator",
    "tsim_build": "vta.sim.tsim.library",
    "tsim_native": "vta.sim.tsim.library",
}


def __getattr__(name: str):
    """``from vta.sim import tsim_build`` (and the other old names) still works."""
    if name in _MOVED:
        return importlib.import_module(_MOVED[name])
    raise AttributeError(f"module 'vta.sim' has no attribute {name!r}")

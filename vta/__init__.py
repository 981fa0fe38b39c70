"""vta: the VTA (Versatile Tensor Accelerator) stack in Python.

A compiler from tensor-expression schedules to VTA instructions (``vta.te``, ``vta.lower``,
``vta.build``), a runtime that loads compiled host objects (``vta.runtime``, ``vta.nd``,
``vta.rpc``), and simulators of the accelerator (fsim, tsim) behind one device API.
``vta.top`` (the packed operators with upstream's signatures) is imported on first use.
"""

import importlib as _importlib

from . import intrin, nd, rpc, runtime, te, testing, tir  # noqa: F401  (intrin installs env.gemm)
from .build import build, build_config, lower
from .env import Environment, get_env
from .errors import VTAError
from .graph import factory as _graph_factory  # noqa: F401,E402  (registers runtime.module.loadbinary_GraphExecutorFactory)
from .rpc_client import program_fpga, reconfig_runtime

__version__ = "0.1.0"
__all__ = ["Environment", "get_env", "VTAError", "nd", "rpc", "runtime", "te", "testing", "tir", "top", "lower",
           "build", "build_config", "program_fpga", "reconfig_runtime", "__version__"]


def __getattr__(name: str):
    # ``vta.top`` loads the operators (and through them the whole of vta.topi) only when used.
    if name == "top":
        return _importlib.import_module(".top", __name__)
    raise AttributeError(f"module 'vta' has no attribute {name!r}")

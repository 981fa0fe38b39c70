"""vta: the VTA (Versatile Tensor Accelerator) stack in Python.

A compiler from tensor-expression schedules to VTA instructions, a runtime that loads compiled
host objects, and simulators of the accelerator (fsim, tsim, a cycle model) behind one API.
"""

from .env import Environment, get_env
from .errors import VTAError

__version__ = "0.1.0"
__all__ = ["Environment", "get_env", "VTAError", "__version__"]

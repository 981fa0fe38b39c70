"""Exception types shared by every layer of the stack.

Each error a user can provoke with bad input has its own class, so tests and callers can tell
them apart, and every message says what was wrong and what would have been accepted.
"""

from __future__ import annotations


class VTAError(Exception):
    """Base class of every error raised by this package."""


class ConfigError(VTAError, ValueError):
    """A configuration is malformed or cannot be encoded by the ISA."""


class EncodingError(VTAError, ValueError):
    """A value does not fit the instruction or micro-op field it is meant for."""


class DecodeError(VTAError, ValueError):
    """An instruction word holds an invalid opcode, memory type or ALU opcode."""


class SimulationError(VTAError, RuntimeError):
    """Base class of errors raised while a device executes an instruction stream.

    Attributes
    ----------
    insn_index : int or None
        Index of the offending instruction in the stream, when known.
    """

    def __init__(self, message: str, insn_index: int | None = None):
        super().__init__(message)
        self.insn_index = insn_index


class InvalidInstructionError(SimulationError):
    """The stream holds an instruction that no unit can execute (bad opcode, memory type, ...)."""


class SRAMIndexError(SimulationError, IndexError):
    """An instruction addresses an on-chip buffer element outside the buffer."""


class DRAMAccessError(SimulationError, IndexError):
    """An instruction or host copy touches DRAM outside any valid allocation."""


class DeadlockError(SimulationError):
    """No stage can make progress: every unfinished stage waits for a token that never comes."""


class TokenOverflowError(SimulationError):
    """More than 255 dependency tokens are outstanding on one channel."""


class AllocationError(VTAError, MemoryError):
    """The DRAM arena cannot satisfy an allocation, or a free names no live allocation."""


class DTypeRangeError(VTAError, ValueError):
    """A value does not fit the array's element type, e.g. 9 for ``int4`` (range [-8, 7]); the
    message names the value, its index and the range."""


class TVMError(VTAError, RuntimeError):
    """An error reported by native code through the packed-function ABI (``TVMGetLastError``)."""


class ModuleLoadError(VTAError, RuntimeError):
    """A module file is missing, corrupt, or of a format no loader is registered for."""


class ParamFormatError(VTAError, ValueError):
    """A parameter blob (TVM's param-dict byte layout) is corrupt or truncated; the message gives
    what was wrong and at which byte offset."""


class BuildError(VTAError, RuntimeError):
    """The system compiler or Verilator failed to build a native library."""


class ScheduleError(VTAError, ValueError):
    """A schedule cannot be lowered to VTA; the message names the stage and the axis."""


class PackError(VTAError, ValueError):
    """A program pack directory is incomplete or inconsistent; the message names the file."""


class RPCError(VTAError, RuntimeError):
    """An RPC request failed: a bad frame, a refused path, or an error raised on the server."""


class HardwareAssertionError(SimulationError):
    """An assertion of the RTL failed in tsim; the message gives its location, text and cycle."""


class GraphError(VTAError, ValueError):
    """A graph is malformed: tensors of inconsistent shapes or dtypes (the message names both),
    an unknown value, a bad attribute, or nodes out of topological order."""


class UnsupportedOperatorError(GraphError):
    """No device (neither the accelerator nor the host) can run an operator; the message names
    the node and the operator."""


class FrontendError(VTAError, ValueError):
    """A model cannot be imported: a malformed or truncated file, an operator or opset the
    importer does not know, a float model that was not quantized, or an input shape it cannot
    fix. The message names the node, operator and opset (or the input) concerned.

    Attributes
    ----------
    node, op_type : str or None
        The offending ONNX node and its operator, when one is concerned.
    """

    def __init__(self, message: str, node: str | None = None, op_type: str | None = None):
        super().__init__(message)
        self.node = node
        self.op_type = op_type



class ModelFetchError(VTAError, RuntimeError):
    """A model of the zoo cannot be fetched: the package registry cannot be reached, the wheel
    does not hold the model, or pip failed; the message quotes the package and pip's finding."""


class TuningLogError(VTAError, ValueError):
    """A tuning log (AutoTVM's JSON-lines records) is malformed: the file, line and problem are named."""

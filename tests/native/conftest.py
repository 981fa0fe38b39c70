"""Fixtures of the native runtime tests: compiled host kernels, a session, a stream recorder."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest

from vta import isa
from vta.runtime import native_lib, vta_bridge
from vta.sim.device import Device
import vta.testing  # noqa: F401  (imports the bridge: load hook and profiler functions)

KERNEL_DIR = Path(__file__).resolve().parent / "kernels"

pytestmark = pytest.mark.native


class RecordingDevice(Device):
    """Forwards every run to the runtime's real device and keeps each decoded stream."""

    name = "recording"

    def __init__(self, inner: Device):
        super().__init__(inner.env, inner.dram)
        self.inner = inner
        self.streams: list[list] = []
        #: per run, the micro-ops each LOAD UOP reads, by instruction index
        self.uops: list[dict[int, list]] = []

    def run(self, insn_phys_addr: int, insn_count: int, wait_cycles: int = 0) -> int:
        raw = self.dram.read(insn_phys_addr, insn_count * 16)
        stream = isa.decode_program(raw, self.env)
        loaded = {}
        for n, insn in enumerate(stream):
            if (isinstance(insn, isa.MemInsn) and insn.opcode == isa.OPCODE_LOAD
                    and insn.memory_type == isa.MEM_UOP and insn.x_size):
                words = self.dram.view(insn.dram_base * 4, insn.x_size * 4, np.uint32)
                loaded[n] = [isa.decode_uop(int(w), self.env) for w in words]
        self.streams.append(stream)
        self.uops.append(loaded)
        return self.inner.run(insn_phys_addr, insn_count, wait_cycles)

    def stats(self) -> dict:
        return self.inner.stats()

    def clear_stats(self) -> None:
        self.inner.clear_stats()

    def reset(self) -> None:
        self.inner.reset()


@pytest.fixture(scope="session")
def kernel_objects(tmp_path_factory) -> dict[str, Path]:
    """The hand-written host kernels compiled to object files, by name."""
    out = tmp_path_factory.mktemp("kernels")
    objects = {}
    for src in sorted(KERNEL_DIR.glob("*.c")):
        obj = out / f"{src.stem}.o"
        native_lib.compile_object(src, output=obj, include_dirs=(native_lib.INCLUDE_DIR, KERNEL_DIR))
        objects[src.stem] = obj
    return objects


@pytest.fixture
def remote():
    """An in-process RPC session (its own work directory)."""
    from vta import rpc

    with rpc.LocalSession() as session:
        yield session


@pytest.fixture
def rt(env):
    """The native runtime library of the default configuration (ctypes), debug flags cleared."""
    lib = vta_bridge.runtime(env)
    lib.VTATLSCommandHandle.restype = ctypes.c_void_p
    lib.VTASetDebugMode.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.VTASetDebugMode(lib.VTATLSCommandHandle(), 0)
    yield lib
    lib.VTASetDebugMode(lib.VTATLSCommandHandle(), 0)
    vta_bridge.set_xfer_limit(0, env)


@pytest.fixture
def recorder(env, rt):
    """Wrap the runtime's device of ``env`` to record streams; restored afterwards."""
    real = vta_bridge.device_for(env)
    rec = RecordingDevice(real)
    vta_bridge.attach_device(env, rec)
    real.clear_stats()
    yield rec
    vta_bridge.attach_device(env, real)


def upload_module(remote, obj: Path):
    """Upload an object file to the session and load it there."""
    remote.upload(str(obj))
    return remote.load_module(obj.name)


def vadd_data(seed: int = 0):
    """Random vadd operands packed as (1, 64, 1, 16) int32 and the expected int8 result."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, size=(1, 1024), dtype=np.int32)
    b = rng.integers(-128, 128, size=(1, 1024), dtype=np.int32)
    pack = lambda x: x.reshape(1, 1, 64, 16).transpose(0, 2, 1, 3).copy()  # noqa: E731
    expected = pack((a + b).astype(np.int8))
    return pack(a), pack(b), expected


__all__ = ["RecordingDevice", "upload_module", "vadd_data"]

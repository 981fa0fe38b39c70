"""Evaluating one design point: a configuration, a workload and a level (the model or tsim).

Levels: ``model`` (the cycle model: fsim's execution plus the timing), ``model-timing`` (the
cycle model timing only, ``CycleModel(..., functional=False)``: the same cycles and counters,
nothing executed, so the row's ``output_digest`` is empty) and ``tsim``.

:func:`evaluate` never raises for a point that cannot run: a configuration that cannot be
encoded, or a workload that does not fit it, gives a row with ``status`` ``"infeasible"`` and the
reason; a failure of the simulation itself gives ``status`` ``"error"`` with the exception. A row
holds the configuration keys, the workload, and the figures a designer compares:

``cycles``          simulated cycles of one run
``macs``            useful multiply-accumulates of the workload
``macs_per_cycle``  ``macs / cycles``
``utilisation``     ``macs_per_cycle / mac_count``
``bytes_moved``     DRAM bytes loaded (inputs, weights, accumulators, micro-ops) and stored
``sram_bits``       on-chip buffer bits (micro-op, input, weight and accumulator buffers)
``mac_count``       multipliers of the GEMM core, BATCH x BLOCK_IN x BLOCK_OUT (with ``sram_bits``
                    the area proxy)

Rows are cached by :func:`point_key`: a digest of the configuration, the workload's fingerprint,
the level and :func:`code_version` (the package's sources, and for tsim the RTL's).
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from ..env import INT_KEYS, OPTION_KEYS, Environment
from ..errors import ConfigError, ScheduleError, VTAError
from . import workloads as wl

__all__ = ["ARENA_HEADROOM", "LEVELS", "ROW_FIGURES", "Point", "area", "arena_exhausted", "code_version", "evaluate",
           "point_key", "release_devices"]

#: Levels a point can be evaluated on.
LEVELS = ("model", "model-timing", "tsim")
#: Figures of a feasible row, in table order.
ROW_FIGURES = ("cycles", "macs", "macs_per_cycle", "utilisation", "bytes_moved", "sram_bits", "mac_count",
               "insn_count", "gemm_counter", "alu_counter")
_PACKAGE = Path(__file__).resolve().parents[1]
_SOURCE_SUFFIXES = (".py", ".c", ".h", ".cc", ".sv", ".svh", ".vlt", ".json")


@dataclass(frozen=True)
class Point:
    """One task of a sweep: a configuration (a dict of keys), a workload name and a level."""

    config: tuple   # sorted (key, value) pairs, hashable
    workload: str
    level: str = "model"
    hw_dir: str | None = None

    @classmethod
    def make(cls, config: dict, workload: str, level: str = "model", hw_dir=None) -> Point:
        """A point from a configuration dict.

        Raises
        ------
        ValueError
            If ``level`` is not one of :data:`LEVELS`.
        """
        if level not in LEVELS:
            raise ValueError(f"level {level!r} is not one of {LEVELS!r}")
        # (a hardware option is kept when on, so points without options keep their keys)
        keep = {k: v for k, v in config.items() if k in INT_KEYS or k == "HW_VER" or (k in OPTION_KEYS and v)}
        return cls(tuple(sorted(keep.items())), str(workload), level, None if hw_dir is None else str(hw_dir))

    @property
    def config_dict(self) -> dict:
        """The configuration with ``TARGET`` set to the point's level (``model`` for ``model-timing``)."""
        cfg = dict(self.config)
        cfg.setdefault("HW_VER", "0.0.2")
        cfg["TARGET"] = "model" if self.level == "model-timing" else self.level
        return cfg

    @property
    def key(self) -> str:
        """The cache key (:func:`point_key`)."""
        return point_key(self)


def _digest_tree(root: Path, suffixes=_SOURCE_SUFFIXES) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.suffix in suffixes and "__pycache__" not in p.parts):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


@functools.lru_cache(maxsize=8)
def code_version(hw_dir: str | None = None, level: str = "model") -> str:
    """A digest of the code that computes a row: the ``vta`` package, plus the RTL for tsim."""
    version = _digest_tree(_PACKAGE)
    if level == "tsim":
        from ..sim.tsim import library
        from .rtl import HW_DIR

        hw = Path(hw_dir) if hw_dir else HW_DIR
        version += "-" + _digest_tree(hw) + "-" + _digest_tree(Path(library.__file__).resolve().parents[3] / "sim")
    return version


def point_key(point: Point) -> str:
    """Digest of the configuration, the workload's fingerprint, the level and the code version.

    Raises
    ------
    KeyError
        If the workload is not registered.
    """
    fingerprint = wl.get(point.workload).fingerprint()
    text = json.dumps([list(point.config), fingerprint, point.level, code_version(point.hw_dir, point.level)])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def area(env: Environment) -> dict:
    """The area proxy of a configuration: ``sram_bits`` and ``mac_count``."""
    sram = env.UOP_BUFF_SIZE + env.INP_BUFF_SIZE + env.WGT_BUFF_SIZE + env.ACC_BUFF_SIZE
    return {"sram_bits": 8 * sram, "mac_count": env.BATCH * env.BLOCK_IN * env.BLOCK_OUT}


def _base_row(point: Point) -> dict:
    row = {"key": point.key, "workload": point.workload, "level": point.level}
    config = dict(point.config)
    row.update({k: v for k, v in config.items() if k in INT_KEYS})
    row.update({k: bool(config.get(k, False)) for k in OPTION_KEYS})  # every option, on or off
    return row


_DEVICES: dict[tuple, object] = {}
#: Free arena bytes needed before a point runs: the native runtime of each new configuration
#: keeps two 32 MiB staging buffers in the process's DRAM arena for good, plus the workload's data.
ARENA_HEADROOM = 256 << 20


def arena_exhausted() -> bool:
    """Whether this process's DRAM arena has too little room left for another configuration.

    A configuration's runtime releases its staging buffers when its last module closes
    (:func:`vta.runtime.native_lib.release_runtime`), so this is a guard; the rows a full sweep
    worker cannot run are run again on a fresh cluster (see :mod:`vta.dse.engine`).
    """
    from ..dram import global_dram

    dram = global_dram()
    live = sum(n for _, n in dram.allocations())
    return dram.capacity - live < ARENA_HEADROOM


def _device(env: Environment, point: Point):
    """The device of this process for the point's configuration, level and RTL (made once, reused)."""
    from ..dram import global_dram

    key = (env.BITSTREAM, point.level, point.hw_dir)
    dev = _DEVICES.get(key)
    if dev is None:
        if point.level == "tsim":
            from .rtl import make_tsim

            dev = make_tsim(env, point.hw_dir)
        else:
            from ..sim.model import CycleModel

            dev = CycleModel(env, global_dram(), functional=point.level != "model-timing")
        _DEVICES[key] = dev
    dev.reset()
    return dev


def release_devices() -> None:
    """Close the devices :func:`evaluate` made, and those attached to the runtime's pool."""
    from ..sim.targets import close_devices

    devices = list(_DEVICES.values())
    _DEVICES.clear()
    close_devices()
    for dev in devices:
        dev.close()


def evaluate(point: Point) -> dict:
    """Evaluate ``point``; never raises for an infeasible point or a failed simulation.

    Returns
    -------
    dict
        The row (module docstring): ``status`` is ``"ok"``, ``"infeasible"`` (with ``reason``) or
        ``"error"`` (with ``reason``, the exception and where it was raised).
    """
    row = _base_row(point)
    start = time.perf_counter()
    try:
        env = Environment(point.config_dict)
    except ConfigError as exc:
        row.update(status="infeasible", reason=f"configuration: {exc}")
        return row
    row["bitstream"] = env.BITSTREAM
    row.update(area(env))
    workload = wl.get(point.workload)
    if arena_exhausted():
        row.update(status="error", reason="this process's DRAM arena is used up by the runtimes of the configurations "
                                          "it ran; evaluate the rest in a new process (Dask workers are replaced "
                                          "automatically)")
        return row
    try:
        row["macs"] = wl.macs(workload, env)
        device = _device(env, point)
    except VTAError as exc:
        row.update(status="error", reason=f"{type(exc).__name__}: {exc}")
        return row
    try:
        stats = wl.run(workload, env, device)
    except (ScheduleError, ConfigError) as exc:
        row.update(status="infeasible", reason=f"workload: {exc}")
        return row
    except Exception as exc:  # a sweep records a failed point and goes on; the row says what happened
        where = traceback.extract_tb(exc.__traceback__)[-1]
        row.update(status="error",
                   reason=f"{type(exc).__name__}: {exc} (at {Path(where.filename).name}:{where.lineno})")
        return row
    cycles = int(stats.get("cycle_count", 0))
    moved = sum(int(stats.get(k, 0)) for k in ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes",
                                                "uop_load_nbytes", "out_store_nbytes"))
    insns = sum(int(stats.get(k, 0)) for k in ("insn_load", "insn_store", "insn_gemm", "insn_alu", "insn_finish",
                                                "insn_nop"))
    row.update(status="ok", reason="", cycles=cycles,
               macs_per_cycle=row["macs"] / cycles if cycles else 0.0,
               bytes_moved=moved, insn_count=insns,
               gemm_counter=int(stats.get("gemm_counter", 0)), alu_counter=int(stats.get("alu_counter", 0)))
    row["utilisation"] = row["macs_per_cycle"] / row["mac_count"]
    # a timing-only run computes no outputs
    row["output_digest"] = ("" if point.level == "model-timing"
                            else hashlib.sha256(stats.get("outputs", b"")).hexdigest()[:16])
    row["seconds"] = round(time.perf_counter() - start, 4)
    return row

"""Switch tracing on for a device and collect every run it executes into one timeline.

:class:`Recorder` works with whoever drives the device -- a pack, the native runtime, the graph
executor: while it is active, each :meth:`Device.run` of that device instance also turns the
level's probe records into :class:`~vta.profile.events.Timeline` entries, labelled with the
current layer (:meth:`Recorder.layer`). On leaving, the probe is switched off and the device's
``run`` is the plain one again, so a device that is not recorded pays nothing.

Examples
--------
>>> with Recorder(device) as rec:                       # doctest: +SKIP
...     with rec.layer("conv1"):
...         device.run(addr, count)
>>> rec.timeline.layers[0].name                          # doctest: +SKIP
'conv1'
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

import numpy as np

from ..errors import VTAError
from ..sim.device import Device
from ..sim.fsim import FunctionalSimulator
from ..sim.model import CycleModel
from ..sim.tsim import TSim, hwgen
from . import collect
from .events import UNITS, Timeline

__all__ = ["Recorder", "ProfileError", "level_of"]

_INSN_BYTES = 16


class ProfileError(VTAError, ValueError):
    """Something cannot be profiled as asked (a device without a probe, a missing hook ...)."""


def level_of(device: Device) -> str:
    """``tsim``, ``model`` or ``sim``: the level a device simulates.

    Raises
    ------
    ProfileError
        If the device is none of the three simulators.
    """
    if isinstance(device, TSim):
        return "tsim"
    if isinstance(device, CycleModel):  # before fsim: the model is an fsim
        return "model"
    if isinstance(device, FunctionalSimulator):
        return "sim"
    raise ProfileError(f"cannot trace {device!r}: only tsim, the cycle model and fsim have a probe")


class Recorder:
    """Trace every run of one device into :attr:`timeline`.

    Parameters
    ----------
    device : Device
        A :class:`~vta.sim.tsim.TSim`, :class:`~vta.sim.model.CycleModel` or fsim device.
    window : int
        Cycles per window of the memory-traffic counters.
    default_layer : str
        Name prefix of runs outside any :meth:`layer` block (``run 0``, ``run 1`` ...).

    Raises
    ------
    ProfileError
        If the device has no probe.
    ValueError
        If ``window`` is not a positive integer.
    """

    def __init__(self, device: Device, window: int = 256, default_layer: str = "run"):
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ValueError(f"window {window!r} must be a positive number of cycles")
        self.device = device
        self.level = level_of(device)
        self.window = window
        self.default_layer = default_layer
        self.timeline = Timeline(self.level, device.env)
        self._layer: str | None = None
        self._runs = 0
        self._active = False

    # ------------------------------------------------------------------ switching
    def start(self) -> Recorder:
        """Turn the probe on and start recording the device's runs.

        Raises
        ------
        ProfileError
            If this recorder, or another one, is already recording the device.
        """
        if self._active:
            raise ProfileError("this recorder is already recording")
        dev = self.device
        if "run" in vars(dev):
            raise ProfileError(f"{dev!r} is already being recorded (one Recorder per device at a time)")
        if self.level == "tsim":
            dev.set_probe(True, self.window)
        elif self.level == "model":
            dev.set_probe(True)
        plain = dev.run

        def run(insn_phys_addr: int, insn_count: int, wait_cycles: int = 0) -> int:
            return self._traced_run(plain, insn_phys_addr, insn_count, wait_cycles)

        dev.run = run  # this instance only; stop() removes it
        self._active = True
        return self

    def stop(self) -> Timeline:
        """Turn the probe off; the device runs untraced again. Returns the timeline."""
        if self._active:
            dev = self.device
            del dev.run
            if self.level == "tsim" and getattr(dev, "_handle", None) is not None or self.level == "model":
                dev.set_probe(False)
            self._active = False
        return self.timeline

    def __enter__(self) -> Recorder:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @contextlib.contextmanager
    def layer(self, name: str) -> Iterator[None]:
        """Label the runs inside the block with the layer (graph node) ``name``."""
        saved, self._layer = self._layer, str(name)
        try:
            yield
        finally:
            self._layer = saved

    # ------------------------------------------------------------------ one run
    def _traced_run(self, plain, insn_phys_addr: int, insn_count: int, wait_cycles: int) -> int:
        dev = self.device
        n = int(insn_count)
        start = int(insn_phys_addr)
        words = dev.dram.data[start:start + _INSN_BYTES * n].copy().view("<i8").reshape(n, 2)
        tokens = list(getattr(dev, "tokens", [0, 0, 0, 0]))
        rc = plain(insn_phys_addr, insn_count, wait_cycles)
        name = self._layer if self._layer is not None else f"{self.default_layer} {self._runs}"
        self._runs += 1
        with _no_gc():  # thousands of small objects that live as long as the timeline
            self._collect(name, words, tokens)
        return rc

    def _collect(self, name: str, words: np.ndarray, tokens: list[int]) -> None:
        dev = self.device
        tl = self.timeline
        if self.level == "tsim":
            collect.add_tsim_run(tl, words, dev.probe_records, _tsim_counts(dev), name, self.window)
        elif self.level == "model":
            collect.add_model_run(tl, words, dev.probe_events or [], dict(dev.last_run), name, tokens,
                                  self.window)
        else:
            collect.add_fsim_run(tl, words, {}, name)


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector (it would rescan the growing timeline many times)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _tsim_counts(dev: TSim) -> dict:
    """The per-run counters of the core (they restart at every launch)."""
    out = {"cycle_count": dev.read_reg(hwgen.REG_ECNT0)}
    for i, unit in enumerate(UNITS):
        out[f"{unit}_busy_cycles"] = dev.read_reg(hwgen.REG_BUSY_FETCH + 4 * i)
        out[f"{unit}_stall_cycles"] = dev.read_reg(hwgen.REG_STALL_FETCH + 4 * i)
        out[f"{unit}_retired"] = dev.read_reg(hwgen.REG_RETIRED_FETCH + 4 * i)
    return out


def as_words(data: bytes) -> np.ndarray:
    """Encoded instructions as the (n, 2) int64 words the collectors take."""
    return np.frombuffer(data, dtype="<i8").reshape(-1, 2).copy()

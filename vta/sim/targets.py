"""The simulation levels by ``TARGET`` name, and the devices of this process.

Each level registers itself when its package is imported (:mod:`vta.sim` imports all three):
:func:`register_target` names the ``TARGET`` it implements, the factory that makes its device,
and the global functions it offers (for example ``runtime.module.loadfile_vta-tsim``). The
runtime, one part above, creates devices through :func:`device_for` and publishes the global
functions in its registry; it never imports a level itself, so a new level is one registration.

The pool holds one device per ``(BITSTREAM, TARGET)`` in the process, on the global DRAM arena,
so SRAM contents and tokens persist across runs as on hardware. :func:`attach_device` replaces
one (``vta.tsim.init`` does, with a specific hardware library), :func:`close_devices` releases
them all.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..dram import DRAM, global_dram
from ..env import Environment, get_env
from ..errors import ConfigError
from .device import Device

__all__ = ["Target", "register_target", "targets", "global_functions", "make_device", "device_for",
           "attach_device", "close_devices"]


@dataclass(frozen=True)
class Target:
    """One simulation level as the runtime sees it.

    Attributes
    ----------
    name : str
        The ``TARGET`` value of a configuration that selects this level.
    factory : callable
        ``factory(env, dram) -> Device``.
    functions : mapping
        Global functions the level offers, by their registry name.
    """

    name: str
    factory: Callable[[Environment, DRAM], Device]
    functions: Mapping[str, Callable[..., Any]] = field(default_factory=dict)


_lock = threading.RLock()
_targets: dict[str, Target] = {}
_devices: dict[tuple[str, str], Device] = {}


def register_target(name: str, factory: Callable[[Environment, DRAM], Device],
                    functions: Mapping[str, Callable[..., Any]] | None = None) -> Target:
    """Declare the level that runs configurations whose ``TARGET`` is ``name`` (idempotent).

    Raises
    ------
    TypeError
        If ``name`` is not a non-empty string or ``factory`` is not callable.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"a target name must be a non-empty str, got {name!r}")
    if not callable(factory):
        raise TypeError(f"the factory of target {name!r} must be callable, got {factory!r}")
    target = Target(name, factory, dict(functions or {}))
    with _lock:
        _targets[name] = target
    return target


def targets() -> tuple[str, ...]:
    """The registered ``TARGET`` names, sorted."""
    with _lock:
        return tuple(sorted(_targets))


def global_functions() -> dict[str, Callable[..., Any]]:
    """Every global function the registered levels offer, by registry name."""
    with _lock:
        return {name: f for t in _targets.values() for name, f in t.functions.items()}


def make_device(env: Environment, dram: DRAM | None = None) -> Device:
    """A new device of the level ``env.TARGET`` names (not kept in the pool).

    Parameters
    ----------
    env : Environment
        The configuration; its ``TARGET`` picks the level.
    dram : DRAM, optional
        The arena (default: :func:`vta.dram.global_dram`).

    Raises
    ------
    ConfigError
        If no level is registered for ``TARGET``.
    """
    with _lock:
        target = _targets.get(env.TARGET)
        accepted = ", ".join(repr(t) for t in sorted(_targets))
    if target is None:
        raise ConfigError(f"TARGET {env.TARGET!r} has no device the runtime can run; accepted targets: {accepted}")
    return target.factory(env, global_dram() if dram is None else dram)


def _key(env: Environment) -> tuple[str, str]:
    return (env.BITSTREAM, env.TARGET)


def device_for(env: Environment | None = None) -> Device:
    """The device that runs the streams of a configuration (created on first use).

    Parameters
    ----------
    env : Environment, optional
        The configuration (default: the current one); its ``TARGET`` picks the level.

    Returns
    -------
    Device
        One instance per (configuration, target) in the process, on the global DRAM arena.

    Raises
    ------
    ConfigError
        If no level is registered for ``TARGET``.
    """
    env = env or get_env()
    key = _key(env)
    with _lock:
        dev = _devices.get(key)
        if dev is None:
            dev = make_device(env)
            _devices[key] = dev
        return dev


def attach_device(env: Environment, device: Device) -> Device | None:
    """Make ``device`` the one that runs the streams of ``env`` (e.g. a tsim model).

    Parameters
    ----------
    env : Environment
        The configuration whose ``(BITSTREAM, TARGET)`` slot is replaced.
    device : Device
        A device on the global DRAM arena.

    Returns
    -------
    Device or None
        The device that was attached before, if any (not closed: the caller decides).

    Raises
    ------
    TypeError
        If ``device`` is not a :class:`vta.sim.device.Device`.
    ValueError
        If the device is not attached to :func:`vta.dram.global_dram`.
    """
    if not isinstance(device, Device):
        raise TypeError(f"attach_device needs a vta.sim.device.Device, got {device!r}")
    if device.dram is not global_dram():
        raise ValueError("the device must run on vta.dram.global_dram(), the arena the native runtime uses")
    with _lock:
        old = _devices.get(_key(env))
        _devices[_key(env)] = device
        return old


def close_devices() -> None:
    """Close and forget every device created or attached here (the next run makes new ones)."""
    with _lock:
        devices = list(_devices.values())
        _devices.clear()
    for dev in devices:
        dev.close()

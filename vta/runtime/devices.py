"""Devices: where an array lives (``cpu`` = host memory, ``ext_dev`` = the VTA DRAM arena).

A :class:`Device` is a (device type, device id) pair as in DLPack. Local devices have
``session`` None; the RPC layer creates devices that carry a session, and arrays allocated on
them are delegated to that session.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Device", "cpu", "ext_dev", "device", "CPU", "EXT_DEV", "DEVICE_NAMES"]

#: DLPack device type of host memory.
CPU = 1
#: DLPack device type of the VTA accelerator.
EXT_DEV = 12

#: Device names accepted by :func:`device`, with their types.
DEVICE_NAMES = {"cpu": CPU, "llvm": CPU, "c": CPU, "ext_dev": EXT_DEV, "vta": EXT_DEV}
_TYPE_NAMES = {CPU: "cpu", EXT_DEV: "ext_dev"}


class Device:
    """A device: DLPack ``device_type`` and ``device_id``, and the RPC session if remote.

    Parameters
    ----------
    device_type : int
        1 (cpu) or 12 (ext_dev) for local devices; a session may use its own numbering.
    device_id : int
        Index of the device of that type (non-negative).
    session : object, optional
        The RPC session that owns the device; it must provide ``alloc_array(shape, dtype,
        dev)``. None for local devices.

    Raises
    ------
    ValueError
        If a local device has an unknown type, or the id is negative.
    """

    __slots__ = ("device_type", "device_id", "session")

    def __init__(self, device_type: int, device_id: int = 0, session: Any = None):
        device_type, device_id = int(device_type), int(device_id)
        if session is None and device_type not in _TYPE_NAMES:
            raise ValueError(
                f"unknown local device type {device_type!r}; accepted: {CPU} (cpu), {EXT_DEV} (ext_dev)"
            )
        if device_id < 0:
            raise ValueError(f"device id must be non-negative, got {device_id!r}")
        self.device_type = device_type
        self.device_id = device_id
        self.session = session

    @property
    def is_local(self) -> bool:
        """True when the device is in this process (no RPC session)."""
        return self.session is None

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Device) and other.device_type == self.device_type
                and other.device_id == self.device_id and other.session is self.session)

    def __hash__(self) -> int:
        return hash((self.device_type, self.device_id, id(self.session)))

    def __repr__(self) -> str:
        name = _TYPE_NAMES.get(self.device_type, f"device_type={self.device_type}")
        remote = "" if self.session is None else ", remote"
        return f"{name}({self.device_id}{remote})"


def device(dev_type: int | str, dev_id: int = 0) -> Device:
    """Make a local device from a type code or a name.

    Parameters
    ----------
    dev_type : int or str
        1, 12, or one of ``"cpu"``, ``"llvm"``, ``"c"``, ``"ext_dev"``, ``"vta"``; for a string
        only its first word counts (so a target string such as ``"llvm -mcpu=x"`` works).
    dev_id : int
        Device index.

    Raises
    ------
    ValueError
        If the name or type is unknown or the id is negative.
    """
    if isinstance(dev_type, str):
        words = dev_type.split()
        key = words[0] if words else ""
        if key not in DEVICE_NAMES:
            raise ValueError(f"unknown device name {dev_type!r}; accepted: {sorted(DEVICE_NAMES)}")
        dev_type = DEVICE_NAMES[key]
    return Device(dev_type, dev_id)


def cpu(dev_id: int = 0) -> Device:
    """The host CPU device.

    Raises
    ------
    ValueError
        If ``dev_id`` is negative.
    """
    return Device(CPU, dev_id)


def ext_dev(dev_id: int = 0) -> Device:
    """The VTA accelerator device (memory in the shared DRAM arena).

    Raises
    ------
    ValueError
        If ``dev_id`` is negative.
    """
    return Device(EXT_DEV, dev_id)


def set_device(device_type: int, device_id: int) -> None:
    """``__tvm_set_device``: what generated host code calls before touching a device.

    Local devices need no switching, so this only checks the arguments.

    Raises
    ------
    ValueError
        If the device type is neither cpu nor ext_dev, or the id is negative.
    """
    Device(device_type, device_id)

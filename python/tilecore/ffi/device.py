"""Devices: where arrays live and code runs.

``tilecore.cpu(0)`` is the host; ``tilecore.npu(0)`` is a TC1 NPU (the simulator).
A :class:`Device` compares by value and crosses the FFI as a plain DLDevice.
"""

from __future__ import annotations

from ._base import _ffi_core

Device = _ffi_core.Device

#: DLPack device type numbers used by tilecore.
kDLCPU = _ffi_core.kDLCPU
kDLExtDev = _ffi_core.kDLExtDev


def cpu(dev_id: int = 0) -> Device:
    """The host CPU."""
    return Device(kDLCPU, dev_id)


def npu(dev_id: int = 0) -> Device:
    """TC1 NPU number ``dev_id`` (DLPack device type kDLExtDev)."""
    return Device(kDLExtDev, dev_id)


def device(dev_type: str | int, dev_id: int | None = None) -> Device:
    """A device by name ("cpu", "npu", "npu:1", a plugin's registered name) or DLPack
    device type number; ``dev_id``, when given, overrides the id of a ``"name:id"``."""
    return Device(dev_type) if dev_id is None else Device(dev_type, dev_id)


__all__ = ["Device", "cpu", "device", "npu"]

"""Targets: what a kernel is compiled for.

    tilecore.Target("npu -model=tc1 -cores=4")     # the TC1 NPU (simulator)
    tilecore.Target("c")                           # C, compiled by the host C compiler
    tilecore.Target("npu -cores=99")               # ValueError: names -cores and its range

A target kind declares typed options with defaults (:func:`kind_options`); an
unknown option or a bad value raises ``ValueError`` naming it and listing the valid
ones. Kinds added out of tree register with :func:`register_kind` (or from C++) and
provide ``codegen.build_<kind>``.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from ..ffi._base import _ffi_core
from ..ffi.object import Object, register_object


class _Api:
    def __getattr__(self, name):
        func = _ffi_core._get_global_func("target." + name)
        if func is None:
            raise AttributeError(f"the tilecore library does not register 'target.{name}'")
        setattr(self, name, func)
        return func


_ffi = _Api()


@register_object("target.Target")
class Target(Object):
    """A parsed target string: ``kind``, ``options`` (every option, defaults filled in)."""

    __slots__ = ()

    def __new__(cls, spec):
        if isinstance(spec, Target):
            return spec
        if not isinstance(spec, str):
            raise TypeError(f"Target: expected a target string like 'npu -cores=4', got {type(spec).__name__}")
        return _ffi.Target(spec)

    def __init__(self, spec: str | Target | None = None) -> None:
        pass

    def __str__(self) -> str:
        return _ffi.TargetStr(self)

    def __repr__(self) -> str:
        return f"Target({str(self)!r})"

    def __eq__(self, other):
        if isinstance(other, str):
            other = Target(other)
        return isinstance(other, Target) and str(self) == str(other)

    def __hash__(self):
        return hash(str(self))

    def __getitem__(self, option):
        return self.options[option]


def list_kinds() -> list[str]:
    """Names of the registered target kinds."""
    return list(_ffi.ListKinds())


def kind_options(kind: str) -> list[dict[str, Any]]:
    """The options of a kind: dicts with name, type, doc, default, description."""
    return [dict(o.items()) for o in _ffi.KindOptions(kind)]


def register_kind(name: str, device_type: int, options: Iterable[Mapping[str, Any]] = (),
                  override: bool = False) -> None:
    """Registers a target kind from Python (see docs/adding-a-device.md).

    :param options: dicts ``{"name", "type" ("int" "bool" "str" "size"), "doc",
        "default", "min", "max", "choices"}``.
    """
    _ffi.RegisterKind(name, int(device_type), [dict(o) for o in options], bool(override))


__all__ = ["Target", "kind_options", "list_kinds", "register_kind"]

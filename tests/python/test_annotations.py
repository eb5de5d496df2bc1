"""tests/python/test_annotations.py — every public function of the package is annotated.

Walks the public API with ``inspect``: every module under tilecore (none whose name
starts with ``_``), the functions it defines and the methods of the classes it defines
whose names do not start with ``_`` (``__init__`` and ``__call__`` count: they are how a
class is called). Each must annotate its return and every parameter, except:

- the first parameter of a method (``self``, ``cls``), which the class gives;
- ``*args`` and ``**kwargs``, which pass arguments on and name no type of their own.

Names imported from elsewhere are checked where they are defined, once.
"""
from __future__ import annotations

import importlib
import inspect
import pathlib
import pkgutil

import pytest

import tilecore

PACKAGE = pathlib.Path(tilecore.__file__).resolve().parent
CALLED = {"__init__", "__call__"}


def public_modules():
    """Every importable module of tilecore whose dotted name has no part starting with _."""
    names = ["tilecore"]
    for info in pkgutil.walk_packages([str(PACKAGE)], prefix="tilecore."):
        if not any(part.startswith("_") for part in info.name.split(".")[1:]):
            names.append(info.name)
    return sorted(set(names))


def _defined_in_package(obj):
    return (getattr(obj, "__module__", "") or "").split(".")[0] == "tilecore"


def _plain_function(obj):
    """The Python function behind a function, staticmethod, classmethod or property getter."""
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    if isinstance(obj, property):
        obj = obj.fget
    obj = inspect.unwrap(obj) if callable(obj) else obj
    return obj if inspect.isfunction(obj) else None


def unannotated(func, is_method):
    """What `func` leaves unannotated: a list of "parameter x" / "return"."""
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return []
    missing = []
    params = list(sig.parameters.values())
    if is_method and params and params[0].kind in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD):
        params = params[1:]
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.annotation is inspect.Parameter.empty:
            missing.append(f"parameter {p.name}")
    if sig.return_annotation is inspect.Signature.empty:
        missing.append("return")
    return missing


def public_functions(module):
    """(qualified name, function, is_method) of the public functions `module` defines."""
    for name, obj in sorted(vars(module).items()):
        if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
            continue
        func = _plain_function(obj)
        if func is not None and func.__module__ == module.__name__:
            yield f"{module.__name__}.{name}", func, False
        elif inspect.isclass(obj):
            for attr, member in sorted(vars(obj).items()):
                if attr.startswith("_") and attr not in CALLED:
                    continue
                func = _plain_function(member)
                if func is None or not _defined_in_package(func):
                    continue
                is_method = not isinstance(member, staticmethod)
                yield f"{module.__name__}.{name}.{attr}", func, is_method


def report(modules):
    lines = []
    for module_name in modules:
        module = importlib.import_module(module_name)
        for qualname, func, is_method in public_functions(module):
            missing = unannotated(func, is_method)
            if missing:
                lines.append(f"{qualname}: {', '.join(missing)}")
    return lines


def _import_or_skip(module_name):
    # The zoo's model modules need PyTorch at import; without it there is nothing to walk.
    try:
        importlib.import_module(module_name)
    except ImportError as e:
        if (e.name or "tilecore").split(".")[0] == "tilecore":
            raise
        pytest.skip(f"{module_name} needs {e.name}")
    except RuntimeError as e:
        if type(e).__name__ != "ZooError":
            raise
        pytest.skip(f"{module_name}: {e}")


@pytest.mark.parametrize("module_name", public_modules())
def test_public_functions_are_annotated(module_name):
    _import_or_skip(module_name)
    missing = report([module_name])
    assert not missing, f"{len(missing)} public functions lack annotations:\n" + "\n".join(missing)


def test_checker_sees_what_is_missing():
    # The walk must see a bare parameter and a missing return, and let *args pass.
    def bare(x, y: int, *args, **kwargs) -> int: ...

    def no_return(x: int): ...

    def full(x: int, *args, **kwargs) -> None: ...

    class C:
        def method(self, x: int) -> int: ...

        @classmethod
        def make(cls) -> C: ...

    assert unannotated(bare, False) == ["parameter x"]
    assert unannotated(no_return, False) == ["return"]
    assert unannotated(full, False) == []
    assert unannotated(C.method, True) == [] and unannotated(C.make.__func__, True) == []
    assert "tilecore.ffi.nd" in public_modules() and "tilecore.ffi._base" not in public_modules()

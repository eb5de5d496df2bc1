"""tests/python/zoo/torchvision_defs.py — torchvision's own ResNet and MobileNetV2
definitions, loaded from an installed torchvision without importing the torchvision
package (whose compiled extension fails to load against a CPU-only torch wheel).

The model files are executed as modules of a stand-in package whose few helpers
(weights enums, the usage logger, the legacy-argument decorator) are stubs; the layer
code is torchvision's, unchanged. ``load(file)`` returns the module or None when
torchvision is not installed.
"""
import enum
import importlib.util
import os
import sys
import types

_PKG = "_tv_defs"


def _root():
    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def _module(name, **attrs):
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


def _exec(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    sys.modules[name] = m
    spec.loader.exec_module(m)
    return m


def _make_divisible(v, divisor, min_value=None):
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def _make_ntuple(x, n):
    import collections.abc
    import itertools
    if isinstance(x, collections.abc.Iterable):
        return tuple(x)
    return tuple(itertools.repeat(x, n))


def _stubs():
    if _PKG in sys.modules:
        return
    _module(_PKG, __path__=[])
    _module(f"{_PKG}.utils", _log_api_usage_once=lambda obj: None, _make_ntuple=_make_ntuple)
    _module(f"{_PKG}.transforms", __path__=[])
    _module(f"{_PKG}.transforms._presets", ImageClassification=object)
    _module(f"{_PKG}.models", __path__=[])
    _module(f"{_PKG}.ops", __path__=[])

    class Weights:
        def __init__(self, **kwargs):
            self.__dict__.update(kwargs)

    class WeightsEnum(enum.Enum):
        @classmethod
        def verify(cls, obj):
            return obj

    _module(f"{_PKG}.models._api", Weights=Weights, WeightsEnum=WeightsEnum,
            register_model=lambda *a, **k: (lambda f: f))
    _module(f"{_PKG}.models._meta", _IMAGENET_CATEGORIES=[])
    _module(f"{_PKG}.models._utils", _make_divisible=_make_divisible,
            _ovewrite_named_param=lambda kwargs, name, value: kwargs.setdefault(name, value),
            handle_legacy_interface=lambda **k: (lambda f: f))


def load(file):
    """torchvision's ``models/<file>.py`` as a module, or None without torchvision."""
    root = _root()
    if root is None or not os.path.exists(os.path.join(root, "models", file + ".py")):
        return None
    _stubs()
    if f"{_PKG}.ops.misc" not in sys.modules:
        _exec(f"{_PKG}.ops.misc", os.path.join(root, "ops", "misc.py"))
    name = f"{_PKG}.models.{file}"
    return sys.modules.get(name) or _exec(name, os.path.join(root, "models", file + ".py"))

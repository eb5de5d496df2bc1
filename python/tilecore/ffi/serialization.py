"""JSON save and load of object graphs.

Every object kind with reflected fields can be saved; an object reachable along
several paths is written once and stays shared after loading::

    s = tilecore.save_json(obj)
    again = tilecore.load_json(s)
    assert tilecore.structural_equal(again, obj)
"""

from __future__ import annotations

from typing import Any

from . import _ffi_api


def save_json(obj: Any) -> str:
    """Serialises a tilecore value (object graph, Array, Map, number, str) to a JSON str."""
    return _ffi_api.SaveJSON(obj)


def load_json(json_str: str) -> Any:
    """Rebuilds the value saved by :func:`save_json`.

    :raises tilecore.error.ValueError: the text is not a saved tilecore object graph;
        the message says where and what is wrong.
    """
    return _ffi_api.LoadJSON(json_str)


__all__ = ["load_json", "save_json"]

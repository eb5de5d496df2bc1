"""Structural equality and hashing: compare object graphs by content.

``==`` on objects is identity; these compare field by field through reflection.
With ``map_free_vars=True``, variables that are not bound inside the graphs are
matched to each other by position (``x + 1`` equals ``y + 1``).
"""

from __future__ import annotations

from typing import Any

from . import _ffi_api
from . import error


def structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> bool:
    """Whether two values are equal field by field."""
    return bool(_ffi_api.StructuralEqual(lhs, rhs, bool(map_free_vars)))


def get_first_structural_mismatch(lhs: Any, rhs: Any, map_free_vars: bool = False) -> tuple[Any, Any] | None:
    """None when equal, else ``(path_in_lhs, path_in_rhs)`` of the first difference."""
    found = _ffi_api.GetFirstStructuralMismatch(lhs, rhs, bool(map_free_vars))
    return None if found is None else (found[0], found[1])


def _printed(value: Any) -> str:
    """repr of a side of a failed check; a tree too deep for its printer must not hide
    the mismatch path, so that printer's refusal is shown in its place."""
    try:
        return repr(value)
    except (ValueError, RecursionError) as e:
        return f"<not printable: {e}>"


def assert_structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> None:
    """Raises :class:`tilecore.error.ValueError` naming the first mismatch's paths."""
    mismatch = get_first_structural_mismatch(lhs, rhs, map_free_vars)
    if mismatch is not None:
        raise error.ValueError(
            "structural equality check failed: first mismatch at "
            f"lhs {mismatch[0]} vs rhs {mismatch[1]}\nlhs: {_printed(lhs)}\nrhs: {_printed(rhs)}"
        )


def structural_hash(value: Any, map_free_vars: bool = False) -> int:
    """A hash consistent with :func:`structural_equal` (an int)."""
    return _ffi_api.StructuralHash(value, bool(map_free_vars))


__all__ = [
    "assert_structural_equal",
    "get_first_structural_mismatch",
    "structural_equal",
    "structural_hash",
]

"""tilecore/bench/cache.py — the bench's stage results (calibration tables, compiled
executables, outputs) by content key: a :class:`tilecore.runtime.content_cache.Cache`
whose folder is ``$TILECORE_CACHE/bench`` unless given."""

from __future__ import annotations

import os

from ..runtime import content_cache


def default_folder() -> str:
    """``$TILECORE_CACHE/bench`` (default ``~/.cache/tilecore/bench``)."""
    return os.path.join(content_cache.cache_root(), "bench")


class Cache(content_cache.Cache):
    """The bench's folder of stage entries by key (runtime/content_cache.py)."""

    def __init__(self, folder: str | os.PathLike[str] | None = None) -> None:
        super().__init__(folder if folder is not None else default_folder())

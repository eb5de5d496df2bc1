"""Results and their artifacts stored by content key in a folder: the bench's stage
results (calibration tables, compiled executables, outputs) and the compiler's compiled
executables (docs/compiler.md, "Compile cache").

    <folder>/<key[:2]>/<key>.json     {"row": {...}, "artifact": "<key>.tcx" | null,
                                       "artifact_sha256": ..., "checksum": sha256 of the rest}
    <folder>/<key[:2]>/<key>.tcx      the artifact, when the entry has one

An entry is written artifact first, then its JSON, each atomically (a temporary file
renamed into place), so the JSON is the commit mark: a process killed half-way leaves no
entry, or an entry whose checksum or artifact digest does not match. Such an entry is
never used: :meth:`Cache.get` reports it (:attr:`Cache.problems`), deletes it and answers
a miss, so the result is recomputed. Keys name content, not machines, so the folder can be
copied or shared (NFS) between machines; the keys callers make cover
``tilecore.ffi.fingerprint.package_fingerprint``, so a changed tilecore never meets a stale result.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from .files import file_sha256, write_bytes


def sha256_hex(data: bytes | memoryview) -> str:
    """The sha256 of ``data``, as hexadecimal digits."""
    return hashlib.sha256(data).hexdigest()


def cache_root() -> str:
    """``$TILECORE_CACHE`` (default ``~/.cache/tilecore``): the folder the caches live under."""
    return os.environ.get("TILECORE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "tilecore")


class Cache:
    """A folder of entries by key (see the module doc)."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = os.fspath(folder)
        self.problems: list[str] = []  # corrupt entries found (and removed) by get()

    def _paths(self, key: str, suffix: str) -> str:
        return os.path.join(self.folder, key[:2], key + suffix)

    def artifact_path(self, key: str, ext: str) -> str:
        return self._paths(key, ext)

    @staticmethod
    def _checksum(entry: dict[str, Any]) -> str:
        body = {k: v for k, v in entry.items() if k != "checksum"}
        return sha256_hex(json.dumps(body, sort_keys=True).encode())

    def get(self, key: str, check_artifact: bool = True) -> tuple[dict[str, Any], str | None] | None:
        """(row, artifact path or None) of a sound entry, or None (absent, or corrupt:
        then reported in :attr:`problems` and removed). ``check_artifact=False`` leaves the
        artifact's digest to a caller that checks the artifact as it reads it (and calls
        :meth:`discard` when it does not match)."""
        path = self._paths(key, ".json")
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return None
        except OSError as e:
            self.problems.append(f"{path}: unreadable cache entry ({e}); recomputed")
            return None
        try:
            entry = json.loads(data)
            ok = isinstance(entry, dict) and entry.get("checksum") == self._checksum(entry)
        except (ValueError, UnicodeDecodeError):
            ok = False
        if not ok:
            return self._corrupt(key, path, "its checksum does not match (a half-written or damaged entry)")
        art = entry.get("artifact")
        if art:
            art_path = os.path.join(os.path.dirname(path), art)
            if not check_artifact:
                return entry["row"], art_path
            try:
                if file_sha256(art_path) != entry.get("artifact_sha256"):
                    return self._corrupt(key, path, f"its artifact {art} does not match its digest")
            except OSError:
                return self._corrupt(key, path, f"its artifact {art} is missing")
            return entry["row"], art_path
        return entry["row"], None

    def discard(self, key: str, why: str) -> None:
        """Removes entry ``key``, reporting ``why`` in :attr:`problems` (a caller's own check
        of its artifact failed)."""
        self._corrupt(key, self._paths(key, ".json"), why)

    def _corrupt(self, key: str, path: str, why: str) -> None:
        self.problems.append(f"{path}: cache entry not used: {why}; recomputed")
        for p in (path, *(self._paths(key, ext) for ext in (".tcx", ".npz", ".calib.json"))):
            try:
                os.unlink(p)
            except OSError:
                pass
        return None

    def put(self, key: str, row: dict[str, Any], artifact: bytes | None = None, ext: str = "") -> str | None:
        """Stores ``row`` (and ``artifact`` as ``<key><ext>``); the artifact's path or None."""
        os.makedirs(os.path.join(self.folder, key[:2]), exist_ok=True)
        entry: dict[str, Any] = {"row": row, "artifact": None}
        art_path = None
        if artifact is not None:
            art_path = self._paths(key, ext)
            write_bytes(art_path, artifact)
            entry["artifact"], entry["artifact_sha256"] = key + ext, sha256_hex(artifact)
        entry["checksum"] = self._checksum(entry)
        write_bytes(self._paths(key, ".json"), json.dumps(entry, sort_keys=True))
        return art_path

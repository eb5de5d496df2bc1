"""The compiled graph's text (``tilecore compile --dump-graph``), as tdb reads it for
``b graph:LINE`` (TPU-MLIR's ``b mlir:LINE`` on final.mlir): the graph the compiler makes
its steps from, after the graph passes, one line per node; a node's line ends with its
name, ``@ "NAME"``, which is how a line maps to the node it defines (a line of a
constant, the header, ``return`` or ``}`` defines none)."""

from __future__ import annotations

import os

from ..runtime import files
from .target import TargetError

SUFFIX = ".graph"


def graph_path(tcx: str | os.PathLike[str]) -> str:
    """Where ``--dump-graph`` writes the text by default and tdb looks for it: the
    executable's path with ``.graph`` for ``.tcx``."""
    path = os.fspath(tcx)
    return (path[:-4] if path.endswith(".tcx") else path) + SUFFIX


def node_on_line(text: str) -> str | None:
    """The name of the node a line of graph text defines (None: it defines no node)."""
    text = text.rstrip()
    at = text.rfind(' @ "')
    if at < 0 or not text.endswith('"') or " = " not in text[:at]:
        return None
    return text[at + 4:-1]


class GraphText:
    """A graph text file: ``lines`` (from line 1) and ``path``."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        try:
            self.lines = files.read_text(self.path).splitlines()
        except (OSError, ValueError) as e:
            raise TargetError(f"graph text: {e}") from None

    def node_at(self, line: int) -> str:
        """The node line ``line`` defines; a TargetError naming the line when it defines none."""
        if not 1 <= line <= len(self.lines):
            raise TargetError(f"{self.path} has lines 1 to {len(self.lines)}, not {line}")
        name = node_on_line(self.lines[line - 1])
        if name is None:
            raise TargetError(f"line {line} of {self.path} defines no node: {self.lines[line - 1].strip()!r}")
        return name

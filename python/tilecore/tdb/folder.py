"""A folder as the target of ``tilecore tdb`` and ``tilecore check`` (TPU-MLIR's tdb takes the
compilation's folder): the executable, its inputs and the reference tensors found by name.

The rule (docs/tdb.md, "A folder as the target"):

- the executable: the one ``.tcx`` file in the folder (none, or two or more, is an error);
- the inputs: ``inputs.npz`` or ``in.npz`` (both is an error); without either, the one other
  ``.npz`` whose keys are exactly the model's inputs (two such files is an error);
- the references: every ``ref*.npz`` (``ref.npz``, ``ref_outputs.npz``, ...); without one, every
  other ``.npz`` that holds a value a node of the model writes;
- the graph text for ``b graph:LINE``: ``NAME.graph`` beside ``NAME.tcx`` (as
  ``tilecore compile --dump-graph`` writes it), when there is one.

Only the folder itself is searched, not its subfolders; ``--inputs`` and ``--ref_data`` given on
the command line replace what the folder holds.
"""

from __future__ import annotations

import os
import zipfile

from typing import TYPE_CHECKING, Any

from .graphtext import graph_path
from .target import TargetError

if TYPE_CHECKING:
    from .model import ModelTarget

INPUT_NAMES = ("inputs.npz", "in.npz")


class Folder:
    """What a folder target holds: ``tcx``, ``inputs`` (a path or None), ``refs`` (paths) and
    ``graph`` (the graph text's path or None)."""

    def __init__(self, path: str, tcx: str, inputs: str | None, refs: list[str], graph: str | None,
                 model: ModelTarget) -> None:
        self.path, self.tcx, self.inputs, self.refs, self.graph = path, tcx, inputs, refs, graph
        self.model = model  # the executable, loaded


def _keys(path: str) -> set[str]:
    """The array names of an .npz (its members without .npy), without reading the arrays."""
    try:
        with zipfile.ZipFile(path) as z:
            return {n[:-4] if n.endswith(".npy") else n for n in z.namelist()}
    except (OSError, zipfile.BadZipFile) as e:
        raise TargetError(f"{path}: not an .npz file ({e})") from None


def resolve(path: str | os.PathLike[str]) -> Folder:
    """The files of a folder target by the rule above; a TargetError naming the folder and the
    files when one is missing or the rule finds two."""
    from .model import ModelTarget

    path = os.fspath(path)
    names = sorted(n for n in os.listdir(path) if os.path.isfile(os.path.join(path, n)))
    tcx = [n for n in names if n.endswith(".tcx")]
    if not tcx:
        raise TargetError(f"{path}: the folder holds no .tcx executable (a folder target holds exactly one, with its "
                          "inputs and references)")
    if len(tcx) > 1:
        raise TargetError(f"{path}: the folder holds {len(tcx)} .tcx executables ({', '.join(tcx)}); a folder target "
                          "holds exactly one (give the file itself, with --inputs and --ref_data)")
    exe = os.path.join(path, tcx[0])
    npz = [n for n in names if n.endswith(".npz")]
    named = [n for n in INPUT_NAMES if n in npz]
    if len(named) > 1:
        raise TargetError(f"{path}: both {' and '.join(named)} are there; the inputs are one of them (remove the "
                          "other, or give --inputs)")
    model = ModelTarget(exe)
    wanted = set(model.input_names)
    if named:
        inputs = named[0]
    else:
        matching = [n for n in npz if not n.startswith("ref") and _keys(os.path.join(path, n)) == wanted]
        if len(matching) > 1:
            raise TargetError(f"{path}: {', '.join(matching)} all hold exactly the model's inputs "
                              f"({', '.join(sorted(wanted))}); name the inputs inputs.npz, or give --inputs")
        inputs = matching[0] if matching else None
    refs = [n for n in npz if n.startswith("ref")]
    if not refs:
        produced = set(model.values) - wanted
        refs = [n for n in npz if n != inputs and _keys(os.path.join(path, n)) & produced]
    graph = graph_path(exe)
    return Folder(path, exe, None if inputs is None else os.path.join(path, inputs),
                  [os.path.join(path, n) for n in refs], graph if os.path.isfile(graph) else None, model)


def target_files(target: Any, inputs: Any = None, ref_data: Any = None, graph: Any = None,
                 need_ref: bool = False) -> tuple[Any, Any, Any, Any]:
    """(target, inputs, ref_data, graph) for a debugger or a check: a folder's files fill what is
    not given (its target the loaded executable); a ``.tcx`` path's graph text is found beside
    it; anything else is returned as given. A folder without the model's inputs (or, with
    ``need_ref``, without a reference) is a TargetError naming it."""
    if not isinstance(target, (str, os.PathLike)):
        return target, inputs, ref_data, graph
    path = os.fspath(target)
    if not os.path.isdir(path):
        if graph is None and path.endswith(".tcx") and os.path.isfile(graph_path(path)):
            graph = graph_path(path)
        return target, inputs, ref_data, graph
    f = resolve(path)
    if inputs is None:
        if f.inputs is None and f.model.input_names:
            raise TargetError(f"{path}: no inputs for {os.path.basename(f.tcx)}: name them inputs.npz (or in.npz), "
                              "keep one .npz whose keys are exactly the model's inputs "
                              f"({', '.join(f.model.input_names)}), or give --inputs")
        inputs = f.inputs
    if not ref_data:
        if need_ref and not f.refs:
            raise TargetError(f"{path}: no reference for {os.path.basename(f.tcx)}: name it ref.npz (any ref*.npz), "
                              "keep an .npz holding values the model's nodes write, or give --ref_data")
        ref_data = f.refs or None
    return f.model, inputs, ref_data, graph if graph is not None else f.graph

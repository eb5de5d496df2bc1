"""`b graph:LINE` / `b mlir:LINE` on a line of the compiled graph's text (`tilecore compile
--dump-graph`), and a folder as the target of `tilecore tdb` and `tilecore check` (docs/tdb.md)."""
import io
import os
import shutil
import sys

import numpy as np
import pytest

from tilecore import cli
from tilecore.tdb import Debugger

sys.path.insert(0, os.path.dirname(__file__))
import tdb_group_model  # noqa: E402
from tdb_models import reference  # noqa: E402


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """group.tcx compiled by the command line with --dump-graph (group.graph beside it), its
    inputs.npz and ref.npz."""
    d = tmp_path_factory.mktemp("graph_folder")
    model = tdb_group_model.graph()
    (d / "group.onnx").write_bytes(model.SerializeToString())
    assert cli.main(["compile", str(d / "group.onnx"), "-o", str(d / "group.tcx"), "--target", "npu -cores=2",
                     "--dump-graph", "--quiet"]) == 0
    os.remove(d / "group.onnx")
    x = {"x": np.random.default_rng(1).standard_normal((1, 8, 8, 8)).astype(np.float32)}
    np.savez(d / "inputs.npz", **x)
    np.savez(d / "ref.npz", **reference(model, x))
    return d


def _line(d, name):
    lines = (d / "group.graph").read_text().splitlines()
    return next(i + 1 for i, t in enumerate(lines) if t.endswith(f'@ "{name}"'))


def test_a_graph_line_of_a_member_stops_where_it_starts(folder):
    out = io.StringIO()
    tdb = Debugger(str(folder / "group.tcx"), inputs=str(folder / "inputs.npz"), stdout=out)
    line = _line(folder, "tanh1")
    tdb.run_commands(f"b mlir:{line}; run; info loc")
    text = out.getvalue()
    assert f"Breakpoint 1: mlir:{line}, node `tanh1` (member 4 of the layer group step `conv0+5`" in text
    assert "Breakpoint 1, member 4 of 6 `tanh1` (Tanh) of layer group `conv0+5` (node 1) starts" in text
    assert "member 4 of 6 of the layer group: `tanh1`" in text
    g = tdb.member_at()
    assert g.name == "tanh1" and all(tdb.sim.pc(c) <= g.begin(c) for c in g.pc)
    # graph: is the same; a line defining no node, or past the end, is refused by name
    tdb.run_commands(f"delete; b graph:{_line(folder, 'conv2')}; c; b graph:1; b graph:999")
    text = out.getvalue()
    assert "Breakpoint 2, member 5 of 6 `conv2` (Conv)" in text and tdb.member_at().name == "conv2"
    assert "*** break: line 1 of " in text and "defines no node" in text
    assert "has lines 1 to " in text and "not 999" in text


def test_graph_line_without_the_graph_text_is_named(folder, tmp_path):
    shutil.copy(folder / "group.tcx", tmp_path / "alone.tcx")
    out = io.StringIO()
    tdb = Debugger(str(tmp_path / "alone.tcx"), stdout=out)
    tdb.run_commands("b mlir:3")
    assert "*** break: no graph text for this executable: compile with --dump-graph" in out.getvalue()
    assert "alone.graph" in out.getvalue()


def test_a_folder_target_for_tdb_and_check(folder, tmp_path, capsys):
    line = _line(folder, "conv1")
    rc = cli.main(["tdb", str(folder), "--do", f"b graph:{line}; run; info loc; c; check; q"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "Breakpoint 1, member 3 of 6 `conv1` (Conv)" in out and "model finished" in out
    assert "data-check: 6 node(s) compared, 6 passed, 0 failed" in out  # ref.npz found: the data-check is on
    rc = cli.main(["check", str(folder), "--report", str(tmp_path / "r.json")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "6 node(s) compared with the reference, 6 passed, 0 failed" in out
    # the inputs found by their keys when not named inputs.npz; a reference named otherwise by its values
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(folder / "group.tcx", other / "m.tcx")
    shutil.copy(folder / "inputs.npz", other / "sample.npz")
    shutil.copy(folder / "ref.npz", other / "onnxruntime_outputs.npz")
    assert cli.main(["check", str(other)]) == 0, capsys.readouterr()


def test_a_folder_with_two_executables_or_no_inputs_is_named(folder, tmp_path, capsys):
    for name in ("a.tcx", "b.tcx", "inputs.npz", "ref.npz"):
        shutil.copy(folder / ("group.tcx" if name.endswith(".tcx") else name), tmp_path / name)
    for command in (["tdb", str(tmp_path), "--do", "q"], ["check", str(tmp_path)]):
        assert cli.main(command) == 1
        err = capsys.readouterr().err
        assert f"{tmp_path}: the folder holds 2 .tcx executables (a.tcx, b.tcx); a folder target holds exactly one" \
            in err, err
    os.remove(tmp_path / "b.tcx")
    os.remove(tmp_path / "inputs.npz")
    assert cli.main(["check", str(tmp_path)]) == 1
    assert f"{tmp_path}: no inputs for a.tcx: name them inputs.npz" in capsys.readouterr().err

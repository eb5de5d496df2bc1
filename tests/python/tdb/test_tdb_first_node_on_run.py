"""docs/tdb.md: a model breakpoint stops before its node starts, the first node too: `b NODE;
run` and `b op:TYPE; run` stop before the first step when the node is a step of its own, and
where the member starts when it is the first member of the layer group that runs first. (test_tdb_model.py covers `b op:Conv; run`
and `start; continue` on a step per node.)"""
import io
import os
import sys

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import tilecore  # noqa: E402
from tilecore.tdb import Debugger  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import tdb_models as M  # noqa: E402

pytestmark = pytest.mark.npu


@pytest.fixture(scope="module", params=["per_node", "grouped"])
def compiled(request, tmp_path_factory):
    """(.tcx path, inputs path): one step per node, or the default compile, whose first
    npu step is a layer group starting with `conv`."""
    d = tmp_path_factory.mktemp(request.param)
    exe = tilecore.compile(M.graph(), **({"group": False} if request.param == "per_node" else {}))
    exe.save(str(d / "m.tcx"))
    np.savez(d / "in.npz", **M.inputs())
    return str(d / "m.tcx"), str(d / "in.npz")


@pytest.mark.parametrize("spec", ["conv", "loc:conv", "op:Conv"])
def test_run_stops_before_the_first_node(compiled, spec):
    tcx, inp = compiled
    out = io.StringIO()
    tdb = Debugger(tcx, inputs=inp, stdout=out)
    first = next(i for i, n in enumerate(tdb.model.nodes) if n.where != "view")  # the free views run first
    assert tdb.model.nodes[first].onnx_name == "conv"
    tdb.run_commands(f"b {spec}; run")
    assert not tdb.finished and tdb.model.current == first
    assert "Breakpoint 1, node `conv` (" in out.getvalue() or \
        "Breakpoint 1, member 1 of 4 `conv` (Conv) of layer group `conv+3` (node " in out.getvalue()
    tdb.onecmd("continue")  # not stopped at it again
    assert tdb.finished

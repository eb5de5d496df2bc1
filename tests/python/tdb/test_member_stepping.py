"""Stepping by member inside a layer group (docs/tdb.md, "Layer groups"): `next node` stops where
each member starts, in order, then past the group; `until MEMBER` stops where that member starts;
`info loc` names the member after each."""
import io
import os
import sys

import pytest

from tilecore.tdb import Debugger

sys.path.insert(0, os.path.dirname(__file__))
import tdb_group_model  # noqa: E402


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tcx, inputs, _ = tdb_group_model.build(tmp_path_factory.mktemp("member_stepping"))
    return str(tcx), str(inputs)


def _at_start(tdb, name):
    """The debugger is where member `name` starts: a core at its first instruction, none past it."""
    g = tdb.member_at()
    return g is not None and g.name == name and all(tdb.sim.pc(c) <= g.begin(c) for c in g.pc) and \
        any(tdb.sim.pc(c) == g.begin(c) for c in g.pc)


def test_next_node_visits_the_members_in_order(built):
    tcx, inputs = built
    out = io.StringIO()
    tdb = Debugger(tcx, inputs=inputs, stdout=out)
    tdb.run_commands("start")
    n = len(tdb_group_model.MEMBERS)
    for k, name in enumerate(tdb_group_model.MEMBERS):
        before = len(out.getvalue())
        tdb.run_commands("next node; info loc")
        text = out.getvalue()[before:]
        assert _at_start(tdb, name), (name, text)
        assert f"member {k + 1} of {n} of the layer group: `{name}`" in text
        assert f"in member {k + 1} of {n} `{name}`" in text
    tdb.run_commands("n node")  # past the last member: the group's step is the model's last
    assert tdb.finished
    # a count skips members: from the start, the third member's start
    tdb.run_commands("start; next node 3")
    assert _at_start(tdb, tdb_group_model.MEMBERS[2])


def test_until_a_member_stops_where_it_starts(built):
    tcx, inputs = built
    out = io.StringIO()
    tdb = Debugger(tcx, inputs=inputs, stdout=out)
    tdb.run_commands("start; until tanh1; info loc")
    assert _at_start(tdb, "tanh1")
    assert "member 4 of 6 of the layer group: `tanh1`, op type Tanh; reads c1" in out.getvalue()
    tdb.run_commands("until; info loc")  # without NODE: the next member
    assert _at_start(tdb, "conv2")
    tdb.run_commands("until tanh0")  # behind us: runs to the end
    assert tdb.finished
    # the group's step name still stops before the step
    tdb.run_commands("start; until conv0+5")
    assert tdb.finished and tdb.errors == 0  # (node 1 is current at start: no later start of it)

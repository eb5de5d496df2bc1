"""Every value a compiled model exposes, read where it is complete: a step's outputs as the
step ends, and each layer-group member's outputs as the member completes (from its L2
place or DDR buffer: the place of an intermediate is another's later). What ``tilecore
compare`` checks the executable that ships with (compiler/compare.py).

    rows = values_where_complete(exe, {"x": x})
    rows[0]  # {"value", "array", "node", "op_type", "inputs", "step", "group", "member"}
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from .plugins import Plugin

if TYPE_CHECKING:
    from ..runtime import Executable
    from .model import Member, Node


class _Capture(Plugin):
    """Records each output of each node, and of each member of a layer group where it ends."""

    name = "capture"

    def __init__(self, tdb: Any) -> None:
        super().__init__(tdb)
        self.rows: list[dict[str, Any]] = []

    def _read(self, name: str) -> np.ndarray:
        return self.tdb.model.read_as_model(self.tdb.sim, name)

    def _record(self, outputs, inputs, where: dict[str, Any]) -> None:
        for o in outputs:
            if o and self.tdb.model.has_value(o):
                self.rows.append(dict(where, value=o, array=self._read(o), inputs=[i for i in inputs if i]))

    def member_events(self, node: Node) -> set[tuple[str, int]]:
        return {("end", g.index) for g in node.group}

    def after_member(self, node: Node, member: Member) -> None:
        self._record(member.outputs, member.inputs, {"node": member.name, "op_type": member.op, "step": node.name,
                                                     "group": node.name, "member": member.index})

    def after_node(self, node: Node) -> None:
        if node.group or node.where == "view":  # members recorded one by one; a view is its input's bytes
            return
        self._record(node.outputs, node.inputs, {"node": node.onnx_name, "op_type": node.op_type, "step": node.name,
                                                 "group": node.name if node.members else None, "member": None,
                                                 "fused": [n for n, _ in node.fused]})


def values_where_complete(exe: Executable, inputs: Mapping[str, np.ndarray],
                          sim_target: str | None = None) -> list[dict[str, Any]]:
    """Runs ``exe`` in tdb's simulator and returns, in the order they complete, each value it
    writes: ``value`` (the ONNX name), ``array``, ``node`` and ``op_type`` (the member, or
    the step's node), ``inputs`` (the values it read), ``step`` (the step's name), ``group``
    (the layer group's step, None outside one) and ``member`` (its index in the group, or
    None). A group without member places in its debug entry gives its outputs only.
    RuntimeError when the run does not finish."""
    from .core import Debugger

    out = io.StringIO()
    dbg = Debugger(exe, inputs=dict(inputs), plugins=[_Capture], sim_target=sim_target, stdout=out)
    dbg.onecmd("run")
    if not dbg.finished:
        raise RuntimeError(f"the run did not finish: {out.getvalue().strip()[-300:]}")
    return dbg.plugin("capture").rows

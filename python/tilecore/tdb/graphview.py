"""The graph of a model as Graphviz DOT, SVG, PNG or HTML (``tilecore viz``, tdb's ``viz``).

Nodes are coloured by where they run once compiled: on the npu (blue), on the host
(orange), as a free view of their input's bytes (green), or folded away by the graph
passes (white, dashed: a BatchNormalization folded into its Conv, a Constant). Nodes
that failed a data-check are red (a thick border: the node itself is wrong; a thin
one: its inputs already differed). Edges are the values between nodes; weights and
other constants are left out. Rendering needs Graphviz's ``dot`` (Debian package
``graphviz``); ``.dot`` output does not.
"""

from __future__ import annotations

import html
import json
import math
import os
import re
import shutil
import subprocess
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from .model import ModelTarget

COLOURS = {"npu": "#9ecae1", "host": "#fdae6b", "view": "#c7e9c0", "folded": "#ffffff"}
FAILED, FAILED_INHERITED = "#ef3b2c", "#fcbba1"


class GraphError(ValueError):
    """A model that cannot be drawn, or a renderer that is missing."""


# A node's label shows at most this many characters of its name; the tooltip has all of it.
LABEL_CHARS = 60
# dot's lexer takes a quoted string of at most 16 KiB: longer text is split into pieces
# joined with DOT's `+` (concatenation of quoted strings).
_PIECE = 4096
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _visible(text):
    """``text`` with each control character (NUL, ESC, ...: DOT and SVG cannot hold them)
    shown as ``\\xNN``."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


def _q(text):
    """``text`` as a DOT quoted string: control characters shown as \\xNN, quotes and
    backslashes escaped, long text in concatenated pieces."""
    t = _visible(text)
    pieces = [t[i:i + _PIECE] for i in range(0, len(t), _PIECE)] or [""]
    return " + ".join('"' + p.replace("\\", "\\\\").replace('"', '\\"') + '"' for p in pieces)


def _short(name):
    """A node's name as its label shows it: at most LABEL_CHARS characters."""
    t = _visible(name)
    return t if len(t) <= LABEL_CHARS else t[:LABEL_CHARS - 1] + "\u2026"


class GraphSpec:
    """What is drawn: nodes, edges (from id, to id, value name) and layer groups.

    A node is a dict: ``id``, ``name`` (its ONNX name), ``op_type``, ``where``, and
    optionally ``fused`` ([(name, op type)]: the nodes computed in its epilogue, drawn in
    its box), ``step`` (the executable's step that runs it, as ``Executable.stats()`` names
    it), ``member`` (True: a member of that step's layer group, measured on its own) and
    ``group`` (the id of the layer group whose cluster holds it). A group is a dict: ``id``,
    ``name`` (its step's), ``where``, and ``nodes``, the ids of the nodes inside it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.nodes = []       # dicts: id, name, op_type, where (fused, step, member, group)
        self.edges = []       # (from id, to id, value name)
        self.groups = []      # dicts: id, name, where, nodes
        self.inputs, self.outputs = [], []


def _fused_hosts(members: list[dict[str, Any]], fused: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """Per member of a layer group, the nodes fused into it: as the file records them, or
    (older files) the fused node whose name begins one of the member's output values."""
    if any("fused" in m for m in members):
        return [list(m.get("fused", [])) for m in members]
    hosts = [[] for _ in members]
    for f in fused:
        k = next((i for i, m in enumerate(members)
                  if any(p["value"].startswith(f[0]) for p in m.get("out", []))), None)
        if k is not None:
            hosts[k].append(f)
    return hosts


def from_model_target(target: ModelTarget) -> GraphSpec:
    """The graph of a ``.tcx`` (a :class:`tilecore.tdb.model.ModelTarget`): its nodes in
    order, a layer group's members (with the values between them) in a cluster of its own,
    each node fused into another drawn in its host's box."""
    from .debug_info import read_debug_info

    g = GraphSpec(target.name)
    debug = read_debug_info(target.desc)
    producer = {}
    consts = {target.buffers[b]["name"] for b in target.constant_buffers}
    for name in target.input_names:
        producer[name] = f"in:{name}"
        g.inputs.append(name)
    reads = []  # (node id, values it reads)
    views = []  # a step's views come before it: a group's are drawn inside it when a member feeds them
    for n in target.nodes:
        nid = f"n{n.index}"
        if n.where == "view":
            node = {"id": nid, "name": n.onnx_name, "op_type": n.op_type, "where": n.where}
            g.nodes.append(node)
            views.append(node)
            reads.append((nid, n.inputs))
            for v in n.outputs:
                producer[v] = nid
            continue
        sd = debug[n.step_index]
        if not n.members:
            g.nodes.append({"id": nid, "name": n.onnx_name, "op_type": n.op_type, "where": n.where,
                            "fused": list(n.fused), "step": n.name})
            reads.append((nid, n.inputs))
            for v in n.outputs:
                producer[v] = nid
            views = []
            continue
        group = {"id": f"cluster_{nid}", "name": n.name, "where": n.where, "nodes": []}
        g.groups.append(group)
        recorded = sd.members if sd.members and all("in" in m for m in sd.members) else []
        members = recorded or [{"node": name, "op": op} for name, op in n.members]
        hosts = _fused_hosts(recorded, sd.fused) if recorded else [[] for _ in members]
        placed = {f for h in hosts for f in h}
        mids = []
        for k, (m, fused) in enumerate(zip(members, hosts)):
            mid = f"{nid}m{k}"
            mids.append(mid)
            g.nodes.append({"id": mid, "name": m["node"], "op_type": m["op"] or "?", "where": n.where,
                            "fused": fused, "step": n.name, "member": True, "group": group["id"]})
            group["nodes"].append(mid)
            if recorded:
                reads.append((mid, m["in"]))
                for p in m["out"]:
                    producer[p["value"]] = mid
        for k, f in enumerate(f for f in sd.fused if f not in placed):  # its host is not recorded
            fid = f"{nid}f{k}"
            g.nodes.append({"id": fid, "name": f[0], "op_type": f[1] or "?", "where": "fused", "step": n.name,
                            "group": group["id"]})
            group["nodes"].append(fid)
        if not recorded:  # an older file: the members in their order, the group's values at its ends
            reads.append((mids[0], n.inputs))
            g.edges += [(a, b, "") for a, b in zip(mids, mids[1:])]
            for v in n.outputs:
                producer[v] = mids[-1]
        member_values = {p["value"] for m in recorded for p in m["out"]}
        for view in views:
            if any(producer.get(v) in mids or v in member_values for v in target.nodes[int(view["id"][1:])].inputs):
                view["group"] = group["id"]
                group["nodes"].append(view["id"])
        views = []
    for nid, values in reads:
        for v in values:
            if v in producer and v not in consts and producer[v] != nid:
                g.edges.append((producer[v], nid, v))
    for name in target.output_names:
        if name in producer:
            g.outputs.append(name)
            g.edges.append((producer[name], f"out:{name}", name))
    return g


def from_onnx(path: str | os.PathLike[str], placement: Mapping[str, str] | None = None) -> GraphSpec:
    """The graph of an ONNX model; ``placement`` maps ONNX node names to npu|host|view
    (default: compile the model with tilecore.compile to find out)."""
    import onnx

    try:
        model = onnx.load(os.fspath(path))
    except Exception as e:  # noqa: BLE001  (a broken file: its message)
        raise GraphError(f"{path}: not an ONNX model: {e}") from None
    if placement is None:
        placement = onnx_placement(model)
    g = GraphSpec(model.graph.name or os.path.basename(os.fspath(path)))
    inits = {t.name for t in model.graph.initializer}
    producer = {}
    for v in model.graph.input:
        if v.name not in inits:
            producer[v.name] = f"in:{v.name}"
            g.inputs.append(v.name)
    for i, n in enumerate(model.graph.node):
        nid = f"n{i}"
        name = n.name or f"{n.op_type}_{i}"
        g.nodes.append({"id": nid, "name": name, "op_type": n.op_type, "where": placement.get(name, "folded")})
        for v in n.input:
            if v in producer:
                g.edges.append((producer[v], nid, v))
        for v in n.output:
            if v:
                producer[v] = nid
    for v in model.graph.output:
        if v.name in producer:
            g.outputs.append(v.name)
            g.edges.append((producer[v.name], f"out:{v.name}", v.name))
    return g


def onnx_placement(model: Any) -> dict[str, str]:
    """{ONNX node name: npu|host|view} from compiling the model (nodes absent were folded)."""
    from ..compiler.driver import compile as _compile
    from .model import ModelTarget

    try:
        exe = _compile(model, group=False)  # a step per node: where each node runs
    except Exception as e:  # noqa: BLE001  (the compiler's message names the nodes)
        raise GraphError(f"cannot compile the model to find where its nodes run: {str(e).splitlines()[0]}") from None
    out = {}
    for n in ModelTarget(exe).nodes:
        out.setdefault(n.onnx_name, n.where)
    return out


def load_check_report(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A ``tilecore check --report`` file, checked for what the drawing reads: an object whose
    ``nodes`` is a list of objects, each with the ``onnx_name`` and ``status`` strings (and
    ``inputs_match`` a bool when given). GraphError naming the file otherwise."""
    from ..runtime import files

    name = os.fspath(path)
    try:
        rep = files.load_json(name)
    except (OSError, ValueError) as e:
        raise GraphError(str(e) if str(e).startswith(name) else f"{name}: {e}") from None
    if not isinstance(rep, dict) or not isinstance(rep.get("nodes"), list):
        raise GraphError(f"{name}: not a tilecore check report (an object whose `nodes` lists the nodes checked)")
    for i, r in enumerate(rep["nodes"]):
        if not (isinstance(r, dict) and isinstance(r.get("onnx_name"), str) and isinstance(r.get("status"), str)
                and isinstance(r.get("inputs_match", False), bool)):
            raise GraphError(f"{name}: not a tilecore check report: node entry {i} is {json.dumps(r)[:80]}, not an "
                             "object with the strings `onnx_name` and `status` (and the bool `inputs_match`)")
    return rep


def load_stats(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The statistics of a run (``tilecore run --stats``, the JSON of ``Executable.stats()``),
    checked for what the drawing reads: ``ops``, a list of objects with the strings ``name``
    and the integer ``cycles`` (a layer group's ``members`` each with ``node`` and
    ``cycles``). GraphError naming the file otherwise."""
    from ..runtime import files

    name = os.fspath(path)
    try:
        st = files.load_json(name)
    except (OSError, ValueError) as e:
        raise GraphError(str(e) if str(e).startswith(name) else f"{name}: {e}") from None

    def counted(r, key):
        return isinstance(r, dict) and isinstance(r.get(key), str) and isinstance(r.get("cycles"), int) \
            and not isinstance(r["cycles"], bool) and r["cycles"] >= 0

    if not isinstance(st, dict) or not isinstance(st.get("ops"), list):
        raise GraphError(f"{name}: not the statistics of a run (tilecore run --stats: an object whose `ops` lists "
                         "the steps)")
    for i, o in enumerate(st["ops"]):
        if not (counted(o, "name") and isinstance(o.get("members", []), list)
                and all(counted(m, "node") for m in o.get("members", []))):
            raise GraphError(f"{name}: not the statistics of a run: op entry {i} is {json.dumps(o)[:80]}, not an "
                             "object with the string `name` and the integer `cycles` >= 0 (and `members` each with "
                             "`node` and `cycles`)")
    return st


def _cycles(stats: Mapping[str, Any] | None) -> dict[tuple[str, str | None], int]:
    """{(step, None): its cycles, (step, member): the member's} from ``Executable.stats()``."""
    out = {}
    for o in (stats or {}).get("ops", []):
        step = o.get("node", o["name"])
        out[(step, None)] = o["cycles"]
        for m in o.get("members", []):
            out[(step, m["node"])] = m["cycles"]
    return out


# shades by measured cycles: from the first colour (none) to the last (the costliest node)
HEAT = ((0xff, 0xf7, 0xec), (0xef, 0x65, 0x48))


def _heat(share: float) -> str:
    t = math.sqrt(min(max(share, 0.0), 1.0))  # the small nodes stay visible
    return "#" + "".join(f"{round(a + (b - a) * t):02x}" for a, b in zip(*HEAT))


def to_dot(g: GraphSpec, check: Mapping[str, Any] | None = None, stats: Mapping[str, Any] | None = None) -> str:
    """DOT text. ``check`` is a data-check report (``tilecore check --report``) or None;
    ``stats`` a run's statistics (``Executable.stats()``) or None: nodes are then shaded by
    their measured cycles (a layer group's members each by its own) and labelled with them."""
    failed = {}
    for r in (check or {}).get("nodes", []):
        if r.get("status") == "fail":
            failed[r["onnx_name"]] = bool(r.get("inputs_match"))
    cycles = _cycles(stats)
    top = max([c for (_, member), c in cycles.items() if member is not None] +
              [c for (step, member), c in cycles.items() if member is None
               and not any(k[0] == step and k[1] is not None for k in cycles)] + [1])
    total = max(int((stats or {}).get("cycles", 0)), 1)
    lines = [f"digraph {_q(g.name)} {{", '  rankdir=TB; nodesep=0.25; ranksep=0.3;',
             '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11, height=0.3];',
             '  edge [fontname="Helvetica", fontsize=8, color="#555555", arrowsize=0.6];']
    for name in g.inputs:
        lines.append(f'  {_q("in:" + name)} [label={_q(_short(name))}, tooltip={_q(name)}, shape=ellipse, '
                     'fillcolor="#eeeeee"];')
    for name in g.outputs:
        lines.append(f'  {_q("out:" + name)} [label={_q(_short(name))}, tooltip={_q(name)}, shape=ellipse, '
                     'fillcolor="#eeeeee"];')
    in_group = {}
    for n in g.nodes:
        fill = COLOURS.get(n["where"], "#ffffff")
        extra = ', style="rounded,dashed"' if n["where"] in ("folded", "fused") else ""
        spent = cycles.get((n.get("step"), n["name"] if n.get("member") else None)) if "step" in n else None
        if cycles and n["where"] != "view":
            fill = _heat((spent or 0) / top)
        if n["name"] in failed:
            wrong = failed[n["name"]]
            fill = FAILED if wrong else FAILED_INHERITED
            extra += ', penwidth=3, color="#a50f15"' if wrong else ', color="#a50f15"'
        detail = n["op_type"] + " \u00b7 " + n["where"]
        if spent is not None:
            detail += f" \u00b7 {spent} cycles ({100.0 * spent / total:.1f}%)"
        label = f'{_q(_short(n["name"]))} + "\\n" + {_q(_short(detail))}'
        tooltip = f'{_q(n["name"])} + "\\n" + {_q(detail)}'
        for name, op in n.get("fused", []):  # computed in the node's epilogue: in its box
            label += f' + "\\n+ " + {_q(_short(name) + " (" + _short(op) + ")")}'
            tooltip += f' + "\\n+ fused " + {_q(name + " (" + op + ")")}'
        text = f'{_q(n["id"])} [label={label}, fillcolor="{fill}"{extra}, tooltip={tooltip}];'
        if n.get("group"):
            in_group.setdefault(n["group"], []).append(text)
        else:
            lines.append("  " + text)
    for grp in g.groups:
        label = f"layer group {grp['name']} \u00b7 {len(grp['nodes'])} nodes \u00b7 {grp['where']}"
        if (grp["name"], None) in cycles:
            label += f" \u00b7 {cycles[(grp['name'], None)]} cycles"
        lines.append(f"  subgraph {_q(grp['id'])} {{")
        lines.append(f'    label={_q(_short(label))}; tooltip={_q(label)}; fontname="Helvetica"; fontsize=10; '
                     'style="rounded"; color="#3182bd"; labeljust=l;')
        lines += ["    " + t for t in in_group.get(grp["id"], [])]
        lines.append("  }")
    seen = set()
    for a, b, v in g.edges:
        if (a, b, v) in seen:
            continue
        seen.add((a, b, v))
        lines.append(f"  {_q(a)} -> {_q(b)} [tooltip={_q(v)}" + (", style=dashed" if not v else "") + "];")
    legend = [("npu", COLOURS["npu"]), ("host", COLOURS["host"]), ("view", COLOURS["view"]),
              ("folded", COLOURS["folded"])] + ([("data-check failed", FAILED)] if failed else [])
    if cycles:
        legend = [("view", COLOURS["view"]), ("few cycles", _heat(0.0)), (f"most cycles ({top})", _heat(1.0))] \
            + legend[4:]
    lines.append(f'  subgraph cluster_legend {{ label={_q("cycles measured" if cycles else "where it runs")}; '
                 'fontname="Helvetica"; fontsize=10; color="#bbbbbb";')
    for i, (text, colour) in enumerate(legend):
        style = ', style="rounded,dashed"' if text == "folded" else ""
        lines.append(f'    legend{i} [label={_q(text)}, fillcolor="{colour}", fontsize=9{style}];')
    lines.append("    " + " -> ".join(f"legend{i}" for i in range(len(legend))) + " [style=invis];")
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(dot_text: str, fmt: str) -> bytes:
    """Runs ``dot -T<fmt>``; returns the bytes."""
    exe = shutil.which("dot")
    if exe is None:
        raise GraphError("Graphviz's `dot` is not installed (Debian: apt-get install graphviz); write a .dot file instead")
    r = subprocess.run([exe, f"-T{fmt}"], input=dot_text.encode(), capture_output=True, timeout=300)
    if r.returncode != 0:
        raise GraphError(f"dot failed: {r.stderr.decode(errors='replace').strip()}")
    return r.stdout


def write(g: GraphSpec, path: str | os.PathLike[str], check: Mapping[str, Any] | None = None,
          stats: Mapping[str, Any] | None = None) -> str | os.PathLike[str]:
    """Writes ``g`` to ``path`` in the format its extension names (.dot .svg .png .html)."""
    path = os.fspath(path)
    ext = os.path.splitext(path)[1].lower()
    dot = to_dot(g, check, stats)
    if ext in (".dot", ".gv"):
        data = dot.encode()
    elif ext in (".svg", ".png", ".pdf"):
        data = render(dot, ext[1:])
    elif ext in (".html", ".htm"):
        svg = render(dot, "svg").decode()
        svg = svg[svg.find("<svg"):]
        n_fail = sum(1 for r in (check or {}).get("nodes", []) if r.get("status") == "fail")
        data = ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + html.escape(g.name) +
                "</title></head>\n<body style=\"font-family: Helvetica, sans-serif\">\n<h1>" + html.escape(g.name) +
                f"</h1>\n<p>{len(g.nodes)} nodes: " +
                ", ".join(f"{sum(n['where'] == w for n in g.nodes)} {w}" for w in ("npu", "host", "view", "folded")) +
                (f"; {n_fail} failed the data-check" if check else "") + ". Hover a node or an edge for its name.</p>\n"
                + svg + "\n</body></html>\n").encode()
    else:
        raise GraphError(f"{path}: unknown output format `{ext}` (use .svg, .png, .html or .dot)")
    with open(path, "wb") as f:
        f.write(data)
    return path

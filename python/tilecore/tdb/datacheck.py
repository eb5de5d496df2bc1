"""The data-check plugin: after each node of a model, its outputs against reference data.

The reference is one or more ``.npz`` files of tensors keyed by ONNX value names, as
ONNX Runtime produces them (every intermediate value added as a graph output) or
``tilecore compare`` reports them. An output passes when it is *equal* (integers, and
floats bit for bit), *close* (``allclose`` with rtol/atol) or *similar* (cosine and
Euclidean similarity at or above their thresholds, TPU-MLIR's npz_tool measures);
otherwise it is *different*. A node with a different output is then judged by its
inputs: when every input that has a reference matches it, the node itself is wrong;
otherwise its inputs already differ and the fault is upstream.

With ``stop`` on (the default in tdb) the debugger stops after the first node that
diverges and after each later node that is wrong itself (not after nodes that only
inherit a difference). ``tilecore check`` runs the whole model with ``stop`` off and
writes every node's result to a JSON report.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from .core import CommandError
from .plugins import Plugin, complete_words

if TYPE_CHECKING:
    import numpy.typing as npt

    from .core import Debugger
    from .model import Member, Node

DEFAULTS = {"rtol": 1e-4, "atol": 1e-5, "cosine": 0.999, "euclid": 0.99}
BAD = ("different", "shape", "dtype")  # the statuses that fail a node


def similarity(ours: npt.ArrayLike, ref: npt.ArrayLike) -> tuple[float, float, float]:
    """(cosine, Euclidean similarity, max abs error) in float64; Euclidean similarity is
    1 - |a - b| / |(a + b) / 2| (1 for two zero tensors)."""
    a = np.asarray(ours, np.float64).reshape(-1)
    b = np.asarray(ref, np.float64).reshape(-1)
    both = np.isfinite(a) & np.isfinite(b)
    if not both.all():
        same_specials = np.array_equal(np.isnan(a), np.isnan(b)) and np.array_equal(a[~both], b[~both])
        if not same_specials:
            return float("nan"), float("nan"), float("inf")
        a, b = a[both], b[both]
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    cos = 1.0 if na == 0 and nb == 0 else (0.0 if na == 0 or nb == 0 else float(np.dot(a, b) / (na * nb)))
    dist = float(np.linalg.norm(a - b))
    mid = float(np.linalg.norm((a + b) / 2))
    euclid = 1.0 if dist == 0 else (1.0 - dist / mid if mid > 0 else 0.0)
    return cos, euclid, float(np.max(np.abs(a - b))) if a.size else 0.0


_CHUNK = 1 << 16  # elements per pass: the float64 copies stay in the cache


def _finite_measures(a: np.ndarray, b: np.ndarray, rtol: float, atol: float) -> tuple | None:
    """similarity() and allclose() of two finite float vectors in one pass over chunks
    (five times faster than whole-array float64 copies on a member's output); None when
    either holds a NaN or an Inf."""
    aa = bb = ab = dd = ss = 0.0
    err, close = 0.0, True
    for i in range(0, a.size, _CHUNK):
        x, y = a[i:i + _CHUNK], b[i:i + _CHUNK]
        close = close and bool(np.all(np.abs(x - y) <= atol + rtol * np.abs(y)))  # allclose's test
        x, y = x.astype(np.float64), y.astype(np.float64)
        aa, bb, ab = aa + np.dot(x, x), bb + np.dot(y, y), ab + np.dot(x, y)
        s = x + y
        ss += np.dot(s, s)
        x -= y
        dd += np.dot(x, x)
        err = max(err, float(np.max(np.abs(x))) if x.size else 0.0)
    if not np.isfinite(aa + bb + ss):
        return None
    na, nb = np.sqrt(aa), np.sqrt(bb)
    cos = 1.0 if na == 0 and nb == 0 else (0.0 if na == 0 or nb == 0 else float(ab / (na * nb)))
    dist, mid = float(np.sqrt(dd)), float(np.sqrt(ss)) / 2
    euclid = 1.0 if dist == 0 else (1.0 - dist / mid if mid > 0 else 0.0)
    return cos, euclid, err, close


def compare(ours: npt.ArrayLike, ref: npt.ArrayLike, thresholds: Mapping[str, float] = DEFAULTS) -> dict[str, Any]:
    """One tensor against its reference: a dict with status equal|close|similar|different, or
    shape (element counts differ) or dtype (an integer against a float: not compared)."""
    ours, ref = np.asarray(ours), np.asarray(ref)
    row = {"shape": list(ours.shape), "ref_shape": list(ref.shape)}
    if ours.size != ref.size:
        row["status"] = "shape"
        return row
    if (ours.dtype.kind in "iub") != (ref.dtype.kind in "iub") or ours.dtype.kind not in "iubf" or \
            ref.dtype.kind not in "iubf":
        # an integer against a float (or anything against a complex or a string): no comparison
        # says what either means (truncating the floats passed 0.9 against 0)
        row.update(status="dtype", dtype=str(ours.dtype), ref_dtype=str(ref.dtype))
        return row
    if ours.dtype.kind in "iub":
        equal = np.array_equal(ours.reshape(-1).astype(np.int64), ref.reshape(-1).astype(np.int64))
        row["status"] = "equal" if equal else "different"
        if not equal:
            diff = ours.reshape(-1).astype(np.int64) != ref.reshape(-1).astype(np.int64)
            row["mismatches"] = int(diff.sum())
        return row
    # floats of two widths (an f16 model against an f32 reference): the reference rounded to
    # the output's precision, so the rounding itself is not a difference
    a, b = ours.reshape(-1), ref.reshape(-1).astype(ours.dtype, copy=False)
    fast = _finite_measures(a, b, thresholds["rtol"], thresholds["atol"])
    if (fast is not None and fast[2] == 0) or (fast is None and np.array_equal(a, b, equal_nan=True)):
        row.update(status="equal", cosine=1.0, euclid=1.0, max_abs_error=0.0)
        return row
    if fast is None:  # NaN or Inf: the special values must match
        cos, euc, err = similarity(a, b)
        close = np.allclose(a, b, rtol=thresholds["rtol"], atol=thresholds["atol"], equal_nan=True)
    else:
        cos, euc, err, close = fast
    row.update(cosine=cos, euclid=euc, max_abs_error=err)
    if close:
        row["status"] = "close"
    elif cos >= thresholds["cosine"] and euc >= thresholds["euclid"]:
        row["status"] = "similar"
    else:
        row["status"] = "different"
    return row


def describe(row: Mapping[str, Any]) -> str:
    if row["status"] == "shape":
        return f"shape {row['shape']} against the reference's {row['ref_shape']}"
    if row["status"] == "dtype":
        return f"dtype {row['dtype']} against the reference's {row['ref_dtype']}"
    if "cosine" in row:
        return (f"{row['status']}: cosine {row['cosine']:.6f}, euclid {row['euclid']:.6f}, "
                f"max abs error {row['max_abs_error']:.3g}")
    return row["status"] + (f" ({row['mismatches']} elements differ)" if "mismatches" in row else "")


def load_reference(ref_data: Any) -> dict[str, np.ndarray]:
    """{name: array} from .npz paths (later files win) or a dict."""
    if ref_data is None:
        return {}
    if isinstance(ref_data, dict):
        return {str(k): np.asarray(v) for k, v in ref_data.items()}
    if isinstance(ref_data, (str, os.PathLike)):
        ref_data = [ref_data]
    from ..runtime import files

    out = {}
    for path in ref_data:
        out.update(files.load_npz(path))
    return out


class DataCheckPlugin(Plugin):
    """check [on|off|VALUE|set NAME=X ...], info check: outputs of each node against reference data."""

    name = "data-check"

    def __init__(self, tdb: Debugger) -> None:
        super().__init__(tdb)
        self.ref = {}
        self.thresholds = dict(DEFAULTS)
        self.enabled = True
        self.stop = True
        self.results = {}    # node index -> result dict
        self.first = None    # the first divergent node's result

    def on_load(self) -> None:
        self.tdb.info_handlers["check"] = (self.info_check, None)

    def set_reference(self, ref_data: Any) -> None:
        """Takes the reference data; TargetError when it holds none of the values the model's
        nodes produce (a check against it would compare nothing and pass)."""
        from .target import TargetError

        ref = load_reference(ref_data)
        m = self.tdb.model
        produced = [o for n in m.nodes for o in n.outputs if o in m.values]
        if not any(o in ref for o in produced):
            have = sorted(ref)
            raise TargetError("the reference holds none of the model's values: it has "
                              + (", ".join(have[:6]) + (", ..." if len(have) > 6 else "") if have else "no arrays")
                              + "; the nodes produce " + ", ".join(produced[:6]) + (", ..." if len(produced) > 6 else ""))
        self.ref = ref

    def set_thresholds(self, words: list[str]) -> None:
        """Sets thresholds from NAME=X words (rtol, atol, cosine, euclid); CommandError naming
        the word that is not one, or whose X is not a number >= 0."""
        new = dict(self.thresholds)
        for w in words:
            k, sep, v = w.partition("=")
            if not sep or k not in new:
                raise CommandError(f"expected NAME=X with NAME one of {', '.join(new)}, got '{w}'")
            try:
                x = float(v)
            except ValueError:
                raise CommandError(f"{k}: expected a number, got '{v}'") from None
            if not x >= 0 or x == float("inf"):
                raise CommandError(f"{k}: expected a finite number >= 0, got '{v}'")
            new[k] = x
        self.thresholds = new

    def on_start(self) -> None:
        self.results = {}
        self.first = None

    def _value(self, name):
        return self.tdb.model.read_as_model(self.tdb.sim, name)

    def _checking(self) -> bool:
        return self.enabled and bool(self.ref) and self.tdb.model is not None

    def member_events(self, node: Node) -> set[tuple[str, int]]:
        """The end of every member with a reference for an output: each is checked there."""
        if not self._checking():
            return set()
        return {("end", g.index) for g in node.group if any(o in self.ref for o in g.outputs)}

    def after_member(self, node: Node, member: Member) -> list[str] | None:
        if not self._checking():
            return None
        res = {"index": node.index, "member": member.index, "node": member.name, "onnx_name": member.name,
               "op_type": member.op, "where": node.where, "group": node.name, "outputs": [], "inputs": []}
        return self._judge(res, member.outputs, member.inputs, (node.index, member.index),
                           f"member `{member.name}` ({member.op}) of layer group `{node.name}` (node {node.index + 1}, "
                           f"{node.where})", "member")

    def after_node(self, node: Node) -> list[str] | None:
        if not self._checking():
            return None
        if node.group:  # its members were checked one by one, each where it completed
            return None
        res = {"index": node.index, "node": node.name, "onnx_name": node.onnx_name, "op_type": node.op_type,
               "where": node.where, "outputs": [], "inputs": []}
        return self._judge(res, node.outputs, node.inputs, (node.index, -1),
                           f"node {node.index + 1} `{node.onnx_name}` ({node.op_type}, {node.where})", "node")

    def _judge(self, res, outputs, inputs, key, what, noun):
        """Compares ``outputs`` (then, for a difference, ``inputs``) with the reference, records
        ``res`` under ``key`` and returns the stop's message, if any."""
        t = self.tdb
        outs = [o for o in outputs if o in self.ref and t.model.has_value(o)]
        if not outs:
            res["status"] = "no reference"
            self.results[key] = res
            return None
        for o in outs:
            row = compare(self._value(o), self.ref[o], self.thresholds)
            res["outputs"].append(dict(row, name=o))
        bad = [r for r in res["outputs"] if r["status"] in BAD]
        if not bad:
            res["status"] = "pass"
            self.results[key] = res
            return None
        res["status"] = "fail"
        earlier = {r["name"]: r for k, row in self.results.items() if k[0] == key[0] for r in row["outputs"]}
        for i in inputs:
            if i in earlier:  # a member's output checked where it was complete (its place may be reused)
                res["inputs"].append(dict(earlier[i]))
            elif i in self.ref and i in t.model.values:
                row = compare(self._value(i), self.ref[i], self.thresholds)
                res["inputs"].append(dict(row, name=i))
        differ = [r["name"] for r in res["inputs"] if r["status"] in BAD]
        res["inputs_match"] = not differ
        if differ:
            res["verdict"] = f"this {noun}'s inputs already differ ({', '.join(differ)})"
        else:
            checked = [r["name"] for r in res["inputs"]]
            res["verdict"] = (f"this {noun} is wrong: its inputs match the reference" if checked else
                              f"this {noun} is wrong: its inputs are the model's inputs and constants")
        self.results[key] = res
        first = self.first is None
        if first:
            self.first = res
        if not self.stop or not (first or not differ):
            return None
        lines = [f"Data-check: {what} diverges from the reference; {res['verdict']}"]
        for r in res["outputs"]:
            lines.append(f"  output `{r['name']}`: {describe(r)}")
        for r in res["inputs"]:
            lines.append(f"  input `{r['name']}`: {describe(r)}")
        return ["\n".join(lines)]

    def report(self) -> dict[str, Any]:
        """The JSON-able summary of every node checked so far."""
        rows = [self.results[k] for k in sorted(self.results)]  # (node, member): members in order
        return {"thresholds": dict(self.thresholds), "nodes": rows,
                "checked": sum(r["status"] in ("pass", "fail") for r in rows),
                "passed": sum(r["status"] == "pass" for r in rows),
                "failed": sum(r["status"] == "fail" for r in rows),
                "wrong_nodes": [r["onnx_name"] for r in rows if r["status"] == "fail" and r.get("inputs_match")],
                "first_divergence": self.first}

    def info_check(self, arg: str) -> None:
        t = self.tdb
        if not self.ref:
            t.message("No reference data (give --ref_data REF.npz)")
            return
        rep = self.report()
        t.message(f"data-check: {rep['checked']} node(s) compared, {rep['passed']} passed, {rep['failed']} failed; "
                  f"thresholds " + ", ".join(f"{k}={v:g}" for k, v in self.thresholds.items()))
        for r in rep["nodes"]:
            if r["status"] == "fail":
                member = f", member of layer group `{r['group']}`" if "group" in r else ""
                t.message(f"  {r['index'] + 1:4d} {r['onnx_name']} ({r['op_type']}{member}): {r['verdict']}")

    def do_check(self, arg: str) -> bool | None:
        """check [on|off] | check stop|nostop | check set NAME=X ... | check VALUE
        Data-check against --ref_data: switch it, whether it stops at a divergence, set thresholds
        (rtol, atol, cosine, euclid), or compare one graph value with its reference now."""
        t = self.tdb
        words = arg.split()
        if not words:
            return self.info_check("")
        if words[0] in ("on", "off"):
            self.enabled = words[0] == "on"
            t.message(f"data-check {'on' if self.enabled else 'off'}")
            return
        if words[0] in ("stop", "nostop"):
            self.stop = words[0] == "stop"
            t.message(f"data-check {'stops' if self.stop else 'does not stop'} at divergences")
            return
        if words[0] == "set":
            self.set_thresholds(words[1:])
            t.message("thresholds " + ", ".join(f"{k}={v:g}" for k, v in self.thresholds.items()))
            return
        t.require_started()
        name = words[0]
        if t.model is None or not t.model.has_value(name):
            raise CommandError(f"no graph value `{name}`")
        if name not in self.ref:
            raise CommandError(f"the reference data has no `{name}`")
        t.message(f"`{name}`: {describe(compare(self._value(name), self.ref[name], self.thresholds))}")

    def do_viz(self, arg: str) -> bool | None:
        """viz FILE
        Draw the model's graph (FILE .svg, .html, .png or .dot), nodes coloured by where they run and
        those that failed the data-check so far in red."""
        from . import graphview

        t = self.tdb
        if t.model is None:
            raise CommandError("viz draws a model's graph; this target is a kernel")
        if not arg.strip():
            raise CommandError("usage: viz FILE (.svg, .html, .png or .dot)")
        try:
            path = graphview.write(graphview.from_model_target(t.model), arg.strip(), self.report())
        except (graphview.GraphError, OSError) as e:
            raise CommandError(str(e)) from None
        t.message(f"wrote {path}")

    def complete_check(self, text: str, line: str, begidx: int, endidx: int) -> list[str]:
        return complete_words(text, ["on", "off", "stop", "nostop", "set"] + list(self.ref))

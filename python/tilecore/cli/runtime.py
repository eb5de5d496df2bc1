"""``tilecore run`` and ``tilecore profile``: run a ``.tcx`` executable and report its figures.

    tilecore run OUT.tcx --inputs IN.npz [-o OUT.npz] [--stats STATS.json] [--trace TRACE.json [--commands]] [--top K]
    tilecore profile OUT.tcx --inputs IN.npz       # per-op table sorted by cycles

IN.npz and OUT.npz are keyed by the model's input and output names. Progress is shown
with tqdm when it is installed (plain lines otherwise, on runs of many steps).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

from ..runtime.model_report import front_end_bound
from . import _fail, arg, check_outputs, command


class _Progress:
    """A per-step progress bar: tqdm when available, else a line every 10% on long runs."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.bar = None
        self.last = -1

    def __call__(self, step, n, node) -> None:
        if not self.enabled:
            return
        if self.bar is None and self.last < 0:
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=n, unit="step", desc="run", leave=False, file=sys.stderr)
            except ImportError:
                self.bar = None
        if self.bar is not None:
            self.bar.set_postfix_str(node[:30], refresh=False)
            self.bar.update(step + 1 - self.bar.n)
        elif n >= 20 and (step * 10) // n != self.last:
            self.last = (step * 10) // n
            print(f"run: step {step + 1}/{n} ({node})", file=sys.stderr)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _load_inputs(path):
    from ..runtime.files import load_npz

    return load_npz(path)  # a file that is not an .npz of arrays: a ValueError naming it


def npz_path(path: str) -> str:
    """The file ``np.savez(path)`` writes: ``path`` with ``.npz`` appended unless it ends so."""
    return path if path.endswith(".npz") else path + ".npz"


def _run(args):
    from .. import runtime
    from ..ffi.error import TilecoreError

    try:
        if getattr(args, "commands", False):  # (the device's simulator records every command)
            from .. import npu

            target = runtime.device_attributes(npu(args.device))["target"]
            if "-trace" not in target.split():
                runtime.npu_configure(args.device, target + " -trace")
        exe = runtime.load_executable(args.executable)
        inputs = _load_inputs(args.inputs)
        prog = _Progress(not getattr(args, "quiet", False))
        try:
            outs = exe.run(inputs, device=args.device, progress=prog)
        finally:
            prog.close()
    except (ValueError, TypeError, TilecoreError) as e:
        return None, None, _fail(str(e).split("\nC++ backtrace")[0])
    return exe, outs, 0


@command("run", "run a .tcx executable on the simulator (npu steps) and the CPU (host steps)", [
    arg("executable", help="the .tcx file"),
    arg("--inputs", required=True, help=".npz of the inputs, keyed by input name"),
    arg("-o", "--output", help="write the outputs to this .npz"),
    arg("--stats", help="write the statistics (cycles, mac_utilisation, ops) as JSON here"),
    arg("--trace", help="write a Chrome/Perfetto trace here (one track per engine per core)"),
    arg("--commands", action="store_true",
        help="with --trace: every tile command of the npu steps on its engine's track too (the simulator "
             "records them, which makes it slower)"),
    arg("--device", type=int, default=0, help="npu device id (default 0)"),
    arg("--top", type=int, metavar="K", help="print each output's K largest elements (a classifier's top classes)"),
    arg("--quiet", action="store_true", help="no progress bar"),
])
def run_cmd(args: argparse.Namespace) -> int:
    from ..runtime.files import save_npz, write_bytes

    output = npz_path(args.output) if args.output else None
    if args.commands and not args.trace:
        return _fail("--commands adds the tile commands to the trace: give --trace too")
    check_outputs({"-o": output, "--stats": args.stats, "--trace": args.trace},
                  {"executable": args.executable, "--inputs": args.inputs})
    exe, outs, rc = _run(args)
    if rc:
        return rc
    st = exe.stats()
    if output:
        save_npz(output, outs)
    if args.stats:
        write_bytes(args.stats, json.dumps(st, indent=1))
    if args.trace:
        exe.trace(args.trace)
    for name, a in outs.items():
        print(f"{name}: {a.dtype}{list(a.shape)}")
    if args.top:
        for name, a in outs.items():
            print("\n".join(top_lines(name, a, args.top)))
    print(f"cycles: {st['cycles']}  mac_utilisation: {st['mac_utilisation']:.4f} ({st['precision']} peak "
          f"{st['peak_macs_per_cycle']} MAC/cycle)  steps: {st['steps']}")
    if "bucket" in st:
        print(bucket_line(st["bucket"]))
    return 0


def bucket_line(b: dict[str, Any]) -> str:
    """The stats' ``bucket`` entry as a line: which bucket ran and whether the batch was padded."""
    pad = (f", the batch of {b['padded_from']} padded to it and the outputs cropped"
           if "padded_from" in b else "")
    return f"bucket {b['index']} of {b['buckets']} ({b['inputs']}){pad}"


def top_lines(name: str, a: Any, k: int) -> list[str]:
    """The ``k`` largest elements of ``a`` (flattened), highest first, the lower index first among
    equal values, NaN after every number: the lines examples/runtime/classify.c prints too."""
    import numpy as np

    flat = np.asarray(a, dtype=np.float64).reshape(-1)
    nan = np.isnan(flat)
    order = np.lexsort((np.arange(flat.size), nan, np.where(nan, np.inf, -flat)))[:k]
    lines = [f"top-{len(order)} of `{name}` ({a.dtype}{list(a.shape)}):"]
    lines += [f"{r + 1:3d}. class {i}  score {float(flat[i]):.6g}" for r, i in enumerate(order)]
    return lines


def group_members(exe: Any) -> dict[str, list[dict[str, Any]]]:
    """Layer-group step name -> its members as the compiler recorded them (the step's
    debug ``group`` entry: node, op, est_cycles, macs, bound_by, pc); {} without them.
    A malformed entry is a ValueError naming the step and the entry (tdb/debug_info.py)."""
    return {node: sd.members for node, sd in _step_debug(exe).items() if sd.members}


def _step_debug(exe: Any) -> dict[str, Any]:
    """Step node name -> its debug entry (tdb/debug_info.py's StepDebug)."""
    from ..tdb.debug_info import read_debug_info

    d = exe.describe()
    return {step["node"]: sd for step, sd in zip(d["steps"], read_debug_info(d, exe.modules))}


def _fused_rows(fused: list[tuple[str, str]], w: int, indent: str) -> list[str]:
    """A line per node the row above computes: fused into its epilogue, or merged into it
    by the graph passes (a folded BatchNormalization, the ops of a recognised Gelu)."""
    return [f"{indent + '+ ' + name:<{w}}  {op[:16]:<16} {'':<5} {'':>12} {'':>7} {'':>14} {'':>7} {'':>7}  {'':>8}  "
            "computed by the row above (its cycles are in that row)" for name, op in fused]


def _view_rows(views: list[Any], w: int) -> list[str]:
    """A line per free view before a step: no code and no cycles (the consumer reads the
    producer's buffer)."""
    return [f"{'  = ' + v.name:<{w}}  {v.op[:16]:<16} {'view':<5} {0:>12} {0.0:>6.1f}% {0:>14} {0.0:>6.2f}% {'':>7}  "
            f"{0.0:>8.2f}  a free view: no code" for v in views]


IN_PLACE = "in place: its inputs' producers wrote its bytes (no copy)"


def _member_rows(o: dict[str, Any], recorded: list[dict[str, Any]], st: dict[str, Any], w: int) -> list[str]:
    """The lines under a layer group's row: each member measured by the simulator (its code's
    cycles, with the cost model's estimate beside) and how much the members overlap; without
    measurements (an executable that does not record the members' code), the group's cycles
    split by the estimates, marked ~."""
    total, peak = max(st["cycles"], 1), st["peak_macs_per_cycle"]
    lines = []
    fused = {m["node"]: m.get("fused", []) for m in recorded}
    in_place = {m["node"] for m in recorded if m.get("in_place")}
    plan = {m["node"]: m["plan"] for m in recorded if m.get("plan")}  # (docs/compiler.md, "Plans")
    if o.get("members"):
        for m in o["members"]:
            cyc = m["cycles"]
            util = m["macs"] / (cyc * peak) if cyc > 0 else 0.0
            what = (IN_PLACE if m["node"] in in_place else
                    f"{m['bound_by']:<7} est {m['est_cycles']:>10} ({100.0 * m['est_error']:+.0f}%)"
                    + (f"  {plan[m['node']]}" if m["node"] in plan else ""))
            lines.append(f"{'  ' + m['node']:<{w}}  {m['op_type'][:16]:<16} {'':<5} {cyc:>12} "
                         f"{100.0 * cyc / total:>6.1f}% {m['macs']:>14} {100.0 * util:>6.2f}% {_roof(cyc, m):>7}  {'':>8}  "
                         f"{what}")
            lines += _fused_rows(fused.get(m["node"], []), w, "    ")
        covered = o["cycles"] - o["outside_members"]
        lines.append(f"{'  (members)':<{w}}  sum {o['members_cycles']} cycles = "
                     f"{100.0 * o['members_cycles'] / max(o['cycles'], 1):.1f}% of the group's {o['cycles']}: "
                     f"{o['members_overlap']} overlap (members running at once across the handoffs), "
                     f"{covered} with some member running, {o['outside_members']} with none (entry, "
                     f"synchronisation between members)")
        return lines
    est_total = sum(m["est_cycles"] for m in recorded)
    for m in recorded if est_total > 0 else []:
        cyc = o["cycles"] * m["est_cycles"] / est_total
        util = m["macs"] / (cyc * peak) if cyc > 0 else 0.0
        what = IN_PLACE if m.get("in_place") else f"{m['bound_by']} (estimated)" + (f"  {m['plan']}" if m.get("plan") else "")
        lines.append(f"{'  ' + m['node']:<{w}}  {m['op'][:16]:<16} {'':<5} {'~' + str(round(cyc)):>12} "
                     f"{100.0 * cyc / total:>6.1f}% {m['macs']:>14} {100.0 * util:>6.2f}% "
                     f"{_roof(cyc, m.get('roofline') or {}):>7}  {'':>8}  {what}")
        lines += _fused_rows(m.get("fused", []), w, "    ")
    return lines


def _roof(cycles: float, entry: dict[str, Any]) -> str:
    """An op's cycles over its roofline bound (``roofline_cycles``, or a recorded ``cycles``),
    as ``2.3x``; blank without one."""
    bound = entry.get("roofline_cycles", entry.get("cycles") if "bound" in entry else None)
    return f"{cycles / bound:.1f}x" if bound else ""


def format_profile(st: dict[str, Any], exe: Any = None) -> str:
    """The per-op table of a run's statistics, sorted by cycles (largest first); each layer
    group's members follow its row, measured (the cycles of each member's code on the
    simulator, the cost model's estimate and its error beside, then the members' sum
    against the group's cycles) or, for an executable that does not record the members'
    code, the group's cycles split by the estimates (marked ~); the nodes a step or a member
    computes besides its own (fused into its epilogue, or merged into it by the graph
    passes) follow it (``+ NAME``, their cycles in its row), and the free views before a
    step (``= NAME``, no code); with the executable, the model report
    (runtime/model_report.py) follows the total."""
    from ..runtime.model_report import bound_class, format_model_report, model_report

    ops = sorted(st["ops"], key=lambda o: -o["cycles"])
    total = max(st["cycles"], 1)
    debug = _step_debug(exe) if exe is not None else {}
    members = {node: sd.members for node, sd in debug.items() if sd.members}
    w = max([len("op"), len("  (members)")] + [len(o["name"]) for o in ops] +
            [len(m["node"]) + 2 for ms in members.values() for m in ms] +
            [len(m["node"]) + 2 for o in ops for m in o.get("members", [])] +
            [len(n) + 6 for sd in debug.values() for n, _ in sd.fused] +
            [len(v.name) + 4 for sd in debug.values() for v in sd.views])
    lines = [f"{'op':<{w}}  {'type':<16} {'where':<5} {'cycles':>12} {'share':>7} {'MACs':>14} {'util':>7} "
             f"{'x roof':>7}  {'DDR MiB':>8}  bound by"]
    for o in ops:
        ddr = (o["bytes"]["ddr_read"] + o["bytes"]["ddr_written"]) / (1 << 20) if "bytes" in o else 0.0
        lines.append(f"{o['name']:<{w}}  {o['op_type'][:16]:<16} {o['where']:<5} {o['cycles']:>12} "
                     f"{100.0 * o['cycles'] / total:>6.1f}% {o['macs']:>14} {100.0 * o['mac_utilisation']:>6.2f}% "
                     f"{_roof(o['cycles'], o):>7}  {ddr:>8.2f}  {o['bound_by']} ({bound_class(o)})")
        node = o.get("node", o["name"])
        if node not in members and node in debug and debug[node].plan:  # (docs/compiler.md, "Plans")
            lines[-1] += f"  {debug[node].plan}"
        lines += _member_rows(o, members.get(node, []), st, w)
        if node not in members and node in debug:
            lines += _fused_rows(debug[node].fused, w, "  ")
        if node in debug:
            lines += _view_rows(debug[node].views, w)
    lines.append(f"total: {st['cycles']} cycles = {st['cycles'] / 1e3:.1f} us at 1 GHz, {st['macs']} MACs, "
                 f"MAC utilisation {100.0 * st['mac_utilisation']:.2f}% of the {st['precision']} peak; "
                 f"host wall {st['wall_seconds'] * 1e3:.1f} ms")
    if st.get("roofline_cycles"):
        lines.append(f"roofline: the npu steps' bounds sum to {st['roofline_cycles']:.0f} cycles; the run took "
                     f"{st['cycles'] / st['roofline_cycles']:.2f}x that (x roof: an op's cycles over its bound, "
                     "docs/compiler.md, \"Roofline\")")
    slow = front_end_bound(st)
    if slow:
        lines.append(f"warning: {len(slow)} op(s) bound by the scalar front end (loops that did not become "
                     f"engine commands), {100.0 * sum(c for *_, c in slow) / total:.1f}% of the cycles: " +
                     ", ".join(f"{n} ({op}, {c} cycles)" for n, op, c in slow))
    if exe is not None:
        lines.append(format_model_report(model_report(exe, st)))
    return "\n".join(lines)


def top_layers(st: dict[str, Any], top: int) -> list[str]:
    """The ``top`` layers of a run's statistics by measured cycles, as table lines: a layer
    group's measured members are layers of their own (their group named beside), every
    other step one; a last line counts the layers left out."""
    rows = []  # (cycles, name, op type, where, macs, bound by, group)
    for o in st["ops"]:
        if o.get("members"):
            rows += [(m["cycles"], m["node"], m["op_type"], o["where"], m["macs"], m["bound_by"], o.get("node", o["name"]))
                     for m in o["members"]]
        else:
            rows.append((o["cycles"], o["name"], o["op_type"], o["where"], o["macs"], o["bound_by"], ""))
    rows.sort(key=lambda r: -r[0])
    total, peak = max(st["cycles"], 1), st["peak_macs_per_cycle"]
    shown = rows[:max(top, 0)]
    w = max([len("layer")] + [len(r[1]) for r in shown])
    lines = [f"{'layer':<{w}}  {'type':<16} {'where':<5} {'cycles':>12} {'share':>7} {'MACs':>14} {'util':>7}  "
             f"{'bound by':<8}  layer group"]
    for cyc, name, op, where, macs, bound, group in shown:
        util = macs / (cyc * peak) if cyc > 0 and where == "npu" else 0.0
        lines.append(f"{name:<{w}}  {op[:16]:<16} {where:<5} {cyc:>12} {100.0 * cyc / total:>6.1f}% {macs:>14} "
                     f"{100.0 * util:>6.2f}%  {bound:<8}  {group}".rstrip())
    if len(rows) > len(shown):
        lines.append(f"... {len(rows) - len(shown)} more layers (tilecore profile shows all, each group's members "
                     "under it)")
    return lines


@command("profile", "run a .tcx executable and print the per-op profile sorted by cycles", [
    arg("executable", help="the .tcx file"),
    arg("--inputs", required=True, help=".npz of the inputs, keyed by input name"),
    arg("--device", type=int, default=0, help="npu device id (default 0)"),
    arg("--quiet", action="store_true", help="no progress bar"),
])
def profile_cmd(args: argparse.Namespace) -> int:
    exe, _, rc = _run(args)
    if rc:
        return rc
    st = exe.stats()
    ran = exe.bucket(st["bucket"]["index"]) if "bucket" in st else exe  # its debug entries
    try:
        text = format_profile(st, ran)
    except ValueError as e:  # the executable's debug entries (a hand-edited file)
        return _fail(f"{args.executable}: {e}")
    if "bucket" in st:
        print(bucket_line(st["bucket"]))
    print(text)
    return 0

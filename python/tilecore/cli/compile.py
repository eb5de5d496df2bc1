"""``tilecore compile`` and ``tilecore compare``: an ONNX model to a ``.tcx``, and every named
tensor of the compiled model next to ONNX Runtime's.

    tilecore compile MODEL.onnx -o OUT.tcx [--target T] [--precision f32|f16|bf16|int8] [--calib CALIB.npz]
                     [--calib-method M] [--calib-table T.json] [--qtable FILE] [--auto-mixed TARGET_COSINE]
                     [--input-shape NAME:D0,D1,...] [--dim NAME=S1,S2,...] [--batch NAME|INPUT:AXIS]
                     [--verify [IN.npz]] [--print-after PASS] [--dump-graph FILE|DIR/] [--verify-each]
                     [--disable-pass PASS] [-v]
    tilecore compare MODEL.onnx --inputs IN.npz [--precision P] [--calib CALIB.npz] [--calib-method M]
                     [--calib-table T.json] [--report R.json] [--repro DIR]
"""

from __future__ import annotations

import json
import math
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

    from ..compiler.calibration import CalibTable

import numpy as np

from . import _fail, _fail_about, arg, check_outputs, command


class _Bar:
    """A tqdm progress bar over the nodes (silent when stderr is not a terminal)."""

    def __init__(self, desc, enabled: bool = True) -> None:
        self.desc, self.enabled, self.bar = desc, enabled and sys.stderr.isatty(), None

    def __call__(self, i, n, node) -> None:
        if not self.enabled:
            return
        if self.bar is None:
            try:
                from tqdm import tqdm
            except ImportError:
                self.enabled = False
                return
            self.bar = tqdm(total=n, unit="node", desc=self.desc, leave=False, file=sys.stderr)
        self.bar.set_postfix_str(str(node)[:30], refresh=False)
        self.bar.update(i + 1 - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def parse_input_shape(text: str) -> tuple[str, tuple[int, ...] | list[tuple[int, ...]]]:
    """``NAME:D0,D1,...`` -> (name, (D0, D1, ...)); one dimension may list a bucket's sizes,
    ``NAME:{1,2,4},3,224,224`` -> (name, [(1, 3, 224, 224), (2, ...), (4, ...)]); ValueError
    naming the text otherwise."""
    import re

    bad = ValueError(f"--input-shape `{text}`: expected NAME:D0,D1,... with non-negative integers "
                     "(one dimension may be a list of sizes in braces: NAME:{1,2,4},3,224,224)")
    name, sep, dims = text.rpartition(":")
    parts = re.findall(r"\{[^{}]*\}|[^,]+", dims)
    if not sep or not name or ",".join(parts) != dims.strip() and dims.strip():
        raise bad
    try:
        options = [[int(x) for x in p[1:-1].split(",")] if p.startswith("{") else [int(p)] for p in parts]
    except ValueError:
        raise bad from None
    if any(d < 0 for o in options for d in o) or sum(len(o) > 1 or p.startswith("{")
                                                     for o, p in zip(options, parts)) > 1:
        raise bad
    shapes = [tuple(o[0] if len(o) == 1 else None for o in options)]
    for at, o in enumerate(options):
        if len(o) > 1 or parts[at].startswith("{"):
            return name, [tuple(d if i != at else x for i, d in enumerate(shapes[0])) for x in o]
    return name, shapes[0]


def parse_dim(text: str) -> tuple[str, list[int]]:
    """``--dim NAME=S1,S2,...`` -> (name, [S1, S2, ...]): a bucket per size of a symbolic dimension."""
    name, sep, sizes = text.partition("=")
    try:
        values = [int(x) for x in sizes.split(",")]
    except ValueError:
        values = []
    if not sep or not name or not values or any(v < 1 for v in values):
        raise ValueError(f"--dim `{text}`: expected NAME=S1,S2,... with positive sizes")
    return name, values


def parse_batch(text: str) -> str | dict[str, int]:
    """``--batch NAME`` (a --dim's name) or ``--batch INPUT:AXIS[,INPUT:AXIS...]``."""
    if ":" not in text:
        return text
    out = {}
    for item in text.split(","):
        name, _, axis = item.rpartition(":")
        try:
            out[name] = int(axis)
        except ValueError:
            raise ValueError(f"--batch `{text}`: expected NAME or INPUT:AXIS,...") from None
    return out


def target_spec(text: str) -> str:
    """argparse type of --target: the string, once the target parser accepts it (an
    unknown kind or option, a bad value or an option given twice is a usage error naming
    the flag)."""
    import argparse

    from ..target import Target

    try:
        Target(text)
    except (ValueError, TypeError) as e:
        raise argparse.ArgumentTypeError(str(e).splitlines()[0]) from None
    return text


def target_cosine(text: str) -> float:
    """argparse type of --auto-mixed: a cosine in (0, 1] (NaN, infinity, 1.5 and -1 are refused)."""
    import argparse

    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not 0.0 < value <= 1.0:  # (NaN fails both comparisons)
        raise argparse.ArgumentTypeError(f"expected a target cosine in (0, 1], e.g. 0.999, got {text!r}")
    return value


TARGET_ARG = arg("--target", default="npu -cores=4", type=target_spec,
                 help="target string (default 'npu -cores=4')")


def _compile_errors():
    from ..ffi.error import TilecoreError

    return (ValueError, TypeError, NotImplementedError, TilecoreError)


# int8 calibration: --calib samples (and --calib-method) make a table, written to
# --calib-table when given; --calib-table alone reuses an existing table.
CALIB_ARGS = (
    arg("--calib-method", default="minmax", choices=["auto", "minmax", "percentile", "kl"],
        help="int8: activation thresholds (default minmax, as tilecore.compile(calib_samples=) takes them; auto: "
             "the least quantisation MSE per tensor)"),
    arg("--calib-table", metavar="T.json", help="int8: the calibration table to write (with --calib) or reuse"),
)


def calibration_files(args: argparse.Namespace) -> tuple[dict[str, str | None], dict[str, str | None]]:
    """({flag: path} written, {what: path} read) by the calibration flags: --calib-table
    is written with --calib and read without it."""
    calib = getattr(args, "calib", None)
    table = getattr(args, "calib_table", None)
    return ({"--calib-table": table if calib else None},
            {"--calib": calib, "--calib-table": None if calib else table})


def check_calib_table_use(args: argparse.Namespace, qtable: dict[str, str] | None) -> None:
    """ValueError when --calib-table would be read and ignored: it holds int8 thresholds,
    which only int8 nodes (--precision int8, or a --qtable naming int8) use."""
    if getattr(args, "calib_table", None) and not getattr(args, "calib", None):
        if "int8" not in {args.precision, *(qtable or {}).values()}:
            raise ValueError(f"--calib-table {args.calib_table}: a calibration table holds int8 thresholds, "
                             f"which --precision {args.precision} does not use (give --precision int8, or a "
                             "--qtable naming int8 nodes)")


def calibration_table(args: argparse.Namespace, samples: dict[str, np.ndarray] | None = None) -> CalibTable | None:
    """The CalibTable the calibration flags ask for, or None; prints where it went.
    ``samples``: those of --calib, when loaded already."""
    from ..compiler.calibration import CalibTable, calibrate, load_samples

    if getattr(args, "calib", None):
        if samples is None:
            samples = load_samples(args.calib)
        table = calibrate(args.model, samples, method=args.calib_method)
        if args.calib_table:
            table.save(args.calib_table)
            print(f"{args.calib_table}: calibration table of {len(table.thresholds)} tensors "
                  f"({args.calib_method}, {table.meta['samples']} samples)")
        return table
    if getattr(args, "calib_table", None):
        return CalibTable.load(args.calib_table)
    return None


def node_span(nodes: list[str], shown: int = 3) -> str:
    """The nodes a fallback line covers: each of a few, else the first, the last and their count
    (a layer group of a hundred members named one by one filled the screen; the report keeps
    every name)."""
    if len(nodes) <= shown:
        return ", ".join(nodes)
    return f"{nodes[0]} ... {nodes[-1]} ({len(nodes)} nodes)"


@command("compile", "compile an ONNX model to a .tcx executable for TC1 (npu) and the host", [
    arg("model", help="the .onnx file"),
    arg("-o", "--output", required=True, help="the .tcx file to write"),
    TARGET_ARG,
    arg("--precision", default="f32", choices=["f32", "f16", "bf16", "int8"],
        help="what the matrix ops compute in (default f32; docs/precision.md)"),
    arg("--calib", metavar="CALIB.npz", help="calibration samples keyed by input name, each (N, *shape): int8 "
        "activation thresholds by --calib-method over them, and the bias correction of int8/f16/bf16 nodes"),
    arg("--qtable", metavar="FILE", help="per-node precisions: JSON {node: precision} or lines `node precision`"),
    arg("--auto-mixed", type=target_cosine, metavar="TARGET_COSINE",
        help="move the most sensitive matrix nodes to bf16 until the outputs reach this cosine against f32 on the "
             "--calib samples (the first 16)"),
    arg("--input-shape", action="append", default=[], metavar="NAME:D0,D1,...",
        help="bind an input's shape (repeat per input); a dimension in braces lists sizes, a bucket each: "
             "x:{1,2,4,8},3,224,224 (docs/compiler.md, Shape buckets)"),
    arg("--dim", action="append", default=[], metavar="NAME=S1,S2,...",
        help="a bucket for each size of the model's symbolic dimension NAME (repeat: every combination)"),
    arg("--batch", metavar="NAME|INPUT:AXIS",
        help="with buckets: the batch dimension (a --dim name, or INPUT:AXIS per input); a smaller batch then runs "
             "padded in the next larger bucket, once the compiler has shown that the model keeps rows apart"),
    arg("--no-fuse", action="store_true",
        help="keep every node a step: no epilogue fusion, no layer groups (a debugger session that stops at each)"),
    arg("--no-group", action="store_true",
        help="no layer groups: a step per node after fusion (a per-layer profile)"),
    arg("--verify", nargs="?", const=True, default=False, metavar="IN.npz",
        help="check the executable before writing it (docs/compiler.md, Verification): run in the simulator's "
             "hazard mode on sample inputs (IN.npz, else the first --calib sample, else seeded ones), every step "
             "against the model compiled one node a step, and in f32 against the reference evaluator; names the "
             "layer group, fused node or node that fails and writes nothing"),
    arg("--dump-graph", nargs="?", const=True, default=None, metavar="FILE|DIR/",
        help="write the compiled graph's text (a line per node, ending with its name: @ \"NAME\") to FILE, "
             "default the output with .graph for .tcx, where tdb finds it for b graph:LINE; a folder (an existing "
             "one, or a name ending with /): the text after every pass, NNNN_<Pass>.graph in the order run"),
    arg("--print-after", action="append", default=[], metavar="PASS",
        help="print the graph's text after this pass to stderr (repeat; `all`: after every pass; the passes: "
             "docs/compiler.md, The pipeline)"),
    arg("--verify-each", action="store_true",
        help="evaluate the graph after every graph pass and stop at the first that changes the imported model's "
             "outputs (naming it), then verify the executable as --verify does"),
    arg("--disable-pass", action="append", default=[], metavar="PASS",
        help="do not run this pass (repeat; not the required ones), or do not offer this plan to the cost model "
             "(conv.transposed, gemm.columns, ...: tilecore.compiler.list_plans()): to find which pass or plan a "
             "problem comes from"),
    arg("-v", "--verbose", action="store_true", help="each pass's wall time and the resident memory it added"),
    arg("--strict", action="store_true",
        help="a fallback from a plan the compiler chose (a layer group split, a member's or a group's plan that "
             "did not build) is an error naming it, not a line of the output"),
    arg("--cache-dir", metavar="DIR",
        help="a compile cache (docs/compiler.md, Compile cache; default $TILECORE_COMPILE_CACHE): the executable "
             "compiled before from the same model bytes, options and tilecore is loaded from it, a new one stored"),
    arg("--quiet", action="store_true", help="no progress bar"),
    *CALIB_ARGS,
])
def compile_cmd(args: argparse.Namespace) -> int:
    from ..compiler.driver import compile as _compile
    from ..compiler.precision import load_qtable

    from ..compiler.calibration import load_samples
    from ..runtime.files import load_npz

    try:
        shapes = dict(parse_input_shape(s) for s in args.input_shape)
        dims = dict(parse_dim(s) for s in args.dim)
        batch = parse_batch(args.batch) if args.batch else None
    except ValueError as e:
        return _fail(str(e))
    # Everything a slow compile could fail on afterwards is checked first: the output paths
    # and the files read (each error names its file).
    writes, reads = calibration_files(args)
    import os

    dump_dir = None
    if isinstance(args.dump_graph, str) and (args.dump_graph.endswith(("/", os.sep)) or os.path.isdir(args.dump_graph)):
        dump_dir, args.dump_graph = args.dump_graph, None
        if os.path.exists(dump_dir) and not os.path.isdir(dump_dir):
            return _fail(f"--dump-graph {dump_dir}: not a folder")
    if args.dump_graph is not None:
        from ..tdb.graphtext import graph_path

        args.dump_graph = graph_path(args.output) if args.dump_graph is True else args.dump_graph
        writes["--dump-graph"] = args.dump_graph
    check_outputs({"-o": args.output, **writes}, {"model": args.model, "--qtable": args.qtable, **reads,
                                                   "--verify": args.verify if isinstance(args.verify, str) else None})
    qtable = load_qtable(args.qtable) if args.qtable else None
    check_calib_table_use(args, qtable)
    samples = load_samples(args.calib) if args.calib else None  # also auto-mixed's and the bias correction's
    verify = args.verify
    if isinstance(verify, str):  # inputs as `tilecore run --inputs` takes them
        verify = load_npz(verify)
    try:
        calib = calibration_table(args, samples)
    except (OSError, *_compile_errors()) as e:
        return _fail(str(e))
    from ..compiler.pipeline import PipelineOptions

    pipeline = PipelineOptions(print_after=args.print_after, dump_dir=dump_dir, verify_each=args.verify_each,
                               disable=args.disable_pass)
    try:
        pipeline.check()
    except ValueError as e:
        return _fail(str(e))
    bar = _Bar("compile", not args.quiet and not args.print_after)
    report = {}
    try:
        exe = _compile(args.model, target=args.target, precision=args.precision, input_shapes=shapes or None,
                       progress=bar, report=report, calib=calib, calib_samples=samples, qtable=qtable,
                       auto_mixed=args.auto_mixed, fuse=not args.no_fuse,
                       group=not args.no_group, verify=verify, dims=dims or None, batch=batch,
                       strict=args.strict, pipeline=pipeline, cache_dir=args.cache_dir)
    except OSError as e:
        return _fail_about(args.model, e)
    except _compile_errors() as e:
        return _fail_about(args.model, e)
    finally:
        bar.close()
    exe.save(args.output)
    if args.dump_graph is not None:
        from ..runtime.files import write_bytes

        write_bytes(args.dump_graph, report["graph"].encode())
        print(f"{args.dump_graph}: the compiled graph, {report['graph'].count(chr(10))} lines")
    mem = report["memory"]
    secs = sum(report["seconds"].values())
    cached = report.get("compile_cache", {})
    if cached.get("hit"):
        print(f"{args.output}: loaded from the compile cache {cached['folder']} (key {cached['key'][:16]}); the lines "
              "below are the compile that stored it")
    elif cached.get("reason"):
        print(f"  compile cache not used: {cached['reason']}")
    if "buckets" in report:  # one line per bucket's program; the lines below are bucket 0's
        secs = sum(sum(b["report"]["seconds"].values()) for b in report["buckets"])
        print(f"{args.output}: {len(report['buckets'])} buckets, constants stored once, compiled in {secs:.2f} s")
        for i, b in enumerate(report["buckets"]):
            r = b["report"]
            shapes_text = ", ".join(f"{k}{v}" for k, v in b["inputs"].items())
            print(f"  bucket {i}: {shapes_text}: {r['steps']} steps ({r['npu_steps']} npu, {r['host_steps']} host), "
                  f"{r['kernels']} kernels, arena {r['memory']['arena_size']} B")
    else:
        print(f"{args.output}: {report['steps']} steps ({report['npu_steps']} npu, {report['host_steps']} host, "
              f"{report['views']} free views), {report['kernels']} kernels, arena {mem['arena_size']} B "
              f"({mem['total_size']} B without reuse), compiled in {secs:.2f} s")
    if dump_dir is not None:
        print(f"{dump_dir}: the text after each pass, {sum(1 for n in os.listdir(dump_dir) if n.endswith('.graph'))} "
              "files")
    if args.verbose and report.get("passes"):
        print("  passes (wall time, resident memory added):")
        for r in report["passes"]:
            mem = "" if r["rss_delta_mb"] is None else f"  {r['rss_delta_mb']:+.1f} MiB"
            print(f"    {'  ' * r['level']}{r['pass']:<{28 - 2 * r['level']}} {r['seconds'] * 1e3:9.1f} ms{mem}")
    if report.get("batch_axes"):
        print("  batch axes: " + ", ".join(f"{k}:{v}" for k, v in report["batch_axes"].items())
              + " (a smaller batch runs padded in the next larger bucket)")
    for h in report["host_ops"]:
        print(f"  host: {h['name']} ({h['op_type']}): {h['reason']}")
    for f in report.get("plan_fallbacks", []):
        print(f"  fallback: {node_span(f['nodes'])}: {f['what']} ({f['reason']})")
    for sp in report.get("group_splits", []):
        print(f"  fallback: {node_span(sp['nodes'])}: the layer group, split in halves ({sp['reason']})")
    if "verify" in report:
        v = report["verify"]
        groups = sum(1 for st in v["steps"] if st["members"] or st["fused"])
        low = min([st["cosine"] for st in v["steps"]], default=1.0)
        outs = ", ".join(f"{n} {c:.6f}" for n, c in v["outputs"].items())
        print(f"  verify: no hazard; {len(v['steps'])} steps ({groups} layer groups or fused nodes) agree with the "
              f"model compiled one node a step (lowest cosine {low:.6f}); outputs against the reference evaluator: "
              f"{outs} ({v['checks']['reference']})")
    prec = report["precision"]
    if prec["assigned"]:
        counts = {}
        for p in prec["assigned"].values():
            counts[p] = counts.get(p, 0) + 1
        print("  precision: " + ", ".join(f"{n} matrix node(s) in {p}" for p, n in sorted(counts.items())))
    for f in prec["fallbacks"]:
        print(f"  f32: {f['node']} ({f['op_type']}), asked {f['asked']}: {f['reason']}")
    qdq = report.get("qdq", {})
    if qdq.get("folded"):
        print(f"  quantised model: {len(qdq['folded'])} matrix node(s) in int8 with the model's scales")
    for k in qdq.get("kept", []):
        print(f"  quantised model, kept in f32: {k['node']} ({k['op_type']}): {k['reason']}")
    am = report.get("auto_mixed")
    if am:
        print(f"  auto-mixed: cosine {am['cosine']:.6f} (target {am['target']}, {'met' if am['met'] else 'NOT met'}) "
              f"with {len(am['moved'])} node(s) moved to {am['moved_to']}:")
        for n in am["moved"]:
            print(f"    {n}")
    return 0


def format_compare(report: dict[str, Any], limit: int | None = None) -> str:
    """The per-tensor table of a compare report, in topological order."""
    rows = report["tensors"]
    w = max([len("tensor")] + [len(r["name"]) for r in rows])
    lines = [f"{'tensor':<{w}}  {'op':<14} {'cosine':>10} {'euclid':>8} {'max abs err':>12} {'SQNR dB':>8} "
             f"{'jump':>6}"]
    for r in rows[:limit] if limit else rows:
        sq = r["sqnr_db"]
        sq = "inf" if math.isinf(sq) and sq > 0 else f"{sq:.1f}"
        flag = "  <- diverged" if r["diverged"] else ""
        if r is report.get("first_jump"):
            flag = "  <- diverged here (first jump)"
        jump = r.get("jump_db", 0.0)
        lines.append(f"{r['name']:<{w}}  {r['op_type'][:14]:<14} {r['cosine']:>10.6f} {r.get('euclidean', 0):>8.4f} "
                     f"{r['max_abs_error']:>12.3e} {sq:>8} {jump:>6.1f}{flag}")
    return "\n".join(lines)


def _print_shipped(rep: dict[str, Any]) -> bool:
    """Prints what the executable as it ships gave; True when it is wrong."""
    ship = rep.get("shipped")
    if not ship:
        return False
    outs = ", ".join(f"`{n}` {f['cosine']:.6f}" for n, f in ship["outputs"].items())
    what = f"{ship['steps']} steps, {ship['groups']} layer groups, {ship['fused']} other fused nodes"
    checked = f"; {len(ship['tensors'])} tensors, layer group members included" if "tensors" in ship else ""
    if not ship["diverged"] and not ship["hazards"] and not ship["changed"] and not ship.get("first_divergent"):
        print(f"the executable as compiled ({what}) agrees: outputs {outs}{checked}")
        return False
    print(f"the executable as compiled ({what}) {'diverges' if ship['diverged'] else 'differs'}: outputs {outs}")
    for h in ship["hazards"][:3]:
        print(f"  race in step `{h['step']}`: {h['message']}")
    if ship["changed"]:
        print(f"  {ship['changed']['message']}")
    first = ship.get("first_divergent")
    if first:
        where = (f"member `{first['node']}` ({first['op_type']}) of layer group `{first['group']}`"
                 if first["member"] is not None else f"step `{first['step']}` ({first['op_type']})")
        print(f"  first divergent in the executable as compiled: `{first['name']}` of {where}, cosine "
              f"{first['cosine']:.6f}: {first['verdict']}")
    bis = ship.get("bisect")
    if bis:
        print("  bisecting the optimisations: " + "; ".join(
            f"{t['change']}: {'right' if t['right'] else 'wrong'} ({t['cosine']:.6f})" for t in bis["tried"]))
        print(f"  {bis['culprit']['message']}")
    return True


@command("compare", "compile a model, run it and compare every named tensor with ONNX Runtime", [
    arg("model", help="the .onnx file"),
    arg("--inputs", required=True, help=".npz of the inputs, keyed by input name"),
    TARGET_ARG,
    arg("--precision", default="f32", choices=["f32", "f16", "bf16", "int8"],
        help="what the matrix ops compute in (default f32)"),
    arg("--threshold", type=float, default=None,
        help="cosine below which a tensor diverged (f32, f16, bf16: 0.999; int8 and QDQ models: 0.99)"),
    arg("--report", help="write the report (every tensor's figures) as JSON here"),
    arg("--repro", metavar="DIR", help="write the layer group found wrong (else the first bad node) as a small "
        "model and its inputs here (a new or empty folder)"),
    arg("--quiet", action="store_true", help="no progress bar"),
    arg("--calib", metavar="CALIB.npz", help="int8: calibration samples keyed by input name, each (N, *shape)"),
    *CALIB_ARGS,
])
def compare_cmd(args: argparse.Namespace) -> int:
    from ..compiler.compare import compare_with_onnxruntime, write_group_repro, write_repro
    from ..tdb.capture import values_where_complete
    from ..runtime.files import check_new_directory, load_npz, write_bytes

    writes, reads = calibration_files(args)
    check_outputs({"--report": args.report, "--repro": args.repro, **writes},
                  {"model": args.model, "--inputs": args.inputs, **reads})
    if args.repro:  # refused now, not after the whole comparison
        check_new_directory(args.repro, "--repro")
    check_calib_table_use(args, None)
    inputs = load_npz(args.inputs)
    try:
        calib = calibration_table(args)
    except (OSError, *_compile_errors()) as e:
        return _fail(str(e))
    bar = _Bar("compile", not args.quiet)
    try:
        rep = compare_with_onnxruntime(args.model, inputs, target=args.target, precision=args.precision,
                                       threshold=args.threshold, progress=bar,
                                       calib=calib, read_shipped=lambda exe, feeds: values_where_complete(
                                           exe, feeds, args.target))
    except _compile_errors() as e:
        return _fail_about(args.model, e)
    finally:
        bar.close()
    if args.report:
        write_bytes(args.report, json.dumps(rep, indent=1, default=float))
    print(format_compare(rep))
    first = rep["first_divergent"]
    bad_ship = _print_shipped(rep)
    if first is None:
        print(f"all {len(rep['tensors'])} tensors agree (cosine >= {rep['threshold']})"
              + (" in the program with every intermediate kept" if bad_ship else ""))
        if bad_ship and args.repro:
            path = write_group_repro(rep, args.repro)
            if path:
                print(f"repro: {path} (with inputs.npz, expected.npz and group.json)")
        return 1 if bad_ship else 0
    print(f"first divergent: `{first['name']}` of node `{first['node']}` ({first['op_type']}), "
          f"cosine {first['cosine']:.6f}")
    jump = rep["first_jump"]
    if jump is None:
        print(f"no node's SQNR drops by {rep['jump_db']:g} dB or more below its inputs': the error builds up")
    else:
        ins = ", ".join(f"{i['name']} {tuple(i['shape'])}" + (" const" if i["constant"] else "")
                        for i in jump["inputs"])
        q = ", ".join(f"{k} {v}" for k, v in jump["quantisation"].items()) or "none"
        merged = f" (merged with {', '.join(jump['group'][:-1])})" if jump.get("group") else ""
        print(f"first jump: node `{jump['node']}` ({jump['op_type']}){merged}: SQNR {jump['sqnr_db']:.1f} dB, its inputs "
              f"{jump['input_sqnr_db']:.1f} dB; inputs {ins}; output `{jump['name']}` {tuple(jump['shape'])}; "
              f"quantisation: {q}")
    if args.repro:
        path = write_repro(rep, args.repro)
        if path:
            print(f"repro: {path} (with inputs.npz, outputs.npz and node.json)")
    return 1


def model_demo(args: argparse.Namespace) -> int:
    """``tilecore demo``: a zoo model compiled for TC1, run on the simulator, compared with
    ONNX Runtime; prints the layers that took the most cycles (a layer group's members each
    on its own row, its group named) and the whole-model figures."""
    import time

    from .. import zoo
    from ..compiler.compare import metrics
    from ..compiler.driver import compile as _compile
    from .runtime import _Progress, top_layers

    if args.model not in zoo.names():
        return _fail(f"--model `{args.model}`: not a zoo model ({', '.join(zoo.names())})")
    target = "npu -cores=4"
    print(f"tilecore demo: {zoo.info(args.model)['description']}")
    print(f"               seeded random weights, batch 1, f32, compiled for TC1 ({target})")
    path = zoo.export(args.model)
    bar = _Bar("compile")
    report = {}
    t0 = time.perf_counter()
    try:
        exe = _compile(path, target=target, precision="f32", progress=bar, report=report)
    except _compile_errors() as e:
        return _fail_about(args.model, e)
    finally:
        bar.close()
    compile_s = time.perf_counter() - t0
    mem = report["memory"]
    print(f"compiled:       {report['nodes']} nodes -> {report['npu_steps']} npu steps, {report['host_steps']} host "
          f"steps, {report['views']} free views; {report['kernels']} kernels; DDR arena "
          f"{mem['arena_size'] / 2**20:.1f} MiB ({mem['total_size'] / 2**20:.1f} MiB without reuse) in "
          f"{compile_s:.2f} s")
    inputs = {k: v[0] for k, v in zoo.sample_inputs(args.model, 1, seed=0).items()}
    prog = _Progress()
    try:
        outs = exe.run(inputs, progress=prog)
    finally:
        prog.close()
    st = exe.stats()
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    cos = None
    if ort is not None:
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1  # one thread, like the simulator
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        sess.run(names, inputs)  # warm up
        t0 = time.perf_counter()
        ref = dict(zip(names, sess.run(names, inputs)))
        ort_s = time.perf_counter() - t0
        worst = min((metrics(outs[n], ref[n]) for n in names), key=lambda m: m["cosine"])
        cos = worst["cosine"]
        print(f"vs ONNX Runtime: cosine {cos:.7f}, max abs error {worst['max_abs_error']:.2e}, "
              f"SQNR {worst['sqnr_db']:.1f} dB")
    else:
        print("vs ONNX Runtime: not installed, no comparison")
    print()
    print("\n".join(top_layers(st, args.top)))
    print()
    print(f"whole model:    {st['cycles']} cycles = {st['cycles'] / 1e6:.2f} ms at 1 GHz, {st['macs'] / 1e9:.2f} GMAC, "
          f"MAC utilisation {100.0 * st['mac_utilisation']:.1f}% of the f32 peak "
          f"({st['peak_macs_per_cycle']} MAC/cycle)")
    line = f"host time:      simulated run {st['wall_seconds']:.2f} s"
    if cos is not None:
        line += f"; ONNX Runtime (1 thread) {ort_s * 1e3:.1f} ms ({st['wall_seconds'] / ort_s:.0f}x)"
    print(line)
    if args.trace:
        exe.trace(args.trace)
        print(f"trace:          {args.trace} (open in ui.perfetto.dev)")
    if cos is not None and not cos >= 0.9999:
        print("tilecore demo: the outputs differ from ONNX Runtime (cosine below 0.9999)")
        return 1
    return 0

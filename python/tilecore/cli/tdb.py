"""``tilecore tdb``: the debugger's command line (tilecore.tdb)."""

from __future__ import annotations

import sys

from . import arg, command


def _ddr_error(e: Exception, ddr_size) -> str:
    """The simulator's message about its -ddr option, as one about --ddr_size."""
    text = str(e)
    prefix = "target option -ddr: "
    at = text.find(prefix)
    if ddr_size is None or at < 0:
        return text
    reason = text[at + len(prefix):]
    return f"--ddr_size {ddr_size}: {reason.removeprefix(f'{ddr_size} is ')}"


def _with_bucket(target, bucket):
    """The target of bucket ``bucket`` of a model with buckets (None: as given)."""
    if bucket is None:
        return target
    from ..tdb.model import ModelTarget
    from ..tdb.target import TargetError

    if not isinstance(target, ModelTarget):
        raise TargetError(f"--bucket {bucket}: the target is a {target.kind}, not a model")
    if not 0 <= bucket < target.bucket_count:
        have = (f"its buckets are 0 to {target.bucket_count - 1}" if target.bucket_count > 1 else
                "it has no buckets")
        raise TargetError(f"{target.path or target.name}: --bucket {bucket}, and {have}")
    chosen = ModelTarget(target.full, bucket)
    chosen.path, chosen.name = target.path, target.name.rsplit(" [bucket", 1)[0] + f" [bucket {bucket}]"
    return chosen


@command(
    "tdb",
    "debug a compiled model (.tcx), a kernel module (.tcm) or TC1 assembly (.s) on the simulator",
    [
        arg("target", help="model executable (.tcx), a folder holding one with its inputs and references, kernel "
            "module file (.tcm) or assembly file (.s)"),
        arg("--inputs", help=".npz of input arrays, keyed by model input or kernel parameter name"),
        arg("--graph", help="models: the compiled graph's text (tilecore compile --dump-graph) for b graph:LINE "
            "(default: NAME.graph beside NAME.tcx)"),
        arg("--ref_data", nargs="+", default=None,
            help="models: .npz of reference tensors keyed by ONNX value name (data-check after each node)"),
        arg("--bucket", type=int, metavar="K", help="models with buckets: debug bucket K (default: the one the "
            "inputs' shapes take, else 0)"),
        arg("--function", help="the kernel to debug when the module has several"),
        arg("--plugins", nargs="+", default=[], help="Python files defining tilecore.tdb.Plugin subclasses"),
        arg("--ddr_size", help="simulated DDR size, e.g. 256MiB"),
        arg("-v", "--verbose", action="store_true", help="show progress on long runs"),
        arg("--do", dest="commands", help="commands separated by ';' to run, then exit"),
    ],
)
def _tdb(args) -> int:
    from ..tdb import Debugger
    from ..tdb.target import Target, open_target

    from ..tdb.folder import target_files

    try:
        target, inputs, ref_data, graph = target_files(args.target, args.inputs, args.ref_data, args.graph)
        if not isinstance(target, Target):
            target = open_target(target, args.function)
        target = _with_bucket(target, args.bucket)
        sim_target = f"npu -cores={max(target.cores, 1)}" + (f" -ddr={args.ddr_size}" if args.ddr_size else "")
        dbg = Debugger(target, inputs=inputs, plugins=args.plugins, verbose=args.verbose, sim_target=sim_target,
                       ref_data=ref_data, graph=graph)
    except Exception as e:  # noqa: BLE001  (a bad target, inputs file, option or plugin file: one line, no traceback)
        print(f"tilecore tdb: error: {_ddr_error(e, args.ddr_size)}", file=sys.stderr)
        return 1
    if args.commands is not None:
        dbg.run_commands(args.commands)
        return 1 if dbg.errors else 0  # a script whose command failed did not do what it says
    try:
        dbg.cmdloop(f"tdb: {target.kind} `{target.name}` ({target.cores} core(s)); 'help' lists the commands, "
                    "'start' loads it, 'run' runs it")
    except KeyboardInterrupt:
        print(file=sys.stdout)
    return 0


@command(
    "check",
    "run a compiled model (.tcx) node by node against reference data; report every node (JSON)",
    [
        arg("target", help="model executable (.tcx), or a folder holding one with its inputs and references"),
        arg("--inputs", help=".npz of the model's inputs, keyed by input name (a folder: its inputs.npz)"),
        arg("--ref_data", nargs="+", help=".npz of reference tensors keyed by ONNX value name (a folder: its "
            "ref*.npz)"),
        arg("--bucket", type=int, metavar="K", help="models with buckets: check bucket K (default: the one the "
            "inputs' shapes take, else 0)"),
        arg("--report", help="write the per-node report as JSON here"),
        arg("--set", nargs="+", default=[], metavar="NAME=X", help="thresholds: rtol, atol, cosine, euclid"),
        arg("--ddr_size", help="simulated DDR size, e.g. 1GiB"),
    ],
)
def _check(args) -> int:
    import io
    import json

    from ..tdb import Debugger
    from ..tdb.datacheck import BAD, describe
    from ..tdb.model import ModelTarget
    from . import check_outputs

    from ..tdb.folder import target_files

    try:
        import os

        folder = os.path.isdir(args.target)
        if not folder and (args.inputs is None or not args.ref_data):
            raise ValueError(f"{args.target}: a .tcx is checked with --inputs IN.npz --ref_data REF.npz (a folder "
                             "target holds them)")
        target, inputs, ref_data, _ = target_files(args.target, args.inputs, args.ref_data, need_ref=True)
        check_outputs({"--report": args.report}, {"executable": getattr(target, "path", None) or args.target,
                                                   "--inputs": inputs, **{f"--ref_data {r}": r for r in ref_data}})
        target = _with_bucket(target if folder else ModelTarget(args.target), args.bucket)
        sim_target = f"npu -cores={max(target.cores, 1)}" + (f" -ddr={args.ddr_size}" if args.ddr_size else "")
        out = io.StringIO()
        dbg = Debugger(target, inputs=inputs, sim_target=sim_target, ref_data=ref_data, stdout=out)
        check = dbg.plugin("data-check")
        check.set_thresholds(args.set)
    except Exception as e:  # noqa: BLE001  (bad files or thresholds: one line, no traceback)
        print(f"tilecore check: error: {_ddr_error(e, args.ddr_size)}", file=sys.stderr)
        return 1
    check.stop = False
    dbg.onecmd("run")
    if not dbg.finished:
        print(f"tilecore check: error: the model did not finish: {out.getvalue().strip().splitlines()[-1:]}",
              file=sys.stderr)
        return 1
    rep = dict(check.report(), model=args.target)
    if args.report:
        from ..runtime.files import write_bytes

        write_bytes(args.report, json.dumps(rep, indent=1, default=float))
    print(f"{args.target}: {rep['checked']} node(s) compared with the reference, {rep['passed']} passed, "
          f"{rep['failed']} failed")
    first = rep["first_divergence"]
    if first is None:
        return 0
    where = (f"member `{first['onnx_name']}` ({first['op_type']}) of layer group `{first['group']}` (node "
             f"{first['index'] + 1}, {first['where']})" if "group" in first else
             f"node {first['index'] + 1} `{first['onnx_name']}` ({first['op_type']}, {first['where']})")
    print(f"first divergence: {where}: {first['verdict']}")
    for r in first["outputs"]:
        if r["status"] in BAD:
            print(f"  output `{r['name']}`: {describe(r)}")
    for name in rep["wrong_nodes"]:
        print(f"  wrong: `{name}`")
    return 1


@command(
    "viz",
    "draw a model's graph (ONNX or .tcx) with Graphviz, nodes coloured by where they run",
    [
        arg("model", help="ONNX model (.onnx) or executable (.tcx)"),
        arg("-o", "--output", required=True, help="graph.svg, graph.html, graph.png or graph.dot"),
        arg("--check", help="a tilecore check --report JSON: failed nodes in red"),
        arg("--stats", help=".tcx: a tilecore run --stats JSON: nodes shaded by their measured cycles"),
    ],
)
def _viz(args) -> int:
    from ..tdb import graphview
    from . import check_outputs

    try:
        check_outputs({"-o": args.output}, {"model": args.model, "--check": args.check, "--stats": args.stats})
        if args.model.endswith(".tcx"):
            from ..tdb.model import ModelTarget

            g = graphview.from_model_target(ModelTarget(args.model))
        else:
            g = graphview.from_onnx(args.model)
        check = graphview.load_check_report(args.check) if args.check else None
        stats = graphview.load_stats(args.stats) if args.stats else None
        graphview.write(g, args.output, check, stats)
    except (graphview.GraphError, ValueError, OSError) as e:
        print(f"tilecore viz: error: {e}", file=sys.stderr)
        return 1
    groups = f", {len(g.groups)} layer group(s)" if g.groups else ""
    print(f"{args.output}: {len(g.nodes)} nodes{groups}")
    return 0

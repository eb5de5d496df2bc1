"""tilecore/zoo/__main__.py — ``python -m tilecore.zoo``:

    list                                   the models, their inputs and outputs
    export NAME [-o FILE] [--batch B] [--seed S]
                                           export NAME (cached) and print the file's path
    check NAME [--batch B] [--seed S] [--runs R]
                                           export NAME, run it in ONNX Runtime on seeded
                                           inputs, print op counts, output shapes and timings
    inputs NAME -o FILE.npz [-n N] [--seed S] [--batch B]
                                           write N seeded samples keyed by input name,
                                           each array of shape (N, batch, ...)

Errors (an unknown model, a missing package) print one line prefixed ``error:`` and
exit with status 1.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from . import ZooError, check, export, info, names, sample_inputs


def _shape(shape):
    return "x".join(str(d) for d in shape)


def _list(args, out) -> None:
    for n in names():
        i = info(n)
        ins = ", ".join(f"{k} {_shape(v['shape'])}" for k, v in i["inputs"].items())
        outs = ", ".join(f"{k} {_shape(v)}" for k, v in i["outputs"].items())
        print(f"{n:<14} {i['description']}", file=out)
        print(f"{'':<14} in: {ins}; out: {outs}", file=out)


def _export(args, out) -> None:
    print(export(args.name, path=args.output, batch=args.batch, seed=args.seed), file=out)


def _check(args, out):
    r = check(args.name, batch=args.batch, seed=args.seed, runs=args.runs)
    how = "from the cache" if r["cached"] else f"exported in {r['export_s']:.2f} s"
    print(f"{args.name}: {r['path']} ({how})", file=out)
    print(f"  {r['node_count']} nodes: " + ", ".join(f"{k} {v}" for k, v in r["nodes"].items()), file=out)
    for n, shape in r["outputs"].items():
        print(f"  output {n}: {_shape(shape)}, std {r['output_std'][n]:.4g}", file=out)
    print(f"  ONNX Runtime: load {r['ort_load_s'] * 1e3:.1f} ms, run {r['ort_run_s'] * 1e3:.2f} ms "
          f"(median of {args.runs})", file=out)
    if not r["finite"]:
        raise ZooError(f"{args.name}: ONNX Runtime produced non-finite outputs")


def _inputs(args, out) -> None:
    np.savez(args.output, **sample_inputs(args.name, args.n, args.seed, args.batch))
    print(args.output, file=out)


def main(argv=None, out=None) -> int:
    out = out or sys.stdout
    p = argparse.ArgumentParser(prog="python -m tilecore.zoo",
                                description="tilecore's offline model zoo (seeded weights, ONNX export)")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the models").set_defaults(run=_list)
    for cmd, fn, helptext in (("export", _export, "export a model and print its path"),
                              ("check", _check, "run a model in ONNX Runtime on seeded inputs"),
                              ("inputs", _inputs, "write seeded input samples to an .npz")):
        q = sub.add_parser(cmd, help=helptext)
        q.add_argument("name")
        q.add_argument("--batch", type=int, default=1)
        q.add_argument("--seed", type=int, default=0)
        q.set_defaults(run=fn)
        if cmd == "export":
            q.add_argument("-o", "--output", default=None, help="file to write (default: the cache file)")
        elif cmd == "check":
            q.add_argument("--runs", type=int, default=10)
        else:
            q.add_argument("-o", "--output", required=True)
            q.add_argument("-n", type=int, default=16, help="number of samples (default 16)")
    args = p.parse_args(argv)
    try:
        args.run(args, out)
    except ZooError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""benchmarks/importer_fuzz.py — the ONNX importer and compiler fed malformed models: each
case is a random valid graph of the graph fuzzer (tests/python/compiler/fuzz_graphs.py)
damaged by one to three mutations (the file's bytes truncated or flipped; an op type, an
input list, an attribute's type or value, an initializer's dims or bytes, a graph input's
type or dims, the opset or IR version changed; names duplicated), then given to
`tilecore.compile` as bytes and, when it compiles, run once on zeros.

Every case must end in one of: compiled (and ran, or its run raised a named error), or
refused with a tilecore error or a ValueError/TypeError/... whose message says what is
wrong. It is a finding when a case crashes the process (a signal), hangs (`--timeout`), or
is refused with an internal error: a Python error type that no check raises on purpose
(AttributeError, IndexError, KeyError, ...) or a message of the interpreter's own ("object
has no attribute", "list index out of range", ...).

Cases run in batches in child processes (`--jobs` at a time); case i of a run is drawn from
a generator seeded with (seed, i), so a finding is reproduced with `--start i --cases 1`.
It prints the counts, the refusals by the first words of their message, each finding with
its case number, and cases per second:

    python benchmarks/importer_fuzz.py --cases 5000 --seed 1 --jobs 2
"""
from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import pathlib
import re
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "python" / "compiler"))

INTERNAL_TYPES = {"AttributeError", "IndexError", "KeyError", "NameError", "UnboundLocalError",
                  "AssertionError", "ZeroDivisionError", "StopIteration", "RecursionError", "MemoryError"}
INTERNAL_WORDS = re.compile(r"object has no attribute|list index out of range|not supported between instances"
                            r"|unsupported operand type|'NoneType'|object is not (subscriptable|iterable|callable)"
                            r"|can't multiply sequence|takes \d+ positional argument|unhashable type"
                            r"|invalid literal for int\(\)|tuple index out of range|cannot unpack")
OPS = ["Add", "Relu", "Conv", "MatMul", "Reshape", "Transpose", "Softmax", "Gather", "Concat", "Slice",
       "ReduceMean", "Resize", "Pad", "NoSuchOp", "If", "Loop", "Split", "Expand", "Cast", "Gemm"]


def _mutate(model, rng: np.random.Generator):
    """One random damage to `model` (an onnx.ModelProto, changed in place); the bytes when
    the damage is to the serialised file."""
    from onnx import AttributeProto, TensorProto, helper

    g = model.graph
    kind = int(rng.integers(0, 13))
    pick = lambda seq: seq[int(rng.integers(0, len(seq)))] if len(seq) else None  # noqa: E731
    odd_ints = [0, -1, -7, 1 << 31, 1 << 40, (1 << 63) - 1]
    if kind == 0:
        data = bytearray(model.SerializeToString())
        if rng.random() < 0.4:
            return bytes(data[:int(rng.integers(0, len(data)))])
        for _ in range(int(rng.integers(1, 9))):
            data[int(rng.integers(0, len(data)))] = int(rng.integers(0, 256))
        return bytes(data)
    node = pick(g.node)
    if kind == 1 and node is not None:
        node.op_type = pick(OPS)
    elif kind == 2 and node is not None:
        if node.input and rng.random() < 0.5:
            del node.input[int(rng.integers(0, len(node.input)))]
        else:
            node.input.append(pick([v.name for v in g.input] + [i.name for i in g.initializer] + ["", "nowhere"]))
    elif kind == 3 and node is not None and node.attribute:
        a = pick(node.attribute)
        choice = int(rng.integers(0, 4))
        if choice == 0:
            a.CopyFrom(helper.make_attribute(a.name, "text"))
        elif choice == 1:
            a.CopyFrom(helper.make_attribute(a.name, [int(x) for x in rng.choice(odd_ints, 3)]))
        elif choice == 2:
            a.CopyFrom(helper.make_attribute(a.name, int(pick(odd_ints))))
        else:
            a.type = AttributeProto.AttributeType.Value(pick(["FLOAT", "INT", "STRING", "TENSOR", "GRAPH", "INTS"]))
    elif kind == 4 and g.initializer:
        t = pick(g.initializer)
        choice = int(rng.integers(0, 4))
        if choice == 0 and t.dims:
            t.dims[int(rng.integers(0, len(t.dims)))] = int(pick(odd_ints))
        elif choice == 1:
            t.data_type = int(rng.integers(0, 25))
        elif choice == 2:
            t.raw_data = t.raw_data[: len(t.raw_data) // 2]
        else:
            t.name = pick([v.name for v in g.input] + [i.name for i in g.initializer])
    elif kind == 5 and g.input:
        v = pick(g.input)
        dims = v.type.tensor_type.shape.dim
        choice = int(rng.integers(0, 3))
        if choice == 0 and dims:
            d = dims[int(rng.integers(0, len(dims)))]
            if rng.random() < 0.5:
                d.dim_value = int(pick(odd_ints))
            else:
                d.dim_param = "N"
        elif choice == 1:
            v.type.tensor_type.elem_type = int(rng.integers(0, 25))
        else:
            g.input.append(v)
    elif kind == 6 and g.output:
        o = pick(g.output)
        choice = int(rng.integers(0, 3))
        if choice == 0:
            o.type.tensor_type.elem_type = int(rng.integers(0, 25))
        elif choice == 1:
            o.name = pick([v.name for v in g.input] + [i.name for i in g.initializer] + ["nowhere"])
        else:
            o.type.tensor_type.shape.dim.add().dim_value = 3
    elif kind == 7:
        model.opset_import[0].version = int(pick([1, 5, 6, 7, 11, 13, 25, 1 << 40]))
    elif kind == 8:
        model.ir_version = int(pick([0, 2, 3, 4, 11, 1 << 40]))
    elif kind == 9 and node is not None and len(g.node) > 1:
        g.node.remove(node)
    elif kind == 10 and node is not None:
        g.node.append(node)  # a second node writing the same outputs
    elif kind == 11 and node is not None and node.output:
        node.output[0] = pick([n.output[0] for n in g.node if n.output] + [v.name for v in g.input])
    elif kind == 12 and len(g.node) > 1:
        nodes = list(g.node)
        rng.shuffle(nodes)
        del g.node[:]
        g.node.extend(nodes)
    else:
        t = TensorProto.FLOAT
        g.input.append(helper.make_tensor_value_info("extra", t, [int(pick(odd_ints))]))
    return None


def case(seed: int, index: int):
    """The damaged model of case `index`, as bytes."""
    import fuzz_graphs as fg

    rng = np.random.default_rng([seed, index, 1])
    model = fg.generate(fg.RngDraw([seed, index])).model
    for _ in range(int(rng.integers(1, 4))):
        data = _mutate(model, rng)
        if data is not None:
            return data
    return model.SerializeToString()


def _classify(e: BaseException) -> str:
    text = str(e)
    if type(e).__name__ in INTERNAL_TYPES or INTERNAL_WORDS.search(text) or not text.strip():
        return "internal"
    return "refused"


def run_case(seed: int, index: int) -> dict:
    import tilecore

    row = {"case": index}
    try:
        data = case(seed, index)
    except Exception as e:  # noqa: BLE001 - a mutation onnx cannot serialise is not a case
        return {**row, "status": "skipped", "message": f"{type(e).__name__}: {e}"}
    try:
        exe = tilecore.compile(data)
    except Exception as e:  # noqa: BLE001
        return {**row, "status": _classify(e), "message": f"{type(e).__name__}: {str(e)[:300]}"}
    try:
        feeds = {}
        for name, (shape, dtype) in exe.inputs.items():
            feeds[name] = np.zeros(shape, dtype)
        exe.run(feeds)
        return {**row, "status": "compiled"}
    except Exception as e:  # noqa: BLE001
        status = _classify(e)
        return {**row, "status": "compiled" if status == "refused" else "internal",
                "message": f"run: {type(e).__name__}: {str(e)[:300]}"}


def _child(seed: int, start: int, stop: int) -> None:
    for i in range(start, stop):
        print(json.dumps({"start": i}), flush=True)
        print(json.dumps(run_case(seed, i)), flush=True)


def _batch(seed: int, start: int, stop: int, timeout: float) -> list[dict]:
    """Runs cases [start, stop) in child processes; a case that kills or stalls its child is
    a crash or a hang, and the rest of the batch goes on in a new child."""
    rows = []
    while start < stop:
        cmd = [sys.executable, __file__, "--child", "--seed", str(seed), "--start", str(start),
               "--cases", str(stop - start)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        current, deadline = None, time.monotonic() + timeout
        import selectors

        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        while True:
            if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                proc.kill()
                proc.wait()
                rows.append({"case": current, "status": "hang", "message": f"no answer in {timeout} s"})
                start = current + 1
                break
            line = proc.stdout.readline()
            if not line:
                code = proc.wait()
                if current is not None and (not rows or rows[-1]["case"] != current):
                    rows.append({"case": current, "status": "crash", "message": f"exit {code}: "
                                 + proc.stderr.read()[-400:]})
                    start = current + 1
                else:
                    start = stop
                break
            msg = json.loads(line)
            if "start" in msg:
                current, deadline = msg["start"], time.monotonic() + timeout
            else:
                rows.append(msg)
        sel.close()
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds one case may take")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.seed, args.start, args.start + args.cases)
        return 0
    t0 = time.perf_counter()
    bounds = [(s, min(s + args.batch, args.start + args.cases))
              for s in range(args.start, args.start + args.cases, args.batch)]
    rows: list[dict] = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for part in pool.map(lambda b: _batch(args.seed, b[0], b[1], args.timeout), bounds):
            rows += part
    seconds = time.perf_counter() - t0
    counts = collections.Counter(r["status"] for r in rows)
    def pattern(message: str) -> str:  # the error type, then the message's first words, names cut
        kind, _, text = message.partition(": ")
        return kind + ": " + " ".join(re.sub(r"`[^`]*`|'[^']*'|\d+", "_", text).split()[:6])

    refusals = collections.Counter(pattern(r["message"]) for r in rows if r["status"] == "refused")
    print(f"importer fuzz: seed {args.seed}, cases {args.start}..{args.start + args.cases - 1}, "
          f"{seconds:.0f} s ({len(rows) / max(seconds, 1e-9):.1f} cases/s)")
    for status in ("compiled", "refused", "skipped", "internal", "crash", "hang"):
        print(f"  {status:9s} {counts.get(status, 0):6d}")
    print("most common refusals:")
    for text, n in refusals.most_common(12):
        print(f"  {n:6d}  {text}")
    findings = [r for r in rows if r["status"] in ("internal", "crash", "hang")]
    for r in findings:
        print(f"FINDING case {r['case']}: {r['status']}: {r.get('message', '')}")
    print(f"{len(findings)} finding(s)")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())

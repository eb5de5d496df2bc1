"""benchmarks/tdb_speed.py — `continue` to a breakpoint in tdb vs a plain simulated run.

One kernel (a DSL loop over N int32 elements: vector load, add, store, 8 lanes per
iteration, on one core) runs
  (plain)  on a bare tilecore.sim.Simulator: load, write inputs, run();
  (tdb)    in tilecore.tdb.Debugger: start, a breakpoint on `halt` (so the stop
           checks run for every instruction and hit only at the end), continue;
           with the reverse-execution history recording (default) and without;
  (watch)  the same with a write watchpoint on a word the kernel never writes
           (every memory access is checked).
Then a compiled zoo model (--model, default resnet50) runs
  (plain)  through the executor (Executable.run; the time of its npu and host calls);
  (tdb)    in the Debugger on the .tcx: start, a breakpoint on the `tlut` instruction
           (never executed: the per-instruction check runs everywhere), continue to the
           end; reverse-execution recording off (the default for models) and on; and
           with the data-check on (ONNX Runtime's value of every node output as the
           reference, not stopping), which checks each layer-group member where it completes.
Figures: front-end instructions per second and the ratio of speeds to the plain
run (median of --repeat rounds; each round runs every case once).

    PYTHONPATH=python:build-dev/python python benchmarks/tdb_speed.py [--n 1048576] [--repeat 5] [--model resnet50]
"""
import argparse
import io
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # idle BLAS threads spin and steal the simulator's core
import statistics
import sys
import tempfile
import time

import numpy as np

import tilecore
from tilecore import script as S
from tilecore.tdb import Debugger


@S.prim_func(num_cores=1)
def add_loop(a: S.ptr("int32", "global"), b: S.ptr("int32", "global"), n: S.int32):
    for i in range(0, n, 8):
        S.vstore(S.vload(a + i) + 1, b + i)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1 << 20)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--model", default="resnet50", help="zoo model for the model part ('' to skip)")
    args = ap.parse_args()
    n = args.n
    a = np.arange(n, dtype=np.int32)
    inputs = {"a": a, "b": np.zeros(n, np.int32), "n": n}
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "add_loop.tcm")
        tilecore.build(add_loop, target="npu").save(path)
        dbg = Debugger(path, inputs=inputs, stdout=io.StringIO())
        target = dbg.target

        def under_tdb(record, watch):
            dbg.start()
            dbg.onecmd("record on" if record else "record off")
            dbg.onecmd("delete")
            dbg.onecmd("b halt")
            if watch:
                dbg.onecmd("watch ddr:0x8+4")
            t0 = time.perf_counter()
            dbg.onecmd("continue")
            dt = time.perf_counter() - t0
            assert dbg.last_stop["reason"] == "breakpoint", dbg.stdout.getvalue()[-400:]
            return dt, dbg.position(), dbg.sim.read("ddr", dbg.symbols["b"].address, (n,), "int32")

        def plain():
            sim = tilecore.sim.Simulator("npu -cores=1")  # a fresh simulator: no debugger attached
            sim.load(target.program)
            target.prepare(sim, inputs)
            t0 = time.perf_counter()
            sim.run()
            dt = time.perf_counter() - t0
            return dt, sim.stats()["instructions"], sim.read("ddr", 0x10000 + (n * 4 + 63) // 64 * 64, (n,), "int32")

        cases = [("plain run", plain), ("tdb continue, recording", lambda: under_tdb(True, False)),
                 ("tdb continue, no recording", lambda: under_tdb(False, False)),
                 ("tdb continue + watchpoint", lambda: under_tdb(True, True))]
        times = {label: [] for label, _ in cases}
        counts = {}
        for _ in range(args.repeat):  # round robin, so a load change affects every case alike
            for label, fn in cases:
                dt, counts[label], out = fn()
                assert np.array_equal(out, a + 1), f"{label}: wrong result"
                times[label].append(dt)
        rows = []
        base = statistics.median(times["plain run"])
        for label, _ in cases:
            t = statistics.median(times[label])
            rows.append((label, counts[label], t, counts[label] / t, base / t))
    print(f"kernel: {n} int32 elements, 8 per iteration, 1 core; median of {args.repeat}; python {sys.version.split()[0]}")
    print(f"{'':30s} {'instructions':>12s} {'seconds':>9s} {'M instr/s':>10s} {'vs plain':>9s}")
    for label, count, t, ips, ratio in rows:
        print(f"{label:30s} {count:12d} {t:9.4f} {ips / 1e6:10.2f} {ratio:9.2f}")
    if args.model:
        model_speed(args.model, args.repeat)


def model_speed(name, repeat):
    """A zoo model compiled for TC1: the executor's run against tdb's continue from the
    first node to the end, with an instruction breakpoint that never fires (`b tlut`: the
    per-instruction check runs everywhere). Both run every node, so their times compare
    (a breakpoint on the last node would stop before it: with layer groups, before most
    of the model)."""
    from tilecore import zoo

    exe = tilecore.compile(zoo.export(name))
    inputs = {k: v[0] for k, v in zoo.sample_inputs(name, 1, 0).items()}
    out_name = next(iter(exe.outputs))
    dbg = Debugger(exe, inputs=inputs, stdout=io.StringIO())

    def plain():
        exe.run(inputs)
        st = exe.stats()
        steps = st["npu_call_seconds"] + st["host_call_seconds"]  # the nodes only, as tdb's continue
        return steps, st["wall_seconds"], sum(o.get("instructions", 0) for o in st["ops"])

    checked = Debugger(exe, inputs=inputs, stdout=io.StringIO(), ref_data=onnx_reference(zoo.export(name), inputs))
    checked.onecmd("check nostop")

    def under_tdb(record, dbg=dbg):
        dbg.onecmd("start")
        dbg.onecmd("record on" if record else "record off")
        dbg.onecmd("delete")
        dbg.onecmd("b tlut")
        t0 = time.perf_counter()
        dbg.onecmd("continue")  # to the end: the tlut breakpoint never fires
        dt = time.perf_counter() - t0
        assert dbg.finished, dbg.stdout.getvalue()[-400:]
        return dt, dbg.base_position

    reference = exe.run(inputs)[out_name]
    cases = {"plain run (executor)": [], "tdb continue (record off, default)": [], "tdb continue (record on)": [],
             "tdb continue, data-check": []}
    counts = {}
    walls = []
    for _ in range(repeat):
        t, wall, counts["plain run (executor)"] = plain()
        cases["plain run (executor)"].append(t)
        walls.append(wall)
        for label, record in (("tdb continue (record off, default)", False), ("tdb continue (record on)", True)):
            dt, counts[label] = under_tdb(record)
            np.testing.assert_array_equal(dbg.model.read_value(dbg.sim, out_name), reference)
            cases[label].append(dt)
        dt, counts["tdb continue, data-check"] = under_tdb(False, checked)
        cases["tdb continue, data-check"].append(dt)
    rep = checked.plugin("data-check").report()
    base = statistics.median(cases["plain run (executor)"])
    print()
    print(f"model: {name}, {len(dbg.model.nodes)} nodes ({sum(n.where == 'npu' for n in dbg.model.nodes)} npu), "
          f"{dbg.sim.cores} cores; continue to the end with `b tlut`; "
          f"median of {repeat} (executor wall time with arena setup: {statistics.median(walls):.3f} s)")
    print(f"{'':36s} {'instructions':>12s} {'seconds':>9s} {'M instr/s':>10s} {'vs plain':>9s}")
    for label, ts in cases.items():
        t = statistics.median(ts)
        print(f"{label:36s} {counts[label]:12d} {t:9.4f} {counts[label] / t / 1e6:10.2f} {base / t:9.2f}")
    members = sum("group" in r for r in rep["nodes"])
    print(f"data-check: {rep['checked']} compared ({members} layer-group members), {rep['passed']} passed")


def onnx_reference(model, inputs):
    """ONNX Runtime's value of every node output (the model with all of them as outputs)."""
    import onnx
    import onnxruntime
    from onnx import helper

    m = onnx.ModelProto()
    m.CopyFrom(onnx.load(model))  # (a path)
    have = {o.name for o in m.graph.output}
    m.graph.output.extend(helper.make_empty_tensor_value_info(o) for n in m.graph.node for o in n.output
                          if o and o not in have)
    sess = onnxruntime.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, inputs)))


if __name__ == "__main__":
    main()

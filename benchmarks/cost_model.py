"""The cost model (compiler.estimate_cost, docs/cost_model.md) against the simulator: every
npu step of every zoo model, estimated cycles next to the simulated ones.

    PYTHONPATH=python:build-dev/python python benchmarks/cost_model.py [--models resnet18,bert_layer]
        [--precision f32,int8] [--calib 4] [--worst 12] [--tolerance 0.10] [--no-group]

Per model and precision: the number of npu steps, the share whose estimate is within
--tolerance of the simulated cycles, and the sum of both over the model. Then the
share over all steps of all models, and the --worst steps (largest relative error) with
their op type, both cycle counts and the estimate's bounding resource.
"""
import argparse
import time


def steps_of(name, precision, n_calib, group=True):
    import tilecore
    from tilecore import zoo
    from tilecore.compiler import estimate_cost

    kw = {"calib_samples": zoo.sample_inputs(name, n_calib, seed=0)} if precision == "int8" else {}
    report = {}
    exe = tilecore.compile(zoo.export(name), report=report, precision=precision, group=group, **kw)
    inputs = {k: v[0] for k, v in zoo.sample_inputs(name, 1, seed=0).items()}
    exe.run(inputs)
    funcs = report["npu_funcs"]
    rows = []
    t0 = time.perf_counter()
    for op in exe.stats()["ops"]:
        if op["where"] != "npu" or op["node"] not in funcs:
            continue
        est = estimate_cost(funcs[op["node"]])
        rows.append({"model": name, "precision": precision, "step": op["node"], "op_type": op["op_type"],
                     "sim": op["cycles"], "est": est["cycles"], "bound_by": est["bound_by"],
                     "sim_bound_by": op.get("bound_by", "")})
    return rows, time.perf_counter() - t0


def main():
    from tilecore import zoo

    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(zoo.names()))
    ap.add_argument("--precision", default="f32,int8", help="comma list of f32, f16, bf16, int8")
    ap.add_argument("--calib", type=int, default=4, help="int8 calibration samples")
    ap.add_argument("--worst", type=int, default=12)
    ap.add_argument("--tolerance", type=float, default=0.10)
    ap.add_argument("--no-group", action="store_true", help="no layer groups: every layer a step of its own")
    a = ap.parse_args()
    tol = a.tolerance
    within = lambda r: abs(r["est"] - r["sim"]) <= tol * max(r["sim"], 1)  # noqa: E731
    print(f"{'model':<14} {'prec':>4} {'steps':>5} {'within':>7} {'sim cycles':>12} {'est cycles':>12} "
          f"{'est/sim':>7} {'estimate s':>10}")
    rows = []
    for name in a.models.split(","):
        for prec in a.precision.split(","):
            r, secs = steps_of(name.strip(), prec.strip(), a.calib, not a.no_group)
            rows += r
            sim, est = sum(x["sim"] for x in r), sum(x["est"] for x in r)
            ok = sum(1 for x in r if within(x))
            print(f"{name:<14} {prec:>4} {len(r):>5} {ok / max(len(r), 1):>7.1%} {sim:>12} {est:>12} "
                  f"{est / max(sim, 1):>7.3f} {secs:>10.2f}", flush=True)
    ok = sum(1 for x in rows if within(x))
    print(f"all: {ok} of {len(rows)} npu steps within {tol:.0%} of the simulated cycles ({ok / max(len(rows), 1):.1%})")
    rows.sort(key=lambda x: -abs(x["est"] - x["sim"]) / max(x["sim"], 1))
    print(f"worst {a.worst}:")
    for x in rows[:a.worst]:
        print(f"  {x['model']:<12} {x['precision']:>4} {x['step'][:34]:<34} {x['op_type']:<18} sim {x['sim']:>9} "
              f"est {x['est']:>9} ({(x['est'] - x['sim']) / max(x['sim'], 1):+.1%}) bound by {x['bound_by']} "
              f"(sim: {x['sim_bound_by']})")


if __name__ == "__main__":
    main()

"""`tilecore.compile(..., verify=)` (docs/compiler.md, "Verification") over a set of models
in each precision: the executable that ships run in the simulator's hazard mode, every
value its steps write against the same model compiled one node a step, and the outputs
against the reference evaluator.

    python benchmarks/verify_models.py [--models speed|NAME,...] [--precision f32,int8] [--calib 4]

--models takes the zoo's names and the outside corpora's (as benchmarks/model_zoo.py does;
`speed`, the default, is its SPEED_SET). int8 calibrates on --calib samples (seed 0); the
checks run on evaluation sample 0 (seed 1). One line per model and precision: PASS or FAIL
with verify's message (the race, or the layer group or fused node that changed a value),
the lowest cosine of a shipped step against the one-node-a-step program, each output's
cosine against the reference, and the seconds; then the count that passed.
"""
import argparse
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def model_and_samples(name, calib):
    """(ONNX path, calibration samples, evaluation feeds) of a zoo or outside model."""
    from tilecore import zoo
    from tilecore.zoo import outside

    if name in zoo.names():
        path, samples = zoo.export(name), zoo.sample_inputs
    else:
        path, samples = outside.build(name)[0], outside.sample_inputs
    feeds = {k: v[0] for k, v in samples(name, 1, 1).items()}
    return path, samples(name, calib, 0), feeds


def main():
    from model_zoo import SPEED_SET

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="speed", help="`speed` or a comma list of zoo / outside names")
    ap.add_argument("--precision", default="f32,int8", help="comma list of f32, f16, bf16, int8")
    ap.add_argument("--calib", type=int, default=4, help="int8 calibration samples (seed 0)")
    args = ap.parse_args()
    import tilecore

    names = SPEED_SET if args.models == "speed" else args.models.split(",")
    precisions = args.precision.split(",")
    passed = total = 0
    for name in names:
        for prec in precisions:
            total += 1
            t0 = time.perf_counter()
            try:
                path, calib, feeds = model_and_samples(name, args.calib)
                rep = {}
                kw = {"calib_samples": calib} if prec == "int8" else {}
                tilecore.compile(path, precision=prec, verify=feeds, report=rep, **kw)
                v = rep["verify"]
                low = min([s["cosine"] for s in v["steps"]], default=1.0)
                outs = ", ".join(f"{k} {c:.6f}" for k, c in v["outputs"].items())
                line = f"PASS  lowest step {low:.6f}  outputs {outs}"
                passed += 1
            except Exception as e:  # noqa: BLE001 — a model that fails is a row, the sweep goes on
                line = f"FAIL  {type(e).__name__}: {' '.join(str(e).split())}"
            print(f"{name:30} {prec:5} {line}  {time.perf_counter() - t0:.0f} s", flush=True)
    print(f"{passed} of {total} (model, precision) pairs pass verify")
    return 0 if passed == total else 1


if __name__ == "__main__":
    sys.exit(main())

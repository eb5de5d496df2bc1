"""int8 accuracy of the zoo models per calibration method, side by side.

    PYTHONPATH=python:build-dev/python python benchmarks/calibration_methods.py \
        [--models resnet50,mobilenet_v2,bert_layer] [--calib 16] [--eval 8]

Each model is calibrated once (``calibrate(method="auto")`` keeps every method's
candidate, ``CalibTable.with_method`` picks one) on --calib seeded samples (seed 0),
compiled in int8 per method and run on --eval other samples (seed 1); the figures are
the lowest and median cosine of the outputs against ONNX Runtime f32, and how many
tensors ``auto`` gave to each method. Calibration time is printed too.
"""
import argparse
import statistics
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="resnet50,mobilenet_v2,bert_layer")
    ap.add_argument("--methods", default="minmax,percentile,kl,auto")
    ap.add_argument("--calib", type=int, default=16)
    ap.add_argument("--eval", type=int, default=8)
    args = ap.parse_args()

    import onnxruntime as ort

    import tilecore
    from tilecore import zoo
    from tilecore.compiler.calibration import calibrate
    from tilecore.compiler.compare import metrics

    print(f"{'model':<14} {'method':<11} {'cosine min':>10} {'median':>9}")
    for name in args.models.split(","):
        path = zoo.export(name)
        cal = zoo.sample_inputs(name, args.calib, seed=0)
        ev = zoo.sample_inputs(name, args.eval, seed=1)
        feeds = [{k: v[i] for k, v in ev.items()} for i in range(args.eval)]
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        refs = [sess.run(None, f) for f in feeds]
        t0 = time.perf_counter()
        auto = calibrate(path, cal, method="auto")
        secs = time.perf_counter() - t0
        chosen = {m: sum(1 for v in auto.methods.values() if v == m) for m in ("minmax", "percentile", "kl")}
        for method in args.methods.split(","):
            table = auto if method == "auto" else auto.with_method(method)
            exe = tilecore.compile(path, precision="int8", calib=table)
            cos = []
            for f, ref in zip(feeds, refs):
                outs = exe.run(f)
                cos.append(min(metrics(outs[o.name], r)["cosine"] for o, r in zip(sess.get_outputs(), ref)))
            print(f"{name:<14} {method:<11} {min(cos):>10.5f} {statistics.median(cos):>9.5f}", flush=True)
        print(f"{name:<14} auto chose {chosen}; calibration {secs:.1f} s over {len(auto.thresholds)} tensors",
              flush=True)


if __name__ == "__main__":
    main()

"""ResNet-18 (the zoo's, seeded weights) quantised two ways, side by side with ONNX Runtime:

1. QDQ by ``onnxruntime.quantization.quantize_static`` (int8 activations, per-channel int8
   weights, calibrated on 16 seeded samples), compiled by tilecore with its matrix ops folded
   into int8, and without the folding (every Q/DQ on the vector engine, Conv in f32);
2. tilecore's own int8 (``precision="int8"``) with thresholds from
   ``compiler.calibration.calibrate`` on the same 16 samples, per --methods.

    PYTHONPATH=python:build-dev/python python benchmarks/quantised_resnet18.py [--eval 8] [--methods auto,minmax]

Evaluation on --eval other seeded samples: cosine of the logits against ONNX Runtime (the
quantised model for 1., the f32 model for 1. and 2.), min and median; simulated cycles of one
run next to the f32 compile's.
"""
import argparse
import os
import statistics
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--eval", type=int, default=8)
    ap.add_argument("--methods", default="auto,minmax")
    args = ap.parse_args()

    import onnxruntime as ort
    from onnxruntime import quantization as q

    import tilecore
    from tilecore import frontend, zoo
    from tilecore.compiler.calibration import calibrate
    from tilecore.compiler.compare import metrics

    path = zoo.export("resnet18")
    cal = zoo.sample_inputs("resnet18", 16, seed=1)
    (name,) = cal
    ev = zoo.sample_inputs("resnet18", args.eval, seed=2)[name]

    class Reader(q.CalibrationDataReader):
        def __init__(self):
            self.it = iter([{name: c} for c in cal[name]])

        def get_next(self):
            return next(self.it, None)

    qdq_path = os.path.join(tempfile.mkdtemp(), "resnet18_qdq.onnx")
    q.quantize_static(path, qdq_path, Reader(), quant_format=q.QuantFormat.QDQ, per_channel=True,
                      activation_type=q.QuantType.QInt8, weight_type=q.QuantType.QInt8)

    def ort_run(p):
        s = ort.InferenceSession(p, providers=["CPUExecutionProvider"])
        return [s.run(None, {name: x})[0] for x in ev]

    ref_f32, ref_qdq = ort_run(path), ort_run(qdq_path)

    def row(label, exe, refs):
        outs = [exe.run({name: x})["logits"] for x in ev]
        cyc = exe.stats()["cycles"]
        for ref_label, ref in refs:
            cos = [metrics(o, r)["cosine"] for o, r in zip(outs, ref)]
            print(f"{label:<34} vs ORT {ref_label:<5} cosine min {min(cos):.5f} median {statistics.median(cos):.5f}"
                  f"   cycles {cyc:>11,}")

    rep = {}
    row("f32", tilecore.compile(path), [("f32", ref_f32)])
    row("QDQ, folded to int8", tilecore.compile(qdq_path, report=rep), [("QDQ", ref_qdq), ("f32", ref_f32)])
    print(f"  ({len(rep['qdq']['folded'])} matrix nodes folded, {len(rep['qdq']['kept'])} kept in f32)")
    row("QDQ, not folded (Q/DQ + f32 Conv)", tilecore.compile(frontend.from_onnx(qdq_path)),
        [("QDQ", ref_qdq), ("f32", ref_f32)])
    for method in args.methods.split(","):
        table = calibrate(path, cal, method=method)
        row(f"int8, calibrate({method})", tilecore.compile(path, precision="int8", calib=table),
            [("f32", ref_f32)])


if __name__ == "__main__":
    main()

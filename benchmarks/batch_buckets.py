"""Shape buckets (docs/compiler.md, "Shape buckets"): one `.tcx` for several input shapes,
next to ONNX Runtime at each shape.

    python benchmarks/batch_buckets.py [--precision f32,int8] [--batches 1,2,4,8] [--seqs 32,64,128] [--no-bert]

ResNet-50 (tilecore.zoo's torchvision-style definition, seeded weights) with its batch made
symbolic, compiled once with a bucket per batch: the file's size over the batch-1 `.tcx`'s,
and per bucket the simulated cycles, MAC utilisation and the outputs' cosine against ONNX
Runtime at that batch; then batch 3, which runs padded in the bucket of 4. int8 calibrates
once on 8 samples at batch 1 (seed 0). A BERT encoder (transformers' BertModel, 2 layers,
hidden 128, seeded weights, exported with symbolic batch and sequence) compiled for the
sequence lengths --seqs: each against ONNX Runtime, and a length between them refused with
the list of buckets.
"""
import argparse
import os
import sys
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402


def cosine(a, b):
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def symbolic_batch(path, out):
    """The model at ``path`` with dimension 0 of its inputs and outputs named N."""
    import onnx

    m = onnx.load(path)
    for v in list(m.graph.input) + list(m.graph.output):
        d = v.type.tensor_type.shape.dim[0]
        d.ClearField("dim_value")
        d.dim_param = "N"
    del m.graph.value_info[:]
    onnx.save(m, out)
    return m.graph.input[0].name, [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim[1:]]


def resnet(precisions, batches, tmp):
    import onnxruntime as ort

    import tilecore
    from tilecore import zoo

    path = os.path.join(tmp, "resnet50_n.onnx")
    name, rest = symbolic_batch(zoo.export("resnet50"), path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    calib = {name: rng.standard_normal([8, 1, *rest]).astype(np.float32)}
    print(f"{'model':10} {'prec':5} {'batch':>5} {'bucket':>6} {'cycles':>10} {'MAC util':>8} {'cosine':>10}")
    for prec in precisions:
        kw = {"calib_samples": calib} if prec == "int8" else {}
        t0 = time.perf_counter()
        one = tilecore.compile(path, precision=prec, input_shapes={name: [1, *rest]}, **kw)
        exe = tilecore.compile(path, precision=prec, dims={"N": batches}, batch="N", **kw)
        seconds = time.perf_counter() - t0
        one_path, all_path = os.path.join(tmp, f"one_{prec}.tcx"), os.path.join(tmp, f"all_{prec}.tcx")
        one.save(one_path)
        exe.save(all_path)
        ratio = os.path.getsize(all_path) / os.path.getsize(one_path)
        print(f"{'resnet50':10} {prec:5} buckets {batches}: {os.path.getsize(all_path)} bytes, {ratio:.3f}x the batch-1 "
              f"file ({os.path.getsize(one_path)} bytes); both compiled in {seconds:.1f} s")
        exe = tilecore.runtime.load_executable(all_path)
        runs = sorted(set(batches) | ({3} if max(batches) > 3 else set()))
        for b in runs:
            x = np.random.default_rng(100 + b).standard_normal([b, *rest]).astype(np.float32)
            out = next(iter(exe.run({name: x}).values()))
            st = exe.stats()
            ref = sess.run(None, {name: x})[0]
            bucket = st["bucket"]
            padded = f"  (padded from {bucket['padded_from']})" if "padded_from" in bucket else ""
            print(f"{'resnet50':10} {prec:5} {b:>5} {bucket['index']:>6} {st['cycles']:>10} {st['mac_utilisation']:>8.1%} "
                  f"{cosine(out, ref):>10.7f}{padded}")


def bert(seqs, tmp):
    import onnxruntime as ort
    import torch

    import tilecore
    from tilecore.zoo.outside import import_torchvision

    import_torchvision()  # transformers imports it; its compiled ops do not load on the CPU wheel
    import transformers

    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=1000, max_position_embeddings=max(seqs), hidden_size=128,
                                  num_hidden_layers=2, num_attention_heads=4, intermediate_size=256)
    base = transformers.BertModel(cfg).eval()

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = base

        def forward(self, input_ids, attention_mask):
            return self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    path = os.path.join(tmp, "bert.onnx")
    ids = torch.randint(0, 1000, (1, seqs[0]))
    torch.onnx.export(Encoder().eval(), (ids, torch.ones_like(ids)), path, input_names=["input_ids", "attention_mask"],
                      output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                      dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
                                    "last_hidden_state": {0: "batch", 1: "seq"}})
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    t0 = time.perf_counter()
    exe = tilecore.compile(path, dims={"batch": [1], "seq": seqs})
    print(f"\nBERT encoder (2 layers, hidden 128), buckets seq {seqs}, compiled in {time.perf_counter() - t0:.1f} s")
    rng = np.random.default_rng(1)
    for n in seqs:
        feed = {"input_ids": rng.integers(0, 1000, (1, n)).astype(np.int64), "attention_mask": np.ones((1, n), np.int64)}
        feed["attention_mask"][0, n - n // 8:] = 0  # padding tokens, masked
        out = exe.run(feed)["last_hidden_state"]
        st = exe.stats()
        print(f"  seq {n:4}: bucket {st['bucket']['index']}, {st['cycles']} cycles, cosine "
              f"{cosine(out, sess.run(None, feed)[0]):.7f}")
    between = (seqs[0] + seqs[1]) // 2 if len(seqs) > 1 else seqs[0] + 1
    try:
        exe.run({"input_ids": np.zeros((1, between), np.int64), "attention_mask": np.ones((1, between), np.int64)})
        print(f"  seq {between}: ran (expected a refusal)")
    except ValueError as e:
        print(f"  seq {between}: refused: " + str(e).splitlines()[0])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--precision", default="f32,int8")
    ap.add_argument("--batches", default="1,2,4,8")
    ap.add_argument("--seqs", default="32,64,128")
    ap.add_argument("--no-bert", action="store_true")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        resnet([p for p in a.precision.split(",") if p], [int(b) for b in a.batches.split(",")], tmp)
        if not a.no_bert:
            bert([int(s) for s in a.seqs.split(",")], tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())

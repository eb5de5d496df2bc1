"""The zoo compiled for TC1 and run on its simulator, next to ONNX Runtime on the same model
and inputs.

    python benchmarks/model_zoo.py [--models resnet18,resnet50,efficientnet_b0,timm/levit_128s|speed] [--runs 5] [--ort-threads 1]
        [--precision f32,f16,bf16,int8] [--eval 8] [--calib 16] [--auto-mixed gate|TARGET|none] [--layers N]
        [--no-group]

--models takes the zoo's names and those of the outside corpora (tilecore.zoo.outside:
torchvision, timm and transformers definitions with seeded weights; `python
benchmarks/model_corpus.py --list` lists them), or `speed`: the 22 models of SPEED_SET
below, the set the compiler's speed is measured on. Per model: compile time (tilecore.compile, the whole driver, on one thread of this
process), simulated cycles and MAC utilisation (against the peak of 4 cores in the
model's precision), the cycles over the sum of the npu steps' roofline bounds ("x roof":
docs/compiler.md, "Roofline"), the share of the npu cycles in steps bound by a compute engine (mm,
vec) and by the DMA engines (din, dout; the rest is the front end), the DDR traffic over
its lower bound (weights + inputs + outputs moved once; runtime/model_report.py), the host
wall time of the simulated run and ONNX Runtime's time on the same inputs (both medians of
--runs runs after a warm-up; ONNX Runtime on the CPU provider with one thread, like the
simulator, unless --ort-threads says otherwise),
their ratio, and the cosine of the outputs against ONNX Runtime's f32 run. A model that
does not compile is listed with the reason.

With --precision (a comma list) each model is compiled in each precision with --calib
calibration samples (zoo.sample_inputs seed 0: int8 thresholds by min/max, and the bias
correction of every narrow precision). The cosine is then the lowest over --eval other
samples (seed 1); "fb" counts the matrix nodes kept in f32 (a strategy refusing the precision).

--auto-mixed says how the mixed precision is chosen: `gate` (the default) compiles each
model and precision that has an accuracy gate in docs/precision.md (GATES below) a second
time with auto_mixed at the gate with part of its error budget kept as margin,
``1 - (1 - gate) * SEARCH_MARGIN`` (half in f16/bf16, a fifth in int8; the most sensitive matrix nodes one step wider until the
calibration samples reach it: a target met just so on the calibration samples is missed on
others, the per-sample cosines of the YOLO-like model in bf16 spread from 0.993 to 0.9993)
and prints that compilation's row: "plain" is then the
cosine with every matrix node in the precision, "cosine" the mixed one, "wider" the nodes
moved; a number TARGET does the same with that target for every model and precision;
`none` compiles plainly only.

--layers N prints each model's N costliest layers (tilecore profile's table: cycles, MACs,
utilisation, DDR bytes, the bounding engine and its class) and its model report.
"""
import argparse
import os
import statistics
import time

# numpy's BLAS threads spin between calls and took a core from the simulated run on a
# 2-core machine; one thread, like the simulator and ONNX Runtime here (set before numpy)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

# the accuracy gates of docs/precision.md: lowest output cosine against ONNX Runtime f32
GATES = {
    "resnet18": {"f16": 0.999, "bf16": 0.999},
    "resnet50": {"int8": 0.99, "f16": 0.999, "bf16": 0.999},
    "mobilenet_v2": {"int8": 0.98, "f16": 0.999, "bf16": 0.999},
    "bert_layer": {"int8": 0.99, "f16": 0.999, "bf16": 0.999},
    "yolo_like": {"f16": 0.999, "bf16": 0.999},
}

# the search's target keeps this fraction of the gate's 1 - cos: half for f16/bf16; a fifth
# for int8, whose fallback (bf16) caps what moving nodes can reach (ResNet-50: 0.996, so a
# target of 0.995 moved all 53 nodes to bf16)
SEARCH_MARGIN = {"f16": 0.5, "bf16": 0.5, "int8": 0.8}


def _lowest_cosine(exe, sess, names, ev, n_eval):
    from tilecore.compiler.compare import metrics

    cos = 1.0
    for i in range(n_eval):
        inp = {k: v[i] for k, v in ev.items()}
        got, want = exe.run(inp), sess.run(names, inp)
        cos = min([cos] + [metrics(got[n], r)["cosine"] for n, r in zip(names, want)])
    return cos


class _Outside:
    """A model of the outside corpora (tilecore.zoo.outside) through the zoo's calls."""

    @staticmethod
    def export(name):
        from tilecore.zoo import outside

        return outside.build(name)[0]

    @staticmethod
    def sample_inputs(name, n, seed):
        from tilecore.zoo import outside

        return outside.sample_inputs(name, n, seed)


# The set the compiler's speed is measured on (--models speed): the zoo and, from the outside
# corpora, the families whose layers the zoo lacks: depthwise and squeeze-excite CNNs
# (MobileNetV3, EfficientNet, MNASNet, RegNetY), grouped Convs (ResNeXt, ShuffleNet), dense
# blocks, inverted bottlenecks with LayerNorm (ConvNeXt), segmentation (DeepLabV3),
# decoder-only transformers with RMSNorm, rotary embeddings and SwiGLU (Llama), GPT-2, a
# 1-D convolution audio encoder with GroupNorm (wav2vec 2.0) and a vision transformer.
SPEED_SET = ["resnet18", "resnet50", "mobilenet_v2", "bert_layer", "yolo_like", "efficientnet_b0",
             "mobilenet_v3_small", "mobilenet_v3_large", "mnasnet0_5", "shufflenet_v2_x1_0", "squeezenet1_1",
             "densenet121", "resnext50_32x4d", "regnet_y_400mf", "convnext_tiny", "googlenet",
             "deeplabv3_mobilenet_v3_large", "timm/regnety_002", "hf/llama", "hf/gpt2", "hf/wav2vec2",
             "hf/vit"]


def _source(name):
    from tilecore import zoo

    return zoo if name in zoo.names() else _Outside


def bench(name, runs, ort_threads, precision="f32", n_eval=1, n_calib=16, auto_mixed=None, group=True):
    import onnxruntime as ort

    import tilecore
    from tilecore.compiler.compare import metrics

    zoo = _source(name)
    path = zoo.export(name)
    t0 = time.perf_counter()
    report = {}
    plain = None
    try:
        kw = {"calib_samples": zoo.sample_inputs(name, n_calib, seed=0)} if precision != "f32" else {}
        kw["group"] = group
        if auto_mixed == "gate":
            gate = GATES.get(name, {}).get(precision)
            auto_mixed = None if gate is None else 1 - (1 - gate) * SEARCH_MARGIN[precision]
        if auto_mixed is not None and auto_mixed != "none" and precision != "f32":
            plain = tilecore.compile(path, precision=precision, **kw)
            kw["auto_mixed"] = float(auto_mixed)
        exe = tilecore.compile(path, report=report, precision=precision, **kw)
    except (ValueError, NotImplementedError) as e:
        return {"model": name, "error": str(e).splitlines()[0] + " " + " ".join(
            ln.strip() for ln in str(e).splitlines()[1:3])}
    compile_s = time.perf_counter() - t0
    inputs = {k: v[0] for k, v in zoo.sample_inputs(name, 1, seed=0).items()}
    sim = []
    for _ in range(runs):
        outs = exe.run(inputs)
        sim.append(exe.stats()["wall_seconds"])
    st = exe.stats()
    from tilecore.cli.runtime import format_profile
    from tilecore.runtime.model_report import model_report
    mrep = model_report(exe, st)
    profile = format_profile(st, exe)
    so = ort.SessionOptions()
    if ort_threads:
        so.intra_op_num_threads = ort_threads
        so.inter_op_num_threads = 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    sess.run(names, inputs)
    ort_t = []
    for _ in range(runs):
        t0 = time.perf_counter()
        ref = sess.run(names, inputs)
        ort_t.append(time.perf_counter() - t0)
    cos = min(metrics(outs[n], r)["cosine"] for n, r in zip(names, ref))
    plain_cos = None
    if n_eval > 1 or precision != "f32":
        ev = zoo.sample_inputs(name, n_eval, seed=1)
        cos = _lowest_cosine(exe, sess, names, ev, n_eval)
        plain_cos = _lowest_cosine(plain, sess, names, ev, n_eval) if plain is not None else None
    moved = 0
    if "auto_mixed" in report:
        am = report["auto_mixed"]
        moved = len(am["moved"])
        print(f"  auto-mixed {name} {precision}: {moved} node(s) to {am['moved_to']}, cosine on the "
              f"{am['samples']} search samples {am['cosine']:.6f} (target {am['target']}): "
              f"{', '.join(am['moved'])}", flush=True)
    return {"model": name, "precision": precision, "fallback": len(report["precision"]["fallbacks"]),
            "compile_s": compile_s, "steps": report["steps"], "host_steps": report["host_steps"],
            "cycles": st["cycles"], "mac_util": st["mac_utilisation"], "sim_s": statistics.median(sim),
            "roofline": st.get("roofline_cycles", 0.0),
            "ort_s": statistics.median(ort_t), "cosine": cos, "plain": plain_cos, "moved": moved,
            "report": mrep, "profile": profile}


def main():
    from tilecore import zoo

    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(zoo.names()),
                    help="comma list of names, or `speed`: the speed set (SPEED_SET)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--ort-threads", type=int, default=1,
                    help="ONNX Runtime's intra-op threads (default 1, like the simulator; 0: its default)")
    ap.add_argument("--precision", default="f32", help="comma list of f32, f16, bf16, int8")
    ap.add_argument("--eval", type=int, default=8, help="evaluation samples for a precision's cosine (seed 1)")
    ap.add_argument("--calib", type=int, default=16, help="int8 calibration samples (seed 0)")
    ap.add_argument("--auto-mixed", default="gate",
                    help="gate (default): auto_mixed at each model's gate where it has one; TARGET: that target "
                         "for all; none: every matrix node in the asked precision")
    ap.add_argument("--layers", type=int, default=0,
                    help="print the N costliest layers of each model (tilecore profile's table) and its model report")
    ap.add_argument("--no-group", action="store_true",
                    help="no layer groups: a step per layer (the per-layer table then lists layers, not groups)")
    a = ap.parse_args()
    print(f"{'model':<14} {'prec':>4} {'fb':>3} {'compile s':>9} {'steps':>5} {'host':>4} {'cycles':>12} {'MAC util':>8} "
          f"{'x roof':>6} {'compute':>7} {'DMA':>5} {'DDR/LB':>6} {'sim run s':>9} {'ORT ms':>8} {'sim/ORT':>8} {'plain':>10} "
          f"{'cosine':>10} {'wider':>5}")
    for name in (SPEED_SET if a.models == "speed" else a.models.split(",")):
        for prec in a.precision.split(","):
            prec = prec.strip()
            r = bench(name.strip(), a.runs, a.ort_threads, prec, a.eval if prec != "f32" else 1, a.calib,
                      a.auto_mixed, not a.no_group)
            if "error" in r:
                print(f"{name:<14} {prec:>4} does not compile: {r['error'][:300]}", flush=True)
                continue
            mr = r["report"]
            npu = max(sum(mr["bound_cycles"].values()), 1)
            share = lambda k: 100.0 * mr["bound_cycles"].get(k, 0) / npu  # noqa: E731
            print(f"{r['model']:<14} {prec:>4} {r['fallback']:>3} {r['compile_s']:>9.2f} {r['steps']:>5} "
                  f"{r['host_steps']:>4} {r['cycles']:>12} {100 * r['mac_util']:>7.1f}% "
                  f"{r['cycles'] / r['roofline'] if r['roofline'] else float('nan'):>5.2f}x {share('compute'):>6.1f}% "
                  f"{share('dma'):>4.0f}% {mr['ddr_ratio']:>5.1f}x {r['sim_s']:>9.2f} "
                  f"{r['ort_s'] * 1e3:>8.1f} {r['sim_s'] / r['ort_s']:>7.0f}x "
                  f"{'' if r['plain'] is None else format(r['plain'], '.7f'):>10} {r['cosine']:>10.7f} "
                  f"{r['moved']:>5}", flush=True)
            if a.layers:
                lines = r["profile"].splitlines()
                print("\n".join("    " + ln for ln in lines[:1 + a.layers] + lines[-4:]), flush=True)


if __name__ == "__main__":
    np.set_printoptions(precision=4)
    main()

"""The zoo compiled for TC1 and run on its simulator, next to ONNX Runtime on the same model
and inputs: `tilecore bench` jobs (docs/bench.md), printed side by side.

    python benchmarks/model_zoo.py [--models resnet18,resnet50,efficientnet_b0,timm/levit_128s|speed] [--runs 5] [--ort-threads 1]
        [--precision f32,f16,bf16,int8] [--eval 8] [--calib 16] [--auto-mixed gate|TARGET|none] [--layers N]
        [--no-group] [--backend serial|local|ray] [--jobs 2] [--timeout 600] [--no-cache] [--cache-dir DIR]
        [--json R.json] [--batch 1,8]

--models takes the zoo's names and those of the outside corpora (tilecore.zoo.outside:
torchvision, timm and transformers definitions with seeded weights; `python
benchmarks/model_corpus.py --list` lists them), or `speed`: the 22 models of SPEED_SET
below, the set the compiler's speed is measured on. Each (model, precision) is a bench job
(its options: --calib as `calib_samples`, --eval as `eval_samples`, --runs as `runs`,
--ort-threads as `ort_threads`, --no-group as `group=false`), run through import, calibrate,
compile, run and compare in a process of its own on --backend (`serial` by default: jobs
side by side share the cores and lengthen each other's seconds) with the bench's cache
(`--no-cache` skips it; a row answered from the cache is marked `(cached)`, its seconds
those of the run that computed it).

Per model: compile time (the compile stage's tilecore.compile, on one thread of its
process), simulated cycles and MAC utilisation (against the peak of 4 cores in the model's
precision), the cycles over the sum of the npu steps' roofline bounds ("x roof":
docs/compiler.md, "Roofline"), the share of the npu cycles in steps bound by a compute engine
(mm, vec) and by the DMA engines or the DDR's bandwidth (din, dout, ddr; the rest is the front
end or latency), the DDR traffic over its lower bound (weights + inputs + outputs moved
once; runtime/model_report.py), the
host wall time of the simulated run and ONNX Runtime's time on the same input (both medians
of --runs runs of evaluation sample 0, each after a warm-up run, a simulated run and one of
ONNX Runtime timed in turn so that both see the same host; ONNX Runtime's on the CPU provider
with one thread, like the simulator, unless --ort-threads says otherwise), their ratio, and
the cosine of the outputs against ONNX Runtime's f32 run, the lowest over --eval
evaluation samples (seed 1; one in f32). A model that does not compile is listed with the
reason. After a model's line, `front-end bound` names the ops of its run that the scalar
front end bounds and that take at least 1% of its cycles (`tilecore profile`'s warning;
docs/compiler.md, "Ops the front end runs", lists those that stay so).

With --precision (a comma list) each model is compiled in each precision with --calib
calibration samples (seed 0: int8 thresholds by min/max, and the bias correction of every
narrow precision). "fb" counts the matrix nodes kept in f32 (a strategy refusing the
precision).

--auto-mixed says how the mixed precision is chosen: `gate` (the default) adds, for each
model and precision that has an accuracy gate in docs/precision.md (GATES below), a job with
the bench's `auto_mixed=gate` (the most sensitive matrix nodes one step wider until the
calibration samples reach the gate with part of its error budget kept as margin,
bench.jobs.AUTO_MIXED_MARGIN) and prints that job's row: "plain" is then the cosine of the
job with every matrix node in the precision, "cosine" the mixed one, "wider" the nodes
moved; a number TARGET does the same with `auto_mixed=TARGET` for every model and narrow
precision; `none` runs the plain jobs only.

--layers N prints each model's N costliest layers (tilecore profile's table: cycles, MACs,
utilisation, DDR bytes, the bounding engine and its class) and its model report, from the
executable the job compiled (taken from the cache) run once more on evaluation sample 0.
--json writes the jobs' bench rows.

--batch (a comma list, default 1) adds, for every zoo model and each batch B other than 1, the
row `NAME bB`: the model exported at batch B (tilecore.zoo.export(name, batch=B)) as an ONNX
file job, its inputs and calibration samples standard-normal (seeded) at that batch, printed
after the batch-1 row; its MAC utilisation is what batching gives (docs/compiler.md, "Shape
buckets": a bucketed executable runs each bucket's program).
"""
import argparse
import os
import sys

# numpy's BLAS threads spin between calls and took a core from the simulated run on a
# 2-core machine; one thread, like the simulator and ONNX Runtime here (set before numpy)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# the accuracy gates of docs/precision.md: lowest output cosine against ONNX Runtime f32
GATES = {
    "resnet18": {"f16": 0.999, "bf16": 0.999},
    "resnet50": {"int8": 0.99, "f16": 0.999, "bf16": 0.999},
    "mobilenet_v2": {"int8": 0.98, "f16": 0.999, "bf16": 0.999},
    "bert_layer": {"int8": 0.99, "f16": 0.999, "bf16": 0.999},
    "yolo_like": {"f16": 0.999, "bf16": 0.999},
}

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

HEADER = (f"{'model':<14} {'prec':>4} {'fb':>3} {'compile s':>9} {'steps':>5} {'host':>4} {'cycles':>12} "
          f"{'MAC util':>8} {'x roof':>6} {'compute':>7} {'DMA':>5} {'DDR/LB':>6} {'sim run s':>9} {'ORT ms':>8} "
          f"{'sim/ORT':>8} {'plain':>10} {'cosine':>10} {'wider':>5}")


def option_sets(name, precision, auto_mixed, base):
    """{"plain": options[, "mixed": options]}: the jobs of one (model, precision)."""
    gate = GATES.get(name, {}).get(precision)
    plain = dict(base, eval_samples=base["eval_samples"] if precision != "f32" else 1)
    if gate is not None:
        plain["gate"] = gate
    if precision == "f32" or auto_mixed == "none" or (auto_mixed == "gate" and gate is None):
        return {"plain": plain}
    return {"plain": plain, "mixed": dict(plain, auto_mixed="gate" if auto_mixed == "gate" else float(auto_mixed))}


def _by_stage(rows):
    return {r["stage"]: r for r in rows}


def format_line(name, precision, rows, plain_rows=None):
    """The table line of one (model, precision) from its job's rows (and the plain job's,
    when the shown one is the mixed precision's)."""
    s = _by_stage(rows)
    run, c = s.get("run"), s.get("compile", {})
    if run is None or run["status"] != "pass":
        last = rows[-1]
        what = "does not compile" if last["stage"] in ("import", "calibrate", "compile") else \
            f"{last['stage']} {last['status']}"
        return f"{name:<14} {precision:>4} {what}: {(last.get('reason') or '')[:300]}"
    bound = run.get("bound_cycles") or {}
    npu = max(sum(bound.values()), 1)
    share = {k: 100.0 * bound.get(k, 0) / npu for k in ("compute", "dma")}
    roof = run["cycles"] / run["roofline_cycles"] if run.get("roofline_cycles") else float("nan")
    ort_s = run.get("ort_seconds") or float("nan")
    cosine = s.get("compare", {}).get("cosine")
    plain = _by_stage(plain_rows).get("compare", {}).get("cosine") if plain_rows else None
    moved = len((c.get("mixed") or {}).get("moved", []))
    shown = [s.get(k, {}) for k in ("compile", "run", "compare")] + [_by_stage(plain_rows or []).get("compare", {})]
    cached = "  (cached)" if any(r.get("cached") for r in shown) else ""
    return (f"{name:<14} {precision:>4} {c.get('fallbacks', 0):>3} {c.get('compile_seconds', 0.0):>9.2f} "
            f"{c.get('steps')!s:>5} {c.get('host_steps')!s:>4} {run['cycles']:>12} "
            f"{100 * run['mac_utilisation']:>7.1f}% {roof:>5.2f}x {share['compute']:>6.1f}% {share['dma']:>4.0f}% "
            f"{run.get('ddr_ratio', float('nan')):>5.1f}x {run['sim_seconds']:>9.3f} {ort_s * 1e3:>8.1f} "
            f"{run['sim_seconds'] / ort_s:>7.1f}x {'' if plain is None else format(plain, '.7f'):>10} "
            f"{'' if cosine is None else format(cosine, '.7f'):>10} {moved:>5}{cached}")


def front_end_line(name, precision, rows):
    """The ops of the run the scalar front end bounds (at least 1% of its cycles each, as
    `tilecore profile` warns; docs/compiler.md lists those that stay so), or ""."""
    run = _by_stage(rows).get("run") or {}
    slow = run.get("front_end_bound") or []
    if not slow:
        return ""
    total = max(run.get("cycles", 1), 1)
    return (f"  front-end bound {name} {precision}: " +
            ", ".join(f"{n} ({op}, {c} cycles, {100.0 * c / total:.1f}%)" for n, op, c in slow))


def mixed_line(name, precision, rows):
    """What the mixed precision's search did, or None for a job without one."""
    am = _by_stage(rows).get("compile", {}).get("mixed")
    if not am:
        return None
    return (f"  auto-mixed {name} {precision}: {len(am['moved'])} node(s) to {am['moved_to']}, cosine on the "
            f"{am['samples']} search samples {am['cosine']:.6f} (target {am['target']}): {', '.join(am['moved'])}")


def profile_lines(job, rows, cache, layers):
    """The ``layers`` costliest layers and the model report of the job's executable (from the
    cache), run once more on evaluation sample 0."""
    from tilecore.bench import models
    from tilecore.cli.runtime import format_profile
    from tilecore.runtime.executable import load_executable

    hit = cache.get(_by_stage(rows)["compile"]["key"])
    if hit is None or hit[1] is None:
        return ["    (the executable is not in the cache)"]
    exe = load_executable(hit[1])
    path = models.model_path(job.model)
    feed = {k: v[0] for k, v in models.sample_inputs(job.model, path, 1, models.EVAL_SEED).items()}
    exe.run(feed)
    lines = format_profile(exe.stats(), exe).splitlines()
    return ["    " + ln for ln in lines[:1 + layers] + lines[-4:]]


def main(argv=None):
    from tilecore import bench, zoo

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(zoo.names()),
                    help="comma list of names, or `speed`: the speed set (SPEED_SET)")
    ap.add_argument("--runs", type=int, default=5, help="timed runs of the simulator and ONNX Runtime (medians)")
    ap.add_argument("--ort-threads", type=int, default=1,
                    help="ONNX Runtime's intra-op threads (default 1, like the simulator; 0: its default)")
    ap.add_argument("--precision", default="f32", help="comma list of f32, f16, bf16, int8")
    ap.add_argument("--eval", type=int, default=8, help="evaluation samples for a precision's cosine (seed 1)")
    ap.add_argument("--calib", type=int, default=16, help="calibration samples (seed 0)")
    ap.add_argument("--auto-mixed", default="gate",
                    help="gate (default): auto_mixed at each model's gate where it has one; TARGET: that target "
                         "for all; none: every matrix node in the asked precision")
    ap.add_argument("--layers", type=int, default=0,
                    help="print the N costliest layers of each model (tilecore profile's table) and its model report")
    ap.add_argument("--no-group", action="store_true",
                    help="no layer groups: a step per layer (the per-layer table then lists layers, not groups)")
    ap.add_argument("--backend", default="serial", choices=bench.BACKENDS,
                    help="where the jobs run (default serial: timings without jobs side by side)")
    ap.add_argument("--jobs", type=int, default=2, help="local: jobs at once (default 2)")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds a job may take (default 1800)")
    ap.add_argument("--no-cache", action="store_true", help="neither read nor write the bench's cache")
    ap.add_argument("--cache-dir", help="the cache folder (default $TILECORE_CACHE/bench)")
    ap.add_argument("--json", metavar="R.json", help="write the jobs' bench rows here")
    ap.add_argument("--batch", default="1", help="comma list of batches: zoo models also at each B > 1 (rows `NAME bB`)")
    a = ap.parse_args(argv)
    if a.auto_mixed not in ("gate", "none"):
        try:
            float(a.auto_mixed)
        except ValueError:
            ap.error(f"--auto-mixed: expected gate, none or a target cosine, got {a.auto_mixed!r}")
    if a.layers and a.no_cache:
        ap.error("--layers reads each job's executable from the cache: drop --no-cache")

    names = SPEED_SET if a.models == "speed" else [n.strip() for n in a.models.split(",") if n.strip()]
    try:
        batches = [int(b) for b in a.batch.split(",") if b.strip()]
    except ValueError:
        ap.error(f"--batch: expected a comma list of batches, got {a.batch!r}")
    if any(b < 1 for b in batches):
        ap.error(f"--batch: batches are at least 1, got {a.batch!r}")
    precisions = [p.strip() for p in a.precision.split(",") if p.strip()]
    base = {"calib_samples": a.calib, "eval_samples": a.eval, "runs": a.runs, "ort_threads": a.ort_threads,
            "group": not a.no_group}
    try:
        refs = dict(zip(names, bench.resolve(names)))
        shown = []
        for name in names:
            if 1 in batches:
                shown.append(name)
            for b in (b for b in batches if b != 1):
                if refs[name].source != "zoo":
                    ap.error(f"--batch {b}: `{name}` is not a zoo model (only the zoo exports at another batch)")
                label = f"{name} b{b}"
                refs[label] = bench.ModelRef(label, "file", zoo.export(name, batch=b))
                shown.append(label)
        names = shown
        groups = []  # ((name, precision), {role: job})
        for name in names:
            for prec in precisions:
                sets = option_sets(name, prec, a.auto_mixed, base)
                groups.append(((name, prec), {role: bench.Job.make(refs[name], prec, o) for role, o in sets.items()}))
    except bench.BenchError as e:
        ap.error(str(e))
    jobs = [job for _, js in groups for job in js.values()]
    cache = None if a.no_cache else bench.Cache(a.cache_dir)

    print(HEADER, flush=True)
    done = {}

    def on_rows(job, rows):
        done[job] = rows
        for (name, prec), js in groups:
            if job in js.values() and all(j in done for j in js.values()):
                shown = js.get("mixed", js["plain"])
                line = mixed_line(name, prec, done[shown])
                if line:
                    print(line, flush=True)
                plain = done[js["plain"]] if "mixed" in js else None
                print(format_line(name, prec, done[shown], plain), flush=True)
                line = front_end_line(name, prec, done[shown])
                if line:
                    print(line, flush=True)
                if a.layers and _by_stage(done[shown]).get("run", {}).get("status") == "pass":
                    print("\n".join(profile_lines(shown, done[shown], cache, a.layers)), flush=True)

    rows = bench.run(jobs, backend=a.backend, workers=a.jobs, timeout=a.timeout, cache=cache, on_rows=on_rows)
    for p in (cache.problems if cache is not None else []):
        print(f"model_zoo: {p}", file=sys.stderr)
    if a.json:
        bench.report.write_json(a.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The whole-model figures of a run (docs/executable.md, "Model report"): MAC utilisation,
what bounds each npu step (the matrix or vector engine, the DMA engines or the DDR's
bandwidth, the front end, or latency when none was busy half of its time)
and the DDR traffic against its lower bound.

    rep = model_report(exe, exe.stats())
    rep["bound_cycles"]      # {"compute": .., "dma": .., "front end": .., "latency": .., "host": ..} cycles
    rep["ddr_bytes"], rep["ddr_lower_bound"]
"""

from __future__ import annotations

from typing import Any

# stats' `bound_by` (an engine, the DDR's bandwidth, latency or the host) -> the class of the bound
BOUND_CLASS = {"mm": "compute", "vec": "compute", "din": "dma", "dout": "dma", "ddr": "dma", "sc": "front end",
               "latency": "latency", "host": "host"}


# a step or member bound by the scalar front end is named when it takes this share of the run
FRONT_END_WARN_SHARE = 0.01


def front_end_bound(st: dict[str, Any]) -> list[tuple[str, str, int]]:
    """(name, op type, cycles) of the steps and layer-group members that the scalar front
    end bounds (code that did not become engine commands) and that take at least
    FRONT_END_WARN_SHARE of the run, the costliest first."""
    total = max(st["cycles"], 1)
    found = []
    for o in st["ops"]:
        rows = [(m["node"], m["op_type"], m["cycles"], m["bound_by"]) for m in o.get("members") or []]
        rows = rows or [(o["name"], o["op_type"], o["cycles"], o["bound_by"])]
        found += [(n, op, c) for n, op, c, b in rows if b == "sc" and c >= FRONT_END_WARN_SHARE * total]
    return sorted(found, key=lambda r: -r[2])


def bound_class(op: dict[str, Any]) -> str:
    """"compute", "dma", "front end", "latency" or "host": what bounds a step of ``stats()["ops"]``."""
    return BOUND_CLASS.get(op.get("bound_by", ""), "host" if op.get("where") == "host" else "front end")


def model_report(exe: Any, st: dict[str, Any]) -> dict[str, Any]:
    """The model report of a run's statistics ``st`` of executable ``exe``: a dict with
    ``mac_utilisation``, ``cycles``, ``bound_cycles`` and ``bound_steps`` (npu cycles and
    step counts per class of bound), ``ddr_bytes`` (read + written by the npu steps) and
    ``ddr_lower_bound`` = ``weights`` + ``inputs`` + ``outputs`` bytes (each moved once),
    with ``ddr_ratio`` = ddr_bytes / ddr_lower_bound."""
    d = exe.describe()
    size = lambda i: int(d["buffers"][i]["size"])  # noqa: E731
    weights = sum(size(c["buffer"]) for c in d["constants"])
    inputs = sum(size(io["buffer"]) for io in d["inputs"])
    outputs = sum(size(io["buffer"]) for io in d["outputs"])
    cycles, steps = {}, {}
    for op in st["ops"]:
        if op["where"] != "npu":
            continue
        k = bound_class(op)
        cycles[k] = cycles.get(k, 0) + op["cycles"]
        steps[k] = steps.get(k, 0) + 1
    ddr = st["bytes"]["ddr_read"] + st["bytes"]["ddr_written"]
    lower = weights + inputs + outputs
    return {"mac_utilisation": st["mac_utilisation"], "precision": st["precision"], "cycles": st["cycles"],
            "bound_cycles": cycles, "bound_steps": steps, "ddr_bytes": ddr, "weights": weights,
            "inputs": inputs, "outputs": outputs, "ddr_lower_bound": lower,
            "ddr_ratio": ddr / lower if lower else 0.0}


def format_model_report(rep: dict[str, Any]) -> str:
    """Three lines: utilisation, cycles by bound, DDR traffic against its lower bound."""
    total = max(sum(rep["bound_cycles"].values()), 1)
    parts = ", ".join(f"{k} {100.0 * v / total:.1f}% ({rep['bound_steps'][k]} steps)"
                      for k, v in sorted(rep["bound_cycles"].items(), key=lambda kv: -kv[1]))
    mib = 1 << 20
    return "\n".join([
        f"MAC utilisation: {100.0 * rep['mac_utilisation']:.2f}% of the {rep['precision']} peak over "
        f"{rep['cycles']} cycles",
        f"npu cycles by bound: {parts}",
        f"DDR traffic: {rep['ddr_bytes'] / mib:.2f} MiB read + written, lower bound {rep['ddr_lower_bound'] / mib:.2f} "
        f"MiB (weights {rep['weights'] / mib:.2f} + inputs {rep['inputs'] / mib:.2f} + outputs "
        f"{rep['outputs'] / mib:.2f}): {rep['ddr_ratio']:.2f}x"])

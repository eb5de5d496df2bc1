"""tilecore/bench/jobs.py — what a job is: a model, a precision and an option set, run
through the stages import → calibrate → compile → run → compare, each with a content
key, each writing one row.

A job's keys are computed before it runs (they do not depend on any stage's result):
``key(stage) = sha256(key(previous stage), stage, the options that stage reads)`` and the
import key hashes the model's bytes and the fingerprint of this tilecore (its Python
sources and compiled libraries, so a changed compiler never meets a stale result).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any, Mapping

from ..ffi.fingerprint import hash_file, package_fingerprint

STAGES = ("import", "calibrate", "compile", "run", "compare")
STATUSES = ("pass", "wrong", "refused", "crash", "timeout")
PRECISIONS = ("f32", "f16", "bf16", "int8")

# Every option a job takes, its default and the stage that first reads it (a stage's key
# covers the options of that stage and of every stage before it).
OPTIONS: dict[str, tuple[Any, str]] = {
    "target": ("npu", "compile"),         # the target string tilecore.compile takes
    "group": (True, "compile"),           # layer groups (tilecore.compile's group=)
    "auto_mixed": (None, "compile"),      # narrow precisions: a target cosine, or "gate" (AUTO_MIXED_MARGIN)
    "entry": ("bytes", "compile"),        # node-test cases: tilecore.compile takes the bytes or the Graph
    "bind": (True, "compile"),            # node-test cases: compile-time inputs become initializers
    "calib_samples": (16, "calibrate"),   # calibration samples (seed 0) of a narrow precision
    "calib_method": ("minmax", "calibrate"),  # minmax, percentile, kl or auto (int8 thresholds)
    "calib_shards": (1, "calibrate"),     # shards the calibration is split into (the table is the same)
    "eval_samples": (1, "run"),           # evaluation samples (seed 1); the cosine is the lowest
    "runs": (1, "run"),                   # timed runs of sample 0 (simulator and ONNX Runtime: medians)
    "ort_threads": (1, "run"),            # ONNX Runtime's intra-op threads for its timing (0: its default)
    "gate": (None, "compare"),            # the cosine a pass needs (None: GATES by precision)
}

# The lowest output cosine against ONNX Runtime f32 that passes, per precision
# (docs/precision.md's gates; f32 must agree to float rounding).
GATES = {"f32": 0.9999, "f16": 0.999, "bf16": 0.999, "int8": 0.99}

# ``auto_mixed="gate"`` searches for ``1 - (1 - gate) * margin``: part of the gate's error
# budget kept back, since a target met just so on the calibration samples is missed on
# others. int8 keeps less back: its wider precision (bf16) caps what moving nodes reaches.
AUTO_MIXED_MARGIN = {"f16": 0.5, "bf16": 0.5, "int8": 0.8}

# Integer options that may be 0 (the others must be at least 1).
_ZERO_ALLOWED = {"ort_threads"}


class BenchError(ValueError):
    """Bad input to the bench (an unknown option, corpus or precision, a malformed report,
    a model file that is not ONNX): the message names what and where."""


def check_options(options: Mapping[str, Any], where: str = "options") -> dict[str, Any]:
    """The option set with defaults filled in; BenchError naming an unknown option or a
    value of the wrong type."""
    out = {}
    for name, value in options.items():
        if name not in OPTIONS:
            raise BenchError(f"{where}: unknown option `{name}` (known: {', '.join(OPTIONS)})")
        default = OPTIONS[name][0]
        if default is not None and not isinstance(value, type(default)):
            raise BenchError(f"{where}: option `{name}` takes a {type(default).__name__}, got {value!r}")
        if isinstance(default, int) and not isinstance(default, bool) and value < (0 if name in _ZERO_ALLOWED else 1):
            raise BenchError(f"{where}: option `{name}` must be at least {0 if name in _ZERO_ALLOWED else 1}, "
                             f"got {value}")
        if name == "gate" and (isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1):
            raise BenchError(f"{where}: option `gate` is a cosine in (0, 1], got {value!r}")
        if name == "calib_method" and value not in ("minmax", "percentile", "kl", "auto"):
            raise BenchError(f"{where}: option `calib_method` is one of minmax, percentile, kl, auto; got {value!r}")
        if name == "auto_mixed" and value != "gate" and (
                isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1):
            raise BenchError(f"{where}: option `auto_mixed` is a target cosine in (0, 1] or \"gate\", got {value!r}")
        if name == "entry" and value not in ("bytes", "graph"):
            raise BenchError(f"{where}: option `entry` is bytes or graph; got {value!r}")
        out[name] = value
    return out


def parse_options(text: str) -> dict[str, Any]:
    """``name=value,name=value`` (values read as JSON when they parse, else as strings) ->
    a checked option set (the defaults not filled in)."""
    opts: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, eq, value = part.partition("=")
        if not eq:
            raise BenchError(f"--options `{text}`: expected name=value, got `{part}`")
        try:
            opts[name.strip()] = json.loads(value)
        except json.JSONDecodeError:
            opts[name.strip()] = value.strip()
    return check_options(opts, where=f"--options `{text}`")


@dataclasses.dataclass(frozen=True)
class ModelRef:
    """Where a job's model comes from: ``source`` is ``zoo`` or ``outside`` (``name`` a
    model of that corpus), ``file`` (``path`` an ONNX file) or ``node-test`` (``path`` an
    ONNX backend test case folder: model.onnx and test_data_set_0)."""

    name: str
    source: str
    path: str = ""

    def to_json(self) -> dict[str, str]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Job:
    """One (model, precision, option set). ``options`` holds only what differs from
    :data:`OPTIONS`' defaults, so equal jobs compare and hash equal."""

    model: ModelRef
    precision: str
    options: tuple = ()          # sorted (name, value) pairs
    preload: tuple = ()          # Python files or modules imported before the stages (custom ops)

    @staticmethod
    def make(model: ModelRef, precision: str, options: Mapping[str, Any] | None = None,
             preload: tuple = ()) -> Job:
        if precision not in PRECISIONS:
            raise BenchError(f"precision `{precision}` is not one of {', '.join(PRECISIONS)}")
        opts = check_options(options or {})
        opts = {k: v for k, v in opts.items() if v != OPTIONS[k][0]}
        if precision == "f32":
            opts.pop("auto_mixed", None)  # nothing narrower to widen: the plain f32 job
        return Job(model, precision, tuple(sorted(opts.items())), tuple(preload))

    def option(self, name: str) -> Any:
        return dict(self.options).get(name, OPTIONS[name][0])

    @property
    def gate(self) -> float:
        """The output cosine a pass needs: the ``gate`` option, else GATES by precision."""
        return self.option("gate") or GATES[self.precision]

    @property
    def auto_mixed_target(self) -> float | None:
        """The target cosine of the automatic mixed precision, None when the job has none."""
        value = self.option("auto_mixed")
        if value is None or self.precision == "f32":
            return None
        if value == "gate":
            return 1.0 - (1.0 - self.gate) * AUTO_MIXED_MARGIN[self.precision]
        return float(value)

    @property
    def stages(self) -> tuple[str, ...]:
        """f32 needs no calibration; every other precision calibrates (int8 thresholds and
        the bias correction of the narrow matrix nodes)."""
        return tuple(s for s in STAGES if s != "calibrate" or self.precision != "f32")

    @property
    def label(self) -> str:
        opts = ",".join(f"{k}={json.dumps(v)}" for k, v in self.options)
        return f"{self.model.name} {self.precision}{' ' + opts if opts else ''}"

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model.to_json(), "precision": self.precision, "options": dict(self.options),
                "preload": list(self.preload)}

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> Job:
        m = doc["model"]
        return Job.make(ModelRef(m["name"], m["source"], m.get("path", "")), doc["precision"], doc.get("options", {}),
                        tuple(doc.get("preload", ())))


# ---- keys -------------------------------------------------------------------------------

# Options that change how a stage runs, not what it gives (the calibration table is the
# same for any number of shards), so a result is shared across them.
_NOT_IN_KEY = {"calib_shards"}


def tilecore_fingerprint() -> str:
    """sha256 of this tilecore: its version, every Python source of the package and the
    compiled extension and library it loaded (runtime/content_cache.py)."""
    return package_fingerprint()


def model_digest(path: str) -> str:
    h = hashlib.sha256()
    hash_file(h, path)
    return h.hexdigest()


def stage_keys(job: Job, model_sha256: str, fingerprint: str | None = None) -> dict[str, str]:
    """stage -> content key of that stage of ``job`` (whose model file has ``model_sha256``)."""
    fingerprint = fingerprint or tilecore_fingerprint()
    keys, prev = {}, hashlib.sha256(f"{fingerprint}:{model_sha256}:{job.precision}".encode()).hexdigest()
    opts = dict(job.options)
    for stage in STAGES:
        mine = {k: opts.get(k, d) for k, (d, first) in OPTIONS.items() if first == stage and k not in _NOT_IN_KEY}
        if "auto_mixed" in mine:
            mine["auto_mixed"] = job.auto_mixed_target  # "gate" reads a later stage's option
        payload = json.dumps([prev, stage, mine, list(job.preload)], sort_keys=True)
        prev = hashlib.sha256(payload.encode()).hexdigest()
        if stage in job.stages:
            keys[stage] = prev
    return keys


def row_base(job: Job, stage: str) -> dict[str, Any]:
    """The fields every row of ``job`` at ``stage`` starts with."""
    row = {"model": job.model.name, "source": job.model.source, "precision": job.precision,
           "options": dict(job.options), "stage": stage}
    if job.model.path:
        row["path"] = job.model.path
    if job.preload:
        row["preload"] = list(job.preload)
    return row

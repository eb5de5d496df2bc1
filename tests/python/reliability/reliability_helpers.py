"""Runs a reproducer of bad input in a child process, so a crash (a signal), a hang or an
unbounded allocation shows as a failing test instead of a dead test run.

    outcome = run_isolated('''
        import tilecore
        tilecore.build(None)
    ''')
    outcome.expect("TypeError", "expected", "None")

The child prints the outcome as one JSON line: the exception type and message, or "ok"
with an optional value (``RESULT = ...`` in the snippet).
"""
import json
import os
import resource
import signal
import subprocess
import sys
import textwrap

_PRELUDE = '''
import json, sys, traceback
import numpy as np
import tilecore
import tilecore.arch, tilecore.runtime, tilecore.sim, tilecore.testing, tilecore.transform
from tilecore import ir

def add_kernel(n=256):
    ib = ir.IRBuilder("add")
    A = ib.buffer_param("A", (n,), "int32"); B = ib.buffer_param("B", (n,), "int32")
    C = ib.buffer_param("C", (n,), "int32")
    with ib.for_range(0, n, name="i") as i:
        C[i] = A[i] + B[i]
    return ib.get()

RESULT = None
'''

_EPILOGUE = '''
try:
    exec(compile(_SNIPPET, "<reproducer>", "exec"), globals())
    _out = {"status": "ok", "result": repr(RESULT)}
except BaseException as e:  # noqa: BLE001
    _out = {"status": "raised", "type": type(e).__name__,
            "mro": [c.__name__ for c in type(e).__mro__], "message": str(e)}
sys.stdout.flush()
print("\\n@@OUTCOME@@" + json.dumps(_out))
'''


class Outcome:
    def __init__(self, proc, timed_out):
        self.returncode = None if timed_out else proc.returncode
        self.timed_out = timed_out
        self.stdout = proc.stdout if not timed_out else ""
        self.stderr = proc.stderr if not timed_out else ""
        self.data = None
        if not timed_out and "@@OUTCOME@@" in self.stdout:
            self.data = json.loads(self.stdout.rsplit("@@OUTCOME@@", 1)[1].strip().splitlines()[0])

    def describe(self):
        if self.timed_out:
            return "the reproducer hung (timeout)"
        if self.returncode is not None and self.returncode < 0:
            return f"the reproducer died with signal {signal.Signals(-self.returncode).name}\n{self.stderr[-3000:]}"
        return f"rc={self.returncode} outcome={self.data}\nstderr:\n{self.stderr[-3000:]}"

    def check_alive(self):
        assert not self.timed_out and self.returncode == 0 and self.data is not None, self.describe()

    def expect(self, exc_type, *words):
        """The reproducer raised `exc_type` (or a subclass) whose message holds every word."""
        self.check_alive()
        assert self.data["status"] == "raised", f"expected {exc_type}, but the reproducer returned {self.data}"
        # "Error" stands for any exception type (the words then carry the test).
        ok = exc_type in self.data["mro"] or (exc_type == "Error" and self.data["type"].endswith("Error"))
        assert ok, f"expected {exc_type}, got {self.data['type']}: {self.data['message']}"
        msg = self.data["message"]
        for w in words:
            assert w.lower() in msg.lower(), f"`{w}` not in the message: {msg}"
        return msg

    def expect_ok(self):
        self.check_alive()
        assert self.data["status"] == "ok", f"the reproducer raised {self.data}"
        return self.data["result"]


def _limits(mem_bytes):
    def apply():
        if mem_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


def run_isolated(snippet, timeout=120, mem_bytes=4 << 30, env=None):
    """Runs `snippet` (after the shared prelude: numpy as np, tilecore, ir, add_kernel) in a
    child Python; returns its Outcome."""
    if "asan" in os.environ.get("LD_PRELOAD", ""):
        mem_bytes = None  # AddressSanitizer reserves terabytes of address space
    code = _PRELUDE + "\n_SNIPPET = " + repr(textwrap.dedent(snippet)) + "\n" + _EPILOGUE
    child_env = dict(os.environ)
    child_env.update(env or {})
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                              env=child_env, preexec_fn=_limits(mem_bytes))
        return Outcome(proc, False)
    except subprocess.TimeoutExpired as e:
        return Outcome(e, True)


def expect_error(snippet, exc_type, *words, **kw):
    return run_isolated(snippet, **kw).expect(exc_type, *words)

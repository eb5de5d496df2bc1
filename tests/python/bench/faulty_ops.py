"""tests/python/bench/faulty_ops.py — preloaded by the bench's workers in the fault
tests: graph ops of domain ``test.bench`` whose shape inference takes the process down
(``Crash``: a read of address 0 through ctypes, a segfault) or never returns (``Hang``),
so a job importing a model that uses them crashes or hangs in its import stage."""
import ctypes
import time

from tilecore.ir.ops.registry import register_op


def _segfault(attrs, inputs):
    ctypes.string_at(0)  # SIGSEGV
    return inputs


def _hang(attrs, inputs):
    while True:
        time.sleep(1)


@register_op("Crash", domain="test.bench", infer=_segfault, override=True)
def crash(attrs, x):
    return x


@register_op("Hang", domain="test.bench", infer=_hang, override=True)
def hang(attrs, x):
    return x

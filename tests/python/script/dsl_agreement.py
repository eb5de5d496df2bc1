"""Three-way agreement of DSL kernels: PySim, the compiled kernel on the simulator, numpy.

``agree(kernel, inputs, reference, outputs, leg, tol)``:

- ``inputs`` is a list of numpy arrays / numbers (the kernel's arguments); output
  arrays among them are overwritten by each run (each leg gets fresh copies).
- ``reference(*inputs)`` returns the expected values of the ``outputs`` (argument
  indices), computed with numpy independently of the DSL.
- ``leg`` is ``"pysim"``, ``"compiled"`` or ``"c"``. The compiled leg builds with
  ``tilecore.build(kernel, target="npu")`` and runs on the C++ simulator; the c leg
  builds for the ``c`` target (a host shared library, cores as threads). Either is
  skipped, with the reason, while this tilecore has no compiler for the kernel
  (``tilecore.build`` missing or raising NotImplementedError / not registered).
  Any other failure, including a construct the code generator "cannot emit for
  TC1", fails the test.
- Integers must match bit for bit; floats within ``tol`` (rtol, atol), documented at
  each use.
"""
import numpy as np
import pytest

import tilecore
from tilecore.script.compass import compiler_missing

LEGS = ("pysim", "compiled", "c")


def _copies(inputs):
    return [x.copy() if isinstance(x, np.ndarray) else x for x in inputs]


def run_compiled(kernel, args, target="npu"):
    build = getattr(tilecore, "build", None)
    if build is None:
        pytest.skip("compiled leg: tilecore.build is not available in this build")
    try:
        mod = build(kernel, target=f"npu -cores={kernel.num_cores}" if target == "npu" else target)
        fn = mod[kernel.name]
        fn(*args)
    except Exception as e:  # noqa: BLE001
        if compiler_missing(e):
            pytest.skip(f"compiled leg: the compiler cannot build `{kernel.name}` yet: {type(e).__name__}: {e}")
        raise


def agree(kernel, inputs, reference, outputs, leg, tol=None):
    expected = reference(*_copies(inputs))
    if not isinstance(expected, (list, tuple)):
        expected = [expected]
    args = _copies(inputs)
    if leg == "pysim":
        kernel(*args)
    else:
        run_compiled(kernel, args, "npu" if leg == "compiled" else leg)
    for i, want in zip(outputs, expected):
        got = args[i]
        want = np.asarray(want)
        if tol is None:
            assert got.dtype == want.dtype or want.dtype.kind == got.dtype.kind, (got.dtype, want.dtype)
            np.testing.assert_array_equal(got, want.astype(got.dtype), err_msg=f"{leg}: output {i}")
        else:
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol[0], atol=tol[1],
                                       err_msg=f"{leg}: output {i}")
    return args


def int_inputs(rng, dtype, n):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=n, endpoint=True, dtype=np.int64).astype(dtype)

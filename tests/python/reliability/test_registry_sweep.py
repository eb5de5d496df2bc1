"""A sweep over every registered global function with None, wrong-type and boundary
arguments. The list of functions comes from the registry at test time, so a function
added later is covered without a new test. Calls run in child processes, in batches;
any signal (a crash) or hang fails the test and names the call.

A call may raise any Python exception (most raise TypeError or ValueError): the sweep
checks that bad arguments never crash the process, not what each function says.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

# Functions whose purpose is to act on the process itself; the sweep leaves them alone.
_SKIP = {
    "ffi.RemoveGlobalFunction",  # would unregister functions later batches call
}

_ARGUMENT_SETS = textwrap.dedent("""
    _obj_array = tilecore.convert([1, 2])
    _obj_map = tilecore.convert({"a": 1})
    ARGS = [
        (),
        (None,), (None, None), (None, None, None), (None, None, None, None), (None,) * 5,
        ("",), ("x", "y"), (0,), (-1,), (1, 1), (2**63 - 1,), (-2**63,), (2**63 - 1, 2**63 - 1, 2**63 - 1),
        (-1, -1, -1, -1), (1.5,), (float("nan"),), (float("inf"), 0), (b"",), (b"\\x00" * 16,),
        ([],), ({},), ([None],), ({"a": None},), (_obj_array,), (_obj_map,), (_obj_array, _obj_array),
        (None, 0), (0, None), ("npu", None), (None, "npu"), (None, 0, 0), (0, 0, None),
        ("npu", 0, 0, 0), ("\\x00",), (True,), (np.zeros(0, "int32"),), (np.zeros(4, "int8"), -1),
    ]
""")

_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import tilecore
    {argument_sets}
    names = json.loads(sys.argv[1])
    get = tilecore.get_global_func
    for name in names:
        f = get(name)
        for k, args in enumerate(ARGS):
            print(json.dumps([name, k]), flush=True)
            try:
                f(*args)
            except BaseException as e:  # noqa: BLE001  (any exception is fine; a signal is not)
                if isinstance(e, (KeyboardInterrupt, SystemExit)):
                    raise
    print("@@DONE@@", flush=True)
""")


def _registered_names():
    code = "import json, tilecore; print(json.dumps(sorted(tilecore.get_global_func('ffi.ListGlobalFunctionNames')())))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return [n for n in json.loads(out.stdout.strip().splitlines()[-1]) if n not in _SKIP]


_NAMES = _registered_names()
_BATCH = 24
_BATCHES = [_NAMES[i:i + _BATCH] for i in range(0, len(_NAMES), _BATCH)]


def test_the_sweep_covers_the_registry():
    # Every registered function but the few skipped on purpose (listed in _SKIP).
    assert len(_NAMES) >= 150, f"only {len(_NAMES)} functions registered?"
    assert sum(len(b) for b in _BATCHES) == len(_NAMES)


@pytest.mark.parametrize("batch", range(len(_BATCHES)), ids=lambda i: f"{_BATCHES[i][0]}..{_BATCHES[i][-1]}")
def test_registry_sweep(batch, tmp_path):
    names = _BATCHES[batch]
    code = _CHILD.replace("{argument_sets}", _ARGUMENT_SETS)
    env = dict(os.environ)
    env["TMPDIR"] = str(tmp_path)
    try:
        proc = subprocess.run([sys.executable, "-c", code, json.dumps(names)], capture_output=True, text=True,
                              timeout=600, cwd=tmp_path, env=env)
    except subprocess.TimeoutExpired as e:
        last = (e.stdout or b"").decode(errors="replace").strip().splitlines()[-1:] if e.stdout else []
        pytest.fail(f"the sweep hung at {last}")
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines or lines[-1] != "@@DONE@@":
        last = next((ln for ln in reversed(lines) if ln.startswith("[")), None)
        where = "before the first call"
        if last:
            name, k = json.loads(last)
            where = f"{name} with argument set #{k}"
        pytest.fail(f"the sweep died (rc {proc.returncode}) at {where}\n{proc.stderr[-4000:]}")

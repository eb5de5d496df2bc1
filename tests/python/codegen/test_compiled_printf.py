"""S.printf in compiled kernels: on npu a host call (hcall) the simulator services, on c a
direct call; each prints one line `[core i] ...` on stdout, like PySim."""
import numpy as np
import pytest

import tilecore
from tilecore import script as S


@S.prim_func(num_cores=2)
def report(a: S.ptr("int32", "global"), x: S.float32):
    cid = S.get_local_id()
    for i in range(2):
        S.printf("a[%d] * 3 = %d (hex %x), x = %.2f, 100%% \"done\" %s", cid * 2 + i, a[cid * 2 + i] * 3,
                 a[cid * 2 + i], x, "ok")


def expected(a, x):
    return sorted(f'[core {c}] a[{c * 2 + i}] * 3 = {a[c * 2 + i] * 3} (hex {a[c * 2 + i]:x}), x = {x:.2f}, '
                  f'100% "done" ok' for c in range(2) for i in range(2))


@pytest.mark.parametrize("target", ["pysim", "c", "npu -cores=2"])
def test_printf_prints_from_the_kernel(target, capfd):
    a = np.array([5, 17, 255, 4096], np.int32)
    capfd.readouterr()
    if target == "pysim":
        report(a, 1.25)
    else:
        tilecore.build(report, target=target)["report"](a, 1.25)
    lines = [ln for ln in capfd.readouterr().out.splitlines() if ln.startswith("[core")]
    assert sorted(lines) == expected(a, 1.25)


def test_printf_of_a_vector_prints_its_type_in_compiled_code(capfd):
    @S.prim_func(num_cores=1)
    def vec(a: S.ptr("int16", "global")):
        S.printf("v = %s", S.vload(a))

    capfd.readouterr()
    tilecore.build(vec, target="c")["vec"](np.arange(16, dtype=np.int16))
    assert "[core 0] v = <int16x16>" in capfd.readouterr().out


def test_a_too_long_format_is_refused():
    @S.prim_func(num_cores=1)
    def chatty(a: S.ptr("int32", "global")):
        S.printf("x" * 300)

    with pytest.raises(Exception, match="too long for compiled code"):
        tilecore.build(chatty, target="c")

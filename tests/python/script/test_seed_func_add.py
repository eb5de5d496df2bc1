"""The Compass DSL example of seed 000 (PySim), with only its import lines changed."""


def test_seed_func_add_runs_as_written():
    # --- the seed's program; only the two import lines differ --------------------
    import numpy as np
    from tilecore.script import compass as aipu
    from tilecore import script as S
    dtype = "int32"
    n = 8

    @S.prim_func
    def func_add(a: S.ptr(dtype, "global"), b: S.ptr(dtype, "global")):
        va = S.vload(a)
        vb = S.vadd(va, 1)
        S.vstore(vb, b)

    bm = aipu.tir.BuildManager()
    ex = bm.build(func_add)
    a = np.array(list(range(n)), dtype=dtype)
    aipu_out = np.zeros((n,), dtype=dtype)
    func_add(a, aipu_out)  # Run in Python(Pysim)
    # --- end of the seed's program -------------------------------------------------
    assert ex is not None
    np.testing.assert_array_equal(aipu_out, a + 1)

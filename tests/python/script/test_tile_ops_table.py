"""The table of tile operations (arch/tile_ops.def) reaches the intrinsic table, the DSL and
the c target's element functions (tests/cpp/arch/test_tile_ops.cc: the instructions)."""
import tilecore
from tilecore import ir
from tilecore import script as S


def rows():
    return [dict(r.items()) for r in tilecore.get_global_func("arch.TileOps")()]


def test_every_row_is_an_intrinsic_and_a_dsl_function():
    table = rows()
    assert len(table) >= 23
    intrinsics = {r["name"]: r for r in ir.list_intrinsics()}
    for r in table:
        name = r["name"]
        assert f"tile.vec_{name}" in intrinsics, name
        assert intrinsics[f"tile.vec_{name}"]["unit"] == "vector"
        assert f"({r['mnemonic']})" in intrinsics[f"tile.vec_{name}"]["doc"]
        if r["form"] in ("binary", "scalar", "unary", "reduce"):
            assert hasattr(S, f"tile_{name}"), name
            assert r["mnemonic"] in getattr(S, f"tile_{name}").__doc__


def test_c_target_defines_an_element_function_per_row():
    ib = ir.IRBuilder("k")
    a = ib.buffer_param("A", (1,), "int32")
    a[0] = 1
    src = tilecore.get_global_func("codegen.GenerateC")(ib.get())
    for r in rows():
        if r["form"] in ("binary", "scalar", "unary", "reduce"):
            assert f"static double tc_f_{r['name']}(double x, double y)" in src
            has_int = r["types"] != "float"
            assert (f"static int64_t tc_i_{r['name']}(int64_t x, int64_t y)" in src) == has_int, r["name"]

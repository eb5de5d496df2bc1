"""The Python IRBuilder, node constructors, type errors and the printer."""
import pytest

import tilecore
from tilecore import ir, transform


def build_double_it():
    ib = ir.IRBuilder("double_it")
    A = ib.buffer_param("A", (128,), "int32")
    B = ib.buffer_param("B", (128,), "int32")
    with ib.for_range(0, 4, name="c", kind="cores") as c:
        T = ib.allocate("int32", (32,), name="T", scope="local")
        ib.call("tile.dma_copy", T[0:32], A[c * 32:c * 32 + 32], 0)
        ib.call("tile.wait", 0)
        with ib.for_range(0, 32, name="i") as i:
            with ib.if_scope(i < 16):
                T[i] = T[i] * 2
            with ib.else_scope():
                T[i] = 0
        ib.call("tile.dma_copy", B[c * 32:c * 32 + 32], T[0:32], 1)
        ib.call("tile.wait", 1)
    return ib.get()


GOLDEN = '''@prim_func
def double_it(A: Buffer((128,), "int32"), B: Buffer((128,), "int32")):
    for c in cores(0, 4):
        T = allocate((32,), "int32", "local")
        tile.dma_copy(T[0:32], A[c * 32:c * 32 + 32], 0)
        tile.wait(0)
        for i in range(0, 32):
            if i < 16:
                T[i] = T[i] * 2
            else:
                T[i] = 0
        tile.dma_copy(B[c * 32:c * 32 + 32], T[0:32], 1)
        tile.wait(1)'''


def test_builder_and_printer_golden():
    f = build_double_it()
    assert isinstance(f, ir.PrimFunc)
    assert repr(f) == GOLDEN


def test_builds_are_structurally_equal_and_json_round_trips():
    f, g = build_double_it(), build_double_it()
    tilecore.assert_structural_equal(f, g)
    assert tilecore.structural_hash(f) == tilecore.structural_hash(g)
    tilecore.assert_structural_equal(f, tilecore.load_json(tilecore.save_json(f)))


def test_fields_and_classes():
    f = build_double_it()
    loop = f.body
    assert isinstance(loop, ir.For)
    assert loop.kind == "cores"
    assert loop.extent.value == 4
    assert isinstance(loop.loop_var, ir.Var)
    assert str(f.params[0].dtype) == "handle64"


def test_operators():
    i = ir.Var("i")
    assert isinstance(i + 1, ir.Add)
    assert repr(i * 4 + 1) == "i * 4 + 1"
    assert repr(i // 4 + i % 4) == "i // 4 + i % 4"
    assert repr(ir.truncdiv(i, 4)) == "truncdiv(i, 4)"
    assert repr(i.eq(0)) == "i == 0"
    x = ir.Var("x", "float16")
    assert str((x * 2).dtype) == "float16"
    assert repr(ir.Cast("float32", i) / 2.0) == "float32(i) / 2.0"
    v = ir.Var("v", "int32x8")
    assert str((v + 1).dtype) == "int32x8"  # the scalar is broadcast


def test_type_errors_name_node_and_dtypes():
    i = ir.Var("i")
    x = ir.Var("x", "float32")
    with pytest.raises(TypeError, match=r"Add: operand dtypes differ: int32 vs float32"):
        ir.Add(i, x)
    A = ir.decl_buffer((16,), "int8", "A")
    with pytest.raises(TypeError, match=r"BufferStore: storing float32 into `A` expects int8"):
        ir.BufferStore(A, x, [0])
    a8 = ir.Var("a", "int32x8")
    a4 = ir.Var("b", "int32x4")
    with pytest.raises(TypeError, match="lanes differ"):
        ir.Mul(a8, a4)
    with pytest.raises(TypeError, match="no truth value"):
        bool(i < 3)


def test_intrinsic_table_and_errors():
    rows = {r["name"]: r for r in ir.list_intrinsics()}
    assert rows["tile.mm"]["args"][:4] == ["region", "region", "region", "bool"]
    assert rows["tile.mm"]["args"][4:6] == ["region or 0", "region or scalar"]
    assert rows["tile.mm"]["required"] == 4
    assert rows["tir.core_id"]["result"] == "int32"
    with pytest.raises(ValueError, match="unknown intrinsic `tile.dma`"):
        ir.call("tile.dma")
    with pytest.raises(TypeError, match=r"argument 0 \(dst\) must be region"):
        ir.call("tile.dma_copy", 1, 2, 3)


def test_vector_load():
    A = ir.decl_buffer((64,), "int32", "A")
    v = A[ir.ramp(0, 1, 8)]
    assert str(v.dtype) == "int32x8"


def test_let_and_spans():
    ib = ir.IRBuilder("k")
    A = ib.buffer_param("A", (8,), "int32")
    ib.set_span(ir.span("kernel.py", 7, 3))
    n = ib.let("n", ir.call("tir.core_id") * 2)
    A[0] = n
    f = ib.get()
    assert f.body.span.line == 7
    assert repr(f).splitlines()[2] == "    n: int32 = tir.core_id() * 2"


def test_passes_from_python(tmp_path):
    f = build_double_it()
    timing = transform.PassTimingInstrument()
    with transform.PassContext(instruments=[timing, transform.DumpIR(tmp_path)]):
        g = transform.Sequential([transform.Simplify(), transform.LowerAsyncDMA(),
                                  transform.PlanLocalMemory()])(f)
    assert "tc1.dma_in(T[0:32], A[c * 32:c * 32 + 32])" in repr(g)
    assert g.attrs["local_bytes"] > 0
    assert "Simplify: " in transform.render_pass_timing(timing)
    assert any(p.name.endswith("_PlanLocalMemory_after.txt") for p in tmp_path.iterdir())


def test_python_pass_and_instrument():
    seen = []
    inst = transform.make_instrument("spy", before=lambda mod, info: seen.append(info.name))

    def rename(func, mod, ctx):
        return func.with_attr("tag", "x")

    with transform.PassContext(instruments=[inst]):
        g = transform.prim_func_pass(rename)(build_double_it())
    assert g.attrs["tag"] == "x"
    assert seen == ["rename"]


def test_simplify_expr():
    i = ir.Var("i")
    assert repr(transform.simplify_expr(i * 32 + 32 - i * 32)) == "32"
    assert transform.const_int_bound(i * 4 + 1, {i: (0, 8)}) == (1, 29)

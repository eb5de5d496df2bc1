"""LoopPartition, VectorizeLoop, EmitTileIntrinsics, FlattenBuffer and DefaultKernelPipeline from Python."""
import pytest

from tilecore import ir, transform


def test_loop_partition_removes_the_if():
    ib = ir.IRBuilder("k")
    T = ib.buffer_param("T", (32,), "int32")
    with ib.for_range(0, 32, name="i") as i:
        with ib.if_scope(i < 16):
            T[i] = T[i] * 2
        with ib.else_scope():
            T[i] = 0
    text = repr(transform.LoopPartition()(ib.get()))
    assert "for i in range(0, 16):\n        T[i] = T[i] * 2" in text
    assert "for i in range(16, 32):\n        T[i] = 0" in text
    assert "if" not in text.split("\n", 2)[2]


def test_vectorize_loop_lanes_tail_and_report():
    ib = ir.IRBuilder("k")
    A = ib.buffer_param("A", (20,), "int8")
    with ib.for_range(0, 20, name="i", kind="vectorized") as i:
        A[i] = A[i] + 1
    f = transform.VectorizeLoop()(ib.get())
    # 20 < 32 int8 lanes: serial fallback, with the reason in the report
    assert f.body.kind == "serial"
    assert "less than the 32 lanes" in f.attrs["vectorize_report"][0]
    with transform.PassContext(config={"transform.VectorizeLoop.strict": True}):
        with pytest.raises(ValueError, match="loop `i` cannot be vectorized"):
            transform.VectorizeLoop()(ib.get())


def elementwise(dtype, value):
    """EmitTileIntrinsics over one core's loop nest `B[i, j] = value(A[i, j])`, A f32 [4, 64]
    and B of `dtype`, both in L1."""
    ib = ir.IRBuilder("k")
    with ib.for_range(0, 1, name="c", kind="cores"):
        A = ib.allocate("float32", (4, 64), name="A", scope="local")
        B = ib.allocate(dtype, (4, 64), name="B", scope="local")
        with ib.for_range(0, 4, name="i") as i:
            with ib.for_range(0, 64, name="j") as j:
                B[i, j] = value(A[i, j])
    return transform.EmitTileIntrinsics()(ib.get())


def test_emit_tile_intrinsics_and_report():
    f = elementwise("float32", lambda a: ir.Max(a, ir.const(0.0, "float32")))
    assert "tile.vec_relu(B[0:4, 0:64], A[0:4, 0:64])" in repr(f)
    assert dict(f.attrs["tile_emit_counts"]) == {"tile.vec_relu": 1}


def test_a_quantisation_is_one_tquant():
    """i8(f32(x * s) + zp), the loop compilers' quantisation, becomes tile.vec_quant; a scale
    f32 cannot hold, or a zero point that is not an integer, is left to the front end."""
    def kernel(scale, zp):
        return elementwise("int8", lambda a: ir.Cast("int8", a * ir.const(scale, "float32") + ir.const(zp, "float32")))

    f = kernel(25.0, -128.0)
    assert "tile.vec_quant(B[0:4, 0:64], A[0:4, 0:64], 25.0, -128)" in repr(f), repr(f)
    assert dict(f.attrs["tile_emit_counts"]) == {"tile.vec_quant": 1}
    assert dict(kernel(25.0, -127.5).attrs["tile_emit_counts"]) == {}
    assert dict(kernel(0.1, 0.0).attrs["tile_emit_counts"]) == {}  # 0.1 is not an f32


def test_flatten_buffer():
    ib = ir.IRBuilder("k")
    A = ib.buffer_param("A", (4, 8), "int32")
    with ib.for_range(0, 4, name="i") as i:
        with ib.for_range(0, 8, name="j") as j:
            A[i, j] = i
    assert "A[i * 8 + j] = i" in repr(transform.FlattenBuffer()(ib.get()))


def test_default_pipeline_output_contract():
    ib = ir.IRBuilder("k")
    X = ib.buffer_param("X", (4, 64), "float32")
    with ib.for_range(0, 1, name="c", kind="cores"):
        T = ib.allocate("float32", (4, 64), name="T", scope="local")
        ib.call("tile.dma_copy", T[0:4, 0:64], X[0:4, 0:64], 0)
        ib.call("tile.wait", 0)
        with ib.for_range(0, 4, name="i") as i:
            with ib.for_range(0, 64, name="j") as j:
                T[i, j] = T[i, j] * 0.5
        ib.call("tile.dma_copy", X[0:4, 0:64], T[0:4, 0:64], 1)
        ib.call("tile.wait", 1)
    f = transform.DefaultKernelPipeline(2)(ib.get())
    text = repr(f)
    assert "tile.vec_muls(T[0:4, 0:64], T[0:4, 0:64], 0.5)" in text
    assert "tile.dma_copy" not in text and "tile.wait" not in text
    assert "memory_plan" in f.attrs
    g = transform.DefaultKernelPipeline(0)(ib.get())
    assert "tile.vec_muls" not in repr(g)
    assert "T[i * 64 + j] = T[i * 64 + j] * 0.5" in repr(g)
    with pytest.raises(ValueError, match="opt_level must be >= 0"):
        transform.DefaultKernelPipeline(-1)

"""Kernels the tdb tests debug (their line numbers are looked up by the marker comments)."""
import numpy as np

from tilecore import script as S

N = 128  # elements per core


@S.prim_func(num_cores=2)
def axpy_tiles(x: S.ptr("int32", "global"), y: S.ptr("int32", "global"), out: S.ptr("int32", "global")):
    cid = S.get_local_id()
    X = S.alloc_buffer((128,), "int32")
    Y = S.alloc_buffer((128,), "int32")
    S.dma_copy(X, x + cid * 128, 128)  # @dma_x
    S.dma_copy(Y, y + cid * 128, 128)
    S.tile_add(Y, X, Y)  # @tadd
    S.tile_muls(Y, Y, 3)  # @tmuls
    S.dma_copy(out + cid * 128, Y, 128)  # @dma_out
    for i in range(0, 128, 8):  # @loop
        S.vstore(S.vload(out + cid * 128 + i) + 1, out + cid * 128 + i)  # @body


def inputs():
    rng = np.random.default_rng(7)
    x = rng.integers(-1000, 1000, 2 * N).astype(np.int32)
    y = rng.integers(-1000, 1000, 2 * N).astype(np.int32)
    return {"x": x, "y": y, "out": np.zeros(2 * N, np.int32)}


def expected(x, y):
    return 3 * (x + y) + 1


def line_of(marker):
    """The line number of the kernel source line carrying ``# @marker``."""
    with open(__file__, encoding="utf-8") as f:
        for k, line in enumerate(f, 1):
            if line.rstrip().endswith("# @" + marker):
                return k
    raise KeyError(marker)


def build_module(path):
    import tilecore

    mod = tilecore.build(axpy_tiles, target="npu")
    mod.save(str(path))
    return path


def first_instruction_line(path):
    """The first line of the module's assembly listing that holds an instruction (the
    listing's layout belongs to the code generator, so tests look it up)."""
    import io

    from tilecore.tdb import Debugger

    dbg = Debugger(str(path), inputs=inputs(), stdin=io.StringIO(), stdout=io.StringIO())
    return next(k for k, t in enumerate(dbg.target.listing(), 1)
                if t.strip() and not t.strip().startswith((".", "#", ";")) and not t.strip().endswith(":"))


def every_command(asm_line):
    """(command, words its output shows or None) for every command and breakpoint kind,
    in an order that makes sense from a fresh prompt with breakpoint 1 on dma.out;
    `asm_line` is a line of the assembly listing that holds an instruction."""
    body, loop = line_of("body"), line_of("loop")
    return [
        ("run", "Breakpoint 1, instruction dma.out"), ("delete", "Deleted breakpoint(s) 1"),
        ("b *3 core 1", "Breakpoint 3: pc 3"), ("b din#1 core 1", "Breakpoint 4: command 1 of din"),
        (f"b tdb_kernels.py:{body} if x8 >= 2", f"Breakpoint 5: tdb_kernels.py:{body} if x8 >= 2"),
        (f"b {loop}", f"Breakpoint 6: tdb_kernels.py:{loop}"), (f"b asm:{asm_line}", f"Breakpoint 7: asm:{asm_line}"),
        ("b ddr:0x10000+4 r", "Watchpoint 8: ddr:0x10000+4 r"), ("tbreak vld", "Temporary Breakpoint 9"),
        ("watch out[5]", "Watchpoint 10: out[5]"), ("rwatch y[0]", "Watchpoint 11: y[0]"),
        ("awatch ddr:0x10400+8", "Watchpoint 12"), ("condition 6 core == 0", "Breakpoint 6 is now conditional"),
        ("ignore 7 0", "Will ignore next 0 crossings of breakpoint 7"), ("disable 3,4", "Disabled breakpoint(s) 3, 4"),
        ("enable 3", "Enabled breakpoint(s) 3"), ("info b", "keep y"), ("c", "(tdb) "), ("c", "(tdb) "),
        # Where these stop depends on the breakpoints above: they must just answer.
        ("next", None), ("next 3", None), ("next dma", None), ("next vec", None), ("finish", None),
        ("until", None), ("reverse-next 2", None), ("rn", None), ("reverse-continue", None), ("rc", None),
        ("core 1", "core 1"), ("info reg", "x31"), ("info asm 2", "=>"), ("info engines", "din: issued"),
        ("info progress", "instructions executed"), ("info loc", "core 1 pc"), ("info src 1", "->"),
        ("info writes out[5]", "ddr:0x"), ("info symbols", "out: int32[256]"),
        ("info history", "recording on"), ("x/2x2i32 ddr 0x10000", "int32[2, 2]"), ("set x7 = 5", "x7 = 0x5"),
        ("set out[1] = -4", "wrote 4 bytes"), ("display pc", "1: pc ="), ("undisplay 1", "(tdb) "),
        ("record", "recording on"), ("py print(core, pc >= 0)", "1 True"), ("help reverse-next", "Go back N"),
        ("delete", "Deleted breakpoint(s)"), ("c", "program finished"), ("start", "stopped before the first"),
        ("s", "stopped before the first"), ("r", "program finished"), ("frobnicate", "*** frobnicate: unknown command"),
    ]

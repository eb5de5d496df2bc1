# benchmarks/sim_command_mix.s — a stream of tile commands for timing-only throughput.
#
# The caller prepends `.equ ITERS, n`. Every core runs ITERS iterations, each
# issuing one command per engine (dma.in, mm.i8, tadd.i32, dma.out) chained by
# three queue waits, about twelve front-end instructions per iteration.
.core all
.data l1, 0xF0000
d_dma: .dmadesc dtype=i8 shape=[64, 64]
d_vec: .vecdesc shape=[64, 64]
d_mm:  .mmdesc m=64 n=64 k=64
.text
        li x1, 0
        li x2, ITERS
        li x3, 0x10000
        li x4, 0x20000
        li x5, 0x40000
loop:
        dma.in l1:x3, ddr:x0, [x0 + d_dma]
        addi x1, x1, 1
        wait mm, din, x1
        mm.i8 x5, x3, x4, [x0 + d_mm]
        wait vec, mm, x1
        tadd.i32 x5, x5, x5, [x0 + d_vec]
        wait dout, vec, x1
        dma.out ddr:x0, l1:x3, [x0 + d_dma]
        blt x1, x2, loop
        wait sc, dout, x1
        halt

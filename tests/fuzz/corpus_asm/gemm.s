# benchmarks/sim_gemm_i8.s — tiled int8 GEMM for TC1, C (i32) = A (i8) x B (i8).
#
# The caller prepends the parameters as .equ lines:
#   M N K      problem size (row-major A M x K, B K x N, C M x N, all in DDR)
#   TM TN      output tile (M / NC / TM and N / TN must be whole numbers)
#   NC         cores; rows are split evenly between them
#   A_DDR B_DDR C_DDR   DDR addresses of A, B and C
# Each core walks its TM x TN tiles with A and B double-buffered in L1, so the
# DMA of tile j + 1 overlaps the matrix work on tile j and the write-back of j - 1:
# mm waits for its inputs (din count) and for its C buffer to drain (dout count);
# din waits before overwriting a buffer mm may still read (mm count); dout waits
# for the tile it stores (mm count). Used by tests/cpp/sim/test_programs.cc and
# benchmarks/sim_throughput.py.
.equ NRB, M / NC / TM          # row blocks per core
.equ NCB, N / TN               # column blocks
.equ ABUF, 0x00000
.equ ABUF_STRIDE, 0x20000
.equ BBUF, 0x40000
.equ BBUF_STRIDE, 0x20000
.equ CBUF, 0x80000
.equ CBUF_STRIDE, 0x20000
.equ DESC, 0xF0000

.core all
.data l1, DESC
desc_a:  .dmadesc dtype=i8 shape=[TM, K] src_stride=[K, 1]
desc_b:  .dmadesc dtype=i8 shape=[K, TN] src_stride=[N, 1]
desc_c:  .dmadesc dtype=i32 shape=[TM, TN] dst_stride=[N, 1]
desc_mm: .mmdesc m=TM n=TN k=K

.text
        csrr  x1, coreid
        li    x2, M / NC
        mul   x3, x1, x2            # x3 = first row of this core
        li    x5, 0                 # x5 = j, tiles issued
        li    x6, 0                 # x6 = rb
        li    x7, 0                 # x7 = dma.in commands issued
row_block:
        muli  x8, x6, TM
        add   x8, x8, x3
        muli  x8, x8, K
        addi  x8, x8, A_DDR         # x8 = &A[row][0]
        andi  x9, x6, 1
        muli  x9, x9, ABUF_STRIDE
        addi  x9, x9, ABUF          # x9 = A buffer (rb % 2)
        addi  x20, x6, -1
        max   x20, x20, x0
        muli  x20, x20, NCB
        wait  din, mm, x20          # all mm of row block rb-2 have read this buffer
        dma.in l1:x9, ddr:x8, [x0 + desc_a]
        addi  x7, x7, 1
        li    x10, 0                # x10 = cb
col_block:
        muli  x11, x10, TN
        addi  x11, x11, B_DDR       # x11 = &B[0][cb * TN]
        andi  x12, x5, 1
        muli  x12, x12, BBUF_STRIDE
        addi  x12, x12, BBUF        # x12 = B buffer (j % 2)
        addi  x20, x5, -1
        max   x20, x20, x0          # x20 = max(j - 1, 0)
        wait  din, mm, x20          # mm j-2 has read this B buffer
        dma.in l1:x12, ddr:x11, [x0 + desc_b]
        addi  x7, x7, 1
        andi  x13, x5, 1
        muli  x13, x13, CBUF_STRIDE
        addi  x13, x13, CBUF        # x13 = C buffer (j % 2)
        wait  mm, din, x7           # A and B tiles have landed
        wait  mm, dout, x20         # dout j-2 has drained this C buffer
        mm.i8 x13, x9, x12, [x0 + desc_mm]
        muli  x14, x6, TM
        add   x14, x14, x3
        muli  x14, x14, N
        muli  x15, x10, TN
        add   x14, x14, x15
        slli  x14, x14, 2
        addi  x14, x14, C_DDR       # x14 = &C[row][cb * TN]
        addi  x5, x5, 1
        wait  dout, mm, x5          # mm j is done
        dma.out ddr:x14, l1:x13, [x0 + desc_c]
        addi  x10, x10, 1
        li    x16, NCB
        blt   x10, x16, col_block
        addi  x6, x6, 1
        li    x16, NRB
        blt   x6, x16, row_block
        wait  sc, dout, x5          # every C tile is in DDR
        halt

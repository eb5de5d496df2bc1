.equ N, 4
.core 0,2
start: li x1, N * (2 + 3) << 1
vadd.f16 v1, v2, v3, p1
beq x1, x0, start
halt
.data l2, 0x40
.word start, -1
.float 1.5
.dmadesc src=i8 dst=f32 shape=[2, 3] pad_lo=[0, 1] fill=-1

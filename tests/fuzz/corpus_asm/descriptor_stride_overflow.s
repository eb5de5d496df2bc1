.data l1, 0
.dmadesc shape=[4294967291, 3944390655, 65536, 2]
.vecdesc shape=[2, 65536, 65536, 1]

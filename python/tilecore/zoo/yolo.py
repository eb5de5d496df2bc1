"""tilecore/zoo/yolo.py — a YOLO-like detector shaped like YOLOv5n (v6.0 layout: depth
0.33, width 0.25), 80 classes, 3 anchors per scale, for a 320x320 input:

- backbone: Conv(6x6/2) stem, Conv(3x3/2) downsamplings, C3 blocks (two 1x1 branches, a
  chain of residual Bottlenecks on one, Concat, 1x1), and SPPF (three chained 5x5
  MaxPools, Concat);
- neck (PANet): 1x1 Conv, nearest Upsample x2 (Resize), Concat with the backbone's P4 and
  P3, then strided Convs and Concats back down to P4 and P5;
- head: per scale (strides 8, 16, 32) a 1x1 Conv to 3 x 85 channels, Reshape to
  [B, 3, 85, H, W], Transpose to [B, 3, H, W, 85], Sigmoid, the box decode of a YOLOv5
  export (xy = (2s - 0.5 + grid) * stride, wh = (2s)^2 * anchor, with Slice, Mul, Add,
  Pow and Concat against constant grids), Reshape to [B, 3HW, 85]; the three scales are
  concatenated into one [B, 6300, 85] output. No NMS.

Every Conv block is Conv (no bias) + BatchNorm + SiLU; SiLU exports as Sigmoid + Mul at
opset 17 (ONNX has no SiLU op).
"""

from __future__ import annotations

from typing import Sequence

from ._build import import_torch

torch = import_torch()
nn = torch.nn

IMAGE = 320
NUM_CLASSES = 80
ANCHORS = ((10, 13, 16, 30, 33, 23), (30, 61, 62, 45, 59, 119), (116, 90, 156, 198, 373, 326))
STRIDES = (8, 16, 32)


class Conv(nn.Module):
    def __init__(self, c1: int, c2: int, k: int = 1, s: int = 1, p: int | None = None) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2 if p is None else p, bias=False)
        self.bn = nn.BatchNorm2d(c2, eps=1e-3, momentum=0.03)
        self.act = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c1: int, c2: int, shortcut: bool = True) -> None:
        super().__init__()
        self.cv1 = Conv(c1, c2, 1, 1)
        self.cv2 = Conv(c2, c2, 3, 1)
        self.add = shortcut and c1 == c2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C3(nn.Module):
    def __init__(self, c1: int, c2: int, n: int = 1, shortcut: bool = True) -> None:
        super().__init__()
        c_ = c2 // 2
        self.cv1 = Conv(c1, c_, 1, 1)
        self.cv2 = Conv(c1, c_, 1, 1)
        self.cv3 = Conv(2 * c_, c2, 1)
        self.m = nn.Sequential(*(Bottleneck(c_, c_, shortcut) for _ in range(n)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.cv3(torch.cat((self.m(self.cv1(x)), self.cv2(x)), 1))


class SPPF(nn.Module):
    def __init__(self, c1: int, c2: int, k: int = 5) -> None:
        super().__init__()
        c_ = c1 // 2
        self.cv1 = Conv(c1, c_, 1, 1)
        self.cv2 = Conv(c_ * 4, c2, 1, 1)
        self.m = nn.MaxPool2d(kernel_size=k, stride=1, padding=k // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.cv1(x)
        y1 = self.m(x)
        y2 = self.m(y1)
        return self.cv2(torch.cat((x, y1, y2, self.m(y2)), 1))


class Detect(nn.Module):
    def __init__(self, channels: Sequence[int], image: int = IMAGE, nc: int = NUM_CLASSES, anchors: Sequence[Sequence[int]] = ANCHORS, strides: Sequence[int] = STRIDES) -> None:
        super().__init__()
        self.nc, self.no, self.na = nc, nc + 5, len(anchors[0]) // 2
        self.m = nn.ModuleList(nn.Conv2d(c, self.no * self.na, 1) for c in channels)
        self.strides = strides
        # The constant grids a YOLOv5 export bakes in (one per scale): cell offsets - 0.5
        # and anchor sizes in pixels, both [1, na, ny, nx, 2].
        for i, s in enumerate(strides):
            ny = nx = image // s
            yv, xv = torch.meshgrid(torch.arange(ny, dtype=torch.float32),
                                    torch.arange(nx, dtype=torch.float32), indexing="ij")
            grid = torch.stack((xv, yv), 2).expand(1, self.na, ny, nx, 2) - 0.5
            anchor = torch.tensor(anchors[i], dtype=torch.float32).view(1, self.na, 1, 1, 2)
            self.register_buffer(f"grid{i}", grid.contiguous(), persistent=False)
            self.register_buffer(f"anchor_grid{i}", anchor.expand(1, self.na, ny, nx, 2).contiguous(),
                                 persistent=False)

    def forward(self, xs: Sequence[torch.Tensor]) -> torch.Tensor | list[torch.Tensor]:
        if self.training:  # as YOLOv5: raw maps, no decode (the BatchNorm statistics pass)
            return [m(x) for m, x in zip(self.m, xs)]
        z = []
        for i, x in enumerate(xs):
            x = self.m[i](x)
            bs, _, ny, nx = x.shape
            x = x.view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
            xy, wh, conf = x.sigmoid().split((2, 2, self.nc + 1), 4)
            xy = (xy * 2 + getattr(self, f"grid{i}")) * self.strides[i]
            wh = (wh * 2) ** 2 * getattr(self, f"anchor_grid{i}")
            z.append(torch.cat((xy, wh, conf), 4).view(bs, self.na * nx * ny, self.no))
        return torch.cat(z, 1)


class YoloLike(nn.Module):
    def __init__(self, image: int = IMAGE, nc: int = NUM_CLASSES) -> None:
        super().__init__()
        w = (16, 32, 64, 128, 256)
        self.model = nn.Sequential(
            Conv(3, w[0], 6, 2, 2),          # 0  P1/2
            Conv(w[0], w[1], 3, 2),          # 1  P2/4
            C3(w[1], w[1], 1),               # 2
            Conv(w[1], w[2], 3, 2),          # 3  P3/8
            C3(w[2], w[2], 2),               # 4
            Conv(w[2], w[3], 3, 2),          # 5  P4/16
            C3(w[3], w[3], 3),               # 6
            Conv(w[3], w[4], 3, 2),          # 7  P5/32
            C3(w[4], w[4], 1),               # 8
            SPPF(w[4], w[4]),                # 9
            Conv(w[4], w[3], 1, 1),          # 10
            nn.Upsample(scale_factor=2.0, mode="nearest"),  # 11
            C3(2 * w[3], w[3], 1, False),    # 12 (after Concat with 6)
            Conv(w[3], w[2], 1, 1),          # 13
            nn.Upsample(scale_factor=2.0, mode="nearest"),  # 14
            C3(2 * w[2], w[2], 1, False),    # 15 (after Concat with 4): P3 out
            Conv(w[2], w[2], 3, 2),          # 16
            C3(2 * w[2], w[3], 1, False),    # 17 (after Concat with 13): P4 out
            Conv(w[3], w[3], 3, 2),          # 18
            C3(2 * w[3], w[4], 1, False),    # 19 (after Concat with 10): P5 out
            Detect((w[2], w[3], w[4]), image, nc),  # 20
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        m = self.model
        x = m[1](m[0](x))
        p3 = m[4](m[3](m[2](x)))
        p4 = m[6](m[5](p3))
        x10 = m[10](m[9](m[8](m[7](p4))))
        x13 = m[13](m[12](torch.cat((m[11](x10), p4), 1)))
        out3 = m[15](torch.cat((m[14](x13), p3), 1))
        out4 = m[17](torch.cat((m[16](out3), x13), 1))
        out5 = m[19](torch.cat((m[18](out4), x10), 1))
        return m[20]((out3, out4, out5))


def yolo_like() -> nn.Module:
    return YoloLike()

"""tilecore/ir/ops/image.py — image and spatial ops: Resize, Upsample, GridSample,
AffineGrid, RoiAlign, DeformConv, Col2Im, CenterCropPad, DepthToSpace, SpaceToDepth.

Resize is separable: for each resized axis a (out x taps) table of source indices
and weights is built from the coordinate transformation and the interpolation
kernel (nearest / linear / cubic, optionally anti-aliased when downsampling), then
applied along that axis in float64; edges replicate, and tf_crop_and_resize writes
extrapolation_value where the source falls outside the input.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _conv
from ._util import dim_mul, fail, ints_of, ints_value, is_int, tensor
from .conv import window_attrs
from .registry import REQUIRED, Operand, Result, register_op

# ---------------------------------------------------------------------------------------------- Resize

_COORD_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                "tf_crop_and_resize")
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple")


def _source_coords(mode, out_len, in_len, scale, roi):
    """x_original for every output index along one axis (float64), and the mask of
    positions extrapolated (tf_crop_and_resize only)."""
    y = np.arange(out_len, dtype=np.float64)
    out_f = scale * in_len
    outside = None
    # length_resized (align_corners, tf_crop_and_resize, pytorch_half_pixel) is the output's
    # length, as ONNX Runtime and PyTorch take it (ONNX's reference takes scale x length,
    # which differs when that is not a whole number)
    if mode == "align_corners":
        x = np.zeros(out_len) if out_len == 1 else y * (in_len - 1) / (out_len - 1)
    elif mode == "asymmetric":
        x = y / scale
    elif mode == "tf_crop_and_resize":
        start, end = roi
        x = np.full(out_len, (end - start) * (in_len - 1) / 2) if out_len == 1 else \
            y * (end - start) * (in_len - 1) / (out_len - 1)
        x = x + start * (in_len - 1)
        outside = (x < 0) | (x > in_len - 1)
    elif mode == "pytorch_half_pixel":
        x = np.full(out_len, -0.5) if out_len == 1 else (y + 0.5) / scale - 0.5
    elif mode == "half_pixel":
        x = (y + 0.5) / scale - 0.5
    elif mode == "half_pixel_symmetric":
        offset = in_len / 2 * (1 - out_len / out_f)
        x = offset + (y + 0.5) / scale - 0.5
    else:
        raise fail("Resize", f"coordinate_transformation_mode '{mode}' is not one of {', '.join(_COORD_MODES)}")
    return x, outside


def _cubic_kernel(d, a):
    d = np.abs(d)
    return np.where(d <= 1, ((a + 2) * d - (a + 3)) * d * d + 1,
                    np.where(d < 2, ((a * d - 5 * a) * d + 8 * a) * d - 4 * a, 0.0))


def _axis_table(attrs, mode, out_len, in_len, scale, roi, opset):
    """(indices (out, taps), weights (out, taps), extrapolated mask or None)."""
    x, outside = _source_coords(attrs["coordinate_transformation_mode"] if opset >= 11 else "asymmetric",
                                out_len, in_len, scale, roi)
    if mode == "nearest":
        nm = attrs["nearest_mode"] if opset >= 11 else "simple"
        whole = x == np.floor(x)
        if nm == "round_prefer_floor":
            idx = np.where(whole, x, np.ceil(x - 0.5))
        elif nm == "round_prefer_ceil":
            idx = np.where(whole, x, np.floor(x + 0.5))
        elif nm == "floor":
            idx = np.floor(x)
        elif nm == "ceil":
            idx = np.ceil(x)
        elif nm == "simple":
            idx = np.ceil(x) if scale < 1 else np.trunc(x)
        else:
            raise fail("Resize", f"nearest_mode '{nm}' is not one of {', '.join(_NEAREST_MODES[:4])}")
        idx = np.clip(idx.astype(np.int64), 0, in_len - 1)[:, None]
        return idx, np.ones((out_len, 1)), outside
    base = np.floor(x)
    ratio = x - base
    whole = ratio == 0
    base = np.where(whole, base - 1, base).astype(np.int64)
    ratio = np.where(whole, 1.0, ratio)
    s = min(scale, 1.0) if attrs.get("antialias") else 1.0
    support = 1 if mode == "linear" else 2
    start = int(math.floor(-support / s)) + 1
    taps = np.arange(start, 2 - start)          # relative to base; (0, 1) linear, (-1..2) cubic at scale 1
    d = (taps[None, :] - ratio[:, None]) * s
    if mode == "linear":
        w = np.clip(1 - np.abs(d), 0, 1)
    elif mode == "cubic":
        w = _cubic_kernel(d, attrs["cubic_coeff_a"])
    else:
        raise fail("Resize", f"mode '{mode}' is not one of nearest, linear, cubic")
    if attrs.get("antialias"):
        w = w / w.sum(axis=1, keepdims=True)
    idx = base[:, None] + taps[None, :]
    if attrs.get("exclude_outside"):
        w = np.where((idx < 0) | (idx >= in_len), 0.0, w)
        total = w.sum(axis=1, keepdims=True)
        w = w / np.where(total == 0, 1, total)
    return np.clip(idx, 0, in_len - 1), w, outside


def _resize_plan(attrs, x_shape, roi, scales, sizes):
    """(scales per axis, output sizes per axis, roi per axis) of a Resize."""
    rank = len(x_shape)
    axes = attrs.get("axes")
    axes = list(range(rank)) if axes is None else [a % rank for a in axes]
    if scales is not None and np.asarray(scales).size == 0:
        scales = None
    if sizes is not None and np.asarray(sizes).size == 0:
        sizes = None
    if (scales is None) == (sizes is None):
        raise fail("Resize", "needs exactly one of scales and sizes")
    full_scales = [1.0] * rank
    out = list(x_shape)
    if sizes is not None:
        sizes = [int(v) for v in np.asarray(sizes).reshape(-1)]
        if len(sizes) != len(axes):
            raise fail("Resize", f"sizes {sizes} need one value per axis {axes}")
        ratios = [sizes[i] / x_shape[a] for i, a in enumerate(axes)]
        policy = attrs.get("keep_aspect_ratio_policy", "stretch")
        if policy == "stretch":
            for i, a in enumerate(axes):
                full_scales[a], out[a] = ratios[i], sizes[i]
        elif policy in ("not_larger", "not_smaller"):
            s = min(ratios) if policy == "not_larger" else max(ratios)
            for a in axes:
                full_scales[a], out[a] = s, int(s * x_shape[a] + 0.5)
        else:
            raise fail("Resize", f"keep_aspect_ratio_policy '{policy}' is not one of stretch, not_larger, not_smaller")
    else:
        sc = [float(v) for v in np.asarray(scales, np.float32).reshape(-1)]
        if len(sc) != len(axes):
            raise fail("Resize", f"scales {sc} need one value per axis {axes}")
        if any(v <= 0 for v in sc):
            raise fail("Resize", f"scales {sc} must be positive")
        for i, a in enumerate(axes):
            full_scales[a], out[a] = sc[i], int(math.floor(sc[i] * x_shape[a]))
    full_roi = [(0.0, 1.0)] * rank
    if roi is not None and np.asarray(roi).size:
        r = [float(v) for v in np.asarray(roi).reshape(-1)]
        n = len(r) // 2
        targets = axes if n == len(axes) else list(range(rank))
        for i, a in enumerate(targets):
            full_roi[a] = (r[i], r[n + i])
    return full_scales, out, full_roi, axes


def _resize_core(attrs, x, full_scales, out, full_roi, axes, opset):
    mode = attrs["mode"]
    if mode == "bilinear":
        mode = "linear"
    y = x.astype(np.float64)
    outside_masks = []
    for a in axes:
        in_len = y.shape[a]
        if out[a] == in_len and full_scales[a] == 1.0 and full_roi[a] == (0.0, 1.0):
            continue
        if out[a] == 0:
            y = np.take(y, np.zeros(0, np.int64), axis=a)
            continue
        idx, w, outside = _axis_table(attrs, mode, out[a], in_len, full_scales[a], full_roi[a], opset)
        gathered = np.take(y, idx, axis=a)                              # (..., out, taps, ...)
        wshape = (1,) * a + w.shape + (1,) * (y.ndim - a - 1)
        y = (gathered * w.reshape(wshape)).sum(axis=a + 1)
        if outside is not None and outside.any():
            outside_masks.append((a, outside))
    for a, outside in outside_masks:
        shape = [1] * y.ndim
        shape[a] = outside.size
        y = np.where(outside.reshape(shape), attrs["extrapolation_value"], y)
    return y.astype(x.dtype)


def _resize_inputs(attrs, inputs):
    if attrs.get("_opset", 19) < 11:
        return None, inputs[1] if len(inputs) > 1 else None, None
    pad = list(inputs) + [None] * (4 - len(inputs))
    return pad[1], pad[2], pad[3]


def _resize_infer(attrs, inputs):
    x = inputs[0]
    roi, scales, sizes = _resize_inputs(attrs, inputs)
    if x.shape is None:
        return [tensor(None, x.dtype)]
    vals = [None if t is None else t.value for t in (roi, scales, sizes)]
    if (scales is not None and vals[1] is None) or (sizes is not None and vals[2] is None) \
            or not x.is_static:
        axes = attrs.get("axes")
        axes = range(len(x.shape)) if axes is None else [a % len(x.shape) for a in axes]
        return [tensor([None if i in axes else d for i, d in enumerate(x.shape)], x.dtype)]
    _, out, _, _ = _resize_plan(attrs, [int(d) for d in x.shape], vals[0], vals[1], vals[2])
    return [tensor(out, x.dtype)]


_RESIZE_ATTRS = {
    "mode": ("string", "nearest"), "coordinate_transformation_mode": ("string", "half_pixel"),
    "cubic_coeff_a": ("float", -0.75), "exclude_outside": ("int", 0), "extrapolation_value": ("float", 0.0),
    "nearest_mode": ("string", "round_prefer_floor"), "antialias": ("int", 0), "axes": ("ints", None),
    "keep_aspect_ratio_policy": ("string", "stretch"),
}


@register_op("Resize", attrs=_RESIZE_ATTRS, inputs=(1, 4), since_version=10, infer=_resize_infer)
def resize(attrs: dict[str, Any], x: Operand, *rest: Operand) -> Result:
    """Resizes X by scales or to sizes (opset 10: X, scales; from 11: X, roi, scales,
    sizes) with nearest / linear / cubic interpolation and ONNX's coordinate
    transformations; float and 8-bit int types."""
    opset = attrs.get("_opset") or 19
    if attrs["mode"] not in ("nearest", "linear", "cubic"):
        raise fail("Resize", f"mode '{attrs['mode']}' is not one of nearest, linear, cubic")
    if opset < 11:
        roi, scales, sizes = None, rest[0] if rest else None, None
    else:
        rest = list(rest) + [None] * (3 - len(rest))
        roi, scales, sizes = rest[:3]
    full_scales, out, full_roi, axes = _resize_plan(attrs, x.shape, roi, scales, sizes)
    return _resize_core(attrs, x, full_scales, out, full_roi, axes, opset)


def _upsample_scales(attrs, scales):
    if attrs.get("scales") is not None:
        return [float(s) for s in attrs["scales"]]
    return None if scales is None else [float(s) for s in np.asarray(scales).reshape(-1)]


def _upsample_infer(attrs, inputs):
    x = inputs[0]
    sc = _upsample_scales(attrs, inputs[1].value if len(inputs) > 1 and inputs[1] is not None else None)
    if x.shape is None:
        return [tensor(None, x.dtype)]
    if sc is None:
        return [tensor([None] * len(x.shape), x.dtype)]
    return [tensor([int(math.floor(d * s)) if is_int(d) else (d if s == 1 else None)
                    for d, s in zip(x.shape, sc)], x.dtype)]


@register_op("Upsample", attrs={"mode": ("string", "nearest"), "scales": ("floats", None)}, inputs=(1, 2),
             since_version=7, infer=_upsample_infer)
def upsample(attrs: dict[str, Any], x: Operand, scales: Operand = None) -> Result:
    """The deprecated Resize: X scaled by `scales` (attribute at opset 7, input from
    9) with nearest or (bi)linear interpolation on asymmetric coordinates."""
    sc = _upsample_scales(attrs, scales)
    if sc is None or len(sc) != x.ndim:
        raise fail("Upsample", f"needs one scale per dim of {x.shape}")
    mode = attrs["mode"]
    if mode not in ("nearest", "linear", "bilinear"):
        raise fail("Upsample", f"mode '{mode}' is not one of nearest, linear, bilinear")
    a = dict(_RESIZE_ATTRS_DEFAULTS, mode="linear" if mode == "bilinear" else mode)
    out = [int(math.floor(d * s)) for d, s in zip(x.shape, sc)]
    return _resize_core(a, x, sc, out, [(0.0, 1.0)] * x.ndim, list(range(x.ndim)), 10)


_RESIZE_ATTRS_DEFAULTS = {k: v for k, (_, v) in _RESIZE_ATTRS.items()}

# ---------------------------------------------------------------------------------------------- GridSample


def _reflect(x, lo, hi):
    rng = hi - lo
    out = x
    below, above = x < lo, x > hi
    if rng <= 0:
        return np.where(below | above, lo, x)
    d = np.where(below, lo - x, x - hi)
    n = np.floor(d / rng)
    r = d - n * rng
    even = np.mod(n, 2) == 0
    out = np.where(below, np.where(even, lo + r, hi - r), out)
    out = np.where(above, np.where(even, hi - r, lo + r), out)
    return out


def _grid_infer(attrs, inputs):
    x, grid = inputs
    if x.shape is None or grid.shape is None:
        return [tensor(None, x.dtype)]
    return [tensor((x.shape[0], x.shape[1]) + tuple(grid.shape[1:-1]), x.dtype)]


@register_op("GridSample", attrs={"align_corners": ("int", 0), "mode": ("string", "linear"),
                                  "padding_mode": ("string", "zeros")},
             inputs=(2, 2), since_version=16, infer=_grid_infer)
def grid_sample(attrs: dict[str, Any], x: Operand, grid: Operand) -> Result:
    """Samples X (N, C, D1..Dk) at the normalised grid (N, O1..Ok, k) locations
    (last grid coordinate = last spatial dim) with nearest / linear / cubic
    interpolation and zeros / border / reflection padding."""
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(attrs["mode"], attrs["mode"])
    pad = attrs["padding_mode"]
    if mode not in ("nearest", "linear", "cubic"):
        raise fail("GridSample", f"mode '{attrs['mode']}' is not one of nearest, linear, cubic")
    if pad not in ("zeros", "border", "reflection"):
        raise fail("GridSample", f"padding_mode '{pad}' is not one of zeros, border, reflection")
    align = bool(attrs["align_corners"])
    n, c = x.shape[:2]
    dims = x.shape[2:]
    k = len(dims)
    if grid.shape[-1] != k or grid.shape[0] != n:
        raise fail("GridSample", f"grid {grid.shape} does not fit X {x.shape}")
    out_sp = grid.shape[1:-1]
    coords, lows, highs = [], [], []
    for i in range(k):
        g = grid[..., k - 1 - i].astype(np.float32)
        size = dims[i]
        v = ((g + 1) / 2 * (size - 1)) if align else (((g + 1) * size - 1) / 2)
        v = v.astype(np.float32).astype(np.float64)
        lo, hi = (0.0, size - 1.0) if align else (-0.5, size - 0.5)
        if mode == "nearest":
            v = np.rint(v)
        if pad == "border":
            v = np.where((v < lo) | (v > hi), np.clip(v, 0, size - 1), v)
        elif pad == "reflection":
            v = _reflect(v, lo, hi)
        coords.append(v)
        lows.append(lo)
        highs.append(hi)
    xs = x.astype(np.float64)
    nidx = np.arange(n).reshape((n,) + (1,) * len(out_sp))

    def fetch(idx_list):
        valid = np.ones(idx_list[0].shape, bool)
        fixed = []
        for i, idx in enumerate(idx_list):
            if pad == "zeros":
                valid &= (idx >= 0) & (idx < dims[i])
                fixed.append(np.clip(idx, 0, dims[i] - 1))
            elif pad == "border":
                fixed.append(np.clip(idx, 0, dims[i] - 1))
            else:
                fixed.append(np.clip(np.trunc(_reflect(idx.astype(np.float64), lows[i], highs[i])).astype(np.int64),
                                     0, dims[i] - 1))
        vals = np.moveaxis(xs, 1, -1)[(nidx,) + tuple(fixed)]          # (N, *out, C)
        return np.where(valid[..., None], vals, 0.0)

    if mode == "nearest":
        y = fetch([v.astype(np.int64) for v in coords])
    else:
        taps = (0, 1) if mode == "linear" else (-1, 0, 1, 2)
        bases = [np.floor(v).astype(np.int64) for v in coords]
        fracs = [v - np.floor(v) for v in coords]
        weights = []
        for f in fracs:
            if mode == "linear":
                weights.append([1 - f, f])
            else:
                weights.append([_cubic_kernel(f + 1, -0.75), _cubic_kernel(f, -0.75),
                                _cubic_kernel(1 - f, -0.75), _cubic_kernel(2 - f, -0.75)])
        y = 0.0
        for combo in np.ndindex(*([len(taps)] * k)):
            w = 1.0
            for i, t in enumerate(combo):
                w = w * weights[i][t]
            y = y + w[..., None] * fetch([bases[i] + taps[t] for i, t in enumerate(combo)])
    return np.moveaxis(np.asarray(y), -1, 1).astype(x.dtype)


# ---------------------------------------------------------------------------------------------- AffineGrid


def _affine_infer(attrs, inputs):
    theta, size = inputs
    sz = ints_value(size)
    if sz is None:
        n = size.shape[0] if size.shape and is_int(size.shape[0]) else None
        if n is None:
            return [tensor(None, theta.dtype)]
        batch = theta.shape[0] if theta.shape else None  # (N, H, W, 2) or (N, D, H, W, 3): rank n
        return [tensor([batch] + [None] * (n - 2) + [n - 2], theta.dtype)]
    return [tensor((sz[0],) + tuple(sz[2:]) + (len(sz) - 2,), theta.dtype)]


@register_op("AffineGrid", attrs={"align_corners": ("int", 0)}, inputs=(2, 2), since_version=20,
             infer=_affine_infer)
def affine_grid(attrs: dict[str, Any], theta: Operand, size: Operand) -> Result:
    """The sampling grid (N, H, W, 2) or (N, D, H, W, 3) of the affine maps theta
    (N, 2, 3) or (N, 3, 4) over normalised [-1, 1] coordinates of `size`."""
    sz = ints_of(size)
    spatial = sz[2:]
    k = len(spatial)
    if theta.shape[1:] != (k, k + 1):
        raise fail("AffineGrid", f"theta {theta.shape} does not fit size {sz}")
    align = attrs["align_corners"]
    lines = []
    for d in spatial:
        if align:
            lines.append(np.linspace(-1, 1, d) if d > 1 else np.zeros(1))
        else:
            lines.append((np.arange(d) * 2 + 1) / d - 1)
    mesh = np.meshgrid(*lines, indexing="ij")                     # per spatial dim, (D, H, W)
    base = np.stack([m for m in mesh[::-1]] + [np.ones(spatial)], axis=-1)   # (..., x, y, [z], 1)
    acc = np.float64 if theta.dtype == np.float64 else np.float32
    out = np.einsum("...j,nij->n...i", base.astype(acc), theta.astype(acc))
    return out.astype(theta.dtype)


# ---------------------------------------------------------------------------------------------- RoiAlign


def _roi_infer(attrs, inputs):
    x, rois = inputs[0], inputs[1]
    n = rois.shape[0] if rois.shape else None
    c = x.shape[1] if x.shape else None
    return [tensor((n, c, attrs["output_height"], attrs["output_width"]), x.dtype)]


@register_op("RoiAlign", attrs={"coordinate_transformation_mode": ("string", "half_pixel"), "mode": ("string", "avg"),
                                "output_height": ("int", 1), "output_width": ("int", 1),
                                "sampling_ratio": ("int", 0), "spatial_scale": ("float", 1.0)},
             inputs=(3, 3), since_version=10, infer=_roi_infer)
def roi_align(attrs: dict[str, Any], x: Operand, rois: Operand, batch_indices: Operand) -> Result:
    """Bilinearly sampled average (or max) pooling of X (N, C, H, W) over each ROI
    (x1, y1, x2, y2) of the image batch_indices[r] into (R, C, oh, ow)."""
    mode = attrs["mode"]
    if mode not in ("avg", "max"):
        raise fail("RoiAlign", f"mode '{mode}' is not one of avg, max")
    half = attrs["coordinate_transformation_mode"] == "half_pixel" and (attrs.get("_opset") or 16) >= 16
    oh, ow = attrs["output_height"], attrs["output_width"]
    scale = attrs["spatial_scale"]
    _, c, h, w = x.shape
    out = np.zeros((rois.shape[0], c, oh, ow), np.float64)
    xs = x.astype(np.float64)
    for r in range(rois.shape[0]):
        off = 0.5 if half else 0.0
        x1, y1, x2, y2 = (float(v) * scale - off for v in rois[r])
        rw, rh = x2 - x1, y2 - y1
        if not half:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / oh, rw / ow
        gh = attrs["sampling_ratio"] if attrs["sampling_ratio"] > 0 else int(math.ceil(rh / oh))
        gw = attrs["sampling_ratio"] if attrs["sampling_ratio"] > 0 else int(math.ceil(rw / ow))
        img = xs[int(batch_indices[r])]
        for ph in range(oh):
            for pw in range(ow):
                acc = np.zeros(c) if mode == "avg" else np.full(c, -np.inf)
                for iy in range(gh):
                    yy = y1 + ph * bh + (iy + 0.5) * bh / gh
                    for ix in range(gw):
                        xx = x1 + pw * bw + (ix + 0.5) * bw / gw
                        if yy < -1.0 or yy > h or xx < -1.0 or xx > w:
                            if mode == "avg":
                                continue
                            acc = np.maximum(acc, 0.0)
                            continue
                        yv, xv = max(yy, 0.0), max(xx, 0.0)
                        y0, x0 = int(yv), int(xv)
                        if y0 >= h - 1:
                            y0 = y1i = h - 1
                            yv = float(y0)
                        else:
                            y1i = y0 + 1
                        if x0 >= w - 1:
                            x0 = x1i = w - 1
                            xv = float(x0)
                        else:
                            x1i = x0 + 1
                        ly, lx = yv - y0, xv - x0
                        hy, hx = 1 - ly, 1 - lx
                        terms = (hy * hx * img[:, y0, x0], hy * lx * img[:, y0, x1i],
                                 ly * hx * img[:, y1i, x0], ly * lx * img[:, y1i, x1i])
                        if mode == "avg":
                            acc = acc + sum(terms)
                        else:
                            acc = np.maximum(acc, np.maximum.reduce(terms))
                count = max(gh * gw, 1)
                out[r, :, ph, pw] = acc / count if mode == "avg" else acc
    return out.astype(x.dtype)


# ---------------------------------------------------------------------------------------------- DeformConv


def _deform_infer(attrs, inputs):
    x, w, offset = inputs[:3]
    if offset is not None and offset.shape is not None and x.shape is not None and w.shape is not None:
        return [tensor((x.shape[0], w.shape[0]) + tuple(offset.shape[2:]), x.dtype)]
    return [tensor(None, x.dtype)]


def _bilinear_zero(img, yy, xx):
    """img (C, H, W) sampled at float (yy, xx) arrays, corners outside giving 0."""
    h, w = img.shape[1:]
    y0, x0 = np.floor(yy).astype(np.int64), np.floor(xx).astype(np.int64)
    ly, lx = yy - y0, xx - x0
    out = 0.0
    for dy, wy in ((0, 1 - ly), (1, ly)):
        for dx, wx in ((0, 1 - lx), (1, lx)):
            yi, xi = y0 + dy, x0 + dx
            ok = (yi >= 0) & (yi < h) & (xi >= 0) & (xi < w)
            v = img[:, np.clip(yi, 0, h - 1), np.clip(xi, 0, w - 1)]
            out = out + np.where(ok, wy * wx, 0.0) * v
    inside = (yy > -1) & (yy < h) & (xx > -1) & (xx < w)
    return np.where(inside, out, 0.0)


@register_op("DeformConv", attrs={"dilations": ("ints", None), "group": ("int", 1), "kernel_shape": ("ints", None),
                                  "offset_group": ("int", 1), "pads": ("ints", None), "strides": ("ints", None)},
             inputs=(3, 5), since_version=19, infer=_deform_infer)
def deform_conv(attrs: dict[str, Any], x: Operand, w: Operand, offset: Operand, b: Operand = None,
                mask: Operand = None) -> Result:
    """2-D deformable convolution: each kernel tap samples X bilinearly at its grid
    position plus a learned offset (per offset group), scaled by the optional mask."""
    if x.ndim != 4:
        raise fail("DeformConv", f"only 2-D images are supported, got X of shape {x.shape}")
    kernel, strides, dilations, pads, _ = window_attrs("DeformConv", dict(attrs, auto_pad="NOTSET"), 2, w.shape[2:])
    pads = pads or [0, 0, 0, 0]
    n, c, h, wd = x.shape
    kh, kw = kernel
    oh, ow = offset.shape[2:]
    og = attrs["offset_group"]
    cpg = c // og
    xs = x.astype(np.float64)
    off = offset.astype(np.float64).reshape(n, og, kh * kw, 2, oh, ow)
    msk = None if mask is None else mask.astype(np.float64).reshape(n, og, kh * kw, oh, ow)
    cols = np.zeros((n, c, kh, kw, oh, ow))
    gy = (np.arange(oh) * strides[0] - pads[0])[:, None]
    gx = (np.arange(ow) * strides[1] - pads[1])[None, :]
    for b_i in range(n):
        for g in range(og):
            img = xs[b_i, g * cpg:(g + 1) * cpg]
            for i in range(kh):
                for j in range(kw):
                    t = i * kw + j
                    yy = gy + i * dilations[0] + off[b_i, g, t, 0]
                    xx = gx + j * dilations[1] + off[b_i, g, t, 1]
                    v = _bilinear_zero(img, yy, xx)
                    if msk is not None:
                        v = v * msk[b_i, g, t]
                    cols[b_i, g * cpg:(g + 1) * cpg, i, j] = v
    group = attrs["group"]
    m = w.shape[0]
    y = np.matmul(w.astype(np.float64).reshape(group, m // group, -1)[None],
                  cols.reshape(n, group, -1, oh * ow)).reshape(n, m, oh, ow)
    if b is not None:
        y = y + b.astype(np.float64).reshape(1, m, 1, 1)
    return y.astype(x.dtype)


# ---------------------------------------------------------------------------------------------- Col2Im


def _col2im_infer(attrs, inputs):
    x, image, block = inputs
    img = ints_value(image)
    blk = ints_value(block)
    if x.shape is None:
        return [tensor(None, x.dtype)]
    k = len(img) if img is not None else (image.shape[0] if image.shape else None)
    c = x.shape[1] // int(np.prod(blk)) if blk is not None and is_int(x.shape[1]) else None
    spatial = img if img is not None else [None] * (k or 0)
    return [tensor((x.shape[0], c, *spatial), x.dtype)]


@register_op("Col2Im", attrs={"dilations": ("ints", None), "pads": ("ints", None), "strides": ("ints", None)},
             inputs=(3, 3), since_version=18, infer=_col2im_infer)
def col2im(attrs: dict[str, Any], x: Operand, image_shape: Operand, block_shape: Operand) -> Result:
    """Sums the column blocks (N, C*prod(block), L) back into images (N, C, *image)
    — the adjoint of im2col with strides, dilations and pads."""
    img = ints_of(image_shape)
    blk = ints_of(block_shape)
    k = len(img)
    strides = list(attrs.get("strides") or [1] * k)
    dilations = list(attrs.get("dilations") or [1] * k)
    pads = list(attrs.get("pads") or [0] * (2 * k))
    n, cb, length = x.shape
    nb = int(np.prod(blk))
    if cb % nb:
        raise fail("Col2Im", f"input dim 1 ({cb}) is not a multiple of the block size {nb}")
    c = cb // nb
    outs = [_conv.out_size(img[i], blk[i], strides[i], dilations[i], pads[i], pads[k + i]) for i in range(k)]
    if int(np.prod(outs)) != length:
        raise fail("Col2Im", f"{length} blocks do not tile image {img} (expected {int(np.prod(outs))})")
    cols = x.reshape(n, c, *blk, *outs)
    padded = [img[i] + pads[i] + pads[k + i] for i in range(k)]
    y = np.zeros((n, c, *padded), x.dtype)
    for offset in np.ndindex(*blk):
        window = tuple(slice(o * d, o * d + (m - 1) * s + 1, s) for o, d, s, m in zip(offset, dilations, strides, outs))
        y[(slice(None), slice(None)) + window] += cols[(slice(None), slice(None)) + offset]
    return _conv.pad_spatial(y, [-p for p in pads])


# ---------------------------------------------------------------------------------------------- CenterCropPad


def _ccp_infer(attrs, inputs):
    x, shape = inputs
    target = ints_value(shape)
    if x.shape is None:
        return [tensor(None, x.dtype)]
    rank = len(x.shape)
    axes = attrs.get("axes")
    axes = list(range(rank)) if axes is None else [a % rank for a in axes]
    out = list(x.shape)
    for i, a in enumerate(axes):
        out[a] = None if target is None else target[i]
    return [tensor(out, x.dtype)]


@register_op("CenterCropPad", attrs={"axes": ("ints", None)}, inputs=(2, 2), since_version=18, infer=_ccp_infer)
def center_crop_pad(attrs: dict[str, Any], x: Operand, shape: Operand) -> Result:
    """X centre-cropped or zero-padded to `shape` on `axes` (the extra element of
    an odd difference goes to the end); any dtype."""
    rank = x.ndim
    axes = attrs.get("axes")
    axes = list(range(rank)) if axes is None else [a % rank for a in axes]
    target = ints_of(shape)
    if len(target) != len(axes):
        raise fail("CenterCropPad", f"shape {target} needs one value per axis {axes}")
    index = [slice(None)] * rank
    widths = [(0, 0)] * rank
    for a, t in zip(axes, target):
        d = x.shape[a]
        if t < d:
            s = (d - t) // 2
            index[a] = slice(s, s + t)
        elif t > d:
            p = (t - d) // 2
            widths[a] = (p, t - d - p)
    return np.pad(x[tuple(index)], widths)


# ------------------------------------------------------------------------------------ DepthToSpace / SpaceToDepth


def _d2s_infer(attrs, inputs):
    x = inputs[0]
    b = attrs["blocksize"]
    if x.shape is None:
        return [tensor(None, x.dtype)]
    if len(x.shape) != 4:
        raise fail("DepthToSpace", f"input must be (N, C, H, W), got shape {x.shape}")
    n, c, h, w = x.shape
    if is_int(c) and c % (b * b):
        raise fail("DepthToSpace", f"{c} channels are not a multiple of blocksize^2 = {b * b}")
    return [tensor((n, c // (b * b) if is_int(c) else None, dim_mul(h, b), dim_mul(w, b)), x.dtype)]


@register_op("DepthToSpace", attrs={"blocksize": ("int", REQUIRED), "mode": ("string", "DCR")}, since_version=1,
             infer=_d2s_infer)
def depth_to_space(attrs: dict[str, Any], x: Operand) -> Result:
    """Moves channel blocks of (N, C, H, W) into b x b spatial blocks (DCR: depth,
    column, row order; CRD: column, row, depth); any dtype."""
    b = attrs["blocksize"]
    n, c, h, w = x.shape
    if attrs["mode"] == "DCR":
        y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    elif attrs["mode"] == "CRD":
        y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    else:
        raise fail("DepthToSpace", f"mode '{attrs['mode']}' is not one of DCR, CRD")
    return y.reshape(n, c // (b * b), h * b, w * b)


def _s2d_infer(attrs, inputs):
    x = inputs[0]
    b = attrs["blocksize"]
    if x.shape is None:
        return [tensor(None, x.dtype)]
    if len(x.shape) != 4:
        raise fail("SpaceToDepth", f"input must be (N, C, H, W), got shape {x.shape}")
    n, c, h, w = x.shape
    for d in (h, w):
        if is_int(d) and d % b:
            raise fail("SpaceToDepth", f"spatial dims {h}, {w} are not multiples of blocksize {b}")
    return [tensor((n, dim_mul(c, b * b), h // b if is_int(h) else None, w // b if is_int(w) else None), x.dtype)]


@register_op("SpaceToDepth", attrs={"blocksize": ("int", REQUIRED), "mode": ("string", "DCR")}, since_version=1,
             infer=_s2d_infer)
def space_to_depth(attrs: dict[str, Any], x: Operand) -> Result:
    """Moves b x b spatial blocks of (N, C, H, W) into channels (the inverse of
    DepthToSpace in the same mode); any dtype."""
    b = attrs["blocksize"]
    n, c, h, w = x.shape
    if h % b or w % b:
        raise fail("SpaceToDepth", f"spatial dims {h}, {w} are not multiples of blocksize {b}")
    y = x.reshape(n, c, h // b, b, w // b, b)
    if attrs["mode"] == "DCR":
        y = y.transpose(0, 3, 5, 1, 2, 4)
    elif attrs["mode"] == "CRD":
        y = y.transpose(0, 1, 3, 5, 2, 4)
    else:
        raise fail("SpaceToDepth", f"mode '{attrs['mode']}' is not one of DCR, CRD")
    return y.reshape(n, c * b * b, h // b, w // b)

"""tilecore/ir/ops/detection.py — NonMaxSuppression.

Greedy per (batch, class): boxes by decreasing score (ties: lower index first), those
not above score_threshold dropped, a box kept unless its IoU with an already kept box
exceeds iou_threshold, at most max_output_boxes_per_class kept (ONNX Runtime's rules).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._util import INT64, fail, tensor
from .registry import Operand, Result, register_op


def _corners(boxes, center_point_box):
    """(y1, x1, y2, x2) with y1 <= y2 and x1 <= x2, from either box encoding."""
    b = boxes.astype(np.float64)
    if center_point_box:
        xc, yc, w, h = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
        return np.stack([yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2], axis=-1)
    y1, x1, y2, x2 = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return np.stack([np.minimum(y1, y2), np.minimum(x1, x2), np.maximum(y1, y2), np.maximum(x1, x2)], axis=-1)


def _iou(a, others):
    iy1 = np.maximum(a[0], others[:, 0])
    ix1 = np.maximum(a[1], others[:, 1])
    iy2 = np.minimum(a[2], others[:, 2])
    ix2 = np.minimum(a[3], others[:, 3])
    inter = np.maximum(iy2 - iy1, 0) * np.maximum(ix2 - ix1, 0)
    area_a = (a[2] - a[0]) * (a[3] - a[1])
    area_o = (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    union = area_a + area_o - inter
    return np.where((inter > 0) & (union > 0), inter / np.where(union > 0, union, 1), 0.0)


def _nms_infer(attrs, inputs):
    boxes = inputs[0]
    if boxes.shape is not None and len(boxes.shape) != 3:
        raise fail("NonMaxSuppression", f"boxes must be (B, N, 4), got shape {boxes.shape}")
    if all(x is not None and x.value is not None for x in inputs):
        return [tensor(non_max_suppression(attrs, *[x.value for x in inputs]).shape, INT64)]
    return [tensor((None, 3), INT64)]


@register_op("NonMaxSuppression", attrs={"center_point_box": ("int", 0)}, inputs=(2, 5), since_version=10,
             infer=_nms_infer)
def non_max_suppression(attrs: dict[str, Any], boxes: Operand, scores: Operand, max_per_class: Operand = None,
                        iou_threshold: Operand = None, score_threshold: Operand = None) -> Result:
    """Selected boxes as int64 rows (batch, class, box) from boxes (B, N, 4) and
    scores (B, C, N); corners [y1, x1, y2, x2] or, with center_point_box, [xc, yc,
    w, h]."""
    if boxes.ndim != 3 or boxes.shape[2] != 4 or scores.ndim != 3 or scores.shape[0] != boxes.shape[0] \
            or scores.shape[2] != boxes.shape[1]:
        raise fail("NonMaxSuppression",
                   f"boxes {boxes.shape} and scores {scores.shape} must be (B, N, 4) and (B, C, N)")
    limit = 0 if max_per_class is None or np.asarray(max_per_class).size == 0 else \
        int(np.asarray(max_per_class).reshape(-1)[0])
    iou_t = 0.0 if iou_threshold is None or np.asarray(iou_threshold).size == 0 else \
        float(np.asarray(iou_threshold).reshape(-1)[0])
    score_t = None if score_threshold is None or np.asarray(score_threshold).size == 0 else \
        float(np.asarray(score_threshold).reshape(-1)[0])
    if not 0.0 <= iou_t <= 1.0:
        raise fail("NonMaxSuppression", f"iou_threshold {iou_t} is outside [0, 1]")
    corners = _corners(boxes, attrs["center_point_box"])
    rows = []
    for b in range(boxes.shape[0]):
        for c in range(scores.shape[1]):
            if limit <= 0:
                continue
            s = scores[b, c].astype(np.float64)
            order = np.argsort(-s, kind="stable")
            if score_t is not None:
                order = order[s[order] > score_t]
            kept = []
            for i in order:
                if kept and np.any(_iou(corners[b, i], corners[b, kept]) > iou_t):
                    continue
                kept.append(int(i))
                if len(kept) >= limit:
                    break
            rows.extend((b, c, i) for i in kept)
    return np.asarray(rows, dtype=np.int64).reshape(-1, 3)

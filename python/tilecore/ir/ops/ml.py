"""tilecore/ir/ops/ml.py — the classical-ML domain `ai.onnx.ml`: ArrayFeatureExtractor,
Binarizer, LabelEncoder and TreeEnsemble (opset 5 of ai.onnx.ml)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ._numeric import check_dtype, is_float, wide
from .registry import OpError, Operand, Result, TensorInfo, register_op

ML = "ai.onnx.ml"


def _afe_infer(attrs, inputs):
    x, y = inputs
    check_dtype("ArrayFeatureExtractor", y, lambda dt: np.dtype(dt) == np.int64, "int64 indices")
    if x.shape is None or y.shape is None:
        return [TensorInfo(None, x.dtype)]
    k = 1
    for d in y.shape:
        k = k * d if isinstance(k, int) and isinstance(d, int) else None
    lead = tuple(x.shape[:-1]) if len(x.shape) > 1 else (1,)
    return [TensorInfo(lead + (k,), x.dtype)]


@register_op("ArrayFeatureExtractor", domain=ML, inputs=(2, 2), since_version=1, infer=_afe_infer)
def array_feature_extractor(attrs: dict[str, Any], x: Operand, y: Operand) -> Result:
    """ArrayFeatureExtractor(X, Y): X[..., Y] (the features at the int64 indices Y of the last axis);
    a 1-D X gives shape [1, len(Y)]; numeric or string X."""
    x = np.asarray(x)
    idx = np.asarray(y).astype(np.int64).ravel()
    f = x.shape[-1]
    if ((idx < 0) | (idx >= f)).any():
        raise OpError(f"ArrayFeatureExtractor: an index in {idx.tolist()} is outside [0, {f})")
    out = np.take(x, idx, axis=-1)
    return out.reshape(1, -1) if x.ndim == 1 else out


@register_op("Binarizer", domain=ML, attrs={"threshold": ("float", 0.0)}, since_version=1,
             infer=lambda attrs, inputs: [TensorInfo(inputs[0].shape, inputs[0].dtype)])
def binarizer(attrs: dict[str, Any], x: Operand) -> Result:
    """Binarizer(X): 1 where X > threshold, else 0, in X's dtype; numeric types."""
    x = np.asarray(x)
    return (wide(x) > attrs["threshold"]).astype(x.dtype)


# ---- LabelEncoder ---------------------------------------------------------------------------------

def _le_keys_values(attrs):
    keys = None
    for name in ("keys_tensor", "keys_strings", "keys_int64s", "keys_floats"):
        if attrs.get(name) is not None:
            keys = np.asarray(attrs[name], dtype=object if name == "keys_strings" else None).ravel()
            if name == "keys_int64s":
                keys = keys.astype(np.int64)
            if name == "keys_floats":
                keys = keys.astype(np.float32)
            break
    values, vdtype = None, None
    for name in ("values_tensor", "values_strings", "values_int64s", "values_floats"):
        if attrs.get(name) is not None:
            values = np.asarray(attrs[name], dtype=object if name == "values_strings" else None).ravel()
            vdtype = {"values_strings": np.dtype(object), "values_int64s": np.dtype(np.int64),
                      "values_floats": np.dtype(np.float32)}.get(name, values.dtype)
            values = values.astype(vdtype)
            break
    if keys is None or values is None:
        raise OpError("LabelEncoder needs keys_* and values_* attributes")
    if len(keys) != len(values):
        raise OpError(f"LabelEncoder: {len(keys)} keys but {len(values)} values")
    return keys, values, vdtype


def _le_default(attrs, vdtype):
    if attrs.get("default_tensor") is not None:
        return np.asarray(attrs["default_tensor"]).ravel()[0]
    if vdtype == object:
        return attrs["default_string"]
    if vdtype.kind in "iu":
        return attrs["default_int64"]
    return attrs["default_float"]


def _le_infer(attrs, inputs):
    _, _, vdtype = _le_keys_values(attrs)
    return [TensorInfo(inputs[0].shape, vdtype)]


@register_op("LabelEncoder", domain=ML, attrs={
    "default_float": ("float", -0.0), "default_int64": ("int", -1), "default_string": ("string", "_Unused"),
    "default_tensor": ("tensor", None), "keys_floats": ("floats", None), "keys_int64s": ("ints", None),
    "keys_strings": ("strings", None), "keys_tensor": ("tensor", None), "values_floats": ("floats", None),
    "values_int64s": ("ints", None), "values_strings": ("strings", None), "values_tensor": ("tensor", None)},
    since_version=2, infer=_le_infer)
def label_encoder(attrs: dict[str, Any], x: Operand) -> Result:
    """LabelEncoder(X): each element of X looked up in keys_* and replaced by the matching values_*
    entry, or the default_* value; keys/values are strings, int64, float or (opset 4) tensors; NaN keys
    match NaN."""
    keys, values, vdtype = _le_keys_values(attrs)
    default = _le_default(attrs, vdtype)
    x = np.asarray(x)
    table = {}
    nan_value = None
    for k, v in zip(keys.tolist(), values.tolist()):
        if isinstance(k, float) and np.isnan(k):
            nan_value = v
        else:
            table[k] = v
    out = []
    for e in x.ravel().tolist():
        if isinstance(e, float) and np.isnan(e):
            out.append(default if nan_value is None else nan_value)
        else:
            out.append(table.get(e, default))
    return np.array(out, dtype=vdtype).reshape(x.shape)


# ---- TreeEnsemble ---------------------------------------------------------------------------------

def _te_infer(attrs, inputs):
    x = inputs[0]
    check_dtype("TreeEnsemble", x, is_float, "float types")
    n_targets = attrs["n_targets"]
    if n_targets is None:
        raise OpError("TreeEnsemble needs the attribute 'n_targets'")
    n = x.shape[0] if x.shape is not None and len(x.shape) >= 1 else None
    return [TensorInfo((n, int(n_targets)), x.dtype)]


def _probit(v):
    # inverse of the standard normal CDF: sqrt(2) * erfinv(2p - 1)
    from scipy.special import erfinv
    return np.sqrt(2) * erfinv(2 * v - 1)


@register_op("TreeEnsemble", domain=ML, attrs={
    "aggregate_function": ("int", 1), "leaf_targetids": ("ints", None), "leaf_weights": ("tensor", None),
    "membership_values": ("tensor", None), "n_targets": ("int", None), "nodes_falseleafs": ("ints", None),
    "nodes_falsenodeids": ("ints", None), "nodes_featureids": ("ints", None), "nodes_hitrates": ("tensor", None),
    "nodes_missing_value_tracks_true": ("ints", None), "nodes_modes": ("tensor", None),
    "nodes_splits": ("tensor", None), "nodes_trueleafs": ("ints", None), "nodes_truenodeids": ("ints", None),
    "post_transform": ("int", 0), "tree_roots": ("ints", None)},
    since_version=5, infer=_te_infer)
def tree_ensemble(attrs: dict[str, Any], x: Operand) -> Result:
    """TreeEnsemble(X): [N, n_targets] scores of the trees' leaves reached by each row of X
    (branch modes LEQ LT GTE GT EQ NEQ MEMBER, NaN per missing_value_tracks_true), aggregated by
    AVERAGE/SUM/MIN/MAX and post-transformed (NONE SOFTMAX LOGISTIC SOFTMAX_ZERO PROBIT); float types."""
    x = np.asarray(x)
    xw = wide(x).astype(np.float64)
    if xw.ndim == 1:
        xw = xw.reshape(1, -1)
    modes = np.asarray(attrs["nodes_modes"]).ravel().astype(np.int64)
    splits = wide(np.asarray(attrs["nodes_splits"])).ravel().astype(np.float64)
    feats = list(attrs["nodes_featureids"])
    tids, fids = list(attrs["nodes_truenodeids"]), list(attrs["nodes_falsenodeids"])
    tleaf, fleaf = list(attrs["nodes_trueleafs"]), list(attrs["nodes_falseleafs"])
    missing = list(attrs["nodes_missing_value_tracks_true"] or [0] * len(feats))
    weights = wide(np.asarray(attrs["leaf_weights"])).ravel().astype(np.float64)
    targets = list(attrs["leaf_targetids"])
    n_targets = int(attrs["n_targets"])
    sets = {}
    if attrs["membership_values"] is not None:
        mv = np.asarray(attrs["membership_values"], np.float64).ravel()
        groups, cur = [], []
        for v in mv:
            if np.isnan(v):
                groups.append(cur)
                cur = []
            else:
                cur.append(v)
        if cur:
            groups.append(cur)
        k = 0
        for i, m in enumerate(modes):
            if m == 6:
                sets[i] = set(groups[k]) if k < len(groups) else set()
                k += 1
    agg = attrs["aggregate_function"]
    roots = list(attrs["tree_roots"])
    out = np.zeros((xw.shape[0], n_targets), np.float64)
    for r, row in enumerate(xw):
        acc = [[] for _ in range(n_targets)]
        for root in roots:
            node, is_leaf = root, False
            while not is_leaf:
                v = row[feats[node]]
                m = modes[node]
                if np.isnan(v) and m != 6:
                    go = bool(missing[node])
                else:
                    s = splits[node]
                    go = {0: v <= s, 1: v < s, 2: v >= s, 3: v > s, 4: v == s, 5: v != s}.get(int(m))
                    if m == 6:
                        go = v in sets.get(node, set()) or (np.isnan(v) and bool(missing[node]))
                    if go is None:
                        raise OpError(f"TreeEnsemble: node {node} has unknown mode {m}")
                node, is_leaf = (tids[node], bool(tleaf[node])) if go else (fids[node], bool(fleaf[node]))
            acc[targets[node]].append(weights[node])
        for t in range(n_targets):
            vals = acc[t]
            if agg == 1:
                out[r, t] = sum(vals)
            elif agg == 0:
                out[r, t] = sum(vals) / len(roots)
            elif agg == 2:
                out[r, t] = min(vals) if vals else 0.0
            elif agg == 3:
                out[r, t] = max(vals) if vals else 0.0
            else:
                raise OpError(f"TreeEnsemble: aggregate_function {agg} is not 0..3")
    pt = attrs["post_transform"]
    if pt == 1:
        e = np.exp(out - out.max(axis=1, keepdims=True))
        out = e / e.sum(axis=1, keepdims=True)
    elif pt == 2:
        out = 1 / (1 + np.exp(-out))
    elif pt == 3:
        e = np.where(out == 0, 0, np.exp(out - out.max(axis=1, keepdims=True)))
        s = e.sum(axis=1, keepdims=True)
        out = np.where(s == 0, 0, e / np.where(s == 0, 1, s))
    elif pt == 4:
        out = _probit(out)
    elif pt != 0:
        raise OpError(f"TreeEnsemble: post_transform {pt} is not 0..4")
    return out.astype(x.dtype)

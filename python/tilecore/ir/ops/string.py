"""tilecore/ir/ops/string.py — string ops (StringConcat, StringNormalizer, StringSplit,
RegexFullMatch) and TfIdfVectorizer (n-gram counts of int or string tokens).

Strings are numpy object arrays of Python str.
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from .infer import broadcast_shapes
from .registry import OpError, Operand, Result, TensorInfo, register_op

_OBJ = np.dtype(object)


def _check_str(name, *infos):
    for x in infos:
        if x is not None and np.dtype(x.dtype) != _OBJ:
            raise OpError(f"{name}: needs string input, got {np.dtype(x.dtype)}")


def _concat_infer(attrs, inputs):
    _check_str("StringConcat", *inputs)
    return [TensorInfo(broadcast_shapes(inputs[0].shape, inputs[1].shape, where="StringConcat"), _OBJ)]


@register_op("StringConcat", inputs=(2, 2), since_version=20, infer=_concat_infer)
def string_concat(attrs: dict[str, Any], x: Operand, y: Operand) -> Result:
    """StringConcat(X, Y): X + Y element-wise with broadcasting; strings."""
    x, y = np.broadcast_arrays(np.asarray(x, dtype=object), np.asarray(y, dtype=object))
    out = np.empty(x.shape, dtype=object)
    for idx in np.ndindex(*x.shape):
        out[idx] = str(x[idx]) + str(y[idx])
    return out


def _regex_infer(attrs, inputs):
    _check_str("RegexFullMatch", inputs[0])
    _compile(attrs)
    return [TensorInfo(inputs[0].shape, np.dtype(np.bool_))]


def _compile(attrs):
    if attrs["pattern"] is None:
        raise OpError("RegexFullMatch needs the attribute 'pattern'")
    try:
        return re.compile(attrs["pattern"])
    except re.error as exc:
        raise OpError(f"RegexFullMatch: pattern {attrs['pattern']!r} is invalid: {exc}") from None


@register_op("RegexFullMatch", attrs={"pattern": ("string", None)}, since_version=20, infer=_regex_infer)
def regex_full_match(attrs: dict[str, Any], x: Operand) -> Result:
    """RegexFullMatch(X): bool, true where the whole string matches `pattern` (RE2 syntax, run with
    Python's re, which agrees on the common subset); strings."""
    pat = _compile(attrs)
    x = np.asarray(x, dtype=object)
    return np.array([pat.fullmatch(str(s)) is not None for s in x.ravel()], np.bool_).reshape(x.shape)


def _split_one(s, delimiter, maxsplit):
    if delimiter in (None, ""):
        return s.split(None, maxsplit if maxsplit is not None else -1)
    return s.split(delimiter, maxsplit if maxsplit is not None else -1)


def _split_infer(attrs, inputs):
    x = inputs[0]
    _check_str("StringSplit", x)
    if x.value is not None:
        y, z = string_split(attrs, x.value)
        return [TensorInfo.of(y, False), TensorInfo.of(z, False)]
    return [TensorInfo(None if x.shape is None else tuple(x.shape) + (None,), _OBJ),
            TensorInfo(x.shape, np.dtype(np.int64))]


@register_op("StringSplit", attrs={"delimiter": ("string", None), "maxsplit": ("int", None)}, outputs=(2, 2),
             since_version=20, infer=_split_infer)
def string_split(attrs: dict[str, Any], x: Operand) -> Result:
    """StringSplit(X): (Y, Z): each string split at `delimiter` (default: runs of whitespace, trimmed)
    at most `maxsplit` times, padded with "" to the longest split along a new last axis; Z the counts."""
    x = np.asarray(x, dtype=object)
    parts = [_split_one(str(s), attrs["delimiter"], attrs["maxsplit"]) for s in x.ravel()]
    width = max((len(p) for p in parts), default=0)
    y = np.full((x.size, width), "", dtype=object)
    for i, p in enumerate(parts):
        y[i, :len(p)] = p
    return y.reshape(x.shape + (width,)), np.array([len(p) for p in parts], np.int64).reshape(x.shape)


def _normalizer_infer(attrs, inputs):
    x = inputs[0]
    _check_str("StringNormalizer", x)
    if attrs["case_change_action"] not in ("NONE", "LOWER", "UPPER"):
        raise OpError(f"StringNormalizer: case_change_action must be NONE, LOWER or UPPER, "
                      f"got {attrs['case_change_action']!r}")
    if x.shape is not None and not (len(x.shape) == 1 or (len(x.shape) == 2 and x.shape[0] == 1)):
        raise OpError(f"StringNormalizer: X must have shape [C] or [1, C], got {x.shape}")
    if x.value is not None:
        return [TensorInfo.of(string_normalizer(attrs, x.value), False)]
    return [TensorInfo(None if x.shape is None else tuple(x.shape[:-1]) + (None,), _OBJ)]


@register_op("StringNormalizer", attrs={"case_change_action": ("string", "NONE"), "is_case_sensitive": ("int", 0),
                                        "locale": ("string", None), "stopwords": ("strings", None)},
             since_version=10, infer=_normalizer_infer)
def string_normalizer(attrs: dict[str, Any], x: Operand) -> Result:
    """StringNormalizer(X): X of shape [C] or [1, C] without the `stopwords` (compared case-insensitively
    unless is_case_sensitive), then lower- or upper-cased; an all-removed row keeps one ""."""
    x = np.asarray(x, dtype=object)
    if not (x.ndim == 1 or (x.ndim == 2 and x.shape[0] == 1)):
        raise OpError(f"StringNormalizer: X must have shape [C] or [1, C], got {x.shape}")
    stop = attrs["stopwords"] or []
    if attrs["is_case_sensitive"]:
        kept = [s for s in x.ravel() if s not in set(stop)]
    else:
        low = {w.lower() for w in stop}
        kept = [s for s in x.ravel() if str(s).lower() not in low]
    action = attrs["case_change_action"]
    if action == "LOWER":
        kept = [str(s).lower() for s in kept]
    elif action == "UPPER":
        kept = [str(s).upper() for s in kept]
    elif action != "NONE":
        raise OpError(f"StringNormalizer: case_change_action must be NONE, LOWER or UPPER, got {action!r}")
    if not kept:
        kept = [""]
    out = np.array(kept, dtype=object)
    return out if x.ndim == 1 else out.reshape(1, -1)


# ---- TfIdfVectorizer ----------------------------------------------------------------------------

def _tfidf_table(attrs):
    strings = attrs["pool_strings"]
    pool = list(strings) if strings else list(attrs["pool_int64s"] or [])
    counts = list(attrs["ngram_counts"] or [])
    indexes = list(attrs["ngram_indexes"] or [])
    table = {}
    ordinal = 0
    for n_minus_1, start in enumerate(counts):
        n = n_minus_1 + 1
        end = counts[n_minus_1 + 1] if n_minus_1 + 1 < len(counts) else len(pool)
        for i in range(start, end, n):
            if ordinal >= len(indexes):
                raise OpError("TfIdfVectorizer: ngram_indexes has fewer entries than the pool has n-grams")
            table[(n, tuple(pool[i:i + n]))] = indexes[ordinal]
            ordinal += 1
    return table, (max(indexes) + 1 if indexes else 0)


def _tfidf_infer(attrs, inputs):
    x = inputs[0]
    if attrs["mode"] not in ("TF", "IDF", "TFIDF"):
        raise OpError(f"TfIdfVectorizer: mode must be TF, IDF or TFIDF, got {attrs['mode']!r}")
    _, width = _tfidf_table(attrs)
    if x.shape is None:
        return [TensorInfo(None, np.dtype(np.float32))]
    if len(x.shape) not in (1, 2):
        raise OpError(f"TfIdfVectorizer: X must have shape [C] or [N, C], got {x.shape}")
    return [TensorInfo((width,) if len(x.shape) == 1 else (x.shape[0], width), np.dtype(np.float32))]


@register_op("TfIdfVectorizer", attrs={"max_gram_length": ("int", None), "max_skip_count": ("int", None),
                                       "min_gram_length": ("int", None), "mode": ("string", None),
                                       "ngram_counts": ("ints", None), "ngram_indexes": ("ints", None),
                                       "pool_int64s": ("ints", None), "pool_strings": ("strings", None),
                                       "weights": ("floats", None)},
             since_version=9, infer=_tfidf_infer)
def tfidf_vectorizer(attrs: dict[str, Any], x: Operand) -> Result:
    """TfIdfVectorizer(X): per row of X ([C] or [N, C], int32/int64 or strings), the counts of the pool's
    n-grams (lengths min..max_gram_length, gaps up to max_skip_count) at their ngram_indexes, as TF,
    IDF (weight where present) or TFIDF (count * weight); float32."""
    table, width = _tfidf_table(attrs)
    x = np.asarray(x)
    rows = x.reshape(1, -1) if x.ndim == 1 else x
    weights = attrs["weights"]
    out = np.zeros((rows.shape[0], width), np.float32)
    lo, hi, skips = attrs["min_gram_length"], attrs["max_gram_length"], attrs["max_skip_count"]
    for r, row in enumerate(rows):
        tokens = [t if isinstance(t, str) else int(t) for t in row.tolist()]
        for n in range(lo, hi + 1):
            for skip in range(0, (skips if n > 1 else 0) + 1):
                step = skip + 1
                for start in range(len(tokens)):
                    last = start + (n - 1) * step
                    if last >= len(tokens):
                        break
                    idx = table.get((n, tuple(tokens[start:last + 1:step])))
                    if idx is not None:
                        out[r, idx] += 1
    mode = attrs["mode"]
    if mode == "IDF":
        out = (out > 0).astype(np.float32)
        if weights:
            out *= np.asarray(weights, np.float32)[:width]
    elif mode == "TFIDF" and weights:
        out *= np.asarray(weights, np.float32)[:width]
    elif mode not in ("TF", "TFIDF", "IDF"):
        raise OpError(f"TfIdfVectorizer: mode must be TF, IDF or TFIDF, got {mode!r}")
    return out[0] if x.ndim == 1 else out

"""tilecore/ir/ops/attention.py — attention family: Attention (opset 23-25),
ai.onnx.preview FlexAttention, LinearAttention and RotaryEmbedding.

Attention follows the ONNX definition step by step: 3-D inputs are split into heads,
past keys/values are concatenated, the mask (bool: attend where True; float: added)
is padded to the total length with "masked", causal and sliding-window masks are
bottom-right aligned (offset by the past length, or per batch by nonpad_kv_seqlen),
K/V heads repeat for grouped-query attention, the scores are soft-capped, biased and
softmaxed, and a row with no attendable key gives zeros. Every step computes in the
input dtype, as ONNX's definition does (softmax_precision selects the softmax's);
promoting float16 to float32 drifts from the node tests' expected values by a few ulps.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._conv import accum_dtype
from ._util import dim_add, dim_mul, fail, is_int, tensor
from .registry import REQUIRED, Operand, Result, register_op

_SOFTMAX_PRECISION = {1: np.float32, 10: np.float16, 11: np.float64}


def _split_heads(x, heads, what):
    b, s, hidden = x.shape
    if heads is None or heads <= 0 or hidden % heads:
        raise fail("Attention", f"{what} of hidden size {hidden} does not split into {heads} heads")
    return x.reshape(b, s, heads, hidden // heads).transpose(0, 2, 1, 3)


def _softmax(x):
    top = np.max(x, axis=-1, keepdims=True)
    top = np.where(np.isneginf(top), 0, top)
    e = np.exp(x - top)
    s = np.sum(e, axis=-1, keepdims=True)
    return e / np.where(s == 0, 1, s)


def _band(q_len, kv_len, offset, allowed_fn, dtype):
    """0 where allowed_fn(i + offset - j) holds for query i and key j, -inf elsewhere;
    offset is a scalar (shape (q, kv)) or per batch (shape (B, 1, q, kv))."""
    i = np.arange(q_len).reshape(q_len, 1)
    j = np.arange(kv_len).reshape(1, kv_len)
    if np.ndim(offset) > 0:
        diff = (i + np.reshape(offset, (-1, 1, 1))) - j
        ok = allowed_fn(diff)
        return np.where(ok, 0, -np.inf).astype(dtype).reshape(ok.shape[0], 1, q_len, kv_len)
    return np.where(allowed_fn(i + int(offset) - j), 0, -np.inf).astype(dtype)


def _attention_infer(attrs, inputs):
    q, k, v = inputs[:3]
    past_key = inputs[4] if len(inputs) > 4 else None
    if q.shape is None or k.shape is None or v.shape is None:
        return [tensor(None, q.dtype)] * 4
    if not len(q.shape) == len(k.shape) == len(v.shape) or len(q.shape) not in (3, 4):
        raise fail("Attention", f"Q {q.shape}, K {k.shape}, V {v.shape} must all be rank 3 or all rank 4")
    if len(q.shape) == 4:
        b, hq, s, _ = q.shape
        hkv, kv_len, dh = k.shape[1], k.shape[2], k.shape[3]
        dv = v.shape[3]
    else:
        hq, hkv = attrs.get("q_num_heads"), attrs.get("kv_num_heads")
        if not hq or not hkv:
            raise fail("Attention", "3-D inputs need q_num_heads and kv_num_heads")
        b, s = q.shape[0], q.shape[1]
        kv_len = k.shape[1]
        dh = k.shape[2] // hkv if is_int(k.shape[2]) else None
        dv = v.shape[2] // hkv if is_int(v.shape[2]) else None
    total = kv_len if past_key is None or past_key.shape is None else dim_add(past_key.shape[2], kv_len)
    y = (b, hq, s, dv) if len(q.shape) == 4 else (b, s, dim_mul(hq, dv))
    return [tensor(y, q.dtype), tensor((b, hkv, total, dh), q.dtype), tensor((b, hkv, total, dv), q.dtype),
            tensor((b, hq, s, total), q.dtype)]


_ATTENTION_ATTRS = {
    "is_causal": ("int", 0), "kv_num_heads": ("int", None), "q_num_heads": ("int", None),
    "qk_matmul_output_mode": ("int", 0), "scale": ("float", None), "softcap": ("float", 0.0),
    "softmax_precision": ("int", None), "left_window_size": ("int", -1), "right_window_size": ("int", -1),
}


@register_op("Attention", attrs=_ATTENTION_ATTRS, inputs=(3, 7), outputs=(1, 4), since_version=23,
             infer=_attention_infer)
def attention(attrs: dict[str, Any], q: Operand, k: Operand, v: Operand, attn_mask: Operand = None,
              past_key: Operand = None, past_value: Operand = None, nonpad_kv_seqlen: Operand = None) -> Result:
    """Scaled dot-product attention of Q (B, Hq, S, D) or (B, S, Hq*D) with K, V,
    optional mask, KV cache and causal / sliding-window masking; float types.
    Returns Y, present_key, present_value and the QK scores of qk_matmul_output_mode."""
    dtype = q.dtype
    rank = q.ndim
    opset = attrs.get("_opset") or 23
    if (past_key is None) != (past_value is None):
        raise fail("Attention", "past_key and past_value must be given together")
    if nonpad_kv_seqlen is not None and past_key is not None:
        raise fail("Attention", "nonpad_kv_seqlen cannot be combined with past_key/past_value")
    if not (q.ndim == k.ndim == v.ndim) or rank not in (3, 4):
        raise fail("Attention", f"Q {q.shape}, K {k.shape}, V {v.shape} must all be rank 3 or all rank 4")
    if rank == 4 and opset >= 25 and (attrs.get("q_num_heads") is not None or attrs.get("kv_num_heads") is not None):
        raise fail("Attention", "q_num_heads and kv_num_heads must not be given for 4-D inputs")
    left, right = attrs.get("left_window_size", -1), attrs.get("right_window_size", -1)
    if rank == 3:
        q = _split_heads(q, attrs.get("q_num_heads"), "Q")
        k = _split_heads(k, attrs.get("kv_num_heads"), "K")
        v = _split_heads(v, attrs.get("kv_num_heads"), "V")
    work = np.dtype(dtype)
    scale = attrs.get("scale")
    if scale is None:
        scale = 1.0 / np.sqrt(q.shape[3])
    root = np.asarray(np.sqrt(scale), dtype).astype(work)
    present_key = k if past_key is None else np.concatenate([past_key, k], axis=2)
    present_value = v if past_value is None else np.concatenate([past_value, v], axis=2)
    qw, kw, vw = q.astype(work), present_key.astype(work), present_value.astype(work)
    batch, q_len, kv_len = q.shape[0], q.shape[2], kw.shape[2]

    if attn_mask is not None and kv_len > attn_mask.shape[-1]:
        widths = [(0, 0)] * (attn_mask.ndim - 1) + [(0, kv_len - attn_mask.shape[-1])]
        attn_mask = np.pad(attn_mask, widths, constant_values=False if attn_mask.dtype == bool else -np.inf)
    if nonpad_kv_seqlen is not None:
        offset = np.asarray(nonpad_kv_seqlen).astype(np.int64).reshape(-1) - q_len
    else:
        offset = past_key.shape[2] if past_key is not None else 0
    if attn_mask is not None and attn_mask.dtype == bool:
        mask = np.where(attn_mask, 0, -np.inf).astype(work)
    elif attn_mask is not None:
        mask = attn_mask.astype(work)
    else:
        mask = None
    bias = np.zeros((q_len, kv_len), work) if mask is None else np.zeros((q_len, kv_len), work) + mask
    if attrs["is_causal"]:
        bias = bias + _band(q_len, kv_len, offset, lambda d: d >= 0, work)
    if left >= 0 or right >= 0:
        def window(d):
            ok = np.ones(d.shape, bool)
            if left >= 0:
                ok &= d <= left
            if right >= 0:
                ok &= -d <= right
            return ok
        bias = bias + _band(q_len, kv_len, offset, window, work)
    if nonpad_kv_seqlen is not None:
        keep = np.arange(kv_len)[None, :] < np.asarray(nonpad_kv_seqlen).reshape(-1, 1)
        bias = bias + np.where(keep, 0, -np.inf).astype(work).reshape(batch, 1, 1, kv_len)

    hq, hkv = qw.shape[1], kw.shape[1]
    if hq != hkv:
        if hq % hkv:
            raise fail("Attention", f"{hq} query heads are not a multiple of {hkv} key/value heads")
        kw = np.repeat(kw, hq // hkv, axis=1)
        vw = np.repeat(vw, hq // hkv, axis=1)
    scores = np.matmul(qw * root, np.swapaxes(kw * root, -1, -2))
    softcap = attrs.get("softcap") or 0.0
    if softcap > 0:
        scores = np.tanh(scores / softcap) * softcap
    biased = scores + bias
    mode = attrs["qk_matmul_output_mode"]
    qk_out = biased if mode == 2 else scores
    prec = attrs.get("softmax_precision")
    if prec is not None:
        biased = biased.astype(dtype).astype(_SOFTMAX_PRECISION.get(prec, work))
    probs = _softmax(biased).astype(work)
    dead = np.isneginf(np.max(bias, axis=-1, keepdims=True))
    probs = np.where(dead, 0, probs)
    if mode == 3:
        qk_out = probs
    y = np.matmul(probs, vw)
    if rank == 3:
        y = y.transpose(0, 2, 1, 3).reshape(y.shape[0], y.shape[2], -1)
    qk_out = np.broadcast_to(qk_out, (batch, hq, q_len, kv_len))
    return y.astype(dtype), present_key, present_value, qk_out.astype(dtype)


def _flex_infer(attrs, inputs):
    q, _, v = inputs
    if q.shape is None or v.shape is None:
        return [tensor(None, q.dtype)]
    return [tensor((q.shape[0], q.shape[1], q.shape[2], v.shape[3]), q.dtype)]


def _call_graph(body, x, what):
    if body is None:
        return x
    if not callable(body):
        raise fail("FlexAttention", f"{what} must be a graph the evaluator can run")
    out = body(x)
    if len(out) != 1:
        raise fail("FlexAttention", f"{what} must produce one output, got {len(out)}")
    return np.asarray(out[0]).astype(x.dtype)


@register_op("FlexAttention", domain="ai.onnx.preview", inputs=(3, 3), since_version=1, infer=_flex_infer,
             attrs={"scale": ("float", None), "score_mod": ("graph", None), "prob_mod": ("graph", None),
                    "softmax_precision": ("int", None)})
def flex_attention(attrs: dict[str, Any], q: Operand, k: Operand, v: Operand) -> Result:
    """Attention of 4-D Q, K, V whose scores and probabilities pass through the
    score_mod / prob_mod subgraphs; half types softmax in float32."""
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise fail("FlexAttention", f"Q {q.shape}, K {k.shape}, V {v.shape} must be rank 4")
    hq, hkv = q.shape[1], k.shape[1]
    if hq != hkv:
        if hq % hkv:
            raise fail("FlexAttention", f"{hq} query heads are not a multiple of {hkv} key/value heads")
        k, v = np.repeat(k, hq // hkv, axis=1), np.repeat(v, hq // hkv, axis=1)
    scale = attrs.get("scale")
    if scale is None:
        scale = 1.0 / np.sqrt(q.shape[3])
    root = np.asarray(np.sqrt(np.float32(scale)), q.dtype)
    scores = np.matmul(q * root, np.swapaxes(k * root, -1, -2))
    prec = attrs.get("softmax_precision")
    work = _SOFTMAX_PRECISION.get(prec) if prec is not None else accum_dtype(q.dtype)
    scores = _call_graph(attrs.get("score_mod"), scores.astype(work), "score_mod")
    probs = _call_graph(attrs.get("prob_mod"), _softmax(scores), "prob_mod")
    return np.matmul(probs, v.astype(probs.dtype)).astype(v.dtype)


def _linear_infer(attrs, inputs):
    q, k, v = inputs[:3]
    past = inputs[3] if len(inputs) > 3 else None
    hq, hkv = attrs["q_num_heads"], attrs["kv_num_heads"]
    if q.shape is None or v.shape is None:
        return [tensor(None, q.dtype), tensor(None, q.dtype if past is None else past.dtype)]
    dk = q.shape[2] // hq if is_int(q.shape[2]) else None
    dv = v.shape[2] // hkv if is_int(v.shape[2]) else None
    state_dtype = q.dtype if past is None else past.dtype
    return [tensor((q.shape[0], q.shape[1], dim_mul(hq, dv)), q.dtype),
            tensor((q.shape[0], hkv, dk, dv), state_dtype)]


@register_op("LinearAttention", since_version=27, inputs=(3, 6), outputs=(2, 2), infer=_linear_infer,
             attrs={"chunk_size": ("int", 64), "kv_num_heads": ("int", REQUIRED), "q_num_heads": ("int", REQUIRED),
                    "scale": ("float", 0.0), "update_rule": ("string", "gated_delta")})
def linear_attention(attrs: dict[str, Any], query: Operand, key: Operand, value: Operand, past_state: Operand = None,
                     decay: Operand = None, beta: Operand = None) -> Result:
    """Recurrent linear attention over (B, T, H*D) inputs with a (B, Hkv, dk, dv)
    state, update rule linear / gated (decay) / delta (beta) / gated_delta; the
    recurrence runs in float32. Returns (output, present_state)."""
    rule = attrs["update_rule"]
    hq, hkv = attrs.get("q_num_heads"), attrs.get("kv_num_heads")
    if rule not in ("linear", "gated", "delta", "gated_delta"):
        raise fail("LinearAttention", f"update_rule '{rule}' is not one of linear, gated, delta, gated_delta")
    if not hq or not hkv or hq % hkv:
        raise fail("LinearAttention", f"q_num_heads {hq} must be a positive multiple of kv_num_heads {hkv}")
    gated, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    if gated != (decay is not None):
        raise fail("LinearAttention", f"update_rule '{rule}' {'needs' if gated else 'forbids'} the decay input")
    if delta != (beta is not None):
        raise fail("LinearAttention", f"update_rule '{rule}' {'needs' if delta else 'forbids'} the beta input")
    b, t, _ = query.shape
    dk, dv = query.shape[2] // hq, value.shape[2] // hkv

    def heads(x, h):
        return x.reshape(b, t, h, -1).transpose(0, 2, 1, 3).astype(np.float32)

    q4, k4, v4 = heads(query, hq), heads(key, hkv), heads(value, hkv)
    if past_state is not None:
        if past_state.shape != (b, hkv, dk, dv):
            raise fail("LinearAttention", f"past_state {past_state.shape} is not {(b, hkv, dk, dv)}")
        state = past_state.astype(np.float32)
        state_dtype = past_state.dtype
    else:
        state = np.zeros((b, hkv, dk, dv), np.float32)
        state_dtype = query.dtype
    g4 = heads(decay, hkv) if decay is not None else None
    b4 = beta.reshape(b, t, beta.shape[2], 1).transpose(0, 2, 1, 3).astype(np.float32) if beta is not None else None
    scale = attrs.get("scale") or 1.0 / np.sqrt(dk)
    out = np.zeros((b, hq, t, dv), np.float32)
    for i in range(t):
        kt, vt = k4[:, :, i, :], v4[:, :, i, :]
        if gated:
            state = state * np.exp(g4[:, :, i, :])[..., None]
        if delta:
            vt = b4[:, :, i, :] * (vt - np.einsum("bhdm,bhd->bhm", state, kt))
        state = state + kt[..., :, None] * vt[..., None, :]
        read = state if hq == hkv else np.repeat(state, hq // hkv, axis=1)
        out[:, :, i, :] = scale * np.einsum("bhd,bhdm->bhm", q4[:, :, i, :], read)
    y = out.transpose(0, 2, 1, 3).reshape(b, t, hq * dv).astype(query.dtype)
    return y, state.astype(state_dtype)


def _rotary_infer(attrs, inputs):
    x = inputs[0]
    return [tensor(x.shape, x.dtype)]


@register_op("RotaryEmbedding", since_version=23, inputs=(3, 4), infer=_rotary_infer,
             attrs={"interleaved": ("int", 0), "num_heads": ("int", None), "rotary_embedding_dim": ("int", 0)})
def rotary_embedding(attrs: dict[str, Any], x: Operand, cos_cache: Operand, sin_cache: Operand,
                     position_ids: Operand = None) -> Result:
    """Rotates the first rotary_embedding_dim features of each head of X (B, H, S, D)
    or (B, S, H*D) by the cached cos/sin of each position (halves, or interleaved
    pairs); float types."""
    shape = x.shape
    if x.ndim == 4:
        x = x.transpose(0, 2, 1, 3)
    elif x.ndim == 3:
        heads = attrs.get("num_heads")
        if not heads or shape[2] % heads:
            raise fail("RotaryEmbedding", f"3-D input {shape} needs num_heads dividing its hidden size")
        x = x.reshape(shape[0], shape[1], heads, shape[2] // heads)
    else:
        raise fail("RotaryEmbedding", f"input must be rank 3 or 4, got shape {shape}")
    dim = attrs.get("rotary_embedding_dim") or x.shape[3]
    half = dim // 2
    if position_ids is not None:
        cos_cache, sin_cache = cos_cache[position_ids], sin_cache[position_ids]
    if cos_cache.shape[-1] != half or sin_cache.shape[-1] != half:
        raise fail("RotaryEmbedding", f"cos/sin caches end in {cos_cache.shape[-1]}, expected {half}")
    cos, sin = cos_cache[:, :, None, :], sin_cache[:, :, None, :]
    rot, keep = x[..., :dim], x[..., dim:]
    if attrs["interleaved"]:
        x1, x2 = rot[..., 0::2], rot[..., 1::2]
    else:
        x1, x2 = rot[..., :half], rot[..., half:]
    real = cos * x1 - sin * x2
    imag = sin * x1 + cos * x2
    if attrs["interleaved"]:
        rot = np.stack([real, imag], axis=-1).reshape(rot.shape)
    else:
        rot = np.concatenate([real, imag], axis=-1)
    y = np.concatenate([rot, keep], axis=-1).astype(x.dtype)
    return y.reshape(shape) if len(shape) == 3 else y.transpose(0, 2, 1, 3)

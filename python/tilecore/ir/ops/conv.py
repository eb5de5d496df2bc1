"""tilecore/ir/ops/conv.py — convolutions: Conv, ConvTranspose, CausalConvWithState.

The numerics live in `_conv.py` (im2col + GEMM), the reference later stages are
compared with; this file holds the schemas, attribute handling and shape inference
(output sizes from pads, auto_pad, strides and dilations, keeping symbolic batch dims).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from . import _conv, precision_form
from ._util import dim_add, dim_mul, fail, is_int, tensor
from .precision_form import PRECISION_ATTRS, in_precision_form
from .registry import Operand, Result, register_op

_CONV_ATTRS = {
    "auto_pad": ("string", "NOTSET"),
    "dilations": ("ints", None),
    "group": ("int", 1),
    "kernel_shape": ("ints", None),
    "pads": ("ints", None),
    "strides": ("ints", None),
}
_AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


def window_attrs(op: str, attrs: Mapping[str, Any], k: int,
                 kernel: Sequence[int] | None = None) -> tuple[list[int], list[int], list[int], list[int] | None, str]:
    """(kernel, strides, dilations, pads-or-None, auto_pad) checked for `k` spatial dims."""
    kernel = list(attrs.get("kernel_shape") or kernel or [])
    strides = list(attrs.get("strides") or [1] * k)
    dilations = list(attrs.get("dilations") or [1] * k)
    pads = attrs.get("pads")
    auto_pad = attrs.get("auto_pad") or "NOTSET"
    if auto_pad not in _AUTO_PADS:
        raise fail(op, f"auto_pad '{auto_pad}' is not one of {', '.join(_AUTO_PADS)}")
    if len(kernel) != k:
        raise fail(op, f"kernel_shape {kernel} does not have the {k} spatial dims of the input")
    if len(strides) != k or len(dilations) != k:
        raise fail(op, f"strides {strides} / dilations {dilations} need {k} values")
    if pads is not None and len(pads) != 2 * k:
        raise fail(op, f"pads {list(pads)} need {2 * k} values (begins then ends)")
    if any(s <= 0 for s in strides) or any(d <= 0 for d in dilations):
        raise fail(op, f"strides {strides} and dilations {dilations} must be positive")
    return kernel, strides, dilations, (list(pads) if pads is not None else None), auto_pad


def window_out_dims(op: str, in_dims: Sequence[Any], kernel: Sequence[int], strides: Sequence[int],
                    dilations: Sequence[int], pads: Sequence[int] | None, auto_pad: str, ceil_mode: bool = False,
                    pool: bool = False) -> list[Any]:
    """Output spatial dims of a sliding window over `in_dims` (ints, symbols or None)."""
    k = len(in_dims)
    out = []
    for i in range(k):
        size = in_dims[i]
        if not (is_int(size) and is_int(kernel[i])):
            out.append(None)
            continue
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            out.append(-(-int(size) // strides[i]))
            continue
        p = [0] * (2 * k) if auto_pad == "VALID" or pads is None else pads
        n = _conv.out_size(int(size), int(kernel[i]), strides[i], dilations[i], p[i], p[k + i], ceil_mode)
        if n <= 0:
            raise fail(op, f"spatial dim {i}: input {size} with kernel {kernel[i]}, dilation {dilations[i]} "
                           f"and pads ({p[i]}, {p[k + i]}) gives no output")
        out.append(n)
    return out


def _conv_infer(attrs, inputs):
    x, w = inputs[0], inputs[1]
    if x.shape is None or w is None or w.shape is None:
        return [tensor(None, x.dtype)]
    if len(x.shape) < 3:
        raise fail("Conv", f"X must be (N, C, D1, ...), got shape {x.shape}")
    if len(w.shape) != len(x.shape):
        raise fail("Conv", f"W of shape {w.shape} does not have the rank of X {x.shape}")
    group = attrs["group"]
    c, m, cg = x.shape[1], w.shape[0], w.shape[1]
    if is_int(c) and is_int(cg) and c != cg * group:
        raise fail("Conv", f"X has {c} channels but W takes {cg} per group x {group} groups")
    if is_int(m) and m % group:
        raise fail("Conv", f"{m} output channels do not divide into {group} groups")
    kernel, strides, dilations, pads, auto_pad = window_attrs("Conv", attrs, len(x.shape) - 2, w.shape[2:])
    spatial = window_out_dims("Conv", x.shape[2:], kernel, strides, dilations, pads, auto_pad)
    return [tensor((x.shape[0], m, *spatial), x.dtype)]


@register_op("Conv", attrs=dict(_CONV_ATTRS, **PRECISION_ATTRS), inputs=(2, 4), since_version=1,
             infer=_conv_infer)
def conv(attrs: dict[str, Any], x: Operand, w: Operand, b: Operand = None, w_scale: Operand = None) -> Result:
    """Y = conv(X, W) + B over N-d images (N, C, D1..Dk); float16/32/64, bfloat16.
    Groups, dilations, strides, explicit or auto pads. With ``tc_precision`` the
    precision form (precision_form.py): W may be int8, input 3 is w_scale."""
    if in_precision_form(attrs):
        plain = {k: v for k, v in attrs.items() if k not in PRECISION_ATTRS}
        plain.update(tc_precision="f32")
        return precision_form.reference("Conv", attrs, lambda a, ww, bb: conv(plain, a, ww, bb), 1,
                                        lambda ww: ww.reshape(ww.shape[0], -1).sum(axis=1), x, w, b, w_scale)
    k = x.ndim - 2
    kernel, strides, dilations, pads, auto_pad = window_attrs("Conv", attrs, k, w.shape[2:])
    if x.shape[1] != w.shape[1] * attrs["group"]:
        raise fail("Conv", f"X has {x.shape[1]} channels but W takes {w.shape[1]} x {attrs['group']} groups")
    pads = _conv.resolve_pads(auto_pad, x.shape[2:], kernel, strides, dilations, pads)
    return _conv.conv_nd(x, w, b, strides=strides, dilations=dilations, pads=pads, group=attrs["group"])


_CONVT_ATTRS = dict(_CONV_ATTRS, output_padding=("ints", None), output_shape=("ints", None))


def _convt_geometry(attrs, in_dims, w_kernel):
    k = len(in_dims)
    kernel, strides, dilations, pads, auto_pad = window_attrs("ConvTranspose", attrs, k, w_kernel)
    output_padding = list(attrs.get("output_padding") or [0] * k)
    output_shape = attrs.get("output_shape")
    if output_shape is not None:
        output_shape = list(output_shape)[-k:]
    return kernel, strides, dilations, pads, auto_pad, output_padding, output_shape


def _convt_infer(attrs, inputs):
    x, w = inputs[0], inputs[1]
    if x.shape is None or w is None or w.shape is None:
        return [tensor(None, x.dtype)]
    if len(x.shape) < 3:
        raise fail("ConvTranspose", f"X must be (N, C, D1, ...), got shape {x.shape}")
    if len(w.shape) != len(x.shape):
        raise fail("ConvTranspose", f"W of shape {w.shape} does not have the rank of X {x.shape}")
    group = attrs["group"]
    m = dim_mul(w.shape[1], group)
    geo = _convt_geometry(attrs, x.shape[2:], w.shape[2:])
    kernel, strides, dilations, pads, auto_pad, output_padding, output_shape = geo
    if all(is_int(d) for d in x.shape[2:]) and all(is_int(d) for d in kernel):
        _, spatial = _conv.conv_transpose_pads(auto_pad, [int(d) for d in x.shape[2:]], kernel, strides,
                                               dilations, pads, output_padding, output_shape)
    elif output_shape is not None:
        spatial = output_shape
    else:
        spatial = [None] * len(kernel)
    return [tensor((x.shape[0], m, *spatial), x.dtype)]


@register_op("ConvTranspose", attrs=_CONVT_ATTRS, inputs=(2, 3), since_version=1, infer=_convt_infer)
def conv_transpose(attrs: dict[str, Any], x: Operand, w: Operand, b: Operand = None) -> Result:
    """Transposed (fractionally strided) convolution; W is (C, M/group, k...). Output
    size from pads and output_padding, or from output_shape / SAME auto_pad."""
    geo = _convt_geometry(attrs, x.shape[2:], w.shape[2:])
    kernel, strides, dilations, pads, auto_pad, output_padding, output_shape = geo
    if x.shape[1] % attrs["group"]:
        raise fail("ConvTranspose", f"{x.shape[1]} input channels do not divide into {attrs['group']} groups")
    pads, _ = _conv.conv_transpose_pads(auto_pad, x.shape[2:], kernel, strides, dilations, pads,
                                        output_padding, output_shape)
    return _conv.conv_transpose_nd(x, w, b, strides=strides, dilations=dilations, pads=pads, group=attrs["group"])


def _causal_infer(attrs, inputs):
    x, w = inputs[0], inputs[1]
    if x.shape is not None and len(x.shape) != 3:
        raise fail("CausalConvWithState", f"input must be (batch, channels, length), got shape {x.shape}")
    k = w.shape[2] if w.shape is not None and len(w.shape) == 3 else None
    state_len = dim_add(k, -1) if is_int(k) else None
    n, c = (x.shape[0], x.shape[1]) if x.shape is not None else (None, None)
    return [tensor(x.shape, x.dtype), tensor((n, c, state_len), x.dtype)]


@register_op("CausalConvWithState", attrs={"activation": ("string", "none")}, inputs=(2, 4), outputs=(2, 2),
             since_version=27, infer=_causal_infer)
def causal_conv_with_state(attrs: dict[str, Any], x: Operand, w: Operand, b: Operand = None,
                           past_state: Operand = None) -> Result:
    """Depthwise causal 1-D conv (B, C, L) with a carried state of the last k-1
    inputs; optional fused SiLU. Returns (output, present_state)."""
    act = attrs["activation"]
    if act not in ("none", "silu", "swish"):
        raise fail("CausalConvWithState", f"activation '{act}' is not one of none, silu, swish")
    if x.ndim != 3 or w.ndim != 3:
        raise fail("CausalConvWithState", f"input {x.shape} and weight {w.shape} must be rank 3")
    n, c, _ = x.shape
    k = w.shape[2]
    if past_state is None:
        past_state = np.zeros((n, c, k - 1), x.dtype)
    padded = np.concatenate([past_state.astype(x.dtype), x], axis=2)
    y = _conv.conv_nd(padded, w, b, strides=[1], dilations=[1], pads=[0, 0], group=c, out_dtype=np.float32)
    if act != "none":
        y = y * (1.0 / (1.0 + np.exp(-y)))
    return y.astype(x.dtype), padded[:, :, padded.shape[2] - (k - 1):]

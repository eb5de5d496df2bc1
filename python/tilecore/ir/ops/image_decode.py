"""tilecore/ir/ops/image_decode.py — ImageDecoder: an encoded image (JPEG, PNG, BMP, TIFF,
WebP, ... as bytes) to pixels, through Pillow when it is installed."""
from __future__ import annotations

import io
from typing import Any

import numpy as np

from .registry import OpError, Operand, Result, TensorInfo, register_op

_FORMATS = ("RGB", "BGR", "Grayscale")


def _decoder_infer(attrs, inputs):
    x = inputs[0]
    if np.dtype(x.dtype) != np.uint8:
        raise OpError(f"ImageDecoder: encoded_stream must be uint8 bytes, got {np.dtype(x.dtype)}")
    if x.shape is not None and len(x.shape) != 1:
        raise OpError(f"ImageDecoder: encoded_stream must be 1-D, got shape {x.shape}")
    if attrs["pixel_format"] not in _FORMATS:
        raise OpError(f"ImageDecoder: pixel_format must be one of {_FORMATS}, got {attrs['pixel_format']!r}")
    h = w = None
    if x.value is not None:  # a constant stream: the header gives the size without decoding
        try:
            from PIL import Image
            w, h = Image.open(io.BytesIO(np.asarray(x.value, np.uint8).tobytes())).size
        except Exception:  # no Pillow, or not an image: the reference names the problem
            pass
    return [TensorInfo((h, w, 1 if attrs["pixel_format"] == "Grayscale" else 3), np.dtype(np.uint8))]


@register_op("ImageDecoder", attrs={"pixel_format": ("string", "RGB")}, since_version=20, infer=_decoder_infer)
def image_decoder(attrs: dict[str, Any], encoded: Operand) -> Result:
    """ImageDecoder(encoded_stream): the uint8 image [H, W, 3] (pixel_format RGB or BGR) or [H, W, 1]
    (Grayscale) decoded from the bytes of an image file; needs Pillow."""
    fmt = attrs["pixel_format"]
    if fmt not in _FORMATS:
        raise OpError(f"ImageDecoder: pixel_format must be one of {_FORMATS}, got {fmt!r}")
    try:
        from PIL import Image
    except ImportError:
        raise OpError("ImageDecoder needs Pillow (pip install pillow) to decode images") from None
    try:
        img = Image.open(io.BytesIO(np.asarray(encoded, np.uint8).tobytes()))
        img.load()
    except Exception as exc:  # Pillow raises several kinds for bad data
        raise OpError(f"ImageDecoder: the encoded stream is not a decodable image ({exc})") from None
    if fmt == "Grayscale":
        return np.asarray(img.convert("L"), np.uint8)[:, :, None]
    rgb = np.asarray(img.convert("RGB"), np.uint8)
    return np.ascontiguousarray(rgb[:, :, ::-1]) if fmt == "BGR" else rgb

"""tilecore.frontend: models into the Graph IR, and the Graph IR's reference evaluator.

    g = tilecore.frontend.from_onnx("model.onnx", input_shapes={"input": (1, 3, 224, 224)})
    print(g)                                               # one line per node
    out = tilecore.frontend.evaluate(g, {"input": x})      # name -> numpy array

See docs/frontend.md.
"""

from __future__ import annotations

from typing import Any

from .onnx import ImportError_ as ONNXImportError, from_onnx  # noqa: F401
from ..ir.graph import evaluate, static_shape_of_type


def static_shape(value: Any) -> tuple[int, ...] | None:
    """The static shape of a Value (tuple of int), or None when a dimension is
    symbolic or unknown or the value is not a tensor."""
    return static_shape_of_type(getattr(value, "type", None))


__all__ = ["ONNXImportError", "evaluate", "from_onnx", "static_shape"]

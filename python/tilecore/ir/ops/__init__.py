"""tilecore.ir.ops: the graph operators — schema, shape inference and a numpy
reference implementation for each (see registry.py and docs/frontend.md).

Importing this package registers the whole op library."""

from __future__ import annotations

from .registry import (  # noqa: F401
    ATTR_KINDS, REQUIRED, OpError, OpSchema, SequenceInfo, TensorInfo, get_op, list_ops, on_register, register_op,
)

# The op families (each module registers its ops when imported).
from . import (  # noqa: E402,F401
    activation, cast, elementwise, image_decode, logical, loss, matrix, ml, normalization, quantize, random, reduce,
    signal, string, training,
)
from . import (  # noqa: E402,F401
    attention, control, conv, detection, image, indexing, linalg, pool, rnn, sequence, tensor,
)

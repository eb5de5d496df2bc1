"""tilecore.ir.ops: the graph operators — schema, shape inference and a numpy
reference implementation for each (see registry.py and docs/frontend.md).

Importing this package registers the whole op library."""
from .registry import (  # noqa: F401
    ATTR_KINDS, REQUIRED, OpError, OpSchema, SequenceInfo, TensorInfo, get_op, list_ops, on_register, register_op,
)

# The op families (each module registers its ops when imported).
from . import activation, cast, elementwise, logical, loss, ml, normalization, quantize, reduce, string  # noqa: E402,F401,E501
from . import conv  # noqa: F401,E402
from . import pool  # noqa: F401,E402
from . import tensor  # noqa: F401,E402
from . import indexing  # noqa: F401,E402
from . import linalg  # noqa: F401,E402
from . import attention  # noqa: F401,E402
from . import rnn  # noqa: F401,E402
from . import image  # noqa: F401,E402
from . import sequence  # noqa: F401,E402
from . import control  # noqa: F401,E402
from . import detection  # noqa: F401,E402

"""tilecore.script.api — the DSL functions, one family per file.

operators.py (Python operators on kernel values), memory.py (pointers, buffers,
regions, alloc_buffer, view), vector.py (SIMD), math.py (scalar float math),
tile.py (matrix and vector engines), dma.py (DMA and events), sync.py (cores and
the barrier), misc.py (constants, printf). Importing this package registers them.
"""

from __future__ import annotations

from . import operators, memory, vector, math, tile, dma, sync, misc  # noqa: F401

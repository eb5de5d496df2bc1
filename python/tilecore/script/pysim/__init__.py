"""tilecore.script.pysim — PySim: runs DSL kernels in Python.

``values.py`` holds the kernel values (numpy arrays with a DSL dtype) and memories,
``semantics.py`` TC1's lane-wise semantics, ``runner.py`` the cores, barriers and
DMA events (``runner.run`` is what calling a kernel does) and the seeded scheduler,
``batch.py`` dependence-free loops run as whole numpy operations, ``racecheck.py`` the
data-race detector.
"""

from __future__ import annotations

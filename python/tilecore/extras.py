"""The optional dependencies and the extras of the package that install them.

``pip install tilecore`` brings what ``tilecore compile | run | tdb`` need (numpy, onnx,
ml_dtypes); a command that needs more imports it with :func:`require`, whose error names the
extra to install (``pip install 'tilecore[ort]'``) instead of failing deep in a traceback.
"""

from __future__ import annotations

import importlib
from types import ModuleType

# module -> the extra of pyproject.toml that installs it
EXTRAS = {"onnxruntime": "ort", "scipy": "ops", "PIL": "ops", "tqdm": "progress", "ray": "ray"}


class MissingDependencyError(ImportError):
    """An optional package a command needs is not installed; the message says how to get it."""


def require(module: str, purpose: str) -> ModuleType:
    """Imports ``module`` or raises MissingDependencyError: "``purpose`` needs ``module``
    (pip install 'tilecore[extra]')"."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        extra = EXTRAS.get(module.split(".")[0])
        how = f"pip install 'tilecore[{extra}]'" if extra else f"pip install {module}"
        raise MissingDependencyError(f"{purpose} needs {module}, which is not installed ({how}): {e}",
                                     name=module) from None

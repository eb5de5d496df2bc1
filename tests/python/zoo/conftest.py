"""tests/python/zoo/conftest.py — one private export cache for the whole test session,
so each zoo model is exported once however many test files use it, and never read
from (or written to) the user's cache."""
import os

import pytest


@pytest.fixture(scope="session")
def zoo_cache(tmp_path_factory):
    path = tmp_path_factory.mktemp("zoo-cache")
    old = os.environ.get("TILECORE_CACHE")
    os.environ["TILECORE_CACHE"] = str(path)
    yield path
    if old is None:
        os.environ.pop("TILECORE_CACHE", None)
    else:
        os.environ["TILECORE_CACHE"] = old


@pytest.fixture(scope="session")
def zoo_export(zoo_cache):
    """zoo_export(name) -> path of the batch-1, seed-0 export (made once per session)."""
    from tilecore import zoo
    paths = {}

    def get(name):
        if name not in paths:
            paths[name] = zoo.export(name)
        return paths[name]
    return get

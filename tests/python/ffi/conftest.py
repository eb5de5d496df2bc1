"""Shared helpers of the FFI bridge tests."""
import pytest

import tilecore


def require_global(name):
    """Skips the test when the library does not register `name` (yet)."""
    if tilecore.get_global_func(name, allow_missing=True) is None:
        pytest.skip(f"libtilecore does not register {name}")
    return tilecore.get_global_func(name)


@pytest.fixture
def unique_name(request):
    """A registry name unique to the test, removed afterwards."""
    name = "pytest." + request.node.name.replace("[", "_").replace("]", "_")
    yield name
    tilecore.remove_global_func(name)

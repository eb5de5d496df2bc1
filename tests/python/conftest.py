"""tests/python/conftest.py — makes the helpers beside this file (doc_examples.py)
importable from every test folder."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# Property tests draw fresh random examples on a developer's machine (to find new bugs) but
# a fixed sequence in CI (so a run's verdict depends on the code, not the seed), and never
# write an example database into the checkout.
try:
    from hypothesis import settings as _hypothesis_settings

    _hypothesis_settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
    _hypothesis_settings.register_profile("dev", database=None, print_blob=True)
    _hypothesis_settings.load_profile("ci" if os.environ.get("CI") else "dev")
except ImportError:  # the property tests skip themselves without Hypothesis
    pass


# A build configured with TILECORE_ENABLE_NPU=OFF has no npu target, device or module
# kind. A test that needs one fails with exactly one of these errors; that failure is
# reported as a skip naming the reason, and every other failure stays a failure.
_NPU_ABSENT_ERRORS = ("unknown target kind `npu`", "'runtime.NpuModuleCreate' is not registered",
                      "registered for device `npu`", "(npu)",
                      "built without the npu device", "'runtime.NpuConfigure'",
                      "no loader for module kind `npu`", "'runtime.InstallHostCalls' is not registered")


def _build_has_npu():
    try:
        import tilecore

        return tilecore.get_global_func("runtime.NpuModuleCreate", allow_missing=True) is not None
    except Exception:  # noqa: BLE001 - no build at all: the tests report that themselves
        return True


_HAS_NPU = _build_has_npu()


def pytest_configure(config):
    config.addinivalue_line("markers", "npu: needs the npu device (skipped in a TILECORE_ENABLE_NPU=OFF build)")


def pytest_collection_modifyitems(config, items):
    if _HAS_NPU:
        return
    import pytest

    skip = pytest.mark.skip(reason="needs the npu device (this build has TILECORE_ENABLE_NPU=OFF)")
    for item in items:
        if item.get_closest_marker("npu"):
            item.add_marker(skip)


def _messages(exc):
    """The messages of an exception and of those it was raised from or during."""
    seen, out = set(), []
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        out.append(f"{type(exc).__name__}: {exc}")
        exc = exc.__cause__ or exc.__context__
    return "\n".join(out)


def _names_absent_npu(text):
    return any(e in text for e in _NPU_ABSENT_ERRORS)


def pytest_runtest_makereport(item, call):
    if _HAS_NPU or call.excinfo is None or call.when not in ("setup", "call"):
        return None
    import pytest

    # The messages first: rendering the traceback (getrepr) costs a tenth of a second.
    if _names_absent_npu(_messages(call.excinfo.value)) or _names_absent_npu(
            str(call.excinfo.getrepr(style="short"))):
        # Built directly: TestReport.from_item_and_call would first render the traceback
        # of the failure it reports, the slowest part of a run that skips a test this way.
        return pytest.TestReport(
            item.nodeid, item.location, {k: 1 for k in item.keywords}, "skipped",
            (str(item.path), item.location[1] or 0,
             "Skipped: needs the npu device (this build has TILECORE_ENABLE_NPU=OFF)"),
            call.when, user_properties=item.user_properties, duration=call.duration,
            start=call.start, stop=call.stop)
    return None

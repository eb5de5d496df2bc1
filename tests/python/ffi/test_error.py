"""Errors across the bridge: kinds, messages, both tracebacks, never a crash."""
import traceback

import numpy as np
import pytest

import tilecore
from tilecore import testing


@pytest.mark.parametrize(
    "kind, builtin",
    [
        ("TypeError", TypeError),
        ("ValueError", ValueError),
        ("IndexError", IndexError),
        ("KeyError", KeyError),
        ("AttributeError", AttributeError),
        ("RuntimeError", RuntimeError),
        ("NotImplementedError", NotImplementedError),
    ],
)
def test_cpp_error_kinds_map_to_tilecore_and_builtin_classes(kind, builtin):
    with pytest.raises(builtin) as info:
        testing.throw(kind, "something broke")
    err = info.value
    assert isinstance(err, tilecore.TilecoreError)
    assert type(err) is getattr(tilecore.error, kind)
    assert "something broke" in str(err)
    assert err.kind == kind


def test_unknown_kind_becomes_runtime_error():
    with pytest.raises(tilecore.error.RuntimeError, match="odd"):
        testing.throw("SomeUnusualError", "odd")


def test_cpp_backtrace_is_attached_as_a_note():
    with pytest.raises(tilecore.TilecoreError) as info:
        testing.throw("ValueError", "x")
    assert any("C++ backtrace" in n for n in getattr(info.value, "__notes__", []))


def test_bad_argument_type_names_function_index_expected_and_actual():
    with pytest.raises(TypeError) as info:
        testing.make_test_object("not an int", "n", None)
    msg = str(info.value)
    assert "testing.make_test_object" in msg
    assert "#0" in msg or "argument 0" in msg
    assert "int" in msg and "str" in msg


def test_bad_argument_count_names_function_and_counts():
    with pytest.raises(TypeError) as info:
        testing.make_test_object(1)
    msg = str(info.value)
    assert "testing.make_test_object" in msg and "3" in msg and "1" in msg


def test_unknown_function():
    with pytest.raises(ValueError, match="'testing.no_such_function' is not registered"):
        tilecore.get_global_func("testing.no_such_function")
    with pytest.raises(AttributeError):
        testing.no_such_function


def _raiser(x):
    raise ValueError(f"bad value {x}")


def test_callback_exception_is_the_same_object_with_both_tracebacks():
    raised = []

    def cb(x):
        try:
            _raiser(x)
        except ValueError as e:
            raised.append(e)
            raise

    with pytest.raises(ValueError) as info:
        testing.apply(cb, 7)
    err = info.value
    assert err is raised[0]  # the very exception object, not a copy
    assert type(err) is ValueError
    text = "".join(traceback.format_exception(err))
    assert "_raiser" in text  # the callback's frames
    assert "test_callback_exception_is_the_same_object" in text  # the caller's frames
    assert any("C++ frames" in n for n in err.__notes__)  # the frames in between


def test_callback_exception_custom_class_survives():
    class MyError(KeyError):
        pass

    def cb():
        raise MyError("mine")

    with pytest.raises(MyError):
        testing.apply(cb)


def test_callback_exception_from_another_cpp_thread():
    def cb():
        raise IndexError("from the worker thread")

    with pytest.raises(IndexError, match="from the worker thread") as info:
        testing.apply_in_thread(cb)
    assert "cb" in "".join(traceback.format_exception(info.value))


def test_nested_callbacks_propagate_through_two_cpp_layers():
    def inner():
        raise ZeroDivisionError("deep")

    with pytest.raises(ZeroDivisionError, match="deep"):
        testing.apply(lambda: testing.apply(inner))


def test_callback_returning_unconvertible_value_is_opaque_not_a_crash():
    s = {1, 2}
    assert testing.apply(lambda: s) is s


@pytest.mark.parametrize(
    "value",
    [
        object(),
        {1, 2},
        type,
        np.array([1.0, 2.0]),
        np.float16(1.0),
        1 << 80,
        "\ud800",
        [object()],
        {"k": {1, 2}},
        slice(1, 2),
        memoryview(b"ab"),
        float("nan"),
        Ellipsis,
    ],
)
def test_no_input_crashes(value):
    for f in (testing.echo, testing.nop, lambda v: testing.make_test_object(v, "n", None)):
        try:
            f(value)
        except Exception as e:  # noqa: BLE001 - any Python exception is fine, a crash is not
            assert isinstance(e, (TypeError, ValueError, OverflowError, tilecore.TilecoreError))


def test_calling_a_moved_function_is_an_error():
    f = tilecore.convert(lambda: 1)
    f._move()
    with pytest.raises(ValueError, match="empty"):
        f()

"""Global functions both ways, functions as values, callbacks, closures (seed 003)."""
import threading

import numpy as np
import pytest

import tilecore
from tilecore import testing


def test_register_python_function_and_call_it_back(unique_name):
    targs = (10, 10.0, "hello")

    @tilecore.register_func(unique_name)
    def my_packed_func(*args):
        assert tuple(args) == targs
        return 10

    f = tilecore.get_global_func(unique_name)
    assert isinstance(f, tilecore.Function)
    assert f(*targs) == 10
    # The same function, called from C++.
    assert testing.apply(f, *targs) == 10
    assert unique_name in tilecore.list_global_func_names()


def test_register_func_without_a_name():
    @tilecore.register_func
    def pytest_unnamed_func(x):
        return x * 2

    try:
        assert tilecore.get_global_func("pytest_unnamed_func")(21) == 42
        assert pytest_unnamed_func(1) == 2  # the decorator returns the Python function
    finally:
        tilecore.remove_global_func("pytest_unnamed_func")


def test_register_func_override(unique_name):
    tilecore.register_func(unique_name, lambda: 1)
    with pytest.raises(tilecore.error.ValueError):
        tilecore.register_func(unique_name, lambda: 2)
    assert tilecore.get_global_func(unique_name)() == 1
    tilecore.register_func(unique_name, lambda: 3, override=True)
    assert tilecore.get_global_func(unique_name)() == 3


def test_remove_and_allow_missing(unique_name):
    tilecore.register_func(unique_name, lambda: None)
    assert tilecore.remove_global_func(unique_name) is True
    assert tilecore.remove_global_func(unique_name) is False
    assert tilecore.get_global_func(unique_name, allow_missing=True) is None


def test_function_as_argument():
    # The seed's callhello: C++ receives a Python function and calls it.
    seen = []
    testing.apply(lambda msg: seen.append(msg), "hello world")
    assert seen == ["hello world"]


def test_callback_with_node_returns_node(unique_name):
    x = tilecore.convert([10])

    def test(y):
        assert y.same_as(x)
        return y

    f2 = tilecore.convert(test)

    @tilecore.register_func(unique_name)
    def my_callback_with_node(y, f):
        assert y == x
        return f(y)

    f = tilecore.get_global_func(unique_name)
    y = f(x, f2)
    assert y.same_as(x) and y[0] == 10


def test_closure_returned_across_the_boundary():
    def addy(y):
        def add(x):
            return tilecore.convert(x + y)

        return add

    myf = tilecore.convert(addy)
    f = myf(10)
    assert isinstance(f, tilecore.Function)
    assert f(11) == 21
    assert testing.apply(testing.apply(myf, 1), 2) == 3


def test_python_hook_called_by_cpp_during_an_operation():
    # C++ (testing.call_n) calls a Python hook for every step of its loop.
    steps = []
    testing.call_n(lambda i: steps.append(i), 5)
    assert steps == [0, 1, 2, 3, 4]


def test_echo_identity_and_scalars():
    obj = tilecore.convert([1, 2])
    assert testing.echo(obj) is obj
    plain = object()
    assert testing.echo(plain) is plain  # travels as an opaque Python object
    for v in [0, -1, 1.5, True, False, None, "", "x", "a longer string", b"raw", "\u00e9\u4e2d"]:
        assert testing.echo(v) == v
        assert type(testing.echo(v)) is type(v)


def test_int64_limits_and_numpy_scalars():
    maxint = (1 << 63) - 1
    minint = -(1 << 63)
    assert testing.echo(maxint) == maxint
    assert testing.echo(minint) == minint
    assert testing.echo(np.int64(maxint)) == maxint
    assert testing.echo(np.int32(-5)) == -5
    assert testing.echo(np.float32(0.5)) == 0.5
    assert testing.echo(np.float64(0.25)) == 0.25
    assert testing.echo(np.bool_(True)) is True
    with pytest.raises(OverflowError, match="argument 0.*does not fit in int64"):
        testing.echo(maxint + 1)


def test_str_with_embedded_nul_round_trips():
    assert testing.echo("a\0b") == "a\0b"


def test_bytearray_argument():
    a = bytearray("hello", encoding="ascii")

    def myfunc(ss):
        assert ss == a

    f = tilecore.convert(myfunc)
    f(a)
    assert testing.apply(f, a) is None


def test_empty_tuple():
    def myfunc(ss):
        assert tuple(ss) == ()

    x = tilecore.convert(())
    assert isinstance(x, tilecore.Array) and len(x) == 0
    tilecore.convert(myfunc)(x)


def test_many_arguments_beyond_the_stack_buffer():
    args = list(range(40)) + ["s"] * 5
    assert testing.apply(lambda *a: list(a), *args) == args
    assert testing.apply(lambda *a: len(a), *args) == len(args)


def test_call_in_thread_from_cpp():
    main = threading.get_ident()
    seen = []

    def cb(x):
        seen.append(threading.get_ident())
        return x + 1

    assert testing.apply_in_thread(cb, 41) == 42
    assert seen and seen[0] != main


def test_keyword_arguments_are_rejected():
    with pytest.raises(TypeError, match="positional"):
        testing.echo(x=1)


def test_function_repr_and_name():
    f = tilecore.get_global_func("testing.echo")
    assert f.name == "testing.echo"
    assert "testing.echo" in repr(f)


def test_function_constructor_wraps_callable():
    f = tilecore.Function(lambda a, b: a * b)
    assert f(6, 7) == 42
    assert tilecore.Function(f) is f
    with pytest.raises(TypeError):
        tilecore.Function(3)

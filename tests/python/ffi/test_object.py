"""Objects: reflection attributes, identity, registration of classes, references."""
import gc

import pytest

import tilecore
from tilecore import testing


@pytest.fixture
def obj():
    return testing.make_test_object(3, "name", [1, 2])


def test_fields_read_as_attributes(obj):
    assert obj.type_key == "testing.TestObject"
    assert obj.value == 3 and obj.name == "name" and obj.payload == [1, 2]
    assert {"value", "name", "payload"} <= set(dir(obj))


def test_missing_attribute_names_type_and_field(obj):
    with pytest.raises(AttributeError, match="'testing.TestObject' object has no attribute 'nosuch'"):
        obj.nosuch
    assert not hasattr(obj, "nosuch")


def test_writable_and_read_only_fields(obj):
    obj.value = 11
    assert obj.value == 11
    with pytest.raises(AttributeError, match="read-only"):
        obj.name = "other"
    with pytest.raises(TypeError):
        obj.value = "not an int"


def test_repr_uses_reflection(obj):
    text = repr(obj)
    assert "testing.TestObject" in text and "value=3" in text


def test_equality_and_hash_are_identity():
    a = testing.make_test_object(1, "x", None)
    b = testing.make_test_object(1, "x", None)
    assert a != b
    again = testing.apply(lambda: a)  # a second Python wrapper of the same C++ object
    assert again == a and hash(again) == hash(a)
    assert len({a, again, b}) == 2


def test_register_object_maps_type_key_to_class():
    @tilecore.register_object("testing.TestObject")
    class TestObject(tilecore.Object):
        __slots__ = ()

        def doubled(self):
            return self.value * 2

    try:
        o = testing.make_test_object(4, "n", None)
        assert type(o) is TestObject
        assert o.doubled() == 8
        assert o.value == 4
    finally:
        tilecore.register_object("testing.TestObject")(tilecore.Object)
    assert type(testing.make_test_object(1, "n", None)) is tilecore.Object


def test_register_object_rejects_non_objects():
    with pytest.raises(TypeError):
        tilecore.register_object("testing.TestObject")(int)


def test_object_use_count_and_move():
    # The seed's rvalue-reference scenario.
    def callback(x, expected_count):
        assert expected_count == testing.object_use_count(x)
        return x

    f = tilecore.convert(callback)

    x = testing.make_test_var("x")
    assert testing.object_use_count(x) == 1
    f(x, 2)  # x's wrapper + the callback's argument
    y = f(x._move(), 1)  # the callback took the moved reference over
    assert x.handle.value is None
    assert y.handle.value is not None and y.name == "x"
    with pytest.raises(ValueError):
        x._move()

    x = testing.make_test_var("x")
    y = f(x, 2)
    assert y is x  # an argument that comes back is the same Python object
    z = f(y._move(), 1)
    assert x.handle.value is None and z.handle.value is not None


def test_moved_reference_through_cpp_stays_valid():
    # testing.apply builds a new argument array: the callback must not steal, and the
    # reference stays alive for the whole call.
    x = testing.make_test_var("x")
    out = testing.apply(lambda v: testing.object_use_count(v), x._move())
    assert out >= 2
    gc.collect()


def test_moved_reference_passed_twice_is_an_error():
    x = testing.make_test_var("x")
    moved = x._move()
    testing.echo(moved)
    with pytest.raises(ValueError, match="only once"):
        testing.echo(moved)


def test_empty_object_is_none_when_passed():
    x = testing.make_test_var("x")
    x._move()
    assert testing.echo(x) is None
    assert "empty" in repr(x)


def test_init_handle_by_constructor():
    class Var(tilecore.Object):
        def __init__(self, name):
            self._init_handle_by_constructor(tilecore.get_global_func("testing.make_test_var"), name)

    v = Var("q")
    assert v.name == "q" and v.type_key == "testing.TestVar"

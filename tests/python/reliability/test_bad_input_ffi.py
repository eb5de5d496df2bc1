"""Bad input at the FFI: None and emptied handles for object parameters, array sizes that
overflow, read-only buffers, deep nesting and deep Python -> C++ -> Python recursion.
Each test runs its reproducer in a child process (reliability_helpers.py), so a crash
fails the test instead of ending the run."""
import pytest

from reliability_helpers import expect_error, run_isolated


@pytest.mark.parametrize("call", [
    "tilecore.build(None)",
    "tilecore.transform.Simplify()(None)",
    "tilecore.transform.render_pass_timing(None)",
    "tilecore.transform.const_int_bound(None)",
    "ir.IRModule.from_function(None)",
    "tilecore.get_global_func('sim.Config')(None)",
    "tilecore.get_global_func('runtime.ModuleKind')(None)",
    "tilecore.get_global_func('arch.ProgramToBytes')(None)",
    "tilecore.get_global_func('ffi.NDArrayCopyFromTo')(None, None)",
])
def test_none_for_an_object_parameter_is_a_type_error(call):
    # C1: the typed argument conversion refuses None for every object-typed parameter.
    expect_error(call, "TypeError", "None")


def test_none_arrays_for_a_kernel_are_a_type_error():
    expect_error("""
        m = tilecore.build(add_kernel(), 'npu')
        m['add'](None, None, None)
    """, "TypeError", "argument #0", "array", "None")


def test_moved_array_passed_again_is_refused():
    expect_error("""
        m = tilecore.build(add_kernel(), 'npu')
        a = tilecore.nd.array(np.ones(256, 'int32'))
        m['add'](a._move(), a, a)
    """, "TypeError", "argument #1", "None")


@pytest.mark.parametrize("call,word", [
    ("tilecore.transform.Sequential([None])(add_kernel())", "Array"),
    ("tilecore.build(ir.IRModule({'a': None}))", "Map"),
    ("tilecore.build(add_kernel().with_body(None))", "None"),
])
def test_none_inside_containers_and_bodies_is_refused(call, word):
    expect_error(call, "TypeError", word)


@pytest.mark.parametrize("call,func,expected", [
    ("tilecore.testing.apply(None)", "testing.apply", "Function"),
    ("tilecore.testing.apply_in_thread(None)", "testing.apply_in_thread", "Function"),
    ("tilecore.get_global_func('runtime.CModuleCreate')('', b'', None)", "runtime.CModuleCreate", "Array"),
])
def test_packed_functions_refuse_none_with_a_named_error(call, func, expected):
    # C1: a packed body's args[i].cast<T>() names the argument, the function and T.
    expect_error(call, "TypeError", "argument #", func, expected, "None")


def test_optional_parameters_still_take_none():
    outcome = run_isolated("""
        RESULT = tilecore.transform.PassContext(config=None, instruments=None) is not None
    """)
    outcome.check_alive()
    assert outcome.data == {"status": "ok", "result": "True"}, outcome.describe()


def test_module_import_of_none_is_refused():
    expect_error("""
        m = tilecore.build(add_kernel(), 'npu')
        m.import_module(None)
    """, "TypeError", "None")


def test_empty_module_handle_is_refused():
    expect_error("""
        from tilecore.runtime import Module
        Module.__new__(Module).kind
    """, "TypeError", "None")


def test_nd_empty_byte_size_overflow():
    # C6: the byte size is checked, never wrapped to a small buffer.
    expect_error("x = tilecore.nd.empty((2**61 - 1,), 'int64')", "ValueError", "2^63 bytes")
    expect_error("x = tilecore.nd.empty((2**21, 2**21, 2**22), 'int8')", "ValueError", "2^63 bytes")


def test_python_cpp_python_recursion_is_a_recursion_error():
    # C9: the bridge checks the C stack before calling back into Python.
    expect_error("""
        sys.setrecursionlimit(5000)
        def rec(n):
            return tilecore.testing.apply(rec, n + 1)
        rec(0)
    """, "RecursionError", "recursion", timeout=60)


def test_freeing_a_deeply_nested_array_does_not_overflow_the_stack():
    # C7: objects are freed iteratively.
    out = run_isolated("""
        x = tilecore.convert([])
        for i in range(300000):
            x = tilecore.testing.echo([x])
        del x
        RESULT = 'freed'
    """)
    assert out.expect_ok() == "'freed'"


def test_copy_into_read_only_bytes_is_refused():
    # S2: the DLPack read-only flag (numpy's writeable flag) is honoured.
    expect_error("""
        b = b"hello world, immutable!!"
        try:
            tilecore.nd.from_dlpack(np.frombuffer(b, 'uint8')).copyfrom(np.zeros(len(b), 'uint8'))
        finally:
            assert b == b"hello world, immutable!!", b
    """, "ValueError", "read-only")


@pytest.mark.parametrize("call", ["tilecore.npu(2**32)", "tilecore.cpu(2**31)", "tilecore.cpu(-2**31 - 1)"])
def test_device_ids_are_not_narrowed(call):
    # S7
    expect_error(call, "OverflowError", "32 bits")


def test_npu_configure_device_id_is_not_narrowed():
    expect_error("tilecore.runtime.npu_configure(2**32, 'npu -cores=2')", "ValueError", "does not exist")


@pytest.mark.parametrize("name", ["ffi.ArraySize", "ffi.MapSize", "ffi.MapItems"])
def test_raw_container_functions_check_their_argument_count(name):
    # M1
    expect_error(f"tilecore.get_global_func({name!r})()", "TypeError", name, "takes 1 argument, got 0")


def test_numpy_complex_is_not_taken_as_its_real_part():
    # S15
    out = run_isolated("RESULT = tilecore.testing.echo(np.complex128(1 + 2j))")
    assert out.expect_ok() in ("np.complex128(1+2j)", "(1+2j)")


def test_nd_array_keeps_zero_dim_shape():
    # S16
    out = run_isolated("RESULT = tilecore.nd.array(np.array(5)).shape")
    assert out.expect_ok() == "()"


def test_structural_mismatch_text_separates_words():
    # M13
    expect_error("tilecore.assert_structural_equal(tilecore.convert([1]), tilecore.convert([2]))",
                       "ValueError", "lhs root[0] vs rhs root[0]")


@pytest.mark.parametrize("call", ["len(tilecore.Array())", "tilecore.NDArray().shape",
                                  "a = tilecore.convert([1]); a._move(); len(a)"])
def test_empty_handles_say_so(call):
    # M8
    expect_error(call, "ValueError", "empty", "moved or never created")


def test_loading_another_copy_of_libtilecore_is_refused(tmp_path):
    # M4: a second copy would register into a second type table; refused before it runs.
    # The library already loaded (the same file) is a no-op.
    out = run_isolated("""
        import glob, os, shutil
        import tilecore.config
        lib = tilecore.config.get_library_path()
        tilecore.load_library(lib)
        copy = os.path.join(os.environ['COPY_DIR'], 'libtilecore_copy.so')
        shutil.copy(lib, copy)
        tilecore.load_library(copy)
    """, env={"COPY_DIR": str(tmp_path)})
    out.expect("ValueError", "another copy of libtilecore")


def test_python_objects_are_named_and_keyed_by_identity():
    # M6: an opaque Python object is "Python object" in messages, and the same object is
    # the same map key however often it crosses.
    expect_error("tilecore.save_json(object())", "TypeError", "`Python object`")
    out = run_isolated("""
        k = object()
        m = tilecore.convert({k: 1})
        RESULT = (m[k], object() in m)
    """)
    assert out.expect_ok() == repr((1, False))


@pytest.mark.parametrize("dtype", ["int3", "int8x4", "float8"])
def test_numpy_of_a_dtype_numpy_lacks_is_named(dtype):
    # M9
    expect_error(f"tilecore.nd.empty((8,), {dtype!r}).numpy()", "TypeError", dtype, "no numpy equivalent")

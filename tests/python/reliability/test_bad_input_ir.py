"""Bad input at the IR: JSON with null object fields, deep expression trees, and the
simplifier's constant folding of the divisions that trap on the host."""
import pytest

from reliability_helpers import expect_error, run_isolated

_MUTATE = """
import json
d = json.loads(tilecore.save_json(add_kernel()))
nodes = d["nodes"]
none = next(i for i, n in enumerate(nodes) if n["type"] == "None")
def first(t):
    return next(n for n in nodes if n["type"] == t)
"""


@pytest.mark.parametrize("mutation,field", [
    ('nodes[d["root"]]["data"]["body"] = none', "body"),
    ('first("ir.BufferStore")["data"]["buffer"] = none', "buffer"),
    ('first("ir.BufferStore")["data"]["value"] = none', "value"),
    ('first("ir.BufferLoad")["data"]["buffer"] = none', "buffer"),
    ('first("ir.For")["data"]["loop_var"] = none', "loop_var"),
    ('first("ir.For")["data"]["body"] = none', "body"),
    ('first("ir.Add")["data"]["a"] = none', "a"),
    ('first("ir.Buffer")["data"]["elem_offset"] = none', "elem_offset"),
])
def test_load_json_refuses_null_object_fields(mutation, field):
    # C2: the field setters refuse None unless the field may be None.
    expect_error(_MUTATE + mutation + "\ntilecore.build(tilecore.load_json(json.dumps(d)))",
                 "TypeError", f"field `{field}`", "must not be None")


def test_load_json_keeps_fields_that_may_be_none():
    out = run_isolated("""
        ib = ir.IRBuilder("k"); A = ib.buffer_param("A", (4,), "int32")
        with ib.if_scope(A[0] > 0):
            A[1] = 1
        f = ib.get()
        g = tilecore.load_json(tilecore.save_json(f))
        tilecore.assert_structural_equal(f, g)
        RESULT = 'ok'
    """)
    assert out.expect_ok() == "'ok'"


@pytest.mark.parametrize("use", [
    "tilecore.build(ib.get(), 'npu')",
    "ir.script(e)",
    "tilecore.transform.simplify_expr(e)",
])
def test_deep_expression_is_a_value_error(use):
    # C7: recursive walks check the C stack and name the depth. 200,000 levels exceed any
    # stack the tests run with (8 MiB; 64 MiB under the sanitizers, where 20,000 fit).
    expect_error(f"""
        ib = ir.IRBuilder('k'); A = ib.buffer_param('A', (4,), 'int32')
        e = A[0]
        for _ in range(200000):
            e = e + 1
        A[1] = e
        {use}
    """, "ValueError", "nested too deeply", "depth")


def test_freeing_a_deep_expression_does_not_overflow_the_stack():
    out = run_isolated("""
        e = ir.IntImm('int32', 0)
        for _ in range(1000000):
            e = ir.Add(e, ir.IntImm('int32', 1))
        del e
        RESULT = 'freed'
    """, timeout=300)
    assert out.expect_ok() == "'freed'"


@pytest.mark.parametrize("op,expected", [("FloorDiv", -2**63), ("Mod", 0), ("FloorMod", 0), ("Div", -2**63)])
def test_int64_min_by_minus_one_folds_as_tc1_defines(op, expected):
    # C4(a): INT64_MIN / -1 wraps to INT64_MIN (remainder 0), as TC1 defines it; no SIGFPE.
    out = run_isolated(f"""
        e = tilecore.transform.simplify_expr(ir.{op}(ir.IntImm('int64', -2**63), ir.IntImm('int64', -1)))
        RESULT = e.value
    """)
    assert out.expect_ok() == repr(expected)


def test_hash_of_a_shared_graph_is_linear():
    # H3: 40 levels of [x, x] (2^40 paths) hash, and print (cut), in bounded time.
    out = run_isolated("""
        import json, time
        doc = json.dumps({'root': 40, 'nodes': [{'type': 'int', 'data': 1}] +
                          [{'type': 'ffi.Array', 'data': [i, i]} for i in range(40)]})
        x = tilecore.load_json(doc)
        t = time.time()
        h = tilecore.structural_hash(x)
        text = tilecore.get_global_func('ffi.Repr')(x)
        RESULT = (time.time() - t < 20, text.endswith('(truncated)'))
    """, timeout=120)
    assert out.expect_ok() == repr((True, True))


def test_shared_array_hash_matches_an_unshared_copy():
    # Memoisation must not change hashes: a DAG hashes as the tree it unfolds to.
    out = run_isolated("""
        a = tilecore.convert([1, 2]); shared = tilecore.convert([a, a])
        copies = tilecore.convert([[1, 2], [1, 2]])
        v = ir.Var('v', 'int32'); e = v + 1
        f1 = ir.Add(e, e); f2 = ir.Add(v + 1, v + 1)
        RESULT = (tilecore.structural_hash(shared) == tilecore.structural_hash(copies),
                  tilecore.structural_hash(f1) == tilecore.structural_hash(f2))
    """)
    assert out.expect_ok() == repr((True, True))


def test_script_of_a_shared_expression_is_capped():
    # H3: e = e + e forty times prints as 2^40 terms: refused by size, quickly.
    expect_error("""
        ib = ir.IRBuilder('k'); A = ib.buffer_param('A', (4,), 'int32')
        e = A[0]
        for _ in range(40):
            e = e + e
        ir.script(e)
    """, "ValueError", "exceeds", timeout=120)


@pytest.mark.parametrize("stmt,words", [
    ("A[0] = 1.5", ["float literal 1.5", "int32"]),
    ("A[0] = ir.FloatImm('float32', 1.0)", ["float32"]),
    ("with ib.for_range(0, 4.5):\n            pass", ["int", "float"]),
    ("ir.decl_buffer((4,), 'int32', 'b')[1.5]", ["int", "float"]),
])
def test_builder_has_no_implicit_conversions(stmt, words):
    # S9
    expect_error(f"""
        ib = ir.IRBuilder('k'); A = ib.buffer_param('A', (4,), 'int32')
        {stmt}
    """, "TypeError", *words)


def test_builder_still_takes_python_ints_for_float_buffers():
    out = run_isolated("""
        ib = ir.IRBuilder('k'); A = ib.buffer_param('A', (4,), 'float32')
        A[0] = 2
        A[1] = 0.5
        RESULT = 'ok'
    """)
    assert out.expect_ok() == "'ok'"


@pytest.mark.parametrize("mutation,words", [
    ('next(n for n in nodes if n["type"] == "str" and n["data"] == "global")["data"] = "no_such_scope"',
     ["scope"]),
    ('nodes[first("ir.IntImm")["data"]["value"]]["data"] = 2**62', ["IntImm"]),
])
def test_load_json_runs_the_constructors_checks(mutation, words):
    # S10
    expect_error(_MUTATE + mutation + "\ntilecore.load_json(json.dumps(d))", "Error", "LoadJSON", *words)


@pytest.mark.parametrize("call,exc,words", [
    ("tilecore.transform.prim_func_pass(lambda f, m, c: None, name='nothing')(add_kernel())",
     "TypeError", ["pass `nothing`", "returned `None`", "ir.PrimFunc"]),
    ("b = ir.GraphBuilder('m'); b.output(b.input('x', (4,), 'float32'))\n"
     "tilecore.transform.graph_pass(lambda g, c: 3, name='three')(b.build())",
     "TypeError", ["pass `three`", "returned `int`", "ir.Graph"]),
    ("tilecore.transform.PassContext(config={'no.such.option': 1})", "ValueError", ["unknown option", "no.such.option"]),
    ("tilecore.transform.PassContext(config={'transform.UnrollLoop.max_extent': 'many'})", "TypeError",
     ["max_extent", "must be int"]),
    ("i = ir.Var('i', 'int32'); tilecore.transform.const_int_bound(i + 1, {i: (0, -5)})", "ValueError",
     ["range of `i`", "extent -5"]),
    ("ir.FloatImm('float16', 1e10)", "ValueError", ["does not fit float16"]),
    ("ir.FloatImm('float32', 1e39)", "ValueError", ["does not fit float32"]),
])
def test_other_silent_acceptances_are_named_errors(call, exc, words):
    # S18: a pass that returns nothing, a misspelt option, an empty range, a constant beyond its dtype.
    expect_error(call, exc, *words)


def test_float_limits_still_fit_and_folding_overflows_to_inf():
    # S18: the largest finite value and inf are kept; folded arithmetic rounds as IEEE does.
    out = run_isolated("""
        a = ir.FloatImm('float16', 65504.0); b = ir.FloatImm('float16', float('inf'))
        c = tilecore.transform.simplify_expr(ir.FloatImm('float16', 60000.0) * ir.FloatImm('float16', 2.0))
        with tilecore.transform.PassContext(config={'transform.VectorizeLoop.strict': True}):
            pass
        RESULT = (a.value, b.value, c.value)
    """)
    assert out.expect_ok() == repr((65504.0, float("inf"), float("inf")))


def test_python_repr_of_a_shared_array_is_bounded():
    # H3: Python's repr of 40 levels of [x, x] builds each distinct Array's text once and
    # cuts it, instead of printing 2^40 leaves; a plain container prints as before.
    out = run_isolated("""
        import json, time
        doc = json.dumps({'root': 40, 'nodes': [{'type': 'int', 'data': 1}] +
                          [{'type': 'ffi.Array', 'data': [i, i]} for i in range(40)]})
        x = tilecore.load_json(doc)
        t = time.time()
        text = repr(x)
        RESULT = (time.time() - t < 20, text.endswith('(truncated)'), len(text) < 2 << 20,
                  repr(tilecore.convert([1, [2, 'a'], {'k': [3]}])))
    """, timeout=120)
    assert out.expect_ok() == repr((True, True, True, "[1, [2, 'a'], {'k': [3]}]"))


@pytest.mark.parametrize("use", ["tilecore.build(ib.get(), 'npu')", "tilecore.build(ib.get(), 'c')",
                                 "tilecore.transform.simplify_expr(e)"])
def test_build_and_simplify_of_a_shared_expression_are_linear(use):
    # H3: e = e + e forty times (2^40 paths, 41 nodes) builds and simplifies at once; the
    # analyses that walk it (post-order visits, substitution, the simplifier, the written-
    # buffer scan of the kernel-call convention) visit each node once.
    out = run_isolated(f"""
        import time
        ib = ir.IRBuilder('k'); A = ib.buffer_param('A', (4,), 'int32')
        e = A[0]
        for _ in range(40):
            e = e + e
        A[1] = e
        t = time.time()
        {use}
        RESULT = time.time() - t < 20
    """, timeout=120)
    assert out.expect_ok() == "True"


@pytest.mark.parametrize("target", ["npu", "c"])
def test_shared_expression_computes_the_unshared_value(target):
    # Visiting a shared node once must not change the result: 3 * 2^5 through five e + e.
    out = run_isolated(f"""
        ib = ir.IRBuilder('k'); A = ib.buffer_param('A', (4,), 'int32')
        e = A[0]
        for _ in range(5):
            e = e + e
        A[1] = e
        x = np.array([3, 0, 0, 0], 'int32')
        tilecore.build(ib.get(), {target!r})['k'](x)
        RESULT = x.tolist()
    """)
    assert out.expect_ok() == repr([3, 3 * 2 ** 5, 0, 0])


@pytest.mark.parametrize("element,type_key", [('next(i for i, n in enumerate(nodes) if n["type"] == "int")', "int"),
                                              ("none", "None")])
def test_load_json_names_the_refused_element(element, type_key):
    # M12 (and C2's params[0] -> null): the element, not the container, is named.
    expect_error(_MUTATE + f"""
root = nodes[d["root"]]["data"]
nodes[root["params"]]["data"][0] = {element}
tilecore.load_json(json.dumps(d))
""", "TypeError", "field `params[0]`", f"cannot be `{type_key}`", "Array[ir.Var]")


@pytest.mark.parametrize("call,words", [
    ("tilecore.transform.Sequential([None])",
     ["argument #0", "Array[transform.Pass]", "element [0] is `None`, not `transform.Pass`"]),
    ("tilecore.transform.Sequential([tilecore.transform.Simplify(), 3])",
     ["element [1] is `int`, not `transform.Pass`"]),
    ("ir.IRModule({'a': None})", ["Map[str, ir.PrimFunc]", 'element ["a"] is `None`, not `ir.PrimFunc`']),
    ("ir.IRModule({5: add_kernel()})", ["key 5 is `int`, not `str`"]),
])
def test_function_arguments_name_the_refused_element(call, words):
    # M12: a container argument refused for one element names it (index or key, its type),
    # for every registered function, as load_json does for a field.
    expect_error(call, "TypeError", *words)


def test_visitor_and_mutator_passes_of_a_shared_expression_are_linear():
    # H3: the IR's visitor and mutator themselves handle a shared node once per expression.
    # PlanLocalMemory walks the store with the base visitor, FlattenBuffer rewrites its
    # loads with the base mutator; e = e + e sixty times is 2^60 paths, 61 nodes.
    out = run_isolated("""
        import time
        ib = ir.IRBuilder('k'); A = ib.buffer_param('A', (2, 2), 'int32')
        ib.allocate('int32', (4,), scope='local')
        e = A[0, 1]
        for _ in range(60):
            e = e + e
        A[1, 1] = e
        mod = ir.IRModule.from_function(ib.get())
        t = time.time()
        tilecore.transform.PlanLocalMemory()(mod)
        flat = tilecore.transform.FlattenBuffer()(mod)['k']
        fast = time.time() - t < 20
        s = flat.body
        while not hasattr(s, 'value'):
            s = s.body if hasattr(s, 'body') else s.seq[-1]
        v, shared = s.value, True
        for _ in range(60):
            shared = shared and v.a.same_as(v.b)
            v = v.a
        RESULT = (fast, shared, str(v))
    """, timeout=120)
    assert out.expect_ok() == repr((True, True, "A[0 * 2 + 1]"))

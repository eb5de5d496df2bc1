"""Property tests (Hypothesis) for the IR builders, JSON round trips and the assembler:
random valid inputs round-trip; random invalid ones raise named errors, never crash.
The crash-prone property (mutated JSON) runs in a child process."""

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import tilecore  # noqa: E402
import tilecore.transform  # noqa: E402,F401
from tilecore import arch, ir  # noqa: E402
from reliability_helpers import run_isolated  # noqa: E402

_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---- IR: random integer expressions ------------------------------------------------------
_OPS = {
    "Add": lambda a, b: a + b,
    "Sub": lambda a, b: a - b,
    "Mul": lambda a, b: a * b,
    "Min": min,
    "Max": max,
}


def _wrap32(v):
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


# Leaves are constants or the one variable x, drawn often enough that most trees hold it.
_const_leaf = st.integers(-1000, 1000).map(lambda v: ("const", v))
_leaf = st.one_of(_const_leaf, st.just(("var",)))
_const_expr = st.recursive(_const_leaf, lambda kids: st.tuples(st.sampled_from(sorted(_OPS)), kids, kids), max_leaves=24)
_expr = st.recursive(_leaf, lambda kids: st.tuples(st.sampled_from(sorted(_OPS)), kids, kids), max_leaves=24)


def _build(t, var):
    if t[0] == "var":
        return var
    if t[0] == "const":
        return ir.IntImm("int32", t[1])
    return getattr(ir, t[0])(_build(t[1], var), _build(t[2], var))


def _value(t, x):
    """The expression's value computed independently in Python (int32 wrap-around)."""
    if t[0] == "var":
        return x
    if t[0] == "const":
        return t[1]
    return _wrap32(_OPS[t[0]](_value(t[1], x), _value(t[2], x)))


@_SETTINGS
@given(_expr)
def test_ir_expressions_round_trip_through_json(t):
    e = _build(t, ir.Var("x", "int32"))
    again = tilecore.load_json(tilecore.save_json(e))
    # Loading makes a new x, a different free variable: equal only with free variables mapped.
    tilecore.assert_structural_equal(e, again, map_free_vars=True)
    assert tilecore.structural_hash(e, map_free_vars=True) == tilecore.structural_hash(again, map_free_vars=True)


@_SETTINGS
@given(_const_expr)
def test_constant_folding_matches_python(t):
    # No variable: the simplifier folds the tree to one constant, which must be the value
    # Python computes with int32 wrap-around.
    folded = tilecore.transform.simplify_expr(_build(t, None))
    assert isinstance(folded, ir.IntImm)
    assert folded.value == _value(t, None)


_CMP = {"LT": lambda a, b: a < b, "LE": lambda a, b: a <= b, "GT": lambda a, b: a > b, "GE": lambda a, b: a >= b}


@_SETTINGS
@given(st.sampled_from(["uint8", "uint16"]), st.sampled_from(sorted(_CMP)), st.integers(0, 65535), st.integers(0, 65535))
def test_unsigned_comparisons_fold_only_when_true_for_every_value(dtype, cmp, c1, c2):
    # Unsigned arithmetic wraps, so (x + c1) < (x + c2) depends on x: a comparison the
    # simplifier folds must hold for every x, computed with numpy's wrap-around.
    import numpy as np

    np_t = np.dtype(dtype).type
    bits = np.iinfo(np_t).bits
    c1, c2 = c1 % (1 << bits), c2 % (1 << bits)
    x = ir.Var("x", dtype)
    e = getattr(ir, cmp)(ir.Add(x, ir.IntImm(dtype, c1)), ir.Add(x, ir.IntImm(dtype, c2)))
    folded = tilecore.transform.simplify_expr(e)
    if isinstance(folded, ir.IntImm):
        xs = np.arange(1 << bits, dtype=np.int64)
        expect = _CMP[cmp](((xs + c1) % (1 << bits)), ((xs + c2) % (1 << bits)))
        assert bool(expect.all()) if folded.value else not expect.any(), (cmp, c1, c2, folded)


@_SETTINGS
@given(st.lists(st.tuples(st.integers(1, 64), st.sampled_from(["int8", "int32", "float32"])), min_size=1, max_size=4))
def test_builder_kernels_round_trip_through_json(params):
    ib = ir.IRBuilder("k")
    bufs = [ib.buffer_param(f"p{i}", (n,), dt) for i, (n, dt) in enumerate(params)]
    n0 = params[0][0]
    with ib.for_range(0, n0, name="i") as i:
        bufs[0][i] = bufs[0][i] + bufs[0][i]
    f = ib.get()
    tilecore.assert_structural_equal(f, tilecore.load_json(tilecore.save_json(f)))


def test_mutated_json_loads_or_raises_a_named_error():
    # Random single-field mutations of a saved kernel: each either loads (and then prints
    # and hashes) or raises a tilecore error; the child process must not die.
    out = run_isolated("""
        from hypothesis import given, settings, HealthCheck, strategies as st
        from tilecore.error import TilecoreError
        doc = json.loads(tilecore.save_json(add_kernel(8)))
        nodes = doc["nodes"]
        fields = [(i, k) for i, n in enumerate(nodes) if isinstance(n.get("data"), dict) for k in n["data"]]
        values = st.one_of(st.none(), st.integers(-2, len(nodes) + 2), st.text(max_size=4),
                           st.lists(st.integers(0, len(nodes) - 1), max_size=3))
        @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        @given(st.sampled_from(fields), values)
        def check(field, value):
            d = json.loads(json.dumps(doc))
            i, k = field
            d["nodes"][i]["data"][k] = value
            try:
                f = tilecore.load_json(json.dumps(d))
            except (TilecoreError, TypeError, ValueError):
                return
            ir.script(f) if isinstance(f, ir.PrimFunc) else repr(f)
            tilecore.structural_hash(f)
        check()
        RESULT = "ok"
    """, timeout=600)
    assert out.expect_ok() == "'ok'"


# ---- the assembler -----------------------------------------------------------------------
_reg = st.integers(1, 31).map(lambda r: f"x{r}")
_imm = st.integers(-2**31, 2**31 - 1)
_inst = st.one_of(
    st.tuples(_reg, _imm).map(lambda t: f"li {t[0]}, {t[1]}"),
    st.tuples(st.sampled_from(["add", "sub", "and", "or", "xor"]), _reg, _reg, _reg).map(
        lambda t: f"{t[0]} {t[1]}, {t[2]}, {t[3]}"),
)
_data = st.lists(st.integers(-128, 255), max_size=16)


@_SETTINGS
@given(st.lists(_inst, max_size=30), _data)
def test_valid_assembly_round_trips(insts, data):
    text = "\n".join(insts + ["halt"])
    if data:
        text = ".data ddr, 0\n.byte " + ", ".join(map(str, data)) + "\n.text\n" + text
    p = arch.assemble(text)
    assert arch.assemble(arch.disassemble(p)) == p
    assert arch.Program.from_bytes(p.to_bytes()) == p


@_SETTINGS
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=80))
def test_random_text_assembles_or_raises_asm_error(text):
    try:
        arch.assemble(text)
    except arch.AsmError:
        pass


@_SETTINGS
@given(st.integers(256, 2**40) | st.integers(-2**40, -129))
def test_data_that_does_not_fit_is_an_asm_error(v):
    with pytest.raises(arch.AsmError, match="does not fit .byte"):
        arch.assemble(f".data ddr, 0\n.byte {v}\n.text\nhalt")


@_SETTINGS
@given(st.binary(max_size=200))
def test_random_program_images_load_or_raise_format_error(data):
    try:
        arch.Program.from_bytes(b"TC1P" + data)
    except arch.ProgramFormatError:
        pass

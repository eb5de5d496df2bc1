"""The compiler's own `tc_*` node attributes (include/tilecore/compiler/compiler_attrs.h;
docs/compiler.md, "Compiler attributes"): every name the sources use is declared, the docs'
table is the registry, an undeclared or mistyped one is refused with its name, and a model
compiled in f32 and in int8 (its passes setting them) still matches ONNX Runtime."""
import io
import pathlib
import re
import tokenize

import numpy as np
import pytest
from onnx import helper

import tilecore
from tilecore import compiler

from test_driver import make_model, ort_run

ROOT = pathlib.Path(__file__).resolve().parents[3]
T = compiler.TensorSpec
RNG = np.random.default_rng(5)


def randn(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


# ---- every name the sources use is declared --------------------------------------------

CXX_LITERAL = re.compile(r'"(tc_[A-Za-z0-9_.]+)"')
NAME = re.compile(r"tc_[A-Za-z0-9_.]+")
TABLE_SOURCE = "compiler_attrs.cc"  # (the table itself)


def _python_names(text):
    """The `tc_` names of a Python source: string literals that are a name (an f-string's
    leading part: a prefix such as ``tc_lut.``), and keyword arguments (``dict(a, tc_x=1)``)."""
    names, depth, prev = set(), 0, None
    fstring = getattr(tokenize, "FSTRING_START", None)  # (Python 3.12: an f-string is tokens)
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if fstring is not None and prev is not None and prev.type == fstring and tok.type == tokenize.FSTRING_MIDDLE:
            if re.fullmatch(r"tc_[A-Za-z0-9_]+\.", tok.string):
                names.add(tok.string)
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
        elif tok.type == tokenize.STRING:
            m = re.fullmatch(r"([A-Za-z]*)(['\"])(.*)\2", tok.string, re.S)
            if m and "b" not in m.group(1).lower():
                body = m.group(3)
                if "f" in m.group(1).lower():
                    body = body.split("{", 1)[0]
                    if re.fullmatch(r"tc_[A-Za-z0-9_]+\.", body):
                        names.add(body)
                elif NAME.fullmatch(body):
                    names.add(body)
        elif tok.type == tokenize.OP and tok.string == "=" and depth > 0 and prev is not None \
                and prev.type == tokenize.NAME and prev.string.startswith("tc_"):
            names.add(prev.string)
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
            prev = tok
    return names


def source_names():
    """name -> [files] of the `tc_` names in src/compiler, src/transform and
    python/tilecore/compiler (a name ending in "." is a prefix: "tc_context." + k)."""
    found = {}
    for d in ("src/compiler", "src/transform"):
        for p in sorted((ROOT / d).rglob("*")):
            if p.suffix in (".cc", ".h") and p.name != TABLE_SOURCE:
                for n in CXX_LITERAL.findall(p.read_text(encoding="utf-8")):
                    found.setdefault(n, []).append(str(p.relative_to(ROOT)))
    for p in sorted((ROOT / "python/tilecore/compiler").glob("*.py")):
        for n in _python_names(p.read_text(encoding="utf-8")):
            found.setdefault(n, []).append(str(p.relative_to(ROOT)))
    return found


def declared(name, table):
    """Whether the registry declares ``name``: itself, a prefix of declared names, or a member
    of a family (``tc_lut.<attr>``: ONNX attributes as they are, `tc_` ones declared)."""
    if name in table and table[name][0] != "attrs":
        return True
    if name.endswith("."):
        return name + "*" in table or any(k.startswith(name) for k in table)
    for family, (kind, _) in table.items():
        if kind == "attrs" and name.startswith(family[:-1]):
            inner = name[len(family) - 1:]
            return not inner.startswith("tc_") or declared(inner, table)
    return False


def test_the_scanner_sees_the_names():
    got = source_names()
    assert len(got) >= 50
    assert {"tc_precision", "tc_lut.", "tc_context.", "tc_softmax.tc_y_scale", "tc_in_l2"} <= set(got)
    # keyword arguments (fuse_epilogue.py: dict(nd.attrs, tc_channel_scale=1)) and f-strings too
    assert _python_names('a = dict(b, tc_foo=1, **{f"tc_bar.{k}": v})\ntc_local = 3\nc = "tc_".startswith(d)\n'
                         'e = f"tc_no {x}" + "tc_baz" + """tc_doc"""\n') == {"tc_foo", "tc_bar.", "tc_baz"}


def test_every_name_in_the_sources_is_declared():
    table = compiler.compiler_attrs()
    missing = {n: files for n, files in source_names().items() if not declared(n, table)}
    assert not missing, "tc_ attributes used but not declared in src/compiler/compiler_attrs.cc:\n" + "\n".join(
        f"  {n}: {', '.join(sorted(set(f)))}" for n, f in sorted(missing.items()))


def test_every_declared_attribute_has_a_reader():
    # (a declaration nothing reads is a stale one; a family is read by its prefix)
    cxx = set()
    for p in (ROOT / "src/compiler").rglob("*"):
        if p.suffix in (".cc", ".h") and p.name != TABLE_SOURCE:
            cxx.update(CXX_LITERAL.findall(p.read_text(encoding="utf-8")))
    for name, (kind, doc) in compiler.compiler_attrs().items():
        assert (name[:-1] if kind == "attrs" else name) in cxx, name


def test_the_table_is_well_formed():
    table = compiler.compiler_attrs()
    assert len(table) >= 50
    for name, (kind, doc) in table.items():
        assert re.fullmatch(r"tc_[a-z0-9_]+(\.(tc_[a-z0-9_]+|\*))?", name), name
        assert kind in ("int", "float", "string", "ints", "attrs"), (name, kind)
        assert (kind == "attrs") == name.endswith(".*"), name
        assert doc and "|" not in doc and "\n" not in doc, name
        assert "Set by" in doc or "Set and read with" in doc, name


# ---- the docs' table is the registry ----------------------------------------------------


def docs_table():
    text = (ROOT / "docs" / "compiler.md").read_text(encoding="utf-8")
    section = text.split("\n### Compiler attributes\n", 1)[1].split("\n### ", 1)[0]
    rows = [line.split(" | ") for line in section.splitlines() if line.startswith("| `")]
    assert all(len(r) == 3 for r in rows), [r for r in rows if len(r) != 3]
    return [(name.strip("| `"), kind.strip(), doc.rstrip(" |").strip()) for name, kind, doc in rows]


def test_the_docs_table_is_the_registry():
    want = [(name, kind, doc) for name, (kind, doc) in compiler.compiler_attrs().items()]
    assert docs_table() == want


def test_the_docs_section_sits_between_adding_a_strategy_and_custom_kernels():
    text = (ROOT / "docs" / "compiler.md").read_text(encoding="utf-8")
    a, b, c = (text.index(h) for h in ("### Adding a strategy", "### Compiler attributes", "### Custom kernels"))
    assert a < b < c
    assert "An undeclared or mistyped `tc_` attribute is refused with a named error" in " ".join(text.split())


# ---- refused with its name --------------------------------------------------------------

CONV = [T((1, 3, 8, 8), "float32"), T((4, 3, 3, 3), "float32")]
CONV_OUT = [T((1, 4, 6, 6), "float32")]
MM = [T((4, 8), "float32"), T((8, 3), "float32")]


def test_a_misspelt_attribute_is_refused_naming_it():
    why = compiler.HasStrategy("Conv", {"tc_activaton": "Relu"}, CONV)
    assert why.startswith("Conv: unknown compiler attribute `tc_activaton` (declared: tc_precision, ")
    assert why.endswith("; did you mean `tc_activation`?")
    assert compiler.HasStrategy("Conv", {"tc_activation": "Relu"}, CONV) == ""
    with pytest.raises(ValueError, match=r"LowerOp\(Conv\): Conv: unknown compiler attribute `tc_activaton`"):
        compiler.LowerOp("Conv", {"tc_activaton": "Relu"}, CONV, CONV_OUT)
    # nothing near: no guess
    assert "did you mean" not in compiler.HasStrategy("MatMul", {"tc_zzzzzzzz": 1}, MM)


def test_a_mistyped_attribute_is_refused_naming_it():
    assert compiler.HasStrategy("Conv", {"tc_x_scale": "0.1"}, CONV) == (
        "Conv: attribute `tc_x_scale` is a string; it is a float")
    with pytest.raises(ValueError, match=r"LowerOp\(Conv\): Conv: attribute `tc_x_scale` is a string; it is a float"):
        compiler.LowerOp("Conv", {"tc_x_scale": "0.1"}, CONV, CONV_OUT)
    cases = [({"tc_y_heads": 2.5}, "attribute `tc_y_heads` is a float; it is an int"),
             ({"tc_activation": 1}, "attribute `tc_activation` is an int; it is a string"),
             ({"tc_in_l2": 0}, "attribute `tc_in_l2` is an int; it is a list of ints"),
             ({"tc_in_l2": [0, 1.5]}, "attribute `tc_in_l2` is a list holding a float; it is a list of ints"),
             ({"tc_x_scale": None}, "attribute `tc_x_scale` is None; it is a float"),
             ({"tc_lut": "Sigmoid", "tc_lut.tc_x_scale": "x"}, "attribute `tc_lut.tc_x_scale` is a string"),
             ({"tc_softmax.tc_y_scale": [1.0]}, "attribute `tc_softmax.tc_y_scale` is a list; it is a float")]
    for attrs, want in cases:
        why = compiler.HasStrategy("MatMul", attrs, MM)
        assert why.startswith("MatMul: " + want), (attrs, why)


def test_the_kinds_take_what_the_readers_take():
    # AttrFloat takes an int, AttrInt a bool, AttrInts an empty list; a tuple is a list
    ok = [{"tc_out_scale": 1}, {"tc_residual": True}, {"tc_in_l2": []}, {"tc_in_l2": (0,)}]
    for attrs in ok:
        assert "compiler attribute" not in compiler.HasStrategy("Conv", attrs, CONV)
        assert "attribute `tc_" not in compiler.HasStrategy("Conv", attrs, CONV)
    # straight through the FFI (no Python-side conversion): a bool stays a bool
    assert "attribute `tc_" not in str(compiler._ffi.HasStrategy("Conv", {"tc_residual": True, "tc_x_scale": True},
                                                                   CONV))
    assert "is a bool; it is a string" in str(compiler._ffi.HasStrategy("Conv", {"tc_activation": True}, CONV))


def test_what_is_not_a_compiler_attribute_passes():
    # ONNX attributes and the importer's are the strategy's to judge; a fused table op's own
    # attributes ride under tc_lut. as they are
    assert compiler.HasStrategy("MatMul", {"_opset": 17, "_anything": None, "alpha": "x"}, MM) == ""
    attrs = {"tc_lut.approximate": "tanh", "tc_lut._opset": 20, "tc_lut.alpha": None}
    assert "attribute" not in compiler.HasStrategy("MatMul", attrs, MM)
    assert "unknown compiler attribute `tc_lut.tc_bogus`" in compiler.HasStrategy("MatMul", {"tc_lut.tc_bogus": 1}, MM)
    assert "unknown compiler attribute `tc_context.tc_bogus`" in compiler.HasStrategy(
        "MatMul", {"tc_context.tc_bogus": 1}, MM)


def test_the_host_side_refuses_them_too():
    idx = [T((6,), "int32")]
    good = {"tc_what": "node `g` (Gather): input 1 `i`", "tc_bounds": [4], "tc_axes": [0]}
    assert compiler.HasHostKernel("CheckIndices", good, idx) == ""
    assert compiler.LowerHostOp("CheckIndices", good, idx, []) is not None
    bad = dict(good, tc_bonds=[4])
    assert "CheckIndices: unknown compiler attribute `tc_bonds`" in compiler.HasHostKernel("CheckIndices", bad, idx)
    assert "did you mean `tc_bounds`?" in compiler.HasHostKernel("CheckIndices", bad, idx)
    with pytest.raises(ValueError, match=r"LowerHostOp\(CheckIndices\): CheckIndices: unknown compiler attribute "
                                         r"`tc_bonds`"):
        compiler.LowerHostOp("CheckIndices", bad, idx, [])
    with pytest.raises(ValueError, match=r"LowerHostOp\(CheckIndices\): CheckIndices: attribute `tc_bounds` is a "
                                         r"string; it is a list of ints"):
        compiler.LowerHostOp("CheckIndices", dict(good, tc_bounds="4"), idx, [])
    # the host's fallback to an npu strategy: the same check first
    assert "unknown compiler attribute `tc_activaton`" in compiler.HasHostKernel(
        "Conv", {"tc_activaton": "Relu"}, [T((1, 3, 8, 8), "float64"), T((4, 3, 3, 3), "float64")])


def test_the_python_registry():
    table = compiler.compiler_attrs()
    assert table["tc_x_scale"][0] == "float" and table["tc_x_zero_point"][0] == "int"
    assert table["tc_precision"][0] == "string" and table["tc_in_l2"][0] == "ints"
    assert table["tc_lut.*"][0] == "attrs"
    assert "compiler_attrs" in compiler.__all__


# ---- a correct compile still works -----------------------------------------------------


def conv_relu_model():
    """Conv + Relu twice: the Relus fuse into the Convs (tc_activation) and, in int8, the
    value between the Convs is stored int8 (tc_y_scale, tc_y_zero_point)."""
    w1, b1 = randn(16, 8, 3, 3, scale=0.2), randn(16, scale=0.1)
    w2, b2 = randn(8, 16, 3, 3, scale=0.15), randn(8, scale=0.1)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["y"], name="relu2")]
    return make_model(nodes, [("x", [1, 8, 12, 12], np.float32)], ["y"],
                      [("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2)])


@pytest.fixture
def seen_attrs(monkeypatch):
    """The `tc_` attributes every HasStrategy call of the compile gets, and its refusals."""
    seen, refused = set(), []
    has = compiler.HasStrategy

    def watching(op, attrs, inputs):
        why = has(op, attrs, inputs)
        seen.update(k for k in (attrs or {}) if str(k).startswith("tc_"))
        if "compiler attribute" in why or "attribute `tc_" in why:
            refused.append(why)
        return why

    monkeypatch.setattr(compiler, "HasStrategy", watching)
    return seen, refused


def test_conv_relu_f32_matches_onnxruntime(seen_attrs):
    seen, refused = seen_attrs
    model = conv_relu_model()
    rep = {}
    exe = tilecore.compile(model, report=rep)
    assert rep["fused"] == [{"node": "conv1", "fused": ["relu1"]}, {"node": "conv2", "fused": ["relu2"]}]
    assert "tc_activation" in seen and not refused
    for _ in range(2):
        x = randn(1, 8, 12, 12)
        np.testing.assert_allclose(exe.run({"x": x})["y"], ort_run(model, {"x": x})["y"], rtol=1e-4, atol=1e-4)


def test_conv_relu_int8_matches_onnxruntime(seen_attrs):
    seen, refused = seen_attrs
    model = conv_relu_model()
    samples = {"x": np.stack([randn(1, 8, 12, 12) for _ in range(4)])}
    rep = {}
    exe = tilecore.compile(model, precision="int8", calib_samples=samples, report=rep)
    assert rep["precision"]["assigned"] == {"conv1": "int8", "conv2": "int8"}, rep["precision"]
    assert {"tc_precision", "tc_x_scale", "tc_activation", "tc_y_scale", "tc_y_zero_point"} <= seen, seen
    assert not refused, refused
    table = compiler.compiler_attrs()
    assert all(declared(k, table) for k in seen), seen
    for x in [samples["x"][0], randn(1, 8, 12, 12)]:
        y, ref = exe.run({"x": x})["y"], ort_run(model, {"x": x})["y"]
        cos = float((y * ref).sum() / np.linalg.norm(y) / np.linalg.norm(ref))
        assert cos > 0.999, cos
        assert np.abs(y - ref).max() < 0.05 * np.abs(ref).max()

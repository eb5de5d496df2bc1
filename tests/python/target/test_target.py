"""Target kinds, target strings and the codegen lookup."""
import pytest

import tilecore
from tilecore import target as tgt


def test_parse_fills_defaults():
    t = tilecore.Target("npu -model=tc1 -cores=4")
    assert t.kind == "npu" and t.options["cores"] == 4 and t.options["model"] == "tc1"
    assert t.device_type == 12
    assert str(t) == "npu -model=tc1 -cores=4 -l1=1048576 -device=0"
    assert tilecore.Target("npu") == tilecore.Target("npu -cores=4")
    c = tilecore.Target("c")
    assert c.kind == "c" and c.options["opt"] == 2 and c.device_type == 1
    assert tilecore.Target("c -keep")["keep"] is True
    assert tilecore.Target(t) is t


def test_sizes_and_spaces():
    t = tilecore.Target("  npu   -l1=512KiB   -cores=2 ")
    assert t["l1"] == 512 * 1024 and t["cores"] == 2


@pytest.mark.parametrize(
    "spec, words",
    [
        ("npu -cores=99", "-cores=99: expected an integer in 1..16"),
        ("npu -cores=four", "-cores=four"),
        ("npu -model=tc2", "one of tc1"),
        ("npu -frobs=1", "unknown option -frobs (valid: -model, -cores, -l1, -device)"),
        ("npu cores=4", "expected an option like -name=value"),
        ("npu -cores", "needs a value"),
        ("c -opt=7", "-opt=7: expected an integer in 0..3"),
        ("c -keep=maybe", "a flag"),
        ("gpu", "unknown target kind `gpu` (known:"),
        ("", "empty target string"),
        # F20: which of the two would win is a guess
        ("npu -cores=1 -cores=2", "option -cores given twice (`-cores=1` and `-cores=2`)"),
        ("c -keep -keep=false", "option -keep given twice"),
    ],
)
def test_errors_name_the_option(spec, words):
    with pytest.raises(ValueError) as info:
        tilecore.Target(spec)
    assert words in str(info.value)
    assert isinstance(info.value, tilecore.TilecoreError)


@pytest.mark.npu
def test_kind_registry_and_options():
    assert {"npu", "c"} <= set(tgt.list_kinds())
    names = [o["name"] for o in tgt.kind_options("npu")]
    assert names == ["model", "cores", "l1", "device"]
    with pytest.raises(TypeError):
        tilecore.Target(42)


def test_register_kind_from_python_and_missing_codegen():
    tgt.register_kind("toy", 1, [{"name": "lanes", "type": "int", "default": 8, "min": 1, "max": 64},
                                 {"name": "flavour", "type": "str", "choices": ["a", "b"], "default": "a"}],
                      override=True)
    t = tilecore.Target("toy -lanes=16")
    assert t["lanes"] == 16 and t["flavour"] == "a"
    with pytest.raises(ValueError, match="valid: -lanes, -flavour"):
        tilecore.Target("toy -width=3")
    from tilecore import ir

    ib = ir.IRBuilder("k")
    a = ib.buffer_param("A", (4,), "int32")
    a[0] = 1
    with pytest.raises(ValueError, match="no code generator for target kind `toy`"):
        tilecore.build(ib.get(), target="toy")
    with pytest.raises(ValueError, match="unknown type"):
        tgt.register_kind("bad", 1, [{"name": "x", "type": "float"}])

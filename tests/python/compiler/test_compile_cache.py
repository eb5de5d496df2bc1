"""The compile cache (compiler/compile_cache.py, docs/compiler.md "Compile cache"): a compile
with the same model bytes and options loads the executable a compile stored (byte for byte
the executable compiling gives, its outputs ONNX Runtime's); any change of the model, its
external data or an option that changes the executable compiles again; a damaged entry is
never used; what cannot be keyed compiles as always and says why; the folder is trimmed to
its limit, the entries used least recently first."""
import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from tilecore import cli, compiler
from tilecore.compiler import compile_cache
from tilecore.ffi import fingerprint

pytestmark = pytest.mark.npu

TARGET = "npu -cores=2"


def conv_model(seed=0):
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((8, 4, 3, 3)) * 0.3).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    g = helper.make_graph(nodes, "cc", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


X = np.random.default_rng(5).standard_normal((1, 4, 8, 8)).astype(np.float32)


def ort_out(model_or_path):
    data = model_or_path if isinstance(model_or_path, (str, os.PathLike)) else model_or_path.SerializeToString()
    sess = ort.InferenceSession(os.fspath(data) if isinstance(data, os.PathLike) else data,
                                providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": X})[0]


def compile_with(path, cache, **kw):
    rep = {}
    exe = compiler.compile(path, target=TARGET, report=rep, cache_dir=cache, **kw)
    return exe, rep


def test_hit_is_the_compiled_executable(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(conv_model(), path)
    first, rep1 = compile_with(path, tmp_path / "cache")
    assert rep1["compile_cache"]["hit"] is False and rep1["compile_cache"]["not_kept"] == ["npu_funcs"]
    second, rep2 = compile_with(path, tmp_path / "cache")
    assert rep2["compile_cache"] == {"folder": str(tmp_path / "cache"), "hit": True, "key": rep1["compile_cache"]["key"]}
    # the report as the compile left it (its figures), without the compiler's objects
    assert rep2["steps"] == rep1["steps"] and rep2["placement"] == rep1["placement"] and "npu_funcs" not in rep2
    plain = compiler.compile(path, target=TARGET)
    assert second.to_bytes() == plain.to_bytes()
    np.testing.assert_allclose(second.run({"x": X})["y"], ort_out(path), rtol=1e-4, atol=1e-5)


def test_what_changes_the_executable_changes_the_key(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(conv_model(), path)
    cache = tmp_path / "cache"
    samples = {"x": np.random.default_rng(1).standard_normal((4, 1, 4, 8, 8)).astype(np.float32)}
    keys = set()
    for kw in ({}, {"precision": "f16"}, {"group": False}, {"precision": "int8", "calib_samples": samples},
               {"precision": "int8", "calib_samples": {"x": samples["x"] * 2}}, {"qtable": {"conv": "bf16"}}):
        _, rep = compile_with(path, cache, **kw)
        assert rep["compile_cache"]["hit"] is False, kw
        keys.add(rep["compile_cache"]["key"])
    assert len(keys) == 6
    # another weight: another key, and the executable computes the new model
    onnx.save(conv_model(seed=1), path)
    exe, rep = compile_with(path, cache)
    assert rep["compile_cache"]["hit"] is False and rep["compile_cache"]["key"] not in keys
    np.testing.assert_allclose(exe.run({"x": X})["y"], ort_out(path), rtol=1e-4, atol=1e-5)
    # the same model given as bytes or as a ModelProto keys as its bytes do (no file)
    _, rep_b = compile_with(onnx.load(path).SerializeToString(), cache)
    _, rep_p = compile_with(onnx.load(path), cache)
    assert rep_b["compile_cache"]["hit"] is False and rep_p["compile_cache"]["hit"] is True


def test_external_data_is_part_of_the_key(tmp_path):
    model = conv_model()
    path = tmp_path / "m.onnx"
    onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True, location="m.data",
              size_threshold=0)
    exe, rep = compile_with(path, tmp_path / "cache")
    assert rep["compile_cache"]["hit"] is False
    assert compile_with(path, tmp_path / "cache")[1]["compile_cache"]["hit"] is True
    # the weights change in the data file only: the .onnx bytes are the same, the key is not
    onnx.save(conv_model(seed=2), path, save_as_external_data=True, all_tensors_to_one_file=True,
              location="m.data", size_threshold=0)
    exe, rep = compile_with(path, tmp_path / "cache")
    assert rep["compile_cache"]["hit"] is False
    np.testing.assert_allclose(exe.run({"x": X})["y"], ort_out(path), rtol=1e-4, atol=1e-5)


def test_damaged_entry_is_compiled_again(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(conv_model(), path)
    _, rep = compile_with(path, tmp_path / "cache")
    k = rep["compile_cache"]["key"]
    tcx = tmp_path / "cache" / k[:2] / f"{k}.tcx"
    data = bytearray(tcx.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one bit pattern of the executable changed on disk
    tcx.write_bytes(bytes(data))
    exe, rep = compile_with(path, tmp_path / "cache")
    assert rep["compile_cache"]["hit"] is False  # removed and compiled again
    np.testing.assert_allclose(exe.run({"x": X})["y"], ort_out(path), rtol=1e-4, atol=1e-5)
    assert compile_with(path, tmp_path / "cache")[1]["compile_cache"]["hit"] is True
    (tmp_path / "cache" / k[:2] / f"{k}.json").write_text("{not json")
    assert compile_with(path, tmp_path / "cache")[1]["compile_cache"]["hit"] is False


def test_another_executable_under_the_key_is_not_used(tmp_path):
    """A sound .tcx that is not the entry's (another model's, copied over it) is refused by the
    header the entry recorded, not loaded as this model's."""
    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    onnx.save(conv_model(seed=1), a)
    onnx.save(conv_model(seed=2), b)
    ka = compile_with(a, tmp_path / "cache")[1]["compile_cache"]["key"]
    kb = compile_with(b, tmp_path / "cache")[1]["compile_cache"]["key"]
    tcx = lambda k: tmp_path / "cache" / k[:2] / f"{k}.tcx"  # noqa: E731
    tcx(ka).write_bytes(tcx(kb).read_bytes())
    exe, rep = compile_with(a, tmp_path / "cache")
    assert rep["compile_cache"]["hit"] is False  # removed and compiled again
    np.testing.assert_allclose(exe.run({"x": X})["y"], ort_out(a), rtol=1e-4, atol=1e-5)


def test_what_cannot_be_keyed_compiles_and_says_why(tmp_path, monkeypatch):
    from tilecore import frontend

    graph = frontend.from_onnx(conv_model())
    exe, rep = compile_with(graph, tmp_path / "cache")
    assert rep["compile_cache"]["hit"] is False and "Graph object" in rep["compile_cache"]["reason"]
    np.testing.assert_allclose(exe.run({"x": X})["y"], ort_out(conv_model()), rtol=1e-4, atol=1e-5)
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.tcx"))
    from tilecore.compiler.pipeline import PipelineOptions

    path = tmp_path / "m.onnx"
    onnx.save(conv_model(), path)
    _, rep = compile_with(path, tmp_path / "cache", pipeline=PipelineOptions(dump_dir=tmp_path / "dump"))
    assert "prints, dumps or verifies" in rep["compile_cache"]["reason"]
    assert any(n.endswith(".graph") for n in os.listdir(tmp_path / "dump"))
    # a custom kernel for an op of the model: not keyed; for an op it does not have: keyed
    from tilecore.compiler import custom_kernel

    # (a built-in op's: any model, the passes make built-in ops the model does not have)
    monkeypatch.setattr(custom_kernel, "registered", lambda: {"Gemm"})
    _, rep = compile_with(path, tmp_path / "cache")
    assert "registered for the built-in op Gemm" in rep["compile_cache"]["reason"]
    monkeypatch.setattr(custom_kernel, "registered", lambda: {"example::SquarePlus"})
    _, rep = compile_with(path, tmp_path / "cache")
    assert "reason" not in rep["compile_cache"] and rep["compile_cache"]["key"]
    with_op = conv_model()
    with_op.graph.node.append(helper.make_node("SquarePlus", ["y"], ["z"], domain="example", name="sq"))
    assert "registered for example::SquarePlus, an op of the model" in str(
        pytest.raises(compile_cache.Uncacheable, compile_cache.key, with_op, {}).value)
    # the pass context the compile runs under is part of the key; one with instruments is not keyed
    from tilecore import transform

    k = compile_cache.key(conv_model(), {})
    with transform.PassContext(config={"transform.UnrollLoop.auto_max_extent": 2}):
        assert compile_cache.key(conv_model(), {}) != k
    with transform.PassContext(opt_level=1):
        assert compile_cache.key(conv_model(), {}) != k
    with transform.PassContext(instruments=[transform.PassTimingInstrument()]):
        _, rep = compile_with(path, tmp_path / "cache")
    assert "instruments" in rep["compile_cache"]["reason"]


def test_environment_folder_and_nested_compiles(tmp_path, monkeypatch):
    path = tmp_path / "m.onnx"
    onnx.save(conv_model(), path)
    monkeypatch.setenv("TILECORE_COMPILE_CACHE", str(tmp_path / "env"))
    rep = {}
    compiler.compile(path, target=TARGET, report=rep, verify=True)  # verify compiles the model node by node too
    assert rep["compile_cache"]["folder"] == str(tmp_path / "env") and "verify" in rep
    assert len(list((tmp_path / "env").rglob("*.tcx"))) == 1  # only the executable asked for
    rep2 = {}
    compiler.compile(path, target=TARGET, report=rep2, verify=True)
    assert rep2["compile_cache"]["hit"] is True and rep2["verify"] == rep["verify"]


def test_trim_removes_least_recently_used(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    paths = []
    for seed in range(3):
        p = tmp_path / f"m{seed}.onnx"
        onnx.save(conv_model(seed), p)
        paths.append(p)
    keys = [compile_with(p, cache)[1]["compile_cache"]["key"] for p in paths[:2]]
    one = max(sum(f.stat().st_size for f in cache.rglob(f"{k}.*")) for k in keys) * 11 // 10  # an entry's bytes
    os.utime(cache / keys[1][:2] / f"{keys[1]}.json", (1, 1))  # m1 used long ago
    assert compile_with(paths[0], cache)[1]["compile_cache"]["hit"] is True  # m0 used now
    monkeypatch.setenv("TILECORE_COMPILE_CACHE_BYTES", str(2 * one))
    compile_with(paths[2], cache)  # the third entry: the least recently used goes
    left = {f.name.split(".")[0] for f in cache.rglob("*.json")}
    assert keys[0] in left and keys[1] not in left and len(left) == 2
    monkeypatch.setenv("TILECORE_COMPILE_CACHE_BYTES", "lots")
    with pytest.raises(ValueError, match="TILECORE_COMPILE_CACHE_BYTES"):
        compile_with(paths[1], cache)


def test_key_covers_the_compiler(monkeypatch):
    model = conv_model()
    k = compile_cache.key(model, {"precision": "f32"})
    assert k == compile_cache.key(model, {"precision": "f32"}) and len(k) == 64
    assert len(fingerprint.package_fingerprint()) == 64
    # the library the compiler runs in is part of it (a development build's libtilecore lives
    # outside the extension's folder)
    assert any(os.path.basename(p).startswith("libtilecore") for p in fingerprint._libraries())
    monkeypatch.setattr(fingerprint, "package_fingerprint", lambda: "0" * 64)  # another tilecore
    assert compile_cache.key(model, {"precision": "f32"}) != k
    with pytest.raises(compile_cache.Uncacheable, match="qtable"):
        compile_cache.key(model, {"qtable": object()})


def test_cli_cache_dir(tmp_path, capsys):
    path = tmp_path / "m.onnx"
    onnx.save(conv_model(), path)
    args = ["compile", str(path), "-o", str(tmp_path / "a.tcx"), "--target", TARGET, "--quiet",
            "--cache-dir", str(tmp_path / "cache")]
    assert cli.main(args) == 0
    assert "compile cache" not in capsys.readouterr().out
    args[3] = str(tmp_path / "b.tcx")
    assert cli.main(args) == 0
    assert "loaded from the compile cache" in capsys.readouterr().out
    assert (tmp_path / "a.tcx").read_bytes() == (tmp_path / "b.tcx").read_bytes()


def test_a_folder_that_cannot_hold_entries(tmp_path):
    # a file where the folder should be: the compile still gives its executable, the report says why
    path = tmp_path / "m.onnx"
    onnx.save(conv_model(), path)
    (tmp_path / "not_a_folder").write_text("x")
    exe, rep = compile_with(path, tmp_path / "not_a_folder")
    assert rep["compile_cache"]["hit"] is False and "not stored" in rep["compile_cache"]["reason"]
    np.testing.assert_allclose(exe.run({"x": X})["y"], ort_out(path), rtol=1e-4, atol=1e-5)

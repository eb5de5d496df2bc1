"""Bad input at the `.tcx` loader: crafted executables whose data flow the loader must refuse
(a step given a buffer smaller than its kernel addresses, an output or a read that nothing
writes, inputs sharing a buffer), files that are not regular files, device ids beyond 32 bits,
and saves that must not destroy the old file. The crafted files are edited field by field with
their checksums recomputed (tcx_edit), so only the loader's validation stands in the way."""
import os
import stat
import subprocess
import sys

import numpy as np
import pytest

import tcx_edit
from reliability_helpers import expect_error, run_isolated

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

import tilecore  # noqa: E402
from tilecore import runtime  # noqa: E402


def _conv_relu_fc():
    """x[1,3,8,8] -> Conv -> Relu -> Reshape -> MatMul -> Softmax, one step per node."""
    rng = np.random.default_rng(1)
    w = (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32)
    m = (rng.standard_normal((256, 10)) * 0.1).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Reshape", ["r", "shp"], ["f"], name="flat"),
             helper.make_node("MatMul", ["f", "m"], ["mm"], name="fc"),
             helper.make_node("Softmax", ["mm"], ["y"], name="sm", axis=-1)]
    inits = [helper.make_tensor("w", TensorProto.FLOAT, w.shape, w.ravel()),
             helper.make_tensor("m", TensorProto.FLOAT, m.shape, m.ravel()),
             helper.make_tensor("shp", TensorProto.INT64, [2], [1, 256])]
    graph = helper.make_graph(nodes, "conv_relu_fc",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model, rng.standard_normal((1, 3, 8, 8)).astype(np.float32), w, m


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("exe")
    model, x, w, m = _conv_relu_fc()
    path = str(folder / "m.tcx")
    tilecore.compile(model, fuse=False).save(path)
    np.savez(folder / "in.npz", x=x)
    return {"folder": folder, "path": path, "x": x, "w": w, "m": m}


def _crafted(built, name, change):
    out = str(built["folder"] / name)
    tcx_edit.edit(built["path"], out, change)
    return out


def _step(exe, op_type):
    return next(s for s in exe["steps"] if s["op_type"] == op_type)


def _buffer(exe, name):
    return [b["name"] for b in exe["buffers"]].index(name)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "tilecore", *args], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)


def test_the_unedited_executable_loads_and_matches_numpy(built):
    # The crafted files below differ from this one only in the field each test edits.
    exe = runtime.load_executable(built["path"])
    y = exe.run({"x": built["x"]})["y"]
    x, w = built["x"][0], built["w"]
    pad = np.pad(x, ((0, 0), (1, 1), (1, 1)))
    conv = np.zeros((4, 8, 8), np.float32)
    for i in range(8):
        for j in range(8):
            conv[:, i, j] = np.tensordot(w, pad[:, i:i + 3, j:j + 3], axes=3)
    logits = np.maximum(conv, 0).reshape(1, 256) @ built["m"]
    ref = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-6)


def test_a_step_given_a_buffer_smaller_than_its_kernel_addresses_is_refused_at_load(built):
    # F7: the Relu's output pointed at the 108-element weight buffer. Refused at load, so
    # run, tdb and check (which all load through it) refuse it alike.
    def change(exe):
        relu = _step(exe, "Relu")
        relu["args"][1] = _buffer(exe, "w")
    bad = _crafted(built, "relu_into_w.tcx", change)
    with pytest.raises(ValueError, match=r"step 1 `relu`: parameter `out0` .* needs 256 elements; "
                                         r"buffer \d+ `w` has 108"):
        runtime.load_executable(bad)
    inputs = str(built["folder"] / "in.npz")
    for args in (["run", bad, "--inputs", inputs], ["tdb", bad, "--inputs", inputs, "--do", "run"]):
        r = _cli(*args)
        assert r.returncode == 1, (args, r.stdout, r.stderr)
        assert "needs 256 elements" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_swapped_arguments_are_refused_at_load(built):
    # F7: the Conv given (w, x) for (x, w).
    def change(exe):
        conv = _step(exe, "Conv")
        conv["args"][0], conv["args"][1] = conv["args"][1], conv["args"][0]
    with pytest.raises(ValueError, match="step 0 `conv`: parameter .* needs 192 elements; .* `w` has 108"):
        runtime.load_executable(_crafted(built, "swapped.tcx", change))


def test_an_executable_without_steps_is_refused(built):
    # F8: its output would be whatever an earlier run left in device memory.
    def change(exe):
        exe["steps"] = []
    with pytest.raises(ValueError, match="output `y`: no input, constant or step writes buffer"):
        runtime.load_executable(_crafted(built, "no_steps.tcx", change))


def test_a_step_that_reads_a_buffer_nothing_wrote_is_refused(built):
    # F8: the Relu dropped, so the Reshape/MatMul reads a buffer no step fills.
    def change(exe):
        exe["steps"] = [s for s in exe["steps"] if s["op_type"] != "Relu"]
    with pytest.raises(ValueError, match="parameter `.*` reads buffer \\d+ `r`, which no input, "
                                         "constant or earlier step writes"):
        runtime.load_executable(_crafted(built, "no_relu.tcx", change))


def test_one_buffer_as_a_steps_input_and_output_is_refused(built):
    # F8: a Softmax computing in place would read what it has already overwritten.
    def change(exe):
        sm = _step(exe, "Softmax")
        sm["args"][1] = sm["args"][0]
    with pytest.raises(ValueError, match="`sm`: buffer \\d+ `mm` is both parameter `in0` and `out0`"):
        runtime.load_executable(_crafted(built, "in_place.tcx", change))


def test_a_step_writing_a_constant_is_refused(built):
    def change(exe):
        relu = _step(exe, "Relu")
        relu["args"][1] = _buffer(exe, "m")
        exe["buffers"][_buffer(exe, "m")]["shape"] = [256, 10]
    with pytest.raises(ValueError, match="writes the constant in buffer \\d+ `m`"):
        runtime.load_executable(_crafted(built, "write_constant.tcx", change))


def test_two_inputs_in_one_buffer_are_refused(built):
    # F9: loading the second input would overwrite the first.
    def change(exe):
        exe["inputs"].append({"name": "x2", "buffer": exe["inputs"][0]["buffer"]})
    with pytest.raises(ValueError, match="inputs `x` and `x2` share buffer 0"):
        runtime.load_executable(_crafted(built, "two_inputs.tcx", change))


def test_no_run_returns_another_runs_bytes(built):
    # F8: device memory is reused between runs; each run starts from zeros, so two
    # executables run one after the other give each its own answer.
    exe = runtime.load_executable(built["path"])
    first = exe.run({"x": built["x"]})["y"]
    again = runtime.load_executable(built["path"]).run({"x": np.zeros_like(built["x"])})["y"]
    np.testing.assert_allclose(again, np.full((1, 10), 0.1, np.float32), rtol=1e-5)
    assert not np.allclose(first, again)


@pytest.mark.parametrize("loader", ["tilecore.runtime.load_executable", "tilecore.runtime.load_module",
                                    "tilecore.load_library"])
def test_a_device_is_not_read_as_a_file(loader):
    # F14: /dev/zero streams forever; refused before a byte is read.
    expect_error(f"{loader}('/dev/zero')", "ValueError", "/dev/zero", "not a regular file", timeout=30)


def test_a_fifo_or_a_folder_is_not_read_as_an_executable(tmp_path):
    fifo = tmp_path / "fifo.tcx"
    os.mkfifo(fifo)
    expect_error(f"tilecore.runtime.load_executable({str(fifo)!r})", "ValueError", "not a regular file", timeout=30)
    expect_error(f"tilecore.runtime.load_executable({str(tmp_path)!r})", "ValueError", "not a regular file",
                 timeout=30)


def test_the_cli_refuses_a_device_as_the_executable(built):
    r = subprocess.run([sys.executable, "-m", "tilecore", "run", "/dev/zero", "--inputs",
                        str(built["folder"] / "in.npz")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "/dev/zero: not a regular file" in r.stderr, r.stderr


@pytest.mark.parametrize("device", [2**32, 2**40, -2**32, 2**63 - 1])
def test_a_device_id_beyond_32_bits_is_named_not_narrowed(built, device):
    # F16: 2^32 used to run on npu:0.
    exe = runtime.load_executable(built["path"])
    with pytest.raises(ValueError, match=f"npu:{device} does not exist"):
        exe.run({"x": built["x"]}, device=device)


def test_the_cli_names_the_device_id_as_given(built):
    r = _cli("run", built["path"], "--inputs", str(built["folder"] / "in.npz"), "--device", "99999999999")
    assert r.returncode == 1 and "npu:99999999999 does not exist" in r.stderr, r.stderr


def test_save_replaces_the_file_only_once_complete(built, tmp_path):
    # The new bytes go to a file beside the target, renamed over it: an interrupted save
    # leaves the old file, and a link is followed to the file it names.
    target = tmp_path / "out.tcx"
    target.write_bytes(b"old")
    os.chmod(target, 0o640)
    link = tmp_path / "link.tcx"
    link.symlink_to(target)
    inode = target.stat().st_ino
    exe = runtime.load_executable(built["path"])
    exe.save(str(link))
    assert link.is_symlink() and target.stat().st_ino != inode
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert target.read_bytes() == open(built["path"], "rb").read()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.tcx", "out.tcx"]


def test_a_failed_save_leaves_no_partial_file(built, tmp_path):
    exe = runtime.load_executable(built["path"])
    with pytest.raises(OSError):
        exe.save(str(tmp_path / "missing" / "out.tcx"))
    with pytest.raises(OSError, match="/dev/full"):
        exe.save("/dev/full")
    assert list(tmp_path.iterdir()) == []


def test_kernels_declare_the_buffers_they_only_read():
    # The loader's data-flow check rests on precise `written` flags: an elementwise kernel
    # reads its inputs and writes its output only.
    out = run_isolated("""
        m = tilecore.build(add_kernel(), 'npu')
        fn = next(f for f in m.info['functions'] if f['name'] == 'add')
        RESULT = [(p['name'], p['written']) for p in fn['params']]
    """)
    assert out.expect_ok() == repr([("A", False), ("B", False), ("C", True)])


def test_an_arena_larger_than_the_devices_ddr_is_named_before_anything_runs():
    # A model whose memory plan outgrows the simulated DDR (torchvision's vit_b_16 needs
    # 354 MB; npu devices start with 256 MiB) is told how to make room, not a MemoryError.
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "big",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1024, 1024])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1024, 1024])])
    exe = tilecore.compile(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))
    x = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
    device = 13
    try:
        runtime.npu_configure(device, "npu -cores=4 -ddr=4MiB")
        with pytest.raises(ValueError, match=r"arena of \d+ bytes does not fit the DDR of npu:13 \(4194304 bytes.*"
                                             r"npu_configure\(13, \"npu -ddr=1GiB\"\)"):
            exe.run({"x": x}, device=device)
        runtime.npu_configure(device, "npu -cores=4 -ddr=16MiB")
        np.testing.assert_array_equal(exe.run({"x": x}, device=device)["y"], np.maximum(x, 0))
    finally:
        runtime.npu_configure(device, "npu -cores=4")


def test_a_version_1_file_still_loads_runs_and_saves_as_version_1(built, tmp_path):
    # Version 1 (every buffer parameter marked written) predates the exact written flags:
    # it loads without the checks that need them and keeps its version when saved again.
    def change(exe):
        exe["version"] = 1
    old = _crafted(built, "version1.tcx", change)
    exe = runtime.load_executable(old)
    np.testing.assert_array_equal(exe.run({"x": built["x"]})["y"],
                                  runtime.load_executable(built["path"]).run({"x": built["x"]})["y"])
    exe.save(str(tmp_path / "again.tcx"))
    assert (tmp_path / "again.tcx").read_bytes() == open(old, "rb").read()
    fresh = runtime.load_executable(built["path"])
    fresh.save(str(tmp_path / "fresh.tcx"))
    assert tcx_edit.parse((tmp_path / "fresh.tcx").read_bytes())["version"] == 2

"""Bad input at the runtime: the kernel-call convention (sizes, dtypes, read-only arrays),
module import cycles and module files (checksums, counts, non-regular files, full disks)."""
import os

import pytest

from reliability_helpers import expect_error, run_isolated


@pytest.mark.parametrize("target", ["npu", "c"])
def test_too_small_array_is_refused_before_the_kernel_runs(target):
    # C5 / S1: sizes are checked against the buffer parameters, for every target.
    expect_error(f"""
        m = tilecore.build(add_kernel(), '{target}')
        c = np.zeros(4, 'int32')
        m['add'](np.ones(4, 'int32'), np.ones(4, 'int32'), c)
    """, "ValueError", "argument #0 (A)", "4 elements", "needs 256")


def test_too_small_device_array_does_not_overwrite_other_arrays():
    # S1: the check runs before anything is written to DDR.
    out = run_isolated("""
        m = tilecore.build(add_kernel(), 'npu')
        npu = tilecore.npu(0)
        a = tilecore.nd.array(np.ones(4, 'int32'), device=npu)
        c = tilecore.nd.array(np.zeros(4, 'int32'), device=npu)
        v = tilecore.nd.array(np.full(64, 7, 'int32'), device=npu)
        try:
            m['add'](a, a, c)
        except ValueError as e:
            assert 'elements' in str(e), e
        RESULT = v.numpy().tolist()
    """)
    assert out.expect_ok() == repr([7] * 64)


def test_zero_dim_array_is_refused():
    expect_error("""
        m = tilecore.build(add_kernel(), 'c')
        m['add'](np.array(1, 'int32'), np.ones(256, 'int32'), np.zeros(256, 'int32'))
    """, "ValueError", "1 elements", "needs 256")


@pytest.mark.parametrize("target", ["npu", "c"])
def test_read_only_output_is_refused(target):
    # S2: a buffer the kernel writes must be writable.
    expect_error(f"""
        m = tilecore.build(add_kernel(), '{target}')
        buf = bytes(1024)
        try:
            m['add'](np.ones(256, 'int32'), np.ones(256, 'int32'), np.frombuffer(buf, 'int32'))
        finally:
            assert buf == bytes(1024)
    """, "ValueError", "argument #2 (C)", "read-only")


def test_read_only_input_is_accepted():
    out = run_isolated("""
        m = tilecore.build(add_kernel(), 'npu')
        a = np.frombuffer(np.arange(256, dtype='int32').tobytes(), 'int32')
        c = np.zeros(256, 'int32')
        m['add'](a, a, c)
        RESULT = bool((c == 2 * np.arange(256)).all())
    """)
    assert out.expect_ok() == "True"


def test_import_cycle_is_refused():
    # C3
    expect_error("""
        m1 = tilecore.build(add_kernel(), 'npu'); m2 = tilecore.build(add_kernel(), 'npu')
        m1.import_module(m2)
        m2.import_module(m1)
    """, "ValueError", "cycle")


def test_importing_twice_saves_a_loadable_file(tmp_path):
    # S5: importing a module again changes nothing, so save and load agree.
    path = tmp_path / "dup.tcm"
    out = run_isolated(f"""
        m1 = tilecore.build(add_kernel(), 'npu'); m2 = tilecore.build(add_kernel(), 'npu')
        for _ in range(3):
            m1.import_module(m2)
        m1.save({str(path)!r})
        m = tilecore.runtime.load_module({str(path)!r})
        RESULT = len(m.imported_modules)
    """)
    assert out.expect_ok() == "1"


def _checksum(body):
    h = 0xcbf29ce484222325
    for c in body:
        h ^= c
        h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def _module_file(modules):
    """A module file written by hand: [(kind, payload, [imports])] (format version 2)."""
    import struct

    body = struct.pack("<I", len(modules))
    for kind, payload, imports in modules:
        body += struct.pack("<I", len(kind)) + kind + struct.pack("<I", len(payload)) + payload
        body += struct.pack("<I", len(imports)) + b"".join(struct.pack("<I", i) for i in imports)
    return b"TCMODULE" + struct.pack("<IQ", 2, _checksum(body)) + body


def test_import_cycle_in_a_file_is_refused(tmp_path):
    # C3: a hand-made file whose imports form a cycle.
    payload_path = tmp_path / "one.tcm"
    out = run_isolated("""
        m = tilecore.build(add_kernel(), 'npu')
        RESULT = bytes(tilecore.get_global_func('runtime.ModuleSaveToBytes')(m))
    """)
    data = eval(out.expect_ok())  # noqa: S307  (bytes repr written by the child)
    # The payload of the single module: after magic, version, checksum, count, kind.
    import struct

    off = 8 + 4 + 8 + 4
    klen = struct.unpack_from("<I", data, off)[0]
    off += 4 + klen
    plen = struct.unpack_from("<I", data, off)[0]
    payload = data[off + 4:off + 4 + plen]
    payload_path.write_bytes(_module_file([(b"npu", payload, [1]), (b"npu", payload, [0])]))
    expect_error(f"tilecore.runtime.load_module({str(payload_path)!r})['nosuch']", "ValueError", "cycle")


@pytest.mark.parametrize("target,offsets", [("npu", [100, 400, 681]), ("c", [100, 16640, 20000])])
def test_flipped_bit_in_a_module_file_is_refused(tmp_path, target, offsets):
    # C8 / S4: the checksum is verified before any payload is mapped or dlopen'ed.
    src = tmp_path / f"add_{target}.tcm"
    run_isolated(f"tilecore.build(add_kernel(), '{target}').save({str(src)!r})").expect_ok()
    data = src.read_bytes()
    for off in offsets:
        off = min(off, len(data) - 1)
        bad = bytearray(data)
        bad[off] ^= 0x80
        p = tmp_path / f"flip_{off}.tcm"
        p.write_bytes(bytes(bad))
        expect_error(f"tilecore.runtime.load_module({str(p)!r})", "ValueError", "checksum")


def test_truncated_count_is_checked_before_allocation(tmp_path):
    # H5: a count larger than the bytes left is refused before anything is allocated.
    import struct

    p = tmp_path / "count.tcm"
    p.write_bytes(_module_file([(b"npu", struct.pack("<I", 1 << 16), [])]))
    expect_error(f"tilecore.runtime.load_module({str(p)!r})", "ValueError", "count", "left",
                 mem_bytes=1 << 30)


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/null", "/"])
def test_non_regular_file_is_refused(path):
    expect_error(f"tilecore.runtime.load_module({path!r})", "ValueError", "not a regular file", timeout=30)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_save_to_a_full_disk_raises():
    # S3: the stream is flushed before its state is checked.
    expect_error("tilecore.build(add_kernel(), 'npu').save('/dev/full')", "OSError", "/dev/full")


def test_lookup_of_a_missing_name_through_a_diamond_of_imports():
    expect_error("""
        m1, m2, m3, m4 = (tilecore.build(add_kernel(), 'npu') for _ in range(4))
        m1.import_module(m2); m1.import_module(m3); m2.import_module(m4); m3.import_module(m4)
        m1['nosuch']
    """, "AttributeError", "no function")


def test_loader_that_returns_none_is_named(tmp_path):
    # S18: a module loader registered by the user that returns None.
    p = tmp_path / "m.tcm"
    expect_error(f"""
        tilecore.build(add_kernel(), 'npu').save({str(p)!r})
        tilecore.register_func('runtime.module.loadbinary_npu', lambda b: None, override=True)
        tilecore.runtime.load_module({str(p)!r})
    """, "ValueError", "loadbinary_npu returned `None`", "runtime.Module")


def test_device_with_too_little_l1_for_the_arguments_is_named():
    # M10: the argument block's fixed L1 address must exist on the configured device.
    expect_error("""
        tilecore.runtime.npu_configure(0, 'npu -cores=4 -l1=1KiB')
        tilecore.build(add_kernel(), 'npu')['add'](np.ones(256, 'int32'), np.ones(256, 'int32'),
                                                   np.zeros(256, 'int32'))
    """, "ValueError", "npu:0 has 1024 bytes of L1", "npu_configure")

"""tests/python/reliability/tcx_edit.py — reads and writes the `.tcx` format (versions 1 and 2
of docs/executable.md) field by field, so a test can build a crafted executable: an edited
file with its checksum recomputed, which only the loader's validation can refuse."""
import struct

_MAGIC = b"TCEXEC\0\0"
_HEADER = 32


def fnv1a64(data: bytes) -> int:
    """The payload checksum of a header with flags 0 (FNV-1a over the bytes)."""
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def word_checksum(payload: bytes) -> int:
    """The payload checksum of a header with flag 1, which tilecore writes (docs/executable.md,
    written from its description): FNV-1a over 64-bit words in four lanes, then folded."""
    mask, prime, basis = (1 << 64) - 1, 0x100000001B3, 0xCBF29CE484222325
    lanes = [basis ^ j for j in range(4)]
    whole = len(payload) // 32 * 32
    words = struct.unpack_from(f"<{whole // 8}Q", payload)
    for i, w in enumerate(words):
        lanes[i % 4] = ((lanes[i % 4] ^ w) * prime) & mask
    h = basis
    for x in [*lanes, *payload[whole:], len(payload)]:
        h = ((h ^ x) * prime) & mask
    return h


class _Reader:
    def __init__(self, data):
        self.data, self.pos = data, _HEADER

    def _unpack(self, fmt):
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return value

    def u32(self):
        return self._unpack("<I")

    def u64(self):
        return self._unpack("<Q")

    def i64(self):
        return self._unpack("<q")

    def blob(self):
        n = self.u32()
        value = self.data[self.pos:self.pos + n]
        self.pos += n
        return value

    def text(self):
        return self.blob().decode()


def parse(data: bytes) -> dict:
    """The fields of a `.tcx` file as plain dicts and lists (step `kind` as its number)."""
    r = _Reader(data)
    exe = {"version": struct.unpack_from("<I", data, 8)[0], "precision": r.text(), "modules": [r.blob() for _ in range(r.u32())], "arena": r.u64()}
    exe["buffers"] = []
    for _ in range(r.u32()):
        buf = {"name": r.text(), "offset": r.u64(), "size": r.u64(), "dtype": r.text()}
        buf["shape"] = [r.i64() for _ in range(r.u32())]
        exe["buffers"].append(buf)
    exe["constants"] = [{"buffer": r.u32(), "data": r.blob()} for _ in range(r.u32())]
    for key in ("inputs", "outputs"):
        exe[key] = [{"name": r.text(), "buffer": r.u32()} for _ in range(r.u32())]
    exe["steps"] = []
    for _ in range(r.u32()):
        step = {"kind": r.u32(), "module": r.u32(), "function": r.text()}
        step["args"] = [r.u32() for _ in range(r.u32())]
        step.update(node=r.text(), op_type=r.text(), macs=r.u64(), source_node=r.text())
        step["debug"] = [[r.text(), r.text()] for _ in range(r.u32())]
        exe["steps"].append(step)
    return exe


def _blob(value) -> bytes:
    raw = value.encode() if isinstance(value, str) else bytes(value)
    return struct.pack("<I", len(raw)) + raw


def build(exe: dict) -> bytes:
    """The `.tcx` bytes of `exe` (as `parse` gives it), with a valid checksum."""
    out = [_blob(exe["precision"]), struct.pack("<I", len(exe["modules"]))]
    out += [_blob(m) for m in exe["modules"]]
    out.append(struct.pack("<QI", exe["arena"], len(exe["buffers"])))
    for buf in exe["buffers"]:
        out += [_blob(buf["name"]), struct.pack("<QQ", buf["offset"], buf["size"]), _blob(buf["dtype"])]
        out.append(struct.pack("<I", len(buf["shape"])) + b"".join(struct.pack("<q", d) for d in buf["shape"]))
    out.append(struct.pack("<I", len(exe["constants"])))
    out += [struct.pack("<I", c["buffer"]) + _blob(c["data"]) for c in exe["constants"]]
    for key in ("inputs", "outputs"):
        out.append(struct.pack("<I", len(exe[key])))
        out += [_blob(e["name"]) + struct.pack("<I", e["buffer"]) for e in exe[key]]
    out.append(struct.pack("<I", len(exe["steps"])))
    for step in exe["steps"]:
        out += [struct.pack("<II", step["kind"], step["module"]), _blob(step["function"])]
        out.append(struct.pack("<I", len(step["args"])) + b"".join(struct.pack("<I", a) for a in step["args"]))
        out += [_blob(step["node"]), _blob(step["op_type"]), struct.pack("<Q", step["macs"]), _blob(step["source_node"])]
        out.append(struct.pack("<I", len(step["debug"])))
        out += [_blob(k) + _blob(v) for k, v in step["debug"]]
    payload = b"".join(out)
    return _MAGIC + struct.pack("<IIQQ", exe.get("version", 2), 1, len(payload), word_checksum(payload)) + payload


def edit(path_in, path_out, change):
    """Reads `path_in`, applies `change(exe)` to its fields, writes the result to `path_out`."""
    with open(path_in, "rb") as f:
        exe = parse(f.read())
    change(exe)
    with open(path_out, "wb") as f:
        f.write(build(exe))

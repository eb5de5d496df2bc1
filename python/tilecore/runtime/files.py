"""Reading and writing the files a user names (inputs, calibration data, tables, reports).

Every file a command reads goes through :func:`open_regular` (or the loaders on top of
it): a device, a FIFO or a directory is refused before any byte is read, and a size cap
bounds what is read. Every load failure -- a zip that is not one, pickled data, bad JSON,
bytes that are not UTF-8 -- is a ValueError that names the file and says what is wrong,
never a library's exception type. Every file a command writes goes through
:func:`atomic_write`: a temporary file beside the target, renamed over it when complete,
so an interrupted write leaves the old file. :func:`check_outputs` is the rule every
command applies before its work starts: no output may be one of its inputs.

Rationale: this lives in the runtime layer because the inputs of ``Executable.run`` are
the first file a user hands over; the compiler (calibration samples, tables), the
debugger (reference data) and the command line read theirs with the same checks.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile
import zipfile
import zlib
from typing import IO, Any, Iterator, Mapping

import numpy as np

from ..ffi.fingerprint import hash_file

# An .npz of arrays: at most this many bytes once decompressed (TC1's DDR holds 4 GiB,
# and calibration samples of a few inputs fit well below this).
MAX_ARRAYS_BYTES = 16 << 30
# A JSON or text file (a calibration table, a per-node precision table, a check file).
MAX_TEXT_BYTES = 256 << 20

_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")  # a local file header; an empty archive


def open_regular(path: str | os.PathLike[str], limit: int) -> IO[bytes]:
    """``path`` opened for binary reading: OSError naming it when it is missing or
    unreadable, ValueError when it is not a regular file (checked on the open descriptor,
    which never blocks on a FIFO) or holds more than ``limit`` bytes."""
    name = os.fspath(path)
    try:
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise type(e)(f"{name}: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{name}: not a regular file")
        if st.st_size > limit:
            raise ValueError(f"{name}: {st.st_size} bytes, more than such a file may hold ({limit})")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str | os.PathLike[str], limit: int = MAX_TEXT_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (see :func:`open_regular`)."""
    with open_regular(path, limit) as f:
        data = f.read(limit + 1)
    if len(data) > limit:  # grew while being read
        raise ValueError(f"{os.fspath(path)}: more than {limit} bytes")
    return data


def chunks(path: str | os.PathLike[str], overlap: int = 0, size: int = 1 << 20) -> Iterator[bytes]:
    """The bytes of the file ``path`` in pieces of ``size`` bytes, each after the first
    starting with the last ``overlap`` bytes of the one before (a string of ``overlap + 1``
    bytes is then whole in some piece): a model of hundreds of megabytes hashed or searched
    without holding it. (Not mapped: a file truncated meanwhile would kill the process.)"""
    with open(path, "rb") as f:
        tail = b""
        while block := f.read(size):
            yield tail + block if tail else block
            tail = block[-overlap:] if overlap else b""


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The sha256 of the file ``path``, as hexadecimal digits."""
    h = hashlib.sha256()
    hash_file(h, path)
    return h.hexdigest()


def file_sha256_and_contains(path: str | os.PathLike[str], needle: bytes, size: int = 1 << 20) -> tuple[str, bool]:
    """(:func:`file_sha256`, :func:`file_contains`) of ``path`` from one read of it, in pieces
    of ``size`` bytes. (Not over ``chunks(overlap=...)``: each of its pieces is a copy with the
    tail before it, and the digest takes every byte once; only the seams are joined here.)"""
    h, found, keep = hashlib.sha256(), not needle, len(needle) - 1
    tail = b""
    for block in chunks(path, size=size):
        h.update(block)
        if not found:  # (a needle across two pieces is whole in the tail and the next head)
            found = needle in block or (keep > 0 and needle in tail + block[:keep])
            tail = block[-keep:] if keep > 0 else b""
    return h.hexdigest(), found


def file_contains(path: str | os.PathLike[str], needle: bytes) -> bool:
    """Whether the bytes ``needle`` occur in the file ``path`` (an empty needle does)."""
    return not needle or any(needle in block for block in chunks(path, overlap=len(needle) - 1))


def read_text(path: str | os.PathLike[str], limit: int = MAX_TEXT_BYTES) -> str:
    """A UTF-8 text file; ValueError naming the file and the first byte that is not UTF-8."""
    data = read_bytes(path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{os.fspath(path)}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})") from None


def load_json(path: str | os.PathLike[str], limit: int = MAX_TEXT_BYTES) -> Any:
    """A JSON file; ValueError naming the file, the line and the column of a syntax error."""
    text = read_text(path, limit)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{os.fspath(path)}: not valid JSON: {e}") from None
    except RecursionError:
        raise ValueError(f"{os.fspath(path)}: not valid JSON: nested too deeply") from None


# What numpy and zipfile raise on a damaged archive or member.
_ARRAY_ERRORS = (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error, KeyError, TypeError,
                 SyntaxError, NotImplementedError, RuntimeError)


def _check_npy_header(zf: zipfile.ZipFile, member: zipfile.ZipInfo) -> None:
    """ValueError unless the member is a .npy array whose data fits in the member's size
    (so a header claiming a huge shape allocates nothing)."""
    fmt = np.lib.format
    with zf.open(member) as f:
        if f.read(6) != _NPY_MAGIC:
            raise ValueError(f"member `{member.filename}` is not a .npy array")
        f.seek(0)
        version = fmt.read_magic(f)
        read_header = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
        shape, _, dtype = read_header(f)
        if dtype.hasobject:
            raise ValueError(f"member `{member.filename}` holds Python objects (dtype object), which are not loaded")
        need = int(np.prod(shape, dtype=object)) * dtype.itemsize
        if need > member.file_size:
            raise ValueError(f"member `{member.filename}`: its header claims shape {tuple(shape)} of {dtype} "
                             f"({need} bytes) in {member.file_size} bytes")


def load_npz(path: str | os.PathLike[str], limit: int = MAX_ARRAYS_BYTES) -> dict[str, np.ndarray]:
    """The arrays of an ``.npz`` file (``np.savez``), keyed by name, in the file's order.

    ValueError naming the file when it is not a zip archive (a ``.npy`` file, text,
    pickled data), when the archive is damaged, when a member is not a ``.npy`` array or
    holds Python objects, or when the arrays would take more than ``limit`` bytes."""
    name = os.fspath(path)
    with open_regular(path, limit) as f:
        head = f.read(8)
        f.seek(0)
        if head.startswith(_NPY_MAGIC):
            raise ValueError(f"{name}: a single .npy array, not an .npz archive of named arrays (np.savez)")
        if not head.startswith(_ZIP_MAGICS):
            raise ValueError(f"{name}: not an .npz archive (np.savez): it does not start as a zip file does")
        try:
            with zipfile.ZipFile(f) as zf:
                members = zf.infolist()
                total = sum(m.file_size for m in members)
                if total > limit:
                    raise ValueError(f"{name}: its arrays take {total} bytes, more than such a file may hold ({limit})")
                arrays = {}
                for m in members:
                    key = m.filename[:-4] if m.filename.endswith(".npy") else m.filename
                    _check_npy_header(zf, m)
                    with zf.open(m) as member:
                        arrays[key] = np.lib.format.read_array(member, allow_pickle=False)
        except ValueError as e:
            message = str(e)
            if "allow_pickle" in message:
                message = "an array holds Python objects (dtype object), which are not loaded"
            if message.startswith(name + ":"):
                raise
            raise ValueError(f"{name}: not a valid .npz archive: {message}") from None
        except _ARRAY_ERRORS as e:
            raise ValueError(f"{name}: not a valid .npz archive: {e or type(e).__name__}") from None
    return arrays


# ---- outputs -------------------------------------------------------------------------------

def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist (yet): compare the paths the kernel would resolve
        return os.path.realpath(a) == os.path.realpath(b)


def check_outputs(outputs: Mapping[str, str | os.PathLike[str] | None],
                  inputs: Mapping[str, str | os.PathLike[str] | None]) -> None:
    """ValueError ``<path>: the output would overwrite the input <what>`` when an output
    path (``{what: path}``; None skipped) is one of the input files, or two outputs are
    one file. Call it before any work, so nothing is lost and no time is spent."""
    outs = [(w, os.fspath(p)) for w, p in outputs.items() if p is not None]
    ins = [(w, os.fspath(p)) for w, p in inputs.items() if p is not None]
    for what, out in outs:
        for in_what, src in ins:
            if _same_file(out, src):
                raise ValueError(f"{out}: the output would overwrite the input {in_what}")
    for i, (what, out) in enumerate(outs):
        for other_what, other in outs[i + 1:]:
            if _same_file(out, other):
                raise ValueError(f"{out}: {what} and {other_what} would write the same file")


def check_new_directory(path: str | os.PathLike[str], what: str = "the directory") -> None:
    """ValueError unless ``path`` is missing or an empty directory: ``what`` is written there."""
    name = os.fspath(path)
    if not os.path.lexists(name):
        return
    if not os.path.isdir(name):
        raise ValueError(f"{name}: exists and is not a directory ({what} is a directory)")
    if os.listdir(name):
        raise ValueError(f"{name}: the directory is not empty ({what} would replace its files; give a new or "
                         f"empty one)")


def _new_file_mode(target: str) -> int:
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[str]:
    """A path to write ``path``'s new contents to, for a writer that takes a path (a C++
    one): a temporary file in the same folder, renamed over ``path`` when the block ends
    without an exception and removed otherwise, so an interrupted write leaves the old
    file. A device or FIFO (``-o /dev/null``) is written in place: it is its own path."""
    target = os.fspath(path)
    real = os.path.realpath(target)  # through a symlink: the file it names is replaced, not the link
    if os.path.isdir(real):
        raise IsADirectoryError(f"{target}: is a directory")
    if os.path.exists(real) and not stat.S_ISREG(os.stat(real).st_mode):
        yield real  # never replaced by a regular file
        return
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(real), prefix=f".{os.path.basename(real)}.", suffix=".tmp")
    except OSError as e:  # named after the file asked for, not the temporary one
        raise type(e)(f"{target}: {e.strerror}") from None
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, _new_file_mode(real))
        try:
            os.replace(tmp, real)
        except OSError as e:
            raise type(e)(f"{target}: {e.strerror}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "w") -> Iterator[IO[Any]]:
    """A file object for ``path`` (``mode`` "w" text in UTF-8, or "wb") writing a temporary
    file in the same folder, renamed over ``path`` when the block ends without an exception;
    otherwise the temporary file is removed and ``path`` untouched (:func:`atomic_path`)."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write: mode must be 'w' or 'wb', not {mode!r}")
    with atomic_path(path) as tmp, open(tmp, mode, **({"encoding": "utf-8"} if mode == "w" else {})) as f:
        yield f
        f.flush()
        if stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            os.fsync(f.fileno())  # the data on disk before the rename makes it the file


def write_bytes(path: str | os.PathLike[str], data: bytes | str) -> None:
    """Writes ``data`` (bytes, or str as UTF-8) to ``path`` atomically (:func:`atomic_write`)."""
    with atomic_write(path, "wb") as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)


def save_npz(path: str | os.PathLike[str], arrays: Mapping[str, np.ndarray]) -> None:
    """``np.savez`` to exactly ``path`` (no ``.npz`` appended), atomically."""
    with atomic_write(path, "wb") as f:
        np.savez(f, **arrays)


__all__ = ["MAX_ARRAYS_BYTES", "MAX_TEXT_BYTES", "atomic_path", "atomic_write", "check_new_directory", "check_outputs",
           "load_json", "load_npz", "open_regular", "read_bytes", "read_text", "save_npz", "write_bytes"]

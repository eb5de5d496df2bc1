"""TC1 machine code from Python: assemble, disassemble, program images.

    prog = tilecore.arch.assemble(open("gemm.s").read())   # a Program
    text = tilecore.arch.disassemble(prog)                   # assembles back to an equal Program
    blob = prog.to_bytes()                                   # the binary image (arch/program.h)
    same = tilecore.arch.Program.from_bytes(blob)

A mistake in the source raises :class:`AsmError` (a ``ValueError``) whose message
starts with the line number; a malformed image raises :class:`ProgramFormatError`
naming the byte offset. The assembly language is described in docs/tc1.md.
"""

from __future__ import annotations

import operator
import os
import re

from ..ffi._base import _ffi_core
from ..ffi.error import TilecoreError, register_error
from ..ffi.object import Object, register_object


def _api(name):
    func = _ffi_core._get_global_func("arch." + name)
    if func is None:
        raise AttributeError(f"the tilecore library does not register 'arch.{name}'")
    return func


class _Api:
    """`arch.*` global functions, looked up once on first use."""

    def __getattr__(self, name):
        func = _api(name)
        setattr(self, name, func)
        return func


_ffi = _Api()


@register_error("AsmError")
class AsmError(TilecoreError, ValueError):
    """A mistake in TC1 assembly source. ``line`` is the 1-based source line (0 if unknown)."""

    @property
    def line(self) -> int:
        m = re.search(r"\bline (\d+):", str(self))
        return int(m.group(1)) if m else 0


@register_error("ProgramFormatError")
class ProgramFormatError(TilecoreError, ValueError):
    """A malformed program image. ``offset`` is the byte offset of the problem."""

    @property
    def offset(self) -> int:
        m = re.search(r"byte (\d+):", str(self))
        return int(m.group(1)) if m else -1


@register_object("arch.Program")
class Program(Object):
    """A TC1 program: text sections (code for sets of cores) and initial data segments.

    Two programs compare equal (``==``) when their words and data are equal.
    """

    __slots__ = ()

    def to_bytes(self) -> bytes:
        """The binary image (format in include/tilecore/arch/program.h)."""
        return _ffi.ProgramToBytes(self)

    @staticmethod
    def from_bytes(data: bytes | bytearray | memoryview) -> Program:
        """Parses a binary image; raises :class:`ProgramFormatError` if it is malformed."""
        if isinstance(data, memoryview):
            data = data.tobytes()
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError(f"Program.from_bytes: expected bytes, got {type(data).__name__}")
        return _ffi.ProgramFromBytes(bytes(data))

    @property
    def sections(self) -> list[dict]:
        """A list of dicts ``{"core_mask", "cores", "words"}``, one per text section."""
        return [
            {"core_mask": s["core_mask"], "cores": list(s["cores"]), "words": s["words"]}
            for s in _ffi.ProgramSections(self)
        ]

    @property
    def data_segments(self) -> list[dict]:
        """A list of dicts ``{"space", "address", "size", "core_mask"}``."""
        return [dict(d.items()) for d in _ffi.ProgramDataSegments(self)]

    def words(self, section: int = 0) -> list[int]:
        """The instruction words of a text section, as a list of ints."""
        return [w & 0xFFFFFFFFFFFFFFFF for w in _ffi.ProgramWords(self, section)]

    def lines(self, section: int = 0) -> list[int]:
        """The assembly source line of each word of a section (empty if not assembled from text)."""
        return list(_ffi.ProgramLines(self, section))

    def disassemble(self) -> str:
        """Assembly text that assembles back to an equal program."""
        return _ffi.Disassemble(self)

    def __eq__(self, other):
        if not isinstance(other, Program):
            return NotImplemented
        return _ffi.ProgramEqual(self, other)

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self):
        return hash(self.to_bytes())

    def __repr__(self) -> str:
        secs = ", ".join(f"cores {s['cores']}: {s['words']} words" for s in self.sections)
        return f"<tilecore.arch.Program {secs}; {len(self.data_segments)} data segments>"


_PARAMS: dict[str, int] = {}


def params() -> dict[str, int]:
    """TC1's fixed parameters (``arch/params.h``, docs/tc1.md "Parameters"), by name:
    ``l2_bytes``, ``l1_bytes``, ``l1_bank_bytes``, ``ddr_bytes_per_cycle``, ``max_mm_dim``,
    ``mm_block_i8_n``, ... The one source of these numbers for Python code."""
    if not _PARAMS:
        _PARAMS.update({str(k): int(v) for k, v in dict(_ffi.Params()).items()})
    return dict(_PARAMS)


def assemble(text: str) -> Program:
    """Assembles TC1 assembly ``text`` into a :class:`Program`.

    :raises AsmError: naming the line of the first mistake.
    """
    if not isinstance(text, str):
        raise TypeError(f"assemble: expected str, got {type(text).__name__}")
    return _ffi.Assemble(text)


def assemble_file(path: str | os.PathLike[str]) -> Program:
    """Assembles the file at ``path``; errors name the file and the line."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        return assemble(text)
    except AsmError as e:
        raise AsmError(f"{path}: {e}") from None


def disassemble(program: Program | bytes | bytearray | memoryview) -> str:
    """Assembly text for a :class:`Program` (or a program image as bytes)."""
    if isinstance(program, (bytes, bytearray, memoryview)):
        program = Program.from_bytes(program)
    if not isinstance(program, Program):
        raise TypeError(f"disassemble: expected a Program, got {type(program).__name__}")
    return _ffi.Disassemble(program)


def disassemble_word(word: int, pc: int = 0) -> str:
    """One instruction word as text (``.inst 0x...`` when it does not decode)."""
    try:
        word = operator.index(word)
    except TypeError:
        raise TypeError(f"disassemble_word: the word must be an int, got {type(word).__name__}") from None
    # A word is 64 bits: as unsigned or as signed, but never masked down from something wider.
    if not -(1 << 63) <= word < 1 << 64:
        raise OverflowError(f"disassemble_word: {word:#x} does not fit in a 64-bit instruction word")
    word &= 0xFFFFFFFFFFFFFFFF
    if word >= 1 << 63:
        word -= 1 << 64
    return _ffi.DisassembleWord(word, pc)


__all__ = [
    "params",
    "AsmError",
    "Program",
    "ProgramFormatError",
    "assemble",
    "assemble_file",
    "disassemble",
    "disassemble_word",
]

"""What tdb debugs: a *target* is a TC1 program plus what maps it back to sources.

:class:`KernelModuleTarget` is an ``npu`` kernel module (a ``.tcm`` file saved by
``Module.save``, built from the DSL or the IR builder), whose line table maps each
pc to the kernel's ``file:line``. :class:`AssemblyTarget` is a TC1 assembly file
(its lines are the source). A compiled model executable (``.tcx``) is a third kind
(``model.py``: node after node). Every target gives the same small interface, so most
of the debugger's commands do not know which kind they run.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

    from ..arch import Program
    from ..runtime import Module
    from ..sim import Simulator

ARG_BLOCK_FROM_END = 1024  # runtime::kNpuArgBlock = L1 size - 1024
BUFFER_BASE = 0x10000      # where tdb places buffer arguments in DDR
_DTYPES = {"int8", "uint8", "int16", "uint16", "int32", "uint32", "float16", "float32", "bool", "bfloat16"}


class TargetError(ValueError):
    """A target that cannot be loaded or prepared (bad file, missing inputs)."""


class Symbol:
    """A named array in simulated memory (a kernel's buffer argument)."""

    def __init__(self, name: str, space: str, address: int, dtype: npt.DTypeLike, shape: Sequence[int],
                 core: int = 0) -> None:
        self.name, self.space, self.address = name, space, int(address)
        self.dtype, self.shape, self.core = np.dtype(dtype), tuple(shape), core

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def __repr__(self) -> str:
        return f"{self.name}: {self.dtype}{list(self.shape)} at {self.space}:{self.address:#x}"


class Target:
    """The interface every target kind gives the debugger."""

    kind = "target"
    name = ""
    program = None     # tilecore.arch.Program
    cores = 1          # cores the program needs
    source_path = None  # the main source file (for bare line numbers)

    def prepare(self, sim: Simulator, inputs: Mapping[str, Any] | None) -> dict[str, Symbol]:
        """Writes the inputs into ``sim`` (after load); returns {name: Symbol}."""
        return {}

    def location(self, core: int, pc: int) -> str | None:
        """``file:line`` of the source that produced the instruction, or None."""
        return None

    def listing(self) -> list[str]:
        """The assembly listing, as a list of lines (line 1 first)."""
        return self.program.disassemble().splitlines()

    def listing_line(self, core: int, pc: int) -> int:
        """The listing line (1-based) of the instruction, or 0."""
        return 0

    def pcs_at_location(self, file: str, line: int) -> dict[int, list[int]]:
        """{core: [pc, ...]} of the instructions of source ``file:line``."""
        return {}

    def pcs_at_listing_line(self, line: int) -> dict[int, list[int]]:
        return {}

    def source_lines(self, file: str) -> list[str] | None:
        """The text lines of a source file, or None when it cannot be read."""
        try:
            with open(file, encoding="utf-8") as f:
                return f.read().splitlines()
        except OSError:
            return None

    def files(self) -> list[str]:
        return []


def _sections_by_core(program):
    by_core = {}
    for index, s in enumerate(program.sections):
        for c in s["cores"]:
            by_core.setdefault(c, index)
    return by_core


class _LineTable:
    """pc -> "file:line" per text section, and the reverse."""

    def __init__(self, program: Program, entries: Any) -> None:
        self.by_core = _sections_by_core(program)
        self.loc = {}      # (section, pc) -> (file, line)
        for section, pc, where in entries:
            file, _, line = str(where).rpartition(":")
            if file and line.isdigit():
                self.loc[(int(section), int(pc))] = (file, int(line))
        self.cores = sorted(self.by_core)

    def location(self, core: int, pc: int) -> str | None:
        s = self.by_core.get(core)
        return None if s is None else self.loc.get((s, pc))

    def files(self) -> list[str]:
        return sorted({f for f, _ in self.loc.values()})

    def pcs(self, file: str, line: int) -> dict[int, list[int]]:
        """The first pc of every run of instructions of ``file:line``, per core (a
        breakpoint on a line stops where the line starts, not at each instruction)."""
        out = {}
        for core in self.cores:
            s = self.by_core[core]
            pcs = sorted(pc for (sec, pc), (f, ln) in self.loc.items() if sec == s and ln == line and _same_file(f, file))
            starts = [pc for pc in pcs if self.loc.get((s, pc - 1)) != self.loc[(s, pc)]]
            if starts:
                out[core] = starts
        return out


def _listing_lines(listing, nsections):
    """{section: [listing line of pc 0, of pc 1, ...]} from assembly text: the
    instruction lines after each ``.text``, a new section at each ``.core``."""
    out, section, in_text = {}, -1, False
    for k, raw in enumerate(listing, 1):
        line = raw.split("#")[0].split("//")[0].strip()
        if not line:
            continue
        if line.startswith(".core"):
            section += 1
            in_text = False
            continue
        if line.startswith(".text"):
            in_text = True
            section = max(section, 0)
            continue
        if line.startswith(".data"):
            in_text = False
            continue
        if in_text and ":" in line and line.split(":")[0].isidentifier():
            line = line.split(":", 1)[1].strip()  # a label, maybe with an instruction
        if in_text and line and not line.startswith("."):
            out.setdefault(section, []).append(k)
    return {s: out.get(s, []) for s in range(nsections)}


def _same_file(full, given):
    return full == given or full.endswith("/" + given) or os.path.basename(full) == given


class KernelModuleTarget(Target):
    """One kernel of an ``npu`` module (a module file path or a loaded Module)."""

    kind = "kernel module"

    def __init__(self, module: Module | str | os.PathLike[str], function: str | None = None) -> None:
        from .. import runtime

        if isinstance(module, (str, os.PathLike)):
            path = os.fspath(module)
            if not os.path.exists(path):
                raise TargetError(f"{path}: no such file")
            try:
                module = runtime.load_module(path)
            except (ValueError, OSError) as e:
                raise TargetError(f"{path}: {e}") from None
        if module.kind != "npu":
            raise TargetError(f"tdb debugs npu modules, not a module of kind '{module.kind}'")
        funcs = module.info["functions"]
        names = [f["name"] for f in funcs]
        if function is None:
            info = funcs[0]
        elif function in names:
            info = funcs[names.index(function)]
        else:
            raise TargetError(f"the module has no function '{function}' (it has {', '.join(names)})")
        self.module, self.info = module, info
        self.name = info["name"]
        self.program = info["program"]
        self.cores = int(info["cores"])
        self.params = [dict(p.items()) for p in info["params"]]
        self.table = _LineTable(self.program, [tuple(e) for e in info["line_table"]])
        files = self.table.files()
        self.source_path = files[0] if files else None
        self._listing = module.get_source().splitlines() if len(funcs) == 1 else self.program.disassemble().splitlines()
        self._asm_lines = _listing_lines(self._listing, len(self.program.sections))
        for index in range(len(self.program.sections)):
            if self.program.lines(index):
                self._asm_lines[index] = self.program.lines(index)

    def files(self) -> list[str]:
        return self.table.files()

    def prepare(self, sim: Simulator, inputs: Mapping[str, Any] | None) -> dict[str, Symbol]:
        inputs = dict(inputs or {})
        symbols, words, addr = {}, [], BUFFER_BASE
        for p in self.params:
            name, kind, dtype = p["name"], p["kind"], p["dtype"]
            if kind == "buffer":
                if name not in inputs:
                    raise TargetError(
                        f"kernel `{self.name}` needs an array for buffer `{name}` ({dtype}); give it in --inputs")
                a = np.ascontiguousarray(inputs[name])
                if str(a.dtype) != dtype and not (dtype == "bfloat16" and a.dtype == np.uint16):
                    raise TargetError(f"input `{name}` has dtype {a.dtype}, the kernel wants {dtype}")
                sim.write("ddr", addr, a)
                symbols[name] = Symbol(name, "ddr", addr, a.dtype, a.shape)
                words.append(addr)
                addr += (a.nbytes + 63) // 64 * 64 or 64
            else:
                value = inputs.get(name, 0)
                value = np.asarray(value).item() if not isinstance(value, (int, float)) else value
                if kind == "int":
                    words.append(int(value) & 0xFFFFFFFF)
                else:
                    words.append(int(np.float32(value).view(np.uint32)))
        unknown = sorted(set(inputs) - {p["name"] for p in self.params})
        if unknown:
            raise TargetError(f"--inputs has arrays the kernel does not take: {', '.join(unknown)}")
        if words:
            block = sim.config["l1_bytes"] - ARG_BLOCK_FROM_END
            for core in range(self.cores):
                sim.write("l1", block, np.array(words, dtype=np.uint32), core=core)
        return symbols

    def location(self, core: int, pc: int) -> str | None:
        loc = self.table.location(core, pc)
        return None if loc is None else f"{loc[0]}:{loc[1]}"

    def listing(self) -> list[str]:
        return self._listing

    def listing_line(self, core: int, pc: int) -> int:
        s = self.table.by_core.get(core)
        lines = self._asm_lines.get(s, [])
        return lines[pc] if 0 <= pc < len(lines) else 0

    def pcs_at_location(self, file: str, line: int) -> dict[int, list[int]]:
        return self.table.pcs(file, line)

    def pcs_at_listing_line(self, line: int) -> dict[int, list[int]]:
        out = {}
        for core, s in self.table.by_core.items():
            pcs = [pc for pc, ln in enumerate(self._asm_lines.get(s, [])) if ln == line]
            if pcs:
                out[core] = pcs
        return out


class AssemblyTarget(Target):
    """A TC1 assembly file: its own lines are both the source and the listing."""

    kind = "assembly"

    def __init__(self, path: str | os.PathLike[str]) -> None:
        from .. import arch

        self.path = os.fspath(path)
        try:
            with open(self.path, encoding="utf-8") as f:
                self.text = f.read()
        except OSError as e:
            raise TargetError(f"{self.path}: {e.strerror}") from None
        try:
            self.program = arch.assemble(self.text)
        except arch.AsmError as e:
            raise TargetError(f"{self.path}: {e}") from None
        self.name = os.path.basename(self.path)
        self.source_path = self.path
        self.by_core = _sections_by_core(self.program)
        self.cores = max(self.by_core) + 1 if self.by_core else 1
        self._lines = {i: self.program.lines(i) for i in range(len(self.program.sections))}

    def files(self) -> list[str]:
        return [self.path]

    def prepare(self, sim: Simulator, inputs: Mapping[str, Any] | None) -> dict[str, Symbol]:
        symbols = {}
        for name, value in (inputs or {}).items():
            space, _, addr = name.partition("_")  # arrays named like ddr_0x1000
            try:
                a = np.ascontiguousarray(value)
                sim.write(space, int(addr, 0), a)
            except (ValueError, TypeError):
                raise TargetError(f"input '{name}': for an assembly file name arrays SPACE_ADDRESS, e.g. ddr_0x1000") from None
            symbols[name] = Symbol(name, space, int(addr, 0), a.dtype, a.shape)
        return symbols

    def location(self, core: int, pc: int) -> str | None:
        line = self.listing_line(core, pc)
        return f"{self.path}:{line}" if line else None

    def listing(self) -> list[str]:
        return self.text.splitlines()

    def listing_line(self, core: int, pc: int) -> int:
        lines = self._lines.get(self.by_core.get(core), [])
        return lines[pc] if 0 <= pc < len(lines) else 0

    def pcs_at_location(self, file: str, line: int) -> dict[int, list[int]]:
        return self.pcs_at_listing_line(line) if _same_file(self.path, file) else {}

    def pcs_at_listing_line(self, line: int) -> dict[int, list[int]]:
        out = {}
        for core, s in self.by_core.items():
            pcs = [pc for pc, ln in enumerate(self._lines.get(s, [])) if ln == line]
            if pcs:
                out[core] = pcs
        return out


def open_target(path: str | os.PathLike[str], function: str | None = None) -> Target:
    """The target for a file: a kernel module (``.tcm``), TC1 assembly (``.s``) or a model (``.tcx``)."""
    path = os.fspath(path)
    if path.endswith((".s", ".S", ".asm")):
        return AssemblyTarget(path)
    if path.endswith(".tcx"):
        from .model import ModelTarget

        return ModelTarget(path)
    return KernelModuleTarget(path, function)

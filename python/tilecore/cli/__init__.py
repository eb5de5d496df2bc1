"""The ``tilecore`` command line (also ``python -m tilecore``).

Subcommands:

    tilecore asm prog.s [-o prog.bin]        assemble TC1 assembly into a program image
    tilecore disasm prog.bin [-o prog.s]     disassemble an image (or re-print a .s), a module
                                             (.tcm) or a model (.tcx, annotated with its nodes)
    tilecore sim prog.s [--cores N] [--mode M] [--trace out.json] [--stats]
                                             run a program on the simulator
    tilecore tdb kernel.tcm [--inputs in.npz] [--do "b tadd; run; x C"]
                                             debug a kernel module or a model (docs/tdb.md)
    tilecore check OUT.tcx --inputs IN.npz --ref_data REF.npz [--report R.json]
                                             a model node by node against reference data
    tilecore viz MODEL.onnx|OUT.tcx -o graph.svg|.html|.png|.dot
                                             the graph, coloured by where each node runs
    tilecore demo [--size N]                 a tiled int8 GEMM on 4 simulated cores,
                                             checked against numpy
    tilecore run OUT.tcx --inputs IN.npz     run an executable (tilecore/cli/runtime.py)
    tilecore profile OUT.tcx --inputs IN.npz its per-op profile
    tilecore bench MODELS --precision P,...  models x precisions as jobs on serial|local|ray (tilecore/cli/bench.py)

A subcommand is a function decorated with :func:`command`; another module adds one
(``compile``, ``run``, ``tdb``, ...) by decorating its own function and being listed
in ``_PLUGIN_MODULES`` (imported lazily, so ``tilecore asm`` stays fast).
"""

from __future__ import annotations

import argparse
import importlib
import os
import stat
import sys
from typing import Any, Callable, Iterable

_COMMANDS = {}
# Modules that define further subcommands with @command; imported when the parser is built.
# A module that is missing (not written yet, or an optional dependency) is skipped.
_PLUGIN_MODULES = ("tilecore.cli.compile", "tilecore.cli.tdb", "tilecore.cli.runtime", "tilecore.cli.bench")


def command(name: str, help: str,  # noqa: A002  (argparse's word)
            arguments: Iterable[tuple[tuple, dict]] = ()) -> Callable[[Callable[[argparse.Namespace], int]],
                                                                     Callable[[argparse.Namespace], int]]:
    """Registers ``func(args) -> int`` as subcommand ``name``.

    :param arguments: ``(args, kwargs)`` pairs for ``ArgumentParser.add_argument``.
    """

    def register(func):
        _COMMANDS[name] = (func, help, tuple(arguments))
        return func

    return register


def arg(*args: Any, **kwargs: Any) -> tuple[tuple, dict]:
    return (args, kwargs)


def _write_text(text: str, output: str | None) -> int:
    """Writes ``text`` to the file ``output`` (atomically), or to stdout without one; the exit code 0."""
    if output:
        from ..runtime.files import write_bytes

        write_bytes(output, text)
    else:
        sys.stdout.write(text)
    return 0


def check_outputs(outputs: dict[str, str | None], inputs: dict[str, str | None]) -> None:
    """The rule of every command that writes files, applied before its work starts: no
    output may be one of its inputs (ValueError ``<path>: the output would overwrite the
    input <what>``, which main() prints as one line with exit status 1)."""
    from ..runtime.files import check_outputs as check

    check(outputs, inputs)


def _fail(message) -> int:
    print(f"tilecore: error: {message}", file=sys.stderr)
    return 1


def _fail_about(path, error) -> int:
    """`_fail` for an error about the file `path`: named once (the importer may have named
    it already), without the C++ backtrace."""
    text = str(error).split("\nC++ backtrace")[0]
    path = str(path)
    return _fail(text if text.startswith(path + ":") else f"{path}: {text}")


# Inputs are read whole; anything larger than this is not a TC1 program.
_MAX_INPUT_BYTES = 256 << 20


def _read_input(path):
    """The bytes of an input file: a regular file of at most _MAX_INPUT_BYTES (OSError
    otherwise, so /dev/zero or a FIFO is refused instead of read forever)."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise OSError(f"{path}: not a regular file")
    if st.st_size > _MAX_INPUT_BYTES:
        raise OSError(f"{path}: {st.st_size} bytes is larger than an input can be ({_MAX_INPUT_BYTES})")
    with open(path, "rb") as f:
        return f.read(_MAX_INPUT_BYTES + 1)


def _positive_int(text):
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if not 0 < n < 2**63:
        raise argparse.ArgumentTypeError(f"expected a positive integer below 2^63, got {text}")
    return n


def _load_program(path):
    """A Program from an assembly file or a program image (detected by its magic)."""
    from .. import arch

    data = _read_input(path)
    if data[:4] == b"TC1P":
        return arch.Program.from_bytes(data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise arch.ProgramFormatError(f"{path}: neither a program image nor UTF-8 assembly text") from None
    try:
        return arch.assemble(text)
    except arch.AsmError as e:
        raise arch.AsmError(f"{path}: {e}") from None


# ---- asm / disasm -----------------------------------------------------------------------
@command(
    "asm",
    "assemble TC1 assembly into a program image",
    [arg("source", help="assembly file (.s)"), arg("-o", "--output", help="image to write (default: SOURCE with .bin)")],
)
def _asm(args):
    from .. import arch
    from ..runtime.files import write_bytes

    out = args.output or os.path.splitext(args.source)[0] + ".bin"
    check_outputs({"-o": out}, {"source": args.source})
    try:
        text = _read_input(args.source).decode("utf-8")
    except UnicodeDecodeError as e:
        return _fail(f"{args.source}: not UTF-8 assembly text (byte {e.start})")
    try:
        program = arch.assemble(text)
    except arch.AsmError as e:
        return _fail(f"{args.source}: {e}")
    data = program.to_bytes()
    write_bytes(out, data)
    words = sum(s["words"] for s in program.sections)
    print(f"{out}: {words} instructions in {len(program.sections)} sections, {len(data)} bytes")
    return 0


@command(
    "disasm",
    "disassemble a program image, an assembly file, a kernel module (.tcm) or a model (.tcx, annotated with its nodes)",
    [arg("image", help="program image (.bin), assembly (.s), module (.tcm) or executable (.tcx)"),
     arg("-o", "--output", help="write the text here")],
)
def _disasm(args):
    from .. import arch

    check_outputs({"-o": args.output}, {"image": args.image})
    try:
        head = _read_input(args.image)[:8]
    except OSError as e:
        return _fail(str(e))
    if head in (b"TCEXEC\0\0", b"TCMODULE"):
        try:
            if head == b"TCMODULE":
                from .. import runtime

                text = runtime.load_module(args.image).get_source()
            else:
                from ..tdb.model import ModelTarget

                text = ModelTarget(args.image).disassemble()  # its errors name the file
        except (ValueError, OSError) as e:
            first = str(e).splitlines()[0]
            return _fail(first if first.startswith(f"{args.image}: ") else f"{args.image}: {first}")
        return _write_text(text, args.output)
    try:
        program = _load_program(args.image)
    except (arch.AsmError, arch.ProgramFormatError) as e:
        return _fail(str(e))
    text = arch.disassemble(program)
    return _write_text(text, args.output)


# ---- sim ---------------------------------------------------------------------------------
@command(
    "sim",
    "run a program (assembly or image) on the TC1 simulator",
    [
        arg("program", help="assembly file (.s) or program image (.bin)"),
        arg("--cores", type=int, default=None, help="simulated cores (1..16; default 4)"),
        arg("--mode", default=None, choices=["functional+timing", "functional", "timing", "hazard"],
            help="what to simulate (default functional+timing)"),
        arg("--target", default="npu", help="target string, e.g. 'npu -cores=4 -ddr=512MiB'"),
        arg("--trace", metavar="OUT_JSON", help="write a Chrome/Perfetto trace"),
        arg("--stats", action="store_true", help="print per-engine statistics"),
        arg("--json", action="store_true", help="print the statistics as JSON"),
        arg("--max-instructions", type=_positive_int, default=None, help="instruction budget (all cores)"),
    ],
)
def _sim(args):
    import json

    from .. import arch, sim
    from ..runtime.files import atomic_path

    check_outputs({"--trace": args.trace}, {"program": args.program})
    try:
        program = _load_program(args.program)
    except (arch.AsmError, arch.ProgramFormatError) as e:
        return _fail(str(e))
    target = args.target
    if args.cores is not None:
        target += f" -cores={args.cores}"
    try:
        s = sim.Simulator(target=target, mode=args.mode, trace=bool(args.trace))
        s.load(program)
        s.run(args.max_instructions)
    except sim.SimError as e:
        return _fail(f"{args.program}: {e}")
    st = s.stats()
    if args.trace:
        try:
            with atomic_path(args.trace) as tmp:
                s.trace(tmp)
        except sim.SimError as e:
            return _fail(f"{args.trace}: {e}")
    if args.json:
        print(json.dumps(st, indent=1))
    elif args.stats:
        print(sim.format_stats(st))
    else:
        print(f"{args.program}: finished in {st['cycles']} cycles ({st['instructions']} instructions, "
              f"{st['commands']} tile commands)")
    for h in s.hazards():
        print(h["message"])
    return 0


# ---- demo --------------------------------------------------------------------------------
def _repo_file(*parts):
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "..", "..", "..", *parts)  # python/tilecore/cli -> the repository


@command(
    "demo",
    "compile ResNet-18 (the zoo's, seeded weights) for TC1, run it on the simulator and compare it with "
    "ONNX Runtime; --gemm: a tiled int8 GEMM on 4 simulated cores checked against numpy",
    [arg("--model", default="resnet18", help="the zoo model to compile and run (default resnet18)"),
     arg("--top", type=int, default=10, help="layers shown, most cycles first (default 10; a layer group's members "
                                               "each count as one)"),
     arg("--gemm", action="store_true", help="run the int8 GEMM demo instead"),
     arg("--size", type=int, default=512, help="--gemm: M = N = K (a multiple of 512; default 512)"),
     arg("--trace", metavar="OUT_JSON", help="also write a Chrome/Perfetto trace")],
)
def _demo(args):
    if not args.gemm:
        from .compile import model_demo

        return model_demo(args)
    return _gemm_demo(args)


def _gemm_demo(args):
    import time

    import numpy as np

    from .. import arch, sim

    n, cores, tile = args.size, 4, 128
    if n <= 0 or n % (cores * tile):
        return _fail(f"--size must be a positive multiple of {cores * tile}, got {n}")
    source_path = _repo_file("benchmarks", "sim_gemm_i8.s")
    if not os.path.exists(source_path):
        return _fail("the demo program benchmarks/sim_gemm_i8.s is not next to this installation")
    a_ddr, b_ddr, c_ddr = 0x0, 0x1000000, 0x2000000
    params = dict(M=n, N=n, K=n, TM=tile, TN=tile, NC=cores, A_DDR=a_ddr, B_DDR=b_ddr, C_DDR=c_ddr)
    with open(source_path, encoding="utf-8") as f:
        source = "".join(f".equ {k}, {v}\n" for k, v in params.items()) + f.read()

    print(f"tilecore demo: C = A x B, int8 {n}x{n}x{n} -> int32, {cores} TC1 cores, {tile}x{tile} tiles,")
    print("               A and B double-buffered in L1 (benchmarks/sim_gemm_i8.s)")
    program = arch.assemble(source)
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, size=(n, n), dtype=np.int8)
    b = rng.integers(-128, 128, size=(n, n), dtype=np.int8)
    s = sim.Simulator(target=f"npu -cores={cores}", trace=bool(args.trace))
    s.load(program)
    s.write("ddr", a_ddr, a)
    s.write("ddr", b_ddr, b)
    t0 = time.perf_counter()
    s.run()
    wall = time.perf_counter() - t0
    c = s.read("ddr", c_ddr, (n, n), "int32")
    expect = (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)
    ok = np.array_equal(c, expect)
    st = s.stats()
    print(f"result:         {'matches numpy (bit-exact)' if ok else 'DIFFERS from numpy'}")
    print(f"simulated time: {st['cycles']} cycles = {st['cycles'] / 1e3:.1f} us at 1 GHz")
    print(f"host time:      {wall * 1e3:.1f} ms ({n ** 3 / wall / 1e9:.1f} GMAC/s simulated on the host)")
    print(sim.format_stats(st))
    if args.trace:
        s.trace(args.trace)
        print(f"trace:          {args.trace} (open in ui.perfetto.dev)")
    return 0 if ok else 1


# ---- entry point -------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    for name in _PLUGIN_MODULES:
        try:
            importlib.import_module(name)
        except ImportError as e:
            if e.name != name:
                raise
    parser = argparse.ArgumentParser(prog="tilecore", description="The tilecore toolchain for the TC1 NPU.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (func, help_text, arguments) in _COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        for a, kw in arguments:
            p.add_argument(*a, **kw)
        p.set_defaults(_func=func)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_func", None):
        parser.print_help()
        return 2
    from ..extras import MissingDependencyError
    from ..ffi.error import TilecoreError

    # Every failure the user can cause is one line on stderr and rc 1, never a traceback.
    try:
        return args._func(args)
    except (OSError, TilecoreError, ValueError, MissingDependencyError) as e:
        return _fail(str(e).splitlines()[0] if str(e) else type(e).__name__)
    except MemoryError as e:
        return _fail(f"out of memory{': ' + str(e) if str(e) else ''}")
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

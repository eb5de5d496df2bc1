"""``tilecore tdb``: the debugger's command line (tilecore.tdb)."""
import sys

from .cli import arg, command


@command(
    "tdb",
    "debug a kernel module (.tcm) or TC1 assembly (.s) on the simulator",
    [
        arg("target", help="kernel module file (.tcm) or assembly file (.s)"),
        arg("--inputs", help=".npz of input arrays, keyed by kernel parameter name"),
        arg("--function", help="the kernel to debug when the module has several"),
        arg("--plugins", nargs="+", default=[], help="Python files defining tilecore.tdb.Plugin subclasses"),
        arg("--ddr_size", help="simulated DDR size, e.g. 256MiB"),
        arg("-v", "--verbose", action="store_true", help="show progress on long runs"),
        arg("--do", dest="commands", help="commands separated by ';' to run, then exit"),
    ],
)
def _tdb(args):
    from .tdb import Debugger
    from .tdb.target import open_target

    try:
        target = open_target(args.target, args.function)
        sim_target = f"npu -cores={max(target.cores, 1)}" + (f" -ddr={args.ddr_size}" if args.ddr_size else "")
        dbg = Debugger(target, inputs=args.inputs, plugins=args.plugins, verbose=args.verbose, sim_target=sim_target)
    except Exception as e:  # noqa: BLE001  (a bad target, inputs file, option or plugin file: one line, no traceback)
        print(f"tilecore tdb: error: {e}", file=sys.stderr)
        return 1
    if args.commands is not None:
        dbg.run_commands(args.commands)
        return 0
    try:
        dbg.cmdloop(f"tdb: {target.kind} `{target.name}` ({target.cores} core(s)); 'help' lists the commands, "
                    "'start' loads it, 'run' runs it")
    except KeyboardInterrupt:
        print(file=sys.stdout)
    return 0

"""docs/tdb.md: its examples run, and every command its tables name exists."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from doc_examples import page_text, run_page  # noqa: E402

from tilecore.tdb import Debugger  # noqa: E402


def test_doc_examples_run(tmp_path):
    r = run_page("tdb.md", tmp_path, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr


def test_documented_commands_exist():
    text = page_text("tdb.md")
    names = set()
    for table in re.findall(r"^\| command \|.*?\n\n", text, re.M | re.S):  # the tables of commands
        for row in table.splitlines()[2:]:
            if not row.startswith("|"):
                continue
            names |= set(re.findall(r"`([a-z][a-z-]*)", row.split("|")[1]))
    assert {"start", "reverse-next", "x", "display", "record", "until", "check", "viz"} <= names
    names |= {"break", "tbreak", "condition", "ignore", "enable", "disable", "delete", "watch", "rwatch", "awatch",
              "undisplay", "display", "info", "x", "set"}
    missing = [n for n in sorted(names) if not hasattr(Debugger, "do_" + n.replace("-", "_"))
               and n not in ("next",)]
    # Plugin commands live on plugin classes; collect them too.
    from tilecore.tdb import plugins

    from tilecore.tdb.datacheck import DataCheckPlugin

    have = {a[3:] for cls in (plugins.BreakpointPlugin, plugins.DisplayPlugin, plugins.InfoPlugin, DataCheckPlugin)
            for a in dir(cls) if a.startswith("do_")}
    missing = [n for n in missing if n.replace("-", "_") not in have]
    assert not missing, missing

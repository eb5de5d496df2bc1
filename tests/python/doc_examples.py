"""tests/python/doc_examples.py — running the Python examples of a docs/ page.

Every page's ```python blocks (except those fenced ```python skip) run in order as
one program, in a fresh interpreter so the page's registrations do not leak into
other tests. The program is written to a file and padded with blank lines so that
tracebacks and kernel source lines point at the page's own line numbers (the DSL
parser also needs kernel source on disk).
"""
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BLOCK = re.compile(r"^```python[ \t]*(?P<info>[^\n]*)\n(?P<code>.*?)^```[ \t]*$", re.M | re.S)


def page_text(page):
    with open(os.path.join(REPO, "docs", page), encoding="utf-8") as f:
        return f.read()


def code_blocks(page):
    """(first line, code) of each runnable python block of docs/<page>."""
    text = page_text(page)
    for m in BLOCK.finditer(text):
        if "skip" not in m.group("info").split():
            yield text.count("\n", 0, m.start()) + 2, m.group("code")


def run_page(page, tmp_path, cwd=REPO, env=None):
    """Runs docs/<page>'s examples as one program; returns the CompletedProcess."""
    lines = []
    for first, code in code_blocks(page):
        while len(lines) < first - 1:
            lines.append("")
        lines.extend(code.splitlines())
    assert lines, f"docs/{page} has no python examples"
    program = tmp_path / (page.replace(".", "_") + "_examples.py")
    program.write_text("\n".join(lines) + "\n", encoding="utf-8")
    if env is None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return subprocess.run([sys.executable, str(program)], capture_output=True, text=True, env=env, cwd=cwd)

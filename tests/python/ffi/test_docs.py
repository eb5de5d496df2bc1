"""Runs the python code blocks of docs/ffi.md, in order, as one program.

Blocks fenced as ```python are run; ```python skip blocks (those needing files the
test cannot make) are not. The program runs in a fresh interpreter so the page's
registrations do not leak into other tests.
"""
import os
import re
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DOC = os.path.join(REPO, "docs", "ffi.md")

BLOCK = re.compile(r"^```python[ \t]*(?P<info>[^\n]*)\n(?P<code>.*?)^```[ \t]*$", re.M | re.S)


def code_blocks(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for m in BLOCK.finditer(text):
        if "skip" not in m.group("info").split():
            line = text.count("\n", 0, m.start()) + 2
            yield line, m.group("code")


def test_doc_has_examples():
    assert len(list(code_blocks(DOC))) >= 10


def test_doc_examples_run():
    pytest.importorskip("torch")
    program = []
    for line, code in code_blocks(DOC):
        # Keep the doc's line numbers in tracebacks: pad to the block's first line.
        program.append((line, code))
    source_lines = []
    for line, code in program:
        while len(source_lines) < line - 1:
            source_lines.append("")
        source_lines.extend(code.splitlines())
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    proc = subprocess.run([sys.executable, "-c", "\n".join(source_lines)], capture_output=True,
                          text=True, env=env, cwd=REPO)
    assert proc.returncode == 0, f"docs/ffi.md example failed:\n{proc.stderr}"

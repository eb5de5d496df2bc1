"""Runs the python code blocks of docs/dsl.md, in order, as one program.

Kernels need their source on disk (the parser reads it), so the blocks are written
to a temporary file, padded so the doc's line numbers stay in tracebacks, and run
in a fresh interpreter.
"""
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DOC = os.path.join(REPO, "docs", "dsl.md")

BLOCK = re.compile(r"^```python[ \t]*(?P<info>[^\n]*)\n(?P<code>.*?)^```[ \t]*$", re.M | re.S)


def code_blocks(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for m in BLOCK.finditer(text):
        if "skip" not in m.group("info").split():
            yield text.count("\n", 0, m.start()) + 2, m.group("code")


def test_doc_has_examples():
    assert len(list(code_blocks(DOC))) >= 10


def test_doc_examples_run(tmp_path):
    lines = []
    for first, code in code_blocks(DOC):
        while len(lines) < first - 1:
            lines.append("")
        lines.extend(code.splitlines())
    program = tmp_path / "dsl_md_examples.py"
    program.write_text("\n".join(lines) + "\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env.pop("TILECORE_PYSIM_SINGLE_THREAD", None)
    proc = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, env=env, cwd=REPO)
    assert proc.returncode == 0, f"docs/dsl.md example failed:\n{proc.stderr}"
    assert "[core 1] core 1 sees [0, 1, 2, 3, 4, 5, 6, 7]" in proc.stdout

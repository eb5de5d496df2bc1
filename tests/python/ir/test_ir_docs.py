"""Runs the python blocks of docs/ir.md and docs/passes.md, each page as one program."""
import os
import subprocess
import sys

import pytest

from doc_examples import BLOCK, REPO, run_page


@pytest.mark.parametrize("page", ["ir.md", "passes.md"])
def test_doc_examples_run(page, tmp_path):
    proc = run_page(page, tmp_path)
    assert proc.returncode == 0, f"docs/{page} example failed:\n{proc.stderr}"


def test_ir_doc_printed_text_matches():
    """The printed kernel shown in docs/ir.md is what the first example prints."""
    with open(os.path.join(REPO, "docs", "ir.md"), encoding="utf-8") as f:
        text = f.read()
    code = BLOCK.search(text).group("code")
    shown = text.split("prints\n\n```\n", 1)[1].split("```", 1)[0].rstrip("\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO)
    assert proc.stdout.rstrip("\n") == shown

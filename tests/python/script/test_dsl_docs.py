"""Runs the python code blocks of docs/dsl.md, in order, as one program.

Kernels need their source on disk (the parser reads it), so the blocks are written
to a temporary file, padded so the doc's line numbers stay in tracebacks, and run
in a fresh interpreter.
"""
import os
import sys

from doc_examples import code_blocks, run_page


def test_doc_has_examples():
    assert len(list(code_blocks("dsl.md"))) >= 10


def test_doc_examples_run(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env.pop("TILECORE_PYSIM_SINGLE_THREAD", None)
    proc = run_page("dsl.md", tmp_path, env=env)
    assert proc.returncode == 0, f"docs/dsl.md example failed:\n{proc.stderr}"
    assert "[core 1] core 1 sees [0, 1, 2, 3, 4, 5, 6, 7]" in proc.stdout

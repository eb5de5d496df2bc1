"""Runs the python code blocks of docs/compiler.md, in order, as one program."""
from doc_examples import code_blocks, run_page


def test_doc_has_examples():
    assert len(list(code_blocks("compiler.md"))) >= 1


def test_doc_examples_run(tmp_path):
    proc = run_page("compiler.md", tmp_path)
    assert proc.returncode == 0, f"docs/compiler.md example failed:\n{proc.stderr}"

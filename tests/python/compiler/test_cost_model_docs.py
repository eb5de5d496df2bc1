"""Runs the python code blocks of docs/cost_model.md, in order, as one program."""
import re

import pytest

from doc_examples import code_blocks, run_page

pytestmark = pytest.mark.npu


def test_doc_has_examples():
    assert len(list(code_blocks("cost_model.md"))) >= 1


def test_doc_examples_run(tmp_path):
    proc = run_page("cost_model.md", tmp_path)
    assert proc.returncode == 0, f"docs/cost_model.md example failed:\n{proc.stderr}"
    # the form of output the page describes (it quotes no counts: they move with the plan)
    assert re.search(r"^estimated \d+ cycles, bound by (din|dout|mm|vec|sc|ddr|l2); simulated \d+$", proc.stdout, re.M)

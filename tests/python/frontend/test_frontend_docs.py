"""docs/frontend.md: its python blocks run as one program, and its quotes of
examples/custom_op are the example's source, verbatim."""
import os
import re
import textwrap

from doc_examples import REPO, page_text, run_page

QUOTE = re.compile(r"^<!-- quote: (?P<path>\S+) (?P<region>\S+) -->\n```\w+\n(?P<code>.*?)^```$", re.M | re.S)


def _region(path, name):
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^[ \t]*(?://|#) \[" + re.escape(name) + r"\.begin\][^\n]*\n(.*?)^[ \t]*(?://|#) \["
                  + re.escape(name) + r"\.end\]", text, re.M | re.S)
    assert m, f"{path} has no region {name}"
    return textwrap.dedent(m.group(1))


def test_frontend_doc_examples_run(tmp_path):
    proc = run_page("frontend.md", tmp_path)
    assert proc.returncode == 0, f"docs/frontend.md example failed:\n{proc.stderr}"
    assert '= Gemm(%x, %w, %b)' in proc.stdout


def test_frontend_doc_quotes_the_example_verbatim():
    quotes = list(QUOTE.finditer(page_text("frontend.md")))
    assert len(quotes) == 4
    for m in quotes:
        assert m.group("code") == _region(m.group("path"), m.group("region")), (
            f"docs/frontend.md quotes {m.group('path')} [{m.group('region')}] out of date")

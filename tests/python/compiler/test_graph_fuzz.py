"""The graph fuzzer, a seeded slice: random valid ONNX graphs (fuzz_graphs.py) compiled
with the default options (epilogue fusion and layer groups on), run on the simulator and
compared with ONNX Runtime. A CompileError is an honest refusal; a wrong output or any
other exception fails, unless the graph has the pattern of a defect already recorded in
test_graph_fuzz_cases.py. Hypothesis draws graphs (derandomized: the same ones every run;
small ones mostly) and shrinks a failing one; a seeded slice draws larger ones, the first
graphs of `python benchmarks/graph_fuzz.py --seed 0`, which runs many more."""
import pathlib
import sys

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, note, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import fuzz_graphs as fg  # noqa: E402

GRAPHS = 150          # drawn by Hypothesis
SEEDED = range(40)    # graphs (0, i) of the numpy-seeded generator


@pytest.mark.npu
@settings(max_examples=GRAPHS, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(st.data())
def test_random_graphs_match_onnxruntime(data):
    case = fg.generate(fg.HypothesisDraw(data))
    note(f"blocks: {case.blocks}\n{fg.onnx.printer.to_text(case.model.graph)}")
    res = fg.check(case)
    if res["outcome"] in ("mismatched", "crashed") and fg.known_defect(case):
        return
    assert res["outcome"] not in ("mismatched", "crashed"), \
        f"{res['outcome']}: {res['detail']}; verify: {res.get('verify', '')}"


@pytest.mark.npu
def test_seeded_graphs_match_onnxruntime():
    failures = []
    for i in SEEDED:
        case = fg.generate(fg.RngDraw([0, i]))
        res = fg.check(case)
        if res["outcome"] in ("mismatched", "crashed") and not fg.known_defect(case):
            failures.append(f"graph 0/{i} ({', '.join(case.blocks)}): {res['outcome']}: {res['detail']}; "
                            f"verify: {res.get('verify', '')}")
    assert not failures, "\n".join(failures)


@pytest.mark.npu
def test_generator_is_reproducible_and_shrinks():
    """The same seed gives the same graph; replaying its choices too; an empty choice
    sequence gives the smallest graph (one block)."""
    a, b = fg.generate(fg.RngDraw([3, 5])), fg.generate(fg.RngDraw([3, 5]))
    assert a.model.SerializeToString() == b.model.SerializeToString()
    c = fg.generate(fg.RngDraw(replay=a.choices))
    assert c.model.SerializeToString() == a.model.SerializeToString() and c.choices == a.choices
    smallest = fg.generate(fg.RngDraw(replay=[]))
    assert len(smallest.blocks) == 1 and fg.check(smallest)["outcome"] == "matched"
    # shrinking keeps the failure (here: three nodes or more) and gives a shorter sequence
    big = next(g for g in (fg.generate(fg.RngDraw([3, i])) for i in range(100)) if len(g.model.graph.node) >= 8)
    small, choices = fg.shrink(big.choices, lambda g: len(g.model.graph.node) >= 3, budget=100)
    assert 3 <= len(small.model.graph.node) < len(big.model.graph.node) and len(choices) < len(big.choices)

"""tests/python/script/test_stubs.py — the stub of tilecore.script and the DSL reference
agree with the registry: every exported name has a stub entry with the front end's
signature, and every one is in docs/dsl.md's reference."""
import ast
import inspect
import os
import re
import types

import tilecore.script as S
from tilecore.script import registry, stubgen

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _exported():
    return [n for n in dir(S) if not n.startswith("_") and not isinstance(getattr(S, n), types.ModuleType)]


def _stub_tree():
    with open(stubgen.STUB_PATH, encoding="utf-8") as f:
        return ast.parse(f.read())


def test_committed_stub_is_what_the_registry_gives():
    with open(stubgen.STUB_PATH, encoding="utf-8") as f:
        committed = f.read()
    assert committed == stubgen.render(), "run python -m tilecore.script.stubgen"


def test_every_export_is_in_the_stub_with_its_parameters():
    tree = _stub_tree()
    declared = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            declared[node.name] = node
        elif isinstance(node, ast.AnnAssign):
            declared[node.target.id] = node
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                declared[alias.asname or alias.name] = node
    exported = _exported()
    assert len(exported) >= 100
    missing = [n for n in exported if n not in declared]
    assert not missing, missing
    for name in exported:
        obj = getattr(S, name)
        if not isinstance(obj, registry.Api):
            continue
        node = declared[name]
        params = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
        if node.args.vararg:
            params.append(node.args.vararg.arg)
        want = [p.name for p in inspect.signature(obj.front).parameters.values() if p.kind is not p.VAR_KEYWORD]
        assert params == want, (name, params, want)
        assert ast.get_docstring(node), f"S.{name} has no docstring in the stub"


def test_every_export_is_in_the_dsl_reference():
    with open(os.path.join(REPO, "docs", "dsl.md"), encoding="utf-8") as f:
        doc = f.read()
    reference = doc[doc.index("## Reference"):]
    words = set()
    for span in re.findall(r"`([^`\n]+)`", reference):
        words.update(re.findall(r"[A-Za-z_]\w*", span))
    missing = [n for n in _exported() if n not in words]
    assert not missing, f"not in docs/dsl.md's reference: {missing}"


def test_stale_stub_is_reported(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "__init__.pyi"
    stale.write_text("# old\n")
    monkeypatch.setattr(stubgen, "STUB_PATH", str(stale))
    assert stubgen.main(["--check"]) == 1
    assert "stale" in capsys.readouterr().out

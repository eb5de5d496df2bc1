"""Every broad ``except Exception`` in the compiler's Python says why: it re-raises as a
CompileError naming the node (the next line), or its line carries the reason as a comment
(what is left as it is, reported where). A fallback that changes the program is recorded
in the compile report too (``plan_fallbacks``, test_layer_groups.py)."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
FOLDER = os.path.join(ROOT, "python", "tilecore", "compiler")
BROAD = re.compile(r"^\s*except\s+(?:Exception|BaseException)\b[^:]*:\s*(.*)$|^\s*except\s*:")


def unexplained(lines):
    """(line number, text) of each broad except without a reason: no comment of a few words
    after it, and no `raise` on the next line."""
    out = []
    for k, line in enumerate(lines):
        m = BROAD.match(line)
        if not m:
            continue
        comment = (m.group(1) or "").lstrip("#").replace("noqa: BLE001", "").strip(" —-()")
        reraise = k + 1 < len(lines) and lines[k + 1].strip().startswith("raise ")
        if len(comment.split()) < 3 and not reraise:
            out.append((k + 1, line.strip()))
    return out


def test_every_broad_except_says_why():
    found = []
    for name in sorted(os.listdir(FOLDER)):
        if name.endswith(".py"):
            lines = open(os.path.join(FOLDER, name), encoding="utf-8").read().splitlines()
            found += [f"{name}:{k}: {text}" for k, text in unexplained(lines)]
    assert found == [], "a broad except without its reason:\n" + "\n".join(found)


def test_the_rule_can_fail():
    assert unexplained(["try:", "    f()", "except Exception:", "    pass"]) == [(3, "except Exception:")]
    assert unexplained(["except Exception:  # noqa: BLE001", "    pass"]) == [(1, "except Exception:  # noqa: BLE001")]
    assert unexplained(["except Exception as e:", "    raise CompileError(str(e)) from e"]) == []
    assert unexplained(["except Exception:  # noqa: BLE001 — not static: the partition reports it"]) == []

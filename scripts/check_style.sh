#!/usr/bin/env bash
# scripts/check_style.sh — the house style (docs/contributing.md), checked: clang-format
# over the C++ tree and ruff over the Python. Fails on a violation and names the file;
# `bash scripts/check_style.sh --fix` rewrites the files instead.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON=${PYTHON:-python3}
source "$ROOT/scripts/common.sh"
need_deb clang-format-14 clang-format-14 "the style check"
"$PYTHON" -c "import ruff" 2>/dev/null || "$PYTHON" -m pip install -q --disable-pip-version-check ruff \
  || { echo "tilecore: the style check needs ruff (pip install ruff)"; exit 1; }
cd "$ROOT" || exit 1
mapfile -t cxx < <(git ls-files '*.h' '*.cc' '*.def' 2>/dev/null)
[ ${#cxx[@]} -gt 0 ] || mapfile -t cxx < <(find include src python/csrc tests -name '*.h' -o -name '*.cc')
status=0
if [ "${1:-}" = "--fix" ]; then
  clang-format-14 -i "${cxx[@]}"
  "$PYTHON" -m ruff check --fix --quiet .
  exit 0
fi
if ! clang-format-14 --dry-run -Werror "${cxx[@]}" 2>"$ROOT/.style.log"; then
  echo "tilecore: C++ layout differs from .clang-format in:"
  grep -oE '^[^ :]+\.(h|cc|def):[0-9]+:[0-9]+: ' "$ROOT/.style.log" | cut -d: -f1 | sort -u | head -n 20
  echo "(bash scripts/check_style.sh --fix rewrites them)"
  status=1
fi
rm -f "$ROOT/.style.log"
"$PYTHON" -m ruff check --quiet . || status=1
[ $status = 0 ] && echo "style: clang-format and ruff clean (${#cxx[@]} C++ files)"
exit $status

#!/usr/bin/env bash
# Quick check of the documentation's pages while writing them: build docs/ with warnings as
# errors, leaving out only the API reference from the docstrings (docs/reference/api.rst, the
# slow part: a stub stands in), then run the doctests of the pages named (all of docs/ when none).
#   tools/docs_page_check.sh [docs/tutorial/adding.rst ...]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ffigraph-docs-check.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cp -r docs "$tmp/docs"
for d in ffigraph examples tools; do ln -s "$PWD/$d" "$tmp/$d"; done   # what the pages include
rm -rf "$tmp/docs/_build" "$tmp/docs/reference/api"
printf 'Python API\n==========\n\n(left out of the quick check)\n' > "$tmp/docs/reference/api.rst"
FFIGRAPH_DOCS_OFFLINE=1 .venv/bin/sphinx-build -W --keep-going -q -b html "$tmp/docs" "$tmp/html"
echo "sphinx-build -W: no warnings"
if [[ $# -eq 0 ]]; then set -- docs; fi
.venv/bin/python -m pytest -q -p no:cacheprovider --doctest-glob='*.rst' "$@"

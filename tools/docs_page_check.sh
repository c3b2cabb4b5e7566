#!/usr/bin/env bash
# Check the documentation while writing it: build docs/ with warnings as errors (as the Docs phase
# of ./dev test does, into a temporary folder), then run the doctests of the pages named (all of
# docs/ when none).
#   tools/docs_page_check.sh [docs/tutorial/adding.rst ...]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=$(mktemp -d "${TMPDIR:-/tmp}/ffigraph-docs-check.XXXXXX")
trap 'rm -rf "$out"' EXIT
FFIGRAPH_DOCS_OFFLINE=1 .venv/bin/sphinx-build -W --keep-going -q -j auto -b html docs "$out"
echo "sphinx-build -W: no warnings"
if [[ $# -eq 0 ]]; then set -- docs; fi
.venv/bin/python -m pytest -q -p no:cacheprovider --doctest-glob='*.rst' "$@"

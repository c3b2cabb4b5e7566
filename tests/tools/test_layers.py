"""The import DAG: docs/layers.md draws what .importlinter enforces, and lint-imports catches a new
forbidden import (the ./dev test phase "Imports" runs it on the real tree before the tests)."""
import configparser
import os
import re
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONTRACTS = os.path.join(REPO, ".importlinter")
DOC = os.path.join(REPO, "docs", "layers.md")
PACKAGE = os.path.join(REPO, "ffigraph")


def _contracts():
    parser = configparser.ConfigParser()
    parser.read(CONTRACTS)
    return {name.split(":", 2)[2]: dict(parser[name]) for name in parser.sections()
            if name.startswith("importlinter:contract:")}


def _lines(value):
    return [line.strip() for line in value.strip().splitlines() if line.strip()]


def _doc_block(kind):
    text = open(DOC).read()
    found = re.search(r"```%s\n(.*?)```" % re.escape(kind), text, re.S)
    assert found, "docs/layers.md has no ```%s block" % kind
    return found.group(1).strip()


def _layer_modules(layers):
    return [name.strip() for layer in layers for name in re.split(r"[|:]", layer)]


def test_doc_draws_the_contracts_layers():
    layers = _lines(_contracts()["layers"]["layers"])
    assert _lines(_doc_block("layers")) == layers


def test_every_top_level_module_is_in_a_layer():
    """A new subpackage or module must be placed in the stack (else no contract would see it)."""
    placed = set(_layer_modules(_lines(_contracts()["layers"]["layers"])))
    present = set()
    for entry in os.listdir(PACKAGE):
        path = os.path.join(PACKAGE, entry)
        if entry.endswith(".py") and entry != "__init__.py":
            present.add("ffigraph." + entry[:-3])
        elif os.path.isfile(os.path.join(path, "__init__.py")):
            present.add("ffigraph." + entry)
    assert present - placed == set(), "not in any layer of .importlinter"
    assert placed - present == set(), "layers name modules that do not exist"


def test_doc_names_every_forbidden_contract():
    doc = open(DOC).read()
    forbidden = {key: c for key, c in _contracts().items() if c["type"] == "forbidden"}
    assert {"graph", "linkers", "tensor", "scalar", "cuda"} <= set(forbidden)
    for contract in forbidden.values():
        assert contract["name"] in doc, contract["name"]
    linkers = set(_lines(forbidden["linkers"]["forbidden_modules"]))
    assert {"ffigraph.tensor", "ffigraph.compile", "ffigraph.cuda", "ffigraph.export"} <= linkers
    tensor = set(_lines(forbidden["tensor"]["forbidden_modules"]))
    assert {"ffigraph.compile", "ffigraph.rewriting", "ffigraph.cuda"} <= tensor
    # every layer but cuda itself is forbidden to import it
    cuda_sources = set(_lines(forbidden["cuda"]["source_modules"]))
    layers = set(_layer_modules(_lines(_contracts()["layers"]["layers"])))
    assert cuda_sources == layers - {"ffigraph.cuda"}


def _tools():
    sys.path.insert(0, os.path.join(REPO, "tools"))
    try:
        import import_graph
    finally:
        sys.path.pop(0)
    return import_graph


def test_doc_carries_the_package_graph_and_it_has_no_circle():
    pytest.importorskip("grimp", reason="grimp (with import-linter) is in the CPython test extras only")
    import_graph = _tools()
    edges = import_graph.package_edges()
    assert import_graph.find_circle(edges) is None
    assert _doc_block("import-graph") == import_graph.text(edges), \
        "docs/layers.md's import graph is stale: paste `python tools/import_graph.py` into it"


def test_find_circle_finds_one():
    import_graph = _tools()
    assert import_graph.find_circle({"a": ["b"], "b": ["c"], "c": ["a"]}) == ["a", "b", "c", "a"]
    assert import_graph.find_circle({"a": ["b"], "b": ["c"], "c": []}) is None


def test_lint_imports_fails_on_a_new_forbidden_import(tmp_path):
    """A copy of the package where the graph layer imports compile inside a function body: the
    contracts must break (the real tree's check is the ./dev test phase)."""
    lint = shutil.which("lint-imports", path=os.path.dirname(sys.executable))
    if lint is None:
        pytest.skip("lint-imports (import-linter) is in the CPython test extras only")
    shutil.copytree(PACKAGE, str(tmp_path / "ffigraph"), ignore=shutil.ignore_patterns("__pycache__"))
    utils = tmp_path / "ffigraph" / "graph" / "utils.py"
    utils.write_text(utils.read_text() + "\n\ndef _sneaky():\n    from ffigraph.compile.function import function\n"
                     "    return function\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    run = subprocess.run([lint, "--no-cache", "--no-logo", CONTRACTS], cwd=str(tmp_path), env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode != 0, run.stdout
    assert "ffigraph.graph.utils -> ffigraph.compile.function" in run.stdout
    assert "graph imports nothing of ffigraph but config BROKEN" in run.stdout
    # and the same command on the real tree keeps every contract
    clean = subprocess.run([lint, "--no-cache", "--no-logo", CONTRACTS], cwd=REPO, capture_output=True,
                           text=True, timeout=120)
    assert clean.returncode == 0, clean.stdout

"""tools/doc_figures.py: the documentation's logistic-regression picture comes from it."""
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # the repository
SCRIPT = os.path.join(ROOT, "tools", "doc_figures.py")


def test_the_debugging_page_shows_the_generated_picture():
    with open(os.path.join(ROOT, "docs", "tutorial", "debugging.rst")) as fh:
        assert "/logreg_train.svg" in fh.read()
    assert os.path.getsize(os.path.join(ROOT, "docs", "logreg_train.svg")) > 1000


def test_script_regenerates_the_picture(tmp_path):
    pytest.importorskip("graphviz", reason="the graphviz Python package is not installed")
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot program is not on PATH (apt-get install graphviz)")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    subprocess.run([sys.executable, SCRIPT, "--out-dir", str(tmp_path)],
                   check=True, env=env, capture_output=True, timeout=600)
    svg = ET.parse(str(tmp_path / "logreg_train.svg"))
    nodes = [g for g in svg.iter("{http://www.w3.org/2000/svg}g") if g.get("class") == "node"]
    assert len(nodes) > 40   # the train graph: ~32 Apply nodes and their variables

"""tools/readme_figures.py: the README's logistic-regression picture and profile table come from it."""
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # the repository
SCRIPT = os.path.join(ROOT, "tools", "readme_figures.py")
BEGIN, END = "<!-- logreg-profile:begin -->", "<!-- logreg-profile:end -->"


def test_readme_has_the_generated_block_and_picture():
    with open(os.path.join(ROOT, "README.md")) as fh:
        text = fh.read()
    block = text[text.index(BEGIN):text.index(END)]
    assert "Function profile: 'train'" in block and "compile:" in block
    assert "docs/logreg_train.svg" in text
    assert os.path.getsize(os.path.join(ROOT, "docs", "logreg_train.svg")) > 1000


def test_script_regenerates_both(tmp_path):
    pytest.importorskip("graphviz", reason="the graphviz Python package is not installed")
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot program is not on PATH (apt-get install graphviz)")
    readme = tmp_path / "README.md"
    readme.write_text("before\n%s\nold table\n%s\nafter\n" % (BEGIN, END))
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    subprocess.run([sys.executable, SCRIPT, "--steps", "3", "--readme", str(readme), "--out-dir", str(tmp_path)],
                   check=True, env=env, capture_output=True, timeout=600)
    text = readme.read_text()
    assert text.startswith("before\n") and text.endswith("after\n") and "old table" not in text
    assert "calls: 3," in text
    svg = ET.parse(str(tmp_path / "logreg_train.svg"))
    nodes = [g for g in svg.iter("{http://www.w3.org/2000/svg}g") if g.get("class") == "node"]
    assert len(nodes) > 40   # the train graph: ~32 Apply nodes and their variables

"""d3viz: the page of a compiled function's graph, checked as text and, where Chromium is
installed (CI installs it), rendered in headless Chromium, whose DOM after the page's script has run
must show the graph's node count (and every part of the fused programs with #expand)."""
import json
import re
import shutil
import subprocess

import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph.d3viz import d3viz, d3write

CHROMIUM = next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(name)), None)


def _function(profile=False):
    x = T.dmatrix("x")
    W = ffigraph.shared(np.ones((3, 2)), "W")
    y = T.tanh(T.dot(x, W) + 1) * 2 - T.exp(x).sum()
    f = ffigraph.function([x], y, profile=profile, name="</title><script>alert(1)</script>")
    f(np.ones((4, 3)))
    return f


def _rendered(path, tmp_path, suffix=""):
    out = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=%s" % (tmp_path / "chromium"),
                          "--dump-dom", "file://%s%s" % (path, suffix)], capture_output=True, text=True, timeout=120)
    return dict(re.findall(r'data-ffg-(nodes|visible)="(\d+)"', out.stdout))


def test_page_text(tmp_path):
    f = _function(profile=True)
    path = d3viz(f, str(tmp_path / "sub" / "graph.html"))
    page = open(path).read()
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "<script>" in page
    assert "<script>alert(1)" not in page and "&lt;/title&gt;&lt;script&gt;" in page   # the name is escaped
    composites = re.search(r"var composites = (\{.*?\});", page).group(1)
    assert composites.count("_c_t") >= 2      # the fused nodes' programs, by their parts
    # profiled: the slowest node in red, the others between pale yellow and red
    assert "#d73027" in page and "share of the time" in page
    plain = d3write(_function(profile=False))
    assert "#d73027" not in plain and "share of the time" not in plain


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (CI installs it): the page is not rendered")
def test_chromium_renders_every_node(tmp_path):
    f = _function()
    fgraph = f.maker.fgraph
    path = d3viz(f, str(tmp_path / "graph.html"))
    drawn = len(fgraph.apply_nodes) + len(fgraph.variables)
    parts = sum(len(ids) for ids in json.loads(re.search(r"var composites = (\{.*?\});", open(path).read()).group(1)).values())
    assert _rendered(path, tmp_path) == {"nodes": str(drawn), "visible": str(drawn)}
    assert _rendered(path, tmp_path, "#expand") == {"nodes": str(drawn), "visible": str(drawn + parts)}

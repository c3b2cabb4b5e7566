"""``d3viz(fct, outfile)``: a function's graph as one self-contained, interactive HTML page.

Theano's ``theano.d3viz.d3viz`` wrote a page that draws the graph with d3.js. This one needs no
JavaScript library and no network: Graphviz lays the graph out (``ffigraph.picture``'s DOT text,
every fused node's scalar program as a cluster), the SVG it makes is put in the page, and a small
script written here makes it interactive:

- zoom with the mouse wheel (about the pointer), pan by dragging, double-click to fit the page;
- click a fused (composite) node to show or hide its scalar program (hidden at first; all shown
  when the page's address ends in ``#expand``);
- a profiled function (``function(..., profile=True)``, called at least once) colours each node by
  its share of the time, from pale yellow (none) to red (the slowest node), and its tooltip gives
  the seconds and the share.

When the script has run, the page's ``body`` carries ``data-ffg-nodes`` (the number of graph nodes
drawn: Apply nodes and variables, the programs' parts not counted) and ``data-ffg-visible`` (the
nodes shown now, parts included), which is how the tests, loading the page in headless Chromium,
know what it rendered.
"""
from __future__ import annotations

import html
import json
import os
import re

from ffigraph.picture import graph_dot, render_dot

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>%(title)s</title>
<style>
  html, body { margin: 0; height: 100%%; font-family: Helvetica, Arial, sans-serif; }
  #bar { padding: 6px 10px; background: #f2f2f2; border-bottom: 1px solid #ccc; font-size: 13px; }
  #view { position: absolute; top: 32px; bottom: 0; left: 0; right: 0; overflow: hidden; cursor: grab; }
  #view svg { width: 100%%; height: 100%%; }
  .ffg-composite { cursor: pointer; }
</style>
</head>
<body>
<div id="bar">%(title)s &mdash; wheel: zoom, drag: pan, double-click: fit, click a fused node: its program%(profile_note)s</div>
<div id="view">%(svg)s</div>
<script>
(function () {
  "use strict";
  var svg = document.querySelector("#view svg");
  var composites = %(composites)s;   // fused node id -> the ids of its program's parts
  var nodes = svg.querySelectorAll("g.node");
  var full = svg.viewBox.baseVal, box = {x: full.x, y: full.y, w: full.width, h: full.height};
  var home = {x: box.x, y: box.y, w: box.w, h: box.h};
  function show() { svg.setAttribute("viewBox", box.x + " " + box.y + " " + box.w + " " + box.h); }
  function byTitle(kind, title) {
    var found = null;
    svg.querySelectorAll("g." + kind).forEach(function (g) {
      var t = g.querySelector("title");
      if (t && t.textContent === title) { found = g; }
    });
    return found;
  }
  function count() {
    var visible = 0;
    nodes.forEach(function (g) { if (g.style.display !== "none") { visible += 1; } });
    document.body.setAttribute("data-ffg-visible", visible);
  }
  function toggle(id, open) {
    var parts = composites[id];
    var cluster = byTitle("cluster", "cluster_" + id);
    if (cluster) { cluster.style.display = open ? "" : "none"; }
    parts.forEach(function (part) {
      var g = byTitle("node", part);
      if (g) { g.style.display = open ? "" : "none"; }
    });
    svg.querySelectorAll("g.edge").forEach(function (e) {
      var t = e.querySelector("title");
      if (t && parts.some(function (p) { return t.textContent.indexOf(p) !== -1; })) {
        e.style.display = open ? "" : "none";
      }
    });
  }
  var programNodes = 0;
  Object.keys(composites).forEach(function (id) {
    composites[id].forEach(function (part) {
      var g = byTitle("node", part);
      if (g) { g.setAttribute("data-ffg-step", "1"); programNodes += 1; }
    });
    toggle(id, window.location.hash === "#expand");   // (#expand: every program shown at first)
    var node = byTitle("node", id);
    if (node) {
      node.classList.add("ffg-composite");
      node.addEventListener("click", function () {
        var cluster = byTitle("cluster", "cluster_" + id);
        toggle(id, cluster && cluster.style.display === "none");
      });
    }
  });
  svg.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    var r = svg.getBoundingClientRect(), k = ev.deltaY < 0 ? 0.8 : 1.25;
    var px = box.x + (ev.clientX - r.left) / r.width * box.w, py = box.y + (ev.clientY - r.top) / r.height * box.h;
    box = {x: px - (px - box.x) * k, y: py - (py - box.y) * k, w: box.w * k, h: box.h * k};
    show();
  }, {passive: false});
  var drag = null;
  svg.addEventListener("mousedown", function (ev) { drag = {x: ev.clientX, y: ev.clientY, box: box}; });
  window.addEventListener("mouseup", function () { drag = null; });
  window.addEventListener("mousemove", function (ev) {
    if (!drag) { return; }
    var r = svg.getBoundingClientRect();
    box = {x: drag.box.x - (ev.clientX - drag.x) / r.width * drag.box.w,
           y: drag.box.y - (ev.clientY - drag.y) / r.height * drag.box.h, w: drag.box.w, h: drag.box.h};
    show();
  });
  svg.addEventListener("dblclick", function () { box = {x: home.x, y: home.y, w: home.w, h: home.h}; show(); });
  document.body.setAttribute("data-ffg-nodes", nodes.length - programNodes);
  count();
  svg.addEventListener("click", count);
})();
</script>
</body>
</html>
"""


def _profile_fills(fct):
    """{node: (colour, tooltip)} from a profiled function's node times, or {} when there are none."""
    profile = getattr(fct, "profile", None)
    if profile is None or not getattr(profile, "calls", 0):
        return {}
    stats = profile.nodes()
    slowest = max((s.seconds for s in stats), default=0.0)
    fills = {}
    for s in stats:
        level = s.seconds / slowest if slowest > 0 else 0.0
        # pale yellow (255, 255, 204) to red (215, 48, 39)
        rgb = [round(a + (b - a) * level) for a, b in zip((255, 255, 204), (215, 48, 39))]
        fills[s.node] = "#%02x%02x%02x" % tuple(rgb)
    return fills


def _composite_parts(dot):
    """{fused node id: the ids of its program's nodes} from the DOT text's clusters."""
    parts = {}
    for nid in re.findall(r"subgraph cluster_(\w+)", dot):
        parts[nid] = sorted(set(re.findall(r"\b(%s_c_[a-z]\d+)\b" % re.escape(nid), dot)))
    return parts


def d3write(fct, path=None, title=None):
    """The page's HTML text (written to ``path`` when given)."""
    fills = _profile_fills(fct)
    dot = graph_dot(fct, expand_composites=True, node_fills=fills)
    svg = render_dot(dot, "svg").decode("utf-8")
    svg = svg[svg.index("<svg"):]   # (the XML prolog and doctype do not belong inside HTML)
    name = title or getattr(fct, "name", None) or "ffigraph graph"
    page = _PAGE % {"title": html.escape(str(name)), "svg": svg, "composites": json.dumps(_composite_parts(dot), sort_keys=True),
                    "profile_note": " &mdash; colours: each node's share of the time" if fills else ""}
    if path is not None:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(page)
    return page


def d3viz(fct, outfile, copy_deps=True, *args, **kwargs):
    """Theano's ``d3viz(fct, outfile)``: write the interactive page of ``fct`` (a compiled function,
    or what ``debugprint`` takes) to ``outfile``. ``copy_deps`` is accepted for Theano's signature:
    the page is self-contained, so there is nothing to copy."""
    folder = os.path.dirname(os.path.abspath(outfile))
    if not os.path.isdir(folder):
        os.makedirs(folder)
    d3write(fct, outfile, title=kwargs.get("title"))
    return outfile

"""``graph_dot`` / ``graph_picture``: graphs as DOT text and as SVG/PNG/PDF pictures."""
import re
import shutil
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import function, shared
from ffigraph.compile.mode import Mode
from ffigraph.graph import FunctionGraph
from helpers import TwoOut
from ffigraph.printing import graph_dot, graph_picture
from ffigraph.scalar.composite import Composite

SVG_NS = "{http://www.w3.org/2000/svg}"


def _needs_dot():
    """The graphviz package and the dot program, or a skip saying which is missing."""
    pytest.importorskip("graphviz", reason="graphviz Python package not installed (pip install graphviz)")
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot program is not on PATH (apt-get install graphviz)")


def _fused_function():
    x, y = T.dmatrix("x"), T.dmatrix("y")
    f = function([x, y], T.exp(x) * y + T.log(x))
    nodes = f.maker.fgraph.toposort()
    assert len(nodes) == 1 and isinstance(nodes[0].op.composite, Composite), nodes
    return f


def _svg_node_count(svg):
    root = ET.fromstring(svg)
    return sum(1 for g in root.iter(SVG_NS + "g") if g.get("class") == "node")


def _svg_texts(svg):
    return [t.text for t in ET.fromstring(svg).iter(SVG_NS + "text")]


def _graph_size(fgraph):
    variables = set(fgraph.inputs) | set(fgraph.outputs)
    for node in fgraph.apply_nodes:
        variables.update(node.inputs)
        variables.update(node.outputs)
    return len(fgraph.apply_nodes) + len(variables)


def _inner_size(composite):
    consts = {ref for _, args, _ in composite.steps for ref in args if ref[0] == "const"}
    return composite.nin + len(composite.steps) + len(consts)


def _dot_node(dot, label_start):
    """The attribute text of the DOT node statement whose label starts with ``label_start``."""
    for line in dot.splitlines():
        if re.match(r'\s+\w+ \[.*label="%s' % re.escape(label_start), line):
            return line
    raise AssertionError("no node labelled %r in:\n%s" % (label_start, dot))


class NoC(TwoOut):
    """Perform only (no C code), two outputs; its own name is what the pictures label."""


# ----------------------------------------------------------------- pictures


def test_fused_svg_node_count():
    _needs_dot()
    f = _fused_function()
    svg = graph_picture(f, format="svg")
    assert _svg_node_count(svg) == _graph_size(f.maker.fgraph) == 4  # x, y, the fused node, its output
    texts = _svg_texts(svg)
    assert any(t.startswith("Composite{") and "exp(i0)" in t for t in texts), texts


def test_fused_svg_expanded_counts_inner_nodes(tmp_path):
    _needs_dot()
    f = _fused_function()
    (node,) = f.maker.fgraph.toposort()
    path = graph_picture(f, str(tmp_path / "g.svg"), expand_composites=True)
    assert path == str(tmp_path / "g.svg")
    svg = (tmp_path / "g.svg").read_bytes()
    assert _svg_node_count(svg) == _graph_size(f.maker.fgraph) + _inner_size(node.op.composite)
    root = ET.fromstring(svg)
    clusters = [g for g in root.iter(SVG_NS + "g") if g.get("class") == "cluster"]
    assert len(clusters) == 1


def test_png_written(tmp_path):
    _needs_dot()
    x = T.dvector("x")
    out = graph_picture(T.exp(x) + 1, tmp_path / "g.png")
    assert (tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out == tmp_path / "g.png"


def test_pdf_bytes_returned():
    _needs_dot()
    x = T.dvector("x")
    assert graph_picture(x * 2, format="pdf")[:5] == b"%PDF-"


def test_hostile_names_render():
    _needs_dot()
    names = ['a"b', "back\\slash", "a\nb", "<b>bold</b>", "&lt;", "\\N\\G\\L", "x\\", "a\0b", "s\udcffx",
             "\u202eevil", "}; digraph { x", "n" * 10000, "", "\u00fcn\u00ef \u2603"]
    inputs = [T.dvector(n) for n in names]
    out = inputs[0]
    for v in inputs[1:]:
        out = out + v
    out.name = '"];\n}'
    s = shared(np.zeros(3), name="] -> evil [")
    fg = FunctionGraph(inputs + [s], [out * s], clone=False)
    svg = graph_picture(fg, format="svg")
    assert _svg_node_count(svg) == _graph_size(fg)
    texts = _svg_texts(svg)
    # Printable names come back exactly; invisible or unencodable characters as escapes.
    for shown in ['a"b', "back\\slash", "a\\nb", "<b>bold</b>", "&lt;", "\\N\\G\\L", "x\\", "a\\x00b",
                  "s\\udcffx", "\\u202eevil", "}; digraph { x", "\u00fcn\u00ef \u2603", '"];\\n}', "] -> evil ["]:
        assert shown in texts, (shown, texts)
    assert not any(len(t or "") > 200 for t in texts)


# ----------------------------------------------------------------- DOT text


def test_dot_without_graphviz(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "graphviz", None)
    f = _fused_function()
    dot = graph_dot(f)
    assert dot.startswith("digraph ") and dot.rstrip().endswith("}")
    with pytest.raises(ImportError, match=r"pip install graphviz.*graph_dot\(\)"):
        graph_picture(f, str(tmp_path / "x.svg"))
    assert not (tmp_path / "x.svg").exists()
    graph_picture(f, str(tmp_path / "x.dot"))
    assert (tmp_path / "x.dot").read_text(encoding="utf-8") == dot
    assert graph_picture(f, format="dot") == dot.encode("utf-8")


def test_printing_does_not_import_graphviz():
    import subprocess

    code = "import sys, ffigraph.printing; print('graphviz' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_roles_distinguishable():
    x = T.tensor("float64", (None, 1), name="x")
    w = shared(np.ones((2, 3)), name="w")
    c = T.constant(np.float64(2.5))
    mid = T.exp(x)
    mid.name = "mid"
    out = mid * w + c
    out.name = "out"
    dot = graph_dot(FunctionGraph([x, w], [out], clone=False))
    fills = {}
    for label in ("x\\n", "w\\n", "2.5\\n", "out\\n", "mid\\n"):
        line = _dot_node(dot, label)
        assert 'shape="ellipse"' in line
        fills[label] = re.search(r'fillcolor="([^"]+)"', line).group(1)
    assert len(set(fills.values())) == 5, fills
    assert 'peripheries="2"' in _dot_node(dot, "out\\n")
    assert 'peripheries' not in _dot_node(dot, "x\\n")
    assert "dashed" in _dot_node(dot, "2.5\\n")
    assert 'shape="box"' in _dot_node(dot, "Elemwise{exp}")
    # dtype and static shape (1: a broadcastable axis).
    assert 'label="x\\nfloat64 (?, 1)"' in _dot_node(dot, "x\\n")
    assert 'label="w\\nfloat64 (?, ?)"' in _dot_node(dot, "w\\n")
    assert 'label="2.5\\nfloat64 scalar"' in _dot_node(dot, "2.5\\n")
    for word in ("input", "shared variable", "constant", "output", "intermediate"):
        assert ">%s</TD>" % word in dot


def test_input_returned_as_output_is_marked_output():
    x = T.dvector("x")
    dot = graph_dot(FunctionGraph([x], [x], clone=False))
    line = _dot_node(dot, "x\\n")
    assert 'peripheries="2"' in line and "#a6dba0" in line


def test_unnamed_variables_get_short_ids():
    x = T.dvector()
    dot = graph_dot(T.exp(x))
    assert 'label="id A\\nfloat64 (?,)"' in dot and 'label="id B\\nfloat64 (?,)"' in dot


def test_edge_labels_for_positions_and_outputs():
    x, y = T.dvector("x"), T.dvector("y")
    a, b = NoC()(x)
    dot = graph_dot([a - y, T.exp(b)])
    assert re.search(r'-> a\d+ \[label="1"\];', dot)  # input position on the two-input sub
    assert re.search(r'a\d+ -> v\d+ \[label="out 0"\];', dot)
    assert re.search(r'a\d+ -> v\d+ \[label="out 1"\];', dot)
    exp_id = re.search(r'(a\d+) \[shape="box".*label="Elemwise\{exp\}"', dot).group(1)
    assert not re.search(r"-> %s \[label" % exp_id, dot)  # one input: no position label


def test_same_input_twice_gets_two_edges():
    x = T.dvector("x")
    dot = graph_dot(x * x)
    assert re.search(r'v0 -> a0 \[label="0"\];', dot) and re.search(r'v0 -> a0 \[label="1"\];', dot)


@pytest.mark.parametrize("linker", ["py", "c|py", "cvm"])
def test_python_nodes_marked(linker):
    x = T.dvector("x")
    a, b = NoC()(x)
    f = function([x], T.exp(a) + b, mode=Mode(linker=linker, optimizer=None))
    dot = graph_dot(f)
    noc = _dot_node(dot, "NoC")
    assert "(python)" in noc and "#f4a582" in noc
    exp = _dot_node(dot, "Elemwise{exp}")
    assert ("(python)" in exp) == (linker == "py")
    assert "Apply run in Python" in dot


def test_c_function_has_no_python_mark():
    f = _fused_function()
    assert "(python)" not in graph_dot(f)


def test_fused_label_and_expansion():
    f = _fused_function()
    (node,) = f.maker.fgraph.toposort()
    dot = graph_dot(f)
    assert "Composite{" in dot and "cluster" not in dot
    expanded = graph_dot(f, expand_composites=True)
    assert expanded.count("subgraph cluster_") == 1
    assert "lhead=cluster_" in expanded and "compound=true" in expanded
    inner = re.findall(r"^    (a\d+_c_\w+) \[", expanded, re.M)
    assert len(inner) == _inner_size(node.op.composite)


def test_accepts_what_debugprint_accepts():
    x, y = T.dvector("x"), T.dvector("y")
    out = T.exp(x) * y
    fg = FunctionGraph([x, y], [out], clone=False)
    for obj in (out, [out], (out, x), out.owner, fg, function([x, y], out)):
        assert graph_dot(obj).startswith("digraph ")


def test_update_output_marked():
    x = T.dvector("x")
    w = shared(np.zeros(2), name="w")
    f = function([x], x + w, updates=[(w, w + x)])
    assert "(update)" in graph_dot(f)


def test_long_chain_no_recursion_error():
    x = T.dvector("x")
    out = x
    for _ in range(3000):
        out = -out
    assert graph_dot(out).count('shape="box"') == 3000


# ----------------------------------------------------------------- errors


@pytest.mark.parametrize("bad", [42, "x", None, object(), [T.dvector("x"), 3]])
def test_bad_object_type_error(bad):
    with pytest.raises(TypeError, match="cannot draw"):
        graph_dot(bad)
    with pytest.raises(TypeError, match="cannot draw"):
        graph_picture(bad, format="dot")


def test_empty_list_value_error():
    with pytest.raises(ValueError, match="nothing to draw"):
        graph_dot([])


def test_expand_composites_must_be_bool():
    with pytest.raises(TypeError, match="expand_composites"):
        graph_dot(T.dvector("x"), expand_composites="yes")


@pytest.mark.parametrize("path, fmt, named",
                         [("g.jpeg", None, "jpeg"), ("g.svg", "bmp", "bmp"), ("noext", None, "noext")])
def test_unknown_format_value_error(tmp_path, path, fmt, named):
    with pytest.raises(ValueError, match=named):
        graph_picture(T.dvector("x"), str(tmp_path / path), format=fmt)
    assert not (tmp_path / path).exists()


def test_bad_path_and_format_types():
    with pytest.raises(TypeError, match="path"):
        graph_picture(T.dvector("x"), 3)
    with pytest.raises(TypeError, match="format"):
        graph_picture(T.dvector("x"), format=3)


def test_missing_dot_program_runtime_error(monkeypatch):
    graphviz = pytest.importorskip("graphviz", reason="graphviz Python package not installed")

    def no_dot(self, *args, **kwargs):
        raise graphviz.ExecutableNotFound(["dot"])

    monkeypatch.setattr(graphviz.Source, "pipe", no_dot)
    with pytest.raises(RuntimeError, match="apt-get install graphviz"):
        graph_picture(T.dvector("x"), format="svg")

"""Graph pictures: a graph as Graphviz DOT text, and that text rendered to SVG, PNG or PDF.

``graph_dot`` builds the DOT text itself and needs nothing outside ffigraph;
``graph_picture`` hands that text to the ``graphviz`` Python package (which
runs Graphviz's ``dot`` program) to make the picture.

The picture is bipartite, like the graph: an Apply node is a box, a Variable
an ellipse. Fill colours (a legend under the picture lists those it uses):

==========================  =========== ===========================================
what                        colour      notes
==========================  =========== ===========================================
Apply node                  ``#d9d9d9`` box; grey
Apply node run in Python    ``#f4a582`` box; salmon, label ends with ``(python)``
graph input                 ``#a6dba0`` ellipse; green
shared variable             ``#c2a5cf`` ellipse; purple
constant                    ``#ffffb3`` ellipse, dashed outline; yellow
graph output                ``#92c5de`` double ellipse; blue (any output, input
                                        or not, has the double outline)
intermediate variable       ``#ffffff`` ellipse; white
inner scalar step           ``#fde0ef`` box inside a composite's cluster; pink
==========================  =========== ===========================================

A variable's label is its name (or its value for an unnamed constant, or a
short ``id X`` otherwise), then its dtype and static shape: ``?`` is an axis
known only at run time and ``1`` a broadcastable axis. An output that updates
a shared variable says ``(update)``.
"""
from __future__ import annotations

import os
import unicodedata

from ffigraph.graph.basic import Apply, Constant, Variable
from ffigraph.graph.fg import FunctionGraph
from ffigraph.graph.utils import char_from_number

__all__ = ["graph_dot", "graph_picture", "pydotprint", "render_dot", "FORMATS"]

# output format -> what graphviz is asked for (None: the DOT text, no graphviz needed)
FORMATS = {"svg": "svg", "png": "png", "pdf": "pdf", "dot": None, "gv": None}

_APPLY_FILL = "#d9d9d9"
_PYTHON_FILL = "#f4a582"
_ROLE_FILL = {"input": "#a6dba0", "shared": "#c2a5cf", "constant": "#ffffb3", "output": "#92c5de",
              "intermediate": "#ffffff"}
_STEP_FILL = "#fde0ef"

# A label is cut here so that one hostile 10,000-character name cannot blow up the layout.
_MAX_NAME = 60
_WRAP = 60
_MAX_OP_TEXT = 600
# Unicode categories shown as escapes: controls, format marks (bidi overrides), surrogates,
# private use, unassigned, line/paragraph separators.
_HIDDEN_CATEGORIES = ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")
_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


# ----------------------------------------------------------------- public API


def graph_dot(f_or_variables, expand_composites=False, node_fills=None):
    """The DOT text (a str) of a graph, built without the ``graphviz`` package.

    f_or_variables: what ``debugprint`` takes: a compiled Function (its
    rewritten graph ``f.maker.fgraph`` is drawn, and nodes its linker runs in
    Python are marked), a FunctionGraph, a Variable, an Apply node (with all
    its outputs), or a list/tuple of these.
    expand_composites: draw each fused composite's scalar program as a
    cluster next to its node, instead of only the expression in its label.
    node_fills: {Apply node: fill colour} for nodes drawn in another colour
    than their kind's (d3viz's profile colours).

    See the module docstring for shapes and colours.
    """
    if not isinstance(expand_composites, bool):
        raise TypeError("graph_dot: expand_composites must be True or False, got %r" % (expand_composites,))
    scene = _Scene()
    _collect(f_or_variables, scene, "graph_dot")
    if not scene.outputs and not scene.inputs:
        raise ValueError("graph_dot: nothing to draw in %r" % (f_or_variables,))
    return _DotWriter(scene, expand_composites, node_fills).write()


def graph_picture(f_or_variables, path=None, format=None, expand_composites=False):
    """Draw a graph to ``path`` (returned), or return the picture's bytes when ``path`` is None.

    The format is ``format`` when given, else ``path``'s suffix: ``svg``,
    ``png``, ``pdf``, or ``dot``/``gv`` (the DOT text of ``graph_dot``, which
    needs no graphviz). With neither, SVG. Anything but ``dot`` needs the
    ``graphviz`` Python package (``pip install graphviz``) and Graphviz's
    ``dot`` program (Debian: ``apt-get install graphviz``).
    f_or_variables, expand_composites: as for ``graph_dot``.
    """
    fmt = _pick_format(path, format)
    dot = graph_dot(f_or_variables, expand_composites=expand_composites)
    data = dot.encode("utf-8") if FORMATS[fmt] is None else _render(dot, FORMATS[fmt])
    if path is None:
        return data
    with open(path, "wb") as out:
        out.write(data)
    return path


def pydotprint(fct, outfile=None, compact=True, format="png", with_ids=False, high_contrast=True,
               cond_highlight=None, colorCodes=None, max_label_size=70, scan_graphs=False,
               var_with_name_simple=False, print_output_file=True, return_image=False):
    """Theano's and PyTensor's name for a graph picture: draw ``fct`` to ``outfile`` in ``format``.

    fct: what ``graph_picture`` takes (a compiled Function, a Variable, an Apply,
    a FunctionGraph or a list of them). format: ``png`` (the default), ``svg``,
    ``pdf``, or ``dot``/``gv`` for the DOT text. outfile: the file to write;
    ``.<format>`` is appended when it does not end so; None writes
    ``ffigraph.pydotprint.<device>.<format>`` in ``config.compiledir``, as
    PyTensor does. print_output_file: print where the file went.
    return_image: return the picture's bytes and write no file.

    The picture is ``graph_picture``'s (see this module's docstring for its
    shapes and colours). Theano's styling options (compact, with_ids,
    high_contrast, cond_highlight, colorCodes, max_label_size, scan_graphs,
    var_with_name_simple) are accepted, so that Theano code runs unchanged,
    and have no effect. Rendering needs the ``graphviz`` Python package and
    Graphviz's ``dot`` program, as ``graph_picture`` does.
    """
    if not isinstance(format, str) or format.lower().lstrip(".") not in FORMATS:
        raise ValueError("pydotprint: unknown format %r; known: %s" % (format, ", ".join(sorted(FORMATS))))
    fmt = format.lower().lstrip(".")
    if return_image:
        return graph_picture(fct, None, format=fmt)
    if outfile is None:
        from ffigraph.config import config

        os.makedirs(config.compiledir, exist_ok=True)
        outfile = os.path.join(config.compiledir, "ffigraph.pydotprint.%s.%s" % (config.device, fmt))
    else:
        outfile = os.fsdecode(os.fspath(outfile))
        if not outfile.endswith("." + fmt):
            outfile += "." + fmt
    graph_picture(fct, outfile, format=fmt)
    if print_output_file:
        print("The output file is available at", outfile)
    return outfile


# ----------------------------------------------------------------- format and rendering


def _pick_format(path, format):
    if path is not None and not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError("graph_picture: path must be a file path or None, got %s" % type(path).__name__)
    if format is not None:
        if not isinstance(format, str):
            raise TypeError("graph_picture: format must be a str, got %s" % type(format).__name__)
        fmt = format.lower().lstrip(".")
        where = "format %r" % (format,)
    elif path is not None:
        name = os.fsdecode(os.fspath(path))
        fmt = os.path.splitext(name)[1].lower().lstrip(".")
        where = "the suffix of %r" % (name,)
        if not fmt:
            raise ValueError("graph_picture: %r has no suffix; give format= (one of %s)"
                             % (name, ", ".join(sorted(FORMATS))))
    else:
        return "svg"
    if fmt not in FORMATS:
        raise ValueError("graph_picture: unknown picture format %r (from %s); known: %s"
                         % (fmt, where, ", ".join(sorted(FORMATS))))
    return fmt


def render_dot(dot, fmt):
    """DOT text rendered by Graphviz to ``fmt`` ('svg', 'png', 'pdf'): bytes."""
    return _render(dot, fmt)


def _render(dot, fmt):
    try:
        import graphviz
    except ImportError as err:
        raise ImportError("graph_picture needs the graphviz Python package to render %s "
                          "(pip install graphviz); graph_dot() gives the DOT text without it" % fmt) from err
    try:
        return graphviz.Source(dot).pipe(format=fmt)
    except graphviz.ExecutableNotFound as err:
        raise RuntimeError("graph_picture: Graphviz's dot program was not found on PATH; install it "
                           "(Debian/Ubuntu: apt-get install graphviz)") from err
    except _called_process_error(graphviz) as err:
        detail = getattr(err, "stderr", None) or b""
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise RuntimeError("graph_picture: dot failed to render %s: %s" % (fmt, detail.strip() or err)) from err


def _called_process_error(graphviz):
    import subprocess

    # Older graphviz releases raise subprocess's own class.
    return getattr(graphviz, "CalledProcessError", subprocess.CalledProcessError)


# ----------------------------------------------------------------- what to draw


class _Scene:
    """The variables and nodes to draw, and what is known about them."""

    def __init__(self):
        self.inputs = []  # declared inputs, in order (a function's unused ones included)
        self.outputs = []
        # Membership by set: dict lookup checks identity first, whatever __eq__ a Variable may grow.
        self.input_set, self.output_set = set(), set()
        self.updates = set()  # outputs that are new values of shared variables
        self.how = {}  # node -> how its linker runs it

    def add_input(self, var):
        if var not in self.input_set:
            self.input_set.add(var)
            self.inputs.append(var)

    def add_output(self, var):
        if var not in self.output_set:
            self.output_set.add(var)
            self.outputs.append(var)


def _collect(obj, scene, who):
    if isinstance(obj, (list, tuple)):
        for item in obj:
            _collect(item, scene, who)
    elif isinstance(obj, Variable):
        scene.add_output(obj)
    elif isinstance(obj, Apply):
        for out in obj.outputs:
            scene.add_output(out)
    elif isinstance(obj, FunctionGraph):
        _collect_fgraph(obj, scene)
    else:
        fgraph = getattr(getattr(obj, "maker", None), "fgraph", None)
        if not isinstance(fgraph, FunctionGraph):
            raise TypeError("%s: cannot draw %s object %s; give a Variable, an Apply, a FunctionGraph, a "
                            "compiled Function, or a list of them" % (who, type(obj).__name__, _short_repr(obj)))
        _collect_fgraph(fgraph, scene)
        scene.how.update(_how_nodes_run(obj.maker))


def _collect_fgraph(fgraph, scene):
    for var in fgraph.inputs:
        scene.add_input(var)
    for var in fgraph.outputs:
        scene.add_output(var)
    for slot in getattr(fgraph, "update_slots", ()):
        if 0 <= slot < len(fgraph.outputs):
            scene.updates.add(fgraph.outputs[slot])


def _how_nodes_run(maker):
    linker = getattr(maker, "linker", None)
    try:
        pairs = linker.describe_nodes()
    except Exception:  # a linker that cannot say (not built yet, no describe_nodes): mark nothing
        return {}
    return {node: str(how) for node, how in pairs}


def _short_repr(obj):
    try:
        text = repr(obj)
    except Exception:
        text = "<unprintable>"
    return text if len(text) <= 80 else text[:77] + "..."


def _walk(scene):
    """(nodes in topological order, variables in order of first appearance)."""
    nodes, seen = [], set()
    for root in scene.outputs:
        _postorder(root, nodes, seen)
    variables, known = [], set()

    def add(var):
        if var not in known:
            known.add(var)
            variables.append(var)

    for var in scene.inputs:
        add(var)
    for node in nodes:
        for var in node.inputs:
            add(var)
        for var in node.outputs:
            add(var)
    for var in scene.outputs:
        add(var)
    return nodes, variables


def _postorder(root, nodes, seen):
    # Iterative, so that a chain of thousands of nodes does not hit the recursion limit.
    if root.owner is None or root.owner in seen:
        return
    stack = [(root.owner, iter(root.owner.inputs))]
    seen.add(root.owner)
    while stack:
        node, pending = stack[-1]
        for var in pending:
            parent = var.owner
            if parent is not None and parent not in seen:
                seen.add(parent)
                stack.append((parent, iter(parent.inputs)))
                break
        else:
            stack.pop()
            nodes.append(node)


# ----------------------------------------------------------------- DOT text


class _DotWriter:
    def __init__(self, scene, expand_composites, node_fills=None):
        self.scene = scene
        self.expand = expand_composites
        self.node_fills = dict(node_fills or {})
        self.lines = []
        self.var_ids = {}
        self.node_ids = {}
        self.short_ids = 0
        self.used = set()  # legend entries used

    def write(self):
        nodes, variables = _walk(self.scene)
        self.lines += ["digraph ffigraph {",
                       "  graph [compound=true, rankdir=TB, fontname=\"Helvetica\"];",
                       "  node [fontname=\"Helvetica\", fontsize=11, style=filled];",
                       "  edge [fontname=\"Helvetica\", fontsize=9];"]
        for var in variables:
            self.var_ids[var] = "v%d" % len(self.var_ids)
        for node in nodes:
            self.node_ids[node] = "a%d" % len(self.node_ids)
        for var in variables:
            self.variable(var)
        for node in nodes:
            self.apply(node)
        self.legend()
        self.lines.append("}")
        return "\n".join(self.lines) + "\n"

    # ---- variables

    def role(self, var):
        if isinstance(var, Constant):
            return "constant"
        if var.owner is None:
            return "shared" if _is_shared(var) else "input"
        return "output" if var in self.scene.output_set else "intermediate"

    def variable(self, var):
        role = self.role(var)
        is_output = var in self.scene.output_set
        label = [self.var_name(var), _type_text(var.type)]
        if var in self.scene.updates:
            label.append("(update)")
        attrs = {"shape": "ellipse", "fillcolor": _ROLE_FILL[role], "label": _label(label)}
        self.used.add(role)
        if role == "constant":
            attrs["style"] = "filled,dashed"
        if is_output:
            attrs["peripheries"] = "2"
            self.used.add("output")
        self.lines.append("  %s %s;" % (self.var_ids[var], _attrs(attrs)))

    def var_name(self, var):
        if var.name is not None:
            return _shorten(str(var.name), _MAX_NAME)
        if isinstance(var, Constant):
            return _shorten(_safe_str(var), _MAX_NAME)
        text = "id %s" % char_from_number(self.short_ids)
        self.short_ids += 1
        return text

    # ---- apply nodes

    def apply(self, node):
        how = self.scene.how.get(node)
        in_python = how is not None and how.startswith("python")
        label = _wrap(_shorten(_safe_str(node.op), _MAX_OP_TEXT), _WRAP)
        if in_python:
            label.append("(python)")
            self.used.add("python")
        else:
            self.used.add("apply")
        fill = self.node_fills.get(node, _PYTHON_FILL if in_python else _APPLY_FILL)
        attrs = {"shape": "box", "fillcolor": fill, "label": _label(label)}
        if how is not None:
            attrs["tooltip"] = _quote(how)
        nid = self.node_ids[node]
        self.lines.append("  %s %s;" % (nid, _attrs(attrs)))
        many_in = len(node.inputs) > 1
        for pos, var in enumerate(node.inputs):
            extra = {"label": _quote(str(pos))} if many_in else {}
            self.lines.append("  %s -> %s%s;" % (self.var_ids[var], nid, _opt_attrs(extra)))
        many_out = len(node.outputs) > 1
        for pos, var in enumerate(node.outputs):
            extra = {"label": _quote("out %d" % pos)} if many_out else {}
            self.lines.append("  %s -> %s%s;" % (nid, self.var_ids[var], _opt_attrs(extra)))
        composite = _composite_of(node.op)
        if self.expand and composite is not None:
            self.composite_cluster(nid, composite)

    def composite_cluster(self, nid, composite):
        cid = "%s_c" % nid
        self.used.add("step")
        lines = ["  subgraph cluster_%s {" % nid,
                 "    graph [label=%s, style=dashed, color=\"#888888\"];" % _quote("inner scalar graph")]
        for k, dtype in enumerate(composite.in_dtypes):
            lines.append("    %s_i%d %s;" % (cid, k, _attrs({"shape": "ellipse", "fillcolor": _ROLE_FILL["input"],
                                                                 "label": _label(["i%d" % k, dtype])})))
        consts = {}
        for j, (sop, args, dtype) in enumerate(composite.steps):
            for ref in args:
                if ref[0] == "const" and ref not in consts:
                    consts[ref] = "%s_k%d" % (cid, len(consts))
                    lines.append("    %s %s;" % (consts[ref], _attrs(
                        {"shape": "ellipse", "fillcolor": _ROLE_FILL["constant"], "style": "filled,dashed",
                         "label": _label([_const_text(ref), ref[1]])})))
            step_label = ["t%d = %s" % (j, _safe_str(getattr(sop, "name", sop))), dtype]
            attrs = {"shape": "box", "fillcolor": _STEP_FILL}
            if j in composite.output_steps:
                step_label.append("-> out %d" % composite.output_steps.index(j))
                attrs["peripheries"] = "2"
            attrs["label"] = _label(step_label)
            lines.append("    %s_t%d %s;" % (cid, j, _attrs(attrs)))
            many = len(args) > 1
            for pos, ref in enumerate(args):
                src = consts[ref] if ref[0] == "const" else "%s_%s%d" % (cid, "i" if ref[0] == "in" else "t", ref[1])
                extra = {"label": _quote(str(pos))} if many else {}
                lines.append("    %s -> %s_t%d%s;" % (src, cid, j, _opt_attrs(extra)))
        lines.append("  }")
        self.lines += lines
        # The dashed edge ties the cluster to its node; lhead makes it stop at the cluster's border.
        anchor = "%s_t%d" % (cid, composite.output_steps[0]) if composite.output_steps else "%s_i0" % cid
        if composite.steps or composite.in_dtypes:
            self.lines.append("  %s -> %s [style=dashed, arrowhead=none, color=\"#888888\", lhead=cluster_%s];"
                              % (nid, anchor, nid))

    # ---- legend

    def legend(self):
        entries = [("apply", _APPLY_FILL, "Apply node"), ("python", _PYTHON_FILL, "Apply run in Python"),
                   ("input", _ROLE_FILL["input"], "input"), ("shared", _ROLE_FILL["shared"], "shared variable"),
                   ("constant", _ROLE_FILL["constant"], "constant"), ("output", _ROLE_FILL["output"], "output"),
                   ("intermediate", _ROLE_FILL["intermediate"], "intermediate"),
                   ("step", _STEP_FILL, "inner scalar step")]
        cells = "".join('<TD BGCOLOR="%s">%s</TD>' % (fill, text) for key, fill, text in entries if key in self.used)
        if cells:
            # An HTML-like graph label: a legend that adds no node to the picture.
            self.lines.append("  graph [labelloc=b, label=<<TABLE BORDER=\"0\" CELLBORDER=\"1\" "
                              "CELLSPACING=\"2\"><TR>%s</TR></TABLE>>];" % cells)


# ----------------------------------------------------------------- helpers


def _is_shared(var):
    from ffigraph.compile.sharedvalue import SharedVariable

    return isinstance(var, SharedVariable)


def _composite_of(op):
    from ffigraph.scalar.composite import Composite

    for candidate in (op, getattr(op, "composite", None), getattr(op, "scalar_op", None)):
        if isinstance(candidate, Composite):
            return candidate
    return None


def _const_text(ref):
    from ffigraph.scalar.composite import const_value

    return _shorten(repr(const_value(ref).item()), _MAX_NAME)


def _type_text(type_):
    dtype = getattr(type_, "dtype", None)
    shape = getattr(type_, "shape", None)
    if dtype is None or not isinstance(shape, tuple):
        return _shorten(_safe_str(type_), _MAX_NAME)
    if not shape:
        return "%s scalar" % dtype
    axes = ["?" if s is None else str(s) for s in shape]
    return "%s (%s%s)" % (dtype, ", ".join(axes), "," if len(axes) == 1 else "")


def _safe_str(obj):
    try:
        return str(obj)
    except Exception:
        return "<%s>" % type(obj).__name__


def _shorten(text, limit):
    if len(text) <= limit:
        return text
    return "%s... (%d chars)" % (text[:limit], len(text))


def _wrap(text, width):
    return [text[i:i + width] for i in range(0, len(text), width)] or [""]


def _visible(text):
    """``text`` with characters that would hide or fake something shown as Python escapes."""
    out = []
    for ch in text:
        if ch in _NAMED_ESCAPES:
            out.append(_NAMED_ESCAPES[ch])
        elif unicodedata.category(ch) in _HIDDEN_CATEGORIES:
            code = ord(ch)
            out.append("\\x%02x" % code if code < 0x100 else "\\u%04x" % code if code < 0x10000 else "\\U%08x" % code)
        else:
            out.append(ch)
    return "".join(out)


def _escape(text):
    """Text for inside a DOT double-quoted string, shown exactly as given by Graphviz."""
    text = _visible(text)
    # Graphviz reads &name; entities in every label, and backslash escapes (\n, \N, \G...) in
    # node labels, so both & and \ are escaped; < and > go as entities for viewers of the .dot file.
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("\\", "\\\\").replace('"', '\\"')


class _Quoted(str):
    """A DOT string already quoted and escaped."""


def _quote(text):
    return _Quoted('"%s"' % _escape(text))


def _label(lines):
    # \n between lines is Graphviz's centred line break; each line was escaped on its own.
    return _Quoted('"%s"' % "\\n".join(_escape(line) for line in lines))


def _attrs(attrs):
    return "[%s]" % ", ".join("%s=%s" % (key, value if isinstance(value, _Quoted) else _quote(value))
                              for key, value in attrs.items())


def _opt_attrs(attrs):
    return " " + _attrs(attrs) if attrs else ""

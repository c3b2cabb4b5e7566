"""Sigmoid and softplus written out (``ffigraph/tensor/stable_forms.py``), stabilised at compile time.

Each spelling a user may write (constants on either side, ``1/d`` or ``d**-1`` or a product with
a reciprocal, ``-x - b`` or ``-(x + b)``) must come out of the stabilize rewrites as ``sigmoid`` or
``softplus`` (the rewritten graph is walked), with the argument simplified (no ``neg`` left where
the negation cancels), and its values must equal a numerically stable numpy reference
(``np.logaddexp``) at logits up to +-800, finite, in the written graph's dtype. Graphs that only
look alike stay as written, with the plain graph's values.

Every graph has inputs of its own and all of a test's graphs are compiled into one function.
"""
import numpy as np
import pytest

import ffigraph.tensor as T
from helpers import op_names
from ffigraph import Mode, function
from ffigraph.graph.basic import io_toposort
from ffigraph.printing import debugprint

X = np.array([-800.0, -40.0, -1.0, 0.0, 1e-8, 1.0, 40.0, 800.0])
B = np.array([0.5, -0.25, 2.0, 0.0, -1.5, 0.75, -3.0, 1.0])


def softplus(z):
    return np.logaddexp(0.0, z)


def sigmoid(z):
    return np.exp(-np.logaddexp(0.0, -z))


# (label, build(x) or build(x, b), numpy reference on float64 values, ops that must be there,
#  ops that must be gone). WRITTEN: the ops of the written-out forms, none of which may remain.
WRITTEN = {"exp", "log", "log1p", "true_div", "pow", "mul"}
SIG, SP = {"sigmoid"}, {"softplus"}
FORMS = [
    # sigmoid(x)
    ("1/(1+exp(-x))", lambda x: 1 / (1 + T.exp(-x)), sigmoid, SIG, WRITTEN | {"neg"}),
    ("1/(exp(-x)+1)", lambda x: 1 / (T.exp(-x) + 1), sigmoid, SIG, WRITTEN | {"neg"}),
    ("1./(1.+exp(-x))", lambda x: 1.0 / (1.0 + T.exp(-x)), sigmoid, SIG, WRITTEN | {"neg"}),
    ("(1+exp(-x))**-1", lambda x: (1 + T.exp(-x)) ** -1, sigmoid, SIG, WRITTEN | {"neg"}),
    ("(exp(-x)+1)**-1.", lambda x: (T.exp(-x) + 1) ** -1.0, sigmoid, SIG, WRITTEN | {"neg"}),
    ("exp(x)/(1+exp(x))", lambda x: T.exp(x) / (1 + T.exp(x)), sigmoid, SIG, WRITTEN | {"neg"}),
    ("exp(x)/(exp(x)+1)", lambda x: T.exp(x) / (T.exp(x) + 1), sigmoid, SIG, WRITTEN | {"neg"}),
    ("exp(x)*(1/(1+exp(x)))", lambda x: T.exp(x) * (1 / (1 + T.exp(x))), sigmoid, SIG, WRITTEN | {"neg"}),
    ("(1/(exp(x)+1))*exp(x)", lambda x: (1 / (T.exp(x) + 1)) * T.exp(x), sigmoid, SIG, WRITTEN | {"neg"}),
    ("exp(x)*(1+exp(x))**-1", lambda x: T.exp(x) * (1 + T.exp(x)) ** -1, sigmoid, SIG, WRITTEN | {"neg"}),
    ("exp(x)*sigmoid(-x)", lambda x: T.exp(x) * T.sigmoid(-x), sigmoid, SIG, WRITTEN | {"neg"}),
    # sigmoid(-x)
    ("1/(1+exp(x))", lambda x: 1 / (1 + T.exp(x)), lambda v: sigmoid(-v), SIG | {"neg"}, WRITTEN),
    ("1-1/(1+exp(-x))", lambda x: 1 - 1 / (1 + T.exp(-x)), lambda v: sigmoid(-v), SIG | {"neg"}, WRITTEN | {"sub"}),
    ("1-exp(x)/(1+exp(x))", lambda x: 1 - T.exp(x) / (1 + T.exp(x)), lambda v: sigmoid(-v), SIG | {"neg"},
     WRITTEN | {"sub"}),
    ("1-sigmoid(x)", lambda x: 1 - T.sigmoid(x), lambda v: sigmoid(-v), SIG | {"neg"}, WRITTEN | {"sub"}),
    # the argument, simplified: -(-x - b) = x + b, -(-(x + b)) = x + b, -(b - x) = x - b, -(-x + b) = x - b
    ("1/(1+exp(-x-b))", lambda x, b: 1 / (1 + T.exp(-x - b)), lambda v, w: sigmoid(v + w), SIG | {"add"},
     WRITTEN | {"neg", "sub"}),
    ("1/(1+exp(-(x+b)))", lambda x, b: 1 / (1 + T.exp(-(x + b))), lambda v, w: sigmoid(v + w), SIG | {"add"},
     WRITTEN | {"neg", "sub"}),
    ("1/(1+exp(b-x))", lambda x, b: 1 / (1 + T.exp(b - x)), lambda v, w: sigmoid(v - w), SIG | {"sub"},
     WRITTEN | {"neg"}),
    ("1/(1+exp(-x+b))", lambda x, b: 1 / (1 + T.exp(-x + b)), lambda v, w: sigmoid(v - w), SIG | {"sub"},
     WRITTEN | {"neg"}),
    ("(exp(-x-b)+1)**-1", lambda x, b: (T.exp(-x - b) + 1) ** -1, lambda v, w: sigmoid(v + w), SIG | {"add"},
     WRITTEN | {"neg", "sub"}),
    # log(sigmoid(x)) = -softplus(-x)
    ("log(1/(1+exp(-x)))", lambda x: T.log(1 / (1 + T.exp(-x))), lambda v: -softplus(-v), SP, WRITTEN - {"mul"}),
    ("log((1+exp(-x))**-1)", lambda x: T.log((1 + T.exp(-x)) ** -1), lambda v: -softplus(-v), SP,
     WRITTEN - {"mul"}),
    ("log(exp(x)/(1+exp(x)))", lambda x: T.log(T.exp(x) / (1 + T.exp(x))), lambda v: -softplus(-v), SP,
     WRITTEN - {"mul"}),
    ("log(sigmoid(x))", lambda x: T.log(T.sigmoid(x)), lambda v: -softplus(-v), SP, WRITTEN | {"sigmoid"}),
    ("log(1/(1+exp(x)))", lambda x: T.log(1 / (1 + T.exp(x))), lambda v: -softplus(v), SP,
     WRITTEN | {"sigmoid"}),
    # log(1 - sigmoid(x)) = -softplus(x)
    ("log(1-1/(1+exp(-x)))", lambda x: T.log(1 - 1 / (1 + T.exp(-x))), lambda v: -softplus(v), SP,
     WRITTEN | {"sub", "sigmoid"}),
    ("log(1-sigmoid(x))", lambda x: T.log(1 - T.sigmoid(x)), lambda v: -softplus(v), SP,
     WRITTEN | {"sub", "sigmoid"}),
    ("log1p(-sigmoid(x))", lambda x: T.log1p(-T.sigmoid(x)), lambda v: -softplus(v), SP, WRITTEN | {"sigmoid"}),
    ("log1p(-1/(1+exp(-x)))", lambda x: T.log1p(-(1 / (1 + T.exp(-x)))), lambda v: -softplus(v), SP,
     WRITTEN | {"sigmoid"}),
    # softplus(x)
    ("log(1+exp(x))", lambda x: T.log(1 + T.exp(x)), softplus, SP, WRITTEN | {"neg", "sigmoid"}),
    ("log(exp(x)+1)", lambda x: T.log(T.exp(x) + 1), softplus, SP, WRITTEN | {"neg", "sigmoid"}),
    ("log1p(exp(x))", lambda x: T.log1p(T.exp(x)), softplus, SP, WRITTEN | {"neg", "sigmoid"}),
    ("-log(sigmoid(x))", lambda x: -T.log(T.sigmoid(x)), lambda v: softplus(-v), SP, WRITTEN | {"sigmoid"}),
    # the tutorial's cross-entropy, its sigmoid written out: y*softplus(-z) + (1-y)*softplus(z), z = x + b
    ("xent", lambda x, b: (lambda p: -0.25 * T.log(p) - (1 - 0.25) * T.log(1 - p))(1 / (1 + T.exp(-x - b))),
     lambda v, w: 0.25 * softplus(-(v + w)) + 0.75 * softplus(v + w), SP, {"exp", "log", "true_div", "sigmoid"}),
]


def _arity(build):
    return build.__code__.co_argcount


class Graphs:
    """Graphs with inputs of their own, compiled into ONE function under ``mode``."""

    def __init__(self, graphs, mode):
        self.inputs, self.outputs, self.in_spans = [], [], []
        for ins, out in graphs:
            self.in_spans.append(slice(len(self.inputs), len(self.inputs) + len(ins)))
            self.inputs += ins
            self.outputs.append(out)
        self.f = function(self.inputs, self.outputs, mode=mode)

    def op_names(self, k):
        fg = self.f.maker.fgraph
        return set(op_names(io_toposort(fg.inputs, [fg.outputs[k]])))

    def __call__(self, args):
        return self.f(*[a for graph_args in args for a in graph_args])


def rewrite_mode(linker):
    """The rewrites up to specialize: fusion would hide the ops these tests look for."""
    return Mode(linker=linker, optimizer="fast_run").excluding("fusion", "inplace")


def _build_all(dtypes, forms):
    graphs, args, meta = [], [], []
    for dtype in dtypes:
        for label, build, ref, present, absent in forms:
            ins = [T.tensor(dtype, (None,), name=n) for n in "xb"[:_arity(build)]]
            graphs.append((ins, build(*ins)))
            args.append([X.astype(dtype), B.astype(dtype)][:len(ins)])
            meta.append((dtype, label, ref, present, absent))
    return graphs, args, meta


@pytest.mark.parametrize("mode_name", ["py", "c", "default"])
def test_written_forms_become_sigmoid_and_softplus(mode_name):
    """Every spelling of FORMS, float64 and float32: the stable op is there, the written-out ops are
    gone (under the default mode fusion merges them, so only the values are checked), and the
    values equal the stable numpy reference, finite everywhere."""
    mode = Mode() if mode_name == "default" else rewrite_mode(mode_name)
    graphs, args, meta = _build_all(["float64", "float32"], FORMS)
    g = Graphs(graphs, mode)
    got = g(args)
    for k, ((dtype, label, ref, present, absent), values) in enumerate(zip(meta, args)):
        if mode_name != "default":
            names = g.op_names(k)
            assert present <= names, (label, dtype, sorted(names))
            assert not names & absent, (label, dtype, sorted(names & absent))
        out = np.asarray(got[k])
        assert out.dtype == np.dtype(dtype), (label, out.dtype)
        assert np.isfinite(out).all(), (label, dtype, out)
        want = ref(*[v.astype(np.float64) for v in values])
        rtol, atol = (1e-12, 1e-300) if dtype == "float64" else (2e-6, 1e-37)
        np.testing.assert_allclose(out, want, rtol=rtol, atol=atol, err_msg="%s %s" % (label, dtype))


def test_debugprint_shows_the_stable_tutorial_graph():
    """The tutorial's p_1 and xent, compiled: debugprint shows sigmoid and softplus (of dot + b),
    and no exp, log or division."""
    x, y, w, b = T.dmatrix("x"), T.dvector("y"), T.dvector("w"), T.dscalar("b")
    p_1 = 1 / (1 + T.exp(-T.dot(x, w) - b))
    xent = -y * T.log(p_1) - (1 - y) * T.log(1 - p_1)
    f = function([x, y, w, b], [p_1, xent], mode=rewrite_mode("py"))
    text = debugprint(f, file="str")
    assert "Elemwise{sigmoid}" in text and "Elemwise{softplus}" in text, text
    for gone in ("exp}", "log}", "true_div}"):
        assert "Elemwise{%s" % gone not in text, text
    xv = np.array([[1.0, 0.5], [-2.0, 1.0], [0.0, 3.0]])
    wv = np.array([400.0, 0.0])
    yv = np.array([1.0, 0.0, 1.0])
    p, xe = f(xv, yv, wv, 0.25)
    z = xv.dot(wv) + 0.25
    np.testing.assert_allclose(p, sigmoid(z), rtol=1e-14)
    np.testing.assert_allclose(xe, yv * softplus(-z) + (1 - yv) * softplus(z), rtol=1e-14)
    assert np.isfinite(xe).all()


def test_look_alikes_stay_as_written():
    """Expressions that only resemble the forms: no sigmoid/softplus appears (or, for a written
    sigmoid inside, no softplus), and the values are the plain graph's (py linker)."""
    linker = "py"
    one_1x1 = T.constant(np.ones((1, 1)))
    look_alikes = [
        ("2/(1+exp(-x))", lambda x: 2 / (1 + T.exp(-x)), {"sigmoid", "softplus"}),
        ("1/(2+exp(-x))", lambda x: 1 / (2 + T.exp(-x)), {"sigmoid", "softplus"}),
        ("(1+exp(-x))**-2", lambda x: (1 + T.exp(-x)) ** -2, {"sigmoid", "softplus"}),
        ("exp(x)/(1+exp(b))", lambda x, b: T.exp(x) / (1 + T.exp(b)), {"sigmoid", "softplus"}),
        ("exp(x)/(1+exp(-x))", lambda x: T.exp(x) / (1 + T.exp(-x)), {"softplus"}),
        ("exp(x)*sigmoid(x)", lambda x: T.exp(x) * T.sigmoid(x), {"softplus"}),
        ("log(1+2*exp(x))", lambda x: T.log(1 + 2 * T.exp(x)), {"sigmoid", "softplus"}),
        ("log(2-1/(1+exp(-x)))", lambda x: T.log(2 - 1 / (1 + T.exp(-x))), {"softplus"}),
        # a 1x1 constant makes the result 2-d: sigmoid(x) is 1-d and cannot stand for it
        ("ones((1,1))/(1+exp(-x))", lambda x: one_1x1 / (1 + T.exp(-x)), {"sigmoid", "softplus"}),
    ]
    xv = np.array([-3.0, -0.5, 0.0, 0.25, 2.0])
    bv = np.array([1.0, -1.0, 0.5, 0.0, 3.0])
    graphs, args = [], []
    for label, build, _ in look_alikes:
        ins = [T.dvector(n) for n in "xb"[:_arity(build)]]
        graphs.append((ins, build(*ins)))
        args.append([xv, bv][:len(ins)])
    g = Graphs(graphs, rewrite_mode(linker))
    plain = Graphs(graphs, Mode(linker=linker, optimizer=None))
    got, want = g(args), plain(args)
    for k, (label, _, banned) in enumerate(look_alikes):
        names = g.op_names(k)
        assert not names & banned, (label, sorted(names))
        assert np.asarray(got[k]).shape == np.asarray(want[k]).shape, label
        np.testing.assert_allclose(got[k], want[k], rtol=1e-13, atol=0, err_msg=label)


@pytest.mark.parametrize("linker", ["py", "c"])
def test_replacements_keep_the_written_dtype(linker):
    """int8 logits (exp of int8 is float32; -x must not wrap at -128) and float32 logits under
    float64 constants (the written graph's result is float64): the replacement has the written
    graph's dtype, and its values are the stable ones, in that dtype."""
    one = T.constant(np.float64(1.0))   # a float64 constant (strong: not a weak Python scalar)
    cases = [
        ("int8 1/(1+exp(-x))", "int8", lambda x: 1 / (1 + T.exp(-x)), "float32", sigmoid, SIG),
        ("int8 log(1-1/(1+exp(-x)))", "int8", lambda x: T.log(1 - 1 / (1 + T.exp(-x))), "float32",
         lambda v: -softplus(v), SP),
        ("int8 1-sigmoid(x)", "int8", lambda x: 1 - T.sigmoid(x), "float32", lambda v: sigmoid(-v), SIG),
        ("f32 under f64 1/(1+exp(-x))", "float32", lambda x: one / (one + T.exp(-x)), "float64", sigmoid, SIG),
        ("f32 under f64 log(1+exp(x))", "float32", lambda x: T.log(one + T.exp(x)), "float64", softplus, SP),
        ("f32 under f64 log(1-sigmoid(x))", "float32", lambda x: T.log(one - T.sigmoid(x)), "float64",
         lambda v: -softplus(v), SP),
    ]
    # (-128 is left out: its int8 negation wraps in the written graph, so no float reference holds)
    values = {"int8": np.array([-127, -100, -1, 0, 1, 100, 127], dtype="int8"),
              "float32": np.array([-800, -100, -1, 0, 1, 100, 800], dtype="float32")}
    graphs, args = [], []
    for _, in_dtype, build, _, _, _ in cases:
        x = T.tensor(in_dtype, (None,), name="x")
        graphs.append(([x], build(x)))
        args.append([values[in_dtype]])
    g = Graphs(graphs, rewrite_mode(linker))
    got = g(args)
    for k, (label, in_dtype, _, out_dtype, ref, present) in enumerate(cases):
        assert graphs[k][1].dtype == out_dtype, label
        assert present <= g.op_names(k), (label, g.op_names(k))
        out = np.asarray(got[k])
        assert out.dtype == np.dtype(out_dtype), (label, out.dtype)
        assert np.isfinite(out).all(), (label, out)
        want = ref(values[in_dtype].astype(np.float64))
        rtol, atol = (2e-6, 1e-37) if out_dtype == "float32" else (1e-12, 1e-300)
        np.testing.assert_allclose(out, want, rtol=rtol, atol=atol, err_msg=label)

"""``grad`` differentiates the stable form of sigmoid and softplus however they are written.

``grad`` rebuilds the cost with ``ffigraph/tensor/stable_forms.py``'s matchers before it
differentiates, so ``log(1 / (1 + exp(-z)))`` has the gradient of ``-softplus(-z)``: finite at any
logit, where the written form's own gradient is 0 * inf = NaN once the sigmoid rounds to 0 or 1.
Checked here: ``verify_grad`` at x in {-800, -40, 0, 40, 800} for every form, the gradients
against numpy's derivatives, also compiled with NO rewrites (so it is grad's rebuild, not the
compile-time stabilize rewrites, that makes them finite), the tutorial's gradient, and that the
variables the caller named keep their identity (wrt, known_grads, consider_constant) while the
caller's own graph is left untouched.
"""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, function, grad, verify_grad
from ffigraph.graph.basic import ancestors
from ffigraph.tensor.stable_forms import stabilize_graph

POINTS = np.array([-800.0, -40.0, 0.0, 40.0, 800.0])
B_POINTS = np.array([0.5, -0.25, 0.0, 0.75, -1.0])


def sig(z):
    return np.exp(-np.logaddexp(0.0, -z))


def softplus(z):
    return np.logaddexp(0.0, z)


# kind: (value f(z), derivative f'(z)), numerically stable in numpy
KINDS = {
    "sigmoid": (sig, lambda z: sig(z) * sig(-z)),
    "log_sigmoid": (lambda z: -softplus(-z), lambda z: sig(-z)),
    "softplus": (softplus, sig),
    "xent": (lambda z: 0.25 * softplus(-z) + 0.75 * softplus(z), lambda z: -0.25 * sig(-z) + 0.75 * sig(z)),
}


def _xent(p):
    return -0.25 * T.log(p) - (1 - 0.25) * T.log(1 - p)


# (label, build(x) or build(x, b), kind, dz/dx, dz/db): the form is KINDS[kind] of z = dz/dx*x + dz/db*b
FORMS = [
    ("1/(1+exp(-x))", lambda x: 1 / (1 + T.exp(-x)), "sigmoid", 1, 0),
    ("1/(exp(-x)+1)", lambda x: 1 / (T.exp(-x) + 1), "sigmoid", 1, 0),
    ("(1+exp(-x))**-1", lambda x: (1 + T.exp(-x)) ** -1, "sigmoid", 1, 0),
    ("exp(x)/(1+exp(x))", lambda x: T.exp(x) / (1 + T.exp(x)), "sigmoid", 1, 0),
    ("exp(x)/(exp(x)+1)", lambda x: T.exp(x) / (T.exp(x) + 1), "sigmoid", 1, 0),
    ("exp(x)*(1/(1+exp(x)))", lambda x: T.exp(x) * (1 / (1 + T.exp(x))), "sigmoid", 1, 0),
    ("(1/(exp(x)+1))*exp(x)", lambda x: (1 / (T.exp(x) + 1)) * T.exp(x), "sigmoid", 1, 0),
    ("exp(x)*(1+exp(x))**-1", lambda x: T.exp(x) * (1 + T.exp(x)) ** -1, "sigmoid", 1, 0),
    ("exp(x)*sigmoid(-x)", lambda x: T.exp(x) * T.sigmoid(-x), "sigmoid", 1, 0),
    ("1/(1+exp(x))", lambda x: 1 / (1 + T.exp(x)), "sigmoid", -1, 0),
    ("1-1/(1+exp(-x))", lambda x: 1 - 1 / (1 + T.exp(-x)), "sigmoid", -1, 0),
    ("1-exp(x)/(1+exp(x))", lambda x: 1 - T.exp(x) / (1 + T.exp(x)), "sigmoid", -1, 0),
    ("1-sigmoid(x)", lambda x: 1 - T.sigmoid(x), "sigmoid", -1, 0),
    ("1/(1+exp(-x-b))", lambda x, b: 1 / (1 + T.exp(-x - b)), "sigmoid", 1, 1),
    ("1/(1+exp(-(x+b)))", lambda x, b: 1 / (1 + T.exp(-(x + b))), "sigmoid", 1, 1),
    ("1/(1+exp(b-x))", lambda x, b: 1 / (1 + T.exp(b - x)), "sigmoid", 1, -1),
    ("1/(1+exp(-x+b))", lambda x, b: 1 / (1 + T.exp(-x + b)), "sigmoid", 1, -1),
    ("log(1/(1+exp(-x)))", lambda x: T.log(1 / (1 + T.exp(-x))), "log_sigmoid", 1, 0),
    ("log((1+exp(-x))**-1)", lambda x: T.log((1 + T.exp(-x)) ** -1), "log_sigmoid", 1, 0),
    ("log(exp(x)/(1+exp(x)))", lambda x: T.log(T.exp(x) / (1 + T.exp(x))), "log_sigmoid", 1, 0),
    ("log(sigmoid(x))", lambda x: T.log(T.sigmoid(x)), "log_sigmoid", 1, 0),
    ("log(1/(1+exp(x)))", lambda x: T.log(1 / (1 + T.exp(x))), "log_sigmoid", -1, 0),
    ("log(1-1/(1+exp(-x)))", lambda x: T.log(1 - 1 / (1 + T.exp(-x))), "log_sigmoid", -1, 0),
    ("log(1-sigmoid(x))", lambda x: T.log(1 - T.sigmoid(x)), "log_sigmoid", -1, 0),
    ("log1p(-sigmoid(x))", lambda x: T.log1p(-T.sigmoid(x)), "log_sigmoid", -1, 0),
    ("log1p(-1/(1+exp(-x)))", lambda x: T.log1p(-(1 / (1 + T.exp(-x)))), "log_sigmoid", -1, 0),
    ("log(1+exp(x))", lambda x: T.log(1 + T.exp(x)), "softplus", 1, 0),
    ("log(exp(x)+1)", lambda x: T.log(T.exp(x) + 1), "softplus", 1, 0),
    ("log1p(exp(x))", lambda x: T.log1p(T.exp(x)), "softplus", 1, 0),
    ("-log(sigmoid(x))", lambda x: -T.log(T.sigmoid(x)), "softplus", -1, 0),
    ("xent(1/(1+exp(-x-b)))", lambda x, b: _xent(1 / (1 + T.exp(-x - b))), "xent", 1, 1),
]


def _arity(build):
    return build.__code__.co_argcount


def _inputs(build, prefix):
    return [T.dvector("%s_%s" % (prefix, n)) for n in "xb"[:_arity(build)]]


def _points(build):
    return [POINTS, B_POINTS][:_arity(build)]


def _reference(kind, dzdx, dzdb, values):
    z = dzdx * values[0] + (dzdb * values[1] if len(values) > 1 else 0.0)
    f, df = KINDS[kind]
    return f(z), [df(z) * dzdx, df(z) * dzdb][:len(values)]


def test_verify_grad_every_form():
    """verify_grad (float64, the default mode) of all forms at once: each form has inputs of its
    own and the function stacks the forms' values, so one pair of compiled functions checks all."""
    def stacked(*inputs):
        outs, i = [], 0
        for _, build, _, _, _ in FORMS:
            n = _arity(build)
            outs.append(build(*inputs[i:i + n]))
            i += n
        return T.stack(outs)

    pt = [p for _, build, _, _, _ in FORMS for p in _points(build)]
    verify_grad(stacked, pt, n_tests=1)


@pytest.mark.parametrize("mode_name", ["py, no rewrites", "c, no rewrites", "default"])
def test_gradients_equal_numpys_derivatives(mode_name):
    """d form / d input at POINTS equals the stable numpy derivative, finite, for every form; the
    gradients of all forms are one function. Without rewrites the written forms' own values are
    inf or NaN at +-800 (asserted for one), so it is grad's rebuild that makes the gradients finite."""
    if mode_name == "default":
        mode = Mode()
    else:
        mode = Mode(linker=mode_name.split(",")[0], optimizer=None)
    inputs, outputs, spans = [], [], []
    for k, (_, build, _, _, _) in enumerate(FORMS):
        ins = _inputs(build, "f%d" % k)
        out = build(*ins)
        spans.append(slice(len(outputs), len(outputs) + len(ins)))
        outputs += grad(out.sum(), ins)
        inputs += ins
    plain_sigmoid = FORMS[0][1](inputs[0])   # the written 1/(1+exp(-x)), for the contrast
    f = function(inputs, outputs + [grad(T.log(plain_sigmoid).sum(), inputs[0]), T.log(plain_sigmoid)],
                 mode=mode)
    args = [p for _, build, _, _, _ in FORMS for p in _points(build)]
    with np.errstate(all="ignore"):
        got = f(*args)
    # Without rewrites sigmoid's own derivative s * (1 - s) is 0 where 1 - s rounds to 0 (x = 40:
    # exactly s(40) * s(-40) = 4.2e-18): finite, within one ulp of 1 of the exact value. The
    # compile-time rewrite 1 - sigmoid(x) -> sigmoid(-x) makes it exact in the default mode.
    atol = 1e-300 if mode_name == "default" else 2.0 ** -52
    for k, (label, build, kind, dzdx, dzdb) in enumerate(FORMS):
        _, want = _reference(kind, dzdx, dzdb, _points(build))
        for g, w in zip(got[spans[k]], want):
            assert g.dtype == np.float64
            assert np.isfinite(g).all(), (label, g)
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=atol, err_msg=label)
    np.testing.assert_allclose(got[-2], sig(-POINTS), rtol=1e-12, atol=1e-300)
    if mode_name != "default":
        assert np.isinf(got[-1][0]), "without rewrites the written log(1/(1+exp(800))) is -inf"


def _tutorial_graph():
    x, y = T.dmatrix("x"), T.dvector("y")
    w, b = T.dvector("w"), T.dscalar("b")
    p_1 = 1 / (1 + T.exp(-T.dot(x, w) - b))
    xent = -y * T.log(p_1) - (1 - y) * T.log(1 - p_1)
    cost = xent.mean() + 0.01 * (w ** 2).sum()
    return x, y, w, b, p_1, cost


@pytest.mark.parametrize("linker", ["py", "c"])
def test_tutorial_gradient_is_numpys_at_saturated_logits(linker):
    """The tutorial's cost with |x.w + b| up to ~900: the gradient (compiled with no rewrites)
    equals  x.T (sigmoid(z) - y) / n + 0.02 w  and  mean(sigmoid(z) - y)."""
    x, y, w, b, _, cost = _tutorial_graph()
    gw, gb = grad(cost, [w, b])
    f = function([x, y, w, b], [gw, gb], mode=Mode(linker=linker, optimizer=None))
    rng = np.random.default_rng(7)
    xv = rng.standard_normal((50, 20))
    wv = 60 * rng.standard_normal(20)
    yv = rng.integers(0, 2, 50).astype(np.float64)
    bv = 0.5
    z = xv.dot(wv) + bv
    assert np.abs(z).max() > 400 and np.mean(np.abs(z) > 40) > 0.5, "the logits saturate"
    got_w, got_b = f(xv, yv, wv, bv)
    err = sig(z) - yv
    np.testing.assert_allclose(got_w, xv.T.dot(err) / len(yv) + 0.02 * wv, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(got_b, np.mean(err), rtol=1e-11, atol=1e-13)


def _snapshot(var):
    """Each ancestor of ``var`` with its owner and the owner's inputs, to compare before/after."""
    return [(v, v.owner, list(v.owner.inputs) if v.owner is not None else None) for v in ancestors([var])]


def test_callers_graph_is_not_changed():
    """grad leaves the caller's cost graph as it was (the stable forms are a new graph), and
    stabilize_graph gives back the very same variables where nothing matches."""
    x, y, w, b, p_1, cost = _tutorial_graph()
    before = _snapshot(cost)
    grad(cost, [w, b])
    assert _snapshot(cost) == before
    new_cost, = stabilize_graph([cost])
    assert new_cost is not cost
    assert _snapshot(cost) == before
    plain = (T.exp(x) * 2).sum() + T.log(w).sum()
    assert stabilize_graph([plain]) == [plain]
    assert stabilize_graph([p_1], keep=[p_1]) == [p_1]


def test_named_variables_keep_their_identity():
    """wrt, known_grads keys and consider_constant are neither replaced nor looked through:
    grad w.r.t. a written-out sigmoid p is d cost / d p (1/p for log(p), not what the stable
    form -softplus(-x) would give), an exp(-x) held constant stops the gradient, and a known
    gradient on p is what reaches x."""
    x = T.dvector("x")
    e = T.exp(-x)
    p = 1 / (1 + e)
    cost = T.log(p).sum()
    g_p, g_x = grad(cost, [p, x])                       # p named: log(p) stays log(p)
    g_const = grad(cost, x, consider_constant=[e], disconnected_inputs="ignore")
    g_known = grad(T.log(p).sum(), x, known_grads={p: T.ones_like(p)})   # p keeps getting 1 besides
    f = function([x], [g_p, g_x, g_const, g_known], mode=Mode(linker="py"))
    xv = np.array([-3.0, -0.5, 0.0, 2.0, 5.0])
    got_p, got_x, got_const, got_known = f(xv)
    pv = sig(xv)
    np.testing.assert_allclose(got_p, 1 / pv, rtol=1e-12)
    np.testing.assert_allclose(got_x, sig(-xv), rtol=1e-12)
    np.testing.assert_array_equal(got_const, np.zeros_like(xv))
    np.testing.assert_allclose(got_known, (1 / pv + 1) * pv * (1 - pv), rtol=1e-12)

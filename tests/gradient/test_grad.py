"""``grad``'s contract: connectivity, integers, consider_constant, known_grads, undefined
gradients, broadcasting, jacobian/hessian, and gradient values at edge cases vs numpy.

The gradient graphs are checked a section at a time: each ``_case_*`` builds one graph (its own
inputs, its outputs, the values to call it on and its checks), and a section's test compiles
all its cases into ONE function (``check_graphs``) instead of one function per case.
"""
import warnings

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import function, grad, hessian, jacobian, shared
from ffigraph.compile.mode import Mode
from ffigraph.gradient import (DisconnectedInputError, DisconnectedType, NullTypeGradError,
                               grad_undefined)
from ffigraph.graph.basic import Apply
from ffigraph.graph.op import Op
from helpers import LAYOUTS, relayout


class Graph:
    """One case of a batched check: ``outputs`` (a variable or a list) of ``inputs`` (its own),
    called on each value list of ``datasets``; ``check(got, values)`` asserts on each result
    (``got`` is what ``function(inputs, outputs)(*values)`` returns)."""

    def __init__(self, label, inputs, outputs, datasets, check):
        self.label, self.inputs, self.outputs = label, list(inputs), outputs
        self.datasets, self.check = datasets, check

    @property
    def output_list(self):
        return list(self.outputs) if isinstance(self.outputs, (list, tuple)) else [self.outputs]


def check_graphs(graphs, mode, errstate=None):
    """Compile every graph of ``graphs`` into ONE function under ``mode`` and call it once per
    round, each graph on its next dataset, checking each result with its graph's ``check``."""
    inputs, outputs, spans = [], [], []
    for g in graphs:
        assert not set(g.inputs) & set(inputs), "%s: the graphs of a batch need inputs of their own" % g.label
        inputs += g.inputs
        spans.append(slice(len(outputs), len(outputs) + len(g.output_list)))
        outputs += g.output_list
    f = function(inputs, outputs, mode=mode, on_unused_input="ignore")
    for r in range(max(len(g.datasets) for g in graphs)):
        values = [g.datasets[min(r, len(g.datasets) - 1)] for g in graphs]
        with np.errstate(**(errstate or {})):
            got = f(*[v for vs in values for v in vs])
        for g, span, vs in zip(graphs, spans, values):
            if r >= len(g.datasets):
                continue
            result = got[span] if isinstance(g.outputs, (list, tuple)) else got[span][0]
            try:
                g.check(result, vs)
            except AssertionError as err:
                raise AssertionError("case %s, values %d: %s" % (g.label, r, err)) from None
    return f


# ------------------------------------------------------------------ basic values


def _case_polynomial():
    x = T.dvector("x")
    g = grad(T.sum(x ** 3 - 2 * x), x)
    xv = np.linspace(-2, 2, 7)
    return Graph("grad of a polynomial matches its derivative", [x], g, [[xv]],
                 lambda got, _: np.testing.assert_allclose(got, 3 * xv ** 2 - 2, rtol=1e-12))


def _case_list():
    x, y = T.dscalar("x"), T.dscalar("y")
    gx, gy = grad(x * y + T.sin(x), [x, y])
    return Graph("grad accepts a list and returns a list", [x, y], [gx, gy], [[0.3, 2.0]],
                 lambda got, _: np.testing.assert_allclose(got, [2.0 + np.cos(0.3), 0.3], rtol=1e-12))


def _case_layouts():
    x = T.dmatrix("x")
    g = grad(T.sum(T.exp(x) * x), x)
    xv = np.random.default_rng(0).uniform(-1, 1, (3, 5))
    return Graph("gradient functions accept any layout", [x], g, [[relayout(xv, layout)] for layout in LAYOUTS],
                 lambda got, _: np.testing.assert_allclose(got, np.exp(xv) * (xv + 1), rtol=1e-12))


def _case_intermediate():
    x = T.dvector("x")
    h = T.exp(x)
    cost = T.sum(h * h)
    gh, gx = grad(cost, [h, x])
    xv = np.array([0.1, -0.4, 1.2])

    def check(got, _):
        got_h, got_x = got
        np.testing.assert_allclose(got_h, 2 * np.exp(xv), rtol=1e-12)
        np.testing.assert_allclose(got_x, 2 * np.exp(2 * xv), rtol=1e-12)

    return Graph("grad wrt an intermediate and its input", [x], [gh, gx], [[xv]], check)


def _case_used_twice():
    x = T.dvector("x")
    g = grad(T.sum(x * T.sin(x)), x)
    xv = np.array([0.5, 1.5])
    return Graph("gradient of a variable used twice is summed", [x], g, [[xv]],
                 lambda got, _: np.testing.assert_allclose(got, np.sin(xv) + xv * np.cos(xv), rtol=1e-12))


def test_basic_gradient_values(mode):
    """A polynomial; a list of wrt; every layout; an intermediate and its input; a variable used twice."""
    check_graphs([_case_polynomial(), _case_list(), _case_layouts(), _case_intermediate(), _case_used_twice()], mode)


# ------------------------------------------------------------------ broadcasting


def _case_runtime_broadcasting():
    """x has no static shape, so only its value says whether it was broadcast."""
    x, y = T.dmatrix("x"), T.dmatrix("y")
    g = grad(T.sum(x * y), x)
    yv = np.arange(12.0).reshape(3, 4)

    def check(got, values):
        xshape = values[0].shape
        expected = np.sum(yv, axis=tuple(a for a in range(2) if xshape[a] == 1), keepdims=True)
        assert got.shape == xshape
        np.testing.assert_allclose(got, np.broadcast_to(expected, xshape))

    return Graph("runtime broadcasting is summed back", [x, y], g,
                 [[np.ones(xshape), yv] for xshape in [(1, 4), (3, 1), (1, 1), (3, 4)]], check)


def _case_static_broadcasting():
    x, b, s = T.dmatrix("x"), T.dvector("b"), T.dscalar("s")
    gb, gs = grad(T.sum((x + b) * s), [b, s])
    xv = np.arange(6.0).reshape(2, 3)

    def check(got, _):
        got_b, got_s = got
        np.testing.assert_allclose(got_b, [4.0, 4.0, 4.0])
        np.testing.assert_allclose(got_s, np.sum(xv + 1))
        assert got_s.shape == ()

    return Graph("static broadcasting of a scalar and a vector", [x, b, s], [gb, gs], [[xv, np.ones(3), 2.0]], check)


def test_broadcasting_gradients(mode):
    """Runtime broadcasting (each of four shapes of x) is summed back; static broadcasting too."""
    check_graphs([_case_runtime_broadcasting(), _case_static_broadcasting()], mode)


# ------------------------------------------------------------------ dtypes and integers


def _case_float32():
    x = T.fvector("x")
    g = grad(T.sum(T.exp(x) * 2.5 + x ** 2), x)
    assert g.type.dtype == "float32"
    xv = np.array([0.5, -1.0], dtype=np.float32)

    def check(got, _):
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, np.exp(xv) * 2.5 + 2 * xv, rtol=1e-6)

    return Graph("float32 gradients stay float32", [x], g, [[xv]], check)


def _case_mixed_precision():
    x, y = T.fvector("x"), T.dvector("y")
    gx, gy = grad(T.sum(x * y), [x, y])
    assert (gx.type.dtype, gy.type.dtype) == ("float32", "float64")

    def check(got, _):
        got_x, got_y = got
        np.testing.assert_allclose(got_x, [2.0, 3.0])
        np.testing.assert_allclose(got_y, [1.0, 1.0])

    return Graph("mixed precision gradients take each input's dtype", [x, y], [gx, gy],
                 [[np.ones(2, np.float32), np.array([2.0, 3.0])]], check)


def _case_integer_paths():
    """Comparisons, casts to int, argmax: piecewise constant, so zero (and connected)."""
    x = T.dvector("x")
    cost = T.sum(T.cast(T.gt(x, 0), "float64")) + T.cast(T.argmax(x), "float64") + T.sum(T.floor(x))
    g = grad(cost, x)
    return Graph("integer paths give zero gradients", [x], g, [[np.array([-1.0, 2.0, 0.5])]],
                 lambda got, _: np.testing.assert_array_equal(got, [0.0, 0.0, 0.0]))


def _case_integer_variable():
    # PyTensor's rule (its test_grad_int): the gradient w.r.t. an integer variable is the one w.r.t. a
    # float variable of the same values, float (here x * i is float64, so d/di is x, float64). This
    # case used to expect zeros in floatX, the old rule of zeroing every integer variable's gradient.
    i, x = T.lvector("i"), T.dvector("x")
    gi = grad(T.sum(x * i), i)
    assert gi.type.dtype == "float64"
    return Graph("gradient wrt an integer variable is float, as for a float one", [i, x], gi,
                 [[np.array([1, 2]), np.array([3.0, 4.0])]], lambda got, _: np.testing.assert_array_equal(got, [3, 4]))


def _case_integer_cost():
    x = T.dvector("x")
    g = grad(T.sum(T.cast(x, "int64")), x)
    return Graph("integer cost gives zero gradient", [x], g, [[np.array([1.5, 2.5])]],
                 lambda got, _: np.testing.assert_array_equal(got, [0.0, 0.0]))


def test_gradient_dtypes_and_integers(mode):
    """float32 stays float32; mixed precision; integer paths and integer costs give zeros; an integer
    wrt gets the float gradient a float one would."""
    check_graphs([_case_float32(), _case_mixed_precision(), _case_integer_paths(), _case_integer_variable(),
                  _case_integer_cost()], mode)


# ------------------------------------------------------------------ connectivity


def test_disconnected_input_raises_by_default():
    x, y = T.dvector("x"), T.dvector("y")
    with pytest.raises(DisconnectedInputError, match="does not depend on y"):
        grad(T.sum(x), [x, y])


def test_shape_only_dependence_is_disconnected():
    x = T.dvector("x")
    with pytest.raises(DisconnectedInputError):
        grad(T.cast(x.shape[0], "float64") * 2.0, x)


def _case_disconnected_warn_and_ignore():
    x, y = T.dvector("x"), T.dmatrix("y")
    with pytest.warns(UserWarning, match="does not depend on y"):
        gy = grad(T.sum(x), y, disconnected_inputs="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gy2 = grad(T.sum(x), y, disconnected_inputs="ignore")

    def check(got, _):
        for g in got:
            np.testing.assert_array_equal(g, np.zeros((2, 3)))

    return Graph("disconnected warn and ignore give zeros", [x, y], [gy, gy2], [[np.ones(2), np.ones((2, 3))]], check)


def test_return_disconnected_none_and_disconnected():
    x, y = T.dvector("x"), T.dvector("y")
    assert grad(T.sum(x), y, disconnected_inputs="ignore", return_disconnected="none") is None
    d = grad(T.sum(x), y, disconnected_inputs="ignore", return_disconnected="disconnected")
    assert isinstance(d.type, DisconnectedType)


def _case_consider_constant():
    x = T.dvector("x")
    h = x * x
    g = grad(T.sum(h * x), x, consider_constant=[h])
    xv = np.array([1.0, 2.0])
    return Graph("consider_constant blocks the gradient", [x], g, [[xv]],
                 lambda got, _: np.testing.assert_allclose(got, xv * xv))


def _case_known_grads_replace():
    x = T.dvector("x")
    h = T.exp(x)
    g = grad(None, x, known_grads={h: T.constant(np.array([1.0, 10.0]))})
    xv = np.array([0.0, 1.0])
    return Graph("known_grads replace the cost", [x], g, [[xv]],
                 lambda got, _: np.testing.assert_allclose(got, np.exp(xv) * [1.0, 10.0]))


def _case_known_grads_add():
    x = T.dscalar("x")
    h = x * 3.0
    g = grad(h, x, known_grads={h: T.constant(2.0)})  # 1 from the cost plus 2 known: 3 * 3
    return Graph("known_grads add to the cost", [x], g, [[1.0]], lambda got, _: np.testing.assert_allclose(got, 9.0))


def test_connectivity_gradients(mode):
    """disconnected_inputs warn/ignore give zeros; consider_constant; known_grads replacing and
    adding to the cost."""
    check_graphs([_case_disconnected_warn_and_ignore(), _case_consider_constant(), _case_known_grads_replace(),
                  _case_known_grads_add()], mode)


# ------------------------------------------------------------------ errors


def test_cost_must_be_a_scalar():
    x = T.dvector("x")
    with pytest.raises(TypeError, match="cost must be a scalar"):
        grad(x * 2, x)


def test_wrt_must_be_variables():
    x = T.dvector("x")
    with pytest.raises(TypeError, match="wrt"):
        grad(T.sum(x), [x, 3.0])


def test_bad_options_are_named():
    x = T.dvector("x")
    with pytest.raises(ValueError, match="disconnected_inputs"):
        grad(T.sum(x), x, disconnected_inputs="maybe")


class _NoGradOp(Op):
    __props__ = ()

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, out):
        out[0][0] = inputs[0].copy()


class _UndefinedGradOp(_NoGradOp):
    def L_op(self, inputs, outputs, output_grads):
        return [grad_undefined(self, 0, inputs[0], "it jumps everywhere")]


def test_op_without_gradient_is_named():
    x = T.dvector("x")
    with pytest.raises(NotImplementedError, match="_NoGradOp"):
        grad(T.sum(_NoGradOp()(x)), x)


def test_undefined_gradient_raises_or_is_returned():
    x = T.dvector("x")
    cost = T.sum(_UndefinedGradOp()(x))
    with pytest.raises(NullTypeGradError, match="jumps everywhere"):
        grad(cost, x)
    assert "jumps everywhere" in grad(cost, x, null_gradients="return").type.why_null


def test_complex_gradients_say_they_are_not_implemented():
    z = T.zvector("z")
    # (the real part was T.cast(z, "float64"), which is now a TypeError: PyTensor's cast refuses to
    # drop an imaginary part silently, and real() says which part is meant)
    with pytest.raises(NotImplementedError, match="complex"):
        grad(T.sum(T.exp(T.real(z))) + T.sum(T.abs_(z)), z)


# ------------------------------------------------------------------ edge values vs numpy


def _case_nan_inf_and_zero():
    x = T.dvector("x")
    g_log, g_sqrt, g_abs = grad(T.sum(T.log(x)), x), grad(T.sum(T.sqrt(x)), x), grad(T.sum(T.abs_(x)), x)
    xv = np.array([0.0, np.inf, np.nan, 4.0, -0.0])

    def check(got, _):
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(got[0], 1 / xv)
            np.testing.assert_array_equal(got[1], 0.5 / np.sqrt(xv))
        np.testing.assert_array_equal(got[2], np.sign(xv))

    return Graph("gradients at nan, inf and zero", [x], [g_log, g_sqrt, g_abs], [[xv]], check)


def _case_max_first_maximum():
    x = T.dmatrix("x")
    g = grad(T.sum(x.max(axis=1) * [1.0, 2.0, 3.0]), x)
    xv = np.array([[1.0, 3.0, 3.0], [np.nan, 2.0, np.nan], [5.0, 5.0, 5.0]])
    expected = np.array([[0, 1, 0], [2, 0, 0], [3, 0, 0]], dtype=float)
    return Graph("max gradient goes to the first maximum", [x], g, [[xv]],
                 lambda got, _: np.testing.assert_array_equal(got, expected))


def _case_min_several_axes():
    x = T.tensor3("x")
    g = grad(T.sum(x.min(axis=(0, 2))), x)
    xv = np.random.default_rng(3).integers(0, 3, (2, 3, 4)).astype(float)
    moved = xv.transpose(1, 0, 2).reshape(3, -1)
    expected = np.zeros((3, 8))
    expected[np.arange(3), np.argmin(moved, axis=1)] = 1
    return Graph("min gradient over several axes is one-hot", [x], g, [[xv]],
                 lambda got, _: np.testing.assert_array_equal(got, expected.reshape(3, 2, 4).transpose(1, 0, 2)))


def _case_prod_with_zeros():
    x = T.dmatrix("x")
    g = grad(T.sum(x.prod(axis=1)), x)
    xv = np.array([[2.0, 3.0, 4.0], [2.0, 0.0, 4.0], [0.0, 0.0, 4.0]])
    expected = np.array([[12.0, 8.0, 6.0], [0.0, 8.0, 0.0], [0.0, 0.0, 0.0]])
    return Graph("prod gradient with zeros", [x], g, [[xv]], lambda got, _: np.testing.assert_array_equal(got, expected))


def _case_maximum_ties():
    x, y = T.dvector("x"), T.dvector("y")
    gx, gy = grad(T.sum(T.maximum(x, y)), [x, y])

    def check(got, _):
        got_x, got_y = got
        np.testing.assert_array_equal(got_x + got_y, [1.0, 1.0, 1.0])
        np.testing.assert_array_equal(got_x, [1.0, 0.0, 1.0])

    return Graph("maximum ties count once", [x, y], [gx, gy], [[np.array([1.0, 2.0, 3.0]), np.array([1.0, 5.0, 0.0])]],
                 check)


def _case_empty(ndim, shapes):
    x = T.tensor("float64", (None,) * ndim, name="x")
    g = grad(T.sum(T.exp(x) * 2.0), x)

    def check(got, values):
        assert got.shape == values[0].shape

    return Graph("gradients of empty arrays, %d-d" % ndim, [x], g, [[np.zeros(shape)] for shape in shapes], check)


def _case_zero_d():
    x = T.dscalar("x")
    g = grad(T.tanh(x) * 3.0, x)

    def check(got, _):
        assert got.shape == ()
        np.testing.assert_allclose(got, 3 * (1 - np.tanh(0.25) ** 2))

    return Graph("0-d gradient", [x], g, [[np.array(0.25)]], check)


def _case_shared():
    w = shared(np.array([1.0, -2.0]), name="w")
    x = T.dvector("x")
    g = grad(T.sum(w * x) + T.sum(w ** 2), w)
    return Graph("shared variables get gradients", [x], g, [[np.array([3.0, 4.0])]],
                 lambda got, _: np.testing.assert_allclose(got, [5.0, 0.0]))


def test_gradients_at_edge_values(mode):
    """nan, inf and zero; the first maximum; one-hot min over several axes; prod with zeros;
    ties of maximum; empty arrays ((0,), (0, 3), (2, 0)); 0-d; shared variables."""
    check_graphs([_case_nan_inf_and_zero(), _case_max_first_maximum(), _case_min_several_axes(),
                  _case_prod_with_zeros(), _case_maximum_ties(), _case_empty(1, [(0,)]),
                  _case_empty(2, [(0, 3), (2, 0)]), _case_zero_d(), _case_shared()], mode,
                 errstate=dict(all="ignore"))


# ------------------------------------------------------------------ jacobian / hessian


def _case_jacobian_vector():
    x = T.tensor("float64", (3,), name="x")
    J = jacobian(T.exp(x) * x[0], x)
    xv = np.array([0.1, 0.2, 0.3])
    expected = np.diag(np.exp(xv) * xv[0])
    expected[:, 0] += np.exp(xv)
    return Graph("jacobian of a vector function", [x], J, [[xv]],
                 lambda got, _: np.testing.assert_allclose(got, expected, rtol=1e-12))


def _case_jacobian_list_and_matrix():
    x, W = T.tensor("float64", (2,), name="x"), T.tensor("float64", (2, 2), name="W")
    Jx, JW = jacobian(T.dot(W, x), [x, W])
    Wv, xv = np.arange(4.0).reshape(2, 2), np.array([1.0, 2.0])
    expected_W = np.zeros((2, 2, 2))
    expected_W[0, 0], expected_W[1, 1] = xv, xv

    def check(got, _):
        got_x, got_W = got
        np.testing.assert_allclose(got_x, Wv)
        np.testing.assert_allclose(got_W, expected_W)

    return Graph("jacobian wrt a list and a matrix", [x, W], [Jx, JW], [[xv, Wv]], check)


def test_jacobian_of_a_non_static_length_is_a_scan():
    # (tests/scan/test_scan_grad.py checks more: hessians, lists, zero rows)
    from ffigraph.graph.basic import io_toposort

    x = T.dvector("x")
    J = jacobian(T.exp(x), x)
    assert any(type(node.op).__name__ == "Scan" for node in io_toposort([x], [J]))
    xv = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(function([x], J, mode=Mode(linker="py"))(xv), np.diag(np.exp(xv)), rtol=1e-12)


def _case_hessian_quadratic():
    x = T.tensor("float64", (3,), name="x")
    A = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]])
    H = hessian(0.5 * T.dot(x, T.dot(A, x)), x)
    return Graph("hessian of a quadratic", [x], H, [[np.ones(3)]],
                 lambda got, _: np.testing.assert_allclose(got, A, rtol=1e-12))


def _case_hessian_logsumexp():
    x = T.tensor("float64", (3,), name="x")
    H2 = hessian(T.log(T.sum(T.exp(x))), x)
    xv = np.array([0.1, -0.3, 0.7])
    p = np.exp(xv) / np.exp(xv).sum()
    return Graph("hessian of logsumexp", [x], H2, [[xv]],
                 lambda got, _: np.testing.assert_allclose(got, np.diag(p) - np.outer(p, p), atol=1e-12))


def _case_second_derivative():
    x, y = T.tensor("float64", (2,), name="x"), T.dmatrix("y")
    cost = T.sum((x * y) ** 2) + T.max(x) ** 3
    H = hessian(cost, x)
    xv, yv = np.array([1.0, 2.0]), np.array([[1.0, 2.0], [3.0, 4.0]])
    expected = np.diag(2 * np.sum(yv ** 2, axis=0))
    expected[1, 1] += 6 * 2.0
    return Graph("second derivative through max and sum_to_shape", [x, y], H, [[xv, yv]],
                 lambda got, _: np.testing.assert_allclose(got, expected))


JACOBIAN_HESSIAN = {
    "jacobian": [_case_jacobian_vector, _case_jacobian_list_and_matrix, _case_hessian_quadratic],
    "hessian": [_case_hessian_logsumexp, _case_second_derivative],
}


@pytest.mark.parametrize("kind", sorted(JACOBIAN_HESSIAN))
def test_jacobian_and_hessian(kind, mode):
    """jacobian of a vector function, and wrt a list with a matrix; hessians of a quadratic and of
    logsumexp; a second derivative through max and sum_to_shape (two functions: their graphs are big)."""
    check_graphs([case() for case in JACOBIAN_HESSIAN[kind]], mode)


# ------------------------------------------------------------------ training with updates


@pytest.mark.parametrize("linker", ["py", "c", "cvm"])
def test_gradient_descent_with_updates_converges(linker):
    w = shared(np.zeros(2), name="w")
    target = np.array([3.0, -1.0])
    cost = T.sum((w - target) ** 2)
    step = function([], cost, updates=[(w, w - 0.25 * grad(cost, w))], mode=Mode(linker=linker))
    costs = [float(step()) for _ in range(30)]
    assert costs[0] == pytest.approx(10.0)
    assert all(b < a for a, b in zip(costs, costs[1:]))
    np.testing.assert_allclose(w.get_value(), target, atol=1e-8)


# ------------------------------------------------------------------ numerical stability


def _cross_entropy_grads():
    """Fresh symbols: the gradient of the cross entropy, and of -log(sigmoid(z))."""
    z, y = T.dvector("z"), T.dvector("y")
    p = T.sigmoid(z)
    cost = (-y * T.log(p) - (1 - y) * T.log(1 - p)).sum()
    z2 = T.dvector("z")
    return (z, y), grad(cost, z), z2, grad(-T.log(T.sigmoid(z2)).sum(), z2)


@pytest.mark.parametrize("linker", ["py", "c"])
def test_cross_entropy_gradient_is_finite_for_any_logit(linker):
    """sigmoid cancels the 1/p and 1/(1-p) of log's gradient: p - y, even where p rounds to 0 or 1.

    With the rewrites, the gradient of -log(sigmoid(z)) (on symbols of its own, so the rewrites
    see the two graphs apart) is computed by the same function."""
    zv = np.array([-800.0, -40.0, -1.0, 0.0, 2.0, 40.0, 800.0])
    yv = np.array([1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0])
    with np.errstate(over="ignore"):
        one_minus_p = 1 / (1 + np.exp(zv))  # computed without cancellation
        expected = np.where(yv == 1, -one_minus_p, 1 / (1 + np.exp(-zv)))
    (z, y), g, z2, g_log = _cross_entropy_grads()
    got, got_log = function([z, y, z2], [g, g_log], mode=Mode(linker=linker))(zv, yv, zv)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-16)
    np.testing.assert_allclose(got_log, -one_minus_p, rtol=1e-12)
    got = function([z, y], g, mode=Mode(linker=linker, optimizer=None))(zv, yv)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-16)

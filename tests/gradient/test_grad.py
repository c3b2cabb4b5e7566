"""``grad``'s contract: connectivity, integers, consider_constant, known_grads, undefined
gradients, broadcasting, jacobian/hessian, and gradient values at edge cases vs numpy."""
import warnings

import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph import function, grad, hessian, jacobian, shared
from ffigraph.compile.mode import Mode
from ffigraph.gradient import (DisconnectedInputError, DisconnectedType, NullTypeGradError,
                               grad_undefined)
from ffigraph.graph.basic import Apply
from ffigraph.graph.op import Op
from helpers import LAYOUTS, relayout


def run(inputs, outputs, values, mode):
    return function(inputs, outputs, mode=mode, on_unused_input="ignore")(*values)


# ------------------------------------------------------------------ basic values


def test_grad_of_polynomial_matches_derivative(mode):
    x = T.dvector("x")
    g = grad(T.sum(x ** 3 - 2 * x), x)
    xv = np.linspace(-2, 2, 7)
    np.testing.assert_allclose(run([x], g, [xv], mode), 3 * xv ** 2 - 2, rtol=1e-12)


def test_grad_accepts_a_list_and_returns_a_list(mode):
    x, y = T.dscalar("x"), T.dscalar("y")
    gx, gy = grad(x * y + T.sin(x), [x, y])
    got = run([x, y], [gx, gy], [0.3, 2.0], mode)
    np.testing.assert_allclose(got, [2.0 + np.cos(0.3), 0.3], rtol=1e-12)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_gradient_functions_accept_any_layout(layout, mode):
    x = T.dmatrix("x")
    g = grad(T.sum(T.exp(x) * x), x)
    xv = np.random.default_rng(0).uniform(-1, 1, (3, 5))
    got = run([x], g, [relayout(xv, layout)], mode)
    np.testing.assert_allclose(got, np.exp(xv) * (xv + 1), rtol=1e-12)


def test_grad_wrt_an_intermediate_and_its_input(mode):
    x = T.dvector("x")
    h = T.exp(x)
    cost = T.sum(h * h)
    gh, gx = grad(cost, [h, x])
    xv = np.array([0.1, -0.4, 1.2])
    got_h, got_x = run([x], [gh, gx], [xv], mode)
    np.testing.assert_allclose(got_h, 2 * np.exp(xv), rtol=1e-12)
    np.testing.assert_allclose(got_x, 2 * np.exp(2 * xv), rtol=1e-12)


def test_gradient_of_a_variable_used_twice_is_summed(mode):
    x = T.dvector("x")
    g = grad(T.sum(x * T.sin(x)), x)
    xv = np.array([0.5, 1.5])
    np.testing.assert_allclose(run([x], g, [xv], mode), np.sin(xv) + xv * np.cos(xv), rtol=1e-12)


# ------------------------------------------------------------------ broadcasting


@pytest.mark.parametrize("xshape", [(1, 4), (3, 1), (1, 1), (3, 4)])
def test_runtime_broadcasting_is_summed_back(xshape, mode):
    """x has no static shape, so only its value says whether it was broadcast."""
    x, y = T.dmatrix("x"), T.dmatrix("y")
    g = grad(T.sum(x * y), x)
    yv = np.arange(12.0).reshape(3, 4)
    xv = np.ones(xshape)
    got = run([x, y], g, [xv, yv], mode)
    expected = np.sum(yv, axis=tuple(a for a in range(2) if xshape[a] == 1), keepdims=True)
    assert got.shape == xshape
    np.testing.assert_allclose(got, np.broadcast_to(expected, xshape))


def test_static_broadcasting_of_a_scalar_and_a_vector(mode):
    x, b, s = T.dmatrix("x"), T.dvector("b"), T.dscalar("s")
    gb, gs = grad(T.sum((x + b) * s), [b, s])
    xv = np.arange(6.0).reshape(2, 3)
    got_b, got_s = run([x, b, s], [gb, gs], [xv, np.ones(3), 2.0], mode)
    np.testing.assert_allclose(got_b, [4.0, 4.0, 4.0])
    np.testing.assert_allclose(got_s, np.sum(xv + 1))
    assert got_s.shape == ()


# ------------------------------------------------------------------ dtypes and integers


def test_float32_gradients_stay_float32(mode):
    x = T.fvector("x")
    g = grad(T.sum(T.exp(x) * 2.5 + x ** 2), x)
    assert g.type.dtype == "float32"
    xv = np.array([0.5, -1.0], dtype=np.float32)
    got = run([x], g, [xv], mode)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.exp(xv) * 2.5 + 2 * xv, rtol=1e-6)


def test_mixed_precision_gradients_take_each_inputs_dtype(mode):
    x, y = T.fvector("x"), T.dvector("y")
    gx, gy = grad(T.sum(x * y), [x, y])
    assert (gx.type.dtype, gy.type.dtype) == ("float32", "float64")
    got_x, got_y = run([x, y], [gx, gy], [np.ones(2, np.float32), np.array([2.0, 3.0])], mode)
    np.testing.assert_allclose(got_x, [2.0, 3.0])
    np.testing.assert_allclose(got_y, [1.0, 1.0])


def test_integer_paths_give_zero_gradients(mode):
    """Comparisons, casts to int, argmax: piecewise constant, so zero (and connected)."""
    x = T.dvector("x")
    cost = T.sum(T.cast(T.gt(x, 0), "float64")) + T.cast(T.argmax(x), "float64") + T.sum(T.floor(x))
    g = grad(cost, x)
    np.testing.assert_array_equal(run([x], g, [np.array([-1.0, 2.0, 0.5])], mode), [0.0, 0.0, 0.0])


def test_gradient_wrt_an_integer_variable_is_zero_in_floatx(mode):
    i, x = T.lvector("i"), T.dvector("x")
    gi = grad(T.sum(x * i), i)
    assert gi.type.dtype == ffigraph.config.floatX
    np.testing.assert_array_equal(run([i, x], gi, [np.array([1, 2]), np.array([3.0, 4.0])], mode), [0, 0])


def test_integer_cost_gives_zero_gradient(mode):
    x = T.dvector("x")
    g = grad(T.sum(T.cast(x, "int64")), x)
    np.testing.assert_array_equal(run([x], g, [np.array([1.5, 2.5])], mode), [0.0, 0.0])


# ------------------------------------------------------------------ connectivity


def test_disconnected_input_raises_by_default():
    x, y = T.dvector("x"), T.dvector("y")
    with pytest.raises(DisconnectedInputError, match="does not depend on y"):
        grad(T.sum(x), [x, y])


def test_shape_only_dependence_is_disconnected():
    x = T.dvector("x")
    with pytest.raises(DisconnectedInputError):
        grad(T.cast(x.shape[0], "float64") * 2.0, x)


def test_disconnected_warn_and_ignore_give_zeros(mode):
    x, y = T.dvector("x"), T.dmatrix("y")
    with pytest.warns(UserWarning, match="does not depend on y"):
        gy = grad(T.sum(x), y, disconnected_inputs="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gy2 = grad(T.sum(x), y, disconnected_inputs="ignore")
    got = run([x, y], [gy, gy2], [np.ones(2), np.ones((2, 3))], mode)
    for g in got:
        np.testing.assert_array_equal(g, np.zeros((2, 3)))


def test_return_disconnected_none_and_disconnected():
    x, y = T.dvector("x"), T.dvector("y")
    assert grad(T.sum(x), y, disconnected_inputs="ignore", return_disconnected="none") is None
    d = grad(T.sum(x), y, disconnected_inputs="ignore", return_disconnected="disconnected")
    assert isinstance(d.type, DisconnectedType)


def test_consider_constant_blocks_the_gradient(mode):
    x = T.dvector("x")
    h = x * x
    g = grad(T.sum(h * x), x, consider_constant=[h])
    xv = np.array([1.0, 2.0])
    np.testing.assert_allclose(run([x], g, [xv], mode), xv * xv)


def test_known_grads_replace_the_cost(mode):
    x = T.dvector("x")
    h = T.exp(x)
    g = grad(None, x, known_grads={h: T.constant(np.array([1.0, 10.0]))})
    xv = np.array([0.0, 1.0])
    np.testing.assert_allclose(run([x], g, [xv], mode), np.exp(xv) * [1.0, 10.0])


def test_known_grads_add_to_the_cost(mode):
    x = T.dscalar("x")
    h = x * 3.0
    g = grad(h, x, known_grads={h: T.constant(2.0)})  # 1 from the cost plus 2 known: 3 * 3
    np.testing.assert_allclose(run([x], g, [1.0], mode), 9.0)


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
    with pytest.raises(NotImplementedError, match="complex"):
        grad(T.sum(T.exp(T.cast(z, "float64"))) + T.sum(T.abs_(z)), z)


# ------------------------------------------------------------------ edge values vs numpy


def test_gradients_at_nan_inf_and_zero(mode):
    x = T.dvector("x")
    g_log, g_sqrt, g_abs = grad(T.sum(T.log(x)), x), grad(T.sum(T.sqrt(x)), x), grad(T.sum(T.abs_(x)), x)
    xv = np.array([0.0, np.inf, np.nan, 4.0, -0.0])
    with np.errstate(all="ignore"):
        got = run([x], [g_log, g_sqrt, g_abs], [xv], mode)
        np.testing.assert_array_equal(got[0], 1 / xv)
        np.testing.assert_array_equal(got[1], 0.5 / np.sqrt(xv))
    np.testing.assert_array_equal(got[2], np.sign(xv))


def test_max_gradient_goes_to_the_first_maximum(mode):
    x = T.dmatrix("x")
    g = grad(T.sum(x.max(axis=1) * [1.0, 2.0, 3.0]), x)
    xv = np.array([[1.0, 3.0, 3.0], [np.nan, 2.0, np.nan], [5.0, 5.0, 5.0]])
    expected = np.array([[0, 1, 0], [2, 0, 0], [3, 0, 0]], dtype=float)
    np.testing.assert_array_equal(run([x], g, [xv], mode), expected)


def test_min_gradient_over_several_axes_is_one_hot(mode):
    x = T.tensor3("x")
    g = grad(T.sum(x.min(axis=(0, 2))), x)
    xv = np.random.default_rng(3).integers(0, 3, (2, 3, 4)).astype(float)
    got = run([x], g, [xv], mode)
    moved = xv.transpose(1, 0, 2).reshape(3, -1)
    expected = np.zeros((3, 8))
    expected[np.arange(3), np.argmin(moved, axis=1)] = 1
    np.testing.assert_array_equal(got, expected.reshape(3, 2, 4).transpose(1, 0, 2))


def test_prod_gradient_with_zeros(mode):
    x = T.dmatrix("x")
    g = grad(T.sum(x.prod(axis=1)), x)
    xv = np.array([[2.0, 3.0, 4.0], [2.0, 0.0, 4.0], [0.0, 0.0, 4.0]])
    expected = np.array([[12.0, 8.0, 6.0], [0.0, 8.0, 0.0], [0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(run([x], g, [xv], mode), expected)


def test_maximum_ties_count_once(mode):
    x, y = T.dvector("x"), T.dvector("y")
    gx, gy = grad(T.sum(T.maximum(x, y)), [x, y])
    got_x, got_y = run([x, y], [gx, gy], [np.array([1.0, 2.0, 3.0]), np.array([1.0, 5.0, 0.0])], mode)
    np.testing.assert_array_equal(got_x + got_y, [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(got_x, [1.0, 0.0, 1.0])


@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 0)])
def test_gradients_of_empty_arrays(shape, mode):
    x = T.tensor("float64", (None,) * len(shape), name="x")
    g = grad(T.sum(T.exp(x) * 2.0), x)
    got = run([x], g, [np.zeros(shape)], mode)
    assert got.shape == shape


def test_zero_d_gradient(mode):
    x = T.dscalar("x")
    g = grad(T.tanh(x) * 3.0, x)
    got = run([x], g, [np.array(0.25)], mode)
    assert got.shape == ()
    np.testing.assert_allclose(got, 3 * (1 - np.tanh(0.25) ** 2))


def test_shared_variables_get_gradients(mode):
    w = shared(np.array([1.0, -2.0]), name="w")
    x = T.dvector("x")
    g = grad(T.sum(w * x) + T.sum(w ** 2), w)
    np.testing.assert_allclose(run([x], g, [np.array([3.0, 4.0])], mode), [5.0, 0.0])


# ------------------------------------------------------------------ jacobian / hessian


def test_jacobian_of_a_vector_function(mode):
    x = T.tensor("float64", (3,), name="x")
    J = jacobian(T.exp(x) * x[0], x)
    xv = np.array([0.1, 0.2, 0.3])
    got = run([x], J, [xv], mode)
    expected = np.diag(np.exp(xv) * xv[0])
    expected[:, 0] += np.exp(xv)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_jacobian_wrt_a_list_and_a_matrix(mode):
    x, W = T.tensor("float64", (2,), name="x"), T.tensor("float64", (2, 2), name="W")
    Jx, JW = jacobian(T.dot(W, x), [x, W])
    Wv, xv = np.arange(4.0).reshape(2, 2), np.array([1.0, 2.0])
    got_x, got_W = run([x, W], [Jx, JW], [xv, Wv], mode)
    np.testing.assert_allclose(got_x, Wv)
    expected_W = np.zeros((2, 2, 2))
    expected_W[0, 0], expected_W[1, 1] = xv, xv
    np.testing.assert_allclose(got_W, expected_W)


def test_jacobian_needs_a_static_length():
    x = T.dvector("x")
    with pytest.raises(ValueError, match="static"):
        jacobian(T.exp(x), x)


def test_hessian_of_a_quadratic_and_of_logsumexp(mode):
    x = T.tensor("float64", (3,), name="x")
    A = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]])
    H = hessian(0.5 * T.dot(x, T.dot(A, x)), x)
    np.testing.assert_allclose(run([x], H, [np.ones(3)], mode), A, rtol=1e-12)
    H2 = hessian(T.log(T.sum(T.exp(x))), x)
    xv = np.array([0.1, -0.3, 0.7])
    p = np.exp(xv) / np.exp(xv).sum()
    np.testing.assert_allclose(run([x], H2, [xv], mode), np.diag(p) - np.outer(p, p), atol=1e-12)


def test_second_derivative_through_max_and_sum_to_shape(mode):
    x, y = T.tensor("float64", (2,), name="x"), T.dmatrix("y")
    cost = T.sum((x * y) ** 2) + T.max(x) ** 3
    H = hessian(cost, x)
    xv, yv = np.array([1.0, 2.0]), np.array([[1.0, 2.0], [3.0, 4.0]])
    expected = np.diag(2 * np.sum(yv ** 2, axis=0))
    expected[1, 1] += 6 * 2.0
    np.testing.assert_allclose(run([x, y], H, [xv, yv], mode), expected)


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


@pytest.mark.parametrize("linker", ["py", "c"])
def test_cross_entropy_gradient_is_finite_for_any_logit(linker):
    """sigmoid cancels the 1/p and 1/(1-p) of log's gradient: p - y, even where p rounds to 0 or 1."""
    z, y = T.dvector("z"), T.dvector("y")
    p = T.sigmoid(z)
    cost = (-y * T.log(p) - (1 - y) * T.log(1 - p)).sum()
    g = grad(cost, z)
    zv = np.array([-800.0, -40.0, -1.0, 0.0, 2.0, 40.0, 800.0])
    yv = np.array([1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0])
    with np.errstate(over="ignore"):
        one_minus_p = 1 / (1 + np.exp(zv))  # computed without cancellation
        expected = np.where(yv == 1, -one_minus_p, 1 / (1 + np.exp(-zv)))
    for mode in (Mode(linker=linker), Mode(linker=linker, optimizer=None)):
        got = function([z, y], g, mode=mode)(zv, yv)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-16)
    g_log = function([z], grad(-T.log(p).sum(), z), mode=Mode(linker=linker))(zv)
    np.testing.assert_allclose(g_log, -one_minus_p, rtol=1e-12)

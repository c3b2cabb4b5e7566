"""PyTensor's gradient helpers: ``Rop`` and ``Lop`` against explicit Jacobian products, the
gradient-changing identities (``zero_grad``, ``disconnected_grad``, ``grad_clip``,
``consider_constant``, ``grad_scale``, ``undefined_grad``) forward and backward under each linker,
``jacobian(vectorize=...)`` and ``hessian`` of a vector of symbolic length.

Each test compiles one function holding all its cases' outputs (compiling is what costs).
"""
import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph import function
from ffigraph.compile.mode import Mode
from ffigraph.gradient import (DisconnectedInputError, DisconnectedType, GradClip, Lop, NullTypeGradError, Rop,
                               consider_constant, disconnected_grad, grad, grad_clip, grad_scale, hessian,
                               jacobian, undefined_grad, zero_grad)
from ffigraph.linkers.c.linker import nodes_without_c_code

RNG = np.random.default_rng(7)


# ------------------------------------------------------------------ Rop and Lop


def _rop_lop_cases():
    """(inputs, values, [(symbolic, expected)]): Rop both ways and Lop, for an elementwise map,
    a matrix-vector dot (w.r.t. both), a column sum of a matrix and the sum of a matrix."""
    x, v, u = T.dvector("x"), T.dvector("v"), T.dvector("u")
    W, V, U = T.dmatrix("W"), T.dmatrix("V"), T.dmatrix("U")
    s = T.dscalar("s")
    xv, vv, uv = RNG.normal(size=3), RNG.normal(size=3), RNG.normal(size=3)
    Wv, Vv, Uv = RNG.normal(size=(3, 3)), RNG.normal(size=(3, 3)), RNG.normal(size=(3, 3))
    sv = 1.5
    checks = []

    # elementwise (and a reduction inside): y = exp(x) * sum(x)
    y = T.exp(x) * T.sum(x)
    J = np.diag(np.exp(xv)) * xv.sum() + np.exp(xv)[:, None]
    checks += [(Rop(y, x, v), J @ vv), (Rop(y, x, v, use_op_rop_implementation=True), J @ vv),
               (Lop(y, x, u), uv @ J)]

    # dot, w.r.t. the matrix and the vector at once: d(Wx) = dW x + W dx
    y = T.dot(W, x)
    checks += [(Rop(y, [W, x], [V, v]), Vv @ xv + Wv @ vv),
               (Rop(y, [W, x], [V, v], use_op_rop_implementation=True), Vv @ xv + Wv @ vv)]
    gW, gx = Lop(y, [W, x], u)
    checks += [(gW, np.outer(uv, xv)), (gx, Wv.T @ uv)]

    # a reduction over one axis of a matrix: y = sum(W ** 2, axis=0)
    y = T.sum(W ** 2, axis=0)
    checks += [(Rop(y, W, V), np.sum(2 * Wv * Vv, axis=0)),
               (Rop(y, W, V, use_op_rop_implementation=True), np.sum(2 * Wv * Vv, axis=0)),
               (Lop(y, W, u), 2 * Wv * uv[None, :])]

    # the sum over a matrix (a scalar output), with a scalar eval point for Lop
    y = T.sum(T.tanh(W) * U)
    dy = (1 - np.tanh(Wv) ** 2) * Uv
    checks += [(Rop(y, W, V), np.sum(dy * Vv)), (Lop(y, W, s), sv * dy)]

    # Lop with consider_constant: W*x's W is held, only the direct x path counts
    h = W * x[None, :]
    y = T.sum(h * x[None, :], axis=1)
    checks += [(Lop(y, x, u, consider_constant=[h]), Wv.T @ uv * xv)]
    return [x, v, u, W, V, U, s], [xv, vv, uv, Wv, Vv, Uv, sv], checks


def test_rop_and_lop_match_jacobian_products(mode):
    inputs, values, checks = _rop_lop_cases()
    f = function(inputs, [c[0] for c in checks], mode=mode, on_unused_input="ignore")
    for k, (got, (_, want)) in enumerate(zip(f(*values), checks)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg="case %d" % k)


def test_rop_via_lop_leaves_no_placeholder():
    """The double-L_op trick's output-gradient placeholders never reach the result (they would be
    missing inputs of the function), even where an L_op reads their shape."""
    from ffigraph.graph.basic import graph_inputs

    x, v = T.dvector("x"), T.dvector("v")
    results = Rop([T.exp(x), T.sum(x) * T.ones_like(x), x], x, v)
    assert isinstance(results, list)
    assert not [i for i in graph_inputs(results) if i.name == "rop_cotangent"]
    xv, vv = np.array([0.5, -1.0]), np.array([2.0, 3.0])
    got = function([x, v], results, mode=Mode(linker="py"))(xv, vv)
    for value, expected in zip(got, [np.exp(xv) * vv, np.full(2, vv.sum()), vv]):
        np.testing.assert_allclose(value, expected, rtol=1e-12)


def test_rop_and_lop_containers_and_disconnection():
    x, y, v = T.dvector("x"), T.dvector("y"), T.dvector("v")
    assert isinstance(Rop((T.exp(x),), x, v), tuple) and isinstance(Lop(T.exp(x), [x], v), list)
    assert not isinstance(Rop(T.exp(x), x, v), (list, tuple))
    # an output that ignores wrt: raise by default, else zeros / None / a DisconnectedType variable
    with pytest.raises(DisconnectedInputError):
        Rop(T.exp(y), x, v)
    with pytest.raises(DisconnectedInputError):
        Rop(T.exp(y), x, v, use_op_rop_implementation=True)
    with pytest.warns(UserWarning):
        Rop(T.exp(y), x, v, disconnected_outputs="warn", return_disconnected="none")
    assert Rop(T.exp(y), x, v, disconnected_outputs="ignore", return_disconnected="none") is None
    assert isinstance(Rop([T.exp(y)], x, v, disconnected_outputs="ignore",
                          return_disconnected="disconnected")[0].type, DisconnectedType)
    # through disconnected_grad: disconnected too (as PyTensor's DisconnectedGrad.R_op says)
    with pytest.raises(DisconnectedInputError):
        Rop(disconnected_grad(x) * 2, x, v)
    with pytest.raises(DisconnectedInputError):
        Lop(T.exp(y), x, v)
    zero = Rop(T.exp(y), x, v, disconnected_outputs="ignore")
    np.testing.assert_array_equal(zero.eval({y: np.ones(2)}), np.zeros(2))
    with pytest.raises(ValueError):
        Rop(T.exp(x), [x, y], [v])          # one eval point per wrt
    with pytest.raises(ValueError):
        Rop(T.exp(x), x, T.dmatrix("m"))    # of the wrt's dimensions
    with pytest.raises(ValueError):
        Lop([T.exp(x), x], x, [v])          # one eval point per output
    with pytest.raises(ValueError):
        Rop(T.exp(x), x, v, disconnected_outputs="maybe")


# ------------------------------------------------------------------ the gradient-changing identities


@pytest.mark.parametrize("linker", ["py", "c"])
def test_helpers_are_identities_with_their_gradients(linker):
    x = T.dvector("x")
    xv = np.array([0.1, 2.0, -3.0])
    views = [zero_grad(x), disconnected_grad(x), grad_clip(x, -1.0, 1.0), consider_constant(x),
             grad_scale(x, 2.0), undefined_grad(x)]
    direct = T.sum(x ** 2)                       # keeps x connected where the helper's path is not
    grads = [
        grad(T.sum(zero_grad(x) ** 2) + direct, x),                      # zeros through zero_grad
        grad(T.sum(disconnected_grad(x) ** 2) + direct, x),              # nothing through it either
        grad(T.sum(disconnected_grad(x) ** 2), x, disconnected_inputs="ignore"),
        grad(T.sum(zero_grad(x) ** 2), x),                               # zeros, and no error
        grad(T.sum(consider_constant(x) ** 2) + direct, x),
        grad(T.sum(grad_clip(3 * x, -1.0, 1.0) ** 2), x),                # clip(6x) * 3
        grad(T.sum(grad_scale(x, -0.5) ** 2), x),                        # -0.5 * 2x
        T.grad(T.sum(T.exp(consider_constant(x * x)) + x), x),           # the exp term is constant
    ]
    want = [2 * xv, 2 * xv, np.zeros(3), np.zeros(3), 2 * xv, 3 * np.clip(6 * xv, -1, 1), -xv, np.ones(3)]
    f = function([x], views + grads, mode=Mode(linker=linker))
    if linker == "c":
        assert nodes_without_c_code(f.maker.fgraph) == []   # the views run in C, not in Python
    got = f(xv)
    for k, value in enumerate(got[:len(views)]):
        np.testing.assert_array_equal(value, xv, err_msg="view %d" % k)
    for k, (value, expected) in enumerate(zip(got[len(views):], want)):
        np.testing.assert_allclose(value, expected, rtol=1e-12, err_msg="gradient %d" % k)


def test_helper_gradient_errors():
    x = T.dvector("x")
    with pytest.raises(DisconnectedInputError):
        grad(T.sum(disconnected_grad(x) ** 2), x)
    assert isinstance(grad(T.sum(disconnected_grad(x)), x, disconnected_inputs="ignore",
                           return_disconnected="disconnected").type, DisconnectedType)
    with pytest.raises(NullTypeGradError):
        grad(T.sum(undefined_grad(x)), x)
    with pytest.raises(ValueError):
        grad_clip(x, 1.0, -1.0)
    # ops with the same bounds are equal (merge), others are not
    assert GradClip(-1, 1) == GradClip(-1, 1) and GradClip(-1, 1) != GradClip(-2, 1)
    assert ffigraph.Rop is Rop and ffigraph.Lop is Lop


# ------------------------------------------------------------------ jacobian(vectorize) and hessian


def test_jacobian_vectorize_and_hessian_of_a_symbolic_length(mode):
    xs = T.tensor("float64", (3,), name="xs")   # static length: rows unrolled
    x = T.dvector("x")                           # symbolic length: a scan over the rows
    xv = np.array([0.3, -0.2, 0.5])

    def fun(z):
        return T.sin(z) * T.sum(z ** 2)

    J = np.diag(np.cos(xv)) * np.sum(xv ** 2) + np.outer(np.sin(xv), 2 * xv)
    # f(x) = sum(x^3) + (sum x)^2 / 2 + x0 * x1: H = diag(6x) + 1 + the x0 x1 cross terms
    H = np.diag(6 * xv) + np.ones((3, 3))
    H[0, 1] += 1
    H[1, 0] += 1
    outputs = [jacobian(fun(xs), xs), jacobian(fun(xs), xs, vectorize=True),
               jacobian(fun(x), x), jacobian(fun(x), x, vectorize=True),
               hessian(T.sum(x ** 3) + T.sum(x) ** 2 / 2 + x[0] * x[1], x),
               hessian(T.sum(2 * x), x)]            # linear: zeros (the gradient ignores x)
    want = [J, J, J, J, H, np.zeros((3, 3))]
    f = function([xs, x], outputs, mode=mode)
    for k, (got, expected) in enumerate(zip(f(xv, xv), want)):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14, err_msg="output %d" % k)
    with pytest.raises(TypeError):
        jacobian(fun(x), x, vectorize="yes")


def test_hessian_vector_product_pushforward_pullback_and_dense_dot():
    """hessian_vector_product against the Hessian written out by hand; pushforward and pullback
    (PyTensor 3's names of Rop and Lop) against J v and u J of an elementwise function."""
    x, y, p, q = T.dvector("x"), T.dvector("y"), T.dvector("p"), T.dvector("q")
    cost = (x ** 3).sum() * (y ** 2).sum() + (x * y).sum()
    hx, hy = ffigraph.gradient.hessian_vector_product(cost, [x, y], [p, q])
    single = ffigraph.gradient.hessian_vector_product((x ** 4).sum(), x, p)
    f_out = T.exp(x) * y
    push = ffigraph.gradient.pushforward(f_out, [x, y], [p, q])
    pull = ffigraph.gradient.pullback(f_out, [x, y], p)
    f = function([x, y, p, q], [hx, hy, single, push] + list(pull) + [T.dense_dot(x, y)])
    xv, yv, pv, qv = np.array([1.0, -2.0]), np.array([0.5, 3.0]), np.array([0.25, -1.0]), np.array([2.0, 1.0])
    hx_v, hy_v, single_v, push_v, pull_x, pull_y, dot_v = f(xv, yv, pv, qv)
    s2, s3 = (yv ** 2).sum(), (xv ** 3).sum()
    # d2/dx2 = diag(6x) s2, d2/dxdy = outer(3x^2, 2y) + I, d2/dy2 = 2 s3 I
    hxx, hxy, hyy = np.diag(6 * xv * s2), np.outer(3 * xv ** 2, 2 * yv) + np.eye(2), 2 * s3 * np.eye(2)
    np.testing.assert_allclose(hx_v, hxx @ pv + hxy @ qv, rtol=1e-14)
    np.testing.assert_allclose(hy_v, hxy.T @ pv + hyy @ qv, rtol=1e-14)
    np.testing.assert_allclose(single_v, 12 * xv ** 2 * pv, rtol=1e-14)
    np.testing.assert_allclose(push_v, np.exp(xv) * yv * pv + np.exp(xv) * qv, rtol=1e-14)
    np.testing.assert_allclose(pull_x, pv * np.exp(xv) * yv, rtol=1e-14)
    np.testing.assert_allclose(pull_y, pv * np.exp(xv), rtol=1e-14)
    assert dot_v == np.dot(xv, yv)
    with pytest.raises(ValueError, match="wrt has 2 variables but p 1"):
        ffigraph.gradient.hessian_vector_product(cost, [x, y], [p])

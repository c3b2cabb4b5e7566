"""Gradients through scan (backpropagation through time, a backward Scan node), and jacobian /
hessian of expressions whose length is known only at run time (a scan over the rows)."""
import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph.gradient import hessian, jacobian, verify_grad
from ffigraph.graph.basic import io_toposort

MODES = ["py", "cvm"]


def mode(linker):
    return ffigraph.Mode(linker=linker)


def scan_nodes(inputs, outputs):
    return [n for n in io_toposort(inputs, outputs) if isinstance(n.op, ffigraph.scan.Scan)]


def rnn(x, h0, W, U, b, **kwargs):
    h, _ = ffigraph.scan(lambda x_t, h_tm1, W, U, b: T.tanh(T.dot(x_t, W) + T.dot(h_tm1, U) + b),
                         sequences=x, outputs_info=h0, non_sequences=[W, U, b], **kwargs)
    return h


def rnn_point(rng, n=4, n_in=2, n_h=3):
    return [rng.normal(size=(n, n_in)), rng.normal(size=n_h), 0.5 * rng.normal(size=(n_in, n_h)),
            0.5 * rng.normal(size=(n_h, n_h)), rng.normal(size=n_h)]


# ------------------------------------------------------------------ verify_grad through scan


@pytest.mark.finite_differences
@pytest.mark.parametrize("linker", MODES)
def test_sit_sot_rnn(linker):
    verify_grad(rnn, rnn_point(np.random.default_rng(0)), n_tests=1, mode=mode(linker))


@pytest.mark.finite_differences
@pytest.mark.parametrize("linker", MODES)
def test_only_the_last_value_is_used(linker):
    verify_grad(lambda *a: rnn(*a)[-1], rnn_point(np.random.default_rng(1)), n_tests=1, mode=mode(linker))


@pytest.mark.finite_differences
@pytest.mark.parametrize("linker", MODES)
def test_go_backwards(linker):
    verify_grad(lambda *a: rnn(*a, go_backwards=True), rnn_point(np.random.default_rng(2)), n_tests=1,
                mode=mode(linker))


def tutorial_two_taps(X, U, V, W, b, n_steps=5):
    # x(t) = x(t-2).dot(U) + x(t-1).dot(V) + tanh(x(t-1).dot(W) + b)
    res, _ = ffigraph.scan(lambda x_tm2, x_tm1, U, V, W, b: T.dot(x_tm2, U) + T.dot(x_tm1, V)
                           + T.tanh(T.dot(x_tm1, W) + b),
                           n_steps=n_steps, outputs_info=[dict(initial=X, taps=[-2, -1])],
                           non_sequences=[U, V, W, b])
    return res


@pytest.mark.finite_differences
@pytest.mark.parametrize("linker", MODES)
def test_mit_sot_taps(linker):
    rng = np.random.default_rng(3)
    pt = [rng.normal(size=(2, 2)), 0.3 * rng.normal(size=(2, 2)), 0.3 * rng.normal(size=(2, 2)),
          0.5 * rng.normal(size=(2, 2)), rng.normal(size=2)]
    verify_grad(tutorial_two_taps, pt, n_tests=1, mode=mode(linker))


def test_mit_sot_taps_with_a_gap():
    # taps [-3, -1]: the step never reads x(t-2), whose accumulator only passes gradients on
    def fun(X, a):
        res, _ = ffigraph.scan(lambda x3, x1, a: T.sin(x3) * a + 0.5 * x1, n_steps=6,
                               outputs_info=[dict(initial=X, taps=[-3, -1])], non_sequences=a)
        return res
    rng = np.random.default_rng(4)
    verify_grad(fun, [rng.normal(size=(3, 2)), rng.normal(size=2)], n_tests=1, mode=mode("cvm"))


def test_initial_state_longer_than_the_window():
    # scalar rows; the loop reads only the first -min(taps) rows of the initial state
    def fun(X, a):
        res, _ = ffigraph.scan(lambda x2, x1, a: x2 * a + T.tanh(x1), n_steps=3,
                               outputs_info=[dict(initial=X, taps=[-2, -1])], non_sequences=a)
        return res
    rng = np.random.default_rng(5)
    verify_grad(fun, [rng.normal(size=(4,)), rng.normal(size=())], n_tests=1, mode=mode("py"))


@pytest.mark.parametrize("linker", MODES)
def test_sequence_taps(linker):
    def fun(x, w, h0):
        h, _ = ffigraph.scan(lambda xm1, x0, xp1, h_tm1, w: T.tanh(xm1 * w[0] + x0 * w[1] + xp1 * w[2] + h_tm1),
                             sequences=dict(input=x, taps=[-1, 0, 1]), outputs_info=h0, non_sequences=w)
        return h
    rng = np.random.default_rng(6)
    verify_grad(fun, [rng.normal(size=(6, 2)), rng.normal(size=3), rng.normal(size=2)], n_tests=1,
                mode=mode(linker))


@pytest.mark.parametrize("linker", MODES)
def test_several_outputs_with_a_nit_sot(linker):
    # outputs: a mit-sot, a nit-sot read from the sequence and the state, and a sit-sot
    def fun(x, X, s0, w):
        def step(x_t, a_tm2, a_tm1, s_tm1, w):
            a = T.tanh(a_tm2 * w + x_t) + 0.5 * a_tm1
            y = T.sum(a * x_t) * s_tm1
            s = s_tm1 * 0.9 + T.sum(a)
            return a, y, s
        (a, y, s), _ = ffigraph.scan(step, sequences=x, outputs_info=[dict(initial=X, taps=[-2, -1]), None, s0],
                                     non_sequences=w)
        return T.concatenate([a.flatten(), y, s ** 2])
    rng = np.random.default_rng(7)
    verify_grad(fun, [rng.normal(size=(4, 2)), rng.normal(size=(2, 2)), rng.normal(size=()), rng.normal(size=2)],
                n_tests=1, mode=mode(linker))


def test_an_unused_output_gets_no_backward_work():
    # only y is used; the independent recurrence z carries no accumulator
    x, w = T.dvector("x"), T.dscalar("w")

    def step(x_t, y_tm1, z_tm1, w):
        return T.tanh(y_tm1 * w + x_t), z_tm1 * w
    (y, z), _ = ffigraph.scan(step, sequences=x, outputs_info=[T.constant(0.0), T.constant(1.0)], non_sequences=w)
    gx, gw = T.grad(y.sum(), [x, w])
    back = [n for n in scan_nodes([x, w], [gx, gw]) if (n.op.name or "").startswith("grad_of")]
    assert len(back) == 1 and len(back[0].op.info.rec_taps) == 2   # y's accumulator and w's
    verify_grad(lambda x, w: step_sum(x, w, step), [np.array([0.3, -0.2, 0.5]), np.array(0.7)], n_tests=1,
                mode=mode("py"))


def step_sum(x, w, step):
    (y, z), _ = ffigraph.scan(step, sequences=x, outputs_info=[T.constant(0.0), T.constant(1.0)], non_sequences=w)
    return y


def test_int_sequence_gets_zero_gradient():
    # the tutorial's polynomial: an int sequence (arange) and a float one
    coefficients, x = T.dvector("coefficients"), T.dscalar("x")
    components, _ = ffigraph.scan(lambda c, p, x: c * (x ** p), sequences=[coefficients, T.arange(10)],
                                  non_sequences=x)
    gc, gx = T.grad(components.sum(), [coefficients, x])
    f = ffigraph.function([coefficients, x], [gc, gx], mode=mode("py"))
    c = np.array([1.0, 0.0, 2.0])
    got_c, got_x = f(c, 3.0)
    np.testing.assert_allclose(got_c, [1.0, 3.0, 9.0])
    np.testing.assert_allclose(got_x, 0.0 + 2 * 2 * 3.0)
    # gradients that only reach an integer sequence
    s = T.ivector("s")
    y, _ = ffigraph.scan(lambda i: T.cast(i, "float64") * 2.0, sequences=s)
    g = T.grad(y.sum(), s)
    np.testing.assert_array_equal(ffigraph.function([s], g, mode=mode("py"))(np.array([1, 2, 3], dtype="int32")),
                                  np.zeros(3))


def test_float_shared_state_updated_by_the_loop():
    # a shared variable the step updates keeps only its final value: the gradient rebuilds its trace
    acc = ffigraph.shared(np.array([0.5, -0.5]), name="acc")

    def fun(x, w):
        h, upd = ffigraph.scan(lambda x_t, w: (T.tanh(x_t * w + acc), {acc: acc * 0.5 + x_t * w}),
                               sequences=x, non_sequences=w)
        return T.concatenate([h.flatten(), upd[acc]])
    rng = np.random.default_rng(8)
    verify_grad(fun, [rng.normal(size=(3, 2)), rng.normal(size=2)], n_tests=1, mode=mode("cvm"))


@pytest.mark.parametrize("linker", MODES)
def test_random_mask_in_the_step(linker):
    # the tutorial's dropout-like mask: a random state (uint64) carried by the loop, no gradient of its own
    X, W, b = T.dmatrix("X"), T.dmatrix("W"), T.dvector("b")
    trng = T.shared_randomstreams.RandomStreams(1234)
    d = trng.binomial(size=W[1].shape)
    results, updates = ffigraph.scan(lambda v: T.tanh(T.dot(v, W) + b) * d, sequences=X)
    P = T.dmatrix("P")
    gW, gb, gX = T.grad((results * P).sum(), [W, b, X])
    f = ffigraph.function([X, W, b, P], [results, gW, gb, gX], mode=mode(linker))
    rng = np.random.default_rng(9)
    x, w, bv, p = rng.normal(size=(5, 3)), rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=(5, 4))
    res, got_W, got_b, got_X = f(x, w, bv, p)
    th = np.tanh(x.dot(w) + bv)
    mask = (res != 0).astype(float)
    np.testing.assert_allclose(res, th * mask, rtol=1e-12)
    da = p * mask * (1 - th ** 2)
    np.testing.assert_allclose(got_W, x.T.dot(da), rtol=1e-10)
    np.testing.assert_allclose(got_b, da.sum(0), rtol=1e-10)
    np.testing.assert_allclose(got_X, da.dot(w.T), rtol=1e-10)


def test_until_is_not_differentiable():
    x = T.dscalar("x")
    out, _ = ffigraph.scan(lambda h: (h * 2, ffigraph.scan.until(h > 10)), outputs_info=x, n_steps=20)
    with pytest.raises(NotImplementedError, match="until"):
        T.grad(out[-1], x)


def test_second_derivative_through_scan():
    # the gradient is a scan, so it has a gradient: d2/dw2 of sum_t w^t (t = 1..3) by a recurrence
    w = T.dscalar("w")
    h, _ = ffigraph.scan(lambda h_tm1, w: h_tm1 * w, outputs_info=T.constant(1.0), non_sequences=w, n_steps=3)
    g = T.grad(h.sum(), w)
    g2 = T.grad(g, w)
    f = ffigraph.function([w], [g, g2], mode=mode("py"))
    got, got2 = f(1.5)
    np.testing.assert_allclose(got, 1 + 2 * 1.5 + 3 * 1.5 ** 2, rtol=1e-12)
    np.testing.assert_allclose(got2, 2 + 6 * 1.5, rtol=1e-12)


# ------------------------------------------------------------------ truncation and zero steps


def numpy_truncated_bptt(x, h0, W, U, b, P, steps):
    n = x.shape[0]
    hs = [h0]
    for t in range(n):
        hs.append(np.tanh(x[t].dot(W) + hs[-1].dot(U) + b))
    gx, gW, gU, gb = np.zeros_like(x), np.zeros_like(W), np.zeros_like(U), np.zeros_like(b)
    carry = np.zeros_like(h0)
    for t in range(n - 1, max(n - steps, 0) - 1, -1):
        da = (P[t] + carry) * (1 - hs[t + 1] ** 2)
        gx[t] = da.dot(W.T)
        gW += np.outer(x[t], da)
        gU += np.outer(hs[t], da)
        gb += da
        carry = da.dot(U.T)
    gh0 = carry if steps >= n else np.zeros_like(h0)
    return [gx, gh0, gW, gU, gb]


@pytest.mark.parametrize("linker", MODES)
def test_truncate_gradient(linker):
    syms = [T.dmatrix("x"), T.dvector("h0"), T.dmatrix("W"), T.dmatrix("U"), T.dvector("b")]
    P = T.dmatrix("P")
    h = rnn(*syms, truncate_gradient=3)
    f = ffigraph.function(syms + [P], T.grad((h * P).sum(), syms), mode=mode(linker))
    rng = np.random.default_rng(10)
    for n in (6, 3, 2):
        pt = rnn_point(rng, n=n)
        p = rng.normal(size=(n, 3))
        for got, want in zip(f(*pt, p), numpy_truncated_bptt(*pt, p, 3)):
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("linker", MODES)
def test_zero_steps(linker):
    x, h0, W, U, b = syms = [T.dmatrix("x"), T.dvector("h0"), T.dmatrix("W"), T.dmatrix("U"), T.dvector("b")]
    n = T.iscalar("n")
    h = rnn(x[:n], h0, W, U, b)
    ys, _ = ffigraph.scan(lambda x_t, W: T.dot(x_t, W), sequences=x[:n], non_sequences=W)   # a nit-sot
    acc, _ = ffigraph.scan(lambda h_tm1, W: T.tanh(T.dot(h_tm1, W)), outputs_info=h0, non_sequences=W, n_steps=n)
    cost = (h ** 2).sum() + ys.sum() + (h0 ** 2).sum() + acc.sum()
    f = ffigraph.function(syms + [n], T.grad(cost, syms), mode=mode(linker))
    rng = np.random.default_rng(11)
    pt = rnn_point(rng, n=3, n_in=3)
    got = f(*pt, 0)
    want = [np.zeros((3, 3)), 2 * pt[1], np.zeros((3, 3)), np.zeros((3, 3)), np.zeros(3)]
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w)
    # and on an empty sequence
    got = f(np.zeros((0, 3)), *pt[1:], 0)
    assert got[0].shape == (0, 3)
    np.testing.assert_allclose(got[1], 2 * pt[1])


# ------------------------------------------------------------------ jacobian and hessian of non-static lengths


@pytest.mark.parametrize("linker", MODES)
def test_jacobian_of_a_non_static_vector(linker):
    v, A = T.dvector("v"), T.dmatrix("A")
    y = T.tanh(T.dot(v, A))
    J = jacobian(y, v)
    assert scan_nodes([v, A], [J])
    J_tutorial, _ = ffigraph.scan(lambda i, y, v: T.grad(y[i], v), sequences=T.arange(y.shape[0]),
                                  non_sequences=[y, v])
    JA = jacobian(y, [v, A])[1]
    f = ffigraph.function([v, A], [J, J_tutorial, JA], mode=mode(linker))
    rng = np.random.default_rng(12)
    vv, Av = rng.normal(size=3), rng.normal(size=(3, 4))
    got, got_tutorial, got_A = f(vv, Av)
    want = (Av * (1 - np.tanh(vv.dot(Av)) ** 2)).T
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(got_tutorial, want, rtol=1e-12)
    want_A = np.zeros((4, 3, 4))
    for i in range(4):
        want_A[i, :, i] = vv * (1 - np.tanh(vv.dot(Av)[i]) ** 2)
    np.testing.assert_allclose(got_A, want_A, rtol=1e-12)
    # no rows: the result keeps the shape (0, len(v))
    assert f(vv, np.zeros((3, 0)))[0].shape == (0, 3)


@pytest.mark.parametrize("linker", MODES)
def test_hessian_of_a_non_static_vector(linker):
    x, A = T.dvector("x"), T.dmatrix("A")
    cost = 0.5 * T.dot(x, T.dot(A, x)) + T.sum(T.exp(x))
    H = hessian(cost, x)
    f = ffigraph.function([x, A], H, mode=mode(linker))
    rng = np.random.default_rng(13)
    xv, Av = rng.normal(size=4), rng.normal(size=(4, 4))
    np.testing.assert_allclose(f(xv, Av), 0.5 * (Av + Av.T) + np.diag(np.exp(xv)), rtol=1e-12)


# ------------------------------------------------------------------ sequence taps as Theano reads them


def _taps_grad_graph():
    # A: go_backwards, taps [-2, 0, 1] and an output of taps [-2, -1]; B: taps all positive;
    # C: taps all negative, backwards, n_steps = k. Tap k at step t reads x[p(t) + k], p(t) as in
    # test_scan_numpy.py's rule (forward p = t - min(0, min taps), backwards p = len - 1 - max(0, max taps) - t).
    x, h0, k = T.dvector("x"), T.dvector("h0"), T.lscalar("k")
    g1, g2, g3 = T.dvector("g1"), T.dvector("g2"), T.dvector("g3")
    a, _ = ffigraph.scan(lambda xm2, x0, xp1, h2, h1: 0.5 * h1 - 0.25 * h2 + xm2 * xp1 + 3.0 * x0,
                         sequences=dict(input=x, taps=[-2, 0, 1]), outputs_info=dict(initial=h0, taps=[-2, -1]),
                         go_backwards=True)
    b, _ = ffigraph.scan(lambda p1, p3: T.sin(p1) * p3, sequences=dict(input=x, taps=[1, 3]))
    c, _ = ffigraph.scan(lambda p3, p1: p3 * p3 - p1, sequences=dict(input=x, taps=[-3, -1]), n_steps=k,
                         go_backwards=True)
    cost = (g1 * a).sum() + (g2 * b).sum() + (g3 * c).sum()
    return [x, h0, k, g1, g2, g3], [a, b, c] + T.grad(cost, [x, h0])


def _taps_grad_numpy(x, h0, k, g1, g2, g3):
    """(a, b, c, d cost / d x, d cost / d h0), by hand."""
    n = len(x)
    dx, dh0 = np.zeros(n), np.zeros(2)
    # A: p = n - 2 - t, n - 3 steps; h[t] = 0.5 h[t-1] - 0.25 h[t-2] + x[p-2] x[p+1] + 3 x[p]
    rows = [n - 2 - t for t in range(n - 3)]
    hist = {-2: h0[0], -1: h0[1]}
    for t, p in enumerate(rows):
        hist[t] = 0.5 * hist[t - 1] - 0.25 * hist[t - 2] + x[p - 2] * x[p + 1] + 3.0 * x[p]
    a = np.array([hist[t] for t in range(len(rows))])
    dh = np.zeros(len(rows) + 2)    # d cost / d h[t], with two zeros past the end
    for t in reversed(range(len(rows))):
        dh[t] = g1[t] + 0.5 * dh[t + 1] - 0.25 * dh[t + 2]
        p = rows[t]
        dx[p - 2] += dh[t] * x[p + 1]
        dx[p + 1] += dh[t] * x[p - 2]
        dx[p] += 3.0 * dh[t]
    dh0[1] = 0.5 * dh[0] - 0.25 * dh[1]    # h0[1] is h[-1], h0[0] is h[-2]
    dh0[0] = -0.25 * dh[0]
    # B: p = t, n - 3 steps; b[t] = sin(x[t+1]) x[t+3]
    b = np.array([np.sin(x[t + 1]) * x[t + 3] for t in range(n - 3)])
    for t in range(n - 3):
        dx[t + 1] += g2[t] * np.cos(x[t + 1]) * x[t + 3]
        dx[t + 3] += g2[t] * np.sin(x[t + 1])
    # C: p = n - 1 - t, k steps; c[t] = x[p-3]^2 - x[p-1]
    c = np.array([x[n - 4 - t] ** 2 - x[n - 2 - t] for t in range(k)])
    for t in range(k):
        dx[n - 4 - t] += 2.0 * g3[t] * x[n - 4 - t]
        dx[n - 2 - t] -= g3[t]
    return [a, b, c, dx, dh0]


@pytest.mark.parametrize("linker", ["py", "c"])
def test_sequence_taps_gradient_matches_numpy(linker):
    inputs, outputs = _taps_grad_graph()
    f = ffigraph.function(inputs, outputs, mode=mode(linker))
    rng = np.random.default_rng(4402)
    for n, k in [(8, 3), (4, 1)]:     # several steps; one step each
        x, h0 = rng.normal(size=n), rng.normal(size=2)
        values = [x, h0, k, rng.normal(size=n - 3), rng.normal(size=n - 3), rng.normal(size=k)]
        got = f(x, h0, np.int64(k), *values[3:])
        for o, (g, w) in enumerate(zip(got, _taps_grad_numpy(*values))):
            assert g.shape == w.shape, (o, n, g.shape, w.shape)
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg="output %d, n %d" % (o, n))

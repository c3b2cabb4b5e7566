"""Every example of Theano's loop tutorial, written as a Theano user writes it, against numpy.

The eleven examples go into ONE function per linker (one compile each), whose outputs are
checked one by one; the counting and random examples also check their updates.
"""
import numpy as np
import pytest

import ffigraph as theano
import ffigraph.tensor as T

LINKERS = ("py", "c", "cvm")


def _examples():
    """[(name, inputs, outputs, check(values, outputs))], the tutorial's code with its test values."""
    floatX = theano.config.floatX
    examples = []

    # 1. tanh(x(t).dot(W) + b) elementwise
    X = T.matrix("X")
    W = T.matrix("W")
    b_sym = T.vector("b_sym")
    results, updates = theano.scan(lambda v: T.tanh(T.dot(v, W) + b_sym), sequences=X)
    x = np.eye(2, dtype=floatX)
    w = np.ones((2, 2), dtype=floatX)
    b = np.ones((2), dtype=floatX)
    b[1] = 2

    def check1(x=x, w=w, b=b):
        return np.tanh(x.dot(w) + b)
    examples.append(("elementwise", [X, W, b_sym], [x, w, b], [results], updates, lambda: [check1()]))

    # 2. x(t) = tanh(x(t - 1).dot(W) + y(t).dot(U) + p(T - t).dot(V))
    X = T.vector("X")
    W = T.matrix("W")
    b_sym = T.vector("b_sym")
    U = T.matrix("U")
    Y = T.matrix("Y")
    V = T.matrix("V")
    P = T.matrix("P")
    results, updates = theano.scan(lambda y, p, x_tm1: T.tanh(T.dot(x_tm1, W) + T.dot(y, U) + T.dot(p, V)),
                                   sequences=[Y, P[::-1]], outputs_info=[X])
    x = np.zeros((2), dtype=floatX)
    x[1] = 1
    w = np.ones((2, 2), dtype=floatX)
    y = np.ones((5, 2), dtype=floatX)
    y[0, :] = -3
    u = np.ones((2, 2), dtype=floatX)
    p = np.ones((5, 2), dtype=floatX)
    p[0, :] = 3
    v = np.ones((2, 2), dtype=floatX)

    def check2(x=x, w=w, y=y, u=u, p=p, v=v):
        x_res = np.zeros((5, 2), dtype=floatX)
        x_res[0] = np.tanh(x.dot(w) + y[0].dot(u) + p[4].dot(v))
        for i in range(1, 5):
            x_res[i] = np.tanh(x_res[i - 1].dot(w) + y[i].dot(u) + p[4 - i].dot(v))
        return x_res
    examples.append(("recurrence", [X, W, Y, U, P, V], [x, w, y, u, p, v], [results], updates, lambda: [check2()]))

    # 3. and 4. norms of the rows and of the columns of X
    X = T.matrix("X")
    rows, updates_rows = theano.scan(lambda x_i: T.sqrt((x_i ** 2).sum()), sequences=[X])
    cols, updates_cols = theano.scan(lambda x_i: T.sqrt((x_i ** 2).sum()), sequences=[X.T])
    x = np.diag(np.arange(1, 6, dtype=floatX), 1)
    examples.append(("norms", [X], [x], [rows, cols], dict(updates_rows, **updates_cols),
                     lambda x=x: [np.sqrt((x ** 2).sum(1)), np.sqrt((x ** 2).sum(0))]))

    # 5. the trace of X
    X = T.matrix("X")
    results, updates = theano.scan(lambda i, j, t_f: T.cast(X[i, j] + t_f, floatX),
                                   sequences=[T.arange(X.shape[0]), T.arange(X.shape[1])],
                                   outputs_info=np.asarray(0., dtype=floatX))
    result = results[-1]
    x = np.eye(5, dtype=floatX)
    x[0] = np.arange(5, dtype=floatX)
    examples.append(("trace", [X], [x], [result], updates, lambda x=x: [np.diagonal(x).sum()]))

    # 6. x(t) = x(t - 2).dot(U) + x(t - 1).dot(V) + tanh(x(t - 1).dot(W) + b): two taps
    X = T.matrix("X")
    W = T.matrix("W")
    b_sym = T.vector("b_sym")
    U = T.matrix("U")
    V = T.matrix("V")
    n_sym = T.iscalar("n_sym")
    results, updates = theano.scan(
        lambda x_tm2, x_tm1: T.dot(x_tm2, U) + T.dot(x_tm1, V) + T.tanh(T.dot(x_tm1, W) + b_sym),
        n_steps=n_sym, outputs_info=[dict(initial=X, taps=[-2, -1])])
    x = np.zeros((2, 2), dtype=floatX)
    x[1, 1] = 1
    w = 0.5 * np.ones((2, 2), dtype=floatX)
    u = 0.5 * (np.ones((2, 2), dtype=floatX) - np.eye(2, dtype=floatX))
    v = 0.5 * np.ones((2, 2), dtype=floatX)
    n = 10
    b = np.ones((2), dtype=floatX)

    def check6(x=x, u=u, v=v, w=w, b=b, n=n):
        x_res = np.zeros((n, 2), dtype=floatX)
        x_res[0] = x[0].dot(u) + x[1].dot(v) + np.tanh(x[1].dot(w) + b)
        x_res[1] = x[1].dot(u) + x_res[0].dot(v) + np.tanh(x_res[0].dot(w) + b)
        for i in range(2, n):
            x_res[i] = x_res[i - 2].dot(u) + x_res[i - 1].dot(v) + np.tanh(x_res[i - 1].dot(w) + b)
        return x_res
    examples.append(("two_taps", [X, U, V, W, b_sym, n_sym], [x, u, v, w, b, n], [results], updates,
                     lambda: [check6()]))

    # 7. the Jacobian of tanh(v.dot(A)) with respect to v
    v = T.vector()
    A = T.matrix()
    y = T.tanh(T.dot(v, A))
    results, updates = theano.scan(lambda i: T.grad(y[i], v), sequences=[T.arange(y.shape[0])])
    x = np.eye(5, dtype=floatX)[0]
    w = np.eye(5, 3, dtype=floatX)
    w[2] = np.ones((3), dtype=floatX)
    examples.append(("jacobian", [A, v], [w, x], [results], updates,
                     lambda x=x, w=w: [((1 - np.tanh(x.dot(w)) ** 2) * w).T]))

    # 10. A**k by repeated multiplication
    k = T.iscalar("k")
    A = T.vector("A")
    result, updates = theano.scan(fn=lambda prior_result, A: prior_result * A, outputs_info=T.ones_like(A),
                                  non_sequences=A, n_steps=k)
    final_result = result[-1]
    a = np.arange(10, dtype=floatX)
    examples.append(("power", [A, k], [a, 4], [final_result], updates, lambda a=a: [a ** 4]))

    # 11. a polynomial from its coefficients
    coefficients = T.vector("coefficients")
    x = T.scalar("x")
    max_coefficients_supported = 10000
    components, updates = theano.scan(
        fn=lambda coefficient, power, free_variable: coefficient * (free_variable ** power),
        outputs_info=None, sequences=[coefficients, T.arange(max_coefficients_supported)], non_sequences=x)
    polynomial = components.sum()
    coeffs = np.asarray([1, 0, 2], dtype=floatX)
    examples.append(("polynomial", [coefficients, x], [coeffs, 3.0], [polynomial], updates,
                     lambda: [1.0 + 0 * 3 + 2 * 9.0]))
    return examples


def _compile(linker):
    examples = _examples()
    # 8. counting the iterations in a shared variable through updates
    k = theano.shared(0)
    n_sym = T.iscalar("n_sym")
    _, count_updates = theano.scan(lambda: {k: (k + 1)}, n_steps=n_sym)
    # 9. tanh(v.dot(W) + b) * d, d drawn from a binomial stream at every step
    X = T.matrix("X")
    W = T.matrix("W")
    b_sym = T.vector("b_sym")
    trng = T.shared_randomstreams.RandomStreams(1234)
    d = trng.binomial(size=W[1].shape)
    noisy, noisy_updates = theano.scan(lambda v: T.tanh(T.dot(v, W) + b_sym) * d, sequences=X)
    inputs, values, outputs, updates = [], [], [], dict(count_updates)
    updates.update(noisy_updates)
    for _, ins, vals, outs, upd, _ in examples:
        inputs += ins
        values += vals
        outputs += outs
        updates.update(upd)
    f = theano.function(inputs + [n_sym, X, W, b_sym], outputs + [noisy], updates=updates,
                        allow_input_downcast=True, mode=theano.Mode(linker=linker))
    return f, examples, values, k


@pytest.mark.parametrize("linker", LINKERS)
def test_loop_tutorial(linker):
    f, examples, values, counter = _compile(linker)
    floatX = theano.config.floatX
    x = np.random.RandomState(3).uniform(-1, 1, (200, 8)).astype(floatX)
    w = np.random.RandomState(4).uniform(-1, 1, (8, 8)).astype(floatX)
    b = np.random.RandomState(5).uniform(-1, 1, 8).astype(floatX)
    counter.set_value(0)
    first = f(*(values + [5, x, w, b]))
    second = f(*(values + [7, x, w, b]))
    got = iter(first)
    for name, _, _, outs, _, expected in examples:
        for want in expected():
            have = next(got)
            tol = 1e-5 if np.asarray(have).dtype == np.float32 else 1e-12   # the result's dtype, not a fixed 1e-6
            np.testing.assert_allclose(have, want, rtol=tol, atol=tol, err_msg=name)
    # counting: 5 then 7 more steps
    assert counter.get_value() == 12
    # the binomial example: each entry is 0 or tanh(x.w + b), drawn anew at every step and call
    clean = np.tanh(x.dot(w) + b)
    for noisy in (first[-1], second[-1]):
        kept = noisy != 0
        np.testing.assert_allclose(noisy[kept], clean[kept], rtol=1e-5 if noisy.dtype == np.float32 else 1e-12)
        assert 0.3 < kept.mean() < 0.7
        assert len({tuple(row) for row in kept}) > 50   # different masks at different steps
    assert (first[-1] != second[-1]).any()              # and a different stream on the next call


def test_random_step_same_numbers_in_python_and_c():
    """The per-step draws come from the shared Philox state: py and C give the same numbers."""
    results = []
    for linker in ("py", "cvm"):
        trng = T.shared_randomstreams.RandomStreams(99)
        X = T.matrix("X")
        d = trng.normal(size=X[0].shape)
        out, upd = theano.scan(lambda v: v * d, sequences=X)
        f = theano.function([X], out, updates=upd, mode=theano.Mode(linker=linker))
        x = np.ones((6, 3))
        results.append((f(x), f(x)))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])
    assert not np.array_equal(results[0][0], results[0][1])

"""An Elman RNN's training step (scan forward, backpropagation through time, SGD updates),
exported: a C host with no Python runs 100 steps and ends with the parameters of the same 100
steps run from Python, to 1e-12."""
import shutil

import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from export_helpers import steps_from_c


def build_rnn_step(n_in, n_hidden, n_out, linker, seed=0):
    rng = np.random.RandomState(seed)
    W = ffigraph.shared(rng.uniform(-0.5, 0.5, (n_in, n_hidden)), name="W")
    U = ffigraph.shared(rng.uniform(-0.5, 0.5, (n_hidden, n_hidden)), name="U")
    b = ffigraph.shared(np.zeros(n_hidden), name="b")
    V = ffigraph.shared(rng.uniform(-0.5, 0.5, (n_hidden, n_out)), name="V")
    x = T.dmatrix("x")
    target = T.dmatrix("target")
    h0 = T.zeros((n_hidden,), dtype="float64")
    h, _ = ffigraph.scan(lambda x_t, h_tm1: T.tanh(T.dot(x_t, W) + T.dot(h_tm1, U) + b),
                         sequences=x, outputs_info=h0)
    y = T.dot(h, V)
    cost = ((y - target) ** 2).sum() / x.shape[0]
    params = [W, U, b, V]
    grads = T.grad(cost, params)
    train = ffigraph.function([x, target], cost, updates=[(p, p - 0.05 * g) for p, g in zip(params, grads)],
                              mode=ffigraph.Mode(linker=linker))
    return train, params


def numpy_step(params, x, target, lr=0.05):
    """The same step by hand: forward, BPTT, SGD."""
    W, U, b, V = params
    n = x.shape[0]
    hs = np.zeros((n + 1, U.shape[0]))
    for t in range(n):
        hs[t + 1] = np.tanh(x[t].dot(W) + hs[t].dot(U) + b)
    y = hs[1:].dot(V)
    cost = ((y - target) ** 2).sum() / n
    gy = 2 * (y - target) / n
    gV = hs[1:].T.dot(gy)
    gW, gU, gb = np.zeros_like(W), np.zeros_like(U), np.zeros_like(b)
    carry = np.zeros(U.shape[0])
    for t in range(n - 1, -1, -1):
        gh = gy[t].dot(V.T) + carry
        ga = gh * (1 - hs[t + 1] ** 2)
        gW += np.outer(x[t], ga)
        gU += np.outer(hs[t], ga)
        gb += ga
        carry = ga.dot(U.T)
    new = [W - lr * gW, U - lr * gU, b - lr * gb, V - lr * gV]
    return cost, new


def test_training_step_matches_numpy_bptt():
    rng = np.random.RandomState(1)
    x, target = rng.uniform(-1, 1, (7, 3)), rng.uniform(-1, 1, (7, 2))
    values = None
    for linker in ("py", "cvm"):
        train, params = build_rnn_step(3, 5, 2, linker)
        start = [p.get_value() for p in params]
        cost = train(x, target)
        want_cost, want = numpy_step(start, x, target)
        assert abs(cost - want_cost) < 1e-12
        got = [p.get_value() for p in params]
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=0, atol=1e-12)
        if values is not None:
            for g, v in zip(got, values):
                np.testing.assert_allclose(g, v, rtol=0, atol=1e-13)
        values = got


@pytest.mark.skipif(any(shutil.which(t) is None for t in ("make", "gcc")),
                    reason="exports are built with make and gcc; one is missing")
def test_exported_rnn_training_runs_100_steps_from_c(tmp_path):
    rng = np.random.RandomState(2)
    x, target = rng.uniform(-1, 1, (20, 4)), rng.uniform(-1, 1, (20, 3))
    train, params = build_rnn_step(4, 8, 3, "c")
    saved = steps_from_c(train, tmp_path, [x, target], 100)
    before = [p.get_value() for p in params]
    for _ in range(100):
        train(x, target)
    for p, start in zip(params, before):
        got = np.load(str(saved / ("%s.npy" % p.name)))
        want = p.get_value()
        assert np.abs(want - start).max() > 1e-3, p.name    # it trained
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12, err_msg=p.name)

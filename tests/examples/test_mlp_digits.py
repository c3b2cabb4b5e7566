"""The digits classifier (examples/mlp_digits.py): the MLP's first training steps are the same
step written in numpy, softmax regression and the dropout MLP reach their held-out accuracy on
scikit-learn's digits, and the MLP's training step, exported, runs 100 steps from a C host with no
Python and ends with the parameters (and the random stream's state) of the same 100 steps run from
Python: the dropout masks come from the same Philox stream.

The accuracy test needs scikit-learn (the data ship inside it), which has no PyPy build; the
step and export tests use random data and run on both interpreters.
"""
import shutil

import numpy as np
import pytest

import mlp_digits as md
from export_helpers import steps_from_c
from ffigraph.tensor.random import philox

QUICK_EPOCHS = 20   # the full example runs 40; 20 already clear 95 % held out


def numpy_mlp_step(params, x, y, mask):
    """The example's training step by hand: ``(cost, new params)`` for dropout ``mask`` (0/1)."""
    w1, b1, w2, b2 = params
    n, rows = x.shape[0], np.arange(x.shape[0])
    a = x @ w1 + b1
    h = np.maximum(a, 0.0)
    kept = h * mask / md.KEEP                       # inverted dropout
    z = kept @ w2 + b2
    e = np.exp(z - z.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    cost = -np.mean(np.log(p[rows, y])) + md.L2 * ((w1 ** 2).sum() + (w2 ** 2).sum())
    dz = p.copy()
    dz[rows, y] -= 1.0                                # d(mean nll)/dz, times n
    dz /= n
    dh = (dz @ w2.T) * mask / md.KEEP * (a > 0)
    grads = (x.T @ dh + 2 * md.L2 * w1, dh.sum(axis=0), kept.T @ dz + 2 * md.L2 * w2, dz.sum(axis=0))
    return cost, [param - md.LEARNING_RATE * grad for param, grad in zip(params, grads)]


def test_mlp_first_steps_match_a_numpy_step():
    # The mask of each call is the stream's draw for that call: binomial(1, KEEP) of the hidden
    # layer's shape from the state [key, counter] before the call, by the streams' numpy reference
    # (its bits are checked against the C in tests/tensor/test_random*.py). The rest of the step
    # (relu, dropout scaling, softmax, nll by advanced indexing, L2, gradients, updates) is numpy's.
    # (the export test's model: one library for both)
    rng = np.random.default_rng(3)
    x = rng.random((32, 64))
    y = rng.integers(0, 10, 32).astype(np.int64)
    train, _, params, srng = md.build_mlp(64, n_hidden=40, linker="c")
    (state, _), = srng.updates()
    want = start = [p.get_value() for p in params]
    for step in range(3):
        key, call = (int(v) for v in state.get_value())
        mask = philox.binomial(key, call, 32 * 40, 1, md.KEEP).reshape(32, 40)
        assert 0 < mask.sum() < mask.size
        want_cost, want = numpy_mlp_step(want, x, y, mask)
        cost = float(train(x, y))
        assert abs(cost - want_cost) <= 1e-10 * abs(want_cost), (step, cost, want_cost)
        for p, w in zip(params, want):
            np.testing.assert_allclose(p.get_value(), w, rtol=1e-10, atol=1e-13,
                                       err_msg="%s after step %d" % (p.name, step + 1))
    for p, before in zip(params, start):
        assert np.abs(p.get_value() - before).max() > 1e-4, p.name     # every parameter moved


def test_digits_held_out_accuracy():
    pytest.importorskip("sklearn", reason="scikit-learn (which ships the digits data) is not installed here; "
                                          "it has no PyPy build")
    results = md.run("both", epochs=QUICK_EPOCHS, verbose=False)
    train_acc, test_acc, costs = results["mlp"]
    assert test_acc >= 0.95, results["mlp"][:2]
    assert costs[-1] < costs[0] / 4     # it trained
    assert results["softmax"][1] >= 0.90, results["softmax"][:2]


@pytest.mark.skipif(any(shutil.which(t) is None for t in ("make", "gcc")),
                    reason="exports are built with make and gcc; one is missing")
def test_exported_mlp_step_runs_100_steps_from_c(tmp_path):
    rng = np.random.default_rng(7)
    x = rng.random((32, 64))
    y = rng.integers(0, 10, 32).astype(np.int64)
    train, _, params, srng = md.build_mlp(64, n_hidden=40, linker="c")
    saved = steps_from_c(train, tmp_path, [x, y], 100)
    before = [p.get_value() for p in params]
    for _ in range(100):
        train(x, y)
    for p, start in zip(params, before):
        got = np.load(str(saved / ("%s.npy" % p.name)))
        want = p.get_value()
        assert np.abs(want - start).max() > 1e-3, p.name    # it trained
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12, err_msg=p.name)
    (state, _), = srng.updates()        # the dropout stream: 100 calls later, in both
    np.testing.assert_array_equal(np.load(str(saved / ("%s.npy" % state.name))), state.get_value())
    assert state.get_value()[1] == 100

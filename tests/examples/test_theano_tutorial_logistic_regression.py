"""Theano's tutorial "A Real Example: Logistic Regression" (examples/theano_tutorial_logistic_regression.py),
as its users write it: the sigmoid written out as ``1 / (1 + T.exp(-T.dot(x, w) - b))``.

With ``w`` drawn from randn, the logits reach |z| ~ 80 on the first step, where the written
sigmoid rounds to exactly 0 or 1: without the stable forms, ``T.grad`` gives 0 * inf = NaN and
the weights are all NaN after one step. Here it trains: the training accuracy reaches 0.9 within
STEPS steps (measured on this data for seeds 0-5 and 1234: first at step 168 to 202, 0.99 or more
by step 300, 1.0 by 400), and w, b and the
cross-entropy stay finite, under the py, c and cvm linkers and with floatX=float32. The float64
runs also equal the same gradient descent written in numpy with the stable formulas.

One compile per run (the tutorial's ``train`` and its small ``predict``); the data are the
tutorial's, drawn from numpy's global generator, seeded here.
"""
import numpy as np
import pytest

import ffigraph
import theano_tutorial_logistic_regression as tutorial

SEED = 1234
STEPS = 300                # accuracy >= 0.9 needs ~200 steps on this data; 300 leaves a margin
N, FEATS = 400, 784


def run(linker, floatX="float64", steps=STEPS):
    np.random.seed(SEED)
    with ffigraph.config.change_flags(linker=linker, floatX=floatX):
        if floatX == "float64":
            return tutorial.tutorial(training_steps=steps)
        return tutorial.tutorial_floatX(training_steps=steps)


def numpy_training(steps):
    """The tutorial's data and gradient descent in numpy, with the stable formulas:
    d xent / dz = sigmoid(z) - y, so  gw = x.T (p - y) / N + 0.02 w,  gb = mean(p - y)."""
    np.random.seed(SEED)
    x = np.random.randn(N, FEATS)
    y = np.random.randint(size=N, low=0, high=2)
    w = np.random.randn(FEATS)
    b = 0.0
    z0 = x.dot(w)
    for _ in range(steps):
        z = x.dot(w) + b
        p = np.exp(-np.logaddexp(0.0, -z))
        gw = x.T.dot(p - y) / N + 0.02 * w
        gb = np.mean(p - y)
        w, b = w - 0.1 * gw, b - 0.1 * gb
    return w, b, x, z0


@pytest.mark.parametrize("linker,floatX", [("py", "float64"), ("c", "float64"), ("cvm", "float64"),
                                           ("py", "float32"), ("cvm", "float32")])
def test_tutorial_trains(linker, floatX):
    result = run(linker, floatX)
    assert result["train"].maker.mode.linker.name == linker   # config.linker reached the tutorial's function
    x, y = result["D"]
    w, b, err = result["w"], np.asarray(result["b"]), result["err"]
    assert w.dtype == np.dtype(floatX) and b.dtype == np.dtype(floatX) and err.dtype == np.dtype(floatX)
    assert w.shape == (FEATS,) and err.shape == (N,)
    assert not np.isnan(w).any() and not np.isnan(b) and not np.isnan(err).any()
    assert np.isfinite(w).all() and np.isfinite(b) and np.isfinite(err).all()
    accuracy = np.mean(result["prediction"] == y)
    assert accuracy >= 0.9, "training accuracy %.4f after %d steps" % (accuracy, STEPS)
    assert np.mean(result["pred"] == y) >= 0.9   # train's own prediction (before its last update)
    if floatX == "float64":
        w_ref, b_ref, x_ref, z0 = numpy_training(STEPS)
        np.testing.assert_array_equal(x, x_ref)   # the same data, so z0 is the tutorial's first logits
        assert np.abs(z0).max() > 40, "the first logits saturate (the case that gave NaN)"
        np.testing.assert_allclose(w, w_ref, rtol=1e-9, atol=1e-9 * np.abs(w_ref).max())
        np.testing.assert_allclose(b, b_ref, rtol=1e-9, atol=1e-12)


def test_command_line(capsys):
    """main() runs the tutorial for --steps steps and prints the tutorial's results and the accuracy."""
    tutorial.main(["--steps", "3", "--linker", "py", "--seed", "0"])
    out = capsys.readouterr().out
    assert "Final model:" in out and "prediction on D:" in out
    assert "nan" not in out.lower()
    assert "training accuracy: " in out

"""The Gaussian-process example (examples/gaussian_process.py): its negative log marginal likelihood
and gradient match scipy's Cholesky solution (1e-8) and a numpy-only one (1e-10), gradient descent
runs the same steps as numpy's, and the fitted prediction function, exported, runs from C with no
Python and prints Python's numbers. A C host also gets FFG_ERR_LINALG for a matrix that is not
positive definite."""
import functools

import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
import gaussian_process as gp
from export_helpers import no_python_env, parse_printed, run
from ffigraph.tensor.linalg import cholesky

FIT_STEPS = 40


@functools.lru_cache(maxsize=None)
def compiled():
    x, y = gp.make_data()
    return (x, y) + gp.build(x, y, "cvm")


def numpy_descent(steps):
    """``[(params, nlml)]`` of ``steps`` gradient-descent steps written with the numpy reference."""
    x, y = gp.make_data()
    params = np.array(gp.START)
    out = []
    for _ in range(steps):
        value, grad = gp.reference_value_and_grad(params, x, y)
        out.append((params.copy(), value))
        params = params - gp.LEARNING_RATE * grad
    return params, out


def test_value_and_gradient_match_scipy_and_numpy():
    x, y, step, value_and_grad, predict, params = compiled()
    for p in params:
        p.set_value(np.float64(dict(zip(("log_ell", "log_sf2", "log_sn2"), gp.START))[p.name]))
    for trial in range(2):
        current = np.array([p.get_value() for p in params])
        value, grad = value_and_grad()
        ref_value, ref_grad = gp.reference_value_and_grad(current, x, y)
        np.testing.assert_allclose(value, ref_value, rtol=1e-10)
        np.testing.assert_allclose(grad, ref_grad, rtol=1e-10, atol=1e-10)
        try:
            import scipy.linalg  # noqa: F401  (present: compare with scipy too)
        except ImportError:
            pass   # (PyPy: no scipy; the numpy reference above is the check)
        else:
            sp_value, sp_grad = gp.scipy_value_and_grad(current, x, y)
            np.testing.assert_allclose(value, sp_value, rtol=1e-8)
            np.testing.assert_allclose(grad, sp_grad, rtol=1e-8, atol=1e-8)
        for p, v in zip(params, [0.3, -0.2, -2.0]):   # another point for the second trial
            p.set_value(np.float64(v))


def test_descent_follows_numpy_and_fits():
    x, y, step, value_and_grad, predict, params = compiled()
    for p, v in zip(params, gp.START):
        p.set_value(np.float64(v))
    costs = [float(step()) for _ in range(FIT_STEPS)]
    final, ref = numpy_descent(FIT_STEPS)
    np.testing.assert_allclose(costs, [c for _, c in ref], rtol=1e-9)
    np.testing.assert_allclose([p.get_value() for p in params], final, rtol=1e-9)
    assert costs[-1] < costs[0] - 50
    xs = np.array([0.5, 1.5])
    mean, var = predict(xs)
    assert np.all(var > 0) and np.all(np.abs(mean - (np.sin(3 * xs) + 0.5 * xs)) < 0.1)


def test_prediction_exported_runs_from_c(tmp_path):
    x, y, step, value_and_grad, predict, params = compiled()
    xs = np.linspace(-2.5, 2.5, 7)
    bundle = predict.export(str(tmp_path / "gp"), example_inputs=[xs])
    env = no_python_env(tmp_path)
    run(["make", "-s"], bundle.directory, env)
    printed = parse_printed(run(["./example"], bundle.directory, env).stdout)
    mean, var = predict(xs)
    np.testing.assert_allclose(printed[("output", "mean")], mean, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(printed[("output", "var")], var, rtol=1e-12, atol=1e-14)


def test_c_host_gets_linalg_error(tmp_path):
    a = T.dmatrix("a")
    f = ffigraph.function([a], cholesky(a), name="chol")
    bundle = f.export(str(tmp_path / "chol"), example_inputs=[np.diag([1.0, -2.0, 3.0])])
    env = no_python_env(tmp_path)
    run(["make", "-s"], bundle.directory, env)
    out = run(["./example"], bundle.directory, env, check=False)
    assert out.returncode != 0
    assert "error 8" in out.stderr and "not positive definite" in out.stderr, out.stderr
    with pytest.raises(np.linalg.LinAlgError):
        f(np.diag([1.0, -2.0, 3.0]))

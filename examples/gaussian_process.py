"""A Gaussian process regression fitted by gradient descent on its exact log marginal likelihood.

The model: ``y = f(x) + noise``, ``f ~ GP(0, k)`` with the squared-exponential kernel
``k(x, x') = sf2 * exp(-(x - x')^2 / (2 ell^2))`` and Gaussian noise of variance ``sn2``. Its
negative log marginal likelihood, computed through the Cholesky factor ``L`` of
``K = k(X, X) + sn2 I``::

    alpha = L^-T (L^-1 y)
    nlml  = y . alpha / 2 + sum(log diag L) + n log(2 pi) / 2

is minimised over the log hyper-parameters ``(log ell, log sf2, log sn2)`` by gradient descent,
``ffigraph.grad`` differentiating through ``cholesky`` and ``solve_triangular``. The data: 60
noisy samples of ``sin(3x) + x/2`` on [-2, 2], generated from a fixed seed.

The fitted model's prediction function (posterior mean and variance at new points, the training
data and hyper-parameters held as shared variables) is what ``--export DIR`` writes as a C
library folder that a C program runs with no Python.

Run:  python examples/gaussian_process.py [--steps N] [--linker {py,c,cvm}] [--export DIR] [--quiet]
"""
import argparse
import math

import numpy as np

import ffigraph
import ffigraph.tensor as T
from ffigraph.compile.mode import Mode
from ffigraph.tensor.linalg import cholesky, solve_triangular

N = 60                  # training points
SEED = 7
LEARNING_RATE = 0.01
START = (0.0, 0.0, -1.0)   # log ell, log sf2, log sn2 before fitting
REPORT_EVERY = 50


def make_data(n=N, seed=SEED):
    """``(x, y)``: ``n`` points on [-2, 2] and noisy values of ``sin(3x) + x/2`` (noise sd 0.1)."""
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(-2.0, 2.0, n))
    y = np.sin(3 * x) + 0.5 * x + 0.1 * rng.standard_normal(n)
    return x, y


def kernel(a, b, log_ell, log_sf2):
    """The squared-exponential kernel matrix between the points ``a`` and ``b`` (symbolic vectors)."""
    diff = a[:, None] - b[None, :]
    return T.exp(log_sf2) * T.exp(-0.5 * diff ** 2 / T.exp(2 * log_ell))


def nlml_graph(x, y, log_ell, log_sf2, log_sn2):
    """The negative log marginal likelihood (symbolic), and the Cholesky factor and ``alpha``."""
    n = x.shape[0]
    K = kernel(x, x, log_ell, log_sf2) + T.exp(log_sn2) * T.eye(n)
    L = cholesky(K)
    alpha = solve_triangular(L.T, solve_triangular(L, y, lower=True), lower=False)
    nlml = 0.5 * T.dot(y, alpha) + T.log(T.diagonal(L)).sum() + 0.5 * T.cast(n, "float64") * math.log(2 * math.pi)
    return nlml, L, alpha


def build(x_data, y_data, linker="cvm"):
    """Compile the model on the data: ``(step, value_and_grad, predict, params)``.

    ``step()`` returns the nlml and takes one gradient-descent step on the shared log
    hyper-parameters ``params = (log_ell, log_sf2, log_sn2)``; ``value_and_grad()`` returns the
    nlml and its gradient (a 3-vector) at the current parameters; ``predict(xs)`` returns the
    posterior mean and variance of f at the points ``xs``."""
    params = [ffigraph.shared(np.float64(v), name=n) for v, n in zip(START, ("log_ell", "log_sf2", "log_sn2"))]
    x = ffigraph.shared(np.asarray(x_data, np.float64), name="x_train")
    y = ffigraph.shared(np.asarray(y_data, np.float64), name="y_train")
    nlml, L, alpha = nlml_graph(x, y, *params)
    grads = ffigraph.grad(nlml, params)
    mode = Mode(linker=linker)
    step = ffigraph.function([], nlml, updates=[(p, p - LEARNING_RATE * g) for p, g in zip(params, grads)],
                             mode=mode, name="gp_step")
    value_and_grad = ffigraph.function([], [nlml, T.stack(grads)], mode=mode, name="gp_value_and_grad")
    xs = T.dvector("xs")
    ks = kernel(x, xs, params[0], params[1])                     # (n, m)
    v = solve_triangular(L, ks, lower=True)
    mean = T.dot(ks.T, alpha)
    var = T.exp(params[1]) - (v ** 2).sum(axis=0)
    mean.name, var.name = "mean", "var"   # (the names the exported library's description gives)
    predict = ffigraph.function([xs], [mean, var], mode=mode, name="gp_predict")
    return step, value_and_grad, predict, params


def reference_value_and_grad(log_params, x, y):
    """The nlml and its gradient in numpy alone (no scipy): ``0.5 tr((K^-1 - a a^T) dK/dtheta)``."""
    log_ell, log_sf2, log_sn2 = log_params
    d2 = (x[:, None] - x[None, :]) ** 2
    kf = math.exp(log_sf2) * np.exp(-0.5 * d2 / math.exp(2 * log_ell))
    K = kf + math.exp(log_sn2) * np.eye(len(x))
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    value = 0.5 * y @ alpha + np.log(np.diag(L)).sum() + 0.5 * len(x) * math.log(2 * math.pi)
    inner = np.linalg.inv(K) - np.outer(alpha, alpha)
    dK = [kf * d2 / math.exp(2 * log_ell), kf, math.exp(log_sn2) * np.eye(len(x))]
    return value, np.array([0.5 * np.sum(inner * d) for d in dK])


def scipy_value_and_grad(log_params, x, y):
    """The same with scipy's Cholesky solver (``cho_factor``/``cho_solve``), the check the issue asks for."""
    from scipy.linalg import cho_factor, cho_solve

    log_ell, log_sf2, log_sn2 = log_params
    d2 = (x[:, None] - x[None, :]) ** 2
    kf = math.exp(log_sf2) * np.exp(-0.5 * d2 / math.exp(2 * log_ell))
    K = kf + math.exp(log_sn2) * np.eye(len(x))
    factor = cho_factor(K, lower=True)
    alpha = cho_solve(factor, y)
    value = 0.5 * y @ alpha + np.log(np.diag(factor[0])).sum() + 0.5 * len(x) * math.log(2 * math.pi)
    inner = cho_solve(factor, np.eye(len(x))) - np.outer(alpha, alpha)
    dK = [kf * d2 / math.exp(2 * log_ell), kf, math.exp(log_sn2) * np.eye(len(x))]
    return value, np.array([0.5 * np.sum(inner * d) for d in dK])


def fit(steps=300, linker="cvm", verbose=False):
    """Fit on ``make_data()``: ``(params, costs, predict, value_and_grad)`` after ``steps`` steps."""
    x, y = make_data()
    step, value_and_grad, predict, params = build(x, y, linker)
    costs = []
    for k in range(steps):
        costs.append(float(step()))
        if verbose and (k % REPORT_EVERY == 0 or k == steps - 1):
            print("step %4d  nlml %.6f" % (k, costs[-1]))
    return np.array([p.get_value() for p in params]), costs, predict, value_and_grad


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="gradient-descent steps (default 300)")
    parser.add_argument("--linker", choices=("py", "c", "cvm"), default="cvm")
    parser.add_argument("--export", metavar="DIR", help="write the prediction function as a C library folder")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    params, costs, predict, value_and_grad = fit(args.steps, args.linker, verbose=not args.quiet)
    x, y = make_data()
    value, grad = value_and_grad()
    ref_value, ref_grad = reference_value_and_grad(params, x, y)
    print("fitted: ell %.4f, sf2 %.4f, sn2 %.5f; nlml %.6f (from %.6f)"
          % (math.exp(params[0]), math.exp(params[1]), math.exp(params[2]), value, costs[0]))
    print("against numpy: |nlml diff| %.2e, max |grad diff| %.2e" % (abs(value - ref_value), np.abs(grad - ref_grad).max()))
    xs = np.linspace(-2.5, 2.5, 6)
    mean, var = predict(xs)
    for p, m, s in zip(xs, mean, var):
        print("f(%+.2f) = %+.4f +- %.4f   (truth %+.4f)" % (p, m, 2 * math.sqrt(max(s, 0.0)), math.sin(3 * p) + 0.5 * p))
    if args.export:
        bundle = predict.export(args.export, example_inputs=[xs])
        print("exported the prediction function to %s (make && ./example)" % bundle.directory)
    return params, costs


if __name__ == "__main__":
    main()

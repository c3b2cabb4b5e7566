"""``ffigraph.tensor.nnet.bn`` (Theano 1.0's batch normalization) against numpy.

The references below are written here: each statistic is taken per lane, the input's kept axes
moved to the front and the normalized ones flattened into rows (``np.moveaxis`` + ``reshape``),
with explicit sums divided by the count. Each test compiles ONE function for all its cases, under
the Python linker (the ops' ``perform``) and the strict C linker (which refuses a node without C
code); the default mode (rewrites) once.

Decisions checked here: with one element per statistic (``m = 1``) the running variance is NaN
(``m / (m - 1)`` is inf, times a variance of 0), as Theano's compiled graph gives; the gradients
that reach the ``mean`` and ``invstd`` outputs (and the running averages) are taken into account
(Theano dropped them).
"""
import os
import sys

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import config, function, grad
from ffigraph.compile.mode import Mode
from ffigraph.tensor.nnet import bn

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from test_grad_ops import verify_grads  # noqa: E402  (tests/tensor, beside this folder)


@pytest.fixture(params=["py", "c"])
def mode(request):
    return Mode(linker=request.param, optimizer=None)


# ------------------------------------------------------------------ numpy references


def _axes(axes, ndim):
    if axes == "per-activation":
        return (0,)
    if axes == "spatial":
        return (0,) + tuple(range(2, ndim))
    return tuple(sorted(axes))


def _lanes(x, axes):
    """x as (lanes, m): the kept axes first (C order), the normalized ones flattened."""
    kept = [a for a in range(x.ndim) if a not in axes]
    moved = np.moveaxis(np.asarray(x, np.float64), kept + list(axes), range(x.ndim))
    n_lanes = int(np.prod([x.shape[a] for a in kept]))
    return moved.reshape(n_lanes, int(np.prod([x.shape[a] for a in axes]))), kept


def _param_shape(x, axes, full):
    kept = [a for a in range(x.ndim) if a not in axes]
    return tuple(1 if a in axes else x.shape[a] for a in range(x.ndim)) if full else tuple(x.shape[a] for a in kept)


def _per_lane(p):
    return np.asarray(p, np.float64).reshape(-1, 1)


def _from_lanes(rows, x, axes):
    """The inverse of _lanes for an x-shaped result."""
    kept = [a for a in range(x.ndim) if a not in axes]
    order = kept + list(axes)
    moved = rows.reshape([x.shape[a] for a in order])
    return np.moveaxis(moved, range(x.ndim), order)


def ref_train(x, gamma, beta, axes, eps, f=None, rm=None, rv=None):
    lanes, _ = _lanes(x, axes)
    m = lanes.shape[1]
    with np.errstate(all="ignore"):   # an empty lane: 0 / 0
        mean = lanes.sum(axis=1, keepdims=True) / m
        var = ((lanes - mean) ** 2).sum(axis=1, keepdims=True) / m
        invstd = 1.0 / np.sqrt(var + eps)
    out = (lanes - mean) * invstd * _per_lane(gamma) + _per_lane(beta)
    shape = np.shape(gamma)
    res = [_from_lanes(out, x, axes), mean.reshape(shape), invstd.reshape(shape)]
    if rm is not None:
        with np.errstate(all="ignore"):
            unbiased = var * m / (m - 1.0) if m > 1 else np.full_like(var, np.nan)
        res += [(_per_lane(rm) * (1 - f) + mean * f).reshape(shape), (_per_lane(rv) * (1 - f) + unbiased * f).reshape(shape)]
    return res


def ref_test(x, gamma, beta, mean, var, axes, eps):
    lanes, _ = _lanes(x, axes)
    out = (lanes - _per_lane(mean)) / np.sqrt(_per_lane(var) + eps) * _per_lane(gamma) + _per_lane(beta)
    return _from_lanes(out, x, axes)


def ref_train_grad(x, dy, gamma, axes, eps):
    """The textbook form: dx = gamma * invstd / m * (m dy - sum(dy) - xhat sum(dy xhat))."""
    lanes, _ = _lanes(x, axes)
    g, _ = _lanes(dy, axes)
    m = lanes.shape[1]
    mean = lanes.sum(axis=1, keepdims=True) / m
    invstd = 1.0 / np.sqrt(((lanes - mean) ** 2).sum(axis=1, keepdims=True) / m + eps)
    xhat = (lanes - mean) * invstd
    dx = _per_lane(gamma) * invstd / m * (m * g - g.sum(axis=1, keepdims=True)
                                          - xhat * (g * xhat).sum(axis=1, keepdims=True))
    shape = np.shape(gamma)
    return [_from_lanes(dx, x, axes), (g * xhat).sum(axis=1).reshape(shape), g.sum(axis=1).reshape(shape)]


RNG = np.random.default_rng(11)


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-5) if np.dtype(dtype) == np.float32 else dict(rtol=1e-11, atol=1e-12)


def _sym(value, name):
    return T.tensor(value.dtype, (None,) * value.ndim, name=name)


# (label, x, axes, full layout?, with running averages?)
def _train_cases():
    x2 = RNG.normal(2.0, 3.0, (5, 7))
    x4 = RNG.normal(-1.0, 0.5, (3, 4, 5, 6))
    x5 = RNG.normal(size=(2, 3, 2, 3, 4))
    wide = RNG.normal(size=(3, 70)).astype(np.float32)          # two blocks of lanes along the last axis
    return [
        ("2-d per-activation", x2, "per-activation", False, True),
        ("4-d spatial full", x4, "spatial", True, True),
        ("4-d spatial reduced, reversed strides", x4[::-1, :, ::-1, :], "spatial", False, True),
        ("5-d axes (0, 1, 3)", x5, (0, 1, 3), False, True),
        ("5-d spatial full float32", x5.astype(np.float32), "spatial", True, False),
        ("3-d axes [1] transposed", RNG.normal(size=(6, 4, 3)).transpose(2, 1, 0), [1], True, True),
        ("per-activation wide float32", wide, "per-activation", False, True),
        ("per-activation wide, column view", np.asfortranarray(wide)[:, ::-1], "per-activation", True, True),
        ("1-d: every axis", RNG.normal(size=9), "per-activation", False, True),
        ("batch 1", RNG.normal(size=(1, 3)), "per-activation", True, True),
        ("empty batch (NaN statistics)", np.zeros((0, 3)), "per-activation", False, True),
        ("no lanes", np.zeros((4, 0)), "per-activation", False, True),
        ("large mean", 1e4 + RNG.normal(size=(8, 3, 2, 2)), "spatial", False, True),
    ]


def test_train_values(mode):
    inputs, values, outs, wants = [], [], [], []
    for k, (label, x, axes, full, running) in enumerate(_train_cases()):
        ax = _axes(axes, x.ndim)
        pshape = _param_shape(x, ax, full)
        params = [RNG.uniform(0.5, 1.5, pshape), RNG.normal(size=pshape)]
        if running:
            params += [RNG.normal(size=pshape), RNG.uniform(0.5, 2.0, pshape)]
        params = [p.astype(x.dtype) for p in params]
        syms = [_sym(v, "%s_%d" % (n, k)) for v, n in zip([x] + params, ["x", "g", "b", "rm", "rv"])]
        eps, f = 1e-3, 0.3
        if running:
            res = bn.batch_normalization_train(syms[0], syms[1], syms[2], axes, eps, f, syms[3], syms[4])
            want = ref_train(x, *params[:2], ax, eps, f, *params[2:])
        else:
            res = bn.batch_normalization_train(syms[0], syms[1], syms[2], axes, eps)
            want = ref_train(x, *params, ax, eps)
        assert len(res) == len(want)
        inputs += syms
        values += [x] + params
        outs += list(res)
        wants += [(label, w, x.dtype) for w in want]
    # the unbiased factor by hand: 2 lanes of 4 elements, variances 1.25 and 5, m / (m - 1) = 4 / 3
    hand = np.array([[0.0, 1.0], [1.0, 3.0], [2.0, 5.0], [3.0, 7.0]])
    hs = T.dmatrix("hand")
    res = bn.batch_normalization_train(hs, np.ones(2), np.zeros(2), running_mean=np.zeros(2),
                                       running_var=np.zeros(2), running_average_factor=1.0)
    # the gradients, one AbstractBatchNormTrainGrad node each, against the textbook form
    x4 = RNG.normal(size=(4, 3, 2, 5))[:, ::-1]
    dy4, gamma = RNG.normal(size=x4.shape), RNG.uniform(0.5, 1.5, 3)
    xs, dys, gs = T.dtensor4("x"), T.dtensor4("dy"), T.dvector("g")
    xf, dyf = T.ftensor4("xf"), T.ftensor4("dyf")
    out = bn.batch_normalization_train(xs, gs, np.zeros(3), "spatial", 1e-3)[0]
    outf = bn.batch_normalization_train(xf, np.ones((1, 3, 2, 5), np.float32), np.zeros((1, 3, 2, 5), np.float32),
                                        "per-activation", 1e-3)[0]
    grads = grad((out * dys).sum(), [xs, gs]) + grad((outf * dyf).sum(), [xf])
    f = function(inputs + [hs, xs, dys, gs, xf, dyf], outs + list(res[3:]) + grads, mode=mode)
    names = [type(n.op).__name__ for n in f.maker.fgraph.toposort()]
    assert names.count("AbstractBatchNormTrainGrad") == 2, names
    got = f(*(values + [hand, x4, dy4, gamma, x4.astype(np.float32), dy4.astype(np.float32)]))
    got, got_grads = got[:-3], got[-3:]
    want = ref_train_grad(x4, dy4, gamma, (0, 2, 3), 1e-3)
    np.testing.assert_allclose(got_grads[0], want[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got_grads[1], want[1], rtol=1e-10, atol=1e-12)
    want32 = ref_train_grad(x4.astype(np.float32), dy4.astype(np.float32), np.ones((1, 3, 2, 5)), (0,), 1e-3)
    np.testing.assert_allclose(got_grads[2], want32[0], rtol=1e-4, atol=1e-4)
    new_rm, new_rv = got[-2:]
    np.testing.assert_allclose(new_rm, [1.5, 4.0], rtol=1e-15)
    np.testing.assert_allclose(new_rv, [1.25 * 4 / 3, 5.0 * 4 / 3], rtol=1e-15)
    got = got[:-2]
    labels = [w[0] for w in wants]
    batch1_var = got[len(labels) - 1 - labels[::-1].index("batch 1")]
    assert batch1_var.shape == (1, 3) and np.all(np.isnan(batch1_var)), \
        "m = 1: the running variance is NaN (m / (m - 1) = inf times a variance of 0)"
    for (label, want, dtype), g in zip(wants, got):
        assert g.dtype == dtype, label
        assert g.shape == want.shape, (label, g.shape, want.shape)
        # (x - mean) with |x| ~ 1e4 is exact to ~1e-12 only, in any order of operations
        tol = dict(rtol=1e-9, atol=1e-9) if label == "large mean" else _tol(dtype)
        np.testing.assert_allclose(g, want, err_msg=label, **tol)


def test_test_values(mode):
    inputs, values, outs, wants = [], [], [], []
    cases = [("4-d spatial reduced", RNG.normal(size=(3, 4, 5, 2)), "spatial", False),
             ("2-d per-activation full float32", RNG.normal(size=(6, 70)).astype(np.float32), "per-activation", True),
             ("3-d axes (0, 2) strided", RNG.normal(size=(5, 3, 8))[:, ::-1, ::2], (0, 2), True)]
    for k, (label, x, axes, full) in enumerate(cases):
        ax = _axes(axes, x.ndim)
        pshape = _param_shape(x, ax, full)
        params = [RNG.uniform(0.5, 1.5, pshape), RNG.normal(size=pshape), RNG.normal(size=pshape),
                  RNG.uniform(0.5, 2.0, pshape)]
        params = [p.astype(x.dtype) for p in params]
        syms = [_sym(v, "%s_%d" % (n, k)) for v, n in zip([x] + params, ["x", "g", "b", "m", "v"])]
        outs.append(bn.batch_normalization_test(*syms, axes=axes, epsilon=1e-4))
        wants.append((label, ref_test(x, *params, ax, 1e-4), x.dtype))
        inputs += syms
        values += [x] + params
    # the old elementwise form, both modes
    x, g, b, mu, sd = (RNG.normal(size=(4, 3)), RNG.normal(size=3), RNG.normal(size=3), RNG.normal(size=3),
                       RNG.uniform(0.5, 2, 3))
    syms = [_sym(v, n) for v, n in zip([x, g, b, mu, sd], ["ox", "og", "ob", "omu", "osd"])]
    for m in ("low_mem", "high_mem"):
        outs.append(bn.batch_normalization(*syms, mode=m))
        wants.append((m, (x - mu) / sd * g + b, x.dtype))
    inputs += syms
    values += [x, g, b, mu, sd]
    got = function(inputs, outs, mode=mode)(*values)
    for (label, want, dtype), got_k in zip(wants, got):
        assert got_k.dtype == dtype, label
        np.testing.assert_allclose(got_k, want, err_msg=label, **_tol(dtype))
    with pytest.raises(ValueError, match="low_mem"):
        bn.batch_normalization(*syms, mode="fast")


X4 = RNG.normal(size=(2, 2, 1, 3))
G2, B2 = RNG.uniform(0.5, 1.5, 2), RNG.normal(size=2)
X2 = RNG.normal(size=(4, 3))
G3, B3 = RNG.uniform(0.5, 1.5, (1, 3)), RNG.normal(size=(1, 3))


def _spatial(i, a, g, b):
    return bn.batch_normalization_train(a, g, b, "spatial", 1e-3)[i]


@pytest.mark.finite_differences
def test_verify_grad(mode):
    verify_grads([
        ("train spatial, out", lambda a, g, b: _spatial(0, a, g, b), [X4, G2, B2]),
        # the gradients reaching mean and invstd count (Theano dropped them)
        ("train per-activation full, out + mean * invstd", lambda a, g, b: sum(
            bn.batch_normalization_train(a, g, b)[k] for k in range(3)) + bn.batch_normalization_train(a, g, b)[1]
         * bn.batch_normalization_train(a, g, b)[2], [X2, G3, B3]),
        ("train, running averages", lambda a, rm, rv: sum(bn.batch_normalization_train(
            a, G3, B3, running_mean=rm, running_var=rv, running_average_factor=0.3)[3:]), [X2, G3 - 1.0, G3]),
        ("test, all inputs", lambda a, g, b, m, v: bn.batch_normalization_test(a, g, b, m, v, "spatial"),
         [X4, G2, B2, B2 * 0.1, G2]),
    ], mode)


@pytest.mark.finite_differences
def test_second_derivatives():
    """The gradient ops' own gradients (their formulas as graphs, differentiated): values only, so
    under the Python linker (the C of every op in these graphs is checked above)."""
    w = RNG.normal(size=X4.shape)
    verify_grads([
        ("train", lambda a: grad((_spatial(0, a, G2, B2) * w).sum() ** 2, a), [X4]),
        ("train, through mean and invstd", lambda a, g: grad((_spatial(1, a, g, B2) * _spatial(2, a, g, B2)).sum()
                                                             + (_spatial(0, a, g, B2) ** 3).sum(), [a, g])[0],
         [X4, G2]),
        ("test", lambda a, v: grad((bn.batch_normalization_test(a, G3, B3, B3, v) ** 3).sum(), a) * v, [X2, G3]),
    ], Mode(linker="py", optimizer=None), n_tests=1)


def test_default_mode_and_threads():
    """Under the rewrites, with the units cut over 3 threads (a unit is computed whole by one thread:
    the same arithmetic as one thread's)."""
    x = RNG.normal(size=(16, 8, 6, 6))
    xs, gs, bs = T.dtensor4("x"), T.dvector("g"), T.dvector("b")
    xp = T.dmatrix("xp")
    out, mean, invstd = bn.batch_normalization_train(xs, gs, bs, "spatial")
    outp = bn.batch_normalization_train(xp, np.ones(288), np.zeros(288))[0]
    dy = RNG.normal(size=x.shape)
    outs = [out, mean, invstd, outp] + grad((out * dy).sum() + (outp * dy.reshape(16, 288)).sum(), [xs, xp])
    g, b = RNG.uniform(0.5, 1.5, 8), RNG.normal(size=8)
    with config.change_flags(threads=3, threads_min_size=100):
        got = function([xs, gs, bs, xp], outs)(x, g, b, x.reshape(16, 288))
    want = ref_train(x, g, b, (0, 2, 3), 1e-4)
    want += [ref_train(x.reshape(16, 288), np.ones(288), np.zeros(288), (0,), 1e-4)[0]]
    want += [ref_train_grad(x, dy, g, (0, 2, 3), 1e-4)[0],
             ref_train_grad(x.reshape(16, 288), dy.reshape(16, 288), np.ones(288), (0,), 1e-4)[0]]
    for k, (got_k, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(got_k, w, rtol=1e-10, atol=1e-11, err_msg=str(k))


def test_errors(mode):
    x = T.dmatrix("x")
    g = T.dvector("g")
    with pytest.raises(ValueError, match="epsilon must be at least 1e-5"):
        bn.batch_normalization_train(x, g, g, epsilon=1e-6)
    with pytest.raises(ValueError, match="epsilon must be at least 1e-5"):
        bn.batch_normalization_test(x, g, g, g, g, epsilon=0)
    with pytest.raises(ValueError, match="both be given"):
        bn.batch_normalization_train(x, g, g, running_mean=g)
    with pytest.raises(ValueError, match="beta has 2"):
        bn.batch_normalization_train(x, g, T.dmatrix())
    with pytest.raises(ValueError, match="axes should be less than ndim"):
        bn.batch_normalization_train(x, g, g, axes=(2,))
    with pytest.raises(ValueError, match="invalid axes"):
        bn.batch_normalization_train(x, g, g, axes="channels")
    with pytest.raises(ValueError, match="at least one normalization axis"):
        bn.batch_normalization_test(x, x, x, x, x, axes=())
    with pytest.raises(ValueError, match="length 1 on the normalized axis 0"):
        bn.AbstractBatchNormTrain((0,))(x, T.dmatrix(shape=(2, 3)), T.dmatrix(), 1e-4)
    # wrong parameter shapes at run time, then the function works again
    # wrong shapes at run time (the parameters, the gradient op's dy), then the function works again
    xs, gs4, dys = T.dtensor4("x"), T.dtensor4("g4"), T.dtensor4("dy")
    res = bn.batch_normalization_train(xs, gs4, gs4, "spatial")
    gop = bn.AbstractBatchNormTrainGrad((0, 2, 3))(xs, dys, gs4, res[1], res[2])
    f = function([xs, gs4, dys], list(res) + [bn.batch_normalization_test(xs, gs4, gs4, gs4, gs4 ** 2, "spatial"),
                                              gop[0]], mode=mode)
    xv = RNG.normal(size=(2, 3, 2, 2))
    ok = np.ones((1, 3, 1, 1))
    with pytest.raises(ValueError, match=r"scale has shape \(1, 2, 1, 1\), but \(1, 3, 1, 1\) is needed"):
        f(xv, np.ones((1, 2, 1, 1)), xv)
    with pytest.raises(ValueError, match=r"scale has shape \(2, 3, 1, 1\)"):
        f(xv, np.ones((2, 3, 1, 1)), xv)
    with pytest.raises(ValueError, match=r"dy has shape \(2, 3, 2, 1\), but \(2, 3, 2, 2\) is needed"):
        f(xv, ok, xv[..., :1])
    got = f(xv, ok, xv)
    np.testing.assert_allclose(got[0], ref_train(xv, ok, ok, (0, 2, 3), 1e-4)[0], rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(got[-1], ref_train_grad(xv, xv, ok, (0, 2, 3), 1e-4)[0], rtol=1e-10, atol=1e-12)

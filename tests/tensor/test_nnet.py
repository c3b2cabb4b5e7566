"""``ffigraph.tensor.special`` (softmax, log_softmax, logsumexp) and ``ffigraph.tensor.nnet``
(Theano's activations and cross-entropies, the fused softmax cross-entropy) against numpy.

The references below follow ``scipy.special`` (softmax, log_softmax, logsumexp), special values
included; ``test_references_are_scipys`` checks them against scipy where it is installed (not on
PyPy). Each test compiles ONE function returning all its cases: under the Python linker (each
op's ``perform``) and the C linker (which refuses a node without C code), once under DebugMode
(perform and C compared node by node), and under the default mode for the rewrites.
"""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import DebugMode, function, grad
from ffigraph.compile.mode import Mode
from ffigraph.tensor import nnet, special
from helpers import op_names
from test_grad_ops import verify_grads


@pytest.fixture(params=["py", "c"])
def mode(request):
    return Mode(linker=request.param, optimizer=None)


# ------------------------------------------------------------------ numpy references (scipy's rules)


def _axes(x, axis):
    if axis is None:
        return tuple(range(x.ndim))
    return tuple(a % x.ndim for a in ((axis,) if np.isscalar(axis) else axis))


def ref_softmax(x, axis=None):
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return x.copy()
    with np.errstate(all="ignore"):
        e = np.exp(x - np.amax(x, axis=_axes(x, axis), keepdims=True))
        return e / np.sum(e, axis=_axes(x, axis), keepdims=True)


def ref_log_softmax(x, axis=None):
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return x.copy()
    with np.errstate(all="ignore"):
        m = np.amax(x, axis=_axes(x, axis), keepdims=True)
        t = x - np.where(np.isfinite(m), m, 0)
        return t - np.log(np.sum(np.exp(t), axis=_axes(x, axis), keepdims=True))


def ref_logsumexp(x, axis=None, keepdims=False):
    x = np.asarray(x, dtype=np.float64)
    axes = _axes(x, axis)
    if any(x.shape[a] == 0 for a in axes):
        out = np.full([1 if a in axes else s for a, s in enumerate(x.shape)], -np.inf)
    else:
        with np.errstate(all="ignore"):
            m = np.amax(x, axis=axes, keepdims=True)
            m = np.where(np.isfinite(m), m, 0)
            out = np.log(np.sum(np.exp(x - m), axis=axes, keepdims=True)) + m
    return out if keepdims else out.reshape([s for a, s in enumerate(x.shape) if a not in axes])


RNG = np.random.default_rng(7)
CUBE = RNG.normal(size=(3, 4, 5)) * 3
SPECIAL_ROWS = np.array([[np.inf, 1.0, 2.0], [-np.inf, -np.inf, -np.inf], [np.nan, 1.0, 2.0],
                         [-np.inf, 0.0, 1.0], [np.inf, np.inf, 1.0], [np.inf, -np.inf, 0.0], [0.5, -0.5, 2.0]])
BIG = np.array([[1e4, -1e4, 0.0, 5.0], [-1e4, 1e4, 3.0, 2.0], [-1e4, -1e4, -1e4, -1e4], [0.0, 1.0, 2.0, 3.0]])
BIG_LABELS = np.array([1, 1, 2, 3], dtype=np.int32)


def test_references_are_scipys():
    sp = pytest.importorskip("scipy.special", reason="scipy is installed for CPython only (not on PyPy)")
    with np.errstate(all="ignore"):
        for x in (CUBE, CUBE[::-1, :, ::-2]):
            for axis in (None, 0, 1, 2, -1):
                np.testing.assert_allclose(ref_softmax(x, axis), sp.softmax(x, axis=axis), rtol=1e-13)
                np.testing.assert_allclose(ref_log_softmax(x, axis), sp.log_softmax(x, axis=axis), rtol=1e-13)
                np.testing.assert_allclose(ref_logsumexp(x, axis), sp.logsumexp(x, axis=axis), rtol=1e-13)
            np.testing.assert_allclose(ref_logsumexp(x, (0, 2), True), sp.logsumexp(x, axis=(0, 2), keepdims=True))
        for x in (SPECIAL_ROWS, BIG):
            np.testing.assert_array_equal(ref_softmax(x, 1), sp.softmax(x, axis=1))
            np.testing.assert_array_equal(ref_log_softmax(x, 1), sp.log_softmax(x, axis=1))
            np.testing.assert_array_equal(ref_logsumexp(x, 1), sp.logsumexp(x, axis=1))
        for f, g in ((ref_softmax, sp.softmax), (ref_log_softmax, sp.log_softmax), (ref_logsumexp, sp.logsumexp)):
            assert f(np.float64(2.5)) == g(np.float64(2.5))
        np.testing.assert_array_equal(ref_logsumexp(np.zeros((3, 0)), 1), sp.logsumexp(np.zeros((3, 0)), axis=1))


# ------------------------------------------------------------------ values


def _close(got, want, dtype, label):
    got = np.asarray(got)
    assert got.dtype == np.dtype(dtype), (label, got.dtype, dtype)
    assert got.shape == np.shape(want), (label, got.shape, np.shape(want))
    tol = 2e-6 if np.dtype(dtype) == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=label)


def _value_cases():
    """(label, output, expected, dtype) and the inputs with their values."""
    x3 = T.dtensor3("x3")          # given a negatively strided value
    f2 = T.fmatrix("f2")
    d0 = T.dscalar("d0")
    e30 = T.dmatrix("e30")          # shape (3, 0)
    e04 = T.dmatrix("e04")          # shape (0, 4)
    sr = T.dmatrix("sr")            # rows of special values
    big = T.dmatrix("big")
    im = T.imatrix("im")
    bm = T.tensor("int8", (None, None), name="bm")
    vals = {x3: CUBE[::-1, :, ::-2], f2: CUBE[0].astype(np.float32), d0: np.float64(2.5),
            e30: np.zeros((3, 0)), e04: np.zeros((0, 4)), sr: SPECIAL_ROWS, big: BIG,
            im: np.array([[1, 2, 3], [-4, 0, 9]], dtype=np.int32), bm: np.array([[1, -2], [3, 0]], dtype=np.int8)}
    v = {k: np.asarray(a) for k, a in vals.items()}
    cases = []
    for axis in (None, 0, 1, 2, -1):
        cases.append(("softmax axis=%s" % axis, special.softmax(x3, axis), ref_softmax(v[x3], axis), "float64"))
        cases.append(("log_softmax axis=%s" % axis, special.log_softmax(x3, axis), ref_log_softmax(v[x3], axis),
                      "float64"))
    # a negatively strided view made in the graph
    cases.append(("softmax of x[::-1]", special.softmax(x3[::-1], 1), ref_softmax(v[x3][::-1], 1), "float64"))
    for axis in (None, 0, (0, 2), -1):
        cases.append(("logsumexp axis=%s" % (axis,), T.logsumexp(x3, axis), ref_logsumexp(v[x3], axis), "float64"))
    cases.append(("logsumexp keepdims", T.logsumexp(x3, (0, 2), keepdims=True), ref_logsumexp(v[x3], (0, 2), True),
                  "float64"))
    # float32
    cases += [("f32 softmax", special.softmax(f2, 1), ref_softmax(v[f2], 1), "float32"),
              ("f32 log_softmax", special.log_softmax(f2, 0), ref_log_softmax(v[f2], 0), "float32"),
              ("f32 logsumexp", T.logsumexp(f2, 1), ref_logsumexp(v[f2], 1), "float32")]
    # 0-d, empty, special values, big logits, integers
    cases += [("0-d softmax", special.softmax(d0), 1.0, "float64"),
              ("0-d log_softmax", special.log_softmax(d0), 0.0, "float64"),
              ("0-d logsumexp", T.logsumexp(d0), 2.5, "float64"),
              ("empty-lane softmax", special.softmax(e30, 1), np.zeros((3, 0)), "float64"),
              ("empty-lane logsumexp", T.logsumexp(e30, 1), np.full(3, -np.inf), "float64"),
              ("no-lane log_softmax", special.log_softmax(e04, 1), np.zeros((0, 4)), "float64"),
              ("no-lane logsumexp", T.logsumexp(e04, 1), np.zeros(0), "float64")]
    lane_fns = (("softmax", special.softmax, ref_softmax), ("log_softmax", special.log_softmax, ref_log_softmax),
                ("logsumexp", T.logsumexp, ref_logsumexp))
    for name, fn, ref in lane_fns:
        cases.append(("special rows " + name, fn(sr, 1), ref(v[sr], 1), "float64"))
        cases.append(("big " + name, fn(big, 1), ref(v[big], 1), "float64"))
    cases += [("int32 softmax", special.softmax(im, 1), ref_softmax(v[im], 1), "float64"),
              ("int8 log_softmax", special.log_softmax(bm), ref_log_softmax(v[bm].astype(np.float32)), "float32")]
    # Theano's names
    xs = np.array([-np.inf, -3.0, -0.5, 0.0, 0.5, 3.0, np.inf, np.nan])
    xv = T.dvector("xv")
    vals[xv] = xs
    with np.errstate(all="ignore"):
        cases += [("nnet.softmax rows", nnet.softmax(sr), ref_softmax(v[sr], 1), "float64"),
                  ("nnet.logsoftmax rows", nnet.logsoftmax(big), ref_log_softmax(v[big], 1), "float64"),
                  ("softmax_with_bias", nnet.softmax_with_bias(big, [0.0, 1.0, 2.0, 3.0]),
                   ref_softmax(v[big] + [0.0, 1.0, 2.0, 3.0], 1), "float64"),
                  ("relu", nnet.relu(xv), np.where(xs <= 0, 0.0, xs), "float64"),
                  ("leaky relu", nnet.relu(xv, 0.1), np.where(xs <= 0, 0.1 * xs, xs), "float64"),
                  ("elu", nnet.elu(xv), np.where(xs > 0, xs, np.expm1(np.minimum(xs, 0))), "float64"),
                  ("elu 0.5", nnet.elu(xv, 0.5), np.where(xs > 0, xs, 0.5 * np.expm1(np.minimum(xs, 0))), "float64"),
                  ("selu", nnet.selu(xv), nnet._SELU_SCALE * np.where(xs > 0, xs, nnet._SELU_ALPHA
                                                                       * np.expm1(np.minimum(xs, 0))), "float64"),
                  ("softsign", nnet.softsign(xv[1:-2]), xs[1:-2] / (1 + np.abs(xs[1:-2])), "float64"),
                  ("hard_sigmoid", nnet.hard_sigmoid(xv), np.clip(0.2 * xs + 0.5, 0, 1), "float64"),
                  ("int relu", nnet.relu(im), np.maximum(v[im], 0), "int32")]
    # cross-entropies
    y = T.ivector("y")
    t = T.dmatrix("t")
    p = T.dmatrix("p")
    labels = np.array([2, 0, 1, 2, 0, 1, 2], dtype=np.int32)
    vals.update({y: labels, t: np.eye(3)[labels], p: ref_softmax(SPECIAL_ROWS[-1:] * np.arange(1, 8)[:, None], 1)})
    pv = vals[p]
    rows = np.arange(7)
    with np.errstate(all="ignore"):
        cases += [("categorical labels", nnet.categorical_crossentropy(p, y), -np.log(pv[rows, labels]), "float64"),
                  ("categorical one-hot", nnet.categorical_crossentropy(p, t), -np.log(pv[rows, labels]), "float64"),
                  ("fused nll", nnet.crossentropy_softmax_1hot_nll(sr, y),
                   -ref_log_softmax(v[sr], 1)[rows, labels], "float64"),
                  ("fused nll dx", nnet.crossentropy_softmax_1hot_dx(T.arange(7.0), p, y),
                   (ref_softmax(pv, 1) - np.eye(3)[labels]) * np.arange(7.0)[:, None], "float64"),
                  ("categorical grad", nnet.crossentropy_categorical_1hot_grad(T.arange(7.0), p, y),
                   np.eye(3)[labels] * (-np.arange(7.0) / pv[rows, labels])[:, None], "float64"),
                  ("binary", nnet.binary_crossentropy(p[:, 0], p[:, 1]),
                   -(pv[:, 1] * np.log(pv[:, 0]) + (1 - pv[:, 1]) * np.log(1 - pv[:, 0])), "float64"),
                  ("sigmoid binary", nnet.sigmoid_binary_crossentropy(big[0], p[:4, 1]),
                   np.logaddexp(0, BIG[0]) - BIG[0] * pv[:4, 1], "float64")]
    nll_big, sm_big, am_big = nnet.crossentropy_softmax_argmax_1hot_with_bias(big, T.zeros(4),
                                                                              T.cast(BIG_LABELS, "int64"))
    cases += [("fused nll big", nll_big, -ref_log_softmax(BIG, 1)[np.arange(4), BIG_LABELS], "float64"),
              ("with_bias softmax", sm_big, ref_softmax(BIG, 1), "float64"),
              ("with_bias argmax", am_big, np.argmax(BIG, 1), "int64")]
    return cases, vals


def test_values(mode):
    cases, vals = _value_cases()
    inputs = list(vals)
    f = function(inputs, [out for _, out, _, _ in cases], mode=mode, on_unused_input="ignore")
    got = f(*[vals[i] for i in inputs])
    for (label, _, want, dtype), g in zip(cases, got):
        _close(g, want, dtype, label)


def test_debugmode():
    """perform and C agree node by node (float32 and float64, strides, special values, gradients)."""
    x = T.dmatrix("x")
    xf = T.fmatrix("xf")
    y = T.lvector("y")
    outs = []
    for v in (x, xf):
        sm = special.softmax(v, 1)
        outs += [sm, special.softmax(v), special.log_softmax(v, 0), T.logsumexp(v, 1), T.logsumexp(v),
                 nnet.crossentropy_softmax_1hot_nll(v, y), nnet.categorical_crossentropy(sm, y)]
        outs += grad(nnet.categorical_crossentropy(sm, y).sum() + special.log_softmax(v, 0).sum()
                     + T.logsumexp(v, 1).sum() + nnet.crossentropy_softmax_1hot_nll(v, y).sum(), [v])
        outs.append(grad(nnet.crossentropy_categorical_1hot(sm, y).sum(), sm))
    f = function([x, xf, y], outs, mode=DebugMode(optimizer=None))
    xv = np.concatenate([BIG, SPECIAL_ROWS[[0, 3, 6], :].repeat(2, axis=1)[:, :4]])[::-1, ::-1]
    yv = np.array([0, 3, 1, 2, 1, 1, 0])
    with np.errstate(all="ignore"):
        got = f(xv, (xv / 1e3).astype(np.float32), yv)
    assert len(got) == len(outs)
    np.testing.assert_allclose(got[0], ref_softmax(xv, 1))


# ------------------------------------------------------------------ gradients


P = RNG.uniform(0.1, 1.0, (4, 3))
P /= P.sum(axis=1, keepdims=True)
LABELS = np.array([2, 0, 1, 1])
ONEHOT = np.eye(3)[LABELS]
AWAY = np.array([-2.0, -0.7, -0.2, 0.3, 0.9, 1.8])   # away from the kinks at 0


@pytest.mark.finite_differences
def test_verify_grad(mode):
    verify_grads([
        ("softmax all", lambda a: special.softmax(a), [CUBE[:2]]),
        ("softmax axis 1", lambda a: special.softmax(a, 1), [CUBE[:2]]),
        ("softmax axis 0", lambda a: special.softmax(a, 0), [CUBE[0]]),
        ("log_softmax axis -1", lambda a: special.log_softmax(a, -1), [CUBE[:2]]),
        ("log_softmax all", lambda a: special.log_softmax(a), [CUBE[0]]),
        ("logsumexp (0, 2)", lambda a: T.logsumexp(a, (0, 2)), [CUBE[:2]]),
        ("logsumexp keepdims", lambda a: T.logsumexp(a, 1, keepdims=True), [CUBE[0]]),
        ("log of softmax", lambda a: T.log(special.softmax(a, 1)), [CUBE[0]]),
        ("categorical labels", lambda a: nnet.categorical_crossentropy(a, LABELS), [P]),
        ("categorical one-hot", lambda a: nnet.categorical_crossentropy(a, ONEHOT), [P]),
        ("categorical of softmax", lambda a: nnet.categorical_crossentropy(nnet.softmax(a), LABELS), [CUBE[0, :4, :3]]),
        ("one-hot of softmax", lambda a: nnet.categorical_crossentropy(nnet.softmax(a), ONEHOT), [CUBE[0, :4, :3]]),
        ("fused nll", lambda a: nnet.crossentropy_softmax_1hot_nll(a, LABELS), [CUBE[0, :4, :3]]),
        ("binary", lambda a, b: nnet.binary_crossentropy(a, b), [P[:, 0], P[:, 1]]),
        ("sigmoid binary", lambda a, b: nnet.sigmoid_binary_crossentropy(a, b), [CUBE[0, 0], P[:, 1].repeat(2)[:5]]),
        ("relu", lambda a: nnet.relu(a), [AWAY]),
        ("leaky relu", lambda a, s: nnet.relu(a, s), [AWAY, np.array(0.2)]),
        ("elu", lambda a: nnet.elu(a), [AWAY]),
        ("softsign", lambda a: nnet.softsign(a), [AWAY]),
    ], mode)


def _cost_forms(x, y):
    """Costs whose gradient with respect to the logits x is softmax(x) - onehot(y)."""
    onehot = T.cast(T.eq(T.arange(4).dimshuffle("x", 0), y.dimshuffle(0, "x")), "float64")
    sm = nnet.softmax(x)
    return {
        "fused": nnet.crossentropy_softmax_1hot_nll(x, y),
        "categorical(softmax)": nnet.categorical_crossentropy(sm, y),
        "one-hot(softmax)": nnet.categorical_crossentropy(sm, onehot),
        "-log(softmax) * onehot": -(T.log(sm) * onehot).sum(axis=1),
        "log_softmax": -(special.log_softmax(x, 1) * onehot).sum(axis=1),
        "logsumexp": T.logsumexp(x, 1) - (x * onehot).sum(axis=1),
    }


@pytest.mark.parametrize("optimizer", [None, "fast_run"])
def test_big_logits(optimizer):
    """Logits of +-1e4: every cost form is finite and exact (after the rewrites), and every
    gradient is finite and equal to softmax(x) - onehot, with or without rewrites."""
    x = T.dmatrix("x")
    xf = T.fmatrix("xf")
    y = T.ivector("y")
    forms = _cost_forms(x, y)
    outs = list(forms.values()) + [grad(c.sum(), x) for c in forms.values()]
    # float32: the same C with float elements
    f32 = [nnet.crossentropy_softmax_1hot_nll(xf, y), special.log_softmax(xf, 1), T.logsumexp(xf, 1),
           grad(nnet.categorical_crossentropy(nnet.softmax(xf), y).sum(), xf)]
    f = function([x, xf, y], outs + f32, mode=Mode(linker="c", optimizer=optimizer))
    got = f(BIG, BIG.astype(np.float32), BIG_LABELS)
    got, got32 = got[:len(outs)], got[len(outs):]
    for g, want in zip(got32, [-ref_log_softmax(BIG, 1)[np.arange(4), BIG_LABELS], ref_log_softmax(BIG, 1),
                               ref_logsumexp(BIG, 1), ref_softmax(BIG, 1) - np.eye(4)[BIG_LABELS]]):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-6)
    want_loss = -ref_log_softmax(BIG, 1)[np.arange(4), BIG_LABELS]
    want_grad = ref_softmax(BIG, 1) - np.eye(4)[BIG_LABELS]
    n = len(forms)
    for label, g in zip(forms, got[n:]):
        assert np.all(np.isfinite(g)), label
        np.testing.assert_allclose(g, want_grad, atol=1e-12, err_msg=label)
    for label, loss in zip(forms, got[:n]):
        if optimizer is not None or label in ("fused", "log_softmax", "logsumexp"):
            np.testing.assert_allclose(loss, want_loss, rtol=1e-12, err_msg=label)


# ------------------------------------------------------------------ rewrites


def test_rewrites():
    x = T.dmatrix("x")
    y = T.ivector("y")
    outs = {
        "log(softmax)": T.log(special.softmax(x, 0)),
        "categorical(softmax)": nnet.categorical_crossentropy(nnet.softmax(x), y),
        "categorical(softmax over all axes)": nnet.categorical_crossentropy(special.softmax(x), y),
    }
    for label, out in outs.items():
        names = op_names(function([x, y], out, on_unused_input="ignore").maker.fgraph.toposort())
        plain = op_names(function([x, y], out, mode=Mode(optimizer=None), on_unused_input="ignore")
                         .maker.fgraph.toposort())
        if label == "log(softmax)":
            assert "LogSoftmax" in names and "Softmax" not in names, names
            assert "Softmax" in plain and "log" in plain, plain
        elif label == "categorical(softmax)":
            assert names == ["CrossentropySoftmax1Hot"], names
            assert plain == ["Softmax", "CrossentropyCategorical1Hot"], plain
        else:   # the softmax is not along the rows: nothing to fuse
            assert names == ["Softmax", "CrossentropyCategorical1Hot"], names


def test_nll_through_advanced_indexing_is_fused():
    """-log(softmax(x))[arange(n), y] (n from the labels or from the rows) becomes the fused op when
    nothing else reads the log-softmax; with its gradient in the same graph it stays as written."""
    x = T.dmatrix("x")
    y = T.lvector("y")
    xv = np.array([[1.0, -2.0, 3.0, 1e4], [0.5, 0.5, -1e4, 0.0], [2.0, 1.0, 0.0, -1.0]])
    yv = np.array([3, 2, 0])
    shifted = xv - xv.max(axis=1, keepdims=True)
    want = -(shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True)))[np.arange(3), yv]
    for n in (y.shape[0], x.shape[0]):
        loss = -T.log(special.softmax(x, axis=-1))[T.arange(n), y]
        f = function([x, y], loss)
        assert op_names(f.maker.fgraph.toposort()) == ["CrossentropySoftmax1Hot"], \
            op_names(f.maker.fgraph.toposort())
        np.testing.assert_allclose(f(xv, yv), want, rtol=1e-13)
    with pytest.raises(ValueError):
        f(xv, yv[:2])                    # two labels for three rows: the fused op refuses, as PyTensor's
    cost = loss.mean()
    g = function([x, y], [cost, grad(cost, x)])
    names = op_names(g.maker.fgraph.toposort())
    assert "LogSoftmax" in names and "CrossentropySoftmax1Hot" not in names, names
    got_cost, got_grad = g(xv, yv)
    sm = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    onehot = np.eye(4)[yv]
    np.testing.assert_allclose(got_cost, want.mean(), rtol=1e-13)
    np.testing.assert_allclose(got_grad, (sm - onehot) / 3, rtol=1e-12, atol=1e-15)


# ------------------------------------------------------------------ errors


def test_bad_labels(mode):
    x = T.dmatrix("x")
    y = T.lvector("y")
    g = T.dvector("g")
    ops = [nnet.crossentropy_softmax_1hot_nll(x, y), nnet.crossentropy_categorical_1hot(x, y),
           nnet.crossentropy_softmax_1hot_dx(g, x, y), nnet.crossentropy_categorical_1hot_grad(g, x, y)]
    fns = [function([x, y, g], out, mode=mode, on_unused_input="ignore") for out in ops]
    xv, gv = np.full((3, 4), 0.25), np.ones(3)
    for f in fns:
        assert np.all(np.isfinite(f(xv, np.array([0, 3, 1]), gv)))
        with pytest.raises(IndexError, match=r"label 4 \(row 1\) is out of range for 4 classes"):
            f(xv, np.array([0, 4, 7]), gv)
        with pytest.raises(IndexError, match=r"label -1 \(row 2\) is out of range for 4 classes"):
            f(xv, np.array([0, 1, -1]), gv)
        with pytest.raises(ValueError, match="2 labels for 3 rows"):
            f(xv, np.array([0, 1]), gv)
    with pytest.raises(ValueError, match="2 gradients for 3 rows"):
        fns[2](xv, np.array([0, 1, 2]), np.ones(2))


def test_bad_arguments():
    x = T.dmatrix("x")
    with pytest.raises(ValueError, match="out of range"):
        special.softmax(x, 2)
    with pytest.raises(ValueError, match="out of range"):
        special.log_softmax(T.dscalar(), 0)
    with pytest.raises(TypeError, match="integer or None"):
        special.softmax(x, 1.0)
    with pytest.raises(TypeError, match="rank mismatch"):
        nnet.categorical_crossentropy(x, T.dtensor3())
    with pytest.raises(TypeError, match="integer vector"):
        nnet.crossentropy_softmax_1hot_nll(x, T.dvector())
    with pytest.raises(TypeError, match="matrix"):
        nnet.crossentropy_categorical_1hot(T.dvector(), T.lvector())
    with pytest.raises(ValueError, match="repeated axis"):
        T.logsumexp(x, (1, -1))

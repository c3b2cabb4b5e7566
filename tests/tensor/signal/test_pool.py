"""Theano 1.0's pooling (``ffigraph.tensor.signal.pool``): ``pool_2d``/``pool_3d`` in every mode,
with and without ignore_border, padding and strides below, at and above the window; the gradient
ops (MaxPoolGrad, AveragePoolGrad, DownsampleFactorMaxGradGrad) against hand formulas; verify_grad
up to the second derivatives; errors at build and at run time; C threads.

The oracle below enumerates windows with explicit loops: for each output index it lists the
window's positions in the padded image, keeps those inside the real image (``A``) and counts the
padded extent (``T``), then reduces element by element. It shares nothing with ``perform``.
"""
from __future__ import annotations

import itertools
import os
import sys
import warnings

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import config, function
from ffigraph.compile.mode import Mode
from ffigraph.tensor.signal.pool import (AveragePoolGrad, DownsampleFactorMaxGradGrad, MaxPoolGrad, Pool,
                                         max_pool_2d_same_size, pool_2d, pool_3d)

if os.path.dirname(os.path.dirname(os.path.abspath(__file__))) not in sys.path:   # tests/tensor, for test_grad_ops
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from test_grad_ops import verify_grads  # noqa: E402

PY = Mode(linker="py", optimizer=None)
C = Mode(linker="c", optimizer=None)
MODES = ("max", "sum", "average_inc_pad", "average_exc_pad")


# ------------------------------------------------------------------ the oracle


def _count(v, w, s, ignore_border):
    """Windows along an axis of padded length v (Theano's rule, as loops)."""
    if v == 0:
        return 0
    k = 0
    if ignore_border:
        while k * s + w <= v:
            k += 1
        return k
    if s >= w:
        while k * s < v:
            k += 1
        return k
    while k * s + w < v:   # the windows that end before the last element, then one more
        k += 1
    return k + 1


def ref_windows(shape, ws, st, pad, ignore_border):
    """[(out index, [positions in A], |T|)] and the pooled shape, for the last len(ws) axes."""
    nd = len(ws)
    n = shape[-nd:]
    counts = [_count(n[d] + 2 * pad[d], ws[d], st[d], ignore_border) for d in range(nd)]
    wins = []
    for o in itertools.product(*[range(c) for c in counts]):
        pos, t = [], 1
        for d in range(nd):
            start = o[d] * st[d]
            t *= min(start + ws[d], n[d] + 2 * pad[d]) - start
        for q in itertools.product(*[range(o[d] * st[d], o[d] * st[d] + ws[d]) for d in range(nd)]):
            real = tuple(q[d] - pad[d] for d in range(nd))
            if all(0 <= real[d] < n[d] for d in range(nd)):
                pos.append(real)
        wins.append((o, pos, t))
    return wins, tuple(shape[:-nd]) + tuple(counts)


def ref_pool(x, ws, st, pad, ib, mode):
    wins, oshape = ref_windows(x.shape, ws, st, pad, ib)
    z = np.zeros(oshape)
    E = (Ellipsis,)
    for o, pos, t in wins:
        vals = [x[E + p].astype(np.float64) for p in pos]
        if mode == "max":
            acc = vals[0]
            for v in vals[1:]:
                acc = np.maximum(acc, v)
        else:
            acc = sum(vals)
            if mode == "average_inc_pad":
                acc = acc / t
            elif mode == "average_exc_pad":
                acc = acc / len(pos)
        z[E + o] = acc
    return z


def ref_max_grad(x, maxout, gz, ws, st, pad, ib):
    wins, _ = ref_windows(x.shape, ws, st, pad, ib)
    gx = np.zeros(x.shape)
    E = (Ellipsis,)
    for o, pos, t in wins:
        for p in pos:
            gx[E + p] += np.where(x[E + p] == maxout[E + o], gz[E + o], 0.0)
    return gx


def ref_avg_grad(shape, gz, ws, st, pad, ib, mode):
    wins, _ = ref_windows(shape, ws, st, pad, ib)
    gx = np.zeros(shape)
    E = (Ellipsis,)
    for o, pos, t in wins:
        div = {"sum": 1.0, "average_inc_pad": float(t), "average_exc_pad": float(len(pos))}[mode]
        for p in pos:
            gx[E + p] += gz[E + o] / div
    return gx


def ref_max_gradgrad(x, maxout, ggx, ws, st, pad, ib):
    wins, oshape = ref_windows(x.shape, ws, st, pad, ib)
    z = np.zeros(oshape)
    E = (Ellipsis,)
    for o, pos, t in wins:
        for p in pos:
            z[E + o] += np.where(x[E + p] == maxout[E + o], ggx[E + p], 0.0)
    return z


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)


# (ws, stride, pad, ignore_border): strides below, at and above the window; padding; partial windows
CONFIGS_2D = [
    ((2, 2), None, (0, 0), False), ((3, 2), (1, 2), (0, 0), False), ((2, 3), (3, 4), (0, 0), False),
    ((2, 2), None, (0, 0), True), ((3, 2), (1, 2), (0, 0), True), ((2, 3), (3, 4), (0, 0), True),
    ((3, 3), (2, 2), (1, 1), True), ((3, 2), (1, 3), (2, 1), True), ((2, 3), (2, 3), (1, 0), True),
]
CONFIGS_3D = [
    ((2, 2, 2), None, (0, 0, 0), False), ((3, 2, 2), (2, 1, 3), (0, 0, 0), False),
    ((2, 3, 2), (1, 2, 2), (1, 1, 0), True), ((2, 2, 3), (3, 2, 1), (0, 1, 2), True),
]


def _values():
    rng = np.random.default_rng(7)
    v = dict(
        x4=rng.standard_normal((2, 3, 7, 8)),
        b1=rng.standard_normal((1, 1, 5, 6)).astype("float32"),     # batch 1, float32
        x3=rng.standard_normal((3, 6, 5)),                          # pool_2d of a 3-d input
        x5=rng.standard_normal((2, 1, 2, 5, 7)),                    # pool_2d of a 5-d input
        v5=rng.standard_normal((2, 2, 5, 6, 7)),                    # pool_3d
        v3f=rng.standard_normal((4, 5, 6)).astype("float32"),       # pool_3d of a 3-d input, float32
        e=np.zeros((2, 0, 4, 4)),                                   # empty leading axis
        ez=np.zeros((2, 3, 0, 5)),                                  # empty pooled axis: no window
    )
    v["x4"][0, 0, :2, :2] = 1.5   # ties inside a window
    return v


def _forward_cases():
    """[(input name, ws, stride, pad, ignore_border, mode, 2 or 3)]."""
    cases = []
    for (ws, st, pad, ib), mode in itertools.product(CONFIGS_2D, MODES):
        cases.append(("x4", ws, st, pad, ib, mode, 2))
    for (ws, st, pad, ib), mode in itertools.product(CONFIGS_3D, MODES):
        cases.append(("v5", ws, st, pad, ib, mode, 3))
    # the other inputs: one mode each (the kernels are the same; the layouts and ranks differ)
    for name, cfg, mode in (("b1", CONFIGS_2D[6], "max"), ("x3", CONFIGS_2D[1], "sum"),
                            ("x5", CONFIGS_2D[7], "average_inc_pad"), ("x5", CONFIGS_2D[1], "max"),
                            ("e", CONFIGS_2D[3], "average_exc_pad"), ("ez", CONFIGS_2D[1], "max"),
                            ("ez", CONFIGS_2D[2], "sum"), ("v3f", CONFIGS_3D[2], "max"),
                            ("v3f", CONFIGS_3D[1], "average_inc_pad"), ("v3f", CONFIGS_3D[3], "average_exc_pad")):
        cases.append((name,) + cfg + (mode, len(cfg[0])))
    return cases


def _symbols(values):
    return {k: T.tensor(v.dtype, (None,) * v.ndim, name=k) for k, v in values.items()}


def _pool(sym, ws, st, pad, ib, mode, nd):
    fn = pool_2d if nd == 2 else pool_3d
    return fn(sym, ws, ignore_border=ib, stride=st, pad=pad, mode=mode)


def _views(values):
    """The same values as non-contiguous arrays: reversed last axis (negative strides) and a transposed copy."""
    out = {}
    for k, v in values.items():
        if k == "x4":
            out[k] = np.ascontiguousarray(v[..., ::-1])[..., ::-1]
        elif k == "v5":
            out[k] = np.ascontiguousarray(v.transpose(0, 1, 4, 3, 2)).transpose(0, 1, 4, 3, 2)
        elif k == "x3":
            out[k] = np.asfortranarray(v)
        else:
            out[k] = v
    return out


def ref_same_size(x, patch):
    """max_pool_2d_same_size: each whole patch keeps its maxima, everything else is 0."""
    out = np.zeros_like(x)
    for i in range(0, x.shape[-2] - patch[0] + 1, patch[0]):
        for j in range(0, x.shape[-1] - patch[1] + 1, patch[1]):
            block = x[..., i:i + patch[0], j:j + patch[1]]
            top = block.max(axis=(-2, -1), keepdims=True)
            out[..., i:i + patch[0], j:j + patch[1]] = np.where(block == top, block, 0)
    return out


@pytest.mark.parametrize("mode", [PY, C], ids=["py", "c"])
def test_forward_every_mode(mode):
    values = _values()
    syms = _symbols(values)
    cases = _forward_cases()
    names = sorted(values)
    outs = [_pool(syms[c[0]], *c[1:]) for c in cases] + [max_pool_2d_same_size(syms["x4"], (2, 3))]
    f = function([syms[k] for k in names], outs, mode=mode)
    expected = [ref_pool(values[c[0]], c[1], c[2] or c[1], c[3], c[4], c[5]) for c in cases]
    for vals in (values, _views(values)) if mode is C else (values,):
        got = f(*[vals[k] for k in names])
        for c, g, e in zip(cases, got, expected):
            assert g.dtype == values[c[0]].dtype, c
            assert g.shape == e.shape, (c, g.shape, e.shape)
            np.testing.assert_allclose(g, e, err_msg=str(c), **_tol(g.dtype))
        np.testing.assert_array_equal(got[-1], ref_same_size(values["x4"], (2, 3)))


def test_out_shape_and_static_shape():
    assert Pool.out_shape((2, 3, 7, 8), (2, 3), True, (3, 4), (1, 0)) == [2, 3, 3, 2]
    assert Pool.out_shape((7, 8), (3, 2), False, (1, 2)) == [5, 4]
    assert Pool.out_shape((5, 6, 7), (2, 2, 2), False, ndim=3) == [3, 3, 4]
    x = T.tensor("float64", (2, 3, 7, 8))
    assert pool_2d(x, (3, 3), ignore_border=True, stride=(2, 2), pad=(1, 1)).type.shape == (2, 3, 4, 4)


def _grad_cases(values):
    """Each gradient op on x4 / v5 over the configurations, with random gradients: [(label, symbolic
    builder, expected)]."""
    rng = np.random.default_rng(3)
    out = []
    for name, configs, nd in (("x4", CONFIGS_2D, 2), ("v5", CONFIGS_3D, 3), ("b1", CONFIGS_2D[6:7], 2)):
        x = values[name]
        for ws, st, pad, ib in configs:
            st_ = st or ws
            maxout = ref_pool(x, ws, st_, pad, ib, "max").astype(x.dtype)
            gz = rng.standard_normal(maxout.shape).astype(x.dtype)
            ggx = rng.standard_normal(x.shape).astype(x.dtype)
            key = "%s %s %s %s %s" % (name, ws, st, pad, ib)
            out.append(("max_grad " + key, (name, maxout, gz, None),
                        lambda s, m, g, y, ws=ws, st=st, pad=pad, ib=ib, nd=nd:
                        MaxPoolGrad(ib, nd)(s, m, g, ws, st, pad),
                        ref_max_grad(x, maxout, gz, ws, st_, pad, ib)))
            out.append(("gradgrad " + key, (name, maxout, None, ggx),
                        lambda s, m, g, y, ws=ws, st=st, pad=pad, ib=ib, nd=nd:
                        DownsampleFactorMaxGradGrad(ib, "max", nd)(s, m, y, ws, st, pad),
                        ref_max_gradgrad(x, maxout, ggx, ws, st_, pad, ib)))
            mode = MODES[1 + (len(out) // 3) % 3]   # AveragePoolGrad: one mode per configuration, in turn
            out.append(("avg_grad %s " % mode + key, (name, None, gz, None),
                        lambda s, m, g, y, ws=ws, st=st, pad=pad, ib=ib, nd=nd, mode=mode:
                        AveragePoolGrad(ib, mode, nd)(s, g, ws, st, pad),
                        ref_avg_grad(x.shape, gz, ws, st_, pad, ib, mode)))
    return out


@pytest.mark.parametrize("mode", [PY, C], ids=["py", "c"])
def test_grad_ops_hand_formulas(mode):
    values = _values()
    syms = _symbols(values)
    cases = _grad_cases(values)
    inputs, args, outs = [syms[k] for k in sorted(values)], [values[k] for k in sorted(values)], []
    for label, (name, m, g, y), build, _ in cases:
        extra = []
        for a in (m, g, y):
            if a is None:
                extra.append(None)
                continue
            s = T.tensor(a.dtype, (None,) * a.ndim)
            inputs.append(s)
            args.append(a)
            extra.append(s)
        outs.append(build(syms[name], *extra))
    f = function(inputs, outs, mode=mode, on_unused_input="ignore")
    for (label, (name, *_), _, e), got in zip(cases, f(*args)):
        assert got.dtype == values[name].dtype and got.shape == e.shape, label
        np.testing.assert_allclose(got, e, err_msg=label, **_tol(got.dtype))


@pytest.mark.finite_differences
def test_verify_grad_up_to_second_derivatives():
    rng = np.random.default_rng(11)

    def distinct(shape):   # no ties: max pooling is differentiable there
        return rng.permutation(np.prod(shape)).reshape(shape) * 0.1 + rng.uniform(-0.01, 0.01, shape)

    x = distinct((1, 2, 5, 6))
    v = distinct((1, 4, 5, 4))
    cases = []
    for k, mode in enumerate(MODES):
        ws, st, pad, ib = CONFIGS_2D[[1, 6, 7, 2][k]]
        cases.append(("pool_2d %s" % mode, lambda a, ws=ws, st=st, pad=pad, ib=ib, mode=mode:
                      pool_2d(a, ws, ignore_border=ib, stride=st, pad=pad, mode=mode), [x]))
    cases.append(("pool_3d max", lambda a: pool_3d(a, (2, 2, 3), ignore_border=True, stride=(1, 2, 1),
                                                   pad=(1, 0, 1)), [v]))
    ws, st, pad = (3, 2), (2, 1), (1, 1)
    maxout = ref_pool(x, ws, st, pad, True, "max")
    # MaxPoolGrad of x, pool(x), gz: its derivatives w.r.t. gz (DownsampleFactorMaxGradGrad) and x (0)
    cases.append(("MaxPoolGrad", lambda a, g: MaxPoolGrad(True)(a, pool_2d(a, ws, True, st, pad), g, ws, st, pad),
                  [x, rng.standard_normal(maxout.shape)]))
    cases.append(("DownsampleFactorMaxGradGrad", lambda a, y: DownsampleFactorMaxGradGrad(True)(
        a, pool_2d(a, ws, True, st, pad), y, ws, st, pad), [x, rng.standard_normal(x.shape)]))
    for mode in MODES[1:]:
        cases.append(("AveragePoolGrad %s" % mode, lambda g, mode=mode: AveragePoolGrad(True, mode)(
            T.constant(x), g, ws, st, pad), [rng.standard_normal(maxout.shape)]))
    verify_grads(cases, C)


def test_default_mode_grad_and_infer_shape():
    """The default mode (rewrites): a gradient, and shapes inferred from a symbolic input shape."""
    x = T.tensor4()
    y = pool_2d(x, (2, 2), ignore_border=True, mode="max")
    g = T.grad(y.sum(), x)
    z = pool_2d(x, (3, 2), ignore_border=False, stride=(1, 2))
    a = np.random.default_rng(5).standard_normal((2, 3, 4, 6)).astype(x.dtype)
    got, shape = function([x], [g, z.shape])(a)
    assert tuple(shape) == (2, 3, 2, 3)
    np.testing.assert_allclose(got, ref_max_grad(a, ref_pool(a, (2, 2), (2, 2), (0, 0), True, "max"),
                                                 np.ones((2, 3, 2, 3)), (2, 2), (2, 2), (0, 0), True))


def test_build_errors_and_warnings():
    x = T.tensor4()
    with pytest.raises(ValueError, match="ws"):
        pool_2d(x, (0, 2), ignore_border=True)
    with pytest.raises(ValueError, match="stride"):
        pool_2d(x, (2, 2), ignore_border=True, stride=(-1, 1))
    with pytest.raises(ValueError, match="pad"):
        pool_2d(x, (2, 2), ignore_border=True, pad=(-1, 0))
    with pytest.raises(NotImplementedError, match="smaller"):
        pool_2d(x, (2, 2), ignore_border=True, pad=(2, 0))
    with pytest.raises(NotImplementedError, match="ignore_border=True"):
        pool_2d(x, (3, 3), ignore_border=False, pad=(1, 1))
    with pytest.raises(ValueError, match="ws must be given"):
        pool_2d(x, ignore_border=True)
    with pytest.raises(ValueError, match="'max', 'sum'"):
        pool_2d(x, (2, 2), ignore_border=True, mode="average")
    with pytest.raises(NotImplementedError, match=">= 2"):
        pool_2d(T.vector(), (2, 2), ignore_border=True)
    with pytest.raises(ValueError, match="3 values"):
        pool_3d(x, (2, 2), ignore_border=True)
    with pytest.raises(TypeError, match="float"):
        pool_2d(T.imatrix(), (2, 2), ignore_border=True)
    with pytest.raises(ValueError, match="both"):
        pool_2d(x, (2, 2), ignore_border=True, ds=(2, 2))
    with pytest.warns(UserWarning, match="ignore_border"):
        y = pool_2d(x, (2, 2))
    assert y.owner.op.ignore_border is False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        y = pool_2d(x, ds=(2, 2), st=(1, 1), padding=(1, 1), ignore_border=True)
    assert y.owner.op == Pool(True, "max", 2)


@pytest.mark.parametrize("mode", [PY, C], ids=["py", "c"])
def test_run_time_errors(mode):
    x, m, g = T.tensor4(), T.tensor4(), T.tensor4()
    ws, st, pad = T.lvector(), T.lvector(), T.lvector()
    f = function([x, m, g, ws, st, pad], [Pool(True, "average_exc_pad")(x, ws, st, pad),
                                          MaxPoolGrad(True)(x, m, g, ws, st, pad)], mode=mode)
    a = np.random.default_rng(2).standard_normal((1, 2, 5, 5))
    good = ref_pool(a, (2, 2), (2, 2), (1, 1), True, "max")

    def call(w=(2, 2), s=(2, 2), p=(1, 1), gz=good):
        return f(a, good, gz, np.array(w), np.array(s), np.array(p))

    for kw, err, msg in [(dict(w=(0, 2)), ValueError, "ws"), (dict(s=(2, -1)), ValueError, "stride"),
                         (dict(p=(-1, 0)), ValueError, "pad"), (dict(p=(2, 1)), (ValueError, NotImplementedError),
                                                                "smaller"),
                         (dict(w=(2, 2, 2)), ValueError, "2 values"), (dict(gz=good[:, :1]), ValueError, "gz")]:
        with pytest.raises(err, match=msg):
            call(**kw)
        out = call()   # the function works after the error
        np.testing.assert_allclose(out[0], ref_pool(a, (2, 2), (2, 2), (1, 1), True, "average_exc_pad"))
        np.testing.assert_allclose(out[1], ref_max_grad(a, good, good, (2, 2), (2, 2), (1, 1), True))



@pytest.mark.parametrize("mode", [PY, C], ids=["py", "c"])
def test_max_of_padding_only_windows_is_an_error(mode):
    """An empty image padded by 1 has windows that hold only padding: max pooling has no value
    there (numpy's max of nothing raises). The C code read element 0 of the empty input and
    returned whatever was in memory (found by the CUDA tier's oracle)."""
    x = T.tensor4()
    f = function([x], pool_2d(x, (2, 2), ignore_border=True, pad=(1, 1)), mode=mode)
    with pytest.raises(ValueError, match="(no maximum|empty|zero-size)"):
        f(np.zeros((1, 1, 0, 0)))
    a = np.arange(9.0).reshape(1, 1, 3, 3)
    np.testing.assert_array_equal(f(a), ref_pool(a, (2, 2), (2, 2), (1, 1), True, "max"))

def test_threads():
    """The C kernels split over the pool (ranges of whole planes; the cut is fixed by the shape)."""
    rng = np.random.default_rng(9)
    a = rng.standard_normal((5, 7, 9, 8)).astype("float32")
    x = T.tensor4(dtype="float32")
    y = pool_2d(x, (2, 2), ignore_border=False)
    outs = [pool_2d(x, (3, 2), ignore_border=True, stride=(2, 1), pad=(1, 1), mode="average_inc_pad"), y,
            T.grad((y * y).sum(), x)]
    with config.change_flags(threads=3, threads_min_size=64):
        f = function([x], outs, mode=C)
    avg, mx, gx = f(a)
    np.testing.assert_allclose(avg, ref_pool(a, (3, 2), (2, 1), (1, 1), True, "average_inc_pad"), rtol=1e-5, atol=1e-6)
    ref_mx = ref_pool(a, (2, 2), (2, 2), (0, 0), False, "max")
    np.testing.assert_array_equal(mx, ref_mx)
    np.testing.assert_allclose(gx, ref_max_grad(a, ref_mx, 2 * ref_mx, (2, 2), (2, 2), (0, 0), False), rtol=1e-6)
    for again, first in zip(f(a), (avg, mx, gx)):   # the same bits from call to call
        np.testing.assert_array_equal(again, first)

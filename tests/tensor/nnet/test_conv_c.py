"""The C code of the convolution ops (``ffigraph/tensor/nnet/conv_c.py``): forward, grad_weights and
grad_inputs, 2d and 3d, against an independent numpy oracle (a loop over the kernel offsets, each an
einsum over channels), under ``Mode(linker='c')``.

Cases cover every border mode kind (valid, full, half, explicit pairs), strides, dilations, groups,
filter_flip on and off, float32 and float64, negative-stride and transposed inputs, batch 1, an empty
batch, the 1x1 branch; the run-time errors (then a good call); the no-BLAS kernel; threads.
"""
from __future__ import annotations

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import function, grad
from ffigraph.compile.mode import Mode
from ffigraph.config import config
from ffigraph.tensor import blas, dot_c
from ffigraph.tensor.nnet import abstract_conv as ac

C_MODE = Mode(linker="c", optimizer=None)
RNG = np.random.default_rng(47)


# ---------------------------------------------------------------- the oracle


def _pads(border_mode, dk):
    if border_mode == "valid":
        return [(0, 0)] * len(dk)
    if border_mode == "full":
        return [(k - 1, k - 1) for k in dk]
    if border_mode == "half":
        return [(k // 2, k // 2) for k in dk]
    return [(p, p) if np.isscalar(p) else tuple(p) for p in border_mode]


def _geometry(S, K, border_mode, s, d):
    dk = [(k - 1) * dd + 1 for k, dd in zip(K, d)]
    pads = _pads(border_mode, dk)
    P = [(S_ + lo + hi - k) // ss + 1 for S_, (lo, hi), k, ss in zip(S, pads, dk, s)]
    return pads, P


def _window(idx, d, P, s):
    """The slices of xpad read by kernel offset idx for every output position."""
    return tuple(slice(i * dd, i * dd + (p - 1) * ss + 1, ss) for i, dd, p, ss in zip(idx, d, P, s))


def _flip(w, cd):
    return w[(slice(None), slice(None)) + (slice(None, None, -1),) * cd]


def ref_forward(x, w, border_mode, s, d, flip, G):
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    cd = x.ndim - 2
    K = w.shape[2:]
    pads, P = _geometry(x.shape[2:], K, border_mode, s, d)
    wf = _flip(w, cd) if flip else w
    xp = np.pad(x, [(0, 0), (0, 0)] + list(pads))
    B, C, O = x.shape[0], x.shape[1], w.shape[0]
    Cg, Og = C // G, O // G
    out = np.zeros((B, O) + tuple(P))
    for idx in np.ndindex(*K):
        patch = xp[(slice(None), slice(None)) + _window(idx, d, P, s)]
        for g in range(G):
            out[:, g * Og:(g + 1) * Og] += np.einsum("bc...,oc->bo...", patch[:, g * Cg:(g + 1) * Cg],
                                                     wf[(slice(g * Og, (g + 1) * Og), slice(None)) + idx])
    return out


def ref_grad_weights(x, top, K, border_mode, s, d, flip, G):
    x, top = np.asarray(x, np.float64), np.asarray(top, np.float64)
    cd = x.ndim - 2
    pads, P = _geometry(x.shape[2:], K, border_mode, s, d)
    assert list(top.shape[2:]) == P
    xp = np.pad(x, [(0, 0), (0, 0)] + list(pads))
    C, O = x.shape[1], top.shape[1]
    Cg, Og = C // G, O // G
    dw = np.zeros((O, Cg) + tuple(K))
    for idx in np.ndindex(*K):
        patch = xp[(slice(None), slice(None)) + _window(idx, d, P, s)]
        for g in range(G):
            summed = [0] + list(range(2, 2 + cd))   # the batch and the output positions
            dw[(slice(g * Og, (g + 1) * Og), slice(None)) + idx] = np.tensordot(
                top[:, g * Og:(g + 1) * Og], patch[:, g * Cg:(g + 1) * Cg], axes=(summed, summed))
    return _flip(dw, cd) if flip else dw


def ref_grad_inputs(w, top, S, border_mode, s, d, flip, G):
    w, top = np.asarray(w, np.float64), np.asarray(top, np.float64)
    cd = w.ndim - 2
    K = w.shape[2:]
    pads, P = _geometry(S, K, border_mode, s, d)
    assert list(top.shape[2:]) == P
    wf = _flip(w, cd) if flip else w
    B, O, Cg = top.shape[0], w.shape[0], w.shape[1]
    Og = O // G
    dxp = np.zeros((B, Cg * G) + tuple(S_ + lo + hi for S_, (lo, hi) in zip(S, pads)))
    for idx in np.ndindex(*K):
        sl = (slice(None), slice(None)) + _window(idx, d, P, s)
        for g in range(G):
            dxp[sl][:, g * Cg:(g + 1) * Cg] += np.einsum(
                "bo...,oc->bc...", top[:, g * Og:(g + 1) * Og], wf[(slice(g * Og, (g + 1) * Og), slice(None)) + idx])
    crop = tuple(slice(lo, lo + S_) for S_, (lo, _) in zip(S, pads))
    return dxp[(slice(None), slice(None)) + crop]


# ---------------------------------------------------------------- cases


def _layout(a, how):
    """a as a non-contiguous view with the same values: 'neg' (negative strides on the last axes),
    'T' (a transposed copy seen back through a transpose), or as it is."""
    if how == "neg":
        return np.ascontiguousarray(a[..., ::-1, ::-1])[..., ::-1, ::-1]
    if how == "T":
        return np.ascontiguousarray(a.T).T
    return a


# (kind, convdim, props, B, C, O, S, K, dtype, layout)
CASES = [
    ("forward", 2, dict(), 2, 3, 4, (7, 6), (3, 2), "float64", None),
    ("forward", 2, dict(border_mode="full", filter_flip=False), 1, 2, 3, (5, 4), (3, 3), "float64", "neg"),
    ("forward", 2, dict(border_mode="half", subsample=(2, 1), filter_dilation=(1, 2)), 2, 4, 6, (8, 9), (3, 3),
     "float32", "T"),
    ("forward", 2, dict(border_mode=((1, 2), (0, 3)), subsample=(2, 3), num_groups=2), 3, 4, 6, (6, 7), (2, 3),
     "float64", "neg"),
    ("forward", 2, dict(), 2, 5, 3, (4, 5), (1, 1), "float32", None),           # the 1x1 branch
    ("forward", 2, dict(), 2, 5, 3, (4, 5), (1, 1), "float64", "neg"),          # 1x1, image packed
    ("forward", 2, dict(), 0, 2, 3, (5, 5), (2, 2), "float64", None),           # empty batch
    ("forward", 3, dict(border_mode="half", filter_flip=False), 2, 2, 3, (4, 5, 3), (3, 2, 3), "float64", None),
    ("forward", 3, dict(border_mode=(1, (0, 2), 0), subsample=(1, 2, 2), filter_dilation=(2, 1, 1), num_groups=2),
     1, 4, 2, (6, 5, 5), (2, 3, 2), "float32", "T"),
    ("grad_weights", 2, dict(), 2, 3, 4, (7, 6), (3, 2), "float64", None),
    ("grad_weights", 2, dict(border_mode="full", subsample=(2, 2), filter_flip=False), 3, 2, 3, (5, 6), (2, 3),
     "float32", "neg"),
    ("grad_weights", 2, dict(border_mode=((2, 0), (1, 1)), filter_dilation=(2, 2), num_groups=3), 2, 3, 6, (7, 7),
     (2, 2), "float64", "T"),
    ("grad_weights", 2, dict(), 4, 5, 3, (4, 5), (1, 1), "float64", None),      # 1x1
    ("grad_weights", 2, dict(), 0, 2, 3, (5, 5), (2, 2), "float32", None),      # empty batch: zeros
    ("grad_weights", 3, dict(border_mode="half", subsample=(2, 1, 2)), 2, 2, 2, (5, 4, 6), (3, 3, 2), "float64",
     "neg"),
    ("grad_inputs", 2, dict(), 2, 3, 4, (7, 6), (3, 2), "float64", None),
    ("grad_inputs", 2, dict(border_mode="half", subsample=(3, 2), filter_flip=False), 1, 2, 3, (8, 7), (3, 3),
     "float32", "T"),
    ("grad_inputs", 2, dict(border_mode=((0, 2), (3, 1)), filter_dilation=(1, 3), num_groups=2), 2, 4, 2, (5, 8),
     (2, 2), "float64", "neg"),
    ("grad_inputs", 2, dict(subsample=(2, 2)), 2, 3, 2, (7, 6), (2, 2), "float64", None),  # rows no window reads
    ("grad_inputs", 2, dict(), 3, 5, 4, (4, 5), (1, 1), "float32", "neg"),      # 1x1
    ("grad_inputs", 2, dict(), 0, 2, 3, (5, 5), (2, 2), "float64", None),       # empty batch
    ("grad_inputs", 3, dict(border_mode="full", subsample=(1, 2, 1), num_groups=2), 2, 2, 4, (3, 4, 5),
     (2, 2, 3), "float64", "T"),
    ("forward", 2, dict(), 2, 0, 3, (4, 4), (2, 2), "float64", None),          # no input channels: zeros
    ("grad_inputs", 2, dict(), 2, 3, 0, (4, 4), (2, 2), "float32", None),      # no filters: zeros
    ("grad_weights", 3, dict(), 1, 3, 2, (3, 3, 3), (3, 3, 3), "float32", "neg"),  # one output position
]


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)


def _build(cases):
    """One graph for all cases: (inputs, outputs, values, oracles, dtypes)."""
    ins, outs, vals, refs, dts = [], [], [], [], []
    for kind, cd, props, B, C, O, S, K, dtype, layout in cases:
        props = dict(props)
        G = props.get("num_groups", 1)
        bm = props.get("border_mode", "valid")
        s = props.get("subsample", (1,) * cd)
        d = props.get("filter_dilation", (1,) * cd)
        flip = props.get("filter_flip", True)
        _, P = _geometry(S, K, bm, s, d)
        x = RNG.standard_normal((B, C) + tuple(S)).astype(dtype)
        w = RNG.standard_normal((O, C // G) + tuple(K)).astype(dtype)
        top = RNG.standard_normal((B, O) + tuple(P)).astype(dtype)
        nd = cd + 2
        if kind == "forward":
            a, b = T.tensor(dtype, (None,) * nd), T.tensor(dtype, (None,) * nd)
            out = ac.AbstractConv(cd, **props)(a, b)
            va, vb = x, w
            ref = ref_forward(x, w, bm, s, d, flip, G)
        elif kind == "grad_weights":
            a, b = T.tensor(dtype, (None,) * nd), T.tensor(dtype, (None,) * nd)
            out = ac.AbstractConv_gradWeights(cd, **props)(a, b, np.asarray(K, dtype="int64"))
            va, vb = x, top
            ref = ref_grad_weights(x, top, K, bm, s, d, flip, G)
        else:
            a, b = T.tensor(dtype, (None,) * nd), T.tensor(dtype, (None,) * nd)
            out = ac.AbstractConv_gradInputs(cd, **props)(a, b, np.asarray(S, dtype="int64"))
            va, vb = w, top
            ref = ref_grad_inputs(w, top, S, bm, s, d, flip, G)
        ins += [a, b]
        outs.append(out)
        vals += [_layout(va, layout), _layout(vb, layout)]
        refs.append(ref)
        dts.append(dtype)
    return ins, outs, vals, refs, dts


@pytest.fixture(scope="module")
def compiled():
    ins, outs, vals, refs, dts = _build(CASES)
    f = function(ins, outs, mode=C_MODE)
    return f, vals, refs, dts


def _check(got, refs, dts, cases):
    for g, r, dt, case in zip(got, refs, dts, cases):
        assert g.dtype == dt and g.shape == r.shape, case
        np.testing.assert_allclose(g, r, err_msg=str(case), **_tol(dt))


def test_conv_c_matches_the_oracle(compiled):
    f, vals, refs, dts = compiled
    got = f(*vals)
    _check(got, refs, dts, CASES)
    for g in got:
        assert g.flags.c_contiguous


def test_conv_c_without_blas_on_two_threads(monkeypatch):
    """dot_c's blocked kernel instead of BLAS, the batch cut over the pool (threads=2, a low threshold;
    without BLAS the pool is always used): the oracle's values, the same bits on every call."""
    monkeypatch.setattr(dot_c, "USE_BLAS", False)
    cases = [CASES[i] for i in (3, 4, 8, 11, 12, 14, 17, 19, 22)]
    ins, outs, vals, refs, dts = _build(cases)
    with config.change_flags(threads=2, threads_min_size=16):
        f = function(ins, outs, mode=C_MODE)
    src = f.maker.linker.source()
    assert "ffg_dot_gemm_float64(" in src and "cblas_" not in src and "#define FFG_THREADS 2\n" in src
    got = [np.array(r, copy=True) for r in f(*vals)]
    _check(got, refs, dts, cases)
    for case, a, b in zip(cases, got, f(*vals)):
        assert a.tobytes() == b.tobytes(), case


THREADED = (0, 3, 8, 9, 11, 14, 15, 17, 21)   # cases with two images or more, every kind, 2d and 3d


def test_conv_c_threads_give_the_same_values(compiled):
    """threads=2 with a low threshold, through BLAS (the pool cuts the batch when the BLAS runs one
    thread): forward and grad_inputs give one thread's bits; grad_weights (a sum over the batch in
    per-chunk parts) the oracle's values, and the same bits on every call."""
    f1, vals1, refs1, dts1 = compiled
    cases = [CASES[i] for i in THREADED]
    vals = [v for i in THREADED for v in vals1[2 * i:2 * i + 2]]
    refs, dts = [refs1[i] for i in THREADED], [dts1[i] for i in THREADED]
    ins, outs, _, _, _ = _build(cases)
    with config.change_flags(threads=2, threads_min_size=16):
        f2 = function(ins, outs, mode=C_MODE)
    assert "#define FFG_THREADS 2\n" in f2.maker.linker.source()
    one = [np.array(r, copy=True) for r in f1(*vals1)]
    one = [one[i] for i in THREADED]
    ob = blas.probe(blas.library().path)
    before = blas.get_threads(ob)
    try:
        blas.set_threads(ob, 1)   # a one-thread BLAS: the pool cuts the batch, gemm runs in its threads
        two = [np.array(r, copy=True) for r in f2(*vals)]
        again = f2(*vals)
    finally:
        blas.set_threads(ob, before)
    three = f2(*vals)             # a threaded BLAS threads each gemm itself
    _check(two, refs, dts, cases)
    _check(three, refs, dts, cases)
    for case, a, b, c in zip(cases, one, two, again):
        assert a.tobytes() == b.tobytes() or case[0] == "grad_weights", case
        assert b.tobytes() == c.tobytes(), case


def test_conv_c_run_time_errors():
    """Bad run-time input is a ValueError naming the op and the numbers; then a good call works. One
    function holds the three ops; each call spoils the inputs of one of them."""
    x, w, top_w, shp_w = T.dtensor4("x"), T.dtensor4("w"), T.dtensor4("top_w"), T.lvector("shp_w")
    w_i, top_i, shp_i = T.dtensor4("w_i"), T.dtensor4("top_i"), T.lvector("shp_i")
    outs = [ac.AbstractConv2d(num_groups=2)(x, w),
            ac.AbstractConv2d_gradWeights(border_mode="half")(x, top_w, shp_w),
            ac.AbstractConv2d_gradInputs(subsample=(2, 2))(w_i, top_i, shp_i)]
    f = function([x, w, top_w, shp_w, w_i, top_i, shp_i], outs, mode=C_MODE)
    X, W = np.ones((2, 4, 5, 5)), RNG.standard_normal((4, 2, 3, 3))
    Tw, Ti = RNG.standard_normal((2, 3, 5, 5)), RNG.standard_normal((2, 4, 2, 2))
    good = dict(x=X, w=W, top_w=Tw, shp_w=np.array([3, 3]), w_i=np.ones((4, 2, 3, 3)), top_i=Ti,
                shp_i=np.array([5, 6]))

    def call(**bad):
        return f(**dict(good, **bad))

    with pytest.raises(ValueError, match=r"AbstractConv2d: the filters have 3 input channels per group, the image 2"):
        call(w=np.ones((4, 3, 3, 3)))
    with pytest.raises(ValueError, match=r"AbstractConv2d: 2 groups must divide .* input channels \(3\)"):
        call(x=np.ones((2, 3, 5, 5)), top_w=np.ones((2, 3, 5, 5)))
    with pytest.raises(ValueError, match=r"the filter \(7x3, dilated\) is larger than the padded input \(5x5\)"):
        call(w=np.ones((4, 2, 7, 3)))
    # grad_weights: shape entries and topgrad's size
    with pytest.raises(ValueError, match=r"invalid filter_shape for gradWeights: 1 entries"):
        call(shp_w=np.array([3]))
    with pytest.raises(ValueError, match=r"invalid filter_shape for gradWeights: entry 1 is 0"):
        call(shp_w=np.array([3, 0]))
    with pytest.raises(ValueError, match=r"invalid filter_shape for gradWeights: topgrad's spatial size is 5x5, "
                                         r"the convolution gives 5x6"):
        call(shp_w=np.array([3, 2]))
    with pytest.raises(ValueError, match=r"topgrad has 1 images, the image 2"):
        call(top_w=np.ones((1, 3, 5, 5)))
    # grad_inputs
    with pytest.raises(ValueError, match=r"invalid input_shape for gradInputs: topgrad's spatial size is 2x2, "
                                         r"the convolution gives 3x2"):
        call(shp_i=np.array([7, 5]))
    with pytest.raises(ValueError, match=r"topgrad has 3 channels, the filters 4"):
        call(top_i=np.ones((2, 3, 2, 2)))
    with pytest.raises(ValueError, match=r"invalid input_shape for gradInputs: entry 0 is -1"):
        call(shp_i=np.array([-1, 5]))
    with pytest.raises(ValueError, match=r"AbstractConv2d_gradWeights: .*(overflow|too big)"):
        call(shp_w=np.array([2 ** 40 + 1, 2 ** 40 + 1]))   # fits 'half' padding; its size does not fit
    fwd, gw, gi = call()
    np.testing.assert_allclose(fwd, ref_forward(X, W, "valid", (1, 1), (1, 1), True, 2), rtol=1e-12)
    np.testing.assert_allclose(gw, ref_grad_weights(X, Tw, (3, 3), "half", (1, 1), (1, 1), True, 1), rtol=1e-12)
    np.testing.assert_allclose(gi, ref_grad_inputs(good["w_i"], Ti, (5, 6), "valid", (2, 2), (1, 1), True, 1),
                               rtol=1e-12)


def test_conv2d_and_its_gradients_in_the_default_mode():
    """conv2d and grad() through the default mode (rewrites, C code): the gradient ops' values."""
    x, w = T.dtensor4("x"), T.dtensor4("w")
    R = RNG.standard_normal((2, 4, 3, 4))
    y = ac.conv2d(x, w, border_mode=(1, 0), subsample=(2, 1), filter_dilation=(1, 2), num_groups=2)
    gx, gw = grad((y * R).sum(), [x, w])
    f = function([x, w], [y, gx, gw])
    X, W = RNG.standard_normal((2, 6, 5, 6)), RNG.standard_normal((4, 3, 2, 2))
    args = ((1, 0), (2, 1), (1, 2), True, 2)
    got = f(X, W)
    np.testing.assert_allclose(got[0], ref_forward(X, W, *args), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got[1], ref_grad_inputs(W, R, (5, 6), *args), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got[2], ref_grad_weights(X, R, (2, 2), *args), rtol=1e-12, atol=1e-12)

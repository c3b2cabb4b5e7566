"""Theano 1.0's convolutions (``ffigraph.tensor.nnet.abstract_conv`` and ``nnet.conv``) against numpy.

The oracle (``ref_conv``, ``ref_grad_weights``, ``ref_grad_inputs``) is written here from the
definition, with an explicit loop over the kernel offsets: for offset ``i`` the strided slice
``xpad[..., i*d : i*d + (P-1)*s + 1 : s]`` meets ``Wf[..., i]``. Each test compiles ONE function
for all its cases, under the Python linker (each op's ``perform``) and the strict C linker (which
refuses a node without C code); the public-function test runs the Python linker and the default
mode (rewrites, C code).
"""
import os
import platform
import sys
import warnings

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import function, grad
from ffigraph.compile.mode import Mode
from ffigraph.tensor import nnet
from ffigraph.tensor.nnet import abstract_conv as A
from ffigraph.tensor.nnet import conv as old_conv

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from test_grad_ops import verify_grads  # noqa: E402  (tests/tensor, beside this folder)


@pytest.fixture(params=["py", "c"])
def mode(request):
    return Mode(linker=request.param, optimizer=None)


# ------------------------------------------------------------------ the numpy oracle


def _pads(border, dk):
    cd = len(dk)
    if border == "valid":
        return [(0, 0)] * cd
    if border == "full":
        return [(k - 1, k - 1) for k in dk]
    if border == "half":
        return [(k // 2, k // 2) for k in dk]
    if isinstance(border, int):
        return [(border, border)] * cd
    return [(b, b) if isinstance(b, int) else tuple(b) for b in border]


def _geometry(S, K, border, sub, dil):
    dk = [(k - 1) * d + 1 for k, d in zip(K, dil)]
    pads = _pads(border, dk)
    P = [(s + pl + pr - k) // st + 1 for s, (pl, pr), k, st in zip(S, pads, dk, sub)]
    return pads, P


def _offset_slices(i, dil, P, sub):
    return tuple(slice(ia * d, ia * d + (p - 1) * s + 1, s) for ia, d, p, s in zip(i, dil, P, sub))


def _flip(w, flip):
    return w[(Ellipsis,) + (slice(None, None, -1),) * (w.ndim - 2)] if flip else w


def ref_conv(x, w, border="valid", sub=None, dil=None, flip=True, G=1):
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    cd = x.ndim - 2
    sub, dil = sub or (1,) * cd, dil or (1,) * cd
    K = w.shape[2:]
    pads, P = _geometry(x.shape[2:], K, border, sub, dil)
    xp = np.pad(x, [(0, 0), (0, 0)] + list(pads))
    wf = _flip(w, flip)
    B, C, O = x.shape[0], x.shape[1], w.shape[0]
    Cg, Og = C // G, O // G
    out = np.zeros((B, O) + tuple(P))
    for i in np.ndindex(*K):
        patch = xp[(slice(None), slice(None)) + _offset_slices(i, dil, P, sub)]
        for g in range(G):
            out[:, g * Og:(g + 1) * Og] += np.einsum("bc...,oc->bo...", patch[:, g * Cg:(g + 1) * Cg],
                                                     wf[(slice(g * Og, (g + 1) * Og), slice(None)) + i])
    return out


def ref_grad_weights(x, top, K, border="valid", sub=None, dil=None, flip=True, G=1):
    x, top = np.asarray(x, np.float64), np.asarray(top, np.float64)
    cd = x.ndim - 2
    sub, dil = sub or (1,) * cd, dil or (1,) * cd
    pads, P = _geometry(x.shape[2:], K, border, sub, dil)
    xp = np.pad(x, [(0, 0), (0, 0)] + list(pads))
    C, O = x.shape[1], top.shape[1]
    Cg, Og = C // G, O // G
    dw = np.zeros((O, Cg) + tuple(K))
    for i in np.ndindex(*K):
        patch = xp[(slice(None), slice(None)) + _offset_slices(i, dil, P, sub)]
        for g in range(G):
            tg, pg = top[:, g * Og:(g + 1) * Og], patch[:, g * Cg:(g + 1) * Cg]
            dw[(slice(g * Og, (g + 1) * Og), slice(None)) + i] = np.einsum(
                "bon,bcn->oc", tg.reshape(tg.shape[:2] + (-1,)), pg.reshape(pg.shape[:2] + (-1,)))
    return _flip(dw, flip)


def ref_grad_inputs(w, top, S, border="valid", sub=None, dil=None, flip=True, G=1):
    w, top = np.asarray(w, np.float64), np.asarray(top, np.float64)
    cd = w.ndim - 2
    sub, dil = sub or (1,) * cd, dil or (1,) * cd
    K = w.shape[2:]
    pads, P = _geometry(S, K, border, sub, dil)
    O, Cg = w.shape[:2]
    Og = O // G
    B = top.shape[0]
    dxp = np.zeros((B, Cg * G) + tuple(s + pl + pr for s, (pl, pr) in zip(S, pads)))
    wf = _flip(w, flip)
    for i in np.ndindex(*K):
        sl = _offset_slices(i, dil, P, sub)
        for g in range(G):
            dxp[(slice(None), slice(g * Cg, (g + 1) * Cg)) + sl] += np.einsum(
                "bo...,oc->bc...", top[:, g * Og:(g + 1) * Og], wf[(slice(g * Og, (g + 1) * Og), slice(None)) + i])
    return dxp[(slice(None), slice(None)) + tuple(slice(pl, pl + s) for s, (pl, _) in zip(S, pads))]


def test_oracle_by_hand():
    # a 1x1-channel 2D case small enough to check by hand: [[1, 2], [3, 4]] * [[1, 0], [0, -1]]
    x = np.array([[[[1.0, 2], [3, 4]]]])
    w = np.array([[[[1.0, 0], [0, -1]]]])
    np.testing.assert_array_equal(ref_conv(x, w, flip=False), [[[[1 - 4]]]])
    np.testing.assert_array_equal(ref_conv(x, w, flip=True), [[[[-1 + 4]]]])
    full = ref_conv(x, w, "full", flip=False)
    np.testing.assert_array_equal(full[0, 0], [[-1, -2, 0], [-3, -3, 2], [0, 3, 4]])


def _tol(dtype, ref):
    scale = max(1.0, float(np.max(np.abs(ref)))) if np.size(ref) else 1.0
    return dict(rtol=1e-5, atol=1e-5 * scale) if dtype == "float32" else dict(rtol=1e-11, atol=1e-12 * scale)


def _layout(a, how):
    """``a`` (a fresh C array) as a non-contiguous view with the same values."""
    if how == "flip":
        return np.ascontiguousarray(a[..., ::-1])[..., ::-1]
    if how == "transposed":
        return np.ascontiguousarray(np.swapaxes(a, -1, -2)).swapaxes(-1, -2)
    if how == "strided":
        big = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
        big[..., ::2] = a
        return big[..., ::2]
    return a


# ------------------------------------------------------------------ forward cases

# (convdim, x shape, w shape, border, subsample, dilation, flip, groups, dtype, layout)
FORWARD = [
    (2, (2, 3, 7, 6), (4, 3, 3, 2), "valid", (1, 1), (1, 1), True, 1, "float64", None),
    (2, (2, 3, 7, 6), (4, 3, 3, 2), "valid", (1, 1), (1, 1), False, 1, "float32", None),
    (2, (1, 2, 5, 5), (3, 2, 3, 3), "full", (1, 1), (1, 1), True, 1, "float64", "flip"),
    (2, (1, 2, 6, 5), (3, 2, 3, 4), "half", (1, 1), (1, 1), False, 1, "float64", "transposed"),
    (2, (3, 2, 6, 7), (2, 2, 2, 3), 1, (2, 2), (1, 1), True, 1, "float32", "strided"),
    (2, (2, 2, 5, 6), (3, 2, 2, 2), (2, 0), (1, 3), (1, 1), True, 1, "float64", None),
    (2, (2, 2, 5, 6), (3, 2, 2, 3), ((1, 2), (0, 3)), (2, 1), (2, 1), False, 1, "float64", None),
    (2, (2, 4, 9, 8), (6, 2, 3, 2), "half", (1, 2), (2, 3), True, 2, "float64", "flip"),
    (2, (1, 3, 6, 5), (6, 1, 3, 3), "valid", (1, 1), (1, 1), True, 3, "float32", None),   # depthwise x2
    (2, (2, 3, 4, 4), (3, 1, 2, 2), "full", (2, 1), (1, 1), False, 3, "float64", None),   # depthwise
    (2, (2, 3, 1, 1), (2, 3, 1, 1), "valid", (1, 1), (1, 1), True, 1, "float64", None),   # 1x1 on 1x1
    (2, (0, 3, 5, 5), (2, 3, 3, 3), "valid", (1, 1), (1, 1), True, 1, "float64", None),   # empty batch
    (2, (2, 3, 5, 5), (0, 3, 3, 3), "half", (1, 1), (1, 1), True, 1, "float32", None),    # no filters
    (3, (2, 2, 4, 5, 3), (3, 2, 2, 3, 2), "valid", (1, 1, 1), (1, 1, 1), True, 1, "float64", None),
    (3, (1, 4, 5, 4, 6), (2, 2, 3, 2, 2), "half", (2, 1, 2), (1, 2, 1), False, 2, "float32", "transposed"),
    (3, (1, 2, 3, 3, 3), (2, 2, 2, 2, 2), ((1, 0), 2, (0, 1)), (1, 2, 1), (1, 1, 2), True, 1, "float64", "flip"),
    (3, (2, 1, 2, 3, 2), (1, 1, 2, 2, 2), "full", (1, 1, 1), (1, 1, 1), True, 1, "float64", None),
]


def _rand(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


def test_forward(mode):
    rng = np.random.default_rng(1)
    syms, outs, vals, refs = [], [], [], []
    for cd, xs, ws, border, sub, dil, flip, G, dtype, layout in FORWARD:
        x = T.tensor(dtype, (None,) * (2 + cd))
        w = T.tensor(dtype, (None,) * (2 + cd))
        fn = A.conv2d if cd == 2 else A.conv3d
        outs.append(fn(x, w, border_mode=border, subsample=sub, filter_flip=flip, filter_dilation=dil,
                       num_groups=G))
        xv, wv = _rand(rng, xs, dtype), _rand(rng, ws, dtype)
        refs.append((ref_conv(xv, wv, border, sub, dil, flip, G), dtype))
        syms += [x, w]
        vals += [_layout(xv, layout), _layout(wv, layout)]
    f = function(syms, outs, mode=mode)
    for case, got, (ref, dtype) in zip(FORWARD, f(*vals), refs):
        assert got.dtype == dtype and got.shape == ref.shape, (case, got.shape, ref.shape)
        np.testing.assert_allclose(got, ref, err_msg=str(case), **_tol(dtype, ref))


def test_static_shapes_and_infer_shape():
    x = T.tensor("float32", (2, 3, 7, 6))
    w = T.tensor("float64", (4, 3, 3, 2))
    y = A.conv2d(x, w, border_mode="half", subsample=(2, 1))
    assert y.dtype == "float64" and y.type.shape == (2, 4, 4, 7)   # an even kernel grows under half
    gi = A.AbstractConv2d_gradInputs(subsample=(2, 2))(w, T.tensor4(), (7, 6))
    assert gi.type.shape == (None, 3, 7, 6)
    gw = A.AbstractConv2d_gradWeights(num_groups=3)(x, T.tensor4(), (3, 2))
    assert gw.type.shape == (None, 1, 3, 2)
    # infer_shape: the shape of the output without computing it
    xs, ws = T.tensor4(), T.tensor4()
    cases = [A.conv2d(xs, ws, border_mode=b, subsample=(2, 3), filter_dilation=(2, 1)) for b in
             ("valid", "full", "half", ((1, 2), (3, 0)))]
    f = function([xs, ws], [c.shape for c in cases], mode=Mode(linker="py"))
    xv, wv = np.zeros((2, 3, 9, 8)), np.zeros((5, 3, 2, 3))
    for b, got in zip(("valid", "full", "half", ((1, 2), (3, 0))), f(xv, wv)):
        assert tuple(got) == ref_conv(xv, wv, b, (2, 3), (2, 1)).shape, b


# ------------------------------------------------------------------ the gradient ops

# (convdim, x shape, w shape, border, subsample, dilation, flip, groups, dtype); S keeps a
# remainder under the stride in some cases, so rows no window reads get 0 in grad_inputs
GRADS = [
    (2, (2, 3, 7, 6), (4, 3, 3, 2), "valid", (2, 1), (1, 1), True, 1, "float64"),
    (2, (1, 2, 5, 6), (3, 2, 2, 3), "full", (1, 2), (1, 1), False, 1, "float32"),
    (2, (2, 4, 8, 7), (6, 2, 3, 2), "half", (2, 2), (2, 1), True, 2, "float64"),
    (2, (2, 3, 5, 5), (3, 1, 2, 2), ((1, 0), (2, 1)), (1, 1), (1, 2), False, 3, "float64"),
    (3, (1, 2, 4, 5, 3), (2, 2, 2, 3, 2), 1, (1, 2, 1), (1, 1, 1), True, 1, "float64"),
    (3, (2, 2, 3, 4, 5), (4, 1, 2, 2, 2), "half", (1, 1, 2), (2, 1, 1), False, 2, "float32"),
]


def test_gradient_ops(mode):
    rng = np.random.default_rng(2)
    syms, outs, vals, refs = [], [], [], []
    for cd, xs, ws, border, sub, dil, flip, G, dtype in GRADS:
        props = dict(border_mode=border, subsample=sub, filter_flip=flip, filter_dilation=dil, num_groups=G)
        xv, wv = _rand(rng, xs, dtype), _rand(rng, ws, dtype)
        top_shape = ref_conv(xv, wv, border, sub, dil, flip, G).shape
        tv = _rand(rng, top_shape, dtype)
        x, w, t = (T.tensor(dtype, (None,) * (2 + cd)) for _ in range(3))
        gw_op = (A.AbstractConv2d_gradWeights if cd == 2 else A.AbstractConv3d_gradWeights)(**props)
        gi_op = (A.AbstractConv2d_gradInputs if cd == 2 else A.AbstractConv3d_gradInputs)(**props)
        fwd = (A.AbstractConv2d if cd == 2 else A.AbstractConv3d)(**props)
        # the shape input: a constant in one, a symbolic vector (the shape of a tensor) in the other
        outs += [gw_op(x, t, ws[2:]), gi_op(w, t, x.shape[2:]), fwd(x, w)]
        syms += [x, w, t]
        vals += [_layout(xv, "flip"), wv, _layout(tv, "transposed")]
        refs.append((xv, wv, tv, ref_grad_weights(xv, tv, ws[2:], border, sub, dil, flip, G),
                     ref_grad_inputs(wv, tv, xs[2:], border, sub, dil, flip, G)))
    f = function(syms, outs, mode=mode)
    got = f(*vals)
    for k, (case, (xv, wv, tv, ref_gw, ref_gi)) in enumerate(zip(GRADS, refs)):
        gw, gi, y = got[3 * k:3 * k + 3]
        dtype = case[-1]
        assert gw.dtype == dtype and gi.dtype == dtype
        np.testing.assert_allclose(gw, ref_gw, err_msg=str(case), **_tol(dtype, ref_gw))
        np.testing.assert_allclose(gi, ref_gi, err_msg=str(case), **_tol(dtype, ref_gi))
        # the adjoint identities, all three outputs from ffigraph: <conv(x, W), t> == <x, gi(W, t)>
        # == <W, gw(x, t)>
        lhs = np.vdot(y.astype(np.float64), tv)
        scale = np.abs(y).sum() * np.abs(tv).max() + 1.0
        rtol = 1e-4 if dtype == "float32" else 1e-11
        assert abs(lhs - np.vdot(xv.astype(np.float64), gi)) <= rtol * scale, case
        assert abs(lhs - np.vdot(wv.astype(np.float64), gw)) <= rtol * scale, case


@pytest.mark.finite_differences
def test_verify_grad(mode):
    if mode.linker_spec == "py" and platform.python_implementation() == "PyPy":
        pytest.skip("the Python linker's finite differences are numpy's arithmetic on either interpreter "
                    "(12 s on PyPy); PyPy runs the C linker's case")
    rng = np.random.default_rng(3)

    def fwd(cd, **props):
        return lambda x, w: (A.conv2d if cd == 2 else A.conv3d)(x, w, **props)

    gw2 = A.AbstractConv2d_gradWeights(border_mode="half", subsample=(2, 1), num_groups=2)
    gi2 = A.AbstractConv2d_gradInputs(border_mode=((1, 0), (0, 2)), subsample=(1, 2), filter_dilation=(2, 1),
                                      filter_flip=False)
    gi3 = A.AbstractConv3d_gradInputs(border_mode="full", subsample=(1, 2, 1))
    cases = [
        ("conv2d", fwd(2, border_mode=(1, 0), subsample=(2, 1), filter_dilation=(1, 2), num_groups=2),
         [rng.standard_normal((1, 4, 3, 4)), rng.standard_normal((2, 2, 2, 2))]),
        ("conv3d", fwd(3, border_mode="half", subsample=(1, 2, 1), filter_flip=False),
         [rng.standard_normal((1, 2, 3, 4, 3)), rng.standard_normal((2, 2, 2, 1, 3))]),
        # second derivatives: the gradient ops' own gradients (both data inputs)
        ("grad_weights", lambda x, t: gw2(x, t, (3, 2)),
         [rng.standard_normal((1, 4, 3, 4)), rng.standard_normal((1, 2, 2, 5))]),
        ("grad_inputs", lambda w, t: gi2(w, t, (5, 6)),
         [rng.standard_normal((3, 2, 2, 2)), rng.standard_normal((1, 3, 4, 4))]),
        ("grad_inputs3d", lambda w, t: gi3(w, t, (2, 4, 2)),
         [rng.standard_normal((2, 1, 2, 2, 1)), rng.standard_normal((1, 2, 3, 3, 2))]),
        # a function of the conv2d grad (double backprop through grad())
        ("conv2d_grad_of_grad", lambda x, w: grad(T.sum(A.conv2d(x, w, border_mode="full") ** 2), x),
         [rng.standard_normal((1, 2, 3, 3)), rng.standard_normal((2, 2, 2, 2))]),
    ]
    verify_grads(cases, mode)


def test_shape_input_is_disconnected():
    x, t = T.tensor4(), T.tensor4()
    shp = T.lvector()
    out = A.AbstractConv2d_gradInputs()(x, t, shp)
    assert out.owner.op.connection_pattern(out.owner) == [[True], [True], [False]]
    g = grad(T.sum(out), [x, t, shp], disconnected_inputs="ignore", return_disconnected="none")
    assert g[2] is None and g[0] is not None


# ------------------------------------------------------------------ errors


def test_make_node_errors():
    x4, w4 = T.tensor4(), T.tensor4()
    with pytest.raises(TypeError, match="img must be 4D tensor"):
        A.conv2d(T.tensor3(), w4)
    with pytest.raises(TypeError, match="kern must be 4D tensor"):
        A.conv2d(x4, T.tensor5())
    with pytest.raises(TypeError, match="img must be 5D tensor"):
        A.conv3d(x4, T.tensor5())
    with pytest.raises(TypeError, match="topgrad must be 4D tensor"):
        A.AbstractConv2d_gradInputs()(w4, T.tensor3(), (3, 3))
    with pytest.raises(TypeError, match="complex"):
        A.conv2d(T.tensor("complex128", (None,) * 4), w4)
    with pytest.raises(ValueError, match="subsample must have 2"):
        A.conv2d(x4, w4, subsample=(1, 1, 1))
    with pytest.raises(ValueError, match="subsample must be ints >= 1"):
        A.conv2d(x4, w4, subsample=(0, 1))
    with pytest.raises(ValueError, match="filter_dilation"):
        A.conv3d(T.tensor5(), T.tensor5(), filter_dilation=(1, 1))
    with pytest.raises(ValueError, match="invalid border_mode"):
        A.conv2d(x4, w4, border_mode=-1)
    with pytest.raises(ValueError, match="invalid border_mode"):
        A.conv2d(x4, w4, border_mode=((1, -1), 0))
    with pytest.raises(ValueError, match="invalid border_mode"):
        A.conv2d(x4, w4, border_mode="same")
    with pytest.raises(ValueError, match="num_groups"):
        A.conv2d(x4, w4, num_groups=0)
    with pytest.raises(NotImplementedError, match="unshared"):
        A.conv2d(x4, w4, unshared=True)
    with pytest.raises(NotImplementedError, match="unshared"):
        A.AbstractConv2d(unshared=True)
    # static channel mismatch
    with pytest.raises(ValueError, match="the filters have 2 input channels per group, the image 3"):
        A.conv2d(T.tensor("float64", (None, 3, None, None)), T.tensor("float64", (None, 2, None, None)))
    with pytest.raises(ValueError, match="invalid input_shape for gradInputs"):
        A.AbstractConv2d_gradInputs()(w4, x4, (3, 0))
    with pytest.raises(ValueError, match="must have 2 entries"):
        A.AbstractConv2d_gradWeights()(x4, x4, (3, 3, 3))
    # the normalized props
    op = A.AbstractConv2d(border_mode=2, subsample=2, filter_dilation=None)
    assert op.border_mode == ((2, 2), (2, 2)) and op.subsample == (2, 2) and op.filter_dilation == (1, 1)
    assert op.imshp == (None,) * 4 and op.kind == "forward" and op.convdim == 2
    assert A.AbstractConv3d(border_mode=(1, (0, 2), 3)).border_mode == ((1, 1), (0, 2), (3, 3))
    assert op.pads((3, 2)) == ((2, 2), (2, 2))
    assert A.AbstractConv2d(border_mode="half", filter_dilation=(2, 1)).pads((3, 4)) == ((2, 2), (2, 2))
    assert A.AbstractConv2d(border_mode="full").pads((3, 4)) == ((2, 2), (3, 3))
    assert A.AbstractConv2d() == A.AbstractConv2d(subsample=(1, 1), border_mode="valid")
    assert A.AbstractConv2d(border_mode=((0, 0), 0)).border_mode == "valid"    # no padding is 'valid' (Theano)
    assert A.AbstractConv2d(imshp=(None, 4, T.lscalar(), 5)).imshp == (None, 4, None, 5)
    with pytest.raises(ValueError, match="imshp must have 4"):
        A.AbstractConv2d(imshp=(1, 2, 3))
    assert (A.AbstractConv2d.kind, A.AbstractConv3d_gradWeights.kind, A.AbstractConv2d_gradInputs.kind) == \
        ("forward", "grad_weights", "grad_inputs")
    assert A.AbstractConv2d_gradInputs().c_impl == "ffigraph.tensor.nnet.conv_c"


def test_run_time_errors(mode):
    x, w, t = T.tensor4(), T.tensor4(), T.tensor4()
    y = A.conv2d(x, w, num_groups=2)
    gi = A.AbstractConv2d_gradInputs(subsample=(2, 1))(w, t, x.shape[2:])
    gw = A.AbstractConv2d_gradWeights()(x, t, w.shape[2:])
    f = function([x, w], y, mode=mode)
    fi = function([x, w, t], gi, mode=mode)
    fw = function([x, w, t], gw, mode=mode)
    ok_x, ok_w = np.ones((1, 4, 5, 5)), np.ones((2, 2, 3, 3))
    bad = [
        ((np.ones((1, 4, 5, 5)), np.ones((2, 3, 3, 3))), "the filters have 3 input channels per group, the image 2"),
        ((np.ones((1, 3, 5, 5)), np.ones((2, 1, 3, 3))), r"2 groups.*\(3\)|3 input channels.*2 groups"),
        ((np.ones((1, 4, 5, 5)), np.ones((3, 2, 3, 3))), r"groups"),
        ((np.ones((1, 4, 2, 5)), np.ones((2, 2, 3, 3))), "larger than the padded input"),
    ]
    for args, msg in bad:
        with pytest.raises(ValueError, match=msg):
            f(*args)
    np.testing.assert_allclose(f(ok_x, ok_w), ref_conv(ok_x, ok_w, G=2))   # still works after the errors
    # gradInputs: topgrad (3 rows) does not match the input (5 rows, stride 2 -> 2 rows)
    with pytest.raises(ValueError, match="invalid input_shape for gradInputs"):
        fi(np.ones((1, 2, 5, 5)), np.ones((2, 2, 2, 2)), np.ones((1, 2, 3, 4)))
    with pytest.raises(ValueError, match="invalid filter_shape for gradWeights"):
        fw(np.ones((1, 2, 5, 5)), np.ones((2, 2, 2, 2)), np.ones((1, 2, 3, 4)))
    with pytest.raises(ValueError):
        fw(np.ones((2, 2, 5, 5)), np.ones((2, 2, 2, 2)), np.ones((1, 2, 4, 4)))  # batch mismatch
    tv = np.ones((1, 2, 2, 4))
    np.testing.assert_allclose(fi(np.ones((1, 2, 5, 5)), np.ones((2, 2, 2, 2)), tv),
                               ref_grad_inputs(np.ones((2, 2, 2, 2)), tv, (5, 5), sub=(2, 1)))


# ------------------------------------------------------------------ the public functions


def ref_bilinear(x, r, r_cols=None):
    """Bilinear interpolation by the integer ratio r (r_cols for the columns) along the last two
    axes, Theano's alignment: input sample m sits at output position ``m * r + (r - 1) // 2``; an
    output position between two samples interpolates them linearly, one outside clamps to the edge
    sample."""
    def axis(a, ax, r):
        a = np.moveaxis(a, ax, -1)
        n = a.shape[-1]
        u = (np.arange(n * r) - (r - 1) // 2) / r
        j0 = np.floor(u).astype(int)
        frac = u - j0
        lo, hi = a[..., np.clip(j0, 0, n - 1)], a[..., np.clip(j0 + 1, 0, n - 1)]
        return np.moveaxis(lo * (1 - frac) + hi * frac, -1, ax)
    return axis(axis(np.asarray(x, np.float64), 2, r), 3, r if r_cols is None else r_cols)


def _bilinear_r2(x):
    x = np.asarray(x, np.float64)
    out = np.zeros(x.shape[:2] + (2 * x.shape[2], 2 * x.shape[3]))
    ext = np.concatenate([x, x[:, :, -1:]], axis=2)
    ext = np.concatenate([ext, ext[:, :, :, -1:]], axis=3)
    rows = np.zeros(x.shape[:2] + (2 * x.shape[2], x.shape[3] + 1))
    rows[:, :, 0::2] = ext[:, :, :-1]
    rows[:, :, 1::2] = (ext[:, :, :-1] + ext[:, :, 1:]) / 2
    out[:, :, :, 0::2] = rows[:, :, :, :-1]
    out[:, :, :, 1::2] = (rows[:, :, :, :-1] + rows[:, :, :, 1:]) / 2
    return out


@pytest.mark.parametrize("linker", ["py", "default"])   # (the default mode runs their C, rewritten)
def test_public_functions(linker):
    mode = None if linker == "default" else Mode(linker=linker, optimizer=None)
    rng = np.random.default_rng(4)
    x, w, t = T.tensor4(), T.tensor4(), T.tensor4()
    x3, w3 = T.tensor3(), T.tensor3()
    xv, wv = rng.standard_normal((2, 3, 6, 5)), rng.standard_normal((4, 3, 3, 2))
    tv = rng.standard_normal((2, 4, 3, 6))            # conv2d(6x5, 3x2, stride (2, 1), half) -> 3x6
    x3v, w3v = rng.standard_normal((2, 4, 7)), rng.standard_normal((6, 2, 3))
    dw = rng.standard_normal((6, 1, 2, 2))            # depthwise, multiplier 2
    pw = rng.standard_normal((5, 6, 1, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        legacy = A.conv2d(x, w, image_shape=(2, 3, 6, 5))
        ignored_kwarg = nnet.conv2d(x, w, border_mode="full", some_old_option=1)
    outs = [
        legacy,
        ignored_kwarg,
        nnet.abstract_conv2d(x, w, None, None, "half", (2, 1)),
        A.conv2d_grad_wrt_inputs(t, w, (2, 3, 6, 5), border_mode="half", subsample=(2, 1)),
        A.conv2d_grad_wrt_weights(x, t, (4, 3, 3, 2), border_mode="half", subsample=(2, 1)),
        # the transposed conv: upsample t (3x5) to 6x5 with the kernel's transpose
        nnet.conv2d_transpose(t, w, (2, 3, 6, 5), border_mode="half", input_dilation=(2, 1)),
        A.causal_conv1d(x3, w3, (6, 2, 3), num_groups=2, filter_dilation=2),
        A.separable_conv2d(x, T.as_tensor_variable(dw), pw, 3, border_mode="half"),
        A.bilinear_upsampling(x, 2),
        A.bilinear_upsampling(x, 3, use_1D_kernel=False),
        # fractional: every q-th sample of the upsampling by p ((6, 4) is reduced to (3, 2))
        A.bilinear_upsampling(x, frac_ratio=((6, 4), (5, 3)), use_1D_kernel=False),
        old_conv.conv2d(x, w, border_mode="full"),
        old_conv.conv2d(x, w, image_shape=(2, 3, 6, 5), filter_shape=(4, 3, 3, 2), subsample=(1, 2)),
    ]
    f = function([x, w, t, x3, w3], outs, mode=mode, on_unused_input="ignore")
    got = f(xv, wv, tv, x3v, w3v)
    refs = [
        ref_conv(xv, wv),
        ref_conv(xv, wv, "full"),
        ref_conv(xv, wv, "half", (2, 1)),
        ref_grad_inputs(wv, tv, (6, 5), "half", (2, 1)),
        ref_grad_weights(xv, tv, (3, 2), "half", (2, 1)),
        ref_grad_inputs(wv, tv, (6, 5), "half", (2, 1)),
        ref_conv(np.pad(x3v, [(0, 0), (0, 0), (4, 0)])[..., None], w3v[..., None], dil=(2, 1), G=2)[..., 0],
        ref_conv(ref_conv(xv, dw, "half", G=3), pw),
        _bilinear_r2(xv),
        ref_bilinear(xv, 3),
        ref_bilinear(xv, 3, 5)[:, :, ::2, ::3],
        ref_conv(xv, wv, "full"),
        ref_conv(xv, wv, sub=(1, 2)),
    ]
    assert got[6].shape == (2, 6, 7)   # causal: the length is kept
    for k, (g, r) in enumerate(zip(got, refs)):
        assert g.shape == r.shape, (k, g.shape, r.shape)
        np.testing.assert_allclose(g, r, rtol=1e-11, atol=1e-11, err_msg=str(k))
    np.testing.assert_allclose(ref_bilinear(xv, 2), _bilinear_r2(xv), rtol=1e-14)   # the two oracles agree


def test_public_function_errors():
    x, w = T.tensor4(), T.tensor4()
    with pytest.raises(ValueError, match="input_shape and image_shape"), pytest.warns(DeprecationWarning):
        A.conv2d(x, w, input_shape=(1, 1, 3, 3), image_shape=(1, 1, 3, 3))
    with pytest.raises(NotImplementedError, match="conv2d: unshared"):
        nnet.conv2d(x, w, unshared=True)
    with pytest.raises(ValueError, match="imshp_logical"):
        A.conv2d(x, w, imshp_logical=(1, 3, 3))
    with pytest.raises(ValueError, match="use_1D_kernel=False"):
        A.bilinear_upsampling(x, frac_ratio=(3, 2))
    with pytest.raises(ValueError, match="frac_ratio must be"):
        A.bilinear_upsampling(x, frac_ratio=(3, 0), use_1D_kernel=False)
    with pytest.raises(ValueError, match="together"):
        A.bilinear_upsampling(x, 2, frac_ratio=(3, 2))
    with pytest.raises(ValueError, match="no ratio"):
        A.bilinear_upsampling(x)
    with pytest.raises(ValueError, match="Input should be 3D"):
        A.causal_conv1d(x, T.tensor3(), (2, 2, 3))
    with pytest.raises(ValueError, match="filter_shape"):
        A.causal_conv1d(T.tensor3(), T.tensor3(), (2, 2, None))
    with pytest.raises(TypeError, match="unexpected keyword"):
        old_conv.conv2d(x, w, no_such_option=1)
    with pytest.raises(ValueError):
        old_conv.conv2d(x, w, border_mode="half")
    with pytest.raises(ValueError, match="input_shape"):
        A.conv2d_grad_wrt_inputs(x, w, (1, 1, None, 3))
    assert nnet.conv2d is A.conv2d and nnet.conv2d_transpose is A.conv2d_transpose
    assert nnet.conv2d_grad_wrt_inputs is A.conv2d_grad_wrt_inputs and nnet.conv3d is A.conv3d


def test_shape_helpers():
    assert A.get_conv_shape_1axis(7, 3, "valid", 1) == 5
    assert A.get_conv_shape_1axis(7, 3, "full", 2) == 5
    assert A.get_conv_shape_1axis(7, 3, "half", 1, 2) == 7
    assert A.get_conv_shape_1axis(7, 3, (1, 2), 2) == 4
    assert A.get_conv_shape_1axis(None, 3, "valid", 1) is None
    assert A.get_conv_output_shape((2, 3, 7, 6), (4, 3, 3, 2), "half", (2, 1), (1, 2)) == (2, 4, 4, 6)
    assert A.get_conv_output_shape((None, 3, 7, None), (4, 3, 3, 2), 1, (1, 1)) == (None, 4, 7, None)
    assert A.get_conv_output_shape((1, 1, 5, 5, 5), (1, 1, 2, 2, 2), (0, 1, (1, 0)), (1, 1, 1)) == (1, 1, 4, 6, 5)
    assert A.get_conv_gradweights_shape((2, 4, 7, 6), (2, 5, 5, 4), "valid", (1, 1), num_groups=2) == (5, 2, 3, 3)
    assert A.get_conv_gradweights_shape((2, 4, 7, 6), (2, 5, 3, 4), "valid", (2, 1)) == (5, 4, None, 3)
    assert A.get_conv_gradinputs_shape((5, 2, 3, 3), (2, 5, 5, 4), "valid", (1, 1), num_groups=2) == (2, 4, 7, 6)
    assert A.get_conv_gradinputs_shape((5, 2, 3, 3), (2, 5, 7, 6), "half", (1, 1)) == (2, 2, 7, 6)
    assert A.check_conv_gradinputs_shape((2, 3, 7, 9), (4, 3, 3, 3), (2, 4, 3, 4), "valid", (2, 2))
    assert A.check_conv_gradinputs_shape((2, 3, 8, 9), (4, 3, 3, 3), (2, 4, 3, 4), "valid", (2, 2))
    assert not A.check_conv_gradinputs_shape((2, 3, 9, 9), (4, 3, 3, 3), (2, 4, 3, 4), "valid", (2, 2))
    assert A.check_conv_gradinputs_shape((2, 3, None, 9), (4, 3, 3, 3), (2, 4, 9, 4), "valid", (2, 2))
    # symbolic sizes give graphs
    s = T.lscalar()
    out = A.get_conv_shape_1axis(s, 3, "full", 2)
    assert function([s], out, mode=Mode(linker="py"))(7) == 5

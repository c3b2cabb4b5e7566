"""The conv epilogue fusion (``ffigraph/rewriting/conv.py``) and its op
(``ffigraph/tensor/nnet/conv_fused.py``, C in ``conv_c.py``), against an independent numpy oracle
(the padded image's windows through ``as_strided``, one einsum per group).

The rewrite must fire on inference graphs (``relu(conv + b)``, ``conv + b``, 3d, batch norm in both
forms), give the oracle's values, and leave alone a convolution whose output (or pre-activation)
something else reads, a training step among them. The op's C covers strides, dilation, padding,
groups, 3d, both epilogues with and without relu, negative-stride vectors, an empty batch and zero
input channels, and reports a vector of the wrong length.
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import ffigraph.tensor as T
from ffigraph import function, grad
from ffigraph.compile.mode import Mode
from ffigraph.gradient import verify_grad
from ffigraph.tensor.nnet import abstract_conv as ac
from ffigraph.tensor.nnet import bn, relu
from ffigraph.tensor.nnet.conv_fused import AbstractConvEpilogue
from ffigraph.tensor.type import TensorType

RNG = np.random.default_rng(4706)
PY = Mode(linker="py", optimizer=None)
C = Mode(linker="c", optimizer=None)


# ---------------------------------------------------------------- the oracle


def conv_ref(x, w, pad=0, stride=1, dil=1, groups=1, flip=True):
    """The convolution of x (B, C, *S) with w (O, C/G, *K), Theano's semantics, in float64."""
    cd = x.ndim - 2
    pad, stride, dil = [(v,) * cd if np.isscalar(v) else tuple(v) for v in (pad, stride, dil)]
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    if flip:
        w = w[(Ellipsis,) + (slice(None, None, -1),) * cd]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    B, Cin = x.shape[:2]
    O, Cg = w.shape[:2]
    K = w.shape[2:]
    P = tuple((xp.shape[2 + a] - (K[a] - 1) * dil[a] - 1) // stride[a] + 1 for a in range(cd))
    st = xp.strides
    win = as_strided(xp, (B, Cin) + P + K, st[:2] + tuple(st[2 + a] * stride[a] for a in range(cd))
                     + tuple(st[2 + a] * dil[a] for a in range(cd)))
    letters = "ijk"[:cd], "pqr"[:cd]
    spec = "bc%s%s,oc%s->bo%s" % (letters[0], letters[1], letters[1], letters[0])
    Og = O // groups
    out = np.empty((B, O) + P)
    for g in range(groups):
        out[:, g * Og:(g + 1) * Og] = np.einsum(spec, win[:, g * Cg:(g + 1) * Cg], w[g * Og:(g + 1) * Og])
    return out


def per_channel(v, cd):
    return np.asarray(v, np.float64).reshape((1, -1) + (1,) * cd)


def relu_ref(v):
    return np.where(v <= 0, 0.0, v)


def epilogue_nodes(f):
    return [n.op for n in f.maker.fgraph.toposort() if isinstance(n.op, AbstractConvEpilogue)]


def plain_convs(f):
    return [n for n in f.maker.fgraph.toposort() if type(n.op) in (ac.AbstractConv2d, ac.AbstractConv3d)]


def close(got, want, dtype):
    tol = 1e-12 if dtype == "float64" else 1e-5
    scale = max(1.0, float(np.max(np.abs(want))) if np.size(want) else 1.0)
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=tol, atol=tol * scale)


# ---------------------------------------------------------------- the rewrite fires on inference graphs


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_fires_on_inference_graphs_and_matches_numpy(dtype):
    ft = T.dtensor4 if dtype == "float64" else T.ftensor4
    vec = T.dvector if dtype == "float64" else T.fvector
    X, W, W2 = ft("x"), ft("W"), ft("W2")
    X5, W5 = TensorType(dtype, (None,) * 5)("x5"), TensorType(dtype, (None,) * 5)("W5")
    b, g, be, m, v = (vec(n) for n in "b g be m v".split())
    bc = lambda p: p.dimshuffle("x", 0, "x", "x")   # noqa: E731
    # 1. relu(conv + b): strides, groups, explicit padding
    y1 = relu(ac.conv2d(X, W, border_mode=(1, 2), subsample=(2, 1), num_groups=2) + bc(b))
    # 2. conv + b alone (b on the left), a correlation with dilation
    y2 = bc(b) + ac.conv2d(X, W2, border_mode="half", filter_flip=False, filter_dilation=(2, 1))
    # 3. relu(batch_normalization_test(conv, ..., 'spatial'))
    y3 = relu(bn.batch_normalization_test(ac.conv2d(X, W2), g, be, m, v, "spatial", epsilon=1e-3))
    # 4. relu of Theano 0.7's elementwise batch_normalization (low_mem and high_mem forms)
    y4 = relu(bn.batch_normalization(ac.conv2d(X, W2, border_mode="full"), bc(g), bc(be), bc(m), bc(v)))
    y5 = relu(bn.batch_normalization(ac.conv2d(X, W2, subsample=(2, 2)), bc(g), bc(be), bc(m), bc(v),
                                     mode="high_mem"))
    # 6. the 3d form
    y6 = relu(ac.conv3d(X5, W5, border_mode="half") + b.dimshuffle("x", 0, "x", "x", "x"))
    # 7. relu of a bare convolution (bias 0); 8. maximum(0, bn(conv)), as examples/lenet_digits.py writes it
    y7 = relu(ac.conv2d(X, W2, border_mode=(0, 1)))
    y8 = T.maximum(0, bn.batch_normalization_test(ac.conv2d(X, W2, subsample=(1, 2)), g, be, m, v, "spatial"))
    # float32: the tolerance of one case of each epilogue (the code paths are float64's)
    keep = range(8) if dtype == "float64" else (0, 2, 5)
    f = function([X, W, W2, X5, W5, b, g, be, m, v], [[y1, y2, y3, y4, y5, y6, y7, y8][k] for k in keep])
    ops = epilogue_nodes(f)
    expected = [(2, "bias", "relu"), (2, "bias", "identity"), (2, "scale_shift", "relu"), (2, "scale_shift", "relu"),
                (2, "scale_shift", "relu"), (3, "bias", "relu"), (2, "bias", "relu"), (2, "scale_shift", "relu")]
    assert sorted((op.convdim, op.epilogue, op.activation) for op in ops) == sorted(expected[k] for k in keep)
    assert not plain_convs(f)
    assert not [n for n in f.maker.fgraph.toposort() if isinstance(n.op, bn.AbstractBatchNormInference)]

    x = RNG.standard_normal((3, 4, 9, 8)).astype(dtype)
    w = RNG.standard_normal((6, 2, 3, 2)).astype(dtype)
    w2 = RNG.standard_normal((6, 4, 3, 3)).astype(dtype)
    x5 = RNG.standard_normal((2, 3, 5, 4, 6)).astype(dtype)
    w5 = RNG.standard_normal((6, 3, 3, 2, 3)).astype(dtype)
    bv, gv, bev, mv = (RNG.standard_normal(6).astype(dtype) for _ in range(4))
    vv = RNG.uniform(0.5, 2.0, 6).astype(dtype)
    # non-contiguous arguments: a reversed image, transposed filters, a reversed vector
    xa = np.ascontiguousarray(x[..., ::-1])[..., ::-1]
    wt = np.ascontiguousarray(w.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
    got = f(xa, wt, w2, x5, w5, bv[::-1].copy()[::-1], gv, bev, mv, vv)

    x64, bb = np.asarray(x, np.float64), per_channel(bv, 2)
    want = [relu_ref(conv_ref(x64, w, pad=(1, 2), stride=(2, 1), groups=2) + bb),
            conv_ref(x64, w2, pad=(2, 1), dil=(2, 1), flip=False) + bb,
            relu_ref((conv_ref(x64, w2) - per_channel(mv, 2)) * per_channel(gv, 2)
                     / np.sqrt(per_channel(vv, 2) + 1e-3) + per_channel(bev, 2)),
            relu_ref((conv_ref(x64, w2, pad=2) - per_channel(mv, 2)) / per_channel(vv, 2) * per_channel(gv, 2)
                     + per_channel(bev, 2)),
            relu_ref((conv_ref(x64, w2, stride=2) - per_channel(mv, 2)) / per_channel(vv, 2) * per_channel(gv, 2)
                     + per_channel(bev, 2)),
            relu_ref(conv_ref(x5, w5, pad=(1, 1, 1)) + per_channel(bv, 3)),
            relu_ref(conv_ref(x64, w2, pad=(0, 1))),
            relu_ref((conv_ref(x64, w2, stride=(1, 2)) - per_channel(mv, 2)) * per_channel(gv, 2)
                     / np.sqrt(per_channel(vv, 2) + 1e-4) + per_channel(bev, 2))]
    for gv_, wv_ in zip(got, [want[k] for k in keep]):
        assert gv_.dtype == dtype
        close(gv_, wv_, dtype)


def test_constant_parameters_fold():
    """The composed scale and shift of constant parameters become constants (computed at compile time)."""
    X, W = T.dtensor4("x"), T.dtensor4("W")
    gv, bev, mv = (RNG.standard_normal(5) for _ in range(3))
    vv = RNG.uniform(0.5, 2.0, 5)
    y = relu(bn.batch_normalization_test(ac.conv2d(X, W), gv, bev, mv, vv, "spatial"))
    f = function([X, W], y)
    nodes = f.maker.fgraph.toposort()
    assert [type(n.op) for n in nodes] == [AbstractConvEpilogue]
    assert all(isinstance(v, T.TensorConstant) for v in nodes[0].inputs[2:])
    x, w = RNG.standard_normal((2, 3, 6, 7)), RNG.standard_normal((5, 3, 2, 3))
    close(f(x, w), relu_ref((conv_ref(x, w) - per_channel(mv, 2)) * per_channel(gv, 2)
                            / np.sqrt(per_channel(vv, 2) + 1e-4) + per_channel(bev, 2)), "float64")


# ---------------------------------------------------------------- ... and not where another node reads


def test_does_not_fire_when_something_else_reads():
    X, W, b = T.dtensor4("x"), T.dtensor4("W"), T.dvector("b")
    conv = ac.conv2d(X, W)
    pre = conv + b.dimshuffle("x", 0, "x", "x")
    # the convolution's output is a result too: nothing fuses
    f = function([X, W, b], [relu(pre), conv])
    assert not epilogue_nodes(f) and len(plain_convs(f)) == 1
    # the pre-activation is a result too: the bias fuses, relu stays elementwise
    conv2 = ac.conv2d(X, W, border_mode="full")
    pre2 = conv2 + b.dimshuffle("x", 0, "x", "x")
    g = function([X, W, b], [relu(pre2), pre2])
    assert [(op.epilogue, op.activation) for op in epilogue_nodes(g)] == [("bias", "identity")]
    x, w, bv = RNG.standard_normal((2, 3, 6, 5)), RNG.standard_normal((4, 3, 3, 2)), RNG.standard_normal(4)
    want = conv_ref(x, w) + per_channel(bv, 2)
    got = f(x, w, bv)
    close(got[0], relu_ref(want), "float64")
    close(got[1], conv_ref(x, w), "float64")
    want2 = conv_ref(x, w, pad=(2, 1)) + per_channel(bv, 2)
    got2 = g(x, w, bv)
    close(got2[0], relu_ref(want2), "float64")
    close(got2[1], want2, "float64")


def test_training_step_is_not_fused_and_its_gradient_unchanged():
    """In a training step relu's gradient reads the pre-activation: no fused relu, and the gradient
    is the unfused graph's (and the oracle's)."""
    X, W, b = T.dtensor4("x"), T.dtensor4("W"), T.dvector("b")
    y = relu(ac.conv2d(X, W, border_mode="half") + b.dimshuffle("x", 0, "x", "x"))
    cost = (y * y).sum()
    f = function([X, W, b], [cost] + grad(cost, [W, b]))
    assert not [op for op in epilogue_nodes(f) if op.activation == "relu"]
    x, w, bv = RNG.standard_normal((2, 3, 6, 5)), RNG.standard_normal((4, 3, 3, 3)), RNG.standard_normal(4)
    pre = conv_ref(x, w, pad=1) + per_channel(bv, 2)
    out = relu_ref(pre)
    dpre = 2 * out * (pre > 0)
    # d cost / d Wf[o, c, k] = sum_{b, p} dpre[b, o, p] * xpad[b, c, p + k]; W is Wf flipped back
    xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)])
    st = xp.strides
    win = as_strided(xp, (2, 3, 6, 5, 3, 3), st + st[2:])
    dw = np.einsum("boij,bcijkl->ockl", dpre, win)[:, :, ::-1, ::-1]
    c, gw, gb = f(x, w, bv)
    close(c, (out ** 2).sum(), "float64")
    close(gw, dw, "float64")
    close(gb, dpre.sum(axis=(0, 2, 3)), "float64")


# ---------------------------------------------------------------- the fused op itself, py and strict C


def _fused_cases():
    """(op, shapes of img and kern, vector count, oracle kwargs) covering the C paths once."""
    E = AbstractConvEpilogue
    return [
        (E(2, border_mode="valid", epilogue="bias", activation="relu"), (2, 3, 7, 6), (4, 3, 3, 2), {}),
        (E(2, border_mode=((1, 0), (2, 1)), subsample=(2, 3), num_groups=3, epilogue="scale_shift",
           activation="relu"), (2, 6, 8, 9), (9, 2, 2, 3), dict(groups=3)),
        (E(2, filter_dilation=(2, 2), filter_flip=False, epilogue="scale_shift"), (1, 2, 7, 7), (3, 2, 2, 2),
         dict(dil=2, flip=False)),
        (E(2, epilogue="bias", activation="relu"), (3, 4, 5, 5), (5, 4, 1, 1), {}),   # the 1x1 branch
        (E(3, border_mode="half", subsample=(1, 2, 1), num_groups=2, epilogue="scale_shift", activation="relu"),
         (2, 4, 4, 5, 3), (6, 2, 3, 3, 1), dict(groups=2)),
        (E(2, epilogue="bias", activation="relu"), (0, 3, 5, 5), (4, 3, 2, 2), {}),   # an empty batch
        (E(2, epilogue="scale_shift", activation="relu"), (2, 0, 4, 4), (4, 0, 2, 2), {}),   # no input channels
    ]


def _oracle_pads(op, kshape):
    if op.border_mode == "valid":
        return 0
    if op.border_mode == "half":
        return tuple(((k - 1) * d + 1) // 2 for k, d in zip(kshape[2:], op.filter_dilation))
    return op.border_mode


def test_fused_op_py_and_c():
    cases = _fused_cases()
    ins, outs, args, wants = [], [], [], []
    for op, ishp, kshp, kw in cases:
        nd = len(ishp)
        img, kern = TensorType("float64", (None,) * nd)(), TensorType("float64", (None,) * nd)()
        nv = 2 if op.epilogue == "scale_shift" else 1
        vecs = [T.dvector() for _ in range(nv)]
        ins += [img, kern] + vecs
        outs.append(op(img, kern, *vecs))
        x, w = RNG.standard_normal(ishp), RNG.standard_normal(kshp)
        vs = [RNG.standard_normal(kshp[0]) for _ in range(nv)]
        # negative-stride vectors and a non-contiguous image
        args += [x[:, :, ::-1][:, :, ::-1], w] + [v[::-1].copy()[::-1] for v in vs]
        pads = _oracle_pads(op, kshp)
        if isinstance(pads, tuple) and pads and isinstance(pads[0], tuple):
            # asymmetric explicit pads: pad by hand, then a valid convolution
            x = np.pad(x, [(0, 0), (0, 0)] + list(pads))
            pads = 0
        if ishp[1] == 0:
            y = np.zeros((ishp[0], kshp[0]) + tuple(s - k + 1 for s, k in zip(ishp[2:], kshp[2:])))
        else:
            y = conv_ref(x, w, pad=pads, stride=op.subsample, **kw)
        cd = nd - 2
        y = y * per_channel(vs[0], cd) + per_channel(vs[1], cd) if nv == 2 else y + per_channel(vs[0], cd)
        wants.append(relu_ref(y) if op.activation == "relu" else y)
    for mode in (PY, C):
        got = function(ins, outs, mode=mode)(*args)
        for g_, w_, (op, ishp, _, _) in zip(got, wants, cases):
            assert g_.shape == w_.shape, (op, ishp)
            close(g_, w_, "float64")


def test_fused_op_errors_then_works():
    op = AbstractConvEpilogue(2, epilogue="scale_shift", activation="relu")
    X, W, s, t = T.dtensor4(), T.dtensor4(), T.dvector(), T.dvector()
    with pytest.raises(TypeError, match="scale, shift"):
        op(X, W, s)
    with pytest.raises(TypeError, match="shift must be a vector"):
        op(X, W, s, T.dmatrix())
    with pytest.raises(ValueError, match="epilogue must be one of"):
        AbstractConvEpilogue(2, epilogue="gelu")
    x, w = RNG.standard_normal((1, 2, 4, 4)), RNG.standard_normal((3, 2, 2, 2))
    for mode in (PY, C):
        f = function([X, W, s, t], op(X, W, s, t), mode=mode)
        with pytest.raises(ValueError, match="shift has 2 entries, the convolution 3 output channels"):
            f(x, w, np.ones(3), np.ones(2))
        close(f(x, w, np.ones(3), np.zeros(3)), relu_ref(conv_ref(x, w)), "float64")


def test_fused_op_gradient_is_the_unfused_graphs():
    op = AbstractConvEpilogue(2, border_mode="half", num_groups=2, epilogue="scale_shift", activation="relu")
    pts = [RNG.standard_normal((2, 4, 4, 3)), RNG.standard_normal((4, 2, 3, 2)), RNG.uniform(0.5, 2, 4),
           RNG.standard_normal(4)]
    verify_grad(lambda x, w, s, t: op(x, w, s, t), pts, mode=PY)


def test_a_program_that_never_convolves_loads_none_of_the_family():
    """The family loads on first use: importing ffigraph and compiling (which imports every
    rewrite, these included) loads no convolution, pooling, batch-norm or neighbours module."""
    code = ("import sys, numpy as np, ffigraph, ffigraph.tensor as T\n"
            "x = T.dmatrix('x')\n"
            "f = ffigraph.function([x], T.nnet.relu(x) + T.nnet.softmax(x))\n"
            "f(np.ones((2, 3)))\n"
            "print(sorted(m for m in sys.modules if m.startswith(('ffigraph.tensor.nnet.', "
            "'ffigraph.tensor.signal', 'ffigraph.cuda'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout

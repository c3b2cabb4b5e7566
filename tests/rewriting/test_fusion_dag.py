"""Fusion keeps the graph acyclic and every Composite as small as the graph it replaces.

- Two fusion groups that each read what the other computes (group A computes a value one node of
  B reads, and B one that A reads) became two fused nodes reading each other: a cycle, which a
  toposort silently broke, so a node read a value computed after it. A hand-written convolution's
  gradient then segfaulted (C), read ``None`` (Python) or missed a key (c|py), and a sigmoid
  program read an empty buffer. Both are compared with numpy here.
- A Composite's text was its expression tree, which doubles with each level of shared
  subexpressions (80,000 characters in that gradient's messages); its C embedded that text once
  per checked step, and emitted one loop per output that reads fewer inputs (also on 0-d loops,
  which are never empty). The sizes are bounded here on a chain of shared subexpressions.
"""
import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph import function
from ffigraph.compile.mode import Mode
from ffigraph.tensor.fused import FusedElemwise

RNG = np.random.default_rng(44)


# ------------------------------------------------------------------ the einsum convolution


def _conv_gradient_graph():
    """The issue's program: a 3x2 'valid' convolution written as a sum of shifted einsums."""
    x, w = T.dtensor4("x"), T.dtensor4("w")
    out = 0
    for i in range(3):
        for j in range(2):
            patch = x[:, :, i:i + x.shape[2] - 2, j:j + x.shape[3] - 1]
            out = out + T.einsum("nchw,fc->nfhw", patch, w[:, :, i, j])
    return [x, w], ffigraph.grad(out.sum(), x)


def _conv_gradient_np(x, w):
    """d sum(out) / dx: each tap (i, j) adds sum_f w[f, :, i, j] over the window it reads."""
    n_rows, n_cols = x.shape[2] - 2, x.shape[3] - 1
    g = np.zeros_like(x)
    taps = w.sum(axis=0)                        # (c, 3, 2)
    for i in range(3):
        for j in range(2):
            g[:, :, i:i + n_rows, j:j + n_cols] += taps[None, :, i, j, None, None]
    return g


CONV_CASES = [
    (RNG.standard_normal((2, 3, 5, 6)), RNG.standard_normal((4, 3, 3, 2))),
    (RNG.standard_normal((1, 2, 3, 2)), RNG.standard_normal((3, 2, 3, 2))),   # one output pixel
    (RNG.standard_normal((1, 1, 4, 4)), RNG.standard_normal((1, 1, 3, 2))),   # the shapes
    (RNG.standard_normal((0, 2, 4, 5)), RNG.standard_normal((2, 2, 3, 2))),   # empty batch
]


@pytest.fixture(scope="module")
def conv_gradient():
    """The default mode's function, and its rewritten graph. The rewrites do not depend on the
    linker, so the other linkers run that same graph (rewriting it again per linker would
    repeat the slowest part of the test four times)."""
    inputs, g = _conv_gradient_graph()
    f = function(inputs, g)
    return f, f.maker.fgraph


# Not "c|py": it builds each of the graph's nodes as the library "c" would build for that node alone
# (tests/linkers/test_c_backend.py), here 371 of them, for the same fused C as "c" runs.
@pytest.mark.parametrize("linker", ["py", "c", "cvm", "default"])
def test_einsum_convolution_gradient_matches_numpy(conv_gradient, linker):
    f, fgraph = conv_gradient
    if linker != "default":
        f = function(fgraph.inputs, fgraph.outputs[0], mode=Mode(linker=linker, optimizer=None))
    for x, w in CONV_CASES:
        np.testing.assert_allclose(f(x, w), _conv_gradient_np(x, w), rtol=1e-12, atol=1e-13)


def test_einsum_convolution_composites_stay_short(conv_gradient):
    """Each fused node's text (what error messages name it by) is a bounded label."""
    _, fgraph = conv_gradient
    fused = [n for n in fgraph.toposort() if isinstance(n.op, FusedElemwise)]
    assert fused
    assert max(len(str(n.op)) for n in fused) <= 260, max((str(n.op) for n in fused), key=len)


# ------------------------------------------------------------------ the sigmoid program


@pytest.mark.parametrize("mode", [None, Mode(linker="py"), Mode(linker="c")], ids=["default", "py", "c"])
def test_sigmoid_value_and_gradient_match_numpy(mode):
    """``s * (1 - s)`` and the gradient of ``sum(s)``, which is the same expression: fusion made
    a group of each that read the other's sigmoid."""
    x = T.dvector("x")
    s = T.sigmoid(x)
    f = function([x], [T.sum(s * (1 - s)), T.grad(T.sum(s), x)], mode=mode)
    for v in [np.array([0.1, 0.2, 0.3]), np.array([-745.0, -40.0, -3.5, -0.0, 0.0, 2.5, 40.0, 745.0]),
              RNG.standard_normal(37) * 10, np.zeros(0)]:
        e = np.exp(-np.abs(v))
        expected = e / (1 + e) ** 2     # s * (1 - s) without the rounding of 1 - s near s = 1
        total, grad = f(v)
        np.testing.assert_allclose(total, np.sum(expected), rtol=1e-12, atol=1e-300)
        np.testing.assert_allclose(grad, expected, rtol=1e-12, atol=1e-300)


# ------------------------------------------------------------------ sizes linear in the graph


def _shared_chain(n, make):
    """``a <- sin(a) * y + a`` n times: each level reads the one before it twice, so the
    expression tree has 2**n leaves while the graph has 3n nodes."""
    x, y = make("x"), make("y")
    a = x
    for _ in range(n):
        a = T.sin(a) * y + a
    return [x, y], a


def _shared_chain_np(x, y, n):
    a = x
    for _ in range(n):
        a = np.sin(a) * y + a
    return a


def _fused_node(n, make):
    inputs, out = _shared_chain(n, make)
    f = function(inputs, out, mode=Mode(linker="py"))
    (node,) = [m for m in f.maker.fgraph.toposort() if isinstance(m.op, FusedElemwise)]
    return f, node


def _sizes(node):
    """(text, listing, C) sizes of the fused node: its str, its debugprint lines, its C."""
    op = node.op
    sub = dict(fail="goto fail;", err="err", allocator="alloc")
    ins = ["in%d" % k for k in range(len(node.inputs))]
    outs = ["out%d" % k for k in range(len(node.outputs))]
    c_text = op.c_code(node, "node0", ins, outs, sub) + op.c_support_code_apply(node, "node0")
    return len(str(op)), sum(map(len, op.inner_debugprint_lines())), len(c_text)


@pytest.mark.parametrize("make", [T.dvector, T.dscalar], ids=["1-d", "0-d"])
def test_composite_sizes_are_linear_in_the_graph(make):
    n = 6
    f, node = _fused_node(n, make)
    shape = (5,) if make is T.dvector else ()
    x, y = RNG.standard_normal(shape), RNG.standard_normal(shape)
    np.testing.assert_allclose(f(x, y), _shared_chain_np(x, y, n), rtol=1e-12)
    assert len(node.op.composite.steps) == 3 * n    # one step per node: nothing copied
    text_6, listing_6, c_6 = _sizes(node)
    assert text_6 <= 200, str(node.op)
    text_12, listing_12, c_12 = _sizes(_fused_node(2 * n, make)[1])
    f_18, node_18 = _fused_node(3 * n, make)
    text_18, listing_18, c_18 = _sizes(node_18)
    if make is T.dvector:   # an error names the node by its label: the message stays short
        with pytest.raises(ValueError, match="cannot be broadcast") as failure:
            f_18(np.ones(3), np.ones(4))
        assert max(map(len, str(failure.value).splitlines())) < 400, str(failure.value)
    assert text_12 <= 200 and text_18 <= 200
    # listing and C grow by the same amount for each n more levels (linear), not by doubling
    assert abs((listing_18 - listing_12) - (listing_12 - listing_6)) <= 0.1 * (listing_12 - listing_6)
    assert abs((c_18 - c_12) - (c_12 - c_6)) <= 0.1 * (c_12 - c_6), (c_6, c_12, c_18)
    assert c_12 <= 2 * c_6


def test_partial_outputs_share_a_loop_and_compute_on_an_empty_loop():
    """Outputs reading fewer inputs than the loop still get their values when another input
    makes the loop empty; those reading the same inputs share one extra loop (C linear)."""
    x, y = T.dmatrix("x"), T.dmatrix("y")
    parts = [T.sin(x), T.cos(x), T.exp(x)]
    f = function([x, y], [(parts[0] + parts[1] + parts[2]) * y] + parts, mode=Mode(linker="c"))
    (node,) = [m for m in f.maker.fgraph.toposort() if isinstance(m.op, FusedElemwise)]
    assert len(node.outputs) == 4
    assert f.c_source().count("ffg_size(2, shape) == 0 &&") == 1
    xv = RNG.standard_normal((1, 3))
    for yv in [np.zeros((0, 3)), RNG.standard_normal((2, 3))]:   # an empty loop, and a full one
        got = f(xv, yv)
        expected = [np.sin(xv), np.cos(xv), np.exp(xv)]
        np.testing.assert_allclose(got[0], sum(expected) * yv, rtol=1e-12)
        for value, want in zip(got[1:], expected):
            np.testing.assert_allclose(value, want, rtol=1e-12)


def test_zero_d_composites_in_c_match_numpy():
    """0-d Composites (the shape arithmetic of most gradients) run as straight-line C; an output
    that takes over an input's memory is written after every read of that input."""
    x, y, f = T.dscalar("x"), T.dscalar("y"), T.fscalar("f")
    i, k = T.lscalar("i"), T.lscalar("k")
    v, w = T.dvector("v"), T.dvector("w")
    d = T.dot(v, w)                   # a 0-d intermediate: the fused node may write into it
    outs = [T.exp(x) * y + T.log(T.abs(y) + 1), i // k, i % k, T.switch(T.eq(i, -1), k // (i * k + 3), i),
            T.sigmoid(x), (x > y) & (i > 0), T.cast(i, "float64") * x, T.tanh(f) * 2, T.exp(d) * d + d]
    fn = function([x, y, f, i, k, v, w], outs, mode=Mode(linker="c"))
    fused = [n for n in fn.maker.fgraph.toposort() if isinstance(n.op, FusedElemwise)]
    assert fused and all(n.outputs[0].ndim == 0 for n in fused)
    assert any(n.op.inplace for n in fused)     # the case the read-before-write order is for
    cases = [(0.25, -1.5, 0.5, 7, -2), (-3.0, 2.0, -1.25, -1, 3), (np.nan, np.inf, np.inf, 5, 0),
             (745.0, -0.0, -20.0, -9, 4)]
    vv, ww = RNG.standard_normal(4), RNG.standard_normal(4)
    with np.errstate(all="ignore"):
        for xv, yv, fv, iv, kv in cases:
            got = fn(xv, yv, np.float32(fv), iv, kv, vv, ww)
            dv = vv.dot(ww)
            sig = np.exp(-np.logaddexp(0, -xv)) if np.isfinite(xv) else np.float64(np.nan)
            expected = [np.exp(xv) * yv + np.log(abs(yv) + 1), np.floor_divide(iv, kv), np.mod(iv, kv),
                        np.floor_divide(kv, iv * kv + 3) if iv == -1 else iv, sig, (xv > yv) & (iv > 0), iv * xv,
                        np.tanh(np.float32(fv)) * np.float32(2), np.exp(dv) * dv + dv]
            for k_out, (value, want) in enumerate(zip(got, expected)):
                want = np.asarray(want)
                assert value.shape == () and value.dtype == outs[k_out].dtype, (k_out, value.dtype)
                rtol = 1e-6 if value.dtype == np.float32 else 1e-12
                np.testing.assert_allclose(value, want, rtol=rtol, err_msg="output %d" % k_out)

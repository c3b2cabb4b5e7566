"""``ffigraph.tensor.nnet.neighbours`` (Theano 1.0's images2neibs / neibs2images) against numpy.

The references below are direct loops over images, patches and patch elements, written from
Theano's description (row ``((b * C + ch) * gc + a) * gd + b'``, column ``i * d + j``; zero padding
for 'half' and 'full', wrapping for 'wrap_centered'); the gradient reference is the same loop
adding each output gradient to the pixel it was read from. Each test compiles ONE function for
all its cases, under the Python linker (``perform``) and the strict C linker; the threaded C
and the default mode (rewrites, shapes inferred) once each.
"""
import os
import sys

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import config, function, grad
from ffigraph.compile.mode import Mode
from ffigraph.tensor import nnet
from ffigraph.tensor.nnet import images2neibs, neibs2images
from ffigraph.tensor.nnet.neighbours import Images2Neibs, Neibs2Images

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # tests/tensor
from test_grad_ops import verify_grads  # noqa: E402

MODES = ("valid", "ignore_borders", "half", "full", "wrap_centered")


@pytest.fixture(params=["py", "c"])
def mode(request):
    return Mode(linker=request.param, optimizer=None)


# ------------------------------------------------------------------ numpy references (loops)


def ref_grid(mode, n, c, s):
    """(patch count, padding before the image) along one axis of length n."""
    if mode == "wrap_centered":
        return len(range(0, n, s)), c // 2
    pad = {"valid": 0, "ignore_borders": 0, "half": c // 2, "full": c - 1}[mode]
    return len(range(0, n + 2 * pad - c + 1, s)), pad


def _walk(x_shape, size, step, mode):
    """Yield (row, col, (n, ch, r, q) or None for padding) for every element of every patch."""
    B, C, H, W = x_shape
    c, d = size
    sr, sc = step
    gc, pr = ref_grid(mode, H, c, sr)
    gd, pc = ref_grid(mode, W, d, sc)
    row = 0
    for n in range(B):
        for ch in range(C):
            for a in range(gc):
                for b in range(gd):
                    for i in range(c):
                        for j in range(d):
                            r, q = a * sr + i - pr, b * sc + j - pc
                            if mode == "wrap_centered":
                                r, q = r % H, q % W
                            inside = 0 <= r < H and 0 <= q < W
                            yield row, i * d + j, (n, ch, r, q) if inside else None
                    row += 1


def ref_images2neibs(x, size, step, mode):
    B, C, H, W = x.shape
    gc = ref_grid(mode, H, size[0], step[0])[0]
    gd = ref_grid(mode, W, size[1], step[1])[0]
    out = np.zeros((B * C * gc * gd, size[0] * size[1]), dtype=x.dtype)
    for row, col, src in _walk(x.shape, size, step, mode):
        if src is not None:
            out[row, col] = x[src]
    return out


def ref_scatter(g, size, step, x_shape, mode):
    """The adjoint: each patch value added to its source pixel (the gradient of images2neibs)."""
    out = np.zeros(x_shape, dtype=g.dtype)
    for row, col, src in _walk(x_shape, size, step, mode):
        if src is not None:
            out[src] += g[row, col]
    return out


# ------------------------------------------------------------------ inputs


def layout(v, kind):
    """``v``'s values in an array of the layout ``kind`` (strides, offsets)."""
    if kind == "c":
        return np.ascontiguousarray(v)
    if kind == "rev":          # negative last stride
        return np.ascontiguousarray(v[..., ::-1])[..., ::-1]
    if kind == "T":            # the last two axes transposed
        return np.ascontiguousarray(v.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
    if kind == "strided":      # every other row of a taller array, batch reversed
        big = np.zeros((v.shape[0], v.shape[1], 2 * v.shape[2], v.shape[3]), dtype=v.dtype)
        big[:, :, ::2] = v[::-1]
        return big[::-1, :, ::2]
    raise ValueError(kind)


# (mode, image shape, neib_shape, neib_step or None, layout): steps below, equal to and above the
# patch, odd sizes, batch 1, patches as large as the image
CASES = [
    ("valid", (2, 3, 6, 8), (2, 2), None, "c"),
    ("valid", (1, 1, 7, 5), (3, 1), (2, 2), "rev"),
    ("valid", (1, 2, 7, 9), (2, 3), (5, 6), "T"),
    ("valid", (1, 1, 3, 4), (3, 4), None, "c"),
    ("ignore_borders", (2, 1, 7, 8), (3, 3), None, "strided"),
    ("ignore_borders", (1, 2, 6, 7), (2, 3), (1, 2), "c"),
    ("ignore_borders", (1, 1, 9, 8), (2, 2), (3, 4), "rev"),
    ("half", (1, 2, 5, 7), (3, 3), (1, 1), "T"),
    ("half", (2, 1, 6, 7), (2, 3), (2, 2), "c"),
    ("half", (1, 1, 7, 9), (3, 3), (3, 4), "strided"),
    ("full", (1, 2, 5, 6), (3, 2), (1, 1), "c"),
    ("full", (2, 1, 7, 7), (3, 3), (2, 2), "rev"),
    ("full", (1, 1, 5, 8), (2, 3), (5, 3), "T"),
    ("wrap_centered", (1, 2, 5, 7), (3, 3), (1, 1), "strided"),
    ("wrap_centered", (2, 1, 6, 7), (3, 5), (2, 3), "c"),
    ("wrap_centered", (1, 1, 7, 5), (5, 3), (4, 4), "rev"),
    ("wrap_centered", (1, 1, 3, 3), (3, 3), None, "T"),
    ("valid", (0, 2, 4, 4), (2, 2), None, "c"),           # empty: no image
    ("half", (2, 0, 5, 5), (3, 3), (2, 2), "rev"),         # empty: no channel
]
# a few again in float32 (the same C, another element type)
CASES32 = [CASES[1], CASES[8], CASES[15]]


def _values(cases, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [layout(rng.standard_normal(shape).astype(dtype), kind) for _, shape, _, _, kind in cases]


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------ the tests


def test_images2neibs_neibs2images_and_gradients(mode):
    """Every mode and step against the loops; the gradient against the loop scatter-add;
    neibs2images(images2neibs(x)) for 'valid' (x back) and 'ignore_borders' (border zeroed);
    Neibs2Images in a mode with overlaps; int32 values; one function for all."""
    all_cases = [(c, "float64") for c in CASES] + [(c, "float32") for c in CASES32]
    inputs, outputs, checks = [], [], []
    values = _values(CASES, "float64") + _values(CASES32, "float32", seed=1)
    rng = np.random.default_rng(2)
    for k, ((m, shape, size, step, _), dtype) in enumerate(all_cases):
        xv = values[k]
        x = T.tensor(dtype, (None,) * 4, name="x%d" % k)
        out = images2neibs(x, size, step, mode=m)
        ref = ref_images2neibs(xv, size, step or size, m)
        proj = T.tensor(dtype, (None, None), name="p%d" % k)
        pv = rng.standard_normal(ref.shape).astype(dtype)
        gx = grad(None, x, known_grads={out: proj})   # the gradient op on its own, no cost nodes
        inputs += [(x, xv), (proj, pv)]
        outputs += [out, gx]
        checks += [("%s %s images2neibs" % (m, dtype), ref, dtype),
                   ("%s %s grad" % (m, dtype), ref_scatter(pv, size, step or size, shape, m), dtype)]
        if step is None and m in ("valid", "ignore_borders"):
            outputs.append(neibs2images(out, size, x.shape, mode=m))
            back = xv.copy()
            if m == "ignore_borders":
                gc, gd = shape[2] // size[0] * size[0], shape[3] // size[1] * size[1]
                back[:, :, gc:] = 0
                back[:, :, :, gd:] = 0
            checks.append(("%s %s round trip" % (m, dtype), back, dtype))
    # the scatter-add directly, overlaps adding up ('half', step 1), and its gradient (a gather)
    g = T.matrix("g")
    gv = rng.standard_normal((1 * 2 * 5 * 7, 9))
    z = Neibs2Images("half")(g, (3, 3), (1, 1), (1, 2, 5, 7))
    q = T.tensor4("q")
    qv = rng.standard_normal((1, 2, 5, 7))
    inputs += [(g, gv), (q, qv)]
    outputs += [z, grad(None, g, known_grads={z: q})]
    checks += [("Neibs2Images half", ref_scatter(gv, (3, 3), (1, 1), (1, 2, 5, 7), "half"), "float64"),
               ("Neibs2Images grad", ref_images2neibs(qv, (3, 3), (1, 1), "half"), "float64")]
    # integers: the gather and the scatter are exact
    xi = T.tensor("int32", (None,) * 4, name="xi")
    xiv = layout(rng.integers(-100, 100, (2, 1, 5, 6)).astype("int32"), "rev")
    gi = T.tensor("int32", (None, None), name="gi")
    giv = rng.integers(-100, 100, (2 * 1 * 5 * 3, 9)).astype("int32")   # 5 x 3 patches an image
    inputs += [(xi, xiv), (gi, giv)]
    outputs += [images2neibs(xi, (3, 2), (1, 2), mode="full"),
                Neibs2Images("wrap_centered")(gi, (3, 3), (1, 2), (2, 1, 5, 6))]
    checks += [("int32 images2neibs", ref_images2neibs(xiv, (3, 2), (1, 2), "full"), "int32"),
               ("int32 Neibs2Images", ref_scatter(giv, (3, 3), (1, 2), (2, 1, 5, 6), "wrap_centered"), "int32")]
    fn = function([v for v, _ in inputs], outputs, mode=mode)
    results = fn(*[val for _, val in inputs])
    assert len(results) == len(checks)
    for (label, ref, dtype), got in zip(checks, results):
        assert got.dtype == np.dtype(dtype), label
        assert got.shape == ref.shape, (label, got.shape, ref.shape)
        if dtype == "int32":
            np.testing.assert_array_equal(got, ref, err_msg=label)
        else:
            np.testing.assert_allclose(got, ref, err_msg=label, **_tol(dtype))
    # a second call reuses the function: the same results
    again = fn(*[val for _, val in inputs])
    for a, b in zip(results, again):
        np.testing.assert_array_equal(a, b)


# good symbolic sizes per mode for a (1, 2, 5, 7) image, and bad ones with the error they give
GOOD = {"valid": ((1, 1), (1, 1)), "ignore_borders": ((2, 3), (2, 2)), "half": ((3, 3), (2, 2)),
        "full": ((3, 2), (2, 1)), "wrap_centered": ((3, 5), (2, 3))}
BAD = [
    ("valid", (2, 2), (2, 2), TypeError, r"Images2Neibs\{valid\}: neib_shape\[0\]=2, neib_step\[0\]=2 and "
     r"ten4.shape\[2\]=5 not consistent: mode 'valid' needs \(5 - 2\) % 2 == 0"),
    ("valid", (6, 1), (1, 1), TypeError, r"neib_shape\[0\]=6 is larger than ten4.shape\[2\]=5: mode 'valid'"),
    ("ignore_borders", (3, 8), (1, 1), TypeError, r"neib_shape\[1\]=8 is larger than ten4.shape\[3\]=7"),
    ("half", (3, 3), (3, 1), TypeError, r"mode 'half' needs \(5 - 3 % 2\) % 3 == 0"),
    ("full", (3, 2), (1, 3), TypeError, r"neib_step\[1\]=3 and ten4.shape\[3\]=7 not consistent: mode 'full' "
     r"needs \(7 \+ 2 - 2\) % 3 == 0"),
    ("wrap_centered", (3, 4), (1, 1), TypeError, r"mode 'wrap_centered' needs odd patch sizes, got "
     r"neib_shape=\(3, 4\)"),
    ("wrap_centered", (7, 3), (1, 1), TypeError, r"neib_shape\[0\]=7 is larger than ten4.shape\[2\]=5"),
    ("half", (0, 3), (1, 1), ValueError, r"Images2Neibs\{half\}: neib_shape must be positive, got \(0, 3\)"),
    ("full", (2, 2), (1, -1), ValueError, r"neib_step must be positive, got \(1, -1\)"),
    ("valid", (1, 1, 1), (1, 1), ValueError, r"neib_shape must hold 2 values, got 3"),
]


def test_run_time_errors_then_the_function_still_works(mode):
    """Sizes read at run time: each mode's errors (Theano's TypeError / ValueError, naming the mode,
    the sizes and what is needed) from perform and C alike; Neibs2Images refuses a patch matrix of
    the wrong shape; after each error the same function gives the right values."""
    xv = np.random.default_rng(3).standard_normal((1, 2, 5, 7))
    syms, outs = [], []
    for m in MODES:
        sh, st = T.lvector("shape_" + m), T.lvector("step_" + m)
        syms += [sh, st]
        outs.append(images2neibs(T.constant(xv), sh, st, mode=m))
    g, nsh, osh = T.matrix("g"), T.lvector("n_shape"), T.lvector("original_shape")
    outs.append(Neibs2Images("valid")(g, nsh, (1, 1), osh))
    fn = function(syms + [g, nsh, osh], outs, mode=mode)
    good = [np.array(v, dtype="int64") for m in MODES for v in GOOD[m]]
    gv, oshv = np.ones((1 * 2 * 4 * 6, 4)), np.array([1, 2, 5, 7])

    def check(got):
        for m, o in zip(MODES, got):
            np.testing.assert_allclose(o, ref_images2neibs(xv, GOOD[m][0], GOOD[m][1], m), rtol=1e-12)
        np.testing.assert_allclose(got[-1], ref_scatter(gv, (2, 2), (1, 1), (1, 2, 5, 7), "valid"), rtol=1e-12)

    check(fn(*good, gv, (2, 2), oshv))
    for m, sh, st, exc, pattern in BAD:
        args = list(good)
        k = 2 * MODES.index(m)
        args[k], args[k + 1] = np.array(sh, dtype="int64"), np.array(st, dtype="int64")
        with pytest.raises(exc, match=pattern):
            fn(*args, gv, (2, 2), oshv)
    big = 2 ** 40
    for bad_g, n_shape, bad_shape, pattern in [
            (np.ones((47, 4)), (2, 2), oshv, r"Neibs2Images\{valid\}: neibs has shape \(47, 4\), but images of shape "
             r"\(1, 2, 5, 7\) have \(48, 4\) patches of neib_shape=\(2, 2\), neib_step=\(1, 1\)"),
            (gv, (2, 2), np.array([1, 2, 5]), r"original_shape must hold 4 values, got 3"),
            (gv, (2, 2), np.array([1, -2, 5, 7]), r"original_shape must not be negative"),
            (gv, (2, 2), np.array([1, 2, 1, 7]), r"neib_shape\[0\]=2 is larger than original_shape\[2\]=1"),
            # sizes whose products overflow an int64: a mismatch, never a wrapped-round product
            (gv, (big, big), np.array([1, 1, big, big]), r"neibs has shape \(48, 4\), but images of shape"),
            (gv, (2, 2), np.array([big, big, 2, 2]), r"neibs has shape \(48, 4\), but images of shape")]:
        with pytest.raises(ValueError if "larger" not in pattern else TypeError, match=pattern):
            fn(*good, bad_g, n_shape, bad_shape)
    check(fn(*good, gv, (2, 2), oshv))


def test_build_time_errors():
    x = T.tensor4("x")
    with pytest.raises(TypeError, match="ten4 must be a 4-d tensor"):
        images2neibs(T.tensor3("x3"), (2, 2))
    with pytest.raises(TypeError, match="neib_shape must be a vector of integers"):
        images2neibs(x, T.vector("f"))
    with pytest.raises(ValueError, match=r"neib_shape must be positive, got \(0, 2\)"):
        images2neibs(x, (0, 2))
    with pytest.raises(ValueError, match=r"neib_step must be positive, got \(2, -1\)"):
        images2neibs(x, (2, 2), (2, -1))
    with pytest.raises(ValueError, match="neib_shape must hold 2 values, got 3"):
        images2neibs(x, (2, 2, 2))
    with pytest.raises(NotImplementedError, match="mode 'same' is not implemented"):
        images2neibs(x, (2, 2), mode="same")
    for m in ("half", "full", "wrap_centered", "nonsense"):
        with pytest.raises(NotImplementedError, match="neibs2images: mode '%s' is not supported" % m):
            neibs2images(T.matrix("n"), (2, 2), x.shape, mode=m)
    with pytest.raises(TypeError, match="neibs must be a matrix"):
        neibs2images(x, (2, 2), x.shape)
    with pytest.raises(ValueError, match="original_shape must hold 4 values"):
        neibs2images(T.matrix("n"), (2, 2), (3, 4, 5))
    # Theano's names resolve lazily from nnet
    assert nnet.images2neibs is images2neibs and nnet.Images2Neibs is Images2Neibs
    assert nnet.neibs2images is neibs2images
    assert str(Images2Neibs("half")) == "Images2Neibs{half}" and Images2Neibs("half") == Images2Neibs("half")


@pytest.mark.finite_differences
def test_verify_grad():
    """Finite differences for the gradient of every mode (overlapping steps, padding, wrapping)
    and for Neibs2Images' own gradient: the mathematics of the gradient graphs, checked under the
    Python linker (the C of the very same gradient ops is checked against the loops above)."""
    rng = np.random.default_rng(4)

    def patches(m, size, step):
        return lambda x: images2neibs(x, size, step, mode=m)

    cases = [("images2neibs %s" % m, patches(m, size, step), [rng.standard_normal(shape)])
             for m, shape, size, step in [("valid", (1, 2, 5, 5), (3, 3), (2, 1)),
                                          ("ignore_borders", (1, 1, 5, 6), (2, 3), (2, 2)),
                                          ("half", (1, 1, 5, 4), (3, 2), (2, 1)),
                                          ("full", (2, 1, 3, 5), (2, 3), (1, 2)),
                                          ("wrap_centered", (1, 1, 4, 5), (3, 3), (1, 2))]]
    cases.append(("Neibs2Images full", lambda g: Neibs2Images("full")(g, (2, 2), (1, 1), (1, 1, 3, 3)),
                  [rng.standard_normal((16, 4))]))
    verify_grads(cases, Mode(linker="py", optimizer=None))


def test_threads_and_default_mode():
    """With the pool on (3 threads, a low threshold) the C cuts patch rows and images into chunks:
    the same values as the loops, bit for bit from call to call. The default mode (rewrites,
    inferred shapes) once."""
    rng = np.random.default_rng(5)
    # (the cut is the same for every mode: three kernels, overlaps, padding and wrapping)
    cases = [("valid", (3, 4, 9, 11), (3, 3), (2, 2)), ("full", (1, 3, 6, 10), (2, 4), (3, 2)),
             ("wrap_centered", (2, 3, 7, 8), (5, 3), (2, 1))]
    with config.change_flags(threads=3, threads_min_size=100):
        syms, outs, vals, refs = [], [], [], []
        for k, (m, shape, size, step) in enumerate(cases):
            x, p = T.tensor4("x%d" % k), T.matrix("p%d" % k)
            out = images2neibs(x, size, step, mode=m)
            xv = layout(rng.standard_normal(shape), "rev" if k % 2 else "c")
            ref = ref_images2neibs(xv, size, step or size, m)
            pv = rng.standard_normal(ref.shape)
            syms += [x, p]
            vals += [xv, pv]
            outs += [out, grad(None, x, known_grads={out: p})]
            refs += [ref, ref_scatter(pv, size, step or size, shape, m)]
        fn = function(syms, outs, mode=Mode(linker="c", optimizer=None))
        got = fn(*vals)
        for a, b in zip(got, refs):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
        for a, b in zip(fn(*vals), got):
            np.testing.assert_array_equal(a, b)
    # the default mode: rewrites, and the shape of the patches inferred without computing them
    x = T.tensor4("x")
    out = images2neibs(x, (3, 3), (2, 1), mode="half")
    back = neibs2images(images2neibs(x, (2, 3), mode="ignore_borders"), (2, 3), x.shape, mode="ignore_borders")
    fn = function([x], [out, out.shape, back])
    xv = rng.standard_normal((2, 3, 7, 9))
    got, shape, back = fn(xv)
    ref = ref_images2neibs(xv, (3, 3), (2, 1), "half")
    np.testing.assert_allclose(got, ref, rtol=1e-12)
    assert tuple(shape) == ref.shape
    expected = xv.copy()
    expected[:, :, 6:] = 0   # the last row: no whole patch of 2 rows covers it
    np.testing.assert_array_equal(back, expected)

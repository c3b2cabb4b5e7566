"""Shape and layout functions (ffigraph/tensor/layout.py) against numpy, under the C and Python linkers.

Each test compiles ONE function for many cases (``run_cases``): every case is an output of it, the
function runs under ``Mode(linker="c")`` with C code for every node, and ``Mode(linker="py")`` must
agree. Inputs are passed as reversed views (negative strides), then as empty arrays.
"""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, function
from ffigraph.gradient import verify_grad

LINKERS = ("py", "c")


def compile_both(syms, outs):
    fns = {}
    for linker in LINKERS:
        f = function(syms, outs, mode=Mode(linker=linker, optimizer=None), on_unused_input="ignore")
        if linker == "c":
            not_c = [(node, how) for node, how in f.maker.linker.describe_nodes() if not how.startswith("C")]
            assert not not_c, not_c
        fns[linker] = f
    return fns


def run_cases(syms, cases, value_sets):
    """``cases``: (label, build(*syms), ref(*values)); every value set runs through one function per linker."""
    fns = compile_both(syms, [build(*syms) for _, build, _ in cases])
    for values in value_sets:
        got = {linker: f(*values) for linker, f in fns.items()}
        for k, (label, _, ref) in enumerate(cases):
            want = np.asarray(ref(*values))
            for linker in LINKERS:
                out = got[linker][k]
                assert out.shape == want.shape, (label, linker, out.shape, want.shape)
                assert out.dtype == want.dtype, (label, linker, out.dtype, want.dtype)
                # the values only move (a sum is the one computed case): float64 at 1e-12, float32 at 1e-5
                rtol = {"float64": 1e-12, "float32": 1e-5}.get(out.dtype.name, 0)
                np.testing.assert_allclose(out, want, rtol=rtol, atol=0, err_msg="%s (%s)" % (label, linker))
    return fns


def reversed_view(a):
    a = np.asarray(a)
    rev = tuple(slice(None, None, -1) for _ in a.shape)
    return np.ascontiguousarray(a[rev])[rev]


def _values(dtype, m_shape, v_len, t_shape, rng):
    def sample(shape):
        if dtype == "bool":
            return reversed_view(rng.integers(0, 2, shape).astype(bool))
        return reversed_view((rng.standard_normal(shape) * 10).astype(dtype))
    return sample(m_shape), sample((v_len,)), sample(t_shape)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
def test_layout_values(dtype):
    m, v, t = T.matrix("m", dtype=dtype), T.vector("v", dtype=dtype), T.tensor3("t", dtype=dtype)
    r, s, rv, sv = T.lscalar("r"), T.lscalar("s"), T.lvector("rv"), T.lvector("sv")
    syms = [m, v, t, r, s, rv, sv]
    cases = [
        ("repeat const", lambda m, v, t, r, s, rv, sv: T.repeat(m, 2, axis=1),
         lambda m, v, t, r, s, rv, sv: np.repeat(m, 2, 1)),
        ("repeat vector", lambda m, v, t, r, s, rv, sv: T.repeat(t, rv, axis=1),
         lambda m, v, t, r, s, rv, sv: np.repeat(t, rv, 1)),
        ("repeat flat", lambda m, v, t, r, s, rv, sv: T.repeat(m, r), lambda m, v, t, r, s, rv, sv: np.repeat(m, r)),
        ("repeat list", lambda m, v, t, r, s, rv, sv: T.repeat(v, [3], axis=-1),
         lambda m, v, t, r, s, rv, sv: np.repeat(v, [3], -1)),
        ("tile", lambda m, v, t, r, s, rv, sv: T.tile(m, (2, 3)), lambda m, v, t, r, s, rv, sv: np.tile(m, (2, 3))),
        ("tile sym", lambda m, v, t, r, s, rv, sv: T.tile(v, (2, r)), lambda m, v, t, r, s, rv, sv: np.tile(v, (2, r))),
        ("tile short", lambda m, v, t, r, s, rv, sv: T.tile(t, (2,)), lambda m, v, t, r, s, rv, sv: np.tile(t, (2,))),
        ("tile ndim", lambda m, v, t, r, s, rv, sv: T.tile(v, [r], ndim=3),
         lambda m, v, t, r, s, rv, sv: np.tile(v, (1, 1, r))),
        ("squeeze axis", lambda m, v, t, r, s, rv, sv: T.squeeze(m[:1], 0), lambda m, v, t, r, s, rv, sv: m[:1][0]),
        ("squeeze static", lambda m, v, t, r, s, rv, sv: T.squeeze(T.atleast_3d(v)), lambda m, v, t, r, s, rv, sv: v),
        ("swapaxes", lambda m, v, t, r, s, rv, sv: T.swapaxes(t, 0, -1),
         lambda m, v, t, r, s, rv, sv: np.swapaxes(t, 0, -1)),
        ("moveaxis", lambda m, v, t, r, s, rv, sv: T.moveaxis(t, 0, -1),
         lambda m, v, t, r, s, rv, sv: np.moveaxis(t, 0, -1)),
        ("moveaxis 2", lambda m, v, t, r, s, rv, sv: T.moveaxis(t, [0, 1], [2, 0]),
         lambda m, v, t, r, s, rv, sv: np.moveaxis(t, [0, 1], [2, 0])),
        ("roll sym", lambda m, v, t, r, s, rv, sv: T.roll(m, s, axis=1),
         lambda m, v, t, r, s, rv, sv: np.roll(m, s, 1)),
        ("roll flat", lambda m, v, t, r, s, rv, sv: T.roll(t, -7), lambda m, v, t, r, s, rv, sv: np.roll(t, -7)),
        ("roll vec", lambda m, v, t, r, s, rv, sv: T.roll(v, s), lambda m, v, t, r, s, rv, sv: np.roll(v, s)),
        ("roll tuple", lambda m, v, t, r, s, rv, sv: T.roll(t, (1, s), axis=(0, 2)),
         lambda m, v, t, r, s, rv, sv: np.roll(t, (1, s), axis=(0, 2))),
        ("flip", lambda m, v, t, r, s, rv, sv: T.flip(t), lambda m, v, t, r, s, rv, sv: np.flip(t)),
        ("flip 1", lambda m, v, t, r, s, rv, sv: T.flip(t, 1), lambda m, v, t, r, s, rv, sv: np.flip(t, 1)),
        ("flip tuple", lambda m, v, t, r, s, rv, sv: T.flip(m, (0, 1)), lambda m, v, t, r, s, rv, sv: m[::-1, ::-1]),
        ("join", lambda m, v, t, r, s, rv, sv: T.join(1, m, m[:, :1]),
         lambda m, v, t, r, s, rv, sv: np.concatenate([m, m[:, :1]], 1)),
        ("hstack", lambda m, v, t, r, s, rv, sv: T.hstack([v, v]), lambda m, v, t, r, s, rv, sv: np.hstack([v, v])),
        ("hstack 2d", lambda m, v, t, r, s, rv, sv: T.hstack([m, m]), lambda m, v, t, r, s, rv, sv: np.hstack([m, m])),
        ("vstack", lambda m, v, t, r, s, rv, sv: T.vstack([m[0], m[-1]]),
         lambda m, v, t, r, s, rv, sv: np.vstack([m[0], m[-1]])),
        ("broadcast_to", lambda m, v, t, r, s, rv, sv: T.broadcast_to(v, (r, v.shape[0])),
         lambda m, v, t, r, s, rv, sv: np.broadcast_to(v, (r, len(v)))),
        ("broadcast_arrays 0", lambda m, v, t, r, s, rv, sv: T.broadcast_arrays(t, t[:1, :, :1])[0],
         lambda m, v, t, r, s, rv, sv: np.broadcast_arrays(t, t[:1, :, :1])[0]),
        ("broadcast_arrays 1", lambda m, v, t, r, s, rv, sv: T.broadcast_arrays(t, t[:1, :, :1])[1],
         lambda m, v, t, r, s, rv, sv: np.broadcast_arrays(t, t[:1, :, :1])[1]),
        ("specify_shape", lambda m, v, t, r, s, rv, sv: T.specify_shape(t, (t.shape[0], None, s + 9)),
         lambda m, v, t, r, s, rv, sv: t),
        ("atleast_1d 0d", lambda m, v, t, r, s, rv, sv: T.atleast_1d(m.sum() if dtype != "bool" else m.any()),
         lambda m, v, t, r, s, rv, sv: np.atleast_1d(m.sum() if dtype != "bool" else m.any())),
        ("atleast_2d", lambda m, v, t, r, s, rv, sv: T.atleast_2d(v), lambda m, v, t, r, s, rv, sv: np.atleast_2d(v)),
        ("atleast_3d (PyTensor: left)", lambda m, v, t, r, s, rv, sv: T.atleast_3d(m),
         lambda m, v, t, r, s, rv, sv: m[None]),
    ]
    for k in range(3):
        cases.append(("split %d" % k, lambda m, v, t, r, s, rv, sv, k=k: T.split(t, sv, 3, axis=-1)[k],
                      lambda m, v, t, r, s, rv, sv, k=k: np.split(t, np.cumsum(sv)[:-1], axis=-1)[k]))
    cases.append(("split const", lambda m, v, t, r, s, rv, sv: T.split(m, [1, m.shape[0] - 1], 2)[1],
                  lambda m, v, t, r, s, rv, sv: m[1:]))
    if dtype in ("float64", "int64"):
        cases.append(("atleast_Nd right", lambda m, v, t, r, s, rv, sv: T.atleast_Nd(v, n=3, left=False),
                      lambda m, v, t, r, s, rv, sv: v[:, None, None]))
    rng = np.random.default_rng(0)
    full = _values(dtype, (3, 4), 5, (2, 3, 4), rng) + (2, -5, np.array([0, 2, 1]), np.array([1, 0, 3]))
    # empty arrays (the specify_shape case wants axis 2 of t to be s + 9)
    empty = _values(dtype, (1, 0), 0, (0, 0, 5), rng) + (0, -4, np.array([], dtype=np.int64), np.array([2, 0, 3]))
    run_cases(syms, cases, [full, empty])


def test_layout_zero_d_and_static_shapes():
    x = T.dscalar("x")
    assert T.roll(x, 3) is x and T.flip(x) is x
    assert T.atleast_3d(x).type.shape == (1, 1, 1)
    assert T.specify_shape(T.dmatrix(), (2, None)).type.shape == (2, None)
    assert T.repeat(T.tensor("float64", (3,)), 2).type.shape == (6,)
    assert T.repeat(T.tensor("float64", (3,)), [1, 2, 0]).type.shape == (3,)
    assert [o.type.shape for o in T.split(T.tensor("float64", (5, None)), [2, 3], 2)] == [(2, None), (3, None)]
    assert T.squeeze(T.row()).type.shape == (None,)
    a, b = T.atleast_1d(x, T.dvector())
    assert a.ndim == b.ndim == 1
    run_cases([x], [("repeat 0d", lambda x: T.repeat(x, 3), lambda x: np.repeat(x, 3)),
                    ("tile 0d", lambda x: T.tile(x, (2, 2)), lambda x: np.tile(x, (2, 2))),
                    ("broadcast_to 0d", lambda x: T.broadcast_to(x, (2,)), lambda x: np.broadcast_to(x, (2,)))],
              [(np.asarray(1.5),)])


def test_layout_errors_then_still_works():
    x, sizes, reps = T.dmatrix("x"), T.lvector("sizes"), T.lvector("reps")
    outs = T.split(x, sizes, 2, axis=0) + [T.repeat(x, reps, axis=1), T.specify_shape(x, (None, 3))]
    fns = compile_both([x, sizes, reps], outs)
    good = (np.ones((3, 3)), np.array([1, 2]), np.array([1, 0, 2]))
    bad = [((np.ones((3, 3)), np.array([1, 1]), good[2]), "split: the split sizes add up to 2, but axis 0"),
           ((np.ones((3, 3)), np.array([4, -1]), good[2]), "split: negative split size -1"),
           ((np.ones((3, 3)), good[1], np.array([1, -2, 0])), "repeat: negative repeat count -2"),
           ((np.ones((3, 3)), good[1], np.array([1, 2])), "repeat: got 2 repeat counts for an axis of length 3"),
           ((np.ones((3, 4)), good[1], np.array([1])), "specify_shape: x has shape (3, 4), expected (None, 3)")]
    for linker, f in fns.items():
        for args, message in bad:
            with pytest.raises(ValueError) as info:
                f(*args)
            assert message in str(info.value), (linker, str(info.value))
            out = f(*good)
            np.testing.assert_array_equal(out[3], np.repeat(good[0], good[2], 1))
    with pytest.raises(ValueError, match="negative repeat count"):
        T.repeat(x, -1)
    with pytest.raises(ValueError, match="add up to 3"):
        T.split(T.tensor("float64", (4,)), [1, 2], 2)
    with pytest.raises(ValueError, match="static length 3"):
        T.specify_shape(T.tensor("float64", (3,)), (4,))


def test_layout_grads():
    """One verify_grad under the C linker through every differentiable layout function."""
    def fun(m, t):
        parts = [T.tile(m, (2, 1)), T.repeat(m, 2, axis=0), T.repeat(t, [1, 0, 2], axis=2), T.roll(m, 1, axis=1),
                 T.roll(t, -2), T.flip(t, (0, 2)), T.squeeze(m[:1], 0), T.swapaxes(t, 0, 2), T.moveaxis(t, 0, 1),
                 T.join(0, m, m * 2), T.stack([m, m]), T.broadcast_to(m[:1], (3, 4)),
                 T.specify_shape(m, (3, None)), T.atleast_3d(m), T.vstack([m, m]), T.hstack([m, m])]
        parts += T.split(t, [1, 3], 2, axis=1)
        return T.concatenate([p.flatten() for p in parts])

    rng = np.random.default_rng(1)
    verify_grad(fun, [rng.standard_normal((3, 4)), rng.standard_normal((2, 4, 3))], mode=Mode(linker="c"))

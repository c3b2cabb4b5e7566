"""choose, permute_row_elements, MakeVector and PyTensor's reduction classes, against numpy,
under the C and Python linkers."""
import numpy as np
import pytest

import ffigraph
import ffigraph.scalar as ps
import ffigraph.tensor as pt
from ffigraph import Mode, function
from ffigraph.tensor.math import All, CAReduce, Max, Prod, ProdWithoutZeros, Sum

LINKERS = {"c": Mode(linker="c"), "py": Mode(linker="py")}


@pytest.fixture(params=sorted(LINKERS))
def mode(request):
    return LINKERS[request.param]


def test_choose_matches_numpy(mode):
    a, m = pt.lmatrix("a"), pt.dtensor3("m")
    listed = [np.arange(3.0), np.full((2, 1), -1.0), np.float64(7.0)]   # broadcast together
    outs = [pt.choose(a, listed, mode=md) for md in ("raise", "wrap", "clip")] + [a.choose(m), pt.choose(a[0], m[:, 0])]
    f = function([a, m], outs, mode=mode)
    inside = np.array([[0, 1, 2], [2, 1, 0]])
    mv = np.arange(18.0).reshape(3, 2, 3)[::-1]
    got = f(inside, mv)
    for g, md in zip(got[:3], ("raise", "wrap", "clip")):
        np.testing.assert_array_equal(g, np.choose(inside, listed, mode=md))
    np.testing.assert_array_equal(got[3], np.choose(inside, mv))
    np.testing.assert_array_equal(got[4], np.choose(inside[0], mv[:, 0]))
    outside = np.array([[-1, 4, 2], [9, 0, -7]])
    wrapped, clipped = function([a], outs[1:3], mode=mode)(outside)
    np.testing.assert_array_equal(wrapped, np.choose(outside, listed, mode="wrap"))
    np.testing.assert_array_equal(clipped, np.choose(outside, listed, mode="clip"))
    with pytest.raises(ValueError, match="outside the choices"):
        function([a], outs[0], mode=mode)(outside)
    with pytest.raises(TypeError, match="integers"):
        pt.choose(pt.dvector(), listed)
    with pytest.raises(ValueError, match="mode"):
        pt.choose(a, listed, mode="nearest")


def test_permute_row_elements(mode):
    x, y, v = pt.dmatrix("x"), pt.lmatrix("y"), pt.dvector("v")
    xv = np.arange(6.0).reshape(2, 3)[:, ::-1]
    yv = np.array([[2, 0, 1], [1, 2, 0]])
    f = function([x, y, v], [pt.permute_row_elements(x, y), pt.permute_row_elements(x, y, inverse=True),
                             pt.permute_row_elements(v, y), pt.permute_row_elements(x, y[0])], mode=mode)
    got = f(xv, yv, np.array([10.0, 20.0, 30.0]))
    np.testing.assert_array_equal(got[0], np.take_along_axis(xv, yv, -1))
    inverse = np.empty_like(xv)
    for i in range(2):
        inverse[i, yv[i]] = xv[i]
    np.testing.assert_array_equal(got[1], inverse)
    np.testing.assert_array_equal(got[2], np.array([10.0, 20.0, 30.0])[yv])
    np.testing.assert_array_equal(got[3], xv[:, yv[0]])
    g = ffigraph.grad((pt.permute_row_elements(x, y) * np.arange(6.0).reshape(2, 3)).sum(), x)
    want = np.zeros((2, 3))
    for i in range(2):
        want[i, yv[i]] = np.arange(6.0).reshape(2, 3)[i]
    np.testing.assert_array_equal(function([x, y], g, mode=mode)(xv, yv), want)


def test_make_vector(mode):
    a, b, s = pt.lscalar("a"), pt.bscalar("b"), pt.dscalar("s")
    ints = pt.make_vector(a, b, 3)
    floats = pt.MakeVector("float64")(s, a)
    assert ints.type.shape == (3,) and ints.dtype == "int64" and isinstance(ints.owner.op, pt.MakeVector)
    f = function([a, b, s], [ints, floats, pt.MakeVector("float32")()], mode=mode)
    got = f(-5, 7, 0.25)
    np.testing.assert_array_equal(got[0], [-5, 7, 3])
    np.testing.assert_array_equal(got[1], [0.25, -5.0])
    assert got[2].shape == (0,) and got[2].dtype == np.float32
    assert ffigraph.grad(pt.MakeVector("float64")(s, s * 2).sum(), s).eval({s: 1.0}, on_unused_input="ignore") == 3.0
    with pytest.raises(TypeError, match="losing values"):
        pt.make_vector(s)
    with pytest.raises(ValueError, match="scalars"):
        pt.make_vector(pt.lvector())


def test_reduction_classes(mode):
    x = pt.dmatrix("x")
    xv = np.array([[1.0, 2.0, 0.5], [-3.0, 4.0, 2.0]])
    nodes = [Prod(axis=0)(x), ProdWithoutZeros(axis=1)(x), Sum()(x), Max(axis=-1)(x),
             CAReduce(ps.mul, axis=(0, 1))(x), All(axis=0)(x > 0)]
    got = function([x], nodes, mode=mode)(xv)
    for g, w in zip(got, [xv.prod(0), xv.prod(1), xv.sum(), xv.max(-1), xv.prod(), (xv > 0).all(0)]):
        np.testing.assert_allclose(g, w, rtol=1e-15)
    # the nodes pt.prod & co. make are of these classes
    assert isinstance(pt.prod(x).owner.op, Prod) and isinstance(pt.sum(x).owner.op, CAReduce)
    assert not isinstance(pt.sum(x).owner.op, Prod) and not isinstance(pt.mean(x).owner.op, CAReduce)
    with pytest.raises(ValueError, match="no reduction by"):
        CAReduce(ps.sin)

"""Small PyTensor API details, each against numpy or against what PyTensor documents:
``Variable.eval(..., mode=...)``, ``Variable.dprint``/``Function.dprint``, the tensor methods
``zeros_like``/``ones_like``/``fill``/``norm``, and ``inc_subtensor``'s ``set_instead_of_inc``,
``ignore_duplicates``, ``inplace`` and ``tolerate_inplace_aliasing``."""
import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph import Mode, function
from ffigraph.compile.function import UnusedInputError


def test_eval_takes_functions_keywords_and_keeps_one_function_per_mode():
    x = T.dvector("x")
    y = x * 2 + 1
    assert y.eval({x: [1.0, 2.0]}, mode="FAST_COMPILE").tolist() == [3.0, 5.0]
    py = Mode(linker="py")
    assert y.eval({"x": [3.0]}, mode=py).tolist() == [7.0]
    assert y.eval({x: [0.5]}).tolist() == [2.0]
    linkers = sorted(str(entry[0].maker.linker.name) for entry in y._eval_cache.values())
    assert len(y._eval_cache) == 3 and "py" in linkers, linkers
    y.eval({"x": [4.0]}, mode=py)
    assert len(y._eval_cache) == 3   # the same mode object: the same function again
    z = T.dscalar("z")
    with pytest.raises(UnusedInputError, match="z"):   # PyTensor's error; on_unused_input reaches function
        y.eval({x: [1.0], z: 2.0})
    assert y.eval({x: [1.0], z: 2.0}, on_unused_input="ignore").tolist() == [3.0]


def test_dprint_of_a_variable_and_of_a_function():
    x = T.dvector("x")
    text = (T.exp(x) + 1).dprint(file="str")
    assert text.splitlines()[0].startswith("Elemwise{add} [id A]") and "Elemwise{exp}" in text and "x [id" in text
    f = function([x], T.exp(x) + 1)
    assert f.dprint(file="str") == ffigraph.printing.debugprint(f, file="str")


def test_zeros_like_ones_like_fill_and_norm_match_numpy():
    x = T.dmatrix("x")
    a = np.array([[3.0, -4.0, 0.5], [-1.0, 2.0, -2.5]])
    f = function([x], [x.zeros_like(), x.ones_like(dtype="int8"), x.fill(2.5), x.norm(2), x.norm(1, axis=0),
                       x.norm(3, axis=1, keepdims=True), x.norm(0.5)])
    zeros, ones, filled, l2, l1, l3, half = f(a)
    np.testing.assert_array_equal(zeros, np.zeros_like(a))
    assert ones.dtype == np.int8 and ones.tolist() == [[1] * 3] * 2
    np.testing.assert_array_equal(filled, np.full_like(a, 2.5))
    np.testing.assert_allclose(l2, np.linalg.norm(a), rtol=1e-15)
    np.testing.assert_allclose(l1, np.abs(a).sum(axis=0), rtol=1e-15)
    np.testing.assert_allclose(l3, np.cbrt((np.abs(a) ** 3).sum(axis=1, keepdims=True)), rtol=1e-14)
    np.testing.assert_allclose(half, np.sqrt(np.abs(a)).sum() ** 2, rtol=1e-14)
    for bad in (0, np.inf, -1, "fro", True):
        with pytest.raises(NotImplementedError, match="positive finite L"):
            x.norm(bad)


@pytest.mark.parametrize("linker", ["py", "c"])
def test_inc_subtensor_flags(linker):
    x, y, i = T.dvector("x"), T.dvector("y"), T.lvector("i")
    outs = [T.inc_subtensor(x[i], y), T.inc_subtensor(x[i], y, ignore_duplicates=True),
            T.inc_subtensor(x[i], y, set_instead_of_inc=True), T.set_subtensor(x[i], y, inplace=True),
            T.inc_subtensor(x[1:3], y[:2], inplace=True, tolerate_inplace_aliasing=True)]
    f = function([x, y, i], outs, mode=Mode(linker=linker))
    xv, yv, iv = np.array([10.0, 20.0, 30.0, 40.0]), np.array([1.0, 2.0, 3.0]), np.array([0, 0, -1])
    accumulated, once, replaced, replaced_too, sliced = f(xv, yv, iv)
    ref = xv.copy()
    np.add.at(ref, iv, yv)
    np.testing.assert_array_equal(accumulated, ref)                 # duplicates add up, as numpy.add.at
    ref = xv.copy()
    ref[iv] += yv
    np.testing.assert_array_equal(once, ref)                        # numpy's x[i] += y: the last one
    ref = xv.copy()
    ref[iv] = yv
    np.testing.assert_array_equal(replaced, ref)
    np.testing.assert_array_equal(replaced_too, ref)
    np.testing.assert_array_equal(sliced, [10.0, 21.0, 32.0, 40.0])
    assert xv.tolist() == [10.0, 20.0, 30.0, 40.0]                  # inplace: the input is never written


def test_function_in_pytensor_argument_order_and_its_attributes():
    x = T.dvector("x")
    s = ffigraph.shared(np.ones(2), "s")
    # Theano's and PyTensor's positional order: (inputs, outputs, mode, updates, givens)
    y = T.dvector("y")
    f = function([x], x + s + y, Mode(linker="py"), [(s, s * 2)], [(y, x * 10)])
    np.testing.assert_array_equal(f(np.array([1.0, 2.0])), [1 + 1 + 10, 2 + 1 + 20])
    np.testing.assert_array_equal(s.get_value(), [2.0, 2.0])
    assert f.get_shared() == [s] and f.unpack_single and f.vm is not None
    f.free()   # (nothing is kept between calls; it still works)
    np.testing.assert_array_equal(f(np.zeros(2)), [2.0, 2.0])
    assert not function([x], [x * 2]).unpack_single
    # rebuild_strict=False: a replacement of another type is taken, the graph rebuilt over it
    v = T.fvector("v")
    with pytest.raises(TypeError, match="rebuild_strict"):
        function([v], x * 2, givens=[(x, v)])
    g = function([v], T.exp(x), givens=[(x, v)], rebuild_strict=False)
    got = g(np.array([0.0, 1.0], np.float32))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.exp(np.float32([0.0, 1.0])), rtol=1e-6)

"""PyTensor's n-ary ``add(a, b, c, ...)`` and ``mul(...)``: folded over the binary ops, one loop after fusion."""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, function


@pytest.mark.parametrize("mode", [pytest.param(None, id="default"), pytest.param(Mode(linker="py"), id="py")])
def test_add_and_mul_take_any_number_of_inputs(mode):
    x, y, z = T.dvector("x"), T.dmatrix("y"), T.lscalar("z")
    a, b, c = np.array([1.0, 2.0]), np.arange(4.0).reshape(2, 2), 3
    f = function([x, y, z], [T.add(x, y, z), T.mul(x, y, z, 0.5), T.add(x, y), T.mul(x), T.add(z)], mode=mode)
    total, product, pair, one, alone = f(a, b, c)
    np.testing.assert_allclose(total, a + b + c)
    np.testing.assert_allclose(product, a * b * c * 0.5)
    np.testing.assert_allclose(pair, a + b)
    np.testing.assert_allclose(one, a)
    assert alone == 3 and alone.dtype == np.int64
    assert T.add(x, y, z).dtype == "float64" and T.mul(z, z, z).dtype == "int64"
    assert T.add(x, 1, 2).ndim == 1 and T.add(1.0, 2.0).eval() == 3.0


def test_chain_fuses_into_one_node():
    xs = [T.dvector("x%d" % i) for i in range(4)]
    f = function(xs, T.add(*xs) * T.mul(*xs))
    assert len(f.maker.fgraph.toposort()) == 1
    vals = [np.full(3, float(i + 1)) for i in range(4)]
    np.testing.assert_allclose(f(*vals), np.full(3, 10.0 * 24.0))


def test_no_inputs_is_refused():
    with pytest.raises(TypeError, match="add needs at least one input"):
        T.add()
    with pytest.raises(TypeError, match="mul needs at least one input"):
        T.mul()

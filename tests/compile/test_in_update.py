"""``In(x, value=..., update=...)``: a value the function keeps and replaces after each call (PyTensor's
input state), ``f[x]``, shared Containers, ``implicit``, and bad uses."""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import In, Mode, function, shared
from ffigraph.linkers.basic import Container

MODES = [pytest.param(None, id="default"), pytest.param(Mode(linker="py"), id="py")]


@pytest.mark.parametrize("mode", MODES)
def test_update_replaces_the_kept_value(mode):
    x, s = T.dvector("x"), T.dvector("s")
    start = np.array([1.0, 2.0])
    f = function([x, In(s, value=start, update=s + x)], s * 10.0, mode=mode)
    one = np.ones(2)
    np.testing.assert_allclose(f(one), [10.0, 20.0])
    np.testing.assert_allclose(f[s], [2.0, 3.0])
    np.testing.assert_allclose(f(one), [20.0, 30.0])
    np.testing.assert_allclose(f["s"], [3.0, 4.0])
    np.testing.assert_allclose(start, [1.0, 2.0])   # the In's value was copied, never overwritten
    # a value passed is used for that call; then the update replaces the kept value
    np.testing.assert_allclose(f(one, np.array([100.0, 100.0])), [1000.0, 1000.0])
    np.testing.assert_allclose(f[1], [101.0, 101.0])
    np.testing.assert_allclose(f(x=one), [1010.0, 1010.0])
    f[s] = [0, 0]   # set by hand: it sticks
    np.testing.assert_allclose(f(one), [0.0, 0.0])
    np.testing.assert_allclose(f[s], [1.0, 1.0])
    assert s in f and "x" not in f


@pytest.mark.parametrize("mode", MODES)
def test_update_alongside_shared_updates_and_outputs(mode):
    x, n = T.dscalar("x"), T.lscalar("n")
    total = shared(np.float64(0.0), name="total")
    f = function([x, In(n, value=0, update=n + 1)], [x * 2.0, n], updates=[(total, total + x)], mode=mode)
    for k in range(3):
        out = f(float(k))
        assert out[0] == 2.0 * k and out[1] == k
    assert f[n] == 3 and total.get_value() == 3.0
    assert str(f.maker.inputs[1]).startswith("In(n -> ")
    # an input with an update is mutable unless told otherwise (PyTensor's default)
    assert f.maker.inputs[1].mutable and not In(x).mutable and not In(n, value=0, update=n, mutable=False).mutable


def test_container_value_is_shared_and_implicit():
    x, s = T.dscalar("x"), T.dscalar("s")
    inc = function([x, In(s, value=10.0, update=s + x)], [])
    # PyTensor's example: a second function works on the first one's state through its Container
    dec = function([x, In(s, value=inc.container[s], update=s - x)], [])
    assert isinstance(inc.container[s], Container)
    inc(2.0)
    assert inc[s] == 12.0 and dec[s] == 12.0
    dec(5.0)
    assert inc[s] == 7.0
    with pytest.raises(TypeError, match="implicit: its value cannot be passed"):
        dec(1.0, 3.0)   # a Container value makes the input implicit by default
    with pytest.raises(TypeError, match="implicit"):
        dec(x=1.0, s=3.0)
    assert inc[s] == 7.0
    free = function([x, In(s, value=inc.container[s], update=s * x, implicit=False)], [])
    free(2.0, 1.5)
    assert inc[s] == 3.0


def test_implicit_plain_value_and_trust_input():
    x, k = T.dscalar("x"), T.dscalar("k")
    f = function([In(k, value=3.0, implicit=True), x], x * k, trust_input=True)
    assert f(x=2.0) == 6.0
    with pytest.raises(TypeError, match="implicit"):
        f(1.0, 2.0)
    f[k] = 4.0
    assert f(x=2.0) == 8.0


def test_bad_in_updates():
    x, s = T.dvector("x"), T.dvector("s")
    with pytest.raises(TypeError, match="needs a value="):
        In(s, update=s + 1.0)
    with pytest.raises(TypeError, match="implicit=True.*needs a value="):
        In(s, implicit=True)
    with pytest.raises(TypeError, match="has type dmatrix, but input s has type dvector: it has 2 dimensions"):
        In(s, value=np.zeros(2), update=T.dmatrix("m"))
    with pytest.raises(TypeError, match="update of input 1 .s.: the new value .* has 0 dimensions where input s has 1"):
        function([x, In(s, value=np.zeros(2), update=1.5)], s)
    f = function([x, In(s, value=np.zeros(2), update=s + x)], s)
    with pytest.raises(KeyError, match="has no stored value"):
        f[x]
    with pytest.raises(KeyError, match="has no input 'y'"):
        f["y"]
    with pytest.raises(NotImplementedError, match="cannot hold"):
        f.export("/nonexistent/never-written")

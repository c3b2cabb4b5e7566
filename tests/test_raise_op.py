"""ffigraph.raise_op (PyTensor's pytensor.raise_op): CheckAndRaise, Assert and assert_op under the
Python and C linkers: the value passes through (never aliasing the caller's array), a failed check
raises the op's own exception with its message, and the function still works afterwards."""
import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph import Mode, function
from ffigraph.raise_op import Assert, CheckAndRaise, assert_op

LINKERS = ["py", "c", "c|py"]


class OwnError(Exception):
    pass


@pytest.mark.parametrize("linker", LINKERS)
def test_checks_pass_the_value_or_raise_their_exception(linker):
    x, n = T.dvector("x"), T.lscalar("n")
    message = 'at most 3 "values", 100% positive\nand\u00e9'
    checked = CheckAndRaise(OwnError, message)(x, x.size <= 3, T.all(x > 0))
    counted = Assert("n must not be 0")(x, n)            # an integer condition: n != 0
    f = function([x, n], [checked * 2, counted, assert_op(x, T.constant(True))], mode=Mode(linker=linker))
    a = np.array([1.0, 2.5])
    doubled, same, plain = f(a, 5)
    np.testing.assert_array_equal(doubled, [2.0, 5.0])
    np.testing.assert_array_equal(same, a)
    assert not np.shares_memory(same, a) and not np.shares_memory(plain, a)
    for bad in ([1.0, 2.0, 3.0, 4.0], [1.0, -1.0]):
        with pytest.raises(OwnError) as info:
            f(np.array(bad), 5)
        assert str(info.value).startswith(message)
    with pytest.raises(AssertionError, match="n must not be 0"):
        f(a, 0)
    np.testing.assert_array_equal(f(np.array([4.0]), 1)[0], [8.0])   # still works


def test_make_node_checks_gradient_and_folding():
    x = T.dvector("x")
    with pytest.raises(TypeError, match="condition 0 must be a scalar"):
        assert_op(x, x > 0)
    with pytest.raises(ValueError, match="exc_type must be an Exception subclass"):
        CheckAndRaise(int, "no")
    assert str(Assert("short")) == "Assert{msg='short'}"
    assert str(CheckAndRaise(ValueError, "m" * 40)) == "CheckAndRaise{raises=ValueError, msg='%s...'}" % ("m" * 27)
    assert Assert("a") == Assert("a") != Assert("b")
    # the gradient goes through the value, none to the condition
    g = ffigraph.grad((assert_op(x, x.size > 0) ** 2).sum(), x)
    np.testing.assert_array_equal(function([x], g)(np.array([1.0, -3.0])), [2.0, -6.0])
    # a check on a constant condition that holds is folded away; one that fails raises when run
    c = T.constant(np.array([1.0, 2.0]))
    ok = function([], assert_op(c, T.constant(True)) * 2)
    assert not any(isinstance(node.op, CheckAndRaise) for node in ok.maker.fgraph.toposort())
    np.testing.assert_array_equal(ok(), [2.0, 4.0])
    failing = function([], assert_op(c, T.constant(False)) * 2)
    with pytest.raises(AssertionError, match="PyTensor Assert failed!"):
        failing()


@pytest.mark.parametrize("linker", ["py", "c"])
def test_unravel_index_and_ravel_multi_index_match_numpy(linker):
    """Both orders, every mode (one for all and one per coordinate), broadcasting coordinates,
    empty and 0-d indices, a symbolic dims vector; numpy's ValueError for what is out of range."""
    i, s, a, b = T.lvector("i"), T.lscalar("s"), T.lvector("a"), T.imatrix("b")
    dims = T.tensor("int64", (3,), name="dims")
    outs = (list(T.unravel_index(i, (3, 4, 5))) + list(T.unravel_index(i, (3, 4, 5), order="F"))
            + list(T.unravel_index(s, dims)) + [T.ravel_multi_index((a, b), (4, 6)),
                                                  T.ravel_multi_index((a, b), (4, 6), mode="wrap", order="F"),
                                                  T.ravel_multi_index([a, b], (4, 6), mode=("clip", "wrap"))])
    f = function([i, s, dims, a, b], outs, mode=Mode(linker=linker))
    iv, av, bv = np.array([0, 7, 59, 33]), np.array([0, 3, 2]), np.array([[1, 5, 0], [2, 2, 2]], np.int32)
    got = f(iv, 17, np.array([2, 3, 4]), av, bv)
    want = (list(np.unravel_index(iv, (3, 4, 5))) + list(np.unravel_index(iv, (3, 4, 5), order="F"))
            + list(np.unravel_index(17, (2, 3, 4))) + [np.ravel_multi_index((av, bv), (4, 6)),
                                                        np.ravel_multi_index((av, bv), (4, 6), mode="wrap", order="F"),
                                                        np.ravel_multi_index((av, bv), (4, 6), mode=("clip", "wrap"))])
    for g, w in zip(got, want):
        assert g.dtype == np.int64
        np.testing.assert_array_equal(g, w)
    # out of range: numpy wraps and clips; its 'raise' is a ValueError, and so is unravel_index's
    far_a, far_b = np.array([-1, 7, 2]), np.array([[1, 9, -3], [2, 2, 2]], np.int32)
    g2 = function([a, b], outs[-2:], mode=Mode(linker=linker))
    np.testing.assert_array_equal(g2(far_a, far_b)[0], np.ravel_multi_index((far_a, far_b), (4, 6), mode="wrap", order="F"))
    np.testing.assert_array_equal(g2(far_a, far_b)[1], np.ravel_multi_index((far_a, far_b), (4, 6), mode=("clip", "wrap")))
    for bad in [(np.array([60]), 0, av, bv), (np.array([-1]), 0, av, bv), (iv, 24, av, bv), (iv, 0, far_a, bv)]:
        with pytest.raises(ValueError, match="out of bounds|invalid entry in coordinates array"):
            f(bad[0], bad[1], np.array([2, 3, 4]), bad[2], bad[3])
    empty = f(np.zeros(0, np.int64), 0, np.array([2, 3, 4]), np.zeros(0, np.int64), np.zeros((2, 0), np.int32))
    assert [e.shape for e in empty[:3]] == [(0,)] * 3 and empty[6].shape == () and empty[9].shape == (2, 0)
    with pytest.raises(TypeError, match="cannot be interpreted as an index"):
        T.unravel_index(T.dvector("x"), (3, 4))
    with pytest.raises(TypeError, match="multi_index must be a tuple or a list"):
        T.ravel_multi_index(a, (4,))
    with pytest.raises(ValueError, match="sequence of length 2"):
        T.ravel_multi_index((a,), (4, 6))

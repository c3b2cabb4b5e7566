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

"""The seed example: a user-defined Type (Double) and Op (BinaryDoubleOp), as in examples/."""
import pytest

from double_op import add, div, double, mul, sub
from ffigraph import function


def test_seed_example_returns_nine(mode):
    x, y, z = double("x"), double("y"), double("z")
    b = mul(add(x, y), z)
    f = function([x, y, z], b, mode=mode)
    assert f(1.0, 2.0, 3.0) == 9.0


def test_double_ops_and_constants(mode):
    x, y = double("x"), double("y")
    f = function([x, y], [sub(x, y), div(x, y), add(x, 2.5)], mode=mode)
    assert f(6.0, 4.0) == [2.0, 1.5, 8.5]


def test_double_filter_and_type_checks(mode):
    x = double("x")
    f = function([x], mul(x, x), mode=mode)
    assert f(3) == 9.0  # ints are filtered to float
    with pytest.raises((TypeError, ValueError), match="'x'"):
        f("abc")
    with pytest.raises(TypeError, match="only works on doubles"):
        import ffigraph.tensor as T

        add(x, T.dscalar())
    assert f(2.0) == 4.0


def test_double_c_code_string_is_the_seed_one():
    x, y = double("x"), double("y")
    node = mul(x, y).owner
    assert node.op.c_code(node, "n", ["a", "b"], ["z"], {}) == "z = a * b;"

"""The seed's user-defined ``Double`` type and ``BinaryDoubleOp`` ops, written as a user would.

Run it: ``python examples/double_op.py`` prints 9.0 for (1.0 + 2.0) * 3.0.
"""
from ffigraph import function
from ffigraph.graph import Apply, Constant, Op, Type


class Double(Type):
    """Values are Python floats."""

    def filter(self, x, strict=False, allow_downcast=None):
        if strict and not isinstance(x, float):
            raise TypeError("Expected a float!")
        return float(x)

    def values_eq_approx(self, x, y, tolerance=1e-4):
        return abs(x - y) / (abs(x) + abs(y)) < tolerance if x != y else True

    def __str__(self):
        return "double"


double = Double()


class BinaryDoubleOp(Op):
    def __init__(self, name, fn, ccode):
        self.name = name
        self.fn = fn
        self.ccode = ccode

    def make_node(self, x, y):
        if isinstance(x, (int, float)):
            x = Constant(double, x)
        if isinstance(y, (int, float)):
            y = Constant(double, y)
        if x.type != double or y.type != double:
            raise TypeError("%s only works on doubles" % self.name)
        return Apply(self, [x, y], [double()])

    def perform(self, node, inp, out):
        x, y = inp
        z, = out
        z[0] = self.fn(x, y)

    def __str__(self):
        return self.name

    def c_code(self, node, name, inp, out, sub):
        x, y = inp
        z, = out
        return self.ccode % locals()


add = BinaryDoubleOp(name="add", fn=lambda x, y: x + y, ccode="%(z)s = %(x)s + %(y)s;")
sub = BinaryDoubleOp(name="sub", fn=lambda x, y: x - y, ccode="%(z)s = %(x)s - %(y)s;")
mul = BinaryDoubleOp(name="mul", fn=lambda x, y: x * y, ccode="%(z)s = %(x)s * %(y)s;")
div = BinaryDoubleOp(name="div", fn=lambda x, y: x / y, ccode="%(z)s = %(x)s / %(y)s;")


def main():
    x, y, z = double("x"), double("y"), double("z")
    b = mul(add(x, y), z)
    f = function([x, y, z], b)
    print(f(1.0, 2.0, 3.0))


if __name__ == "__main__":
    main()

"""The seed's user-defined ``Double`` type and ``BinaryDoubleOp`` ops, written as a user would.

The type's C contract is the seed's, moved to the ABI: a value crosses the
boundary as a 0-d float64 array, ``c_extract`` reads it from its input slot
and ``c_sync`` writes it to its output slot. The ops' ``c_code`` strings are
the seed's, unchanged.

Run it: ``python examples/double_op.py`` prints 9.0 for (1.0 + 2.0) * 3.0
under the Python linker and under the whole-graph C linker.
"""
import numpy as np

from ffigraph import Mode, function
from ffigraph.graph import Apply, Constant, Op, Type
from ffigraph.linkers.c import CType


class Double(Type, CType):
    """Values are Python floats; in C, a ``double``."""

    def filter(self, x, strict=False, allow_downcast=None):
        if strict and not isinstance(x, float):
            raise TypeError("Expected a float!")
        return float(x)

    def values_eq_approx(self, x, y, tolerance=1e-4):
        return abs(x - y) / (abs(x) + abs(y)) < tolerance if x != y else True

    def __str__(self):
        return "double"

    # ---- the C contract

    def c_abi_dtype(self):
        return np.dtype("float64")

    def to_c_value(self, value):
        return np.asarray(value, dtype=np.float64)

    def from_c_value(self, array):
        return float(array)

    def c_declare(self, name, sub, check_input=True):
        return """
        double %(name)s;
        """ % dict(name=name)

    def c_init(self, name, sub):
        return """
        %(name)s = 0.0;
        """ % dict(name=name)

    def c_extract(self, name, sub, check_input=True):
        return """
        if (ffg_read_scalar(%(input)s, %(input_index)s, %(input_name)s, FFG_DTYPE_FLOAT, 64,
                            &%(name)s, %(err)s))
            %(fail)s
        """ % dict(sub, name=name)

    def c_sync(self, name, sub):
        return """
        if (ffg_publish_scalar(%(output)s, &%(name)s, FFG_DTYPE_FLOAT, 64, %(allocator)s, %(err)s))
            %(fail)s
        """ % dict(sub, name=name)

    def c_cleanup(self, name, sub):
        return ""

    def c_literal(self, name, data):
        return "", "%s = %r;" % (name, float(data))

    def c_code_cache_version(self):
        return (1,)


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
    for linker in ("py", "c"):
        f = function([x, y, z], b, mode=Mode(linker=linker))
        print("%s linker: %s" % (linker, f(1.0, 2.0, 3.0)))


if __name__ == "__main__":
    main()

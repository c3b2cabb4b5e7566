"""A small graph, compiled and run: prints the inputs, the outputs and which linker ran."""
import numpy as np

import ffigraph
import ffigraph.tensor as T
from ffigraph import function, shared


def main():
    x = T.dmatrix("x")
    y = T.dvector("y")
    w = shared(np.array([0.5, -1.0, 2.0]), name="w")
    z = T.exp(x) * y + T.tanh(x) - 1.5 * y
    score = T.sum(z * w, axis=1)
    f = function([x, y], [z, score], updates=[(w, w * 0.9)], name="demo")

    xv = np.arange(6.0).reshape(2, 3) / 4
    yv = np.array([1.0, 2.0, 3.0])
    zv, sv = f(xv, yv)
    expected = np.exp(xv) * yv + np.tanh(xv) - 1.5 * yv
    print("ffigraph", ffigraph.__version__)
    print("x =\n%s\ny = %s\nw = [0.5, -1.0, 2.0]" % (xv, yv))
    print("z = exp(x) * y + tanh(x) - 1.5 * y =\n%s" % zv)
    print("score = sum(z * w, axis=1) = %s" % sv)
    print("w after the update w <- 0.9 * w: %s" % w.get_value())
    print("matches numpy:", bool(np.allclose(zv, expected) and np.allclose(sv, (expected * [0.5, -1.0, 2.0]).sum(1))))
    print(f.info())


if __name__ == "__main__":
    main()

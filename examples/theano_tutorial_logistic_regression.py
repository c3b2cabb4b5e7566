"""Theano's tutorial "A Real Example: Logistic Regression", as its users write it, on ffigraph.

``tutorial()`` is the tutorial's program line for line: only the two imports name ffigraph
instead of theano, the data and the results are returned instead of printed, and
``training_steps`` is an argument (10000, the tutorial's, by default). The sigmoid is written
out, ``p_1 = 1 / (1 + T.exp(-T.dot(x, w) - b))``, and the cross-entropy takes ``T.log(p_1)`` and
``T.log(1 - p_1)``: with ``w`` drawn from randn, |x.w| reaches ~80, where ``p_1`` rounds to
exactly 0 or 1. ffigraph recognises the written-out sigmoid (in ``grad`` and in the compiled
graph, ``ffigraph/tensor/stable_forms.py``), so the training stays finite.

``tutorial_floatX()`` is the same program made ready for ``floatX=float32``, as Theano's GPU
section asks: ``T.matrix``/``T.vector`` and data and parameters cast to ``theano.config.floatX``.

Run:  python examples/theano_tutorial_logistic_regression.py [--steps N] [--linker L] [--floatX float32]
(the data are drawn from numpy's global generator, unseeded as in the tutorial; ``--seed`` fixes it).
"""
import argparse

import numpy

import ffigraph as theano
import ffigraph.tensor as T


def tutorial(training_steps=10000):
    """The tutorial's program; returns its data ``D``, the final ``w`` and ``b``, the last step's ``pred``
    and ``err``, ``prediction = predict(D[0])`` and the compiled ``train`` and ``predict``, in a dict."""
    rng = numpy.random

    N = 400                                   # training sample size
    feats = 784                               # number of input variables

    # generate a dataset: D = (input_values, target_class)
    D = (rng.randn(N, feats), rng.randint(size=N, low=0, high=2))

    # Declare Theano symbolic variables
    x = T.dmatrix("x")
    y = T.dvector("y")

    # initialize the weight vector w randomly
    #
    # this and the following bias variable b
    # are shared so they keep their values
    # between training iterations (updates)
    w = theano.shared(rng.randn(feats), name="w")

    # initialize the bias term
    b = theano.shared(0., name="b")

    # Construct Theano expression graph
    p_1 = 1 / (1 + T.exp(-T.dot(x, w) - b))   # Probability that target = 1
    prediction = p_1 > 0.5                    # The prediction thresholded
    xent = -y * T.log(p_1) - (1-y) * T.log(1-p_1)  # Cross-entropy loss function
    cost = xent.mean() + 0.01 * (w ** 2).sum()  # The cost to minimize
    gw, gb = T.grad(cost, [w, b])             # Compute the gradient of the cost
                                              # w.r.t weight vector w and
                                              # bias term b

    # Compile
    train = theano.function(
              inputs=[x,y],
              outputs=[prediction, xent],
              updates=((w, w - 0.1 * gw), (b, b - 0.1 * gb)))
    predict = theano.function(inputs=[x], outputs=prediction)

    # Train
    pred = err = None
    for i in range(training_steps):
        pred, err = train(D[0], D[1])

    return dict(D=D, w=w.get_value(), b=b.get_value(), pred=pred, err=err, prediction=predict(D[0]),
                train=train, predict=predict)


def tutorial_floatX(training_steps=10000):
    """The same program for any ``theano.config.floatX``: symbolic inputs, data and parameters in floatX."""
    rng = numpy.random
    floatX = theano.config.floatX

    N = 400                                   # training sample size
    feats = 784                               # number of input variables

    D = (rng.randn(N, feats).astype(floatX), rng.randint(size=N, low=0, high=2).astype(floatX))

    x = T.matrix("x")                         # floatX, where the tutorial has T.dmatrix
    y = T.vector("y")

    w = theano.shared(rng.randn(feats).astype(floatX), name="w")
    b = theano.shared(numpy.asarray(0., dtype=floatX), name="b")

    p_1 = 1 / (1 + T.exp(-T.dot(x, w) - b))   # Probability that target = 1
    prediction = p_1 > 0.5                    # The prediction thresholded
    xent = -y * T.log(p_1) - (1-y) * T.log(1-p_1)  # Cross-entropy loss function
    cost = xent.mean() + 0.01 * (w ** 2).sum()  # The cost to minimize
    gw, gb = T.grad(cost, [w, b])

    train = theano.function(
              inputs=[x,y],
              outputs=[prediction, xent],
              updates=((w, w - 0.1 * gw), (b, b - 0.1 * gb)))
    predict = theano.function(inputs=[x], outputs=prediction)

    pred = err = None
    for i in range(training_steps):
        pred, err = train(D[0], D[1])

    return dict(D=D, w=w.get_value(), b=b.get_value(), pred=pred, err=err, prediction=predict(D[0]),
                train=train, predict=predict)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10000, help="training steps (default 10000, the tutorial's)")
    parser.add_argument("--linker", default=None, help="linker of the default mode (py, c, cvm, c|py)")
    parser.add_argument("--floatX", choices=("float64", "float32"), default=None,
                        help="run tutorial_floatX() with this floatX instead of the tutorial as written")
    parser.add_argument("--seed", type=int, default=None, help="seed numpy's global generator first")
    args = parser.parse_args(argv)
    flags = {}
    if args.linker:
        flags["linker"] = args.linker
    if args.floatX:
        flags["floatX"] = args.floatX
    if args.seed is not None:
        numpy.random.seed(args.seed)
    with theano.config.change_flags(**flags):
        result = (tutorial_floatX if args.floatX else tutorial)(args.steps)
    D = result["D"]
    print("Final model:")
    print(result["w"])
    print(result["b"])
    print("target values for D:")
    print(D[1])
    print("prediction on D:")
    print(result["prediction"])
    print("training accuracy: %.4f" % numpy.mean(result["prediction"] == D[1]))
    return result


if __name__ == "__main__":
    main()

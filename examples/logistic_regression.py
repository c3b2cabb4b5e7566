"""Logistic regression trained by gradient descent: the classic Theano tutorial, in ffigraph.

The model is  p(y=1 | x) = sigmoid(x.w + b).  It is fitted to synthetic data (400 examples of
784 standard-normal features, labelled 0/1 by a random linear rule) by minimising the mean
cross-entropy plus an L2 penalty 0.01 * |w|^2. ``ffigraph.grad`` derives the gradients; the
compiled ``train`` function does one gradient-descent step per call through its ``updates``.

Run:  python examples/logistic_regression.py [--linker {py,c,cvm,c|py}] [--steps N]
                                              [--save PARAMS.npz] [--quiet] [--profile]
"""
import argparse

import numpy as np

import ffigraph
import ffigraph.tensor as T
from ffigraph.compile.mode import Mode

N, FEATS = 400, 784   # examples, features
SEED = 1234           # the data are the same on every run
LEARNING_RATE = 0.1
L2 = 0.01             # weight of the penalty on |w|^2
LINKERS = ("py", "c", "cvm", "c|py")
REPORT_EVERY = 100


def make_data(n=N, feats=FEATS, seed=SEED):
    """``(x, y)``: standard-normal features and 0/1 labels from a random linear rule."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, feats))
    true_w = rng.standard_normal(feats)
    true_b = rng.standard_normal()
    y = (x @ true_w + true_b > 0).astype(np.float64)
    return x, y


def model(x, y, w, b, tensor=T):
    """The symbolic model: ``(prediction, xent, cost)`` for inputs ``x``, ``y`` and parameters ``w``, ``b``.

    ``tensor`` supplies ``sigmoid``, ``dot`` and ``log`` (``ffigraph.tensor``; PyTensor's
    ``pytensor.tensor`` has the same API, which ``bench/bench_logreg.py`` relies on).
    """
    p_1 = tensor.sigmoid(tensor.dot(x, w) + b)           # probability that the target is 1
    prediction = p_1 > 0.5                               # the prediction, thresholded
    xent = -y * tensor.log(p_1) - (1 - y) * tensor.log(1 - p_1)  # cross-entropy, one per example
    cost = xent.mean() + L2 * (w ** 2).sum()             # the cost to minimise
    return prediction, xent, cost


def build(linker="cvm", feats=FEATS, profile=False):
    """Compile the model under ``linker``: returns ``(train, predict, w, b)``.

    ``train(x, y)`` returns ``[prediction, cost]`` and takes one gradient-descent step on the
    shared parameters ``w`` and ``b``; ``predict(x)`` returns the 0/1 prediction. With
    ``profile``, ``train.profile`` records where its time goes.
    """
    x = T.dmatrix("x")
    y = T.dvector("y")
    w = ffigraph.shared(np.zeros(feats), name="w")   # weights, initialised to 0
    b = ffigraph.shared(0.0, name="b")               # bias
    prediction, xent, cost = model(x, y, w, b)
    gw, gb = ffigraph.grad(cost, [w, b])             # gradient of the cost w.r.t. w and b

    mode = Mode(linker=linker)
    train = ffigraph.function([x, y], [prediction, cost],
                              updates=[(w, w - LEARNING_RATE * gw), (b, b - LEARNING_RATE * gb)],
                              mode=mode, name="train", profile=profile)
    predict = ffigraph.function([x], prediction, mode=mode, name="predict")
    return train, predict, w, b


def train_model(linker="cvm", steps=1000, verbose=False, profile=False):
    """Train on ``make_data()`` for ``steps`` steps: returns ``(w, b, costs, accuracy)``.

    ``costs`` holds the cost computed by each step (before its update); ``accuracy`` is the
    fraction of training examples the final parameters classify correctly. With ``verbose``
    the cost is printed every REPORT_EVERY steps and at the last step; with ``profile`` the
    profile of ``train`` is printed at the end.
    """
    x, y = make_data()
    train, predict, w, b = build(linker, profile=profile)
    costs = []
    for step in range(steps):
        _, cost = train(x, y)
        costs.append(float(cost))
        if verbose and (step % REPORT_EVERY == 0 or step == steps - 1):
            print("step %5d  cost %.6f" % (step, cost))
    accuracy = float(np.mean(predict(x) == y))
    if profile:
        train.profile.summary()
    return w.get_value(), float(b.get_value()), costs, accuracy


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--linker", choices=LINKERS, default="cvm", help="linker to compile with (default cvm)")
    parser.add_argument("--steps", type=int, default=1000, help="gradient-descent steps (default 1000)")
    parser.add_argument("--save", metavar="PATH", help="write the final w and b to this .npz file")
    parser.add_argument("--quiet", action="store_true", help="print only the final accuracy")
    parser.add_argument("--profile", action="store_true", help="print where train's time went")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error("--steps must be >= 1")

    if not args.quiet:
        print("logistic regression: %d examples, %d features, linker %r, %d steps"
              % (N, FEATS, args.linker, args.steps))
    w, b, costs, accuracy = train_model(args.linker, args.steps, verbose=not args.quiet, profile=args.profile)
    if not args.quiet:
        print("final model: |w| = %.6f, b = %.6f" % (np.linalg.norm(w), b))
    print("training accuracy: %.4f" % accuracy)
    if args.save:
        np.savez(args.save, w=w, b=b)
        if not args.quiet:
            print("saved w and b to %s" % args.save)
    return w, b, costs, accuracy


if __name__ == "__main__":
    main()

"""Softmax regression and a two-layer MLP with dropout on scikit-learn's 8x8 digits, in ffigraph.

The classifier of Theano's deep-learning tutorial, written as a PyTensor user writes it:
``softmax`` from ``ffigraph.tensor.special``, the negative log-likelihood through advanced
indexing (``-mean(log(p_y)[arange(n), y])``), dropout masks from a counter-based random stream
(``RandomStream``, Philox4x32-10), gradients from ``ffigraph.grad`` and plain minibatch SGD
through the compiled function's ``updates``.

The data are scikit-learn's ``digits`` (1797 images of 8x8 pixels, 16 grey levels; the file ships
inside the scikit-learn package, nothing is downloaded). Pixels are scaled to [0, 1]; a fixed
permutation keeps 25 % of the images out of training to measure held-out accuracy.

Run:  python examples/mlp_digits.py [--model {softmax,mlp,both}] [--epochs N] [--linker L]
                                    [--quiet]

Needs scikit-learn (``pip install scikit-learn``; CPython only: it has no PyPy wheels).
"""
import argparse

import numpy as np

import ffigraph
import ffigraph.tensor as T
from ffigraph.compile.mode import Mode
from ffigraph.tensor.random.utils import RandomStream
from ffigraph.tensor.special import softmax

SEED = 1234            # data split, initial weights and dropout masks are the same on every run
TEST_FRACTION = 0.25   # share of the images held out
N_HIDDEN = 100         # hidden units of the MLP
KEEP = 0.8             # dropout: probability that a hidden unit is kept while training
LEARNING_RATE = 0.1
L2 = 1e-4              # weight of the penalty on the squared weights
BATCH = 32             # minibatch size
EPOCHS = 40
LINKERS = ("py", "c", "cvm", "c|py")


def load_data(seed=SEED, test_fraction=TEST_FRACTION):
    """``(x_train, y_train, x_test, y_test)``: digits scaled to [0, 1] (float64), labels int64."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = digits.data.astype(np.float64) / 16.0
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(y))
    n_test = int(round(len(y) * test_fraction))
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


def _glorot(rng, n_in, n_out):
    """Glorot-uniform weights, as in the Theano tutorial's hidden layer."""
    bound = np.sqrt(6.0 / (n_in + n_out))
    return rng.uniform(-bound, bound, size=(n_in, n_out))


def nll(p_y, y):
    """Mean negative log-likelihood of integer labels ``y`` under row-wise probabilities ``p_y``."""
    return -T.mean(T.log(p_y)[T.arange(y.shape[0]), y])


def _compile(x, y, cost, params, predict_out, linker, name):
    """``(train, predict)``: ``train(x, y)`` returns the cost and takes one SGD step on ``params``."""
    grads = T.grad(cost, params)
    updates = [(p, p - LEARNING_RATE * g) for p, g in zip(params, grads)]
    mode = Mode(linker=linker)
    train = ffigraph.function([x, y], cost, updates=updates, mode=mode, name=name + "_train")
    predict = ffigraph.function([x], T.argmax(predict_out, axis=1), mode=mode, name=name + "_predict")
    return train, predict


def build_softmax_regression(n_in=64, n_out=10, linker="cvm"):
    """Softmax regression: ``(train, predict, params)``, weights starting at zero."""
    x, y = T.dmatrix("x"), T.lvector("y")
    w = ffigraph.shared(np.zeros((n_in, n_out)), name="w")
    b = ffigraph.shared(np.zeros(n_out), name="b")
    p_y = softmax(T.dot(x, w) + b, axis=-1)
    cost = nll(p_y, y) + L2 * T.sqr(w).sum()
    train, predict = _compile(x, y, cost, [w, b], p_y, linker, "softmax")
    return train, predict, [w, b]


def build_mlp(n_in=64, n_hidden=N_HIDDEN, n_out=10, linker="cvm", seed=SEED):
    """Two-layer MLP (relu hidden layer, dropout on it while training, softmax output).

    Returns ``(train, predict, params, srng)``: ``train`` draws a fresh dropout mask at every call
    (the stream's state is a shared variable that the call advances); ``predict`` uses no dropout.
    """
    rng = np.random.default_rng(seed)
    x, y = T.dmatrix("x"), T.lvector("y")
    w1 = ffigraph.shared(_glorot(rng, n_in, n_hidden), name="w1")
    b1 = ffigraph.shared(np.zeros(n_hidden), name="b1")
    w2 = ffigraph.shared(np.zeros((n_hidden, n_out)), name="w2")
    b2 = ffigraph.shared(np.zeros(n_out), name="b2")
    srng = RandomStream(seed)

    def hidden(inp):
        return T.maximum(T.dot(inp, w1) + b1, 0.0)   # relu

    h = hidden(x)
    keep = srng.binomial(1, KEEP, size=h.shape)      # 1: the unit is kept this step
    h_train = h * keep / KEEP                          # inverted dropout: no rescaling at test time
    p_train = softmax(T.dot(h_train, w2) + b2, axis=-1)
    cost = nll(p_train, y) + L2 * (T.sqr(w1).sum() + T.sqr(w2).sum())
    p_test = softmax(T.dot(hidden(x), w2) + b2, axis=-1)
    train, predict = _compile(x, y, cost, [w1, b1, w2, b2], p_test, linker, "mlp")
    return train, predict, [w1, b1, w2, b2], srng


def fit(train, x, y, epochs=EPOCHS, batch=BATCH, seed=SEED, verbose=False):
    """Minibatch SGD: ``epochs`` passes over ``(x, y)`` in a fresh order each; returns the costs."""
    rng = np.random.default_rng(seed + 1)
    costs = []
    for epoch in range(epochs):
        order = rng.permutation(len(y))
        epoch_costs = [float(train(x[idx], y[idx])) for idx in np.array_split(order, max(1, len(y) // batch))]
        costs.append(float(np.mean(epoch_costs)))
        if verbose and (epoch % 10 == 0 or epoch == epochs - 1):
            print("  epoch %3d  mean cost %.5f" % (epoch, costs[-1]))
    return costs


def accuracy(predict, x, y):
    return float(np.mean(predict(x) == y))


def run(model="both", epochs=EPOCHS, linker="cvm", verbose=True):
    """Train the chosen model(s); returns ``{model: (train accuracy, held-out accuracy, costs)}``."""
    x_train, y_train, x_test, y_test = load_data()
    results = {}
    models = ("softmax", "mlp") if model == "both" else (model,)
    for name in models:
        if name == "softmax":
            train, predict = build_softmax_regression(x_train.shape[1], linker=linker)[:2]
        else:
            train, predict = build_mlp(x_train.shape[1], linker=linker)[:2]
        if verbose:
            print("%s: %d training images, %d held out, %d epochs, linker %r"
                  % (name, len(y_train), len(y_test), epochs, linker))
        costs = fit(train, x_train, y_train, epochs=epochs, verbose=verbose)
        results[name] = (accuracy(predict, x_train, y_train), accuracy(predict, x_test, y_test), costs)
        print("%s: training accuracy %.4f, held-out accuracy %.4f" % ((name,) + results[name][:2]))
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("softmax", "mlp", "both"), default="both")
    parser.add_argument("--epochs", type=int, default=EPOCHS, help="passes over the training set (default %d)" % EPOCHS)
    parser.add_argument("--linker", choices=LINKERS, default="cvm", help="linker to compile with (default cvm)")
    parser.add_argument("--quiet", action="store_true", help="print only the accuracies")
    args = parser.parse_args(argv)
    if args.epochs < 1:
        parser.error("--epochs must be >= 1")
    return run(args.model, args.epochs, args.linker, verbose=not args.quiet)


if __name__ == "__main__":
    main()

"""LeNet-5 with batch normalization and dropout on scikit-learn's digits upsampled to 28x28, in ffigraph.

The convolutional network of Theano's deep-learning tutorial, written as a Theano 1.0 user writes
it: ``conv2d`` from ``ffigraph.tensor.nnet``, ``pool_2d`` from ``ffigraph.tensor.signal.pool``,
``batch_normalization_train`` / ``_test`` from ``ffigraph.tensor.nnet.bn``, shared parameters,
``ffigraph.grad`` and the compiled function's ``updates``; dropout masks from a counter-based
random stream (``RandomStream``, Philox4x32-10). The model (every layer's semantics is spelled
out in ``examples/lenet_numpy.py``, the same step written by hand in numpy)::

    conv 5x5 x6 (no bias) -> batch norm (spatial) -> relu -> max-pool 2      1x28x28 -> 6x12x12
    conv 5x5 x16 (no bias) -> batch norm (spatial) -> relu -> max-pool 2     -> 16x4x4
    dense 256->120 -> relu -> dropout -> dense 120->84 -> relu -> dropout -> dense 84->10 -> softmax

Batch norm sits between each convolution and its relu and takes the place of the convolution's
bias (its ``beta``); while training it normalizes with the minibatch's statistics and updates the
running averages (Theano's ``running_average_factor``, unbiased variance) that the test-time
function uses. Dropout follows the two hidden dense layers only. Training is plain minibatch SGD
on the mean negative log-likelihood, the learning rate an input of the step (it decays by
LR_DECAY every epoch).

The data are scikit-learn's ``digits`` (1797 images of 8x8 pixels; the file ships inside the
scikit-learn package, nothing is downloaded), scaled to [0, 1] and upsampled to 28x28 by bilinear
interpolation (numpy: two small interpolation matrices); the same fixed permutation as
``examples/mlp_digits.py`` keeps 25 % of the images out of training. float32 throughout.

Run:  python examples/lenet_digits.py [--epochs N] [--linker L] [--quiet] [--export DIR]

``--export DIR`` writes the compiled training step (inputs x, y, lr; outputs the cost and the two
dropout masks; the parameters, the running statistics and the random stream's state as shared
variables) as a C library folder (``Function.export``): ``make && ./example`` runs it with no
Python. Needs scikit-learn (``pip install scikit-learn``; CPython only: it has no PyPy wheels).
"""
import argparse
import time

import numpy as np

import ffigraph
import ffigraph.tensor as T
from ffigraph.compile.mode import Mode
from ffigraph.tensor.nnet import conv2d
from ffigraph.tensor.nnet.bn import batch_normalization_test, batch_normalization_train
from ffigraph.tensor.random.utils import RandomStream
from ffigraph.tensor.signal.pool import pool_2d
from ffigraph.tensor.special import softmax

import lenet_numpy as ref

SEED = 1234            # data split, initial weights and dropout masks are the same on every run
TEST_FRACTION = 0.25   # share of the images held out
SIZE = 28              # images are upsampled from 8x8 to SIZE x SIZE
KEEP = ref.KEEP        # dropout: probability that a dense unit is kept while training
LEARNING_RATE = 0.1    # of the first epoch; then times LR_DECAY every epoch
LR_DECAY = 0.85
BATCH = 32             # minibatch size
EPOCHS = 12
DTYPE = "float32"
LINKERS = ("py", "c", "cvm", "c|py")


def upsample_matrix(n_in, n_out):
    """The (n_out, n_in) matrix of 1-d bilinear interpolation with pixel centres aligned
    (output pixel i samples the input at (i + 0.5) * n_in / n_out - 0.5, clamped to the edges)."""
    s = np.clip((np.arange(n_out) + 0.5) * n_in / n_out - 0.5, 0, n_in - 1)
    lo = np.floor(s).astype(np.int64)
    hi = np.minimum(lo + 1, n_in - 1)
    frac = s - lo
    a = np.zeros((n_out, n_in))
    rows = np.arange(n_out)
    np.add.at(a, (rows, lo), 1.0 - frac)
    np.add.at(a, (rows, hi), frac)
    return a


def load_data(seed=SEED, test_fraction=TEST_FRACTION, size=SIZE, dtype=DTYPE):
    """``(x_train, y_train, x_test, y_test)``: images (N, 1, size, size) in [0, 1], labels int64."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    a = upsample_matrix(8, size)
    images = np.einsum("ip,npq,jq->nij", a, digits.images / 16.0, a)   # A @ image @ A.T, per image
    x = images[:, None].astype(dtype)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(y))
    n_test = int(round(len(y) * test_fraction))
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


def nll(p_y, y):
    """Mean negative log-likelihood of integer labels ``y`` under row-wise probabilities ``p_y``."""
    return -T.mean(T.log(p_y)[T.arange(y.shape[0]), y])


def _channels(v):
    """A per-channel vector as (1, C, 1, 1), the broadcastable shape batch norm's parameters take."""
    return v.dimshuffle("x", 0, "x", "x")


class LeNet:
    """The compiled model: ``train(x, y, lr)`` -> ``[cost, mask1, mask2]`` (one SGD step; the
    masks are the 0/1 dropout masks it drew), ``logits(x)`` -> the test-time network's logits
    (running statistics, no dropout), ``predict(x)`` -> labels; ``params`` and ``state``
    are the shared variables in ``lenet_numpy.PARAM_SHAPES`` / ``STATE_SHAPES`` order.

    ``init``: the initial parameters (``{name: array}``; default ``lenet_numpy.init_params(seed)``);
    ``with_predict=False`` compiles the training step only (``logits`` is then None)."""

    def __init__(self, linker="cvm", dtype=DTYPE, seed=SEED, init=None, with_predict=True):
        start = init if init is not None else ref.init_params(seed, dtype)
        self.params = [ffigraph.shared(np.asarray(start[name], dtype=dtype), name=name)
                       for name, _ in ref.PARAM_SHAPES]
        self.state = [ffigraph.shared(value, name=name) for name, value in ref.init_state(dtype).items()]
        self.srng = RandomStream(seed)
        p = dict((v.name, v) for v in self.params)
        s = dict((v.name, v) for v in self.state)
        x = T.tensor4("x", dtype=dtype)
        y = T.lvector("y")
        lr = T.scalar("lr", dtype=dtype)

        def conv_block(inp, w, gamma, beta, mean, var, input_shape, filter_shape, training):
            a = conv2d(inp, w, input_shape=input_shape, filter_shape=filter_shape)   # filter_flip=True
            if training:
                out, _, _, new_mean, new_var = batch_normalization_train(
                    a, _channels(gamma), _channels(beta), axes="spatial",
                    running_mean=_channels(mean), running_var=_channels(var))
                bn_updates = [(mean, new_mean.flatten()), (var, new_var.flatten())]
            else:
                out = batch_normalization_test(a, _channels(gamma), _channels(beta),
                                               _channels(mean), _channels(var), axes="spatial")
                bn_updates = []
            return pool_2d(T.maximum(out, 0), ws=(2, 2), ignore_border=True), bn_updates

        def features(training):
            h, up1 = conv_block(x, p["w1"], p["gamma1"], p["beta1"], s["mean1"], s["var1"],
                                (None, 1, SIZE, SIZE), (6, 1, 5, 5), training)
            h, up2 = conv_block(h, p["w2"], p["gamma2"], p["beta2"], s["mean2"], s["var2"],
                                (None, 6, 12, 12), (16, 6, 5, 5), training)
            return h.flatten(2), up1 + up2

        # training: batch statistics, dropout after each hidden dense layer
        f, bn_updates = features(training=True)
        h3 = T.maximum(T.dot(f, p["w3"]) + p["b3"], 0)
        mask1 = T.cast(self.srng.binomial(1, KEEP, size=h3.shape), dtype)
        h4 = T.maximum(T.dot(h3 * mask1 / KEEP, p["w4"]) + p["b4"], 0)
        mask2 = T.cast(self.srng.binomial(1, KEEP, size=h4.shape), dtype)
        p_train = softmax(T.dot(h4 * mask2 / KEEP, p["w5"]) + p["b5"], axis=-1)
        cost = nll(p_train, y)
        grads = ffigraph.grad(cost, self.params)
        updates = [(v, v - lr * g) for v, g in zip(self.params, grads)] + bn_updates
        mode = Mode(linker=linker)
        self.train = ffigraph.function([x, y, lr], [cost, mask1, mask2], updates=updates, mode=mode,
                                       name="lenet_train")
        self.logits = None
        if not with_predict:
            return
        # test: running statistics, no dropout
        f_test, _ = features(training=False)
        h = T.maximum(T.dot(f_test, p["w3"]) + p["b3"], 0)
        h = T.maximum(T.dot(h, p["w4"]) + p["b4"], 0)
        self.logits = ffigraph.function([x], T.dot(h, p["w5"]) + p["b5"], mode=mode, name="lenet_logits")

    def predict(self, x):
        """Predicted labels of the images ``x`` (the test-time network: running statistics, no dropout)."""
        return np.argmax(self.logits(x), axis=1)

    def values(self):
        """``(params, state)`` as ``{name: array}`` dicts (lenet_numpy's arguments)."""
        return ({v.name: v.get_value() for v in self.params}, {v.name: v.get_value() for v in self.state})


def fit(model, x, y, epochs=EPOCHS, batch=BATCH, seed=SEED, verbose=False):
    """Minibatch SGD: ``epochs`` passes over ``(x, y)`` in a fresh order each; returns the mean
    cost of each epoch."""
    rng = np.random.default_rng(seed + 1)
    costs = []
    for epoch in range(epochs):
        lr = np.asarray(LEARNING_RATE * LR_DECAY ** epoch, dtype=model.params[0].dtype)
        order = rng.permutation(len(y))
        epoch_costs = [float(model.train(x[idx], y[idx], lr)[0])
                       for idx in np.array_split(order, max(1, len(y) // batch))]
        costs.append(float(np.mean(epoch_costs)))
        if verbose:
            print("  epoch %3d  lr %.4f  mean cost %.5f" % (epoch, lr, costs[-1]))
    return costs


def accuracy(model, x, y):
    return float(np.mean(model.predict(x) == y))


def run(epochs=EPOCHS, linker="cvm", verbose=True, export=None):
    """Train the model; returns ``(training accuracy, held-out accuracy, costs)``."""
    x_train, y_train, x_test, y_test = load_data()
    start = time.perf_counter()
    model = LeNet(linker=linker)
    if verbose:
        print("lenet: compiled in %.1f s; %d training images, %d held out, %d epochs, linker %r"
              % (time.perf_counter() - start, len(y_train), len(y_test), epochs, linker))
    start = time.perf_counter()
    costs = fit(model, x_train, y_train, epochs=epochs, verbose=verbose)
    result = (accuracy(model, x_train, y_train), accuracy(model, x_test, y_test), costs)
    if verbose:
        print("lenet: trained in %.1f s" % (time.perf_counter() - start))
    print("lenet: training accuracy %.4f, held-out accuracy %.4f" % result[:2])
    if export:
        lr = np.asarray(LEARNING_RATE * LR_DECAY ** epochs, dtype=DTYPE)
        bundle = model.train.export(export, example_inputs=[x_train[:BATCH], y_train[:BATCH], lr])
        print("lenet: training step exported to %s (make && ./example runs it)" % bundle.directory)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=EPOCHS, help="passes over the training set (default %d)" % EPOCHS)
    parser.add_argument("--linker", choices=LINKERS, default="cvm", help="linker to compile with (default cvm)")
    parser.add_argument("--quiet", action="store_true", help="print only the accuracies")
    parser.add_argument("--export", metavar="DIR", help="also export the compiled training step to DIR")
    args = parser.parse_args(argv)
    if args.epochs < 1:
        parser.error("--epochs must be >= 1")
    return run(args.epochs, args.linker, verbose=not args.quiet, export=args.export)


if __name__ == "__main__":
    main()

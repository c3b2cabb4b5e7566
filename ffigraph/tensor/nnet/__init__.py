"""Theano's ``theano.tensor.nnet`` names: activations, softmax over rows and the cross-entropies.

The convolutional family lives in submodules imported when first used (a program that never
convolves never loads them): ``abstract_conv`` (``conv2d``, ``conv3d`` and their gradient ops),
``conv`` (Theano 0.x's ``conv2d`` name), ``bn`` (batch normalization) and ``neighbours``
(``images2neibs``). ``nnet.conv2d``, ``nnet.conv3d``, ``nnet.batch_normalization``,
``nnet.images2neibs`` and the other names Theano 1.0's ``nnet`` re-exports resolve to them on first
access; pooling is ``ffigraph.tensor.signal.pool``, as in Theano.

Activations (graphs of elementwise ops, so they fuse and differentiate like any other):

* ``sigmoid``, ``softplus``: the stable elementwise ops (the same as ``ffigraph.tensor``'s);
* ``relu(x, alpha=0)``: ``x`` where ``x > 0``, else ``alpha * x`` (``switch(x <= 0, alpha * x, x)``;
  with the Python number 0, ``switch(x <= 0, 0, x)``). Its gradient at exactly 0 is ``alpha``, the
  left slope (0 for the plain rectifier, as PyTorch and JAX give; Theano's ``0.5 * (x + abs(x))``
  gave 0.5 there, and NaN as second derivative). NaN stays NaN, ``relu(-inf)`` is 0;
* ``elu(x, alpha=1)``: ``x`` where ``x > 0``, else ``alpha * expm1(x)`` (the ``expm1`` is taken of
  ``minimum(x, 0)``, so the branch that is not chosen never overflows: the gradient is finite for
  any finite ``x``); ``selu(x)``: ``scale * elu(x, alpha)`` with Klambauer et al.'s constants;
* ``softsign(x)``: ``x / (1 + abs(x))``; ``hard_sigmoid(x)``: ``clip(0.2 * x + 0.5, 0, 1)``.

Softmax, as Theano's: ``softmax(c, axis=-1)`` and ``logsoftmax(c, axis=-1)`` go along the LAST axis
(each row of a matrix is a distribution); ``ffigraph.tensor.special``'s ``softmax(c, axis=None)``
(PyTensor's) takes all axes at once by default. A vector is one distribution (Theano padded it to a
1-row matrix; here it stays a vector). ``softmax_with_bias(x, b)`` is ``softmax(x + b)``.

Cross-entropies:

* ``categorical_crossentropy(coding_dist, true_dist)``: with ``true_dist`` of the same rank (a
  one-hot or probability matrix) ``-sum(true_dist * log(coding_dist), axis=-1)``; with one rank
  less (an integer vector of labels, one per row of the matrix ``coding_dist``)
  ``crossentropy_categorical_1hot(coding_dist, true_dist)``, i.e. ``-log(coding_dist[i, label[i]])``
  for each row, one op with C code (no advanced indexing). A label outside ``[0, classes)`` is an
  IndexError naming the label, its row and the number of classes, from ``perform`` and from C
  alike (negative labels do not count from the end);
* ``binary_crossentropy(output, target)``: ``-(target * log(output) + (1 - target) * log(1 - output))``
  (with ``output = sigmoid(z)`` the stabilize rewrites make it ``softplus`` forms);
  ``sigmoid_binary_crossentropy(output, target)`` takes the logits: ``softplus(output) - output * target``;
* ``crossentropy_softmax_1hot(x, y_idx)`` -> ``(nll, softmax(x))`` and the ``_with_bias`` and
  ``crossentropy_softmax_argmax_1hot_with_bias`` variants: ``nll`` is ``CrossentropySoftmax1Hot``,
  the fused op: per row ``logsumexp(x) - x[label]`` in ONE pass over the logits (a running
  maximum and a rescaled running sum), finite for any finite logits. Its gradient is
  ``CrossentropySoftmax1HotDx(g, x, y_idx)`` = ``g * (softmax(x) - onehot(y_idx))``.

The stabilize rewrites (``ffigraph/rewriting/nnet.py``) turn ``log(softmax(x))`` into
``log_softmax(x)`` and ``categorical_crossentropy(softmax(x), labels)`` into the fused op; ``grad``
of the written forms is stable without them (``Softmax``'s gradient recognises the gradients of
``log`` and of ``crossentropy_categorical_1hot`` in what it receives).

Integers: the float-valued functions convert int and bool inputs as ``exp`` does (float32 for
8- and 16-bit ints and bools, float64 for wider); ``relu`` of an int tensor stays an int tensor.
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.basic import Apply
from ffigraph.graph.c_interface import DelegatedCOp
from ffigraph.graph.op import Op
from ffigraph.tensor.basic import as_tensor_variable, cast, switch
from ffigraph.tensor.math import abs as abs_, argmax, clip, expm1, le, log, minimum, sigmoid, softplus, sum as tsum
from ffigraph.tensor.special import (LogSoftmax, Softmax, float_input, log_softmax, np_logsumexp, np_softmax,
                                     softmax as _special_softmax)
from ffigraph.tensor.type import TensorType

__all__ = [
    "sigmoid", "softplus", "hard_sigmoid", "relu", "elu", "selu", "softsign",
    "softmax", "logsoftmax", "log_softmax", "softmax_with_bias", "Softmax", "LogSoftmax",
    "categorical_crossentropy", "binary_crossentropy", "sigmoid_binary_crossentropy",
    "CrossentropyCategorical1Hot", "CrossentropyCategorical1HotGrad", "crossentropy_categorical_1hot",
    "crossentropy_categorical_1hot_grad",
    "CrossentropySoftmax1Hot", "CrossentropySoftmax1HotDx", "crossentropy_softmax_1hot_nll",
    "crossentropy_softmax_1hot_dx", "crossentropy_softmax_1hot", "crossentropy_softmax_1hot_with_bias",
    "crossentropy_softmax_argmax_1hot_with_bias",
]


# ------------------------------------------------------------------ activations


def hard_sigmoid(x):
    """Theano's piecewise-linear sigmoid: ``clip(0.2 * x + 0.5, 0, 1)``."""
    x = float_input(x, "hard_sigmoid")
    return clip(x * 0.2 + 0.5, 0, 1)


def relu(x, alpha=0):
    """The rectifier: ``x`` where ``x > 0``, else ``alpha * x`` (leaky for 0 < alpha < 1; ``alpha``
    may be a tensor). The gradient at 0 is ``alpha``; NaN stays NaN and ``relu(-inf)`` is 0."""
    x = as_tensor_variable(x)
    if isinstance(alpha, (int, float, np.number)) and not isinstance(alpha, bool) and alpha == 0:
        return switch(le(x, 0), 0, x)
    return switch(le(x, 0), alpha * x, x)


def elu(x, alpha=1):
    """The exponential linear unit: ``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``."""
    x = float_input(x, "elu")
    return switch(le(x, 0), alpha * expm1(minimum(x, 0)), x)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(x):
    """The scaled exponential linear unit: ``scale * elu(x, alpha)`` (Klambauer et al., 2017)."""
    return _SELU_SCALE * elu(x, _SELU_ALPHA)


def softsign(x):
    """``x / (1 + abs(x))``."""
    x = float_input(x, "softsign")
    return x / (1 + abs_(x))


# ------------------------------------------------------------------ softmax over rows (Theano)


def _row_of_vector(c, axis, what):
    """Theano 1.0's nnet softmaxes take a vector as a one-row matrix, and return one (its
    tutorials index the result as ``s[0]`` or ``s[:, i]``); ``ffigraph.tensor.special`` keeps
    PyTensor's rule instead (a vector in, a vector out)."""
    c = as_tensor_variable(c)
    if c.ndim == 1:
        if axis not in (-1, 0, None):
            raise ValueError("%s: axis %s is out of range for the vector %s" % (what, axis, c))
        return c.dimshuffle("x", 0), -1
    return c, axis


def softmax(c, axis=-1):
    """Theano's softmax: along the last axis by default (each row of a matrix sums to 1). A
    vector gives a matrix of one row, as in Theano 1.0."""
    c, axis = _row_of_vector(c, axis, "softmax")
    return _special_softmax(c, axis=axis)


def logsoftmax(c, axis=-1):
    """Theano's logsoftmax: the log of ``softmax(c, axis)``, computed stably; the last axis by
    default. A vector gives a matrix of one row, as in Theano 1.0."""
    c, axis = _row_of_vector(c, axis, "logsoftmax")
    return log_softmax(c, axis=axis)


def softmax_with_bias(x, b):
    """``softmax(x + b)`` over the rows of the matrix ``x`` (``b``: one bias per column)."""
    return softmax(as_tensor_variable(x) + b, axis=-1)


# ------------------------------------------------------------------ labels


def _labels(y, what):
    y = as_tensor_variable(y)
    if y.ndim != 1 or np.dtype(y.dtype).kind not in "iu":
        raise TypeError("%s: the labels must be an integer vector, got %s (%s, %d-d)" % (what, y, y.dtype, y.ndim))
    return y


def _matrix(x, what):
    x = float_input(x, what)
    if x.ndim != 2:
        raise TypeError("%s: expects a matrix (one row per example), got %s with %d dimensions" % (what, x, x.ndim))
    return x


def check_labels(op, labels, n_rows, n_classes):
    """ValueError unless there is one label per row; IndexError (naming the first bad label, its
    row and the number of classes) unless every label is in ``[0, n_classes)``."""
    labels = np.asarray(labels)
    if labels.shape[0] != n_rows:
        raise ValueError("%s: %d labels for %d rows" % (op, labels.shape[0], n_rows))
    bad = np.flatnonzero((labels < 0) | (labels >= n_classes))
    if bad.size:
        i = int(bad[0])
        raise IndexError("%s: label %d (row %d) is out of range for %d classes" % (op, labels[i], i, n_classes))
    return labels.astype(np.int64)


class _LabelOp(DelegatedCOp, Op):
    c_impl = "ffigraph.tensor.softmax_c"
    __props__ = ()

    def __str__(self):
        return type(self).__name__


class _RowLossGradOp(_LabelOp):
    """The gradient of a ``_RowLossOp`` with respect to its matrix: inputs ``(g, x, labels)``, ``g``
    the output gradient (a vector, one value per row); the output has the shape of ``x``.
    ``perform`` checks the inputs and calls ``np_impl(g, x, labels)`` (labels as int64)."""

    def _node(self, g, x, labels):
        x = _matrix(x, str(self))
        g = cast(as_tensor_variable(g), x.dtype)
        y = _labels(labels, str(self))
        if g.ndim != 1:
            raise TypeError("%s: the gradient must be a vector, got %s" % (self, g))
        return Apply(self, [g, x, y], [x.type()])

    def perform(self, node, inputs, output_storage):
        g, x, y = inputs
        if np.shape(g)[0] != x.shape[0]:
            raise ValueError("%s: %d gradients for %d rows" % (self, np.shape(g)[0], x.shape[0]))
        y = check_labels(self, y, x.shape[0], x.shape[1])
        with np.errstate(all="ignore"):
            out = self.np_impl(g, x, y)
        output_storage[0][0] = np.asarray(out, dtype=node.outputs[0].type.numpy_dtype)

    def infer_shape(self, fgraph, node, input_shapes):
        return [input_shapes[1]]

    def L_op(self, inputs, outputs, output_grads):
        from ffigraph.tensor.gradient import grad_not_implemented

        return [grad_not_implemented(self, i, v) for i, v in enumerate(inputs)]


class _RowLossOp(_LabelOp):
    """A loss per row of a float matrix ``x`` given integer labels: a vector, one value per row. Its
    gradient goes to ``x`` only, through ``grad_op(g, x, labels)``. ``perform`` checks the labels
    and calls ``np_impl(x, labels)`` (labels as int64)."""

    grad_op = None

    def _node(self, x, labels):
        x = _matrix(x, str(self))
        y = _labels(labels, str(self))
        return Apply(self, [x, y], [TensorType(x.dtype, (x.type.shape[0],))()])

    def perform(self, node, inputs, output_storage):
        x, y = inputs
        y = check_labels(self, y, x.shape[0], x.shape[1])
        with np.errstate(all="ignore"):
            out = self.np_impl(x, y)
        output_storage[0][0] = np.asarray(out, dtype=node.outputs[0].type.numpy_dtype)

    def infer_shape(self, fgraph, node, input_shapes):
        return [(input_shapes[0][0],)]

    def connection_pattern(self, node):
        return [[True], [False]]

    def L_op(self, inputs, outputs, output_grads):
        from ffigraph.tensor.gradient import disconnected_type

        x, y = inputs
        return [self.grad_op(output_grads[0], x, y), disconnected_type()]


# ------------------------------------------------------------------ categorical cross-entropy


class CrossentropyCategorical1HotGrad(_RowLossGradOp):
    """The gradient of ``CrossentropyCategorical1Hot``: ``-g[i] / coding_dist[i, label[i]]`` at each
    row's label, zeros elsewhere. Inputs ``(g, coding_dist, true_one_of_n)``."""

    c_kind = "categorical_grad"

    def make_node(self, g, coding_dist, true_one_of_n):
        return self._node(g, coding_dist, true_one_of_n)

    @staticmethod
    def np_impl(g, p, labels):
        out = np.zeros(p.shape, dtype=p.dtype)
        rows = np.arange(p.shape[0])
        out[rows, labels] = -g / p[rows, labels]
        return out

    def through_softmax(self, node, softmax_op, x, sm):
        """This gradient, with ``coding_dist = sm = softmax(x)`` row-wise, taken on through the
        softmax: ``CrossentropySoftmax1HotDx(g, x, labels)`` (``g * (sm - onehot)``, no division
        by ``sm``); None when ``sm`` is not this node's ``coding_dist``."""
        g, p, y = node.inputs
        if p is not sm or x.ndim != 2 or not isinstance(softmax_op, Softmax) or softmax_op.axis not in (1, -1):
            return None
        return crossentropy_softmax_1hot_dx(g, x, y)


class CrossentropyCategorical1Hot(_RowLossOp):
    """``-log(coding_dist[i, true_one_of_n[i]])`` for each row ``i`` (Theano's op; no advanced indexing).

    Inputs: ``coding_dist`` a float matrix of probabilities (rows: examples, columns: classes),
    ``true_one_of_n`` an integer vector of labels. Output: a vector, one loss per row."""

    c_kind = "categorical"
    grad_op = CrossentropyCategorical1HotGrad()

    def make_node(self, coding_dist, true_one_of_n):
        return self._node(coding_dist, true_one_of_n)

    @staticmethod
    def np_impl(p, labels):
        return -np.log(p[np.arange(p.shape[0]), labels])


crossentropy_categorical_1hot = CrossentropyCategorical1Hot()
crossentropy_categorical_1hot_grad = CrossentropyCategorical1Hot.grad_op


def categorical_crossentropy(coding_dist, true_dist):
    """The cross-entropy between each row of ``coding_dist`` and its target (Theano's).

    ``true_dist`` of ``coding_dist``'s rank (one-hot or probabilities): ``-sum(true_dist *
    log(coding_dist), axis=-1)``; one rank less (an integer vector of labels):
    ``crossentropy_categorical_1hot(coding_dist, true_dist)``, ``-log(coding_dist[i, label[i]])``.
    """
    coding_dist = as_tensor_variable(coding_dist)
    true_dist = as_tensor_variable(true_dist)
    if true_dist.ndim == coding_dist.ndim:
        return -tsum(true_dist * log(coding_dist), axis=coding_dist.ndim - 1)
    if true_dist.ndim == coding_dist.ndim - 1:
        return crossentropy_categorical_1hot(coding_dist, true_dist)
    raise TypeError("categorical_crossentropy: rank mismatch between coding and true distributions (%d-d and %d-d)"
                    % (coding_dist.ndim, true_dist.ndim))


def binary_crossentropy(output, target):
    """``-(target * log(output) + (1 - target) * log(1 - output))`` (Theano's)."""
    output, target = as_tensor_variable(output), as_tensor_variable(target)
    return -(target * log(output) + (1.0 - target) * log(1.0 - output))


def sigmoid_binary_crossentropy(output, target):
    """``binary_crossentropy(sigmoid(output), target)`` from the logits ``output``, stably:
    ``softplus(output) - output * target`` (its gradient is ``sigmoid(output) - target``)."""
    output = float_input(output, "sigmoid_binary_crossentropy")
    return softplus(output) - output * target


# ------------------------------------------------------------------ the fused softmax cross-entropy


class CrossentropySoftmax1HotDx(_RowLossGradOp):
    """The gradient of ``CrossentropySoftmax1Hot``: ``g[i] * (softmax(x)[i] - onehot(y_idx[i]))``.

    Inputs ``(g, x, y_idx)``: the output gradient (a vector), the logits and the labels (Theano's
    op of this name took the softmax instead of the logits)."""

    c_kind = "softmax_nll_dx"

    def make_node(self, g, x, y_idx):
        return self._node(g, x, y_idx)

    @staticmethod
    def np_impl(g, x, labels):
        sm = np_softmax(x, (1,))
        sm[np.arange(x.shape[0]), labels] -= 1.0
        return sm * np.asarray(g, dtype=np.float64)[:, None]


class CrossentropySoftmax1Hot(_RowLossOp):
    """The negative log-likelihood of integer labels under the softmax of logits, fused.

    Inputs: ``x`` a float matrix of logits (rows: examples, columns: classes), ``y_idx`` an integer
    vector of labels. Output: the vector ``-log_softmax(x, axis=1)[i, y_idx[i]]``, computed per row
    as ``logsumexp(x[i]) - x[i, y_idx[i]]`` in one pass over the row. Build it with
    ``crossentropy_softmax_1hot_nll(x, y_idx)`` (or ``CrossentropySoftmax1Hot()(x, y_idx)``).
    """

    c_kind = "softmax_nll"
    grad_op = CrossentropySoftmax1HotDx()

    def make_node(self, x, y_idx):
        return self._node(x, y_idx)

    @staticmethod
    def np_impl(x, labels):
        return np_logsumexp(x, (1,)) - np.asarray(x, dtype=np.float64)[np.arange(x.shape[0]), labels]


crossentropy_softmax_1hot_nll = CrossentropySoftmax1Hot()
crossentropy_softmax_1hot_dx = CrossentropySoftmax1Hot.grad_op


def crossentropy_softmax_1hot(x, y_idx):
    """``(nll, softmax(x))`` for the logits matrix ``x`` and integer labels ``y_idx`` (Theano's)."""
    x = as_tensor_variable(x)
    return crossentropy_softmax_1hot_nll(x, y_idx), softmax(x)


def crossentropy_softmax_1hot_with_bias(x, b, y_idx):
    """``crossentropy_softmax_1hot(x + b, y_idx)``: ``(nll, softmax(x + b))``."""
    return crossentropy_softmax_1hot(as_tensor_variable(x) + b, y_idx)


def crossentropy_softmax_argmax_1hot_with_bias(x, b, y_idx):
    """``(nll, softmax(x + b), argmax(x + b, axis=1))`` (Theano's)."""
    xb = as_tensor_variable(x) + b
    nll, sm = crossentropy_softmax_1hot(xb, y_idx)
    return nll, sm, argmax(xb, axis=1)


# ------------------------------------------------------------------ the convolutional family, on first use

# name -> the submodule that defines it (Theano 1.0's nnet re-exports these)
_LAZY_NAMES = {
    "conv2d": "abstract_conv", "conv3d": "abstract_conv", "conv2d_transpose": "abstract_conv",
    "abstract_conv2d": "abstract_conv", "conv2d_grad_wrt_inputs": "abstract_conv",
    "conv2d_grad_wrt_weights": "abstract_conv", "separable_conv2d": "abstract_conv",
    "batch_normalization": "bn", "batch_normalization_train": "bn", "batch_normalization_test": "bn",
    "images2neibs": "neighbours", "neibs2images": "neighbours", "Images2Neibs": "neighbours",
}
_LAZY_MODULES = ("abstract_conv", "conv", "bn", "neighbours")


def __getattr__(name):
    """Load a convolutional submodule the first time one of its names is read (PEP 562)."""
    import importlib

    if name in _LAZY_MODULES:
        return importlib.import_module("%s.%s" % (__name__, name))
    module_name = _LAZY_NAMES.get(name)
    if module_name is None:
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    value = getattr(importlib.import_module("%s.%s" % (__name__, module_name)), name)
    globals()[name] = value
    return value

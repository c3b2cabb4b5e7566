"""``softmax``, ``log_softmax`` and ``logsumexp``, numerically stable (PyTensor's ``pytensor.tensor.special``).

As in PyTensor: ``softmax(c, axis=None)`` and ``log_softmax(c, axis=None)``, where ``axis`` is an
int (negative counts from the end) or None for ALL the axes at once (the whole array is one
distribution, as ``scipy.special.softmax(x)``); ``logsumexp(x, axis=None, keepdims=False)``
(PyTensor's ``pytensor.tensor.logsumexp``) takes an int, a tuple or None. Theano's row-wise
spellings (``softmax(c)`` over the last axis) are in ``ffigraph.tensor.nnet``.

Each is one op with C code (``softmax_c.py``) and a ``perform``; values match
``scipy.special.softmax`` / ``log_softmax`` / ``logsumexp``, special values included (each lane
is shifted by its maximum, so logits of any size give finite results):

* softmax: a lane holding NaN or +inf, or only -inf, is NaN throughout;
* log_softmax and logsumexp shift by the maximum only where it is finite: an all -inf lane
  gives logsumexp -inf (and log_softmax NaN), a +inf gives logsumexp +inf;
* an empty lane gives logsumexp -inf; softmax and log_softmax of an empty array are empty;
* a 0-d input is one lane of one element (softmax 1, log_softmax 0, logsumexp the value).

dtypes: a float input keeps its dtype; bools and integers are first converted as ``exp`` converts
them (int8, int16, uint8, uint16 and bool to float32, wider ones to float64; PyTensor's ``Softmax``
has no rule for them: its C code refuses them). The C code works in double and rounds once, so
float32 results are correctly rounded to within an ulp or so.

Gradients are stable too: ``softmax``'s is ``sm * (g - sum(g * sm))``; terms of ``g`` that are
the gradient of ``log(sm)`` (``a / sm``) become ``a - sum(a) * sm`` (no 0/0 where ``sm``
underflows), and the gradient of ``categorical_crossentropy(sm, labels)`` becomes one
``CrossentropySoftmax1HotDx`` node (``softmax(x) - onehot``); ``log_softmax``'s is
``g - sum(g) * exp(out)`` and ``logsumexp``'s ``g * exp(x - out)``.
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.basic import Apply
from ffigraph.graph.c_interface import DelegatedCOp
from ffigraph.graph.op import Op
from ffigraph.scalar.basic import upgrade_to_float
from ffigraph.tensor.basic import as_tensor_variable, cast, zeros_like
from ffigraph.tensor.elemwise import Elemwise
from ffigraph.tensor.math import _keep as _keep_axes, _normalize_axes, exp, log, sum as tsum, true_div
from ffigraph.tensor.type import TensorType

__all__ = ["softmax", "log_softmax", "logsumexp", "logit", "Softmax", "LogSoftmax", "LogSumExp", "softmax_grad"]


def float_input(x, what):
    """``x`` as a float tensor (bools and ints converted as ``exp`` converts them)."""
    x = as_tensor_variable(x)
    if x.dtype.startswith("complex"):
        raise TypeError("%s: complex values are not supported (input %s)" % (what, x))
    return cast(x, upgrade_to_float(x.dtype))


def _check_axis(axis, what):
    if axis is not None and (not isinstance(axis, (int, np.integer)) or isinstance(axis, (bool, np.bool_))):
        raise TypeError("%s: axis must be an integer or None, got %r" % (what, axis))
    return None if axis is None else int(axis)


# ------------------------------------------------------------------ numpy references (perform)


def _shift(m):
    """scipy's shift: the maximum where it is finite, else 0."""
    return np.where(np.isfinite(m), m, 0.0)


def np_softmax(x, axes):
    """scipy.special.softmax over ``axes``, in float64."""
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return x.copy()
    with np.errstate(all="ignore"):
        e = np.exp(x - np.max(x, axis=axes, keepdims=True))
        return e / np.sum(e, axis=axes, keepdims=True)


def np_log_softmax(x, axes):
    """scipy.special.log_softmax over ``axes``, in float64."""
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return x.copy()
    with np.errstate(all="ignore"):
        t = x - _shift(np.max(x, axis=axes, keepdims=True))
        return t - np.log(np.sum(np.exp(t), axis=axes, keepdims=True))


def np_logsumexp(x, axes):
    """scipy.special.logsumexp over ``axes`` (not keeping them), in float64; -inf over an empty lane."""
    x = np.asarray(x, dtype=np.float64)
    kept_shape = tuple(s for a, s in enumerate(x.shape) if a not in axes)
    if any(x.shape[a] == 0 for a in axes):
        return np.full(kept_shape, -np.inf)
    with np.errstate(all="ignore"):
        m = _shift(np.max(x, axis=axes, keepdims=True))
        out = np.log(np.sum(np.exp(x - m), axis=axes, keepdims=True)) + m
    return out.reshape(kept_shape)


# ------------------------------------------------------------------ the ops


class _LaneOp(DelegatedCOp, Op):
    """An op over the lanes of ``axis`` (an int, or None for all axes) computed in softmax_c.py;
    ``perform`` calls ``np_impl`` (the numpy reference of the kind) over the reduced axes."""

    c_impl = "ffigraph.tensor.softmax_c"
    c_kind = "lanes"
    __props__ = ("axis",)
    kind = None
    np_impl = None

    def __init__(self, axis):
        self.axis = _check_axis(axis, type(self).__name__)

    def reduced_axes(self, ndim):
        return tuple(range(ndim)) if self.axis is None else (self.axis % ndim,)

    def _input(self, x):
        x = float_input(x, str(self))
        if self.axis is not None:
            if x.ndim == 0 or not -x.ndim <= self.axis < x.ndim:
                raise ValueError("%s: axis %d is out of range for %s with %d dimensions"
                                 % (self, self.axis, x, x.ndim))
        return x

    def make_node(self, x):
        x = self._input(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        (x,) = inputs
        out = self.np_impl(x, self.reduced_axes(x.ndim))
        output_storage[0][0] = np.asarray(out, dtype=node.outputs[0].type.numpy_dtype)

    def infer_shape(self, fgraph, node, input_shapes):
        return [input_shapes[0]]

    def __str__(self):
        return "%s{axis=%s}" % (type(self).__name__, self.axis)


class Softmax(_LaneOp):
    """``exp(x - max) / sum(exp(x - max))`` over ``axis`` (None: all axes), as scipy.special.softmax."""

    kind = "softmax"
    np_impl = staticmethod(np_softmax)

    def L_op(self, inputs, outputs, output_grads):
        (x,), (sm,), (g,) = inputs, outputs, output_grads
        return [_softmax_input_grad(self, x, sm, g)]


class LogSoftmax(_LaneOp):
    """``x - max - log(sum(exp(x - max)))`` over ``axis`` (None: all axes), as scipy.special.log_softmax."""

    kind = "log_softmax"
    np_impl = staticmethod(np_log_softmax)

    def L_op(self, inputs, outputs, output_grads):
        (out,), (g,) = outputs, output_grads
        return [g - tsum(g, axis=self.axis, keepdims=True) * exp(out)]


class LogSumExp(_LaneOp):
    """``max + log(sum(exp(x - max)))`` over the sorted tuple of axes ``axis``, as scipy.special.logsumexp.

    The output has the kept axes (``logsumexp(..., keepdims=True)`` puts the others back)."""

    def __init__(self, axis):
        axis = tuple(axis)
        for a in axis:
            _check_axis(a, "LogSumExp")
        self.axis = tuple(sorted(int(a) for a in axis))

    kind = "logsumexp"
    np_impl = staticmethod(np_logsumexp)

    def reduced_axes(self, ndim):
        return self.axis

    def _input(self, x):
        x = float_input(x, str(self))
        for a in self.axis:
            if not 0 <= a < x.ndim:
                raise ValueError("%s: axis %d is out of range for %s with %d dimensions" % (self, a, x, x.ndim))
        return x

    def make_node(self, x):
        x = self._input(x)
        shape = tuple(s for a, s in enumerate(x.type.shape) if a not in self.axis)
        return Apply(self, [x], [TensorType(x.dtype, shape)()])

    def infer_shape(self, fgraph, node, input_shapes):
        return [tuple(s for a, s in enumerate(input_shapes[0]) if a not in self.axis)]

    def L_op(self, inputs, outputs, output_grads):
        (x,), (out,), (g,) = inputs, outputs, output_grads
        return [_keep_axes(g, self.axis, x.ndim) * exp(x - _keep_axes(out, self.axis, x.ndim))]

    def __str__(self):
        return "LogSumExp{axis=%s}" % ",".join(map(str, self.axis))


# ------------------------------------------------------------------ the gradient of softmax


def softmax_grad(g, sm, axis):
    """The gradient through ``sm = softmax(x, axis)`` of ``g``: ``sm * (g - sum(g * sm, axis))``."""
    return sm * (g - tsum(g * sm, axis=axis, keepdims=True))


def _add_terms(v, depth=0):
    """The terms of ``v`` when it is a sum (Elemwise add, nested), else [v]."""
    node = v.owner
    if depth < 16 and node is not None and isinstance(node.op, Elemwise) and node.op.scalar_op.name == "add":
        return [t for i in node.inputs for t in _add_terms(i, depth + 1)]
    return [v]


def _broadcast_like(a, like):
    """``a`` broadcast to the shape of ``like`` when the static shapes do not show it already has it."""
    if a.type.ndim == like.type.ndim and a.type.shape == like.type.shape and None not in a.type.shape:
        return a
    return a + zeros_like(like, dtype=a.dtype)


def _softmax_input_grad(op, x, sm, g):
    """``softmax_grad`` of ``g``, with the terms that would divide by ``sm`` taken apart first."""
    stable, rest = [], []
    for t in _add_terms(g):
        node = t.owner
        new = None
        if node is not None and hasattr(node.op, "through_softmax"):
            # e.g. the gradient of categorical_crossentropy(sm, labels): softmax(x) - onehot
            new = node.op.through_softmax(node, op, x, sm)
        elif node is not None and isinstance(node.op, Elemwise) and node.op.scalar_op.name == "true_div" \
                and node.inputs[1] is sm:
            # a / sm (the gradient of log(sm)): through softmax, a - sum(a) * sm
            a = _broadcast_like(node.inputs[0], sm)
            new = a - tsum(a, axis=op.axis, keepdims=True) * sm
        if new is None:
            rest.append(t)
        else:
            stable.append(cast(new, x.dtype))
    if not stable:
        return softmax_grad(g, sm, op.axis)
    out = stable[0]
    for s in stable[1:]:
        out = out + s
    if rest:
        r = rest[0]
        for t in rest[1:]:
            r = r + t
        out = out + softmax_grad(r, sm, op.axis)
    return cast(out, x.dtype)


# ------------------------------------------------------------------ the functions


def softmax(c, axis=None):
    """The softmax of ``c`` over ``axis`` (an int; None, the default, for all axes at once), as
    PyTensor's ``pytensor.tensor.special.softmax`` and ``scipy.special.softmax``."""
    return Softmax(axis=axis)(as_tensor_variable(c))


def log_softmax(c, axis=None):
    """The log of the softmax of ``c`` over ``axis`` (an int; None, the default, for all axes),
    computed stably, as PyTensor's ``pytensor.tensor.special.log_softmax``."""
    return LogSoftmax(axis=axis)(as_tensor_variable(c))


def logsumexp(x, axis=None, keepdims=False):
    """``log(sum(exp(x), axis, keepdims))`` computed stably (shifted by the maximum), as PyTensor's
    ``pytensor.tensor.logsumexp`` and ``scipy.special.logsumexp``: ``axis`` an int, a tuple or None
    (all axes); -inf over an empty axis or an all -inf lane, +inf with a +inf, NaN with a NaN."""
    x = as_tensor_variable(x)
    axes = _normalize_axes(axis, x.ndim, "logsumexp")
    out = LogSumExp(axes)(x)
    return _keep_axes(out, axes, x.ndim) if keepdims else out


def logit(x):
    """``log(x / (1 - x))``, the inverse of the sigmoid (PyTensor's ``special.logit``)."""
    x = as_tensor_variable(x)
    return log(true_div(x, 1 - x))

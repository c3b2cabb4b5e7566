"""Batch normalization: Theano 1.0's ``theano.tensor.nnet.bn``.

Functions (Theano's names, signatures and semantics):

* ``batch_normalization_train(inputs, gamma, beta, axes='per-activation', epsilon=1e-4,
  running_average_factor=0.1, running_mean=None, running_var=None)`` normalizes with the
  statistics of the batch: ``mean`` and the biased ``var`` over ``axes``, ``invstd = 1 / sqrt(var +
  epsilon)``, ``out = (inputs - mean) * gamma * invstd + beta``. It returns ``(out, mean, invstd)``,
  and with both running averages given also ``new_running_mean = running_mean * (1 - f) + mean * f``
  and ``new_running_var = running_var * (1 - f) + (m / (m - 1)) * var * f`` (``f`` the factor, ``m``
  the number of elements each statistic is taken over: the unbiased variance). With a batch of one
  element per statistic (``m = 1``) the factor ``m / (m - 1)`` is ``inf`` and the variance 0, so
  ``new_running_var`` is NaN, as Theano's compiled graph gives (its ``perform`` raised
  ZeroDivisionError instead).
* ``batch_normalization_test(inputs, gamma, beta, mean, var, axes='per-activation', epsilon=1e-4)``:
  ``(inputs - mean) * gamma / sqrt(var + epsilon) + beta`` with given statistics.
* ``batch_normalization(inputs, gamma, beta, mean, std, mode='low_mem')``, the older form:
  ``(inputs - mean) * (gamma / std) + beta``, elementwise with broadcasting (a graph of elementwise
  ops, which fuse). ``mode`` is ``'low_mem'`` or ``'high_mem'`` (the same values here).

``axes``: ``'per-activation'`` is ``(0,)``, ``'spatial'`` ``(0, 2, 3, ...)`` (every axis but the
channels, axis 1), or a tuple or list of axes. The parameters (``gamma``, ``beta``, the means and
variances) come in either layout: of the rank of ``inputs`` with length 1 on the normalized axes,
or with those axes left out (``gamma.ndim == inputs.ndim - len(axes)``); the statistics returned
are in the parameters' layout. ``epsilon`` below 1e-5 (after conversion to floatX, as Theano
checks it) is a ValueError; so is giving only one of ``running_mean`` and ``running_var``.

Ops (C code in ``bn_c``, float32 and float64, any strides; parameters laid out like ``x`` with
length 1 on the normalized axes, checked at run time):

* ``AbstractBatchNormTrain(axes)(x, scale, bias, epsilon, running_average_factor[, running_mean,
  running_var])`` -> ``out, mean, invstd[, new_running_mean, new_running_var]``;
* ``AbstractBatchNormInference(axes)(x, scale, bias, estimated_mean, estimated_variance, epsilon)``
  -> ``out``;
* ``AbstractBatchNormTrainGrad(axes)(x, dy, scale, x_mean, x_invstd, epsilon[, dmean, dinvstd])`` ->
  ``dx, dscale, dbias`` (Theano's closed form: ``dx = scale * (c - mean(c))`` with ``c = dy *
  invstd - (x - mean) * invstd^3 * mean(dy * (x - mean))``, ``dscale = sum(dy * (x - mean) *
  invstd)``, ``dbias = sum(dy)``). Theano's op took ``dy`` only, so gradients reaching the ``mean``
  and ``invstd`` outputs (and the running averages) were dropped; here they arrive as ``dmean``
  and ``dinvstd`` and add ``dmean / m - dinvstd * invstd^3 * (x - mean) / m`` to ``dx``;
* ``AbstractBatchNormInferenceGrad(axes)(x, dy, scale, estimated_mean, estimated_variance,
  epsilon)`` -> ``dx, dscale, dbias, dmean, dvar`` in one pass (Theano wrote this gradient as a
  graph): with ``s = sqrt(var + epsilon)``, ``dx = dy * scale / s``, ``dscale = sum(dy * (x -
  mean)) / s``, ``dbias = sum(dy)``, ``dmean = -sum(dy) * scale / s``, ``dvar = -sum(dy * (x -
  mean)) * scale / (2 * (var + epsilon) * s)``.

The gradient ops differentiate again (their own ``L_op`` differentiates their formula written as a
graph), so second derivatives are exact. As in Theano, ``epsilon`` and ``running_average_factor``
are not differentiated (disconnected).
"""
from __future__ import annotations

import numpy as np

from ffigraph.config import config
from ffigraph.graph.basic import Apply, clone_replace
from ffigraph.graph.c_interface import DelegatedCOp
from ffigraph.graph.op import Op
from ffigraph.scalar.basic import upcast, upgrade_to_float
from ffigraph.tensor.basic import (Alloc, NotScalarConstantError, as_tensor_variable, cast, get_scalar_constant_value,
                                   zeros_like)
from ffigraph.tensor.gradient import Lop, disconnected_type
from ffigraph.tensor.layout import unbroadcast
from ffigraph.tensor.math import mean as tmean, sqrt, sum as tsum
from ffigraph.tensor.type import TensorType

__all__ = ["batch_normalization", "batch_normalization_train", "batch_normalization_test",
           "AbstractBatchNormTrain", "AbstractBatchNormInference", "AbstractBatchNormTrainGrad",
           "AbstractBatchNormInferenceGrad"]


# ------------------------------------------------------------------ the old elementwise form


def batch_normalization(inputs, gamma, beta, mean, std, mode="low_mem"):
    """``(inputs - mean) * (gamma / std) + beta``, elementwise with broadcasting (Theano 0.7's
    function). ``mode``: ``'low_mem'`` or ``'high_mem'``, Theano's choice between one fused
    elementwise op and a plain graph; both give the same values here (the graph fuses)."""
    if mode not in ("low_mem", "high_mem"):
        raise ValueError('batch_normalization: mode must be either "low_mem" or "high_mem", got %r' % (mode,))
    inputs, gamma, beta, mean, std = [as_tensor_variable(v) for v in (inputs, gamma, beta, mean, std)]
    if mode == "low_mem":
        return (inputs - mean) / std * gamma + beta
    return (inputs - mean) * (gamma / std) + beta


# ------------------------------------------------------------------ the functions


def _prepare_axes(axes, ndim):
    """Theano's axes: ``(axes, kept axes)``, both sorted tuples."""
    if isinstance(axes, str):
        if axes == "per-activation":
            axes = (0,)
        elif axes == "spatial":
            axes = (0,) + tuple(range(2, ndim))
        else:
            raise ValueError("invalid axes: %r (expected 'per-activation', 'spatial' or a tuple of ints)" % (axes,))
    elif isinstance(axes, (tuple, list, np.ndarray)):
        try:
            axes = tuple(int(a) for a in axes)
        except (TypeError, ValueError):
            raise ValueError("invalid axes: %r (expected a tuple of ints)" % (axes,)) from None
    else:
        raise ValueError("invalid axes: %r (expected 'per-activation', 'spatial' or a tuple of ints)" % (axes,))
    axes = tuple(sorted(axes))
    if len(axes) == 0:
        raise ValueError("there should be at least one normalization axis")
    if min(axes) < 0 or max(axes) >= ndim:
        raise ValueError("axes should be less than ndim (<%d), but %s given" % (ndim, axes))
    if len(set(axes)) != len(axes):
        raise ValueError("repeated normalization axis in %s" % (axes,))
    return axes, tuple(a for a in range(ndim) if a not in axes)


def _check_epsilon(epsilon):
    # as Theano: converted to floatX first (numpy.float32(1e-5) < 1e-5, so with floatX=float32
    # 1e-5 itself is refused, as there)
    try:
        eps = np.asarray(epsilon, dtype=config.floatX)
    except (TypeError, ValueError):
        raise TypeError("epsilon must be a number, got %r" % (epsilon,)) from None
    if eps.ndim != 0:
        raise TypeError("epsilon must be a number, got %r" % (epsilon,))
    if not eps >= 1e-5:
        raise ValueError("epsilon must be at least 1e-5, got %s" % str(eps))
    return eps


def _layout(params, names, ndim, kept):
    """The parameters' rank (``ndim`` or ``len(kept)``); ValueError when they do not agree."""
    params_ndim = ndim if params[0].ndim == ndim else len(kept)
    for p, n in zip(params, names):
        if p.ndim != params_ndim:
            raise ValueError("%s must have as many dimensions as the inputs (%d) or as their non-normalized axes "
                             "(%d), all alike; gamma has %d, %s has %d"
                             % (", ".join(names), ndim, len(kept), params[0].ndim, n, p.ndim))
    return params_ndim


def _to_full(p, ndim, kept, params_ndim):
    """A parameter in the inputs' rank (the normalized axes inserted, of length 1)."""
    if params_ndim == ndim:
        return p
    pattern = ["x"] * ndim
    for i, a in enumerate(kept):
        pattern[a] = i
    return p.dimshuffle(*pattern)


def batch_normalization_train(inputs, gamma, beta, axes="per-activation", epsilon=1e-4, running_average_factor=0.1,
                              running_mean=None, running_var=None):
    """Batch normalization with the batch's statistics (Theano 1.0's function).

    ``axes``: ``'per-activation'`` (``(0,)``), ``'spatial'`` (``(0, 2, 3, ...)``) or a tuple of
    axes. ``gamma`` and ``beta`` (and the running averages): the shape of ``inputs`` with 1 on the
    normalized axes, or with those axes left out. ``epsilon`` >= 1e-5. Returns ``(out, mean,
    invstd)`` (``mean`` and ``invstd`` in the parameters' layout), with ``new_running_mean,
    new_running_var`` after them when ``running_mean`` and ``running_var`` are given (``running_var``
    updated with the unbiased variance ``m / (m - 1) * var``)."""
    inputs = as_tensor_variable(inputs)
    ndim = inputs.ndim
    axes, kept = _prepare_axes(axes, ndim)
    gamma, beta = as_tensor_variable(gamma), as_tensor_variable(beta)
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be given or both be None")
    params = [gamma, beta]
    names = ["gamma", "beta"]
    if running_mean is not None:
        params += [as_tensor_variable(running_mean), as_tensor_variable(running_var)]
        names += ["running_mean", "running_var"]
    params_ndim = _layout(params, names, ndim, kept)
    eps = _check_epsilon(epsilon)
    full = [_to_full(p, ndim, kept, params_ndim) for p in params]
    op = AbstractBatchNormTrain(axes=axes)
    if running_mean is not None:
        results = list(op(inputs, full[0], full[1], eps, running_average_factor, full[2], full[3]))
        # the new running averages have the type of the old (Theano's patternbroadcast)
        for k, old in ((3, full[2]), (4, full[3])):
            loose = [a for a in range(ndim) if old.type.shape[a] != 1 and results[k].type.shape[a] == 1]
            if loose:
                results[k] = unbroadcast(results[k], *loose)
    else:
        results = list(op(inputs, full[0], full[1], eps))
    if params_ndim != ndim:
        results = [results[0]] + [r.dimshuffle(*kept) for r in results[1:]]
    return tuple(results)


def batch_normalization_test(inputs, gamma, beta, mean, var, axes="per-activation", epsilon=1e-4):
    """Batch normalization with given statistics (Theano 1.0's function):
    ``(inputs - mean) * gamma / sqrt(var + epsilon) + beta``, the parameters in either layout (see
    ``batch_normalization_train``)."""
    inputs = as_tensor_variable(inputs)
    ndim = inputs.ndim
    axes, kept = _prepare_axes(axes, ndim)
    params = [as_tensor_variable(v) for v in (gamma, beta, mean, var)]
    params_ndim = _layout(params, ["gamma", "beta", "mean", "var"], ndim, kept)
    eps = _check_epsilon(epsilon)
    full = [_to_full(p, ndim, kept, params_ndim) for p in params]
    return AbstractBatchNormInference(axes=axes)(inputs, *full, epsilon=eps)


# ------------------------------------------------------------------ the ops


def _float_tensor(v, what, op):
    v = as_tensor_variable(v)
    if v.dtype.startswith("complex") or v.dtype == "float16":
        raise TypeError("%s: %s must be float32 or float64, got %s" % (op, what, v.dtype))
    return v


def _scalar(v, what, op):
    v = as_tensor_variable(v)
    if v.ndim != 0:
        raise TypeError("%s: %s must be a scalar (0-d), got %s with %d dimensions" % (op, what, v, v.ndim))
    if v.dtype.startswith("complex"):
        raise TypeError("%s: %s must be real, got %s" % (op, what, v.dtype))
    return cast(v, upgrade_to_float(v.dtype)) if v.dtype[0] != "f" else v


def _is_zeros(g):
    """Whether ``g`` is a gradient known to be all zeros (``grad``'s ``zeros_like`` of an unused output)."""
    if g is None:
        return True
    owner = getattr(g, "owner", None)
    if owner is None or not isinstance(owner.op, Alloc):
        return False
    try:
        return get_scalar_constant_value(owner.inputs[0]) == 0
    except NotScalarConstantError:
        return False


class _BatchNormOp(DelegatedCOp, Op):
    """The ops' common part: the normalized ``axes`` (sorted, distinct, non-negative), the checks of
    the tensors against ``x``, the output types."""

    c_impl = "ffigraph.tensor.nnet.bn_c"
    __props__ = ("axes",)
    c_kind = None

    def __init__(self, axes=(0,)):
        if not isinstance(axes, (tuple, list)):
            raise TypeError("%s: axes must be a tuple or list of ints, got %r" % (type(self).__name__, axes))
        axes = tuple(int(a) for a in axes)
        if not axes:
            raise ValueError("%s: there should be at least one normalization axis" % type(self).__name__)
        if min(axes) < 0 or len(set(axes)) != len(axes):
            raise ValueError("%s: axes must be distinct non-negative ints, got %s" % (type(self).__name__, axes))
        self.axes = tuple(sorted(axes))

    def __str__(self):
        return "%s{axes=%s}" % (type(self).__name__, ",".join(map(str, self.axes)))

    def _prepare(self, x, tensors, names):
        """``x`` and ``tensors`` in one float dtype, checked against the axes and x's rank."""
        x = _float_tensor(x, "x", self)
        tensors = [_float_tensor(t, n, self) for t, n in zip(tensors, names)]
        if x.ndim <= max(self.axes):
            raise ValueError("%s: axes should be less than ndim (<%d), but %s given" % (self, x.ndim, self.axes))
        dtype = upgrade_to_float(upcast(x.dtype, *[t.dtype for t in tensors]))
        x = cast(x, dtype)
        tensors = [cast(t, dtype) for t in tensors]
        for t, n in zip(tensors, names):
            if t.ndim != x.ndim:
                raise ValueError("%s: %s must have the %d dimensions of x, got %d" % (self, n, x.ndim, t.ndim))
            for a, (ts, xs) in enumerate(zip(t.type.shape, x.type.shape)):
                if n in ("dy",):
                    if ts is not None and xs is not None and ts != xs:
                        raise ValueError("%s: %s has length %d on axis %d where x has %d" % (self, n, ts, a, xs))
                elif a in self.axes:
                    if ts is not None and ts != 1:
                        raise ValueError("%s: %s must have length 1 on the normalized axis %d, not %d"
                                         % (self, n, a, ts))
                elif ts is not None and xs is not None and ts != xs:
                    raise ValueError("%s: %s has length %d on axis %d where x has %d" % (self, n, ts, a, xs))
        return x, tensors

    def _param_type(self, x, params):
        shape = []
        for a in range(x.ndim):
            if a in self.axes:
                shape.append(1)
                continue
            known = [s for s in [x.type.shape[a]] + [p.type.shape[a] for p in params] if s is not None]
            shape.append(known[0] if known else None)
        return TensorType(x.dtype, tuple(shape))

    def _param_shape(self, x_shape):
        return tuple(1 if a in self.axes else s for a, s in enumerate(x_shape))

    def _check_values(self, x, named):
        """perform's checks (the C code's): ValueError naming the input whose shape is wrong."""
        want = self._param_shape(x.shape)
        for n, v in named:
            need = x.shape if n == "dy" else want
            if v.shape != need:
                raise ValueError("%s: %s has shape %s, but %s is needed (%s)"
                                 % (self, n, v.shape, need, "the shape of x" if n == "dy"
                                    else "x's shape with length 1 on the normalized axes"))

    def _count(self, x):
        """The number of elements per lane (symbolic), as a float64."""
        m = cast(x.shape[self.axes[0]], "float64")
        for a in self.axes[1:]:
            m = m * x.shape[a]
        return m


def _np_stats(x, axes):
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        mean = np.mean(x, axis=axes, keepdims=True) if x.size else np.full(
            [1 if a in axes else s for a, s in enumerate(x.shape)], np.nan)
        var = np.mean((x - mean) ** 2, axis=axes, keepdims=True) if x.size else mean.copy()
    return mean, var


class AbstractBatchNormTrain(_BatchNormOp):
    """Batch normalization with the batch's statistics over ``axes``.

    Inputs: ``x``, ``scale``, ``bias`` (x's rank, length 1 on the axes), ``epsilon`` and
    ``running_average_factor`` (scalars), optionally ``running_mean`` and ``running_var``.
    Outputs: ``out``, ``mean``, ``invstd`` and, with the running averages, their new values."""

    c_kind = "train"

    def make_node(self, x, scale, bias, epsilon=1e-4, running_average_factor=0.1, running_mean=None,
                  running_var=None):
        if (running_mean is None) != (running_var is None):
            raise ValueError("%s: running_mean and running_var must either both be given or both be None" % self)
        tensors, names = [scale, bias], ["scale", "bias"]
        if running_mean is not None:
            tensors += [running_mean, running_var]
            names += ["running_mean", "running_var"]
        x, tensors = self._prepare(x, tensors, names)
        epsilon = _scalar(epsilon, "epsilon", self)
        factor = _scalar(running_average_factor, "running_average_factor", self)
        ptype = self._param_type(x, tensors)
        inputs = [x, tensors[0], tensors[1], epsilon, factor] + tensors[2:]
        outputs = [x.type(), ptype(), ptype()] + [ptype() for _ in tensors[2:]]
        return Apply(self, inputs, outputs)

    def perform(self, node, inputs, output_storage):
        x, scale, bias, eps, factor = inputs[:5]
        names = ["scale", "bias", "running_mean", "running_var"]
        self._check_values(x, list(zip(names, [inputs[1], inputs[2]] + list(inputs[5:]))))
        dtype = node.outputs[0].type.numpy_dtype
        mean, var = _np_stats(x, self.axes)
        with np.errstate(all="ignore"):
            invstd = 1.0 / np.sqrt(var + float(eps))
            out = (np.asarray(x, np.float64) - mean) * (np.asarray(scale, np.float64) * invstd) + bias
            results = [out, mean, invstd]
            if len(inputs) > 5:
                f = float(factor)
                m = np.float64(np.prod([x.shape[a] for a in self.axes]))
                results.append(np.asarray(inputs[5], np.float64) * (1.0 - f) + mean * f)
                results.append(np.asarray(inputs[6], np.float64) * (1.0 - f) + (m / (m - 1.0)) * var * f)
        for storage, r in zip(output_storage, results):
            storage[0] = np.asarray(r, dtype=dtype)

    def infer_shape(self, fgraph, node, input_shapes):
        xs = input_shapes[0]
        ps = tuple(1 if a in self.axes else xs[a] for a in range(len(xs)))
        return [tuple(xs)] + [ps] * (len(node.outputs) - 1)

    def connection_pattern(self, node):
        n_out = len(node.outputs)
        rows = [[True] * n_out,                                  # x
                [True] + [False] * (n_out - 1),                  # scale: out only
                [True] + [False] * (n_out - 1),                  # bias: out only
                [False] * n_out,                                 # epsilon (as Theano)
                [False] * n_out]                                 # running_average_factor (as Theano)
        if n_out > 3:
            rows += [[False] * 3 + [True, False], [False] * 4 + [True]]
        return rows

    def L_op(self, inputs, outputs, output_grads):
        x, scale, bias, eps, factor = inputs[:5]
        dy, dmean, dinvstd = output_grads[:3]
        _, mean, invstd = outputs[:3]
        extra = []
        running = len(inputs) > 5
        if running:
            d_rm, d_rv = output_grads[3:5]
            if not _is_zeros(d_rm):
                extra.append(("mean", d_rm * factor))
            if not _is_zeros(d_rv):
                # new_running_var = ... + (m / (m - 1)) * var * f, and var = invstd^-2 - eps:
                # d var / d invstd = -2 / invstd^3
                m = self._count(x)
                extra.append(("invstd", d_rv * factor * (m / (m - 1.0)) * (-2.0) / (invstd ** 3)))
        dm = None if _is_zeros(dmean) else dmean
        di = None if _is_zeros(dinvstd) else dinvstd
        for which, term in extra:
            if which == "mean":
                dm = term if dm is None else dm + term
            else:
                di = term if di is None else di + term
        grad_op = AbstractBatchNormTrainGrad(self.axes)
        if dm is None and di is None:
            dx, dscale, dbias = grad_op(x, dy, scale, mean, invstd, eps)
        else:
            dx, dscale, dbias = grad_op(x, dy, scale, mean, invstd, eps,
                                        dm if dm is not None else zeros_like(mean),
                                        di if di is not None else zeros_like(invstd))
        result = [dx, dscale, dbias, disconnected_type(), disconnected_type()]
        if running:
            result += [output_grads[3] * (1.0 - factor), output_grads[4] * (1.0 - factor)]
        return result


class AbstractBatchNormInference(_BatchNormOp):
    """Batch normalization with given statistics over ``axes``: ``(x - estimated_mean) * (scale /
    sqrt(estimated_variance + epsilon)) + bias``. The four parameters have x's rank and length 1
    on the axes; ``epsilon`` is a scalar."""

    c_kind = "inference"

    def make_node(self, x, scale, bias, estimated_mean, estimated_variance, epsilon=1e-4):
        names = ["scale", "bias", "estimated_mean", "estimated_variance"]
        x, tensors = self._prepare(x, [scale, bias, estimated_mean, estimated_variance], names)
        epsilon = _scalar(epsilon, "epsilon", self)
        return Apply(self, [x] + tensors + [epsilon], [x.type()])

    def perform(self, node, inputs, output_storage):
        x, scale, bias, mean, var, eps = inputs
        self._check_values(x, list(zip(["scale", "bias", "estimated_mean", "estimated_variance"],
                                       [scale, bias, mean, var])))
        with np.errstate(all="ignore"):
            out = (np.asarray(x, np.float64) - mean) * (np.asarray(scale, np.float64)
                                                        / np.sqrt(np.asarray(var, np.float64) + float(eps))) + bias
        output_storage[0][0] = np.asarray(out, dtype=node.outputs[0].type.numpy_dtype)

    def infer_shape(self, fgraph, node, input_shapes):
        return [tuple(input_shapes[0])]

    def connection_pattern(self, node):
        return [[True], [True], [True], [True], [True], [False]]

    def L_op(self, inputs, outputs, output_grads):
        x, scale, bias, mean, var, eps = inputs
        dx, dscale, dbias, dmean, dvar = AbstractBatchNormInferenceGrad(self.axes)(x, output_grads[0], scale, mean,
                                                                                   var, eps)
        return [dx, dscale, dbias, dmean, dvar, disconnected_type()]


def _second_order(op, inputs, outputs, output_grads, formula):
    """The L_op of a gradient op: its formula written as a graph of elementwise ops and reductions
    (``formula(*inputs)`` -> the outputs), differentiated by ``Lop``; ``epsilon`` disconnected.

    The formula is built on stand-ins for the inputs and differentiated with respect to them, then
    the inputs are put back: the inputs (the forward op's mean and invstd) depend on each other, and
    ``grad`` with respect to the inputs themselves would also follow those paths, which the caller's
    own backpropagation already takes."""
    stand_ins = [v.type() for v in inputs]
    exprs = formula(*stand_ins)
    wrt = [v for k, v in enumerate(stand_ins) if k != 5]
    grads = list(Lop(list(exprs), wrt, list(output_grads), disconnected_inputs="ignore"))
    grads = clone_replace(grads, replace=list(zip(stand_ins, inputs)))
    return grads[:5] + [disconnected_type()] + grads[5:]


class AbstractBatchNormTrainGrad(_BatchNormOp):
    """The gradient of AbstractBatchNormTrain: inputs ``x``, ``dy`` (the gradient of ``out``),
    ``scale``, ``x_mean``, ``x_invstd`` (the forward op's statistics), ``epsilon`` (not used, as in
    Theano), optionally ``dmean`` and ``dinvstd`` (the gradients of the ``mean`` and ``invstd``
    outputs); outputs ``dx``, ``dscale``, ``dbias``."""

    c_kind = "train_grad"

    def make_node(self, x, dy, scale, x_mean, x_invstd, epsilon=1e-4, dmean=None, dinvstd=None):
        if (dmean is None) != (dinvstd is None):
            raise ValueError("%s: dmean and dinvstd must either both be given or both be None" % self)
        tensors, names = [dy, scale, x_mean, x_invstd], ["dy", "scale", "x_mean", "x_invstd"]
        if dmean is not None:
            tensors += [dmean, dinvstd]
            names += ["dmean", "dinvstd"]
        x, tensors = self._prepare(x, tensors, names)
        epsilon = _scalar(epsilon, "epsilon", self)
        ptype = self._param_type(x, tensors[1:])
        return Apply(self, [x] + tensors[:4] + [epsilon] + tensors[4:], [x.type(), ptype(), ptype()])

    @staticmethod
    def _np_grad(axes, x, dy, scale, mean, invstd, dmean=None, dinvstd=None):
        x, dy, scale, mean, s = [np.asarray(v, np.float64) for v in (x, dy, scale, mean, invstd)]
        m = np.float64(np.prod([x.shape[a] for a in axes]))
        with np.errstate(all="ignore"):
            xd = x - mean
            mdx = np.mean(dy * xd, axis=axes, keepdims=True) if x.size else np.zeros_like(s)
            c = dy * s - xd * mdx * s ** 3
            dx = scale * (c - (np.mean(c, axis=axes, keepdims=True) if x.size else 0.0))
            if dmean is not None:
                dx = dx + dmean / m - dinvstd * s ** 3 * xd / m
            dscale = np.sum(dy * s * xd, axis=axes, keepdims=True)
            dbias = np.sum(dy, axis=axes, keepdims=True)
        return dx, dscale, dbias

    def perform(self, node, inputs, output_storage):
        x, dy, scale, mean, invstd = inputs[:5]
        named = list(zip(["dy", "scale", "x_mean", "x_invstd", "", "dmean", "dinvstd"], inputs[1:]))
        self._check_values(x, [nv for nv in named if nv[0]])
        extra = [np.asarray(v, np.float64) for v in inputs[6:]]
        results = self._np_grad(self.axes, x, dy, scale, mean, invstd, *extra)
        for storage, r, o in zip(output_storage, results, node.outputs):
            storage[0] = np.asarray(r, dtype=o.type.numpy_dtype)

    def infer_shape(self, fgraph, node, input_shapes):
        xs = input_shapes[0]
        ps = tuple(1 if a in self.axes else xs[a] for a in range(len(xs)))
        return [tuple(xs), ps, ps]

    def connection_pattern(self, node):
        rows = [[True, True, False],    # x
                [True, True, True],     # dy
                [True, False, False],   # scale
                [True, True, False],    # x_mean
                [True, True, False],    # x_invstd
                [False, False, False]]  # epsilon
        if len(node.inputs) > 6:
            rows += [[True, False, False], [True, False, False]]
        return rows

    def L_op(self, inputs, outputs, output_grads):
        axes = list(self.axes)
        op = self

        def formula(x, dy, scale, mean, s, eps, dmean=None, dinvstd=None):
            xd = x - mean
            mdx = tmean(dy * xd, axis=axes, keepdims=True)
            c = dy * s - xd * mdx * s ** 3
            dx = scale * (c - tmean(c, axis=axes, keepdims=True))
            if dmean is not None:
                m = op._count(x)
                dx = dx + dmean / m - dinvstd * s ** 3 * xd / m
            return [dx, tsum(dy * s * xd, axis=axes, keepdims=True), tsum(dy, axis=axes, keepdims=True)]

        return _second_order(self, inputs, outputs, output_grads, formula)


class AbstractBatchNormInferenceGrad(_BatchNormOp):
    """The gradient of AbstractBatchNormInference, in one pass: inputs ``x``, ``dy``, ``scale``,
    ``estimated_mean``, ``estimated_variance``, ``epsilon``; outputs ``dx``, ``dscale``, ``dbias``,
    ``dmean``, ``dvar`` (Theano's formulas; see the module's docstring)."""

    c_kind = "inference_grad"

    def make_node(self, x, dy, scale, estimated_mean, estimated_variance, epsilon=1e-4):
        names = ["dy", "scale", "estimated_mean", "estimated_variance"]
        x, tensors = self._prepare(x, [dy, scale, estimated_mean, estimated_variance], names)
        epsilon = _scalar(epsilon, "epsilon", self)
        ptype = self._param_type(x, tensors[1:])
        return Apply(self, [x] + tensors + [epsilon], [x.type()] + [ptype() for _ in range(4)])

    def perform(self, node, inputs, output_storage):
        x, dy, scale, mean, var, eps = inputs
        self._check_values(x, list(zip(["dy", "scale", "estimated_mean", "estimated_variance"],
                                       [dy, scale, mean, var])))
        x, dy, scale, mean, var = [np.asarray(v, np.float64) for v in (x, dy, scale, mean, var)]
        axes = self.axes
        with np.errstate(all="ignore"):
            ve = var + float(eps)
            sd = np.sqrt(ve)
            sdx = np.sum(dy * (x - mean), axis=axes, keepdims=True)
            sdy = np.sum(dy, axis=axes, keepdims=True)
            results = [dy * (scale / sd), sdx / sd, sdy, -sdy * (scale / sd), -sdx * (scale / (2.0 * ve * sd))]
        for storage, r, o in zip(output_storage, results, node.outputs):
            storage[0] = np.asarray(r, dtype=o.type.numpy_dtype)

    def infer_shape(self, fgraph, node, input_shapes):
        xs = input_shapes[0]
        ps = tuple(1 if a in self.axes else xs[a] for a in range(len(xs)))
        return [tuple(xs)] + [ps] * 4

    def connection_pattern(self, node):
        return [[False, True, False, False, True],   # x
                [True, True, True, True, True],      # dy
                [True, False, False, True, True],    # scale
                [False, True, False, False, True],   # estimated_mean
                [True, True, False, True, True],     # estimated_variance
                [False] * 5]                         # epsilon

    def L_op(self, inputs, outputs, output_grads):
        axes = list(self.axes)

        def formula(x, dy, scale, mean, var, eps):
            sd = sqrt(var + eps)
            sdx = tsum(dy * (x - mean), axis=axes, keepdims=True)
            sdy = tsum(dy, axis=axes, keepdims=True)
            return [dy * (scale / sd), sdx / sd, sdy, -sdy * (scale / sd), -sdx * (scale / (2.0 * (var + eps) * sd))]

        return _second_order(self, inputs, outputs, output_grads, formula)

"""Theano 1.0's ``theano.tensor.signal.pool``: max, sum and average pooling over the last two
(``pool_2d``) or three (``pool_3d``) axes of a tensor, and the gradient ops of pooling.

Names: ``pool_2d``, ``pool_3d``, ``max_pool_2d_same_size``, and the ops ``Pool``, ``MaxPoolGrad``,
``AveragePoolGrad``, ``DownsampleFactorMaxGradGrad`` (the second derivative of max pooling), with
Theano's ``make_node`` signatures: the window ``ws``, the ``stride`` and the padding ``pad`` are
symbolic integer vectors (usually constants, checked when the node is made; otherwise checked when
the function runs, by ``perform`` and by the C code alike).

Semantics (Theano's). Any number of leading axes, each pooled independently. Along a pooled axis
of length ``n``, with ``v = n + 2 * pad``, the number of windows is

* ``ignore_border=True``: ``max(0, (v - ws) // stride + 1)``: only whole windows;
* ``ignore_border=False`` (``pad`` must be 0): ``(v - 1) // stride + 1`` when ``stride >= ws``,
  else ``max(0, (v - 1 - ws) // stride + 1) + 1``: the windows that start inside the image, the
  last ones cut at the border (partial windows). An empty axis (``n = 0``) gives no window (Theano's
  formula gives one, empty, window when ``stride < ws``; ffigraph gives 0 in both cases).

Window ``o`` starts at ``o * stride - pad`` (coordinates of the unpadded image). Let ``A`` be the
window's part inside the real image and ``T`` the window clipped to the padded extent
``[-pad, n + pad)``. Then

* ``'max'``: the maximum over ``A`` (padding never wins; a NaN wins, as ``numpy.max``);
* ``'sum'``: the sum over ``A``;
* ``'average_exc_pad'``: the sum over ``A`` divided by ``|A|``;
* ``'average_inc_pad'``: the sum over ``A`` divided by ``|T|`` (padding counts as zeros; a partial
  window at the border of an unpadded image counts only its part inside the image).

With ``pad < ws`` (required, as in Theano) ``A`` is never empty for a non-empty image.

Gradients: ``Pool`` in max mode -> ``MaxPoolGrad(x, maxout, gz)``: every element of a window equal
to the window's maximum gets the window's gradient (ties all get it; overlapping windows add up);
the other modes -> ``AveragePoolGrad(x, gz)``, which spreads ``gz[w]`` (divided by ``|A|``/``|T|``
for the averages) over ``A``. ``MaxPoolGrad``'s gradient w.r.t. ``gz`` is
``DownsampleFactorMaxGradGrad(x, maxout, ggx)``: for each window, the sum of ``ggx`` over the
positions of ``A`` where ``x == maxout[w]`` (the exact adjoint of ``MaxPoolGrad``; Theano assigned
the last matching position's value instead, which differs only where a window has ties); its
gradient w.r.t. ``x`` and ``maxout`` is zero (as Theano; the function is piecewise constant in
them). ``AveragePoolGrad``'s gradient w.r.t. ``gz`` is ``Pool`` of the same mode;
``DownsampleFactorMaxGradGrad``'s w.r.t. its third input is ``MaxPoolGrad``. ``ws``, ``stride``
and ``pad`` are disconnected.

The C code (``pool_c``) handles float32 and float64, any strides, and splits the leading planes
over the library's thread pool when the work is large.
"""
from __future__ import annotations

import warnings

import numpy as np

from ffigraph.graph.basic import Apply, Constant
from ffigraph.graph.c_interface import DelegatedCOp
from ffigraph.graph.op import Op
from ffigraph.tensor.basic import as_tensor_variable, cast, constant, switch, zeros_like
from ffigraph.tensor.gradient import disconnected_type
from ffigraph.tensor.math import maximum, minimum
from ffigraph.tensor.type import TensorType

__all__ = ["pool_2d", "pool_3d", "max_pool_2d_same_size", "Pool", "PoolGrad", "MaxPoolGrad", "AveragePoolGrad",
           "DownsampleFactorMaxGradGrad", "MODES"]

MODES = ("max", "sum", "average_inc_pad", "average_exc_pad")


# ------------------------------------------------------------------ checks shared by the ops and perform


def _check_mode(mode, what):
    if mode not in MODES:
        raise ValueError("%s: mode must be one of %s, got %r" % (what, ", ".join(repr(m) for m in MODES), mode))


def _check_params(what, ws, stride, pad, ignore_border):
    """Check concrete window, stride and padding values (tuples of ints; None: not known yet):
    ValueError for a window below 1, a stride below 1 or a negative padding; NotImplementedError
    (Theano's) for a padding with ignore_border=False or a padding not smaller than the window."""
    for name, values, low in (("the pooling window ws", ws, 1), ("the stride", stride, 1), ("the padding pad", pad, 0)):
        for k, v in enumerate(values or ()):
            if v < low:
                raise ValueError("%s: %s must be %s, got %s[%d] = %d"
                                 % (what, name, "positive" if low else "non-negative", name.split()[-1], k, v))
    if pad is not None and any(p != 0 for p in pad) and not ignore_border:
        raise NotImplementedError("%s: padding works only with ignore_border=True" % what)
    if ws is not None and pad is not None:
        for k, (w, p) in enumerate(zip(ws, pad)):
            if p >= w:
                raise NotImplementedError("%s: padding must be smaller than the window (pad[%d] = %d, ws[%d] = %d)"
                                          % (what, k, p, k, w))


def _axis_windows(n, ws, stride, pad, ignore_border):
    """The number of windows along one axis (Python ints)."""
    v = n + 2 * pad
    if v == 0:
        return 0
    if ignore_border:
        return max(0, (v - ws) // stride + 1)
    if stride >= ws:
        return (v - 1) // stride + 1
    return max(0, (v - 1 - ws) // stride + 1) + 1


def _int_vector(v, nd, what, name):
    """``v`` (a sequence of ints, or a symbolic integer vector) as an int64 vector of length ``nd``."""
    if isinstance(v, (tuple, list, np.ndarray)) or np.isscalar(v):
        arr = np.asarray(v)
        if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
            raise TypeError("%s: %s must be a sequence of %d ints, got %r" % (what, name, nd, v))
        if arr.shape[0] != nd:
            raise ValueError("%s: %s must have %d values, got %r" % (what, name, nd, v))
        return constant(arr.astype(np.int64))
    v = as_tensor_variable(v)
    if v.ndim != 1 or np.dtype(v.dtype).kind not in "iu":
        raise TypeError("%s: %s must be an integer vector, got %s (%s, %d-d)" % (what, name, v, v.dtype, v.ndim))
    if v.type.shape[0] is not None and v.type.shape[0] != nd:
        raise ValueError("%s: %s must have %d values, got %d" % (what, name, nd, v.type.shape[0]))
    if v.dtype != "int64":
        v = cast(v, "int64")
    return v


def _values(v):
    """The values of a constant vector as a tuple of ints, else None."""
    if isinstance(v, Constant):
        return tuple(int(i) for i in np.asarray(v.data).ravel())
    return None


def _float_tensor(x, what, name, ndim=None, dtype=None):
    x = as_tensor_variable(x)
    if dtype is not None and x.dtype != dtype:
        x = cast(x, dtype)
    if np.dtype(x.dtype).kind != "f":
        raise TypeError("%s: %s must be a float tensor, got %s (%s)" % (what, name, x, x.dtype))
    if ndim is not None and x.ndim != ndim:
        raise TypeError("%s: %s must have %d dimensions (as the input), got %d" % (what, name, ndim, x.ndim))
    return x


def _sym_windows(n, ws, stride, pad, ignore_border):
    """The number of windows along one axis, ``n`` symbolic or an int, the others ints or symbolic."""
    v = n + 2 * pad
    if ignore_border:
        return maximum(0, (v - ws) // stride + 1)
    # pad is 0 here; an empty axis has no window (min(v, 1))
    whole = (v - 1 + stride) // stride
    partial = maximum(0, (v - 1 - ws) // stride + 1) + minimum(v, 1)
    if isinstance(stride, (int, np.integer)) and isinstance(ws, (int, np.integer)):
        return whole if stride >= ws else partial
    return switch(stride >= ws, whole, partial)


# ------------------------------------------------------------------ numpy reference (perform)


def _windows(in_shape, ws, stride, pad, ignore_border):
    """Per pooled axis, the list of (a, b, t): window ``A = [a, b)`` in the image and ``|T| = t``."""
    out = []
    for n, w, s, p in zip(in_shape, ws, stride, pad):
        axis = []
        for o in range(_axis_windows(n, w, s, p, ignore_border)):
            start = o * s - p
            axis.append((max(start, 0), min(start + w, n), min(start + w, n + p) - start))
        out.append(axis)
    return out


def _np_params(op, inputs, nd):
    ws, stride, pad = (tuple(int(i) for i in np.asarray(v).ravel()) for v in inputs)
    for name, v in (("ws", ws), ("stride", stride), ("pad", pad)):
        if len(v) != nd:
            raise ValueError("%s: %s must have %d values, got %d" % (op, name, nd, len(v)))
    _check_params(str(op), ws, stride, pad, op.ignore_border)
    return ws, stride, pad


def _np_out_shape(x_shape, nd, ws, stride, pad, ignore_border):
    return tuple(x_shape[:-nd]) + tuple(_axis_windows(n, w, s, p, ignore_border)
                                        for n, w, s, p in zip(x_shape[-nd:], ws, stride, pad))


def _window_iter(windows):
    """(out index, slices of A, |A|, |T|) for every window."""
    for idx in np.ndindex(*[len(a) for a in windows]):
        sl, na, nt = [], 1, 1
        for k, o in enumerate(idx):
            a, b, t = windows[k][o]
            sl.append(slice(a, b))
            na *= b - a
            nt *= t
        yield idx, tuple(sl), na, nt


def _check_shape(op, name, shape, want):
    if tuple(shape) != tuple(want):
        raise ValueError("%s: %s has shape %s, expected %s" % (op, name, tuple(shape), tuple(want)))


# ------------------------------------------------------------------ the ops


class _PoolBase(DelegatedCOp, Op):
    c_impl = "ffigraph.tensor.signal.pool_c"
    mode = "max"

    def __init__(self, ignore_border=False, mode="max", ndim=2):
        if ndim not in (2, 3):
            raise ValueError("%s: ndim must be 2 or 3, got %r" % (type(self).__name__, ndim))
        self.ignore_border = bool(ignore_border)
        self.mode = mode
        self.ndim = int(ndim)

    def __str__(self):
        return "%s{%s, ignore_border=%s, ndim=%d}" % (type(self).__name__, self.mode, self.ignore_border, self.ndim)

    def _params(self, x, ws, stride, pad):
        what = str(self)
        if x.ndim < self.ndim:
            raise NotImplementedError("%s: pooling over %d axes needs an input of at least %d dimensions, got %d"
                                      % (what, self.ndim, self.ndim, x.ndim))
        ws = _int_vector(ws, self.ndim, what, "ws")
        stride = ws if stride is None else _int_vector(stride, self.ndim, what, "stride")
        pad = _int_vector((0,) * self.ndim if pad is None else pad, self.ndim, what, "pad")
        vws, vst, vpad = _values(ws), _values(stride), _values(pad)
        for name, v in (("ws", vws), ("stride", vst), ("pad", vpad)):
            if v is not None and len(v) != self.ndim:
                raise ValueError("%s: %s must have %d values, got %d" % (what, name, self.ndim, len(v)))
        _check_params(what, vws, vst, vpad, self.ignore_border)
        return ws, stride, pad, (vws, vst, vpad)

    def _static_out(self, x, values):
        vws, vst, vpad = values
        lead = x.type.shape[:-self.ndim]
        if vws is None or vst is None or vpad is None:
            return tuple(lead) + (None,) * self.ndim
        return tuple(lead) + tuple(None if n is None else _axis_windows(n, w, s, p, self.ignore_border)
                                   for n, w, s, p in zip(x.type.shape[-self.ndim:], vws, vst, vpad))

    def _out_shape_sym(self, xshape, node_params):
        ws, stride, pad = node_params
        vals = [_values(v) for v in (ws, stride, pad)]
        nd = self.ndim
        out = list(xshape[:-nd])
        for k in range(nd):
            w = vals[0][k] if vals[0] is not None else ws[k]
            s = vals[1][k] if vals[1] is not None else stride[k]
            p = vals[2][k] if vals[2] is not None else pad[k]
            n = xshape[len(xshape) - nd + k]
            if all(isinstance(i, (int, np.integer)) for i in (n, w, s, p)):
                out.append(_axis_windows(int(n), w, s, p, self.ignore_border))
            else:
                out.append(_sym_windows(n, w, s, p, self.ignore_border))
        return out

    def connection_pattern(self, node):
        n_arrays = len(node.inputs) - 3
        return [[True]] * n_arrays + [[False]] * 3

    def _max_node(self, x, maxout, gz, ws, stride, pad, out_of):
        """The node of a max-pooling gradient op, ``(x, maxout, gz, ws, stride, pad)``, whose
        output has the type of ``out_of`` ("x" or "maxout")."""
        what = str(self)
        x = _float_tensor(x, what, "the input x")
        maxout = _float_tensor(maxout, what, "maxout", x.ndim, x.dtype)
        gz = _float_tensor(gz, what, "gz", x.ndim, x.dtype)
        ws, stride, pad, _ = self._params(x, ws, stride, pad)
        out = x if out_of == "x" else maxout
        return Apply(self, [x, maxout, gz, ws, stride, pad], [out.type()])


class Pool(_PoolBase):
    """Pooling over the last ``ndim`` axes: ``Pool(ignore_border=False, mode='max', ndim=2)(x, ws,
    stride=None, pad=None)`` (``stride`` defaults to ``ws``, ``pad`` to zeros). See the module."""

    __props__ = ("ignore_border", "mode", "ndim")

    def __init__(self, ignore_border=False, mode="max", ndim=2):
        _check_mode(mode, "Pool")
        super().__init__(ignore_border, mode, ndim)

    @staticmethod
    def out_shape(imgshape, ws=None, ignore_border=False, stride=None, pad=None, ndim=2, ds=None, st=None,
                  padding=None):
        """The shape of the result of pooling an input of shape ``imgshape`` (its last ``ndim``
        entries pooled): a list, of ints when everything is an int, else with symbolic entries.
        ``ds``, ``st``, ``padding``: Theano's deprecated names of ``ws``, ``stride``, ``pad``."""
        ws = _deprecated_alias(ws, "ws", ds, "ds", "Pool.out_shape")
        stride = _deprecated_alias(stride, "stride", st, "st", "Pool.out_shape")
        pad = _deprecated_alias(pad, "pad", padding, "padding", "Pool.out_shape")
        if ws is None:
            raise ValueError("Pool.out_shape: ws must be given")
        if len(imgshape) < ndim:
            raise TypeError("Pool.out_shape: imgshape must have at least %d dimensions, got %d" % (ndim, len(imgshape)))
        stride = ws if stride is None else stride
        pad = (0,) * ndim if pad is None else pad
        out = list(imgshape[:-ndim])
        for k in range(ndim):
            n, w, s, p = imgshape[len(imgshape) - ndim + k], ws[k], stride[k], pad[k]
            if all(isinstance(i, (int, np.integer)) for i in (n, w, s, p)):
                out.append(_axis_windows(int(n), int(w), int(s), int(p), ignore_border))
            else:
                out.append(_sym_windows(n, w, s, p, ignore_border))
        return out

    def make_node(self, x, ws, stride=None, pad=None):
        x = _float_tensor(x, str(self), "the input")
        ws, stride, pad, values = self._params(x, ws, stride, pad)
        out = TensorType(x.dtype, self._static_out(x, values))()
        return Apply(self, [x, ws, stride, pad], [out])

    def perform(self, node, inputs, output_storage):
        x = inputs[0]
        nd = self.ndim
        if x.ndim < nd:
            raise NotImplementedError("%s: input of %d dimensions" % (self, x.ndim))
        ws, stride, pad = _np_params(self, inputs[1:], nd)
        zshape = _np_out_shape(x.shape, nd, ws, stride, pad, self.ignore_border)
        z = np.empty(zshape, dtype=x.dtype)
        axes = tuple(range(x.ndim - nd, x.ndim))
        lead = (slice(None),) * (x.ndim - nd)
        for idx, sl, na, nt in _window_iter(_windows(x.shape[-nd:], ws, stride, pad, self.ignore_border)):
            part = x[lead + sl]
            if self.mode == "max":
                val = part.max(axis=axes)
            else:
                val = part.sum(axis=axes, dtype=np.float64)
                if self.mode == "average_exc_pad":
                    val = val / na
                elif self.mode == "average_inc_pad":
                    val = val / nt
            z[lead + idx] = val
        output_storage[0][0] = z

    def infer_shape(self, fgraph, node, input_shapes):
        return [self._out_shape_sym(input_shapes[0], node.inputs[1:])]

    def L_op(self, inputs, outputs, output_grads):
        x, ws, stride, pad = inputs
        (gz,) = output_grads
        if self.mode == "max":
            gx = MaxPoolGrad(self.ignore_border, self.ndim)(x, outputs[0], gz, ws, stride, pad)
        else:
            gx = AveragePoolGrad(self.ignore_border, self.mode, self.ndim)(x, gz, ws, stride, pad)
        return [gx, disconnected_type(), disconnected_type(), disconnected_type()]


class PoolGrad(_PoolBase):
    """The common part of the gradient ops (Theano's base class of that name)."""

    out_shape = staticmethod(Pool.out_shape)



class MaxPoolGrad(PoolGrad):
    """The gradient of max pooling: ``MaxPoolGrad(ignore_border, ndim=2)(x, maxout, gz, ws,
    stride=None, pad=None)`` -> ``gx`` of ``x``'s shape: each element of a window equal to the
    window's maximum ``maxout[w]`` gets ``gz[w]`` (overlapping windows add up)."""

    __props__ = ("ignore_border", "mode", "ndim")

    def __init__(self, ignore_border, ndim=2, mode="max"):
        if mode != "max":
            raise ValueError("MaxPoolGrad: mode must be 'max', got %r" % (mode,))
        super().__init__(ignore_border, "max", ndim)

    def make_node(self, x, maxout, gz, ws, stride=None, pad=None):
        return self._max_node(x, maxout, gz, ws, stride, pad, "x")

    def perform(self, node, inputs, output_storage):
        x, maxout, gz = inputs[:3]
        nd = self.ndim
        ws, stride, pad = _np_params(self, inputs[3:], nd)
        zshape = _np_out_shape(x.shape, nd, ws, stride, pad, self.ignore_border)
        _check_shape(self, "maxout", maxout.shape, zshape)
        _check_shape(self, "gz", gz.shape, zshape)
        gx = np.zeros(x.shape, dtype=x.dtype)
        lead = (slice(None),) * (x.ndim - nd)
        expand = (Ellipsis,) + (None,) * nd
        for idx, sl, na, nt in _window_iter(_windows(x.shape[-nd:], ws, stride, pad, self.ignore_border)):
            hit = x[lead + sl] == maxout[lead + idx][expand]
            gx[lead + sl] += np.where(hit, gz[lead + idx][expand], 0).astype(x.dtype)
        output_storage[0][0] = gx

    def infer_shape(self, fgraph, node, input_shapes):
        return [input_shapes[0]]

    def L_op(self, inputs, outputs, output_grads):
        x, maxout, gz, ws, stride, pad = inputs
        (ggx,) = output_grads
        return [zeros_like(x), zeros_like(maxout),
                DownsampleFactorMaxGradGrad(self.ignore_border, "max", self.ndim)(x, maxout, ggx, ws, stride, pad),
                disconnected_type(), disconnected_type(), disconnected_type()]


class AveragePoolGrad(PoolGrad):
    """The gradient of sum and average pooling: ``AveragePoolGrad(ignore_border,
    mode='average_inc_pad', ndim=2)(x, gz, ws, stride=None, pad=None)`` -> ``gx`` of ``x``'s shape:
    ``gz[w]`` (divided by ``|T|`` or ``|A|`` for the averages) added over the window's part of the
    image. ``x`` gives only the shape."""

    __props__ = ("ignore_border", "mode", "ndim")

    def __init__(self, ignore_border, mode="average_inc_pad", ndim=2):
        if mode not in ("sum", "average_inc_pad", "average_exc_pad"):
            raise ValueError("AveragePoolGrad: mode must be one of 'sum', 'average_inc_pad', 'average_exc_pad', "
                             "got %r" % (mode,))
        super().__init__(ignore_border, mode, ndim)

    def make_node(self, x, gz, ws, stride=None, pad=None):
        what = str(self)
        x = _float_tensor(x, what, "the input x")
        gz = _float_tensor(gz, what, "gz", x.ndim, x.dtype)
        ws, stride, pad, _ = self._params(x, ws, stride, pad)
        return Apply(self, [x, gz, ws, stride, pad], [x.type()])

    def perform(self, node, inputs, output_storage):
        x, gz = inputs[:2]
        nd = self.ndim
        ws, stride, pad = _np_params(self, inputs[2:], nd)
        zshape = _np_out_shape(x.shape, nd, ws, stride, pad, self.ignore_border)
        _check_shape(self, "gz", gz.shape, zshape)
        gx = np.zeros(x.shape, dtype=np.float64)
        lead = (slice(None),) * (x.ndim - nd)
        expand = (Ellipsis,) + (None,) * nd
        for idx, sl, na, nt in _window_iter(_windows(x.shape[-nd:], ws, stride, pad, self.ignore_border)):
            g = gz[lead + idx].astype(np.float64)
            if self.mode == "average_exc_pad":
                g = g / na
            elif self.mode == "average_inc_pad":
                g = g / nt
            gx[lead + sl] += g[expand]
        output_storage[0][0] = gx.astype(x.dtype)

    def infer_shape(self, fgraph, node, input_shapes):
        return [input_shapes[0]]

    def L_op(self, inputs, outputs, output_grads):
        x, gz, ws, stride, pad = inputs
        (ggx,) = output_grads
        return [zeros_like(x), Pool(self.ignore_border, self.mode, self.ndim)(ggx, ws, stride, pad),
                disconnected_type(), disconnected_type(), disconnected_type()]


class DownsampleFactorMaxGradGrad(_PoolBase):
    """The second derivative of max pooling: ``DownsampleFactorMaxGradGrad(ignore_border,
    mode='max', ndim=2)(x, maxout, gz, ws, stride=None, pad=None)`` -> an array of ``maxout``'s
    shape: for each window, the sum of ``gz`` (an array of ``x``'s shape: the gradient flowing
    into ``MaxPoolGrad``'s output) over the window's positions where ``x == maxout[w]``."""

    __props__ = ("ignore_border", "mode", "ndim")

    def __init__(self, ignore_border, mode="max", ndim=2):
        if mode != "max":
            raise ValueError("DownsampleFactorMaxGradGrad: mode must be 'max', got %r" % (mode,))
        super().__init__(ignore_border, "max", ndim)

    def make_node(self, x, maxout, gz, ws, stride=None, pad=None):
        return self._max_node(x, maxout, gz, ws, stride, pad, "maxout")

    def perform(self, node, inputs, output_storage):
        x, maxout, ggx = inputs[:3]
        nd = self.ndim
        ws, stride, pad = _np_params(self, inputs[3:], nd)
        zshape = _np_out_shape(x.shape, nd, ws, stride, pad, self.ignore_border)
        _check_shape(self, "maxout", maxout.shape, zshape)
        _check_shape(self, "gz", ggx.shape, x.shape)
        z = np.zeros(zshape, dtype=x.dtype)
        lead = (slice(None),) * (x.ndim - nd)
        axes = tuple(range(x.ndim - nd, x.ndim))
        expand = (Ellipsis,) + (None,) * nd
        for idx, sl, na, nt in _window_iter(_windows(x.shape[-nd:], ws, stride, pad, self.ignore_border)):
            hit = x[lead + sl] == maxout[lead + idx][expand]
            z[lead + idx] = np.where(hit, ggx[lead + sl], 0).sum(axis=axes, dtype=np.float64)
        output_storage[0][0] = z

    def infer_shape(self, fgraph, node, input_shapes):
        return [input_shapes[1]]

    def L_op(self, inputs, outputs, output_grads):
        x, maxout, ggx, ws, stride, pad = inputs
        (gz,) = output_grads
        return [zeros_like(x), zeros_like(maxout),
                MaxPoolGrad(self.ignore_border, self.ndim)(x, maxout, gz, ws, stride, pad),
                disconnected_type(), disconnected_type(), disconnected_type()]


# ------------------------------------------------------------------ the functions


def _deprecated_alias(new, new_name, old, old_name, what):
    if old is None:
        return new
    if new is not None:
        raise ValueError("%s: you can't provide a value to both '%s' and '%s'" % (what, new_name, old_name))
    warnings.warn("%s: the '%s' parameter is deprecated; use '%s'" % (what, old_name, new_name),
                  DeprecationWarning, stacklevel=3)
    return old


def _pool_nd(nd, what, input, ws, ignore_border, stride, pad, mode, ds, st, padding):
    ws = _deprecated_alias(ws, "ws", ds, "ds", what)
    stride = _deprecated_alias(stride, "stride", st, "st", what)
    if padding is not None:
        if pad not in (None, (0,) * nd):
            raise ValueError("%s: you can't provide a value to both 'pad' and 'padding'" % what)
        pad = _deprecated_alias(None, "pad", padding, "padding", what)
    if ws is None:
        raise ValueError("%s: the pooling window ws must be given" % what)
    input = as_tensor_variable(input)
    if input.ndim < nd:
        raise NotImplementedError("%s requires a dimension >= %d" % (what, nd))
    _check_mode(mode, what)
    if ignore_border is None:
        warnings.warn("%s() will have the parameter ignore_border default value changed to True (currently "
                      "False). To have consistent behavior with all Theano versions, explicitly add the parameter "
                      "ignore_border=True." % what, UserWarning, stacklevel=3)
        ignore_border = False
    return Pool(ignore_border, mode=mode, ndim=nd)(input, ws, stride, pad)


def pool_2d(input, ws=None, ignore_border=None, stride=None, pad=(0, 0), mode="max", ds=None, st=None,
            padding=None):
    """Pool the last two axes of ``input`` (Theano 1.0's ``pool_2d``).

    ``ws``: the window (a pair, required); ``stride``: the step between windows (default ``ws``);
    ``pad``: zeros added on both sides (requires ``ignore_border=True``, and ``pad < ws``);
    ``mode``: 'max', 'sum', 'average_inc_pad' or 'average_exc_pad'. ``ignore_border=True`` keeps
    only whole windows; False keeps the partial windows at the end. ``ignore_border=None`` (the
    default) warns, as Theano 1.0 does, that the default will change to True, and uses False.
    ``ds``, ``st``, ``padding``: Theano's deprecated names of ``ws``, ``stride``, ``pad``.
    """
    return _pool_nd(2, "pool_2d", input, ws, ignore_border, stride, pad, mode, ds, st, padding)


def pool_3d(input, ws=None, ignore_border=None, stride=None, pad=(0, 0, 0), mode="max", ds=None, st=None,
            padding=None):
    """Pool the last three axes of ``input``; the arguments are ``pool_2d``'s, with triples."""
    return _pool_nd(3, "pool_3d", input, ws, ignore_border, stride, pad, mode, ds, st, padding)


def max_pool_2d_same_size(input, patch_size):
    """Keep the elements that are the maximum of their (non-overlapping) ``patch_size`` patch and
    zero the others; the result has ``input``'s shape (Theano's). Elements beyond the last whole
    patch are zero."""
    input = as_tensor_variable(input)
    pooled = Pool(ignore_border=True, mode="max", ndim=2)(input, patch_size)
    return MaxPoolGrad(True, 2)(input, pooled, pooled, patch_size)

"""Theano 1.0's abstract convolutions: ``conv2d``, ``conv3d``, their gradient ops and helpers.

The three op kinds (each for 2 or 3 spatial axes; C code in ``ffigraph.tensor.nnet.conv_c``):

* ``AbstractConv2d``/``AbstractConv3d`` (kind "forward"): ``img`` ``(B, C, *S)`` and ``kern``
  ``(O, C/G, *K)`` give ``(B, O, *P)``;
* ``AbstractConv2d_gradWeights``/``AbstractConv3d_gradWeights`` (kind "grad_weights"): ``img``,
  ``topgrad`` ``(B, O, *P)`` and the kernel's spatial shape (an int64 vector) give ``(O, C/G, *K)``;
* ``AbstractConv2d_gradInputs``/``AbstractConv3d_gradInputs`` (kind "grad_inputs"): ``kern``,
  ``topgrad`` and the image's spatial shape give ``(B, C, *S)``.

Semantics, per spatial axis (Theano's; B batch, C input channels, O output channels, G groups):
the dilated kernel size is ``dk = (K - 1) * d + 1``; the pads ``(pl, pr)`` are (0, 0) for 'valid',
(dk - 1, dk - 1) for 'full', (dk // 2, dk // 2) for 'half', or explicit (an int p is (p, p); a
pair per axis is allowed in 2D and 3D; no padding at all is 'valid', as in Theano); the output size
is ``P = (S + pl + pr - dk) // s + 1``.
With ``xpad`` the zero-padded image and ``Wf`` the kernel flipped along every spatial axis when
``filter_flip`` (a true convolution, Theano's default; False gives a cross-correlation)::

    out[b, o, p] = sum_{c < C/G, i < K} xpad[b, g*C/G + c, p*s + i*d] * Wf[o, c, i],  g = o // (O/G)

grad_weights is the adjoint of the forward in the kernel, grad_inputs the adjoint in the image
(rows of the padded image no window reads get 0). Run-time errors (ValueError, naming the op and
the numbers): channels not divisible by the groups, the kernel's channels not C/G, a (dilated)
kernel larger than the padded input, a gradient op's ``shape`` input with entries < 1 or not
matching ``topgrad`` ("invalid input_shape for gradInputs" / "invalid filter_shape for
gradWeights", as Theano says).

The public functions are Theano 1.0's: ``conv2d`` (``nnet.conv2d``: with the deprecated
``image_shape`` alias), ``abstract_conv2d`` (``abstract_conv.conv2d``'s signature), ``conv3d``,
``conv2d_grad_wrt_inputs``/``_weights``, ``conv3d_grad_wrt_inputs``/``_weights``,
``conv2d_transpose``, ``separable_conv2d``/``separable_conv3d``, ``causal_conv1d``,
``bilinear_upsampling`` (integer and fractional ratios)/``bilinear_kernel_1D``/``bilinear_kernel_2D``
and the shape helpers ``get_conv_output_shape``, ``get_conv_shape_1axis``,
``get_conv_gradweights_shape(_1axis)``, ``get_conv_gradinputs_shape(_1axis)`` (None where a size is
not known) and ``check_conv_gradinputs_shape``. Unshared convolutions (``unshared=True``) are not
implemented (NotImplementedError).

Where Theano 1.0 has two ``conv2d`` (``nnet.conv2d``, with the deprecated ``image_shape`` alias, and
``abstract_conv.conv2d`` without it), this module's ``conv2d`` is ``nnet.conv2d``'s and
``abstract_conv2d`` is ``abstract_conv.conv2d``'s (``nnet.abstract_conv2d`` in Theano).
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ffigraph.graph.basic import Apply, Constant, Variable
from ffigraph.graph.c_interface import DelegatedCOp
from ffigraph.graph.op import Op
from ffigraph.tensor.basic import as_tensor_variable, cast, concatenate, constant, stack
from ffigraph.tensor.gradient import disconnected_type
from ffigraph.tensor.shapes import reshape
from ffigraph.tensor.special import float_input
from ffigraph.tensor.type import TensorType

__all__ = [
    "BaseAbstractConv", "AbstractConv", "AbstractConv2d", "AbstractConv3d",
    "AbstractConv_gradWeights", "AbstractConv2d_gradWeights", "AbstractConv3d_gradWeights",
    "AbstractConv_gradInputs", "AbstractConv2d_gradInputs", "AbstractConv3d_gradInputs",
    "conv2d", "abstract_conv2d", "conv3d", "conv2d_grad_wrt_inputs", "conv2d_grad_wrt_weights",
    "conv3d_grad_wrt_inputs", "conv3d_grad_wrt_weights", "conv2d_transpose",
    "separable_conv2d", "separable_conv3d", "causal_conv1d",
    "bilinear_upsampling", "bilinear_kernel_1D", "bilinear_kernel_2D",
    "get_conv_output_shape", "get_conv_shape_1axis", "get_conv_gradweights_shape",
    "get_conv_gradweights_shape_1axis", "get_conv_gradinputs_shape", "get_conv_gradinputs_shape_1axis",
    "check_conv_gradinputs_shape",
]

_MODES = ("valid", "full", "half")


# ------------------------------------------------------------------ normalizing the parameters


def _is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _norm_border_mode(border_mode, convdim):
    """'valid' | 'full' | 'half' | a tuple of ``convdim`` (lo, hi) pairs of ints >= 0."""
    bad = ValueError("invalid border_mode %r: expected 'valid', 'full', 'half', an int >= 0, or a tuple of %d ints "
                     ">= 0 or of %d (lo, hi) pairs of ints >= 0" % (border_mode, convdim, convdim))
    if isinstance(border_mode, str):
        if border_mode not in _MODES:
            raise bad
        return border_mode
    if _is_int(border_mode):
        border_mode = (border_mode,) * convdim
    if not isinstance(border_mode, (tuple, list)) or len(border_mode) != convdim:
        raise bad
    pairs = []
    for entry in border_mode:
        if _is_int(entry):
            entry = (entry, entry)
        if (not isinstance(entry, (tuple, list)) or len(entry) != 2 or not all(_is_int(e) for e in entry)
                or min(entry) < 0):
            raise bad
        pairs.append((int(entry[0]), int(entry[1])))
    if all(pair == (0, 0) for pair in pairs):
        return "valid"   # as Theano: no padding at all is 'valid'
    return tuple(pairs)


def _norm_ints(value, convdim, what):
    """A tuple of ``convdim`` ints >= 1 (None: all ones)."""
    if value is None:
        return (1,) * convdim
    if _is_int(value):
        value = (value,) * convdim
    if not isinstance(value, (tuple, list)) or len(value) != convdim:
        raise ValueError("%s must have %d elements, got %r" % (what, convdim, value))
    if not all(_is_int(v) for v in value) or min(value) < 1:
        raise ValueError("%s must be ints >= 1, got %r" % (what, tuple(value)))
    return tuple(int(v) for v in value)


def _static_entry(v, what):
    """An int, or None for None and for a size only known when the graph runs."""
    if v is None:
        return None
    if isinstance(v, Constant):
        v = v.data
    if isinstance(v, Variable):
        return None
    v = np.asarray(v)
    if v.ndim != 0 or v.dtype.kind not in "iu":
        raise ValueError("%s entries must be ints or None, got %r" % (what, v))
    if int(v) < 0:
        raise ValueError("%s entries must be >= 0, got %d" % (what, int(v)))
    return int(v)


def _norm_shape(shape, convdim, what):
    """A tuple of ``2 + convdim`` ints or None (all None when not given)."""
    if shape is None:
        return (None,) * (2 + convdim)
    if isinstance(shape, Variable):
        try:
            n = shape.type.shape[0]
        except (AttributeError, IndexError, TypeError):
            n = None
        if n is None:
            return (None,) * (2 + convdim)
        shape = [shape[i] for i in range(n)]
    shape = tuple(shape)
    if len(shape) != 2 + convdim:
        raise ValueError("%s must have %d elements, got %r" % (what, 2 + convdim, shape))
    return tuple(_static_entry(v, what) for v in shape)


# ------------------------------------------------------------------ the numpy reference


def _pads(border_mode, dil_kernel):
    if border_mode == "valid":
        return tuple((0, 0) for _ in dil_kernel)
    if border_mode == "full":
        return tuple((k - 1, k - 1) for k in dil_kernel)
    if border_mode == "half":
        return tuple((k // 2, k // 2) for k in dil_kernel)
    return tuple(border_mode)


def _windows(xpad, out_spatial, kern_spatial, subsample, dilation):
    """The read-only view (B, C, *P, *K) of xpad[b, c, p*s + i*d]."""
    st = xpad.strides
    shape = xpad.shape[:2] + tuple(out_spatial) + tuple(kern_spatial)
    strides = st[:2] + tuple(st[2 + a] * s for a, s in enumerate(subsample)) + \
        tuple(st[2 + a] * d for a, d in enumerate(dilation))
    return np.lib.stride_tricks.as_strided(xpad, shape, strides, writeable=False)


# ------------------------------------------------------------------ the ops


class BaseAbstractConv(DelegatedCOp, Op):
    """The common part of the convolution ops (see the module docstring for the semantics).

    Normalized attributes: ``convdim`` (2 or 3), ``border_mode`` ('valid', 'full', 'half' or a
    tuple of (lo, hi) pairs), ``subsample`` and ``filter_dilation`` (tuples of ints >= 1),
    ``filter_flip``, ``num_groups``, ``unshared`` (False) and the shape hints ``imshp``, ``kshp``
    (tuples of ints or None)."""

    c_impl = "ffigraph.tensor.nnet.conv_c"
    __props__ = ("convdim", "border_mode", "subsample", "filter_flip", "imshp", "kshp", "filter_dilation",
                 "num_groups", "unshared")
    kind = None

    def __init__(self, convdim, imshp=None, kshp=None, border_mode="valid", subsample=None, filter_flip=True,
                 filter_dilation=None, num_groups=1, unshared=False):
        if convdim not in (2, 3) or isinstance(convdim, bool):
            raise ValueError("convolution dimension %r is not supported (2 or 3)" % (convdim,))
        self.convdim = int(convdim)
        if unshared:
            raise NotImplementedError("%s: unshared convolution (unshared=True) is not implemented"
                                      % type(self).__name__)
        self.unshared = False
        self.border_mode = _norm_border_mode(border_mode, self.convdim)
        self.subsample = _norm_ints(subsample, self.convdim, "subsample")
        self.filter_dilation = _norm_ints(filter_dilation, self.convdim, "filter_dilation")
        self.filter_flip = bool(filter_flip)
        if not _is_int(num_groups) or num_groups < 1:
            raise ValueError("num_groups must be an int >= 1, got %r" % (num_groups,))
        self.num_groups = int(num_groups)
        self.imshp = _norm_shape(imshp, self.convdim, "imshp")
        self.kshp = _norm_shape(kshp, self.convdim, "kshp")
        g = self.num_groups
        if self.kshp[0] is not None and self.kshp[0] % g:
            raise ValueError("%s: %d filters cannot be split into %d groups" % (self, self.kshp[0], g))
        if self.imshp[1] is not None and self.imshp[1] % g:
            raise ValueError("%s: %d input channels cannot be split into %d groups" % (self, self.imshp[1], g))
        if self.imshp[1] is not None and self.kshp[1] is not None and self.imshp[1] != self.kshp[1] * g:
            raise ValueError("%s: the filters have %d input channels per group, the image %d (%d channels in %d "
                             "groups)" % (self, self.kshp[1], self.imshp[1] // g, self.imshp[1], g))

    def __str__(self):
        return type(self).__name__

    # -- helpers shared by make_node / perform / infer_shape

    def pads(self, kernel_spatial):
        """The (lo, hi) pads of every spatial axis, for the kernel of spatial size ``kernel_spatial``
        (before dilation)."""
        dil = tuple((int(k) - 1) * d + 1 for k, d in zip(kernel_spatial, self.filter_dilation))
        return _pads(self.border_mode, dil)

    def _dil_kernel(self, kernel_spatial):
        return tuple((int(k) - 1) * d + 1 for k, d in zip(kernel_spatial, self.filter_dilation))

    def _out_spatial(self, img_spatial, kern_spatial):
        """P per axis (checking the kernel fits the padded input)."""
        dil = self._dil_kernel(kern_spatial)
        pads = _pads(self.border_mode, dil)
        padded = tuple(int(S) + pl + pr for S, (pl, pr) in zip(img_spatial, pads))
        if any(p < k for p, k in zip(padded, dil)):
            raise ValueError("%s: the filter (%s, dilated) is larger than the padded input (%s)"
                             % (self, "x".join(map(str, dil)), "x".join(map(str, padded))))
        return tuple((p - k) // s + 1 for p, k, s in zip(padded, dil, self.subsample)), pads

    def _check_groups(self, n_in, n_out, kern_in):
        g = self.num_groups
        if n_in % g:
            raise ValueError("%s: %d input channels cannot be split into %d groups" % (self, n_in, g))
        if n_out % g:
            raise ValueError("%s: %d output channels (filters) cannot be split into %d groups" % (self, n_out, g))
        if kern_in != n_in // g:
            raise ValueError("%s: the filters have %d input channels per group, the image %d (%d channels in %d "
                             "groups)" % (self, kern_in, n_in // g, n_in, g))

    def _data_inputs(self, a, b, names):
        a = float_input(a, "%s %s" % (self, names[0]))
        b = float_input(b, "%s %s" % (self, names[1]))
        for v, n in ((a, names[0]), (b, names[1])):
            if v.dtype not in ("float32", "float64"):
                raise TypeError("%s: %s must be float32 or float64, got %s" % (self, n, v.dtype))
            if v.ndim != 2 + self.convdim:
                raise TypeError("%s must be %dD tensor" % (n, 2 + self.convdim))
        dtype = str(np.promote_types(a.dtype, b.dtype))
        return cast(a, dtype), cast(b, dtype)

    def _shape_input(self, shape, what):
        """The spatial shape as an int64 vector of ``convdim`` entries."""
        if isinstance(shape, (tuple, list)):
            if any(isinstance(s, Variable) for s in shape):
                shape = stack([cast(as_tensor_variable(s), "int64") for s in shape])
            else:
                shape = constant(np.asarray([int(s) for s in shape], dtype=np.int64))
        shape = as_tensor_variable(shape)
        if shape.ndim != 1 or shape.dtype[0] not in "iu":
            raise TypeError("%s: %s must be an integer vector, got %s (%s)" % (self, what, shape, shape.type))
        if shape.type.shape[0] not in (None, self.convdim):
            raise ValueError("%s: %s must have %d entries, got %d" % (self, what, self.convdim, shape.type.shape[0]))
        return cast(shape, "int64")

    def _static_out(self, S, K):
        """The static output spatial sizes (None where unknown)."""
        if any(v is None for v in S) or any(v is None for v in K) or min(K, default=1) < 1:
            return (None,) * self.convdim
        try:
            return self._out_spatial(S, K)[0]
        except ValueError:
            return (None,) * self.convdim

    def _symbolic_out(self, S, K):
        """Output spatial sizes as ints or scalar variables (for infer_shape)."""
        out = []
        for a in range(self.convdim):
            s, d = self.subsample[a], self.filter_dilation[a]
            out.append(get_conv_shape_1axis(S[a], K[a], self._axis_mode(a), s, d))
        return tuple(out)

    def _axis_mode(self, a):
        return self.border_mode if isinstance(self.border_mode, str) else self.border_mode[a]

    def _sibling(self, kind):
        cls = _CLASSES[(kind, self.convdim)]
        return cls(imshp=self.imshp, kshp=self.kshp, border_mode=self.border_mode, subsample=self.subsample,
                   filter_flip=self.filter_flip, filter_dilation=self.filter_dilation, num_groups=self.num_groups)


def _spatial_shape(var, convdim):
    """``var.shape[2:]``, a constant when ``var``'s static shape knows it."""
    static = var.type.shape[2:]
    if all(s is not None for s in static):
        return constant(np.asarray(static, dtype=np.int64))
    return var.shape[2:]


def _const_vector(v):
    """The entries of a constant int vector, else None."""
    if isinstance(v, Constant):
        return tuple(int(e) for e in np.asarray(v.data).ravel())
    return None


def _shape_entries(v, n):
    """Entries of the vector ``v`` as ints (constant) or scalar variables."""
    c = _const_vector(v)
    if c is not None:
        return c
    return tuple(v[i] for i in range(n))


class AbstractConv(BaseAbstractConv):
    """The forward convolution: ``(img (B, C, *S), kern (O, C/G, *K)) -> (B, O, *P)``."""

    kind = "forward"

    def __init__(self, convdim, imshp=None, kshp=None, border_mode="valid", subsample=None, filter_flip=True,
                 filter_dilation=None, num_groups=1, unshared=False):
        super().__init__(convdim, imshp, kshp, border_mode, subsample, filter_flip, filter_dilation, num_groups,
                         unshared)

    def make_node(self, img, kern):
        img, kern = self._data_inputs(img, kern, ("img", "kern"))
        ish, ksh = img.type.shape, kern.type.shape
        if ish[1] is not None and ksh[1] is not None and ish[1] != ksh[1] * self.num_groups:
            raise ValueError("%s: the filters have %d input channels per group, the image %d (%d channels in %d "
                             "groups)" % (self, ksh[1], ish[1] // self.num_groups, ish[1], self.num_groups))
        out = (ish[0], ksh[0]) + self._static_out(ish[2:], ksh[2:])
        return Apply(self, [img, kern], [TensorType(img.dtype, out)()])

    def perform(self, node, inputs, output_storage):
        img, kern = inputs
        output_storage[0][0] = self._np_forward(img, kern).astype(node.outputs[0].type.numpy_dtype, copy=False)

    def _np_forward(self, img, kern):
        B, C = img.shape[:2]
        O, Cg = kern.shape[:2]
        self._check_groups(C, O, Cg)
        S, K = img.shape[2:], kern.shape[2:]
        P, pads = self._out_spatial(S, K)
        G, Og = self.num_groups, O // self.num_groups
        out = np.zeros((B, O) + P, dtype=np.result_type(img, kern))
        if out.size == 0 or Cg == 0 or min(K, default=1) == 0:
            return out
        xpad = np.zeros((B, C) + tuple(s + pl + pr for s, (pl, pr) in zip(S, pads)), dtype=out.dtype)
        xpad[(slice(None),) * 2 + tuple(slice(pl, pl + s) for s, (pl, _) in zip(S, pads))] = img
        wf = kern[(Ellipsis,) + (slice(None, None, -1),) * self.convdim] if self.filter_flip else kern
        win = _windows(xpad, P, K, self.subsample, self.filter_dilation)
        cd = self.convdim
        k_axes = tuple(range(2 + cd, 2 + 2 * cd))
        for g in range(G):
            part = np.tensordot(win[:, g * Cg:(g + 1) * Cg], wf[g * Og:(g + 1) * Og],
                                axes=((1,) + k_axes, (1,) + tuple(range(2, 2 + cd))))
            out[:, g * Og:(g + 1) * Og] = np.moveaxis(part, -1, 1)
        return out

    def infer_shape(self, fgraph, node, input_shapes):
        ish, ksh = input_shapes
        return [(ish[0], ksh[0]) + self._symbolic_out(ish[2:], ksh[2:])]

    def L_op(self, inputs, outputs, output_grads):
        img, kern = inputs
        (gz,) = output_grads
        d_img = self._sibling("grad_inputs")(kern, gz, _spatial_shape(img, self.convdim))
        d_kern = self._sibling("grad_weights")(img, gz, _spatial_shape(kern, self.convdim))
        return [d_img, d_kern]


class AbstractConv_gradWeights(BaseAbstractConv):
    """The gradient of the convolution in its kernel: ``(img (B, C, *S), topgrad (B, O, *P), shape
    (K)) -> (O, C/G, *K)``, the adjoint of the forward in ``kern``."""

    kind = "grad_weights"

    def __init__(self, convdim, imshp=None, kshp=None, border_mode="valid", subsample=None, filter_flip=True,
                 filter_dilation=None, num_groups=1, unshared=False):
        super().__init__(convdim, imshp, kshp, border_mode, subsample, filter_flip, filter_dilation, num_groups,
                         unshared)

    def make_node(self, img, topgrad, shape):
        img, topgrad = self._data_inputs(img, topgrad, ("img", "topgrad"))
        shape = self._shape_input(shape, "filter_shape")
        K = _const_vector(shape)
        if K is not None and (len(K) != self.convdim or min(K) < 1):
            raise ValueError("%s: invalid filter_shape for gradWeights: %s" % (self, K))
        C = img.type.shape[1]
        out = (topgrad.type.shape[1], None if C is None else C // self.num_groups) + \
            (K if K is not None else (None,) * self.convdim)
        return Apply(self, [img, topgrad, shape], [TensorType(img.dtype, out)()])

    def perform(self, node, inputs, output_storage):
        img, top, shape = inputs
        output_storage[0][0] = self._np_grad_weights(img, top, shape).astype(node.outputs[0].type.numpy_dtype,
                                                                             copy=False)

    def _np_grad_weights(self, img, top, shape):
        K = tuple(int(k) for k in np.asarray(shape).ravel())
        if len(K) != self.convdim or min(K) < 1:
            raise ValueError("%s: invalid filter_shape for gradWeights: %s" % (self, K))
        B, C = img.shape[:2]
        O = top.shape[1]
        if top.shape[0] != B:
            raise ValueError("%s: topgrad has %d images, the input %d" % (self, top.shape[0], B))
        G = self.num_groups
        self._check_groups(C, O, C // G)
        Cg, Og = C // G, O // G
        S = img.shape[2:]
        P, pads = self._out_spatial(S, K)
        if tuple(top.shape[2:]) != P:
            raise ValueError("%s: invalid filter_shape for gradWeights: the filter %s on the input %s gives an output "
                             "of %s, topgrad is %s" % (self, K, tuple(S), P, tuple(top.shape[2:])))
        dtype = np.result_type(img, top)
        out = np.zeros((O, Cg) + K, dtype=dtype)
        if B == 0 or Cg == 0 or Og == 0:
            return out
        xpad = np.zeros((B, C) + tuple(s + pl + pr for s, (pl, pr) in zip(S, pads)), dtype=dtype)
        xpad[(slice(None),) * 2 + tuple(slice(pl, pl + s) for s, (pl, _) in zip(S, pads))] = img
        win = _windows(xpad, P, K, self.subsample, self.filter_dilation)
        cd = self.convdim
        p_axes = tuple(range(2, 2 + cd))
        for g in range(G):
            out[g * Og:(g + 1) * Og] = np.tensordot(top[:, g * Og:(g + 1) * Og], win[:, g * Cg:(g + 1) * Cg],
                                                    axes=((0,) + p_axes, (0,) + p_axes))
        if self.filter_flip:
            out = out[(Ellipsis,) + (slice(None, None, -1),) * cd]
        return out

    def infer_shape(self, fgraph, node, input_shapes):
        ish, tsh, _ = input_shapes
        C = ish[1]
        cg = C // self.num_groups if self.num_groups != 1 else C
        return [(tsh[1], cg) + _shape_entries(node.inputs[2], self.convdim)]

    def connection_pattern(self, node):
        return [[True], [True], [False]]

    def L_op(self, inputs, outputs, output_grads):
        img, top, _ = inputs
        (g,) = output_grads
        d_img = self._sibling("grad_inputs")(g, top, _spatial_shape(img, self.convdim))
        d_top = self._sibling("forward")(img, g)
        return [d_img, d_top, disconnected_type()]


class AbstractConv_gradInputs(BaseAbstractConv):
    """The gradient of the convolution in its image: ``(kern (O, C/G, *K), topgrad (B, O, *P), shape
    (S)) -> (B, C, *S)``, the adjoint of the forward in ``img`` (a transposed convolution)."""

    kind = "grad_inputs"

    def __init__(self, convdim, imshp=None, kshp=None, border_mode="valid", subsample=None, filter_flip=True,
                 filter_dilation=None, num_groups=1, unshared=False):
        super().__init__(convdim, imshp, kshp, border_mode, subsample, filter_flip, filter_dilation, num_groups,
                         unshared)

    def make_node(self, kern, topgrad, shape):
        kern, topgrad = self._data_inputs(kern, topgrad, ("kern", "topgrad"))
        shape = self._shape_input(shape, "input_shape")
        S = _const_vector(shape)
        if S is not None and (len(S) != self.convdim or min(S) < 1):
            raise ValueError("%s: invalid input_shape for gradInputs: %s" % (self, S))
        if kern.type.shape[0] is not None and topgrad.type.shape[1] is not None and \
                kern.type.shape[0] != topgrad.type.shape[1]:
            raise ValueError("%s: topgrad has %d channels, the filters %d" % (self, topgrad.type.shape[1],
                                                                               kern.type.shape[0]))
        cg = kern.type.shape[1]
        out = (topgrad.type.shape[0], None if cg is None else cg * self.num_groups) + \
            (S if S is not None else (None,) * self.convdim)
        return Apply(self, [kern, topgrad, shape], [TensorType(kern.dtype, out)()])

    def perform(self, node, inputs, output_storage):
        kern, top, shape = inputs
        output_storage[0][0] = self._np_grad_inputs(kern, top, shape).astype(node.outputs[0].type.numpy_dtype,
                                                                             copy=False)

    def _np_grad_inputs(self, kern, top, shape):
        S = tuple(int(s) for s in np.asarray(shape).ravel())
        if len(S) != self.convdim or min(S) < 1:
            raise ValueError("%s: invalid input_shape for gradInputs: %s" % (self, S))
        O, Cg = kern.shape[:2]
        B = top.shape[0]
        if top.shape[1] != O:
            raise ValueError("%s: topgrad has %d channels, the filters %d" % (self, top.shape[1], O))
        G = self.num_groups
        C = Cg * G
        self._check_groups(C, O, Cg)
        Og = O // G
        K = kern.shape[2:]
        P, pads = self._out_spatial(S, K)
        if tuple(top.shape[2:]) != P:
            raise ValueError("%s: invalid input_shape for gradInputs: the input %s with the filter %s gives an output "
                             "of %s, topgrad is %s" % (self, S, tuple(K), P, tuple(top.shape[2:])))
        dtype = np.result_type(kern, top)
        cd = self.convdim
        dx = np.zeros((B, C) + tuple(s + pl + pr for s, (pl, pr) in zip(S, pads)), dtype=dtype)
        if dx.size and Og and min(K, default=1) > 0:
            wf = kern[(Ellipsis,) + (slice(None, None, -1),) * cd] if self.filter_flip else kern
            for i in np.ndindex(*K):
                rows = tuple(slice(ia * d, ia * d + (p - 1) * s + 1, s)
                             for ia, d, p, s in zip(i, self.filter_dilation, P, self.subsample))
                for g in range(G):
                    part = np.tensordot(top[:, g * Og:(g + 1) * Og], wf[(slice(g * Og, (g + 1) * Og), slice(None)) + i],
                                        axes=((1,), (0,)))
                    dx[(slice(None), slice(g * Cg, (g + 1) * Cg)) + rows] += np.moveaxis(part, -1, 1)
        return dx[(slice(None),) * 2 + tuple(slice(pl, pl + s) for s, (pl, _) in zip(S, pads))]

    def infer_shape(self, fgraph, node, input_shapes):
        ksh, tsh, _ = input_shapes
        c = ksh[1] * self.num_groups if self.num_groups != 1 else ksh[1]
        return [(tsh[0], c) + _shape_entries(node.inputs[2], self.convdim)]

    def connection_pattern(self, node):
        return [[True], [True], [False]]

    def L_op(self, inputs, outputs, output_grads):
        kern, top, _ = inputs
        (g,) = output_grads
        d_kern = self._sibling("grad_weights")(g, top, _spatial_shape(kern, self.convdim))
        d_top = self._sibling("forward")(g, kern)
        return [d_kern, d_top, disconnected_type()]


def _fixed(base, convdim, doc):
    """The subclass of ``base`` with ``convdim`` fixed (Theano's constructor, without convdim)."""

    def __init__(self, imshp=None, kshp=None, border_mode="valid", subsample=None, filter_flip=True,
                 filter_dilation=None, num_groups=1, unshared=False):
        base.__init__(self, convdim, imshp, kshp, border_mode, subsample, filter_flip, filter_dilation, num_groups,
                      unshared)

    name = {AbstractConv: "AbstractConv%dd", AbstractConv_gradWeights: "AbstractConv%dd_gradWeights",
            AbstractConv_gradInputs: "AbstractConv%dd_gradInputs"}[base] % convdim
    return type(name, (base,), {"__init__": __init__, "__doc__": doc, "__module__": __name__})


AbstractConv2d = _fixed(AbstractConv, 2, "The 2D forward convolution (see ``AbstractConv``).")
AbstractConv3d = _fixed(AbstractConv, 3, "The 3D forward convolution (see ``AbstractConv``).")
AbstractConv2d_gradWeights = _fixed(AbstractConv_gradWeights, 2, "The 2D convolution's kernel gradient.")
AbstractConv3d_gradWeights = _fixed(AbstractConv_gradWeights, 3, "The 3D convolution's kernel gradient.")
AbstractConv2d_gradInputs = _fixed(AbstractConv_gradInputs, 2, "The 2D convolution's image gradient.")
AbstractConv3d_gradInputs = _fixed(AbstractConv_gradInputs, 3, "The 3D convolution's image gradient.")

_CLASSES = {("forward", 2): AbstractConv2d, ("forward", 3): AbstractConv3d,
            ("grad_weights", 2): AbstractConv2d_gradWeights, ("grad_weights", 3): AbstractConv3d_gradWeights,
            ("grad_inputs", 2): AbstractConv2d_gradInputs, ("grad_inputs", 3): AbstractConv3d_gradInputs}


# ------------------------------------------------------------------ shape helpers (Theano's)


def _pad_pair(border_mode, dil_kernel):
    if border_mode == "half":
        return dil_kernel // 2, dil_kernel // 2
    if border_mode == "full":
        return dil_kernel - 1, dil_kernel - 1
    if border_mode == "valid":
        return 0, 0
    if isinstance(border_mode, (tuple, list)):
        pad_l, pad_r = border_mode
    elif _is_int(border_mode):
        pad_l = pad_r = border_mode
    else:
        raise ValueError("invalid border_mode %r" % (border_mode,))
    if pad_l < 0 or pad_r < 0:
        raise ValueError("invalid border_mode %r: the padding must be >= 0" % (border_mode,))
    return pad_l, pad_r


def get_conv_shape_1axis(image_shape, kernel_shape, border_mode, subsample, dilation=1):
    """The output size along one axis of a convolution of an input of ``image_shape`` with a kernel of
    ``kernel_shape`` (ints or scalar variables); ``border_mode`` 'valid', 'full', 'half', an int or
    a (lo, hi) pair. None when any argument is None."""
    if None in (image_shape, kernel_shape, border_mode, subsample, dilation):
        return None
    dil_kernel = (kernel_shape - 1) * dilation + 1
    pad_l, pad_r = _pad_pair(border_mode, dil_kernel)
    # the smallest graph for symbolic sizes: add only the pads that are not 0
    out = image_shape - dil_kernel
    if not (_is_int(pad_l) and pad_l == 0):
        out = out + pad_l
    if not (_is_int(pad_r) and pad_r == 0):
        out = out + pad_r
    if subsample != 1:
        out = out // subsample
    return out + 1


def _per_axis(value, convdim):
    if isinstance(value, tuple) or isinstance(value, list):
        if len(value) != convdim:
            raise ValueError("expected %d entries, got %r" % (convdim, value))
        return tuple(value)
    return (value,) * convdim


def get_conv_output_shape(image_shape, kernel_shape, border_mode, subsample, filter_dilation=None):
    """The output shape ``(batch, nkern, *spatial)`` of a convolution (Theano's): ``image_shape``
    ``(batch, channels, *spatial)``, ``kernel_shape`` ``(nkern, channels, *spatial)`` (ints, scalar
    variables or None); ``border_mode`` a mode string, an int or a tuple of per-axis ints or pairs."""
    convdim = len(image_shape) - 2
    bsize, imshp = image_shape[0], tuple(image_shape[2:])
    nkern, kshp = kernel_shape[0], tuple(kernel_shape[-convdim:])
    dilation = (1,) * convdim if filter_dilation is None else tuple(filter_dilation)
    modes = border_mode if isinstance(border_mode, (tuple, list)) else (border_mode,) * convdim
    if len(modes) != convdim:
        raise ValueError("invalid border_mode %r for %d spatial axes" % (border_mode, convdim))
    subsample = _per_axis(subsample, convdim)
    return (bsize, nkern) + tuple(get_conv_shape_1axis(imshp[a], kshp[a], modes[a], subsample[a], dilation[a])
                                  for a in range(convdim))


def get_conv_gradweights_shape_1axis(image_shape, top_shape, border_mode, subsample, dilation):
    """The kernel size along one axis given the input and output sizes; None when ambiguous
    (a stride other than 1, or 'half') or when an argument is None."""
    if None in (image_shape, top_shape, border_mode, subsample, dilation):
        return None
    if subsample != 1 or border_mode == "half":
        return None
    if border_mode == "full":
        kernel_shape = top_shape - image_shape
    elif border_mode == "valid":
        kernel_shape = image_shape - top_shape
    else:
        pad_l, pad_r = _pad_pair(border_mode, 0)
        kernel_shape = image_shape + pad_l + pad_r - top_shape
    if dilation > 1:
        kernel_shape = kernel_shape // dilation
    return kernel_shape + 1


def get_conv_gradweights_shape(image_shape, top_shape, border_mode, subsample, filter_dilation=None, num_groups=1):
    """The kernel shape ``(nkern, channels / num_groups, *spatial)`` of a convolution given its input
    and output shapes (None where it cannot be told)."""
    convdim = len(image_shape) - 2
    nchan, imshp = image_shape[1], tuple(image_shape[2:])
    nkern, topshp = top_shape[1], tuple(top_shape[2:])
    dilation = (1,) * convdim if filter_dilation is None else tuple(filter_dilation)
    modes = border_mode if isinstance(border_mode, (tuple, list)) else (border_mode,) * convdim
    subsample = _per_axis(subsample, convdim)
    if num_groups > 1 and nchan is not None:
        nchan = nchan // num_groups
    return (nkern, nchan) + tuple(get_conv_gradweights_shape_1axis(imshp[a], topshp[a], modes[a], subsample[a],
                                                                   dilation[a]) for a in range(convdim))


def get_conv_gradinputs_shape_1axis(kernel_shape, top_shape, border_mode, subsample, dilation):
    """The input size along one axis given the kernel and output sizes; None when ambiguous (a
    stride other than 1) or when an argument is None."""
    if None in (kernel_shape, top_shape, border_mode, subsample, dilation):
        return None
    if subsample != 1:
        return None
    dil_kernel = (kernel_shape - 1) * dilation + 1
    pad_l, pad_r = _pad_pair(border_mode, dil_kernel)
    return top_shape + dil_kernel - 1 - pad_l - pad_r


def get_conv_gradinputs_shape(kernel_shape, top_shape, border_mode, subsample, filter_dilation=None, num_groups=1):
    """The input shape ``(batch, channels, *spatial)`` of a convolution given its kernel and output
    shapes (None where it cannot be told)."""
    convdim = len(top_shape) - 2
    kshp = tuple(kernel_shape[-convdim:])
    nchan = kernel_shape[1]
    bsize, topshp = top_shape[0], tuple(top_shape[2:])
    dilation = (1,) * convdim if filter_dilation is None else tuple(filter_dilation)
    modes = border_mode if isinstance(border_mode, (tuple, list)) else (border_mode,) * convdim
    subsample = _per_axis(subsample, convdim)
    if num_groups > 1 and nchan is not None:
        nchan = nchan * num_groups
    return (bsize, nchan) + tuple(get_conv_gradinputs_shape_1axis(kshp[a], topshp[a], modes[a], subsample[a],
                                                                  dilation[a]) for a in range(convdim))


def check_conv_gradinputs_shape(image_shape, kernel_shape, output_shape, border_mode, subsample,
                                filter_dilation=None):
    """False when a convolution of an input of ``image_shape`` with a kernel of ``kernel_shape`` cannot
    give ``output_shape`` (full shapes); True otherwise, also where a size is None or symbolic."""
    image_shape, kernel_shape, output_shape = tuple(image_shape), tuple(kernel_shape), tuple(output_shape)
    if len(image_shape) != len(kernel_shape) or len(image_shape) != len(output_shape):
        return False
    subsample = _per_axis(subsample, len(image_shape) - 2) if _is_int(subsample) else tuple(subsample)
    if len(image_shape) - 2 != len(subsample):
        return False
    if filter_dilation is not None and len(image_shape) - 2 != len(filter_dilation):
        return False
    computed = get_conv_output_shape(image_shape, kernel_shape, border_mode, subsample, filter_dilation)

    def known(v):
        if v is None or isinstance(v, Variable) and not isinstance(v, Constant):
            return None
        return int(np.asarray(v.data if isinstance(v, Constant) else v))

    return all(known(g) is None or known(c) is None or known(g) == known(c) for g, c in zip(output_shape, computed))


# ------------------------------------------------------------------ the public functions (Theano 1.0)


def _spatial_of(shape, convdim, what):
    """The last ``convdim`` entries of a full shape (or a shape vector), as the gradient ops take them."""
    if isinstance(shape, Variable):
        shape = as_tensor_variable(shape)
        n = shape.type.shape[0]
        if n is None:
            raise ValueError("%s: the length of %s is not known before the graph runs" % (what, shape))
        return shape[n - convdim:]
    shape = tuple(shape)
    if len(shape) != 2 + convdim:
        raise ValueError("%s must have %d elements, got %r" % (what, 2 + convdim, shape))
    spatial = shape[2:]
    if any(s is None for s in spatial):
        raise ValueError("%s: the spatial sizes must be given, got %r" % (what, shape))
    return list(spatial)


def _full_shape(shape):
    return None if shape is None or isinstance(shape, Variable) else shape


def abstract_conv2d(input, filters, input_shape=None, filter_shape=None, border_mode="valid", subsample=(1, 1),
                    filter_flip=True, filter_dilation=(1, 1), num_groups=1, unshared=False):
    """``theano.tensor.nnet.abstract_conv.conv2d``: the 2D convolution of the images ``input``
    (B, C, H, W) with ``filters`` (O, C / num_groups, kH, kW), giving (B, O, oH, oW).

    ``input_shape``/``filter_shape``: optional shape hints (ints or None); ``border_mode``: 'valid',
    'full', 'half', an int, a pair of ints or a pair of (lo, hi) pairs; ``subsample``: the strides;
    ``filter_flip``: True for a convolution, False for a cross-correlation; ``filter_dilation``:
    the kernel's dilation; ``num_groups``: grouped convolution (C and O divisible by it)."""
    op = AbstractConv2d(imshp=_full_shape(input_shape), kshp=_full_shape(filter_shape), border_mode=border_mode,
                        subsample=subsample, filter_flip=filter_flip, filter_dilation=filter_dilation,
                        num_groups=num_groups, unshared=unshared)
    return op(input, filters)


def conv2d(input, filters, input_shape=None, filter_shape=None, border_mode="valid", subsample=(1, 1),
           filter_flip=True, image_shape=None, filter_dilation=(1, 1), num_groups=1, unshared=False, **kwargs):
    """``theano.tensor.nnet.conv2d``: ``abstract_conv2d`` with Theano 1.0's front-end arguments.

    ``image_shape`` is the deprecated name of ``input_shape`` (both given: ValueError). Other keyword
    arguments are ignored with a warning, except ``imshp_logical``/``kshp_logical`` (ValueError, as
    in Theano: use ``ffigraph.tensor.nnet.conv.conv2d``)."""
    if "imshp_logical" in kwargs or "kshp_logical" in kwargs:
        raise ValueError("Keyword arguments 'imshp_logical' and 'kshp_logical' for conv2d are not supported "
                         "anymore (and have not been a reliable way to perform upsampling)")
    if kwargs:
        warnings.warn("%s are deprecated in the conv2d interface and will be ignored" % sorted(kwargs),
                      stacklevel=2)
    if image_shape is not None:
        warnings.warn("The `image_shape` keyword argument to `conv2d` is deprecated, it has been renamed to "
                      "`input_shape`.", DeprecationWarning, stacklevel=2)
        if input_shape is not None:
            raise ValueError("input_shape and image_shape should not be provided at the same time.")
        input_shape = image_shape
    if unshared:
        raise NotImplementedError("conv2d: unshared convolution (unshared=True) is not implemented")
    return abstract_conv2d(input, filters, input_shape, filter_shape, border_mode, subsample, filter_flip,
                           filter_dilation, num_groups, unshared)


def conv3d(input, filters, input_shape=None, filter_shape=None, border_mode="valid", subsample=(1, 1, 1),
           filter_flip=True, filter_dilation=(1, 1, 1), num_groups=1):
    """``theano.tensor.nnet.conv3d``: the 3D convolution of ``input`` (B, C, D, H, W) with
    ``filters`` (O, C / num_groups, kD, kH, kW) (arguments as ``conv2d``'s, per three axes)."""
    op = AbstractConv3d(imshp=_full_shape(input_shape), kshp=_full_shape(filter_shape), border_mode=border_mode,
                        subsample=subsample, filter_flip=filter_flip, filter_dilation=filter_dilation,
                        num_groups=num_groups)
    return op(input, filters)


def _grad_inputs(convdim, output_grad, filters, input_shape, filter_shape, border_mode, subsample, filter_flip,
                 filter_dilation, num_groups, unshared, what):
    if unshared:
        raise NotImplementedError("%s: unshared convolution (unshared=True) is not implemented" % what)
    if input_shape is None:
        raise ValueError("%s: input_shape must be given" % what)
    op = _CLASSES[("grad_inputs", convdim)](
        imshp=_full_shape(input_shape), kshp=_full_shape(filter_shape), border_mode=border_mode,
        subsample=subsample, filter_flip=filter_flip, filter_dilation=filter_dilation, num_groups=num_groups)
    return op(filters, output_grad, _spatial_of(input_shape, convdim, "%s input_shape" % what))


def _grad_weights(convdim, input, output_grad, filter_shape, input_shape, border_mode, subsample, filter_flip,
                  filter_dilation, num_groups, unshared, what):
    if unshared:
        raise NotImplementedError("%s: unshared convolution (unshared=True) is not implemented" % what)
    if filter_shape is None:
        raise ValueError("%s: filter_shape must be given" % what)
    op = _CLASSES[("grad_weights", convdim)](
        imshp=_full_shape(input_shape), kshp=_full_shape(filter_shape), border_mode=border_mode,
        subsample=subsample, filter_flip=filter_flip, filter_dilation=filter_dilation, num_groups=num_groups)
    return op(input, output_grad, _spatial_of(filter_shape, convdim, "%s filter_shape" % what))


def conv2d_grad_wrt_inputs(output_grad, filters, input_shape, filter_shape=None, border_mode="valid",
                           subsample=(1, 1), filter_flip=True, filter_dilation=(1, 1), num_groups=1, unshared=False):
    """The gradient of ``conv2d`` with respect to its input (Theano's): ``output_grad`` (B, O, oH, oW),
    ``filters`` (O, C / num_groups, kH, kW); ``input_shape`` the input's shape (B, C, H, W), whose
    spatial sizes must be given (ints or scalar variables; B and C may be None). The other arguments
    are those of the forward ``conv2d``. This is the transposed convolution."""
    return _grad_inputs(2, output_grad, filters, input_shape, filter_shape, border_mode, subsample, filter_flip,
                        filter_dilation, num_groups, unshared, "conv2d_grad_wrt_inputs")


def conv2d_grad_wrt_weights(input, output_grad, filter_shape, input_shape=None, border_mode="valid",
                            subsample=(1, 1), filter_flip=True, filter_dilation=(1, 1), num_groups=1,
                            unshared=False):
    """The gradient of ``conv2d`` with respect to its filters (Theano's): ``input`` (B, C, H, W),
    ``output_grad`` (B, O, oH, oW); ``filter_shape`` the filters' shape (O, C / num_groups, kH, kW),
    whose spatial sizes must be given."""
    return _grad_weights(2, input, output_grad, filter_shape, input_shape, border_mode, subsample, filter_flip,
                         filter_dilation, num_groups, unshared, "conv2d_grad_wrt_weights")


def conv3d_grad_wrt_inputs(output_grad, filters, input_shape, filter_shape=None, border_mode="valid",
                           subsample=(1, 1, 1), filter_flip=True, filter_dilation=(1, 1, 1), num_groups=1):
    """The gradient of ``conv3d`` with respect to its input (see ``conv2d_grad_wrt_inputs``)."""
    return _grad_inputs(3, output_grad, filters, input_shape, filter_shape, border_mode, subsample, filter_flip,
                        filter_dilation, num_groups, False, "conv3d_grad_wrt_inputs")


def conv3d_grad_wrt_weights(input, output_grad, filter_shape, input_shape=None, border_mode="valid",
                            subsample=(1, 1, 1), filter_flip=True, filter_dilation=(1, 1, 1), num_groups=1):
    """The gradient of ``conv3d`` with respect to its filters (see ``conv2d_grad_wrt_weights``)."""
    return _grad_weights(3, input, output_grad, filter_shape, input_shape, border_mode, subsample, filter_flip,
                         filter_dilation, num_groups, False, "conv3d_grad_wrt_weights")


def conv2d_transpose(input, filters, output_shape, filter_shape=None, border_mode="valid", input_dilation=(1, 1),
                     filter_flip=True, filter_dilation=(1, 1), num_groups=1, unshared=False):
    """The transposed 2D convolution (Theano's ``nnet.conv2d_transpose``): the gradient of a
    ``conv2d`` of an input of ``output_shape`` with stride ``input_dilation``, applied to ``input``
    (``conv2d_grad_wrt_inputs(input, filters, output_shape, ...)``)."""
    return conv2d_grad_wrt_inputs(input, filters, output_shape, filter_shape, border_mode, input_dilation,
                                  filter_flip, filter_dilation, num_groups, unshared)


def separable_conv2d(input, depthwise_filters, pointwise_filters, num_channels, input_shape=None,
                     depthwise_filter_shape=None, pointwise_filter_shape=None, border_mode="valid", subsample=(1, 1),
                     filter_flip=True, filter_dilation=(1, 1)):
    """A depthwise convolution (``num_groups = num_channels``, ``depthwise_filters`` (C * m, 1, kH, kW))
    followed by a pointwise one (``pointwise_filters`` (O, C * m, 1, 1)), as Theano's."""
    depth = AbstractConv2d(imshp=_full_shape(input_shape), kshp=_full_shape(depthwise_filter_shape),
                           border_mode=border_mode, subsample=subsample, filter_flip=filter_flip,
                           filter_dilation=filter_dilation, num_groups=num_channels)(input, depthwise_filters)
    point = AbstractConv2d(kshp=_full_shape(pointwise_filter_shape), border_mode="valid", subsample=(1, 1),
                           filter_flip=filter_flip, filter_dilation=(1, 1))
    return point(depth, pointwise_filters)


def separable_conv3d(input, depthwise_filters, pointwise_filters, num_channels, input_shape=None,
                     depthwise_filter_shape=None, pointwise_filter_shape=None, border_mode="valid",
                     subsample=(1, 1, 1), filter_flip=True, filter_dilation=(1, 1, 1)):
    """``separable_conv2d`` with three spatial axes."""
    depth = AbstractConv3d(imshp=_full_shape(input_shape), kshp=_full_shape(depthwise_filter_shape),
                           border_mode=border_mode, subsample=subsample, filter_flip=filter_flip,
                           filter_dilation=filter_dilation, num_groups=num_channels)(input, depthwise_filters)
    point = AbstractConv3d(kshp=_full_shape(pointwise_filter_shape), border_mode="valid", subsample=(1, 1, 1),
                           filter_flip=filter_flip, filter_dilation=(1, 1, 1))
    return point(depth, pointwise_filters)


def causal_conv1d(input, filters, filter_shape, input_shape=None, subsample=1, filter_flip=True, filter_dilation=1,
                  num_groups=1, unshared=False):
    """A causal 1D convolution (Theano's): ``input`` (B, C, T), ``filters`` (O, C / num_groups, K) and
    ``filter_shape`` (its shape; K must be given). The input is padded by ``filter_dilation * (K - 1)``
    on the left only, so output step t sees the inputs up to t (length T with stride 1)."""
    if unshared:
        raise NotImplementedError("causal_conv1d: unshared convolution (unshared=True) is not implemented")
    input, filters = as_tensor_variable(input), as_tensor_variable(filters)
    # (ValueError, as Theano's)
    if input.ndim != 3:
        raise ValueError("Input should be 3D for causal convolution (batch, channels, time), got %dD" % input.ndim)
    if filters.ndim != 3:
        raise ValueError("Filters should be 3D for causal convolution, got %dD" % filters.ndim)
    if len(tuple(filter_shape)) != 3:
        raise ValueError("causal_conv1d: filter_shape must have 3 entries, got %r" % (filter_shape,))
    if input_shape is not None and len(tuple(input_shape)) != 3:
        raise ValueError("causal_conv1d: input_shape must have 3 entries, got %r" % (input_shape,))
    k = _static_entry(tuple(filter_shape)[-1], "filter_shape")
    if k is None:
        raise ValueError("causal_conv1d: the filter length (filter_shape[-1]) must be given, got %r"
                         % (filter_shape,))
    pad = ((filter_dilation * (k - 1), 0), (0, 0))
    kshp = tuple(filter_shape) + (1,)
    imshp = None if input_shape is None else tuple(input_shape) + (1,)
    out = abstract_conv2d(input.dimshuffle(0, 1, 2, "x"), filters.dimshuffle(0, 1, 2, "x"), imshp, kshp,
                          border_mode=pad, subsample=(subsample, 1), filter_flip=filter_flip,
                          filter_dilation=(filter_dilation, 1), num_groups=num_groups)
    return out[:, :, :, 0]


# ------------------------------------------------------------------ bilinear upsampling (Theano's)


def bilinear_kernel_1D(ratio, normalize=True):
    """The 1D bilinear kernel ``[1, 2, .., ratio, .., 2, 1]`` (divided by ``ratio`` when
    ``normalize``), length ``2 * ratio - 1``; a float64 constant."""
    half = np.arange(1, ratio + 1, dtype=np.float64)
    kern = np.concatenate([half, half[-2::-1]])
    return constant(kern / ratio if normalize else kern)


def bilinear_kernel_2D(ratio, normalize=True):
    """The 2D bilinear kernel, the outer product of ``bilinear_kernel_1D`` with itself."""
    k = np.asarray(bilinear_kernel_1D(ratio, normalize).data)
    return constant(np.outer(k, k))


def _frac_ratios(frac_ratio):
    """((p_rows, q_rows), (p_cols, q_cols)) in lowest terms from (p, q) or ((p, q), (p, q))."""
    bad = ValueError("bilinear_upsampling: frac_ratio must be a (numerator, denominator) pair of ints >= 1 or a "
                     "pair of such pairs (rows, columns), got %r" % (frac_ratio,))
    if not isinstance(frac_ratio, tuple) or len(frac_ratio) != 2:
        raise bad
    pairs = frac_ratio if isinstance(frac_ratio[0], tuple) else (frac_ratio, frac_ratio)
    out = []
    for pair in pairs:
        if not isinstance(pair, tuple) or len(pair) != 2 or not all(_is_int(v) and v >= 1 for v in pair):
            raise bad
        div = math.gcd(int(pair[0]), int(pair[1]))
        out.append((int(pair[0]) // div, int(pair[1]) // div))
    return tuple(out)


def _upsample(input, r_rows, r_cols, use_1D_kernel):
    """The integer bilinear upsampling of the 4D ``input`` by ``r_rows`` x ``r_cols``."""
    if r_rows == r_cols == 1:
        return input
    rows, cols = input.shape[2], input.shape[3]
    up = reshape(input, (-1, 1, rows, cols))
    # replicate the first and last rows and columns, so the edge samples interpolate with themselves
    up = concatenate([up[:, :, :1, :], up, up[:, :, -1:, :]], axis=2)
    up = concatenate([up[:, :, :, :1], up, up[:, :, :, -1:]], axis=3)
    # this crop puts input sample j at output position j * r + (r - 1) // 2
    pad_r, pad_c = (2 * r - (r - 1) // 2 - 1 for r in (r_rows, r_cols))
    k_r, k_c = (np.asarray(bilinear_kernel_1D(r).data).astype(input.dtype) for r in (r_rows, r_cols))
    if use_1D_kernel:
        up = conv2d_grad_wrt_inputs(up, constant(k_r[None, None, :, None]), (None, 1, rows * r_rows, cols + 2),
                                    border_mode=((pad_r, pad_r), (0, 0)), subsample=(r_rows, 1))
        up = conv2d_grad_wrt_inputs(up, constant(k_c[None, None, None, :]), (None, 1, rows * r_rows, cols * r_cols),
                                    border_mode=((0, 0), (pad_c, pad_c)), subsample=(1, r_cols))
    else:
        up = conv2d_grad_wrt_inputs(up, constant(np.outer(k_r, k_c)[None, None]),
                                    (None, 1, rows * r_rows, cols * r_cols),
                                    border_mode=((pad_r, pad_r), (pad_c, pad_c)), subsample=(r_rows, r_cols))
    return reshape(up, (input.shape[0], input.shape[1], rows * r_rows, cols * r_cols))


def bilinear_upsampling(input, ratio=None, frac_ratio=None, batch_size=None, num_input_channels=None,
                        use_1D_kernel=True):
    """Bilinear upsampling of ``input`` (B, C, H, W), Theano's.

    With the integer ``ratio``: (B, C, H * ratio, W * ratio); input sample j sits at output position
    ``j * ratio + (ratio - 1) // 2``, the positions between two samples interpolate them linearly
    and those beyond the first or last sample repeat it (Theano replicates the edges by one pixel
    and runs a transposed convolution per axis with ``bilinear_kernel_1D(ratio)`` and stride
    ``ratio``; one 2D one with ``use_1D_kernel=False``, the same result). For ratio 2:
    ``out[2j] = in[j]``, ``out[2j + 1] = (in[j] + in[j + 1]) / 2``, the last row repeated.

    With ``frac_ratio`` ``(p, q)`` (or ``((p, q), (p, q))`` for rows and columns; reduced to lowest
    terms) and ``use_1D_kernel=False`` (as Theano requires): every q-th sample of the upsampling by
    p, i.e. ``ceil(H * p / q)`` rows. ``batch_size``/``num_input_channels`` are only hints."""
    if ratio and frac_ratio:
        raise ValueError("bilinear_upsampling: can't use ratio and frac_ratio together")
    if not (ratio or frac_ratio):
        raise ValueError("bilinear_upsampling: no ratio (or frac_ratio) provided")
    input = float_input(input, "bilinear_upsampling")
    if input.ndim != 4:
        raise TypeError("bilinear_upsampling: input must be 4D tensor (batch, channels, rows, cols), got %dD"
                        % input.ndim)
    if frac_ratio:
        if use_1D_kernel:
            raise ValueError("bilinear_upsampling: for fractional ratios the 1D kernel method is not implemented; "
                             "pass use_1D_kernel=False")
        (p_r, q_r), (p_c, q_c) = _frac_ratios(frac_ratio)
        up = _upsample(input, p_r, p_c, use_1D_kernel=False)
        return up[:, :, ::q_r, ::q_c] if (q_r, q_c) != (1, 1) else up
    if not _is_int(ratio) or ratio < 1:
        raise ValueError("bilinear_upsampling: ratio must be an int >= 1, got %r" % (ratio,))
    return _upsample(input, int(ratio), int(ratio), use_1D_kernel)

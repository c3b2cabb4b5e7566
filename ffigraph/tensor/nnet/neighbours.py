"""Theano 1.0's ``theano.tensor.nnet.neighbours``: images cut into patches, and patches summed back.

``images2neibs(ten4, neib_shape, neib_step=None, mode='valid')`` takes a 4-d tensor ``(B, C, H, W)``
(a batch of stacks of images) and returns a matrix with one row per patch: ``B * C * gc * gd``
rows of ``c * d`` values, where ``(c, d) = neib_shape`` and ``(sr, sc) = neib_step`` (by default
the patch shape: disjoint patches). The rows go image by image (``b`` then ``ch``), then patch row
``a``, then patch column ``b'``: row ``((b * C + ch) * gc + a) * gd + b'``; each patch is flattened
row-major (column ``i * d + j``), holding ``ten4[b, ch, a * sr + i - pr, b' * sc + j - pc]``.

Per mode (each image axis alike; ``H`` the image's length, ``c`` the patch's, ``s`` the step):

* ``'valid'``: patches start at 0 and must tile the image exactly: ``H >= c`` and
  ``(H - c) % s == 0``, else TypeError (Theano's type). ``gc = 1 + (H - c) // s``;
* ``'ignore_borders'``: as 'valid', the incomplete patches at the end dropped: ``gc = 1 + (H - c)
  // s``. An image smaller than the patch is a TypeError here too (Theano computed a negative or
  empty patch count);
* ``'half'``: as 'valid' on the image zero-padded by ``c // 2`` on both sides: ``H >= c`` and
  ``(H - c % 2) % s == 0``, ``gc = 1 + (H - c % 2) // s``;
* ``'full'``: zero-padded by ``c - 1``: ``H >= c`` and ``(H + c - 2) % s == 0``,
  ``gc = 1 + (H + c - 2) // s``;
* ``'wrap_centered'``: the patch centred on pixel ``a * s``, wrapping round the image's edges
  (a torus): ``c`` must be odd and ``H >= c`` (TypeError otherwise), ``gc = ceil(H / s)``.

A patch size or step of 0 or less is a ValueError; ``neib_shape`` and ``neib_step`` must hold two
values (ValueError otherwise; Theano asserted). Any other mode is NotImplementedError. The sizes
are read at run time (they may be symbolic int vectors), so these errors come when the function is
called, from ``perform`` and from the C code alike, with the same messages.

``neibs2images(neibs, neib_shape, original_shape, mode='valid')`` is the inverse for 'valid'
(disjoint patches tiling the image) and 'ignore_borders' (the border no patch covers is zero);
other modes are NotImplementedError, as in Theano. It is the op ``Neibs2Images(mode)``, which in
general is the adjoint (transpose) of ``Images2Neibs(mode)``: every patch value is ADDED to the
pixel it was read from, padding dropped and wrapping followed; where patches overlap (a step
smaller than the patch) the overlaps add up, and pixels no patch reads stay zero.

Gradients: ``Images2Neibs`` with respect to ``ten4`` is ``Neibs2Images`` of the output gradient,
in every mode and for any step (Theano had it only for 'valid' and 'ignore_borders' with the step
equal to the patch, and a scan for 'valid' with other steps; 'half', 'full' and 'wrap_centered'
were not implemented); ``Neibs2Images``'s is ``Images2Neibs``. The integer inputs (sizes, steps,
shapes) get no gradient (disconnected).

The C code (``neighbours_c``) handles every dtype (a gather and a scatter-add; bool accumulates as
logical or, like numpy), any strides, and splits large inputs over the library's thread pool:
patch rows for ``Images2Neibs``, images for ``Neibs2Images`` (each image's sums are made by one
thread, in patch order, so results do not depend on the thread count).
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.basic import Apply, Constant
from ffigraph.graph.c_interface import DelegatedCOp
from ffigraph.graph.op import Op
from ffigraph.tensor.basic import as_tensor_variable
from ffigraph.tensor.gradient import disconnected_type
from ffigraph.tensor.type import TensorType

__all__ = ["Images2Neibs", "Neibs2Images", "images2neibs", "neibs2images", "MODES"]

MODES = ("valid", "ignore_borders", "wrap_centered", "half", "full")


# ------------------------------------------------------------------ the patch grid (shared with the C)


def _vector_values(op, what, value, n):
    """The ``n`` values of the int vector ``value`` (named ``what``) as Python ints."""
    value = np.asarray(value)
    if value.ndim != 1 or value.shape[0] != n:
        raise ValueError("%s: %s must hold %d values, got %d" % (op, what, n, value.size if value.ndim else 1))
    return [int(v) for v in value]


def patch_grid(op, mode, img, lengths, size, step):
    """``((gc, gd), (pr, pc))``: the patch counts and the offsets (padding) along the image's rows
    and columns, for ``lengths = (H, W)``, ``size = (c, d)`` and ``step = (sr, sc)``; the mode's
    errors otherwise (``img`` names the image's shape in messages, ``op`` the op). The C code
    (``ffg_neibs_grid``) makes the same checks in the same order, with the same messages."""
    if size[0] <= 0 or size[1] <= 0:
        raise ValueError("%s: neib_shape must be positive, got (%d, %d)" % (op, size[0], size[1]))
    if step[0] <= 0 or step[1] <= 0:
        raise ValueError("%s: neib_step must be positive, got (%d, %d)" % (op, step[0], step[1]))
    if mode == "wrap_centered" and (size[0] % 2 != 1 or size[1] % 2 != 1):
        raise TypeError("%s: mode 'wrap_centered' needs odd patch sizes, got neib_shape=(%d, %d)"
                        % (op, size[0], size[1]))
    counts, offsets = [], []
    for k in range(2):
        n, c, s = lengths[k], size[k], step[k]
        if n < c:
            raise TypeError("%s: neib_shape[%d]=%d is larger than %s[%d]=%d: mode '%s' needs patches no larger "
                            "than the image" % (op, k, c, img, k + 2, n, mode))
        if mode == "wrap_centered":
            counts.append((n + s - 1) // s)
            offsets.append(c // 2)
            continue
        if mode in ("valid", "ignore_borders"):
            span, offset, formula = n - c, 0, "(%d - %d)" % (n, c)
        elif mode == "half":
            span, offset, formula = n - c % 2, c // 2, "(%d - %d %% 2)" % (n, c)
        else:  # full
            span, offset, formula = n + c - 2, c - 1, "(%d + %d - 2)" % (n, c)
        if mode != "ignore_borders" and span % s != 0:
            raise TypeError("%s: neib_shape[%d]=%d, neib_step[%d]=%d and %s[%d]=%d not consistent: mode '%s' needs "
                            "%s %% %d == 0" % (op, k, c, k, s, img, k + 2, n, mode, formula, s))
        counts.append(1 + span // s)
        offsets.append(offset)
    return tuple(counts), tuple(offsets)


def _source_indices(mode, n, count, size, step, offset):
    """(index, inside) arrays of shape (count, size): the image index each patch element reads along
    one axis, and whether it is inside the image (False: padding, read as zero)."""
    idx = np.arange(count)[:, None] * step + np.arange(size)[None, :] - offset
    if mode == "wrap_centered":
        return idx % n, np.ones(idx.shape, dtype=bool)
    inside = (idx >= 0) & (idx < n)
    return np.where(inside, idx, 0), inside


def _int_vector(v, what, op):
    v = as_tensor_variable(v)
    if v.ndim != 1 or np.dtype(v.dtype).kind not in "iu":
        raise TypeError("%s: %s must be a vector of integers, got %s (%s, %d-d)" % (op, what, v, v.dtype, v.ndim))
    return v


def _constant_values(v):
    return [int(x) for x in np.asarray(v.data)] if isinstance(v, Constant) else None


def _check_mode(cls, mode):
    if mode not in MODES:
        raise NotImplementedError("%s: mode %r is not implemented (modes: %s)"
                                  % (cls.__name__, mode, ", ".join(repr(m) for m in MODES)))
    return mode


class _NeibsOp(DelegatedCOp, Op):
    c_impl = "ffigraph.tensor.nnet.neighbours_c"
    __props__ = ("mode",)

    def __init__(self, mode="valid"):
        self.mode = _check_mode(type(self), mode)

    def __str__(self):
        return "%s{%s}" % (type(self).__name__, self.mode)

    def _sizes(self, neib_shape, neib_step):
        """The int vectors ``neib_shape`` and ``neib_step`` (None: the shape), checked where constant."""
        neib_shape = _int_vector(neib_shape, "neib_shape", self)
        neib_step = neib_shape if neib_step is None else _int_vector(neib_step, "neib_step", self)
        for what, v in (("neib_shape", neib_shape), ("neib_step", neib_step)):
            values = _constant_values(v)
            if values is not None:
                _vector_values(self, what, values, 2)
                if min(values) <= 0:
                    raise ValueError("%s: %s must be positive, got (%d, %d)" % (self, what, values[0], values[1]))
        return neib_shape, neib_step

    def connection_pattern(self, node):
        return [[True]] + [[False]] * (len(node.inputs) - 1)


class Images2Neibs(_NeibsOp):
    """Every ``neib_shape`` patch of every image of ``ten4`` as one row of a matrix (Theano's op;
    see the module's docstring for the layout and the modes). Inputs ``(ten4, neib_shape,
    neib_step)``: a 4-d tensor and two int vectors of 2 values (the step defaults to the shape)."""

    def make_node(self, ten4, neib_shape, neib_step=None):
        ten4 = as_tensor_variable(ten4)
        if ten4.ndim != 4:
            raise TypeError("%s: ten4 must be a 4-d tensor (batch, channels, rows, columns), got %s with %d "
                            "dimensions" % (self, ten4, ten4.ndim))
        neib_shape, neib_step = self._sizes(neib_shape, neib_step)
        size, step = _constant_values(neib_shape), _constant_values(neib_step)
        cols = size[0] * size[1] if size is not None else None
        rows = None
        if size is not None and step is not None and all(s is not None for s in ten4.type.shape):
            try:
                (gc, gd), _ = patch_grid(self, self.mode, "ten4.shape", ten4.type.shape[2:], size, step)
            except (TypeError, ValueError):
                pass   # the call will say so (a function may never be called with this input)
            else:
                rows = ten4.type.shape[0] * ten4.type.shape[1] * gc * gd
        return Apply(self, [ten4, neib_shape, neib_step], [TensorType(ten4.dtype, (rows, cols))()])

    def perform(self, node, inputs, output_storage):
        ten4, neib_shape, neib_step = inputs
        size = _vector_values(self, "neib_shape", neib_shape, 2)
        step = _vector_values(self, "neib_step", neib_step, 2)
        B, C, H, W = ten4.shape
        (gc, gd), (pr, pc) = patch_grid(self, self.mode, "ten4.shape", (H, W), size, step)
        ri, rin = _source_indices(self.mode, H, gc, size[0], step[0], pr)
        ci, cin = _source_indices(self.mode, W, gd, size[1], step[1], pc)
        # (B, C, gc, gd, c, d): patch (a, b), element (i, j)
        patches = ten4[:, :, ri[:, None, :, None], ci[None, :, None, :]]
        inside = rin[:, None, :, None] & cin[None, :, None, :]
        if not inside.all():
            patches = np.where(inside, patches, np.zeros((), dtype=ten4.dtype))
        out = np.ascontiguousarray(patches, dtype=node.outputs[0].type.numpy_dtype)
        output_storage[0][0] = out.reshape(B * C * gc * gd, size[0] * size[1])

    def infer_shape(self, fgraph, node, input_shapes):
        in_shape = input_shapes[0]
        _, neib_shape, neib_step = node.inputs
        c, d = neib_shape[0], neib_shape[1]
        sr, sc = neib_step[0], neib_step[1]
        counts = []
        for n, size, step in ((in_shape[2], c, sr), (in_shape[3], d, sc)):
            if self.mode == "wrap_centered":
                counts.append((n + step - 1) // step)
            elif self.mode in ("valid", "ignore_borders"):
                counts.append(1 + (n - size) // step)
            elif self.mode == "half":
                counts.append(1 + (n - size % 2) // step)
            else:
                counts.append(1 + (n + size - 2) // step)
        return [(in_shape[0] * in_shape[1] * counts[0] * counts[1], c * d)]

    def L_op(self, inputs, outputs, output_grads):
        x, neib_shape, neib_step = inputs
        gx = Neibs2Images(self.mode)(output_grads[0], neib_shape, neib_step, x.shape)
        return [gx, disconnected_type(), disconnected_type()]


class Neibs2Images(_NeibsOp):
    """The adjoint of ``Images2Neibs(mode)``: a 4-d tensor of ``original_shape``, zero but where
    patches were read, each patch value added to its source pixel (padding dropped, wrapping
    followed). Inputs ``(neibs, neib_shape, neib_step, original_shape)``: the patch matrix (its
    shape must be the one ``Images2Neibs`` gives for ``original_shape``, else ValueError), the
    patch shape and step (int vectors of 2) and the image shape (an int vector of 4)."""

    def make_node(self, neibs, neib_shape, neib_step, original_shape):
        neibs = as_tensor_variable(neibs)
        if neibs.ndim != 2:
            raise TypeError("%s: neibs must be a matrix (one patch per row), got %s with %d dimensions"
                            % (self, neibs, neibs.ndim))
        neib_shape, neib_step = self._sizes(neib_shape, neib_step)
        original_shape = _int_vector(original_shape, "original_shape", self)
        shape = _constant_values(original_shape)
        if shape is not None:
            _vector_values(self, "original_shape", shape, 4)
            if min(shape) < 0:
                raise ValueError("%s: original_shape must not be negative, got %s" % (self, tuple(shape)))
        static = tuple(shape) if shape is not None else (None,) * 4
        return Apply(self, [neibs, neib_shape, neib_step, original_shape], [TensorType(neibs.dtype, static)()])

    def perform(self, node, inputs, output_storage):
        neibs, neib_shape, neib_step, original_shape = inputs
        size = _vector_values(self, "neib_shape", neib_shape, 2)
        step = _vector_values(self, "neib_step", neib_step, 2)
        shape = _vector_values(self, "original_shape", original_shape, 4)
        if min(shape) < 0:
            raise ValueError("%s: original_shape must not be negative, got (%d, %d, %d, %d)" % ((self,) + tuple(shape)))
        B, C, H, W = shape
        (gc, gd), (pr, pc) = patch_grid(self, self.mode, "original_shape", (H, W), size, step)
        expected = (B * C * gc * gd, size[0] * size[1])
        if tuple(neibs.shape) != expected:
            raise ValueError("%s: neibs has shape (%d, %d), but images of shape (%d, %d, %d, %d) have (%d, %d) "
                             "patches of neib_shape=(%d, %d), neib_step=(%d, %d)"
                             % ((self,) + tuple(neibs.shape) + tuple(shape) + expected + tuple(size) + tuple(step)))
        dtype = node.outputs[0].type.numpy_dtype
        out = np.zeros((B * C, H, W), dtype=dtype)
        ri, rin = _source_indices(self.mode, H, gc, size[0], step[0], pr)
        ci, cin = _source_indices(self.mode, W, gd, size[1], step[1], pc)
        g = neibs.reshape(B * C, gc, gd, size[0], size[1])
        shape5 = g.shape
        img = np.broadcast_to(np.arange(B * C)[:, None, None, None, None], shape5)
        rows = np.broadcast_to(ri[None, :, None, :, None], shape5)
        cols = np.broadcast_to(ci[None, None, :, None, :], shape5)
        inside = np.broadcast_to((rin[:, None, :, None] & cin[None, :, None, :])[None], shape5)
        # unbuffered: overlapping patches add up (C order: patch by patch, as the C code sums)
        np.add.at(out, (img[inside], rows[inside], cols[inside]), g[inside].astype(dtype, copy=False))
        output_storage[0][0] = out.reshape(B, C, H, W)

    def infer_shape(self, fgraph, node, input_shapes):
        shape = node.inputs[3]
        return [tuple(shape[k] for k in range(4))]

    def L_op(self, inputs, outputs, output_grads):
        _, neib_shape, neib_step, _ = inputs
        return [Images2Neibs(self.mode)(output_grads[0], neib_shape, neib_step), disconnected_type(),
                disconnected_type(), disconnected_type()]


def images2neibs(ten4, neib_shape, neib_step=None, mode="valid"):
    """The patches of the images of the 4-d tensor ``ten4`` (batch, channels, rows, columns) as the
    rows of a matrix (Theano's function; see the module's docstring for the layout and the modes).

    ``neib_shape``: ``(c, d)``, the patch's rows and columns; ``neib_step``: ``(sr, sc)``, how far
    one patch is from the next (None: the patch shape, disjoint patches); both int pairs or
    symbolic int vectors of 2. ``mode``: 'valid', 'ignore_borders', 'half', 'full' or
    'wrap_centered'."""
    return Images2Neibs(mode)(ten4, neib_shape, neib_step)


def neibs2images(neibs, neib_shape, original_shape, mode="valid"):
    """The images that ``images2neibs(images, neib_shape, mode=mode)`` cut into ``neibs``, for
    images of shape ``original_shape`` (Theano's inverse: disjoint patches, the default step).

    'valid' gives the images back; 'ignore_borders' gives them back with the borders the patches
    did not cover set to zero. Other modes are NotImplementedError, as in Theano (the op
    ``Neibs2Images(mode)`` sums patches back in any mode and for any step: it is the gradient of
    ``images2neibs``)."""
    if mode not in ("valid", "ignore_borders"):
        raise NotImplementedError("neibs2images: mode %r is not supported (only 'valid' and 'ignore_borders'; "
                                  "Neibs2Images(%r) sums patches back in every mode)" % (mode, mode))
    return Neibs2Images(mode)(neibs, neib_shape, None, original_shape)

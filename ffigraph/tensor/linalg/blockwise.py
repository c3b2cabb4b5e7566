"""What every linear-algebra op shares: core dimensions, batch dimensions that broadcast, and the
batched ``perform``.

A ``LinalgOp`` works on the last ``core_ndims`` axes of each input (2 for a matrix, 1 for a
vector); any axes before those are *batch* axes, which broadcast between the inputs as numpy's
(and PyTensor's ``Blockwise``) do: the op runs once per batch index, and each output has the
broadcast batch axes first, then its own core axes. A subclass says

* ``core_ndims_in(self)``: one int per input (may depend on the op's props, e.g. ``b_ndim``);
* ``core_shapes_out(self, core_shapes_in)``: each output's core shape from the inputs' core
  shapes; entries are ints or symbolic scalars, so the same code serves ``infer_shape``;
* ``out_dtypes(self, dtypes_in)``: each output's dtype;
* ``core_perform(self, *core_arrays)``: one batch entry in numpy, returning a tuple of arrays;
* and, for C, the C hooks ``lapack_c.batched_c_code`` calls (see there).

Its ``make_node`` calls ``self.apply(inputs)``, which checks dtypes and ranks and makes the
output types.
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.basic import Apply
from ffigraph.graph.c_interface import DelegatedCOp
from ffigraph.graph.op import Op
from ffigraph.tensor.basic import as_tensor_variable
from ffigraph.tensor.blockwise import broadcast_batch
from ffigraph.tensor.type import TensorType

#: dtypes the LAPACK ops compute in; integer and bool inputs are converted to float64 (floatX-free,
#: as numpy.linalg and PyTensor's float upcast do); complex has no LAPACK code here (TypeError)
LINALG_DTYPES = ("float32", "float64")


def linalg_dtype(dtypes):
    """The float dtype a linear-algebra op computes in for inputs of ``dtypes``: float32 when every
    input is float32 (or an integer/bool narrow enough for float32, as PyTensor's upcast), float64
    otherwise. Complex inputs are a TypeError naming the dtype."""
    for d in dtypes:
        if np.dtype(d).kind == "c":
            raise TypeError("linear algebra on %s: complex matrices are not supported (float32 and float64 "
                            "only)" % d)
    kinds = [np.dtype(d) for d in dtypes]
    if all(d == np.float32 or (d.kind in "biu" and d.itemsize <= 2) for d in kinds) and \
            any(d == np.float32 for d in kinds):
        return "float32"
    return "float64"


class LinalgOp(DelegatedCOp, Op):
    """A batched linear-algebra op (see the module doc)."""

    c_impl = "ffigraph.tensor.linalg.lapack_c"
    #: batched already: vectorize_graph gives it more batch axes, not a Blockwise
    batched = True
    #: the name users call it by, for messages ("cholesky", "solve_triangular", ...)
    what = None

    # ---- what subclasses say
    def core_ndims_in(self):
        raise NotImplementedError

    def core_shapes_out(self, core_shapes_in):
        raise NotImplementedError

    def out_dtypes(self, dtypes_in):
        return [dtypes_in[0]] * self.nout

    def core_perform(self, *arrays):
        raise NotImplementedError

    def check_core_shapes(self, core_shapes_in):
        """Static checks of the core shapes (ints or None); raise ValueError naming the input."""

    nout = 1

    # ---- the shared machinery
    def _label(self):
        return self.what or type(self).__name__

    def apply(self, inputs):
        """The Apply node of this op on ``inputs`` (converted to the compute dtype)."""
        from ffigraph.tensor.basic import cast

        inputs = [as_tensor_variable(x) for x in inputs]
        core = self.core_ndims_in()
        for k, (x, nd) in enumerate(zip(inputs, core)):
            if x.ndim < nd:
                raise ValueError("%s: input %d (%s) must have at least %d dimensions, got %d"
                                 % (self._label(), k, x, nd, x.ndim))
        dtype = linalg_dtype([x.dtype for x in inputs])
        inputs = [x if x.dtype == dtype else cast(x, dtype) for x in inputs]
        self.check_core_shapes([x.type.shape[x.ndim - nd:] for x, nd in zip(inputs, core)])
        batch = broadcast_batch([x.type.shape[:x.ndim - nd] for x, nd in zip(inputs, core)], self._label())
        core_in = [tuple(x.type.shape[x.ndim - nd:]) for x, nd in zip(inputs, core)]
        core_out = self.core_shapes_out(core_in)
        outs = [TensorType(dt, batch + tuple(s if isinstance(s, int) else None for s in shape))()
                for dt, shape in zip(self.out_dtypes([x.dtype for x in inputs]), core_out)]
        return Apply(self, inputs, outs)

    def make_node(self, *inputs):
        return self.apply(inputs)

    def perform(self, node, inputs, output_storage):
        core = self.core_ndims_in()
        batch_shapes = [x.shape[:x.ndim - nd] for x, nd in zip(inputs, core)]
        try:
            batch = np.broadcast_shapes(*batch_shapes)
        except ValueError:
            raise ValueError("%s: batch shapes %s do not broadcast" % (self._label(), " and ".join(map(str, batch_shapes))))
        self.check_values(inputs)
        core_in = [x.shape[x.ndim - nd:] for x, nd in zip(inputs, core)]
        core_out = [tuple(int(n) for n in s) for s in self.core_shapes_out(core_in)]
        dtypes = [o.type.numpy_dtype for o in node.outputs]
        results = [np.empty(batch + s, dtype=dt) for s, dt in zip(core_out, dtypes)]
        views = [np.broadcast_to(x, batch + x.shape[x.ndim - nd:]) for x, nd in zip(inputs, core)]
        for index in np.ndindex(*batch):
            got = self.core_perform(*[v[index] for v in views])
            for r, g in zip(results, got):
                r[index] = g
        for store, r in zip(output_storage, results):
            store[0] = r

    def check_values(self, inputs):
        """Run-time checks of the core shapes (ValueError naming the input), before any work."""

    def infer_shape(self, fgraph, node, input_shapes):
        from ffigraph.tensor.basic import as_tensor_variable as tv

        core = self.core_ndims_in()
        core_in = [s[len(s) - nd:] for s, nd in zip(input_shapes, core)]
        batch_in = [s[:len(s) - nd] for s, nd in zip(input_shapes, core)]
        nb = max((len(b) for b in batch_in), default=0)
        batch = []
        from ffigraph.tensor.basic import switch
        from ffigraph.tensor.math import eq

        for axis in range(nb):
            lengths = [b[axis - nb + len(b)] for b in batch_in if axis - nb + len(b) >= 0]
            out = lengths[0]
            for n in lengths[1:]:   # (broadcasting: the lengths are equal or 1; keep the one that is not 1)
                out = switch(eq(tv(out), 1), tv(n), tv(out))
            batch.append(out)
        return [tuple(batch) + tuple(s) for s in self.core_shapes_out(core_in)]


class SquareMatrixOp(LinalgOp):
    """A LinalgOp of one square matrix (``cholesky``, ``inv``, ``det``, ``expm``, ...): its core
    checks, and by default an output of the input's shape. C: ``c_check`` refuses a non-square
    matrix."""

    def core_ndims_in(self):
        return [2]

    def check_core_shapes(self, shapes):
        check_square(self, shapes[0], 0)

    def core_shapes_out(self, shapes):
        return [tuple(shapes[0])] * self.nout

    def check_values(self, inputs):
        a = inputs[0]
        if a.shape[-1] != a.shape[-2]:
            raise ValueError("%s: input 0 must be square, got a %d x %d matrix" % ((self._label(),) + a.shape[-2:]))

    def c_check(self, node, d):
        from ffigraph.tensor.linalg.lapack_c import square_check_c

        return square_check_c(d)


# ------------------------------------------------------------------ shared by the ops


def check_square(op, shape, k, what="input"):
    n, m = shape[-2], shape[-1]
    if n is not None and m is not None and n != m:
        raise ValueError("%s: %s %d must be square, got a %d x %d matrix" % (op._label(), what, k, n, m))


def check_finite_values(op, arrays):
    for k, a in enumerate(arrays):
        if a.size and not np.all(np.isfinite(a)):
            raise ValueError("%s: input %d must not contain infs or NaNs" % (op._label(), k))


def triangle_masks(a):
    """Two boolean matrices over the last two axes of ``a`` (square): strictly below the diagonal,
    and on it. Made of index comparisons, so that ``switch(mask, ...)`` fuses into one loop."""
    from ffigraph.tensor.basic import arange
    from ffigraph.tensor.math import eq, gt
    from ffigraph.tensor.shapes import shape_i

    index = arange(shape_i(a, a.ndim - 1))
    rows, cols = index.dimshuffle(0, "x"), index.dimshuffle("x", 0)
    return gt(rows, cols), eq(rows, cols)


def mT(x):
    """``x`` with its last two axes swapped (a view)."""
    from ffigraph.tensor.layout import swapaxes

    return swapaxes(x, -1, -2)


def sum_batch_to(g, v):
    """The gradient ``g`` of a broadcast batch, summed back to ``v``'s shape (batch axes ``v`` lacks
    or has as 1)."""
    from ffigraph.tensor.sum_to_shape import sum_to_shape
    from ffigraph.tensor.shapes import shape

    if g.ndim > v.ndim:   # batch axes v does not have: summed away
        g = g.sum(axis=tuple(range(g.ndim - v.ndim)))
    if g.type.shape == v.type.shape and all(n is not None for n in v.type.shape):
        return g
    return sum_to_shape(g, shape(v))   # (and those v has as 1)

"""The BLAS-role ops of compiled graphs: ``Dot22``, ``Gemv``, ``Gemm`` and ``Ger``.

Theano and PyTensor name a compiled product by the BLAS routine it is (their tutorial tells CPU
from GPU by looking for ``Gemv``/``Gemm`` nodes in ``f.maker.fgraph.toposort()``). The rewrites
in ``ffigraph.rewriting.blas`` put these ops in a compiled float32/float64 graph; ``dot`` itself
always builds the ``Dot`` op.

- ``Dot22``: matrix·matrix; ``Gemv``: matrix·vector and vector·matrix. Both are subclasses of
  ``Dot`` with its very C code (BLAS gemm/gemv for float32/float64, the blocked kernel when no
  BLAS is at hand) and its two inputs ``(x, y)``. Theano's ``Gemv`` takes
  ``(y, alpha, A, x, beta)``; ffigraph's is the product alone (the accumulation of a
  matrix·vector product stays an elementwise node).
- ``Gemm(z, a, x, y, b)``: ``b * z + a * dot(x, y)`` for matrices ``z``, ``x``, ``y`` and 0-d
  ``a``, ``b``, Theano's ``gemm_no_inplace`` signature. The product is Dot's (BLAS gemm), and
  the combination is taken elementwise in the same C function, in the order the unfused graph
  takes it (``z + a * d`` exactly, NaN and inf propagating as NumPy's), rather than by BLAS's
  ``beta``, which skips ``c`` when ``beta`` is 0 and the product when ``alpha`` is 0. ``z`` and
  the product broadcast as in ``z + a * d`` (a run-time length 1 of either is repeated).
- ``Ger(A, alpha, x, y)``: ``A + alpha * outer(x, y)`` for a matrix ``A``, 0-d ``alpha`` and
  vectors ``x``, ``y``, Theano's ``ger`` signature. Its C code is one loop over ``A``
  (``A[i, j] + alpha * (x[i] * y[j])``): a rank-1 update reads every element of ``A`` once, and
  the loop gives the unfused graph's values bit for bit.

All four have ``__props__ = ()``; ``str(op)`` and ``type(op).__name__`` are the BLAS name.
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.basic import Apply
from ffigraph.graph.c_interface import DelegatedCOp
from ffigraph.graph.op import Op
from ffigraph.tensor.basic import as_tensor_variable, switch
from ffigraph.tensor.math import Dot, dot, eq
from ffigraph.tensor.shapes import shape_i
from ffigraph.tensor.sum_to_shape import sum_to_shape
from ffigraph.tensor.type import TensorType

#: The dtypes BLAS multiplies (the rewrites only use these ops for them).
BLAS_DTYPES = ("float32", "float64")


class Dot22(Dot):
    """``dot`` of two matrices, named by its BLAS role (gemm with alpha 1, beta 0); Dot's C code."""

    def make_node(self, x, y):
        x, y = as_tensor_variable(x), as_tensor_variable(y)
        if x.ndim != 2 or y.ndim != 2:
            raise TypeError("Dot22: takes two matrices; got %s (%d-d) and %s (%d-d)" % (x, x.ndim, y, y.ndim))
        return Dot.make_node(self, x, y)


class Gemv(Dot):
    """``dot`` of a matrix and a vector (either order), named by its BLAS role; Dot's C code."""

    def make_node(self, x, y):
        x, y = as_tensor_variable(x), as_tensor_variable(y)
        if sorted((x.ndim, y.ndim)) != [1, 2]:
            raise TypeError("Gemv: takes a matrix and a vector (either order); got %s (%d-d) and %s (%d-d)"
                            % (x, x.ndim, y, y.ndim))
        return Dot.make_node(self, x, y)


def _static_check(who, what, zname, zk, pname, pk):
    """The static length of ``zk`` (the accumulated matrix's) broadcast with ``pk`` (the product's),
    None when unknown; a ValueError when both are known and do not broadcast."""
    if zk is not None and pk is not None and zk != pk and zk != 1 and pk != 1:
        raise ValueError("%s: the %s of %s and %s differ (%d vs %d) and do not broadcast"
                         % (who, what, zname, pname, zk, pk))
    if zk == 1:
        return pk
    if zk is not None:
        return zk
    return pk if pk != 1 else None


def _broadcast_check(who, zname, zshape, pname, pshape):
    """The shapes of the accumulated matrix and of the product broadcast together (as the
    unfused ``z + a * product`` does: a length 1 of either is repeated), or a ValueError."""
    for k, (p, q) in enumerate(zip(zshape, pshape)):
        if p != q and p != 1 and q != 1:
            raise ValueError("%s: %s has shape %s but %s has shape %s: they cannot be broadcast together "
                             "(dim %d: %d vs %d)" % (who, zname, tuple(zshape), pname, tuple(pshape), k, p, q))


def _broadcast_length(z, k, zk, pk):
    """Axis ``k``'s length of ``z`` (lengths ``zk``) broadcast with the product's (``pk``)."""
    if z.type.shape[k] == 1:
        return pk
    if z.type.shape[k] is not None:
        return zk
    return switch(eq(zk, 1), pk, zk)   # right for every pair that broadcasts


def _check_dtypes(who, names, variables):
    dtypes = {v.type.dtype for v in variables}
    if len(dtypes) != 1 or next(iter(dtypes)) not in BLAS_DTYPES:
        raise TypeError("%s: %s must share one dtype, float32 or float64; got %s"
                        % (who, ", ".join(names), ", ".join("%s=%s" % (n, v.type.dtype)
                                                           for n, v in zip(names, variables))))


class Gemm(DelegatedCOp, Op):
    """``b * z + a * dot(x, y)``: matrices ``z`` (M x N), ``x`` (M x K), ``y`` (K x N), 0-d ``a``, ``b``."""

    c_impl = "ffigraph.tensor.gemm_c"
    __props__ = ()

    def make_node(self, z, a, x, y, b):
        z, a, x, y, b = [as_tensor_variable(v) for v in (z, a, x, y, b)]
        names = ("z", "a", "x", "y", "b")
        for n, v, nd in zip(names, (z, a, x, y, b), (2, 0, 2, 2, 0)):
            if v.ndim != nd:
                raise TypeError("Gemm: %s (%s) must be %d-d, got %d-d" % (n, v, nd, v.ndim))
        _check_dtypes("Gemm", names, (z, a, x, y, b))
        zs, xs, ys = z.type.shape, x.type.shape, y.type.shape
        if xs[1] is not None and ys[0] is not None and xs[1] != ys[0]:
            raise ValueError("Gemm: the columns of x and rows of y differ (%d vs %d; static shapes x %s, y %s)"
                             % (xs[1], ys[0], xs, ys))
        shape = (_static_check("Gemm", "rows", "z", zs[0], "x", xs[0]),
                 _static_check("Gemm", "columns", "z", zs[1], "y", ys[1]))
        return Apply(self, [z, a, x, y, b], [TensorType(z.dtype, shape)()])

    def perform(self, node, inputs, output_storage):
        z, a, x, y, b = inputs
        if x.shape[1] != y.shape[0]:
            raise ValueError("Gemm: shapes %s (x) and %s (y) are not aligned" % (x.shape, y.shape))
        _broadcast_check("Gemm", "z", z.shape, "dot(x, y)", (x.shape[0], y.shape[1]))
        dtype = node.outputs[0].type.numpy_dtype
        with np.errstate(all="ignore"):
            out = b * z + a * np.matmul(x, y)
        output_storage[0][0] = np.asarray(out, dtype=dtype)

    def infer_shape(self, fgraph, node, input_shapes):
        sz, _, sx, sy, _ = input_shapes
        z = node.inputs[0]
        return [(_broadcast_length(z, 0, sz[0], sx[0]), _broadcast_length(z, 1, sz[1], sy[1]))]

    def L_op(self, inputs, outputs, output_grads):
        z, a, x, y, b = inputs
        g = output_grads[0]
        d = dot(x, y)
        # each operand gets the gradient summed over the axes it was broadcast along
        gp = sum_to_shape(g, [shape_i(x, 0), shape_i(y, 1)])
        gz = sum_to_shape(b * g, [shape_i(z, 0), shape_i(z, 1)])
        return [gz, (gp * d).sum(), a * dot(gp, y.T), a * dot(x.T, gp), (g * z).sum()]

    def __str__(self):
        return "Gemm"


class Ger(DelegatedCOp, Op):
    """``A + alpha * outer(x, y)``: a matrix ``A`` (M x N), 0-d ``alpha``, vectors ``x`` (M) and ``y`` (N)."""

    c_impl = "ffigraph.tensor.gemm_c"
    __props__ = ()

    def make_node(self, A, alpha, x, y):
        A, alpha, x, y = [as_tensor_variable(v) for v in (A, alpha, x, y)]
        names = ("A", "alpha", "x", "y")
        for n, v, nd in zip(names, (A, alpha, x, y), (2, 0, 1, 1)):
            if v.ndim != nd:
                raise TypeError("Ger: %s (%s) must be %d-d, got %d-d" % (n, v, nd, v.ndim))
        _check_dtypes("Ger", names, (A, alpha, x, y))
        As, xs, ys = A.type.shape, x.type.shape, y.type.shape
        shape = (_static_check("Ger", "rows/length", "A", As[0], "x", xs[0]),
                 _static_check("Ger", "columns/length", "A", As[1], "y", ys[0]))
        return Apply(self, [A, alpha, x, y], [TensorType(A.dtype, shape)()])

    def perform(self, node, inputs, output_storage):
        A, alpha, x, y = inputs
        _broadcast_check("Ger", "A", A.shape, "outer(x, y)", (x.shape[0], y.shape[0]))
        with np.errstate(all="ignore"):
            out = A + alpha * np.outer(x, y)
        output_storage[0][0] = np.asarray(out, dtype=node.outputs[0].type.numpy_dtype)

    def infer_shape(self, fgraph, node, input_shapes):
        sA, _, sx, sy = input_shapes
        A = node.inputs[0]
        return [(_broadcast_length(A, 0, sA[0], sx[0]), _broadcast_length(A, 1, sA[1], sy[0]))]

    def L_op(self, inputs, outputs, output_grads):
        A, alpha, x, y = inputs
        g = output_grads[0]
        gp = sum_to_shape(g, [shape_i(x, 0), shape_i(y, 0)])
        gA = sum_to_shape(g, [shape_i(A, 0), shape_i(A, 1)])
        return [gA, (gp * (x.dimshuffle(0, "x") * y.dimshuffle("x", 0))).sum(), alpha * dot(gp, y),
                alpha * dot(x, gp)]

    def __str__(self):
        return "Ger"


dot22 = Dot22()
gemv = Gemv()
gemm_no_inplace = Gemm()
ger = Ger()

__all__ = ["Dot22", "Gemv", "Gemm", "Ger", "dot22", "gemv", "gemm_no_inplace", "ger", "BLAS_DTYPES"]

"""BLAS rewrites (specialize): name compiled products by their BLAS role, as Theano and PyTensor do.

Theano's tutorial tells CPU from GPU by finding ``Gemv``/``Gemm`` nodes in
``f.maker.fgraph.toposort()``; these rewrites put ffigraph's ops of those names
(``ffigraph.tensor.blas_ops``) in a compiled graph, for float32/float64 operands of one dtype:

  dot(matrix, matrix)                        -> Dot22(x, y)
  dot(matrix, vector), dot(vector, matrix)   -> Gemv(x, y)
  z + a * dot(x, y), z - a * dot(x, y),
  z + dot(x, y), z - dot(x, y)  (matrices)   -> Gemm(z, a, x, y, 1)   (a: -a, 1 or -1)
  z + a * outer(x, y) (and the forms above)  -> Ger(z, a, x, y)
  Gemm(z, a, x[:, None], y[None, :], 1)      -> Ger(z, a, x, y)

``outer(x, y)`` is ``x[:, None] * y[None, :]`` (``ffigraph.tensor.outer``) or ``dot`` of those
two matrices (Theano's ``outer``). ``Dot22`` and ``Gemv`` are ``Dot`` with another name (the same
C code); vector·vector and mixed or integer dtypes stay ``Dot``. ``Gemm`` and ``Ger`` are made
only where they compute the unfused graph's values bit for bit: ``z`` has the result's exact
type (no broadcasting), every operand has the result's dtype, ``a`` is one scalar factor (a 0-d
variable, its broadcast, or a size-1 constant), and the product feeds nothing else (otherwise
it would be computed twice). A graph built with more factors (``a * b * dot(x, y)``) or a scaled
``z`` keeps its elementwise node around a ``Dot22``.

The rewriters are tagged ``blas`` (all three) and ``gemm`` (the two that make ``Gemm``/``Ger``), so
``Mode().excluding("gemm")`` or ``excluding("blas")`` leaves them out.
"""
from __future__ import annotations

from ffigraph.graph.basic import Constant
from ffigraph.graph.rewriting import node_rewriter
from ffigraph.rewriting.canonicalize import elemwise_name, owner_name
from ffigraph.rewriting.groups import register_specialize
from ffigraph.tensor.basic import cast, constant
from ffigraph.tensor.blas_ops import BLAS_DTYPES, Dot22, Gemm, Gemv, Ger
from ffigraph.tensor.elemwise import DimShuffle, Elemwise
from ffigraph.tensor.math import ELEMWISE, Dot


def _blas_dtype(node):
    """The one float dtype of ``node``'s inputs and outputs that BLAS handles, else None."""
    dtypes = {v.type.dtype for v in node.inputs + node.outputs}
    return dtypes.pop() if len(dtypes) == 1 and next(iter(dtypes)) in BLAS_DTYPES else None


@node_rewriter([Dot], name="local_dot_to_blas")
def local_dot_to_blas(fgraph, node):
    """Dot -> Dot22 (matrix·matrix) or Gemv (matrix·vector, vector·matrix)."""
    if type(node.op) is not Dot or _blas_dtype(node) is None:
        return None
    ranks = tuple(v.ndim for v in node.inputs)
    if ranks == (2, 2):
        return [Dot22()(*node.inputs)]
    if ranks in ((2, 1), (1, 2)):
        return [Gemv()(*node.inputs)]
    return None


def _only_used_by(fgraph, var, node):
    clients = fgraph.clients.get(var, ())
    return len(clients) == 1 and clients[0][0] is node


def _scalar(var, dtype):
    """``var``'s one value as a 0-d variable of ``dtype`` when ``var`` is scalar-like (0-d, a
    broadcast of a 0-d variable, or a size-1 constant), else None."""
    if not all(var.type.broadcastable):
        return None
    if var.ndim == 0:
        scalar = var
    elif isinstance(var, Constant) and getattr(var.data, "size", 0) == 1:
        scalar = constant(var.data.reshape(()), dtype=var.type.dtype)
    elif var.owner is not None and isinstance(var.owner.op, DimShuffle) and var.owner.inputs[0].ndim == 0:
        scalar = var.owner.inputs[0]
    else:
        return None
    return scalar if scalar.type.dtype == dtype else cast(scalar, dtype)


def _outer(var):
    """(x, y) when ``var`` is ``x[:, None] * y[None, :]`` (either order) of vectors, else None."""
    if owner_name(var) != "mul" or len(var.owner.inputs) != 2:
        return None
    col = row = None
    for v in var.owner.inputs:
        op = v.owner.op if v.owner is not None else None
        if isinstance(op, DimShuffle) and op.input_ndim == 1:
            if op.new_order == (0, "x"):
                col = v.owner.inputs[0]
            elif op.new_order == ("x", 0):
                row = v.owner.inputs[0]
    return None if col is None or row is None else (col, row)


def _product(fgraph, var, node, dtype):
    """("gemm", x, y) when ``var`` is a matrix product of matrices, ("ger", x, y) when it is an
    outer product of vectors, all of ``dtype`` and feeding only ``node``; else None."""
    if not _only_used_by(fgraph, var, node) or var.type.dtype != dtype or var.owner is None:
        return None
    if isinstance(var.owner.op, Dot) and _blas_dtype(var.owner) == dtype \
            and [v.ndim for v in var.owner.inputs] == [2, 2]:
        return ("gemm",) + tuple(var.owner.inputs)
    pair = _outer(var)
    if pair is not None and all(v.type.dtype == dtype for v in pair):
        return ("ger",) + pair
    return None


def _scaled_product(fgraph, var, node, dtype):
    """(alpha or None for 1, sign, kind, x, y) for ``var`` = [a *] product, [product *] a or
    -product, feeding only ``node``; else None."""
    found = _product(fgraph, var, node, dtype)
    if found is not None:
        return (None, 1) + found
    if not _only_used_by(fgraph, var, node):
        return None
    name = owner_name(var)
    if name == "neg":
        found = _product(fgraph, var.owner.inputs[0], var.owner, dtype)
        return None if found is None else (None, -1) + found
    if name == "mul" and len(var.owner.inputs) == 2:
        for s, p in (var.owner.inputs, reversed(var.owner.inputs)):
            alpha = _scalar(s, dtype)
            found = _product(fgraph, p, var.owner, dtype) if alpha is not None else None
            if found is not None:
                return (alpha, 1) + found
    return None


@node_rewriter([Elemwise], name="local_gemm_ger")
def local_gemm_ger(fgraph, node):
    """z + a * dot(x, y) -> Gemm(z, a, x, y, 1); z + a * outer(x, y) -> Ger(z, a, x, y)."""
    name = elemwise_name(node)
    if name not in ("add", "sub") or len(node.inputs) != 2:
        return None
    out = node.outputs[0]
    dtype = out.type.dtype
    if out.ndim != 2 or dtype not in BLAS_DTYPES:
        return None
    orders = [(0, 1), (1, 0)] if name == "add" else [(0, 1)]
    for zi, ti in orders:
        z, term = node.inputs[zi], node.inputs[ti]
        if z.type != out.type or term.type.broadcastable != out.type.broadcastable:
            continue
        found = _scaled_product(fgraph, term, node, dtype)
        if found is None:
            continue
        alpha, sign, kind, x, y = found
        if name == "sub":
            sign = -sign
        if alpha is None:
            alpha = constant(sign, dtype=dtype)
        elif sign < 0 and isinstance(alpha, Constant):
            alpha = constant(-alpha.data, dtype=dtype)   # negation is exact
        elif sign < 0:
            alpha = ELEMWISE["neg"](alpha)
        if kind == "ger":
            return [Ger()(z, alpha, x, y)]
        return [Gemm()(z, alpha, x, y, constant(1, dtype=dtype))]
    return None


@node_rewriter([Gemm], name="local_gemm_to_ger")
def local_gemm_to_ger(fgraph, node):
    """Gemm(z, a, x[:, None], y[None, :], 1) -> Ger(z, a, x, y): a product over one length-1 axis."""
    z, a, x, y, b = node.inputs
    if not (isinstance(b, Constant) and b.data == 1):
        return None
    col, row = x.owner, y.owner
    if col is None or row is None or not isinstance(col.op, DimShuffle) or not isinstance(row.op, DimShuffle):
        return None
    if col.op.new_order != (0, "x") or row.op.new_order != ("x", 0):
        return None
    return [Ger()(z, a, col.inputs[0], row.inputs[0])]


register_specialize(local_dot_to_blas, "blas")
# tagged "gemm" too: ``Mode(...).excluding("gemm")`` keeps the accumulation elementwise (the GPU
# rewrite moves Dot22/Gemv, which are Dots, to the device, but not Gemm or Ger)
register_specialize(local_gemm_ger, "blas", "gemm")
register_specialize(local_gemm_to_ger, "blas", "gemm")

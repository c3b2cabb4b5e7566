"""Products with PyTensor's names and signatures (part of issue 27): ``matmul`` (and ``@``),
``tensordot``, ``batched_dot``, ``kron`` and ``einsum``.

All but one are compositions of ops that have C code, so they run under the C linker:

- ``tensordot``: the summed axes moved last in ``a`` and first in ``b`` (``DimShuffle``), both
  reshaped to matrices (``Reshape``), one ``Dot`` (BLAS gemm for float32/float64), and the result
  reshaped; the summed lengths are checked first (``SpecifyShape``), since a reshape would hide a
  mismatch whose products agree, and the lengths the operands' types know are kept in the
  result's type. ``dot`` of an operand with three or more dimensions is this ``tensordot``
  (``math.dot``, Theano 1.0's rule);
- ``kron``: an outer product by broadcasting (``DimShuffle``, ``Elemwise`` mul) then ``Reshape``;
- ``einsum``: diagonals, sums, transposes and ``tensordot`` / ``BatchedMatMul`` (see its docstring
  for the subset).

The one new op is ``BatchedMatMul``: ``(batch..., M, K) @ (batch..., K, N)`` with NumPy's
broadcasting of the batch axes, whose C code (products_c.py) loops over the batch calling the
same BLAS gemm (or blocked kernel) that ``Dot`` uses. ``matmul`` uses ``Dot`` itself when both
operands have at most two dimensions, and ``BatchedMatMul`` otherwise; ``batched_dot`` uses it
too.
"""
from __future__ import annotations

import string

import numpy as np

from ffigraph.graph.basic import Apply
from ffigraph.graph.c_interface import DelegatedCOp
from ffigraph.graph.op import Op
from ffigraph.scalar.basic import upcast
from ffigraph.tensor.basic import as_tensor_variable, cast, constant, normalize_axis, switch
from ffigraph.tensor.construct import diagonal
from ffigraph.tensor.layout import specify_shape
from ffigraph.tensor.math import _dot, eq, mul
from ffigraph.tensor.shapes import reshape, shape_i
from ffigraph.tensor.type import TensorType

# ------------------------------------------------------------------ BatchedMatMul


def _broadcast_batch(xs, ys, x, y):
    """The static batch lengths of ``x`` and ``y`` broadcast together (None where unknown)."""
    out = []
    for k, (a, b) in enumerate(zip(xs, ys)):
        if a == 1 or a == b:
            out.append(b)
        elif b == 1:
            out.append(a)
        elif a is None or b is None:
            out.append(a if b is None else b)   # the known one, unless it is 1 (above)
        else:
            raise ValueError("matmul: the batch dimensions of %s (static shape %s) and %s (static shape %s) "
                             "cannot be broadcast together (dim %d: %d vs %d)"
                             % (x, x.type.shape, y, y.type.shape, k, a, b))
    return out


def _not_aligned(xshape, yshape):
    nd = len(xshape)
    return ("matmul: shapes %s and %s not aligned: %s (dim %d) != %s (dim %d)"
            % (tuple(xshape), tuple(yshape), xshape[-1], nd - 1, yshape[-2], nd - 2))


class BatchedMatMul(DelegatedCOp, Op):
    """``x @ y`` for ``x`` of shape ``(batch..., M, K)`` and ``y`` of shape ``(batch..., K, N)``:
    the same number (>= 3) of dimensions and the same dtype; the batch axes broadcast as NumPy's."""

    c_impl = "ffigraph.tensor.products_c"
    __props__ = ()

    def make_node(self, x, y):
        x, y = as_tensor_variable(x), as_tensor_variable(y)
        if x.ndim < 3 or y.ndim != x.ndim:
            raise TypeError("BatchedMatMul: needs two operands of the same number (>= 3) of dimensions; got "
                            "%s (%d-d) and %s (%d-d)" % (x, x.ndim, y, y.ndim))
        if x.dtype != y.dtype:
            raise TypeError("BatchedMatMul: the operands must have one dtype, got %s and %s (matmul casts them)"
                            % (x.dtype, y.dtype))
        xs, ys = x.type.shape, y.type.shape
        if xs[-1] is not None and ys[-2] is not None and xs[-1] != ys[-2]:
            raise ValueError(_not_aligned(xs, ys))
        batch = _broadcast_batch(xs[:-2], ys[:-2], x, y)
        return Apply(self, [x, y], [TensorType(x.dtype, tuple(batch) + (xs[-2], ys[-1]))()])

    def perform(self, node, inputs, output_storage):
        x, y = inputs
        if x.shape[-1] != y.shape[-2]:
            raise ValueError(_not_aligned(x.shape, y.shape))
        for k, (a, b) in enumerate(zip(x.shape[:-2], y.shape[:-2])):
            if a != b and a != 1 and b != 1:
                raise ValueError("matmul: the batch dimensions of shapes %s and %s cannot be broadcast together "
                                 "(dim %d: %d vs %d)" % (x.shape, y.shape, k, a, b))
        out = np.matmul(x, y)
        output_storage[0][0] = np.asarray(out, dtype=node.outputs[0].type.numpy_dtype)

    def infer_shape(self, fgraph, node, input_shapes):
        sx, sy = input_shapes
        x, y = node.inputs
        batch = []
        for k in range(x.ndim - 2):
            if x.type.shape[k] == 1:
                batch.append(sy[k])
            elif y.type.shape[k] == 1 or x.type.shape[k] is not None:
                batch.append(sx[k])
            else:   # x's length unless it is 1 (then y's): right for every pair that broadcasts
                batch.append(switch(eq(sx[k], 1), sy[k], sx[k]))
        return [tuple(batch) + (sx[-2], sy[-1])]

    def L_op(self, inputs, outputs, output_grads):
        from ffigraph.tensor.sum_to_shape import sum_to_shape

        x, y = inputs
        gz = output_grads[0]
        if np.dtype(x.dtype).kind == "c":
            raise NotImplementedError("gradients of complex values are not implemented (matmul)")
        # d(x @ y) = dx @ y + x @ dy, summed back over the batch axes an operand was broadcast along
        gx = self(gz, _swap_last(y))
        gy = self(_swap_last(x), gz)
        return [sum_to_shape(gx, [shape_i(x, k) for k in range(x.ndim)]),
                sum_to_shape(gy, [shape_i(y, k) for k in range(y.ndim)])]

    def __str__(self):
        return "BatchedMatMul"


_batched_matmul = BatchedMatMul()


def _swap_last(x):
    order = list(range(x.ndim))
    order[-2], order[-1] = order[-1], order[-2]
    return x.dimshuffle(*order)


def _pad_left(x, ndim):
    """``x`` with broadcastable axes added in front up to ``ndim`` dimensions."""
    return x if x.ndim >= ndim else x.dimshuffle(*(["x"] * (ndim - x.ndim) + list(range(x.ndim))))


def _drop(x, axes):
    """``x`` without the given axes (of length 1)."""
    axes = {a % x.ndim for a in axes}
    return x.dimshuffle(*[a for a in range(x.ndim) if a not in axes]) if axes else x


def _batched(x, y):
    """``BatchedMatMul`` of two operands of at least 2 dimensions, cast to their common dtype and
    padded to one number of dimensions (at least 3)."""
    dtype = upcast(x.dtype, y.dtype)
    nd = max(x.ndim, y.ndim, 3)
    return _batched_matmul(_pad_left(cast(x, dtype), nd), _pad_left(cast(y, dtype), nd))


# ------------------------------------------------------------------ matmul


def matmul(x1, x2, dtype=None):
    """NumPy's ``matmul`` (the ``@`` operator): the matrix product of the last two axes, broadcast
    over the leading (batch) axes. A 1-d operand is a row (``x1``) or a column (``x2``) whose added
    axis is removed from the result. Scalars are rejected. ``dtype`` casts the result."""
    x1, x2 = as_tensor_variable(x1), as_tensor_variable(x2)
    if x1.ndim == 0 or x2.ndim == 0:
        raise ValueError("matmul: an operand cannot be a scalar (0-d); got %s (%d-d) and %s (%d-d)"
                         % (x1, x1.ndim, x2, x2.ndim))
    if x1.ndim <= 2 and x2.ndim <= 2:
        out = _dot(x1, x2)   # NumPy's dot and matmul agree here
    else:
        a = x1.dimshuffle("x", 0) if x1.ndim == 1 else x1
        b = x2.dimshuffle(0, "x") if x2.ndim == 1 else x2
        out = _batched(a, b)
        out = _drop(out, ([-2] if x1.ndim == 1 else []) + ([-1] if x2.ndim == 1 else []))
    return out if dtype is None else cast(out, dtype)


# ------------------------------------------------------------------ tensordot


def _prod(sizes):
    """The product of lengths (ints and symbolic scalars); an int when they are all ints."""
    known = 1
    symbolic = []
    for s in sizes:
        if isinstance(s, (int, np.integer)):
            known *= int(s)
        else:
            symbolic.append(s)
    if not symbolic:
        return known
    out = constant(known, dtype="int64") if known != 1 else symbolic.pop(0)
    for s in symbolic:
        out = mul(out, s)
    return out


def _length(x, i):
    """Axis ``i``'s length of ``x``: an int when the type knows it, else symbolic."""
    size = x.type.shape[i]
    return int(size) if size is not None else shape_i(x, i)


def _transposed(x, order):
    return x if list(order) == list(range(x.ndim)) else x.dimshuffle(*order)


def _tensordot_axes(a, b, axes):
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        n = int(axes)
        if n < 0 or n > a.ndim or n > b.ndim:
            raise ValueError("tensordot: axes=%d is out of range for %s (%d-d) and %s (%d-d)"
                             % (n, a, a.ndim, b, b.ndim))
        return list(range(a.ndim - n, a.ndim)), list(range(n))
    try:
        a_axes, b_axes = axes
    except (TypeError, ValueError):
        raise ValueError("tensordot: axes must be an int or a pair of axis lists, got %r" % (axes,)) from None
    a_axes = [a_axes] if isinstance(a_axes, (int, np.integer)) else list(a_axes)
    b_axes = [b_axes] if isinstance(b_axes, (int, np.integer)) else list(b_axes)
    if len(a_axes) != len(b_axes):
        raise ValueError("tensordot: %d axes of a but %d of b (%r)" % (len(a_axes), len(b_axes), axes))
    a_axes = [normalize_axis(ax, a.ndim, "tensordot") for ax in a_axes]
    b_axes = [normalize_axis(ax, b.ndim, "tensordot") for ax in b_axes]
    if len(set(a_axes)) != len(a_axes) or len(set(b_axes)) != len(b_axes):
        raise ValueError("tensordot: repeated axes in %r" % (axes,))
    return a_axes, b_axes


def _check_summed(a, a_axes, b, b_axes, what):
    """``b``, checked (statically when both lengths are known, else at run time) to have the
    lengths of ``a``'s axes ``a_axes`` on its axes ``b_axes``."""
    want = [None] * b.ndim
    for i, j in zip(a_axes, b_axes):
        la, lb = a.type.shape[i], b.type.shape[j]
        if la is not None and lb is not None:
            if la != lb:
                raise ValueError("%s: shape mismatch: %s has length %d on axis %d but %s has length %d on axis %d "
                                 "(static shapes %s and %s)" % (what, a, la, i, b, lb, j, a.type.shape, b.type.shape))
        else:
            want[j] = shape_i(a, i)
    return specify_shape(b, want)


def tensordot(a, b, axes=2):
    """NumPy's ``tensordot``: the sum of products over ``axes`` (an int ``n``: the last ``n`` axes of
    ``a`` with the first ``n`` of ``b``; or a pair of axis lists). The result has ``a``'s other axes
    then ``b``'s."""
    return _tensordot(a, b, axes, "tensordot")


def _tensordot(a, b, axes, what):
    """``tensordot`` whose messages name ``what`` (``dot`` builds its N-d products here)."""
    a, b = as_tensor_variable(a), as_tensor_variable(b)
    a_axes, b_axes = _tensordot_axes(a, b, axes)
    b = _check_summed(a, a_axes, b, b_axes, what)
    a_free = [i for i in range(a.ndim) if i not in a_axes]
    b_free = [j for j in range(b.ndim) if j not in b_axes]
    a_sizes = [_length(a, i) for i in a_free]
    b_sizes = [_length(b, j) for j in b_free]
    k = _prod([_length(a, i) for i in a_axes])
    # one matrix product: a as (free, summed) times b as (summed, free); the Reshape copies an
    # operand that cannot be viewed so, and Dot's C hands the matrices to BLAS gemm
    am = reshape(_transposed(a, a_free + a_axes), [_prod(a_sizes), k], ndim=2)
    bm = reshape(_transposed(b, b_axes + b_free), [k, _prod(b_sizes)], ndim=2)
    out = _dot(am, bm)
    sizes = a_sizes + b_sizes
    out = reshape(out, sizes, ndim=len(sizes))
    static = [s if isinstance(s, int) else None for s in sizes]
    if any(s is not None for s in static) and any(s is None for s in out.type.shape):
        # lengths the operands' types know stay known (a reshape to a symbolic shape forgets them)
        out = specify_shape(out, static)
    return out


# ------------------------------------------------------------------ batched_dot


def batched_dot(a, b):
    """PyTensor's ``batched_dot``: ``batched_dot(a, b)[i] = dot(a[i], b[i])`` over the first axis.

    A 1-d operand multiplies elementwise (a batch of scalars); 2-d and 3-d operands give
    ``(B, M, K) x (B, K, N) -> (B, M, N)``, ``(B, M, K) x (B, K) -> (B, M)``,
    ``(B, K) x (B, K, N) -> (B, N)`` and ``(B, K) x (B, K) -> (B,)``; more dimensions follow
    ``dot``'s (NumPy's) rule for ``a[i]`` and ``b[i]``: ``a``'s last axis with ``b``'s
    second-to-last."""
    a, b = as_tensor_variable(a), as_tensor_variable(b)
    if a.ndim == 0:
        raise TypeError("batched_dot: a (%s) must have at least one (batch) axis" % a)
    if b.ndim == 0:
        raise TypeError("batched_dot: b (%s) must have at least one (batch) axis" % b)
    if a.ndim == 1:
        return a.dimshuffle(0, *["x"] * (b.ndim - 1)) * b
    if b.ndim == 1:
        return a * b.dimshuffle(0, *["x"] * (a.ndim - 1))
    if a.ndim <= 3 and b.ndim <= 3:
        x = a.dimshuffle(0, "x", 1) if a.ndim == 2 else a
        y = b.dimshuffle(0, 1, "x") if b.ndim == 2 else b
        out = _batched(x, y)
        return _drop(out, ([1] if a.ndim == 2 else []) + ([2] if b.ndim == 2 else []))
    # a[i] is (A..., K), b[i] is (K,) or (L..., K, N): a as (B, prod A, K), b as (B, K, prod L * N)
    kb = b.ndim - 2 if b.ndim > 2 else 1
    a_sizes = [shape_i(a, i) for i in range(1, a.ndim - 1)]
    b_rest = [j for j in range(1, b.ndim) if j != kb]
    b_sizes = [shape_i(b, j) for j in b_rest]
    nb = shape_i(a, 0)
    x = reshape(a, [nb, _prod(a_sizes), shape_i(a, a.ndim - 1)], ndim=3)
    y = reshape(b.dimshuffle(0, kb, *b_rest), [shape_i(b, 0), shape_i(b, kb), _prod(b_sizes)], ndim=3)
    out = _batched(x, y)
    return reshape(out, [shape_i(out, 0)] + a_sizes + b_sizes, ndim=1 + len(a_sizes) + len(b_sizes))


# ------------------------------------------------------------------ kron


def kron(a, b):
    """NumPy's ``kron``: the Kronecker product, with the operand of fewer dimensions padded with
    leading axes of length 1; block ``i`` of the result is ``a[i] * b``."""
    a, b = as_tensor_variable(a), as_tensor_variable(b)
    nd = max(a.ndim, b.ndim)
    if nd == 0:
        return a * b
    a, b = _pad_left(a, nd), _pad_left(b, nd)
    # a's axis k at 2k, b's at 2k + 1: the product's axes pair up, then merge pairwise
    pa, pb = [], []
    for k in range(nd):
        pa += [k, "x"]
        pb += ["x", k]
    prod = a.dimshuffle(*pa) * b.dimshuffle(*pb)
    return reshape(prod, [mul(shape_i(a, k), shape_i(b, k)) for k in range(nd)], ndim=nd)


# ------------------------------------------------------------------ einsum

EINSUM_SUBSET = ("einsum supports explicit ('ij,jk->ik') or implicit ('ij,jk') subscripts of letters, for any "
                 "number of operands, contracted pairwise from left to right: a letter repeated within one operand "
                 "takes that operand's diagonal ('ii->i', 'ii->'), a letter in no later operand and not in the "
                 "output is summed ('ij->'), letters shared with a later operand or the output are kept "
                 "(batch axes: 'bij,bjk->bik'), and the result is transposed to the output's order ('ij->ji'). "
                 "Ellipses ('...') are not supported")


def _parse_einsum(subscripts, operands):
    if not isinstance(subscripts, str):
        raise TypeError("einsum: subscripts must be a str, got %r (%s)" % (subscripts, EINSUM_SUBSET))
    spec = subscripts.replace(" ", "")
    if "." in spec:
        raise NotImplementedError("einsum(%r): %s" % (subscripts, EINSUM_SUBSET))
    if spec.count("->") > 1:
        raise ValueError("einsum(%r): more than one '->'" % subscripts)
    lhs, arrow, rhs = spec.partition("->")
    terms = lhs.split(",")
    for t in terms + [rhs]:
        if any(c not in string.ascii_letters for c in t):
            raise ValueError("einsum(%r): subscripts are letters; %r has others (%s)"
                             % (subscripts, t, EINSUM_SUBSET))
    if len(terms) != len(operands):
        raise ValueError("einsum(%r): %d terms but %d operands" % (subscripts, len(terms), len(operands)))
    for t, x in zip(terms, operands):
        if len(t) != x.ndim:
            raise ValueError("einsum(%r): term %r has %d letters but its operand %s has %d dimensions"
                             % (subscripts, t, len(t), x, x.ndim))
    letters = "".join(terms)
    if not arrow:   # NumPy's implicit output: the letters seen once, in alphabetical order
        rhs = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    if len(set(rhs)) != len(rhs) or any(c not in letters for c in rhs):
        raise ValueError("einsum(%r): the output %r repeats a letter or has one of no operand" % (subscripts, rhs))
    return terms, rhs


def _diagonals(x, term, what):
    """``x`` with each letter repeated in ``term`` replaced by the diagonal over its axes (moved
    last, as ``diagonal`` does); the new term."""
    term = list(term)
    while len(set(term)) != len(term):
        c = next(c for c in term if term.count(c) > 1)
        i = term.index(c)
        j = term.index(c, i + 1)
        x = _check_summed(x, [i], x, [j], what)   # a square block, as NumPy requires
        x = diagonal(x, 0, i, j)
        term = [t for k, t in enumerate(term) if k not in (i, j)] + [c]
    return x, term


def _sum_letters(x, term, keep):
    """``x`` summed over the axes whose letters are not in ``keep``."""
    axes = [k for k, c in enumerate(term) if c not in keep]
    if not axes:
        return x, term
    if x.dtype == "bool":   # NumPy sums bools in bool: a logical or (a sum would give int64)
        return x.any(axis=axes), [c for c in term if c in keep]
    # in x's dtype, as NumPy's einsum sums (a sum's default would widen small integers)
    return x.sum(axis=axes, dtype=x.dtype), [c for c in term if c in keep]


def _contract(x, xt, y, yt, keep, what):
    """The product of two operands with distinct letters each, summed over the shared letters not
    in ``keep``; the letters of the result."""
    shared = [c for c in xt if c in yt]
    batch = [c for c in shared if c in keep]
    summed = [c for c in shared if c not in keep]
    xf = [c for c in xt if c not in yt]
    yf = [c for c in yt if c not in xt]
    if not batch:
        out = tensordot(x, y, ([xt.index(c) for c in summed], [yt.index(c) for c in summed]))
        return out, xf + yf
    y = _check_summed(x, [xt.index(c) for c in summed], y, [yt.index(c) for c in summed], what)
    # x as (batch..., free, summed) and y as (batch..., summed, free): one BatchedMatMul
    nb = len(batch)
    xs = [shape_i(x, xt.index(c)) for c in xf]
    ys = [shape_i(y, yt.index(c)) for c in yf]
    k = _prod([shape_i(x, xt.index(c)) for c in summed])
    xb = [shape_i(x, xt.index(c)) for c in batch]
    yb = [shape_i(y, yt.index(c)) for c in batch]
    xm = reshape(x.dimshuffle(*[xt.index(c) for c in batch + xf + summed]), xb + [_prod(xs), k], ndim=nb + 2)
    ym = reshape(y.dimshuffle(*[yt.index(c) for c in batch + summed + yf]), yb + [k, _prod(ys)], ndim=nb + 2)
    out = _batched_matmul(*[cast(v, upcast(x.dtype, y.dtype)) for v in (xm, ym)])
    sizes = [shape_i(out, i) for i in range(nb)] + xs + ys
    return reshape(out, sizes, ndim=len(sizes)), batch + xf + yf


def einsum(subscripts, *operands, optimize=None):
    """NumPy's ``einsum`` for the subset in ``EINSUM_SUBSET`` (a NotImplementedError says it for
    anything else), lowered to diagonals, sums, transposes and tensordot / batched products.
    ``optimize`` (PyTensor's contraction-path choice) is accepted and ignored: the operands are
    contracted left to right."""
    operands = [as_tensor_variable(x) for x in operands]
    if not operands:
        raise ValueError("einsum(%r): no operands" % (subscripts,))
    terms, rhs = _parse_einsum(subscripts, operands)
    what = "einsum(%r)" % subscripts
    parts = [_diagonals(x, t, what) for x, t in zip(operands, terms)]
    x, xt = parts[0]
    for n in range(1, len(parts) + 1):
        # letters still needed: the output's and those of the operands not yet multiplied in
        keep = set(rhs).union(*[set(t) for _, t in parts[n:]])
        if n == len(parts):
            x, xt = _sum_letters(x, xt, keep)
            break
        y, yt = parts[n]
        x, xt = _sum_letters(x, xt, keep | set(yt))
        y, yt = _sum_letters(y, yt, keep | set(xt))
        x, xt = _contract(x, xt, y, yt, keep, what)
    order = [xt.index(c) for c in rhs]
    return x.dimshuffle(*order) if order != list(range(len(xt))) else x


__all__ = ["matmul", "tensordot", "batched_dot", "kron", "einsum", "BatchedMatMul"]

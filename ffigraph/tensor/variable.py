"""Tensor variables and constants, with numpy-like Python operators and methods."""
from __future__ import annotations

import numpy as np

from ffigraph.graph.basic import Constant, Variable, debug_print


# the elementwise comparisons whose results have no truth value in Python (Theano's "_is_nonzero")
_COMPARISONS = frozenset(("lt", "le", "gt", "ge", "eq", "neq"))


class _TensorOperators:
    """Operators and methods shared by symbolic tensors and tensor constants.

    ``==`` stays identity (variables are dict keys everywhere); use
    ``ffigraph.tensor.eq``/``neq`` for elementwise equality, as in Theano.
    """

    # arithmetic
    def __add__(self, other):
        return _m().add(self, other)

    def __radd__(self, other):
        return _m().add(other, self)

    def __sub__(self, other):
        return _m().sub(self, other)

    def __rsub__(self, other):
        return _m().sub(other, self)

    def __mul__(self, other):
        return _m().mul(self, other)

    def __rmul__(self, other):
        return _m().mul(other, self)

    def __truediv__(self, other):
        return _m().true_div(self, other)

    def __rtruediv__(self, other):
        return _m().true_div(other, self)

    def __floordiv__(self, other):
        return _m().int_div(self, other)

    def __rfloordiv__(self, other):
        return _m().int_div(other, self)

    def __mod__(self, other):
        return _m().mod(self, other)

    def __rmod__(self, other):
        return _m().mod(other, self)

    def __pow__(self, other):
        return _m().pow(self, other)

    def __rpow__(self, other):
        return _m().pow(other, self)

    def __neg__(self):
        return _m().neg(self)

    def __abs__(self):
        return _m().abs(self)

    def __invert__(self):
        return _m().invert(self)

    # comparisons and logic
    def __lt__(self, other):
        return _m().lt(self, other)

    def __le__(self, other):
        return _m().le(self, other)

    def __gt__(self, other):
        return _m().gt(self, other)

    def __ge__(self, other):
        return _m().ge(self, other)

    def __and__(self, other):
        return _m().and_(self, other)

    def __rand__(self, other):
        return _m().and_(other, self)

    def __or__(self, other):
        return _m().or_(self, other)

    def __ror__(self, other):
        return _m().or_(other, self)

    def __xor__(self, other):
        return _m().xor(self, other)

    def __rxor__(self, other):
        return _m().xor(other, self)

    __hash__ = Variable.__hash__

    # numpy's binary operators defer to ours (``np.ones(3) + x`` is ``x.__radd__``, a variable, not an
    # object array of variables), as Theano's and PyTensor's variables ask with the same priority
    __array_priority__ = 1000

    def __bool__(self):
        """True, as in Theano (``if W:`` tests an optional argument for None), except for the result
        of a comparison, whose truth is only known at run time (``a < b < c`` would otherwise
        silently mean ``b < c``)."""
        owner = self.owner
        if owner is not None and getattr(getattr(owner.op, "scalar_op", None), "name", None) in _COMPARISONS:
            raise TypeError("the truth value of a symbolic comparison (%s) is only known when the graph runs: "
                            "use ffigraph.tensor.switch, or & and | instead of 'and' and 'or', or compile a "
                            "function to get a value" % (self,))
        return True

    def __iter__(self):
        """The entries of a vector whose length is known statically (``n, c, h, w = x.shape``)."""
        try:
            length = _b().get_vector_length(self)
        except ValueError as err:
            raise TypeError("a symbolic tensor can be iterated only when it is a vector of a length known "
                            "before it runs (%s); index it instead" % (err,)) from None
        return iter([self[i] for i in range(length)])

    def __len__(self):
        raise TypeError("a symbolic tensor has no len(); use x.shape[0]")

    # attributes
    @property
    def ndim(self):
        return self.type.ndim

    @property
    def dtype(self):
        return self.type.dtype

    @property
    def broadcastable(self):
        return self.type.broadcastable

    @property
    def shape(self):
        return _shape().shape(self)

    @property
    def size(self):
        return _m().prod(self.shape)

    @property
    def T(self):
        return _b().transpose(self)

    # methods
    def __getitem__(self, index):
        from ffigraph.tensor.subtensor import getitem

        return getitem(self, index)

    def transpose(self, *axes):
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        return _b().transpose(self, axes or None)

    def dimshuffle(self, *pattern):
        if len(pattern) == 1 and isinstance(pattern[0], (tuple, list)):
            pattern = pattern[0]
        return _b().dimshuffle(self, pattern)

    def reshape(self, *shape, ndim=None):
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = shape[0]
        return _shape().reshape(self, shape, ndim=ndim)

    def flatten(self, ndim=1):
        return _shape().flatten(self, ndim)

    def astype(self, dtype):
        return _b().cast(self, dtype)

    @property
    def real(self):
        """The real part (``ffigraph.tensor.real``)."""
        return _m().real(self)

    @property
    def imag(self):
        """The imaginary part (``ffigraph.tensor.imag``)."""
        return _m().imag(self)

    def sum(self, axis=None, dtype=None, keepdims=False, acc_dtype=None):
        return _m().sum(self, axis=axis, dtype=dtype, keepdims=keepdims, acc_dtype=acc_dtype)

    def prod(self, axis=None, dtype=None, keepdims=False, acc_dtype=None):
        return _m().prod(self, axis=axis, dtype=dtype, keepdims=keepdims, acc_dtype=acc_dtype)

    def max(self, axis=None, keepdims=False):
        return _m().max(self, axis=axis, keepdims=keepdims)

    def min(self, axis=None, keepdims=False):
        return _m().min(self, axis=axis, keepdims=keepdims)

    def mean(self, axis=None, dtype=None, keepdims=False, acc_dtype=None):
        return _m().mean(self, axis=axis, dtype=dtype, keepdims=keepdims, acc_dtype=acc_dtype)

    def argmax(self, axis=None, keepdims=False):
        return _m().argmax(self, axis=axis, keepdims=keepdims)

    def argmin(self, axis=None, keepdims=False):
        return _m().argmin(self, axis=axis, keepdims=keepdims)

    def all(self, axis=None, keepdims=False):
        return _m().all(self, axis=axis, keepdims=keepdims)

    def any(self, axis=None, keepdims=False):
        return _m().any(self, axis=axis, keepdims=keepdims)

    def dot(self, right):
        return _m().dot(self, right)

    def __matmul__(self, other):
        from ffigraph.tensor.products import matmul   # NumPy's @: batch axes broadcast, 1-d promoted

        return matmul(self, other)

    def __rmatmul__(self, other):
        from ffigraph.tensor.products import matmul

        return matmul(other, self)

    def clip(self, a_min, a_max):
        return _m().clip(self, a_min, a_max)

    # the methods of PyTensor's TensorVariable over the functions of ffigraph.tensor (issue 27)
    def var(self, axis=None, ddof=0, keepdims=False, corrected=False):
        return _t().var(self, axis=axis, ddof=ddof, keepdims=keepdims, corrected=corrected)

    def std(self, axis=None, ddof=0, keepdims=False, corrected=False):
        return _t().std(self, axis=axis, ddof=ddof, keepdims=keepdims, corrected=corrected)

    def ptp(self, axis=None):
        return _t().ptp(self, axis=axis)

    def cumsum(self, axis=None):
        return _t().cumsum(self, axis=axis)

    def cumprod(self, axis=None):
        return _t().cumprod(self, axis=axis)

    def sort(self, axis=-1, kind="quicksort", order=None):
        return _t().sort(self, axis=axis, kind=kind, order=order)

    def argsort(self, axis=-1, kind="quicksort", order=None):
        return _t().argsort(self, axis=axis, kind=kind, order=order)

    def searchsorted(self, v, side="left", sorter=None):
        return _t().searchsorted(self, v, side=side, sorter=sorter)

    def squeeze(self, axis=None):
        return _t().squeeze(self, axis=axis)

    def swapaxes(self, axis1, axis2):
        return _t().swapaxes(self, axis1, axis2)

    def repeat(self, repeats, axis=None):
        return _t().repeat(self, repeats, axis=axis)

    def take(self, indices, axis=None, mode="raise"):
        return _t().take(self, indices, axis=axis, mode=mode)

    def nonzero(self, return_matrix=False):
        """The indices of the non-zero elements: a tuple of vectors, one per axis, or (with
        ``return_matrix``) one matrix of them, a row per axis, as PyTensor's."""
        return _t().nonzero(self, return_matrix=return_matrix)

    def nonzero_values(self):
        return self.flatten()[_t().flatnonzero(self)]

    def diagonal(self, offset=0, axis1=0, axis2=1):
        return _t().diagonal(self, offset=offset, axis1=axis1, axis2=axis2)

    def choose(self, choices, mode="raise"):
        """numpy's ``a.choose(choices, mode)``: this integer array picks among ``choices``."""
        return _t().choose(self, choices, mode=mode)

    def trace(self):
        return _t().trace(self)

    def round(self, mode=None):
        """Round to integral values: ``mode`` "half_to_even" (numpy's, the default) or
        "half_away_from_zero"."""
        if mode in (None, "half_to_even"):
            return _t().round_half_to_even(self)
        if mode == "half_away_from_zero":
            return _t().round_half_away_from_zero(self)
        raise ValueError("round: mode must be 'half_to_even' or 'half_away_from_zero', got %r" % (mode,))

    def conj(self):
        return _t().conj(self)

    conjugate = conj

    def zeros_like(self, dtype=None):
        """Zeros of this shape (and of ``dtype``, default this dtype)."""
        return _t().zeros_like(self, dtype=dtype)

    def ones_like(self, dtype=None):
        return _t().ones_like(self, dtype=dtype)

    def fill(self, value):
        """``value`` broadcast to this shape (PyTensor's ``fill(self, value)``)."""
        return _t().fill(self, value)

    def norm(self, L, axis=None, keepdims=False):
        """``(sum |x|^L) ** (1 / L)`` over ``axis`` (None: every element), as PyTensor's
        ``TensorVariable.norm``: L must be a positive finite number."""
        if isinstance(L, bool) or not isinstance(L, (int, float, np.integer, np.floating)) or not 0 < L < np.inf:
            raise NotImplementedError("norm: L=%r; only a positive finite L is implemented (as in PyTensor)" % (L,))
        t = _t()
        total = t.sum(t.pow(abs(self), L), axis=axis, keepdims=keepdims)
        return t.pow(total, 1.0 / L)

    def dprint(self, **kwargs):
        """``ffigraph.printing.debugprint(self, **kwargs)``."""
        return debug_print(self, **kwargs)

    def copy(self, name=None):
        from ffigraph.tensor.generic_ops import deep_copy_op

        out = deep_copy_op(self)
        out.name = name
        return out


class TensorVariable(_TensorOperators, Variable):
    """A symbolic n-d array."""


class TensorConstant(_TensorOperators, Constant):
    """A tensor whose value is known when the graph is built.

    ``weak`` marks constants made from Python scalars: like numpy 2 (NEP 50),
    they take the dtype of the tensors they are combined with when their kind
    (bool < int < float < complex) allows.
    """

    def __init__(self, type, data, name=None, weak=False):
        super().__init__(type, data, name)
        self.weak = weak

    def clone(self, name=None):
        cp = TensorConstant(self.type, self.data, name if name is not None else self.name, self.weak)
        cp.tag.__dict__.update(self.tag.__dict__)
        return cp

    def __str__(self):
        if self.name is not None:
            return self.name
        if self.data.size <= 8:
            text = np.array2string(self.data, separator=",")
            return text if self.data.ndim else str(self.data[()])
        return "TensorConstant{%s, shape=%s}" % (self.dtype, self.data.shape)


def _m():
    from ffigraph.tensor import math

    return math


def _b():
    from ffigraph.tensor import basic

    return basic


def _t():
    import ffigraph.tensor

    return ffigraph.tensor


def _shape():
    from ffigraph.tensor import shapes

    return shapes

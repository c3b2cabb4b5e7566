"""Canonicalizing rewrites: algebraic identities that remove work without changing any value.

Each rewrite here gives exactly the value the original graph computes, for
every input including NaN and +-inf, in the same dtype, ndim and static
shape. The one accepted difference is the sign of a zero: ``x + 0`` with
``x = -0.0`` gives ``+0.0`` and the rewrite gives ``-0.0`` (PyTensor makes the
same trade; ``-0.0 == 0.0``). Where an identity does not hold for every value
it is restricted or left out, and the reason is written beside it:

- an identity with a constant fires only when the constant has size 1 (a
  bigger constant would change the broadcast shape) and the other operand
  already has the output's dtype and ndim (otherwise the op also casts or
  broadcasts);
- ``x * 1`` and ``x / 1`` are not rewritten for complex values: numpy's complex
  product and quotient give NaN for ``(1 + inf*j) * (1 + 0j)``;
- ``x - x`` becomes zeros only for integers: for floats ``inf - inf`` and
  ``nan - nan`` are NaN.

A rewrite may drop a run-time error of the original graph (``Reshape`` of a
``Reshape`` does not check the inner, invalid, shape); values are never
changed.
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.basic import Constant
from ffigraph.graph.rewriting import node_rewriter
from ffigraph.rewriting.groups import register_canonicalize, register_specialize, register_stabilize
from ffigraph.scalar.basic import Cast
from ffigraph.tensor.basic import alloc, constant
from ffigraph.tensor.elemwise import DimShuffle, Elemwise
from ffigraph.tensor.shapes import Reshape, shape_i

# ------------------------------------------------------------------ helpers


def elemwise_name(node):
    """The scalar op's name when ``node`` is an Elemwise node, else None."""
    if node is not None and isinstance(node.op, Elemwise):
        return node.op.scalar_op.name
    return None


def owner_name(var):
    """The scalar op's name of the Elemwise computing ``var``, else None."""
    return elemwise_name(var.owner)


def scalar_constant(var):
    """The value of ``var`` when it is a size-1 constant (looking through DimShuffles of one), else None.

    A DimShuffle of a size-1 constant only adds or drops length-1 axes, so the
    value is the same; the caller checks ndim and dtype itself.
    """
    while var.owner is not None and isinstance(var.owner.op, DimShuffle):
        var = var.owner.inputs[0]
    if isinstance(var, Constant) and getattr(var.data, "size", 0) == 1:
        return var.data.reshape(())[()]
    return None


def is_constant_equal(var, value):
    """True when ``var`` is a size-1 constant equal to ``value`` (NaN equals nothing)."""
    c = scalar_constant(var)
    if c is None:
        return False
    with np.errstate(all="ignore"):
        return bool(c == value)


def same_type(out, var):
    """``var`` may stand for ``out``: same dtype and ndim, compatible static shape."""
    return (getattr(var.type, "dtype", None) == out.type.dtype and var.type.ndim == out.type.ndim
            and out.type.convert_variable(var) is not None)


def _kind(var):
    return np.dtype(var.type.dtype).kind


# ------------------------------------------------------------------ x op const -> x


def _identity_operand(node, value, positions, kinds):
    """The operand at one of ``positions`` whose partner is a size-1 constant equal to ``value``.

    Returns None unless that operand already has the output's dtype, ndim and
    static shape, and its dtype kind is in ``kinds``.
    """
    out = node.outputs[0]
    if _kind(out) not in kinds:
        return None
    for keep in positions:
        other = node.inputs[1 - keep]
        x = node.inputs[keep]
        if is_constant_equal(other, value) and same_type(out, x):
            return x
    return None


@node_rewriter([Elemwise], name="local_mul_one")
def local_mul_one(fgraph, node):
    """x * 1 -> x and 1 * x -> x (exact for every real value, NaN and inf included; not complex)."""
    if elemwise_name(node) != "mul":
        return None
    x = _identity_operand(node, 1, (0, 1), "biuf")
    return [x] if x is not None else None


@node_rewriter([Elemwise], name="local_add_zero")
def local_add_zero(fgraph, node):
    """x + 0 -> x and 0 + x -> x.

    Exact except for the sign of zero: (-0.0) + 0.0 is +0.0 while the rewrite
    keeps -0.0 (accepted, as in PyTensor; the two compare equal).
    """
    if elemwise_name(node) != "add":
        return None
    x = _identity_operand(node, 0, (0, 1), "biufc")
    return [x] if x is not None else None


@node_rewriter([Elemwise], name="local_sub_zero")
def local_sub_zero(fgraph, node):
    """x - 0 -> x (0 - x is -x, not x, so only the right operand is looked at).

    Exact, -0.0 included, when the constant is +0.0; for a constant -0.0,
    (-0.0) - (-0.0) is +0.0 (the same accepted zero-sign difference as x + 0).
    """
    if elemwise_name(node) != "sub":
        return None
    x = _identity_operand(node, 0, (0,), "iufc")
    return [x] if x is not None else None


@node_rewriter([Elemwise], name="local_div_one")
def local_div_one(fgraph, node):
    """x / 1 -> x (true division keeps floats' dtype; an integer x is cast, so its dtype differs)."""
    if elemwise_name(node) != "true_div":
        return None
    x = _identity_operand(node, 1, (0,), "f")
    return [x] if x is not None else None


@node_rewriter([Elemwise], name="local_pow_one")
def local_pow_one(fgraph, node):
    """x ** 1 -> x (pow(x, 1) is x for every real x: NaN, inf and -0.0 included; not complex)."""
    if elemwise_name(node) != "pow":
        return None
    x = _identity_operand(node, 1, (0,), "iuf")
    return [x] if x is not None else None


@node_rewriter([Elemwise], name="local_pow_specialize")
def local_pow_specialize(fgraph, node):
    """x ** 2 -> sqr(x) and, for floats, x ** -1 -> 1 / x.

    Both are exact (the correctly rounded pow of those exponents is x*x and 1/x,
    NaN, inf and signed zeros included) and avoid libm's general ``pow``, which costs
    tens of nanoseconds an element: ``w ** 2`` in a weight penalty and the ``2 * w ** 1``
    of its gradient are common.
    """
    from ffigraph.tensor import math as tm

    if elemwise_name(node) != "pow":
        return None
    out, x, exponent = node.outputs[0], node.inputs[0], node.inputs[1]
    if not same_type(out, x) or _kind(x) not in "iuf":
        return None
    if is_constant_equal(exponent, 2):
        return [tm.sqr(x)]
    if _kind(x) == "f" and is_constant_equal(exponent, -1):
        return [tm.true_div(1, x)]
    return None


# ------------------------------------------------------------------ unary chains


@node_rewriter([Elemwise], name="local_neg_neg")
def local_neg_neg(fgraph, node):
    """-(-x) -> x (exact: negation only flips the sign bit; wraps back for integers)."""
    if elemwise_name(node) != "neg":
        return None
    inner = node.inputs[0]
    if owner_name(inner) != "neg":
        return None
    x = inner.owner.inputs[0]
    return [x] if same_type(node.outputs[0], x) else None


@node_rewriter([Elemwise], name="local_abs_abs")
def local_abs_abs(fgraph, node):
    """abs(abs(x)) -> abs(x)."""
    if elemwise_name(node) != "abs":
        return None
    inner = node.inputs[0]
    if owner_name(inner) != "abs":
        return None
    return [inner] if same_type(node.outputs[0], inner) else None


@node_rewriter([Elemwise], name="local_useless_cast")
def local_useless_cast(fgraph, node):
    """cast(x, x.dtype) -> x."""
    if not isinstance(getattr(node.op, "scalar_op", None), Cast):
        return None
    x = node.inputs[0]
    return [x] if same_type(node.outputs[0], x) else None


@node_rewriter([Elemwise], name="local_sub_self")
def local_sub_self(fgraph, node):
    """x - x -> zeros, for integer dtypes only.

    Floats are left alone on purpose: inf - inf and NaN - NaN are NaN, so
    zeros would change the result.
    """
    if elemwise_name(node) != "sub":
        return None
    a, b = node.inputs
    out = node.outputs[0]
    if a is not b or _kind(out) not in "iu" or not same_type(out, a):
        return None
    zeros = alloc(constant(np.zeros((), dtype=out.type.dtype)), *[shape_i(a, i) for i in range(a.ndim)])
    return [zeros] if same_type(out, zeros) else None


# ------------------------------------------------------------------ DimShuffle


@node_rewriter([DimShuffle], name="local_dimshuffle_dimshuffle")
def local_dimshuffle_dimshuffle(fgraph, node):
    """DimShuffle{outer}(DimShuffle{inner}(x)) -> DimShuffle{composed}(x).

    The composed DimShuffle drops every axis of x either one dropped, so it
    checks the same lengths (each must be 1) at run time.
    """
    inner = node.inputs[0]
    if inner.owner is None or not isinstance(inner.owner.op, DimShuffle):
        return None
    x = inner.owner.inputs[0]
    inner_order = inner.owner.op.new_order
    order = tuple("x" if a == "x" else inner_order[a] for a in node.op.new_order)
    if order == tuple(range(x.ndim)):
        new = x
    else:
        try:
            new = DimShuffle(x.ndim, order)(x)
        except ValueError:  # cannot happen for valid inner/outer nodes; keep the graph if it does
            return None
    return [new] if same_type(node.outputs[0], new) else None


@node_rewriter([DimShuffle], name="local_useless_dimshuffle")
def local_useless_dimshuffle(fgraph, node):
    """DimShuffle{0,1,...,n-1}(x) -> x."""
    x = node.inputs[0]
    if node.op.new_order != tuple(range(x.ndim)):
        return None
    return [x] if same_type(node.outputs[0], x) else None


# ------------------------------------------------------------------ Reshape


@node_rewriter([Reshape], name="local_reshape_reshape")
def local_reshape_reshape(fgraph, node):
    """Reshape(Reshape(x, s1), s2) -> Reshape(x, s2).

    Same values whenever the original runs; an inner shape that does not fit
    x (which would raise) is no longer checked, as in PyTensor.
    """
    inner = node.inputs[0]
    if inner.owner is None or not isinstance(inner.owner.op, Reshape):
        return None
    new = node.op(inner.owner.inputs[0], node.inputs[1])
    return [new] if same_type(node.outputs[0], new) else None


def _resolved_constant_shape(shp, x_static):
    """The constant target shape with a -1 resolved against x's fully known static shape, or None."""
    if not isinstance(shp, Constant):
        return None
    entries = [int(s) for s in np.asarray(shp.data).reshape(-1)]
    if entries.count(-1) > 1 or any(s < -1 for s in entries):
        return None
    if -1 in entries:
        known = int(np.prod([s for s in entries if s != -1], dtype=np.int64))
        total = int(np.prod(x_static, dtype=np.int64))
        if known == 0 or total % known:
            return None  # numpy raises here: leave the Reshape to say so
        entries[entries.index(-1)] = total // known
    return tuple(entries)


@node_rewriter([Reshape], name="local_useless_reshape")
def local_useless_reshape(fgraph, node):
    """Reshape(x, s) -> x when s is x's own shape.

    Fires when x's static shape is fully known and s is a constant equal to
    it (a -1 resolved), when s is ``Shape(x)``, and for a 1-d x reshaped to [-1].
    """
    from ffigraph.tensor.generic_ops import Shape

    x, shp = node.inputs
    out = node.outputs[0]
    if x.ndim != out.ndim:
        return None
    useless = False
    if shp.owner is not None and isinstance(shp.owner.op, Shape) and shp.owner.inputs[0] is x:
        useless = True
    elif None not in x.type.shape:
        useless = _resolved_constant_shape(shp, x.type.shape) == tuple(x.type.shape)
    elif x.ndim == 1 and isinstance(shp, Constant) and [int(s) for s in np.asarray(shp.data).reshape(-1)] == [-1]:
        useless = True
    if useless and same_type(out, x):
        return [x]
    return None


# ------------------------------------------------------------------ registration

CANONICALIZE_REWRITES = (
    local_mul_one, local_add_zero, local_sub_zero, local_div_one, local_pow_one, local_neg_neg,
    local_abs_abs, local_useless_cast, local_sub_self, local_dimshuffle_dimshuffle,
    local_useless_dimshuffle, local_reshape_reshape, local_useless_reshape,
)

for _rw in CANONICALIZE_REWRITES:
    register_canonicalize(_rw)
# The stabilizing rewrites produce -(-x) in places (-log(sigmoid(x)) -> -(-softplus(-x))).
register_stabilize(local_neg_neg)
register_specialize(local_pow_specialize)
del _rw

"""Stabilizing rewrites: the same mathematical value in a form that does not overflow or cancel.

  sigmoid written out   -> sigmoid(x)            (1/(1+exp(-x)), exp(x)/(1+exp(x)), (1+exp(-x))**-1, ...)
  log(sigmoid(x))       -> -softplus(-x)
  log(1 - sigmoid(x))   -> -softplus(x)
  1 - sigmoid(x)        -> sigmoid(-x)
  log(1 + x), log(x + 1) -> log1p(x)
  log(1 + exp(x)), log1p(exp(x)) -> softplus(x)
  exp(x) - 1            -> expm1(x)
  log(exp(x))           -> x                     (float x)

The sigmoid and softplus forms are ``ffigraph/tensor/stable_forms.py``'s matchers, the very
ones ``grad`` applies before differentiating: ``sigmoid(x)`` above is the op or any
written-out form, so ``log(1 - 1/(1 + exp(-x)))`` becomes ``-softplus(x)`` too. The
logistic cross-entropy ``-y*log(p) - (1-y)*log(1-p)`` with ``p = sigmoid(z)``, however
written, stays finite for any finite z. The results can differ from
the original graph's in the last bits (they are closer to the exact value),
and where the original overflowed or underflowed (log(0) = -inf, inf - inf)
they are the finite exact value. NaN stays NaN and +-inf map as the exact
functions do.

Dtypes: every replacement has the replaced output's dtype. Integer inputs of
the float-valued functions (sigmoid, exp) are cast to that float dtype first,
as the functions themselves do, so that ``-x`` is taken in floats (an int8
-128 negated would wrap). ``log(1 + x)`` and ``exp(x) - 1`` fire only when the
``+``/``-`` already works in the output's float dtype (for integers 1 + x
could wrap, and a float64 constant beside a float32 x would make the original
compute in float64). The sigmoid and softplus forms cast their argument to the
output's dtype, so ``1/(1 + exp(-x))`` with float32 x and float64 constants
becomes ``sigmoid(float64(x))``.
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.rewriting import node_rewriter
from ffigraph.rewriting.canonicalize import is_constant_equal, owner_name, elemwise_name, same_type
from ffigraph.rewriting.groups import register_stabilize
from ffigraph.tensor import stable_forms
from ffigraph.tensor.basic import cast
from ffigraph.tensor.elemwise import Elemwise
from ffigraph.tensor.math import ELEMWISE


def _float_input(fn_out):
    """The input of a float-valued unary op (sigmoid, exp), cast to the op's output dtype."""
    return cast(fn_out.owner.inputs[0], fn_out.type.dtype)


def _is_float(var):
    return np.dtype(var.type.dtype).kind == "f"


def _one_plus(var):
    """y when ``var`` is ``1 + y`` or ``y + 1`` (size-1 constant 1, computed in var's dtype), else None."""
    if owner_name(var) != "add":
        return None
    a, b = var.owner.inputs
    for c, y in ((a, b), (b, a)):
        if is_constant_equal(c, 1) and y.type.dtype == var.type.dtype and y.ndim == var.ndim:
            return y
    return None


def _result(out, new):
    """[new] when it may replace ``out`` (same dtype, ndim, compatible static shape), else None."""
    if new is None:
        return None
    if new.type.dtype != out.type.dtype:
        return None
    return [new] if same_type(out, new) else None


def _form_rewriter(name, form):
    """A node rewriter that replaces a node's output by ``form``'s stable replacement of it."""
    def rewrite(fgraph, node):
        new = form(node.outputs[0])
        return None if new is None else _result(node.outputs[0], new)
    rewrite.__doc__ = form.__doc__
    return node_rewriter([Elemwise], name=name)(rewrite)


local_sigmoid_written_out = _form_rewriter("local_sigmoid_written_out", stable_forms.written_sigmoid)
local_log_sigmoid = _form_rewriter("local_log_sigmoid", stable_forms.log_sigmoid)
local_log_one_minus_sigmoid = _form_rewriter("local_log_one_minus_sigmoid", stable_forms.log_one_minus_sigmoid)
local_one_minus_sigmoid = _form_rewriter("local_one_minus_sigmoid", stable_forms.one_minus_sigmoid)


@node_rewriter([Elemwise], name="local_log1p")
def local_log1p(fgraph, node):
    """log(1 + x) and log(x + 1) -> log1p(x), for float x (no precision lost for tiny x)."""
    if elemwise_name(node) != "log":
        return None
    y = _one_plus(node.inputs[0])
    if y is None or not _is_float(y) or y.type.dtype != node.outputs[0].type.dtype:
        return None
    return _result(node.outputs[0], ELEMWISE["log1p"](y))


local_log1p_exp = _form_rewriter("local_log1p_exp", stable_forms.softplus_form)


@node_rewriter([Elemwise], name="local_expm1")
def local_expm1(fgraph, node):
    """exp(x) - 1 -> expm1(x)  (no cancellation for tiny x)."""
    if elemwise_name(node) != "sub":
        return None
    e, c = node.inputs
    out = node.outputs[0]
    if owner_name(e) != "exp" or not is_constant_equal(c, 1) or e.type.dtype != out.type.dtype:
        return None
    return _result(out, ELEMWISE["expm1"](_float_input(e)))


@node_rewriter([Elemwise], name="local_log_exp")
def local_log_exp(fgraph, node):
    """log(exp(x)) -> x for float x (log(exp(800)) is inf, log(exp(-800)) is -inf; the value is x)."""
    if elemwise_name(node) != "log":
        return None
    e = node.inputs[0]
    if owner_name(e) != "exp":
        return None
    x = e.owner.inputs[0]
    if not _is_float(x) or x.type.dtype != node.outputs[0].type.dtype:
        return None
    return _result(node.outputs[0], x)


STABILIZE_REWRITES = (
    local_sigmoid_written_out, local_log_sigmoid, local_log_one_minus_sigmoid, local_one_minus_sigmoid, local_log1p,
    local_log1p_exp, local_expm1, local_log_exp,
)

for _rw in STABILIZE_REWRITES:
    register_stabilize(_rw)
del _rw

"""Sigmoid and softplus however they are written, and the numerically stable forms that replace them.

Users write the logistic function out: Theano's own tutorial has
``p_1 = 1 / (1 + T.exp(-T.dot(x, w) - b))`` and ``T.log(p_1)``, ``T.log(1 - p_1)``. Once ``|z|``
passes ~37 (float64) ``p_1`` rounds to exactly 0 or 1, the logs are -inf and their
gradients 0 * inf = NaN. The matchers here find those expressions and give stable
replacements::

  sigmoid(z), written out      1 / (1 + exp(-z)),  1 / (exp(-z) + 1),  (1 + exp(-z)) ** -1,
                               exp(z) / (1 + exp(z)),  exp(z) * (1 / (1 + exp(z))),
                               exp(z) * (1 + exp(z)) ** -1,  exp(z) * sigmoid(-z)
                                                                   -> sigmoid(z)
  1 - sigmoid(z)                                                     -> sigmoid(-z)
  log(sigmoid(z))                                                    -> -softplus(-z)
  log(1 - sigmoid(z)),  log1p(-sigmoid(z))                           -> -softplus(z)
  log(1 + exp(z)),  log(exp(z) + 1),  log1p(exp(z))                  -> softplus(z)

where ``sigmoid(z)`` is the op or any written-out form above, and the constant 1 is any size-1
constant equal to 1 (broadcast or not). The argument is negated with the obvious
simplifications, all exact in floating point: -(-a) = a, -(a - b) = b - a, -(-a - b) = a + b,
-(-a + b) = a - b; so ``1 / (1 + exp(-dot(x, w) - b))`` becomes ``sigmoid(dot(x, w) + b)``.
Two ``exp`` of the same expression (``exp(z) / (1 + exp(z))`` with the two ``exp`` built
separately) count as one.

``grad`` differentiates ``stabilize_graph(cost)`` (see ``ffigraph/tensor/gradient.py``) and the
stabilize rewrites (``ffigraph/rewriting/stabilize.py``) use the same matchers on the compiled
graph, so both the gradient and the forward values stay finite for any finite z.

Dtypes: a replacement has the replaced output's dtype, ndim and (compatible) static shape, or
the matcher declines. The argument is cast to that (float) dtype before it is negated, so a
negation a matcher adds cannot wrap (int8 -128; one the written graph has keeps its value), and
a float32 ``z`` under a float64 constant is computed in float64, as the original's last
operation was. The replacement's value can differ
from the original's in the last bits (it is closer to the exact value), and where the original
rounded to 0 or 1, or overflowed, it is the finite exact value.

Variables in ``opaque`` (the variables a ``grad`` caller named) are leaves: a matcher neither
replaces them nor looks through them, so they keep their identity and place in the graph.
"""
from __future__ import annotations

import numpy as np

from ffigraph.graph.basic import Constant, io_toposort
from ffigraph.tensor.basic import cast
from ffigraph.tensor.elemwise import DimShuffle, Elemwise
from ffigraph.tensor.math import ELEMWISE

__all__ = ["sigmoid_argument", "written_sigmoid", "one_minus_sigmoid", "log_sigmoid",
           "log_one_minus_sigmoid", "softplus_form", "STABLE_FORMS", "stable_form", "stabilize_graph"]

_SAME_DEPTH = 32   # how deep two separately built expressions are compared (exp(z) twice)


# ------------------------------------------------------------------ reading the graph


def _node(var, opaque):
    """The node computing ``var``, or None for a graph input, a constant or an opaque variable."""
    return None if var in opaque else var.owner


def _name(var, opaque):
    """The scalar op's name of the Elemwise computing ``var`` (None otherwise)."""
    node = _node(var, opaque)
    if node is not None and isinstance(node.op, Elemwise):
        return node.op.scalar_op.name
    return None


def _operands(var, name, opaque):
    """The inputs of the ``name`` Elemwise computing ``var``, or None."""
    return list(var.owner.inputs) if _name(var, opaque) == name else None


def _is_float(var):
    return np.dtype(var.type.dtype).kind == "f"


def _is_constant(var, opaque, value):
    """``var`` is a size-1 constant equal to ``value`` (looking through the DimShuffles that broadcast it)."""
    while True:
        node = _node(var, opaque)
        if node is None or not isinstance(node.op, DimShuffle):
            break
        var = node.inputs[0]
    if not isinstance(var, Constant) or getattr(var.data, "size", 0) != 1:
        return False
    with np.errstate(all="ignore"):
        return bool(var.data.reshape(())[()] == value)


def _is_one(var, opaque):
    return _is_constant(var, opaque, 1)


def _same(a, b, opaque, depth=_SAME_DEPTH):
    """``a`` and ``b`` compute the same thing: the same variable, equal constants, or the same op
    applied to the same inputs (an opaque variable is only ever the same as itself)."""
    if a is b:
        return True
    if depth == 0 or a.type != b.type:
        return False
    if isinstance(a, Constant) and isinstance(b, Constant):
        return a.data.shape == b.data.shape and bool(np.array_equal(a.data, b.data))
    na, nb = _node(a, opaque), _node(b, opaque)
    if na is None or nb is None or a.index != b.index or na.op != nb.op or len(na.inputs) != len(nb.inputs):
        return False
    return all(_same(x, y, opaque, depth - 1) for x, y in zip(na.inputs, nb.inputs))


def _one_plus_exp(var, opaque):
    """t when ``var`` is ``1 + exp(t)`` or ``exp(t) + 1``, else None."""
    ins = _operands(var, "add", opaque)
    if ins is None:
        return None
    for c, e in (ins, ins[::-1]):
        exp_in = _operands(e, "exp", opaque)
        if exp_in is not None and _is_one(c, opaque):
            return exp_in[0]
    return None


def _one_minus(var, opaque):
    """y when ``var`` is ``1 - y``, else None."""
    ins = _operands(var, "sub", opaque)
    if ins is not None and _is_one(ins[0], opaque):
        return ins[1]
    return None


def _reciprocal(var, opaque):
    """d when ``var`` is ``1 / d`` or ``d ** -1``, else None."""
    ins = _operands(var, "true_div", opaque)
    if ins is not None and _is_one(ins[0], opaque):
        return ins[1]
    ins = _operands(var, "pow", opaque)
    if ins is not None and _is_minus_one(ins[1], opaque):
        return ins[0]
    return None


def _is_minus_one(var, opaque):
    neg = _operands(var, "neg", opaque)   # -1 as a constant, or as neg(1) before constant folding
    return _is_one(neg[0], opaque) if neg is not None else _is_constant(var, opaque, -1)


# ------------------------------------------------------------------ building replacements


def _negated(t, dtype, opaque):
    """``-t`` in ``dtype`` (a float dtype), simplified where that is exact.

    Negating a float is exact and rounding is symmetric, so -(-a) = a, -(a - b) = b - a,
    -(-a - b) = a + b and -(-a + b) = a - b hold bit for bit (up to the sign of a zero). An
    integer ``t`` is cast first: -(-128) wraps in int8.
    """
    if _is_float(t):
        simpler = _negated_float(t, opaque)
        if simpler is not None and simpler.type.dtype == t.type.dtype and simpler.type.ndim == t.type.ndim:
            return cast(simpler, dtype)
        return ELEMWISE["neg"](cast(t, dtype))
    return ELEMWISE["neg"](cast(t, dtype))


def _negated_float(t, opaque):
    def exactly_negated(v):   # a when v is -a with a float (so the negation did not wrap)
        ins = _operands(v, "neg", opaque)
        if ins is not None and _is_float(ins[0]) and ins[0].type.dtype == v.type.dtype:
            return ins[0]
        return None

    a = exactly_negated(t)
    if a is not None:
        return a
    ins = _operands(t, "sub", opaque)
    if ins is not None:
        a = exactly_negated(ins[0])
        if a is not None:
            return ELEMWISE["add"](a, ins[1])            # -(-a - b) = a + b
        return ELEMWISE["sub"](ins[1], ins[0])           # -(a - b) = b - a
    ins = _operands(t, "add", opaque)
    if ins is not None:
        for first, second in (ins, ins[::-1]):
            a = exactly_negated(first)
            if a is not None:
                return ELEMWISE["sub"](a, second)        # -(-a + b) = a - b
    return None


def _fits(out, new):
    """``new`` when it may stand for ``out`` (same dtype and ndim, compatible static shape), else None."""
    if new is None or getattr(new.type, "dtype", None) != out.type.dtype:
        return None
    return new if out.type.convert_variable(new) is not None else None


def _float_dtype(out):
    return out.type.dtype if _is_float(out) else None


# ------------------------------------------------------------------ the matchers


def sigmoid_argument(var, opaque=frozenset()):
    """z (a variable in ``var``'s dtype) when ``var`` computes sigmoid(z), however written, else None."""
    dtype = _float_dtype(var)
    if dtype is None:
        return None
    name = _name(var, opaque)
    if name == "sigmoid":
        return cast(var.owner.inputs[0], dtype)
    if name not in ("true_div", "pow", "mul"):
        return None
    denominator = _reciprocal(var, opaque)
    if denominator is not None:                      # 1 / (1 + exp(t)) = sigmoid(-t)
        t = _one_plus_exp(denominator, opaque)
        return None if t is None else _negated(t, dtype, opaque)
    if name == "true_div":                           # exp(z) / (1 + exp(z))
        numerator, denominator = var.owner.inputs
        exp_in = _operands(numerator, "exp", opaque)
        t = _one_plus_exp(denominator, opaque)
        if exp_in is not None and t is not None and _same(exp_in[0], t, opaque):
            return cast(t, dtype)
    elif name == "mul":
        # exp(z) * (1 / (1 + exp(z))) = exp(z) * sigmoid(-z), the reciprocal matched already or not
        for e, s in (var.owner.inputs, var.owner.inputs[::-1]):
            exp_in = _operands(e, "exp", opaque)
            minus_z = sigmoid_argument(s, opaque) if exp_in is not None else None
            if minus_z is not None and _negation_of(minus_z, exp_in[0], opaque):
                return cast(exp_in[0], dtype)
    return None


def _negation_of(a, b, opaque):
    """``a`` is -``b``: one is written as the negation of the other."""
    def negated(v):
        ins = _operands(v, "neg", opaque)
        return ins[0] if ins is not None else None

    na, nb = negated(a), negated(b)
    return (na is not None and _same(na, b, opaque)) or (nb is not None and _same(nb, a, opaque))


def written_sigmoid(var, opaque=frozenset()):
    """A written-out sigmoid(z) -> sigmoid(z)."""
    if _name(var, opaque) == "sigmoid":
        return None
    z = sigmoid_argument(var, opaque)
    return None if z is None else _fits(var, ELEMWISE["sigmoid"](z))


def one_minus_sigmoid(var, opaque=frozenset()):
    """1 - sigmoid(z) -> sigmoid(-z)  (1 - sigmoid(40) rounds to 0; sigmoid(-40) does not)."""
    s = _one_minus(var, opaque)
    dtype = _float_dtype(var)
    z = None if s is None or dtype is None else sigmoid_argument(s, opaque)
    return None if z is None else _fits(var, ELEMWISE["sigmoid"](_negated(z, dtype, opaque)))


def log_sigmoid(var, opaque=frozenset()):
    """log(sigmoid(z)) -> -softplus(-z)  (log(sigmoid(-800)) is -800, not log(0) = -inf)."""
    ins = _operands(var, "log", opaque)
    dtype = _float_dtype(var)
    z = None if ins is None or dtype is None else sigmoid_argument(ins[0], opaque)
    if z is None:
        return None
    return _fits(var, ELEMWISE["neg"](ELEMWISE["softplus"](_negated(z, dtype, opaque))))


def log_one_minus_sigmoid(var, opaque=frozenset()):
    """log(1 - sigmoid(z)) and log1p(-sigmoid(z)) -> -softplus(z)."""
    dtype = _float_dtype(var)
    if dtype is None:
        return None
    ins = _operands(var, "log", opaque)
    s = _one_minus(ins[0], opaque) if ins is not None else None
    if s is None:
        ins = _operands(var, "log1p", opaque)
        neg = _operands(ins[0], "neg", opaque) if ins is not None else None
        s = neg[0] if neg is not None else None
    z = None if s is None else sigmoid_argument(s, opaque)
    return None if z is None else _fits(var, ELEMWISE["neg"](ELEMWISE["softplus"](z)))


def softplus_form(var, opaque=frozenset()):
    """log(1 + exp(z)), log(exp(z) + 1) and log1p(exp(z)) -> softplus(z)  (log1p(exp(800)) is inf)."""
    dtype = _float_dtype(var)
    if dtype is None:
        return None
    ins = _operands(var, "log", opaque)
    if ins is not None:
        t = _one_plus_exp(ins[0], opaque)
    else:
        ins = _operands(var, "log1p", opaque)
        exp_in = _operands(ins[0], "exp", opaque) if ins is not None else None
        t = exp_in[0] if exp_in is not None else None
    return None if t is None else _fits(var, ELEMWISE["softplus"](cast(t, dtype)))


STABLE_FORMS = (written_sigmoid, one_minus_sigmoid, log_sigmoid, log_one_minus_sigmoid, softplus_form)


def stable_form(var, opaque=frozenset()):
    """The first stable replacement of ``var`` that a matcher of STABLE_FORMS gives, else None."""
    if var in opaque or var.owner is None or not isinstance(var.owner.op, Elemwise):
        return None
    for form in STABLE_FORMS:
        new = form(var, opaque)
        if new is not None:
            return new
    return None


def _tidy(var, opaque):
    """-(-a) -> a for floats (the replacements' own negations meet the graph's)."""
    ins = _operands(var, "neg", opaque)
    inner = _operands(ins[0], "neg", opaque) if ins is not None else None
    if inner is not None and _is_float(var) and inner[0].type.dtype == var.type.dtype:
        return _fits(var, inner[0])
    return None


# ------------------------------------------------------------------ a whole graph


def stabilize_graph(outputs, keep=()):
    """``outputs`` rebuilt bottom-up with every stable form above in place of what it matches.

    The graph the caller holds is not changed: nodes whose inputs change are copied, and where
    nothing matches the very same variables come back. The variables in ``keep`` keep their
    identity: they are neither replaced nor looked through (their own subgraphs are left as
    they are), so a gradient with respect to one of them is still the gradient with respect to
    that variable.
    """
    keep = frozenset(keep)
    memo = {}
    for node in io_toposort(list(keep), list(outputs)):
        inputs = [memo.get(v, v) for v in node.inputs]
        if any(new is not old for new, old in zip(inputs, node.inputs)):
            strict = all(new.type == old.type for new, old in zip(inputs, node.inputs))
            new_node = node.clone_with_new_inputs(inputs, strict=strict)
            new_node.tag.__dict__.update(node.tag.__dict__)
            new_outputs = new_node.outputs
        else:
            new_outputs = node.outputs
        for old, new in zip(node.outputs, new_outputs):
            if old in keep:
                continue
            for _ in range(8):   # a replacement may itself match (1 - sigmoid(z) -> sigmoid(-z) under a log)
                better = stable_form(new, keep)
                if better is None:
                    better = _tidy(new, keep)
                if better is None:
                    break
                new = better
            if new is not old:
                memo[old] = new
    return [memo.get(v, v) for v in outputs]

"""Derivatives of the elementwise ops: one rule per scalar-table entry.

A rule takes the node's inputs, its output ``z`` and the output gradient
``gz`` and returns one term per input, at the output's (broadcast) shape:
a tensor expression, or ``ZERO`` where the derivative vanishes almost
everywhere (floor, sign, comparisons...). ``elemwise_input_grads`` then casts
each term to its input's dtype and sums it back over broadcast axes.

Integers follow PyTensor's scalar ops: an op with an integer or bool output
is piecewise constant, so every input gets zeros (floatX for an integer
input); so does a true division of two integers, and the condition of a
switch. An integer input of an op with a float output gets its (float) term,
as a float input would: d(x * i)/di is x.
Constants are written as Python numbers so they stay weak and keep float32
gradients float32.
"""
from __future__ import annotations

import math

import numpy as np

from ffigraph.config import config
from ffigraph.tensor import math as tm
from ffigraph.tensor.basic import cast, switch, zeros_like

ZERO = "zero"


def _unary(fn):
    return lambda ins, z, gz: [fn(ins[0], z, gz)]


def _pow_rule(ins, z, gz):
    x, y = ins
    gx = gz * y * tm.pow(x, y - 1)
    # d(x**y)/dy = x**y log x; where x**y is 0 (x == 0, y > 0) the limit is 0, not 0*-inf
    gy = switch(tm.eq(z, 0), 0, gz * z * tm.log(x))
    return [gx, gy]


def _sigmoid_rule(ins, z, gz):
    return [_sigmoid_times_slope(gz, z)]


def _sigmoid_times_slope(gz, z):
    """``gz * z * (1 - z)`` for ``z = sigmoid(x)``, cancelling the divisions by ``z`` and
    ``1 - z`` that the gradients of ``log(z)`` and ``log(1 - z)`` put into ``gz``.

    Without this, the cross-entropy's gradient is ``(g / z) * z * (1 - z)``, which is 0/0 once
    ``z`` rounds to 0 or 1 (|x| > ~37); with it, it is ``g * (1 - z)``: exact there too.
    The walk goes through the sums, differences and negations that gather gz's terms.
    """
    node = gz.owner
    name = getattr(getattr(getattr(node, "op", None), "scalar_op", None), "name", None)
    if name == "add":
        return _sigmoid_times_slope(node.inputs[0], z) + _sigmoid_times_slope(node.inputs[1], z)
    if name == "sub":
        return _sigmoid_times_slope(node.inputs[0], z) - _sigmoid_times_slope(node.inputs[1], z)
    if name == "neg":
        return -_sigmoid_times_slope(node.inputs[0], z)
    if name == "true_div":
        numerator, denominator = node.inputs
        if _same_value(denominator, z):
            return numerator * (1 - z)
        if _is_one_minus(denominator, z):
            return numerator * z
    return gz * z * (1 - z)


def _same_value(v, z):
    """``v`` is ``z``, possibly behind the broadcasting DimShuffle Elemwise adds."""
    while v is not z and v.owner is not None and v.owner.op.__class__.__name__ == "DimShuffle" \
            and all(a == "x" or a == i for i, a in enumerate(
                [a for a in v.owner.op.new_order if a != "x"])):
        v = v.owner.inputs[0]
    return v is z


def _is_one_minus(v, z):
    from ffigraph.tensor.basic import get_scalar_constant_value, NotScalarConstantError

    node = v.owner
    if getattr(getattr(getattr(node, "op", None), "scalar_op", None), "name", None) != "sub":
        return False
    first = node.inputs[0]
    while first.owner is not None and first.owner.op.__class__.__name__ == "DimShuffle":
        first = first.owner.inputs[0]  # the padding Elemwise puts around a constant
    try:
        one = get_scalar_constant_value(first) == 1
    except NotScalarConstantError:
        return False
    return one and _same_value(node.inputs[1], z)


def _maximum_rule(ins, z, gz):
    # ties go to the first argument, so the two terms never count gz twice
    first = tm.ge(ins[0], ins[1])
    return [switch(first, gz, 0), switch(first, 0, gz)]


def _minimum_rule(ins, z, gz):
    first = tm.le(ins[0], ins[1])
    return [switch(first, gz, 0), switch(first, 0, gz)]


def _clip_rule(ins, z, gz):
    # numpy's clip is minimum(maximum(x, lo), hi): follow those two rules
    x, lo, hi = ins
    raised = tm.maximum(x, lo)
    below_hi = tm.le(raised, hi)
    g_raised = switch(below_hi, gz, 0)
    above_lo = tm.ge(x, lo)
    return [switch(above_lo, g_raised, 0), switch(above_lo, 0, g_raised), switch(below_hi, 0, gz)]


def _switch_rule(ins, z, gz):
    cond = ins[0]
    return [ZERO, switch(cond, gz, 0), switch(cond, 0, gz)]


def _float_of(x, z):
    """``x`` in the dtype of the float output ``z``: an integer input's ``x * x`` must not wrap."""
    return cast(x, z.type.dtype) if _is_discrete(x) else x


def _float_unary(fn):
    """A unary rule of ``x`` taken in the output's float dtype."""
    return lambda ins, z, gz: [fn(_float_of(ins[0], z), z, gz)]


def _arctan2_rule(ins, z, gz):
    # z = atan2(y, x): dz/dy = x / (x^2 + y^2), dz/dx = -y / (x^2 + y^2)
    y, x = (_float_of(v, z) for v in ins)
    r2 = x * x + y * y
    return [gz * x / r2, -gz * y / r2]


def _hypot_rule(ins, z, gz):
    x, y = (_float_of(v, z) for v in ins)
    return [gz * x / z, gz * y / z]


def _xlogy0_rule(ins, z, gz):
    # Theano's XlogY0.grad: d/dx = log y, d/dy = x / y
    x, y = (_float_of(v, z) for v in ins)
    return [gz * tm.log(y), gz * x / y]


def _logaddexp_rule(ins, z, gz):
    # d/da log(e^a + e^b) = e^a / (e^a + e^b) = exp(a - z): no overflow, whatever a and b
    a, b = (_float_of(v, z) for v in ins)
    return [gz * tm.exp(a - z), gz * tm.exp(b - z)]


def _betaln_rule(ins, z, gz):
    # d/da log B(a, b) = psi(a) - psi(a + b), and the same in b
    a, b = (_float_of(v, z) for v in ins)
    both = tm.psi(a + b)
    return [gz * (tm.psi(a) - both), gz * (tm.psi(b) - both)]


def _bessel_derivative(lower, z, x):
    """d/dx of J1 or I1 (``z`` at ``x``): J0(x) - J1(x) / x or I0(x) - I1(x) / x (``lower`` the order
    0 function's value), 1/2 at x = 0, their limit there."""
    return switch(tm.eq(x, 0), cast(0.5, z.type.dtype), lower - z / x)


def _tri_gamma_rule(ins, z, gz):
    # d/dx psi'(x) = polygamma(2, x)
    (x,) = ins
    return [gz * tm.polygamma(2, _float_of(x, z))]


def _incomplete_gamma_rule(sign):
    def rule(ins, z, gz):
        # d/dx P(a, x) = x^(a-1) e^-x / Gamma(a) = -d/dx Q(a, x); d/da has no closed form (PyTensor's
        # series for it is not here yet)
        a, x = (_float_of(v, z) for v in ins)
        if not _is_discrete(ins[0]):
            raise NotImplementedError("the gradient of gammainc/gammaincc with respect to a (the shape) is not "
                                      "implemented; only the one with respect to x is")
        density = tm.exp((a - 1) * tm.log(x) - x - tm.gammaln(a))
        return [ZERO, gz * density if sign > 0 else -gz * density]
    return rule


def _polygamma_rule(ins, z, gz):
    # d/dx psi^(n)(x) = psi^(n+1)(x); the order n is a whole number (elsewhere the value is NaN),
    # so its gradient is zero, as a rounding's is
    n, x = ins
    return [ZERO, gz * tm.polygamma(n + 1, _float_of(x, z))]


_LN2, _LN10 = math.log(2.0), math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_OVER_TWO = math.sqrt(math.pi) / 2.0

RULES = {
    "neg": _unary(lambda x, z, gz: -gz),
    "abs": _unary(lambda x, z, gz: gz * tm.sgn(x)),
    "exp": _unary(lambda x, z, gz: gz * z),
    "expm1": _unary(lambda x, z, gz: gz * (z + 1)),
    "log": _unary(lambda x, z, gz: gz / x),
    "log1p": _unary(lambda x, z, gz: gz / (x + 1)),
    "log2": _unary(lambda x, z, gz: gz / (x * _LN2)),
    "log10": _unary(lambda x, z, gz: gz / (x * _LN10)),
    "sqrt": _unary(lambda x, z, gz: gz * 0.5 / z),
    "sqr": _unary(lambda x, z, gz: gz * 2 * x),
    "sin": _unary(lambda x, z, gz: gz * tm.cos(x)),
    "cos": _unary(lambda x, z, gz: -gz * tm.sin(x)),
    "tan": _unary(lambda x, z, gz: gz * (z * z + 1)),
    "tanh": _unary(lambda x, z, gz: gz * (1 - z * z)),
    "sigmoid": _sigmoid_rule,
    "softplus": _unary(lambda x, z, gz: gz * tm.sigmoid(x)),
    "erf": _unary(lambda x, z, gz: gz * _TWO_OVER_SQRT_PI * tm.exp(-(x * x))),
    "arcsin": _float_unary(lambda x, z, gz: gz / tm.sqrt(1 - x * x)),
    "arccos": _float_unary(lambda x, z, gz: -gz / tm.sqrt(1 - x * x)),
    "arctan": _float_unary(lambda x, z, gz: gz / (1 + x * x)),
    "sinh": _float_unary(lambda x, z, gz: gz * tm.cosh(x)),
    "cosh": _float_unary(lambda x, z, gz: gz * tm.sinh(x)),
    "arcsinh": _float_unary(lambda x, z, gz: gz / tm.sqrt(x * x + 1)),
    "arccosh": _float_unary(lambda x, z, gz: gz / tm.sqrt(x * x - 1)),
    "arctanh": _float_unary(lambda x, z, gz: gz / (1 - x * x)),
    "reciprocal": _unary(lambda x, z, gz: -gz * z * z),
    "exp2": _unary(lambda x, z, gz: gz * z * _LN2),
    "deg2rad": _unary(lambda x, z, gz: gz * (math.pi / 180)),
    "rad2deg": _unary(lambda x, z, gz: gz * (180 / math.pi)),
    "erfc": _float_unary(lambda x, z, gz: -gz * _TWO_OVER_SQRT_PI * tm.exp(-(x * x))),
    "erfinv": _unary(lambda x, z, gz: gz * _SQRT_PI_OVER_TWO * tm.exp(z * z)),
    "gammaln": _float_unary(lambda x, z, gz: gz * tm.psi(x)),
    "psi": _float_unary(lambda x, z, gz: gz * tm.tri_gamma(x)),
    "tri_gamma": _tri_gamma_rule,
    "gamma": _float_unary(lambda x, z, gz: gz * z * tm.psi(x)),
    "j0": _float_unary(lambda x, z, gz: -gz * tm.j1(x)),
    "j1": _float_unary(lambda x, z, gz: gz * _bessel_derivative(tm.j0(x), z, x)),
    "i0": _float_unary(lambda x, z, gz: gz * tm.i1(x)),
    "i1": _float_unary(lambda x, z, gz: gz * _bessel_derivative(tm.i0(x), z, x)),
    "erfcx": _float_unary(lambda x, z, gz: gz * (2 * x * z - _TWO_OVER_SQRT_PI)),
    "erfcinv": _unary(lambda x, z, gz: -gz * _SQRT_PI_OVER_TWO * tm.exp(z * z)),
    "log1mexp": _float_unary(lambda x, z, gz: -gz / tm.expm1(-x)),
    "betaln": _betaln_rule,
    "polygamma": _polygamma_rule,
    "gammainc": _incomplete_gamma_rule(1),
    "gammaincc": _incomplete_gamma_rule(-1),
    "arctan2": _arctan2_rule,
    "hypot": _hypot_rule,
    "logaddexp": _logaddexp_rule,
    "xlogx": _float_unary(lambda x, z, gz: gz * (1 + tm.log(x))),   # Theano's XlogX.grad
    "xlogy0": _xlogy0_rule,
    "trunc": lambda ins, z, gz: [ZERO],
    "round_half_to_even": lambda ins, z, gz: [ZERO],
    "round_half_away_from_zero": lambda ins, z, gz: [ZERO],
    "floor": lambda ins, z, gz: [ZERO],
    "ceil": lambda ins, z, gz: [ZERO],
    "round": lambda ins, z, gz: [ZERO],
    "sign": lambda ins, z, gz: [ZERO],
    "add": lambda ins, z, gz: [gz, gz],
    "sub": lambda ins, z, gz: [gz, -gz],
    "mul": lambda ins, z, gz: [gz * ins[1], gz * ins[0]],
    "true_div": lambda ins, z, gz: [gz / ins[1], -gz * ins[0] / (ins[1] * ins[1])],
    "int_div": lambda ins, z, gz: [ZERO, ZERO],
    # x mod y = x - floor(x / y) * y
    "mod": lambda ins, z, gz: [gz, -gz * tm.int_div(ins[0], ins[1])],
    "pow": _pow_rule,
    "maximum": _maximum_rule,
    "minimum": _minimum_rule,
    "clip": _clip_rule,
    "switch": _switch_rule,
    # the parts of a real value (complex gradients are not implemented): itself, 0, and 0 or pi
    "real": lambda ins, z, gz: [gz],
    "imag": lambda ins, z, gz: [ZERO],
    "angle": lambda ins, z, gz: [ZERO],
}


def elemwise_input_grads(op, inputs, output, gz):
    """Gradients of an ``Elemwise`` node's inputs, each with its input's shape and dtype (floatX
    or the term's float dtype for an integer input)."""
    from ffigraph.scalar.basic import Cast

    sop = op.scalar_op
    discrete = [_is_discrete(v) for v in inputs]
    if _is_discrete(output) or (sop.name == "true_div" and all(discrete)):
        # piecewise constant: a step function of its inputs, so zero (not disconnected)
        terms = [ZERO] * len(inputs)
    elif any(np.dtype(v.type.dtype).kind == "c" for v in list(inputs) + [output]):
        raise NotImplementedError("gradients of complex values are not implemented (%s)" % op)
    elif isinstance(sop, Cast):
        terms = [gz]
    elif sop.name in RULES:
        terms = RULES[sop.name](inputs, output, gz)
    else:
        raise NotImplementedError("no derivative rule for elementwise %s" % sop)
    result = []
    for i, (x, term) in enumerate(zip(inputs, terms)):
        if term is ZERO:
            result.append(zeros_like(x, dtype=config.floatX) if discrete[i] else zeros_like(x))
            continue
        if not discrete[i]:
            term = cast(term, x.type.dtype)
        elif _is_discrete(term):
            term = cast(term, config.floatX)   # (gradients are float, an int input's too)
        result.append(sum_to_input(term, x, [v.type.shape for j, v in enumerate(inputs) if j != i]))
    return result


def _is_discrete(v):
    return np.dtype(v.type.dtype).kind in "biu"


def sum_to_input(g, x, others):
    """Sum ``g`` back to the shape of the input ``x``, which was broadcast against values of
    the static shapes ``others``.

    Axes where ``x`` is statically 1 are summed here; axes where its length
    is only known at run time, and another input could be longer, go through
    ``sum_to_shape``, which sums only if ``x`` turns out to have length 1.
    """
    from ffigraph.tensor.shapes import shape
    from ffigraph.tensor.sum_to_shape import sum_to_shape

    static = [a for a in range(x.type.ndim) if x.type.shape[a] == 1 and g.type.shape[a] != 1]
    if static:
        g = tm.sum(g, axis=static, keepdims=True)
    runtime = [a for a in range(x.type.ndim)
               if x.type.shape[a] is None and any(o[a] != 1 for o in others)]
    if runtime:
        g = sum_to_shape(g, shape(x))
    return g

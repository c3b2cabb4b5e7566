"""Rewriting ``sigmoid`` and ``softplus`` as Composite steps the fused loop can vectorise.

Their scalar C helpers call ``exp``/``log1p`` one element at a time. Written
as steps (``exp(-|x|)``, ``log1p``, divisions, a ``switch``), the fused loop
runs the transcendentals through libmvec a block at a time and the rest as
plain vectorisable arithmetic. The formulas are the helpers' own stable
ones, so NaN, ±inf and large ``|x|`` behave the same.
"""
from __future__ import annotations

import numpy as np

from ffigraph.scalar.basic import SCALAR_OPS
from ffigraph.scalar.composite import const_ref

EXPANDABLE = ("sigmoid", "softplus")


def expandable(sop, in_dtypes, out_dtype):
    """True when ``sop`` has an expansion for these dtypes (a float op on its own float dtype)."""
    return (sop.name in EXPANDABLE and np.dtype(out_dtype).name in ("float32", "float64")
            and all(np.dtype(d) == np.dtype(out_dtype) for d in in_dtypes))


def expand(sop, arg, dtype, first_index):
    """Steps computing ``sop(arg)``, numbered from ``first_index``; the last one is the result."""
    one, zero = const_ref(np.ones((), dtype)), const_ref(np.zeros((), dtype))
    steps = []

    def step(name, *args, out_dtype=dtype):
        steps.append((SCALAR_OPS[name], list(args), out_dtype))
        return ("step", first_index + len(steps) - 1)

    e = step("exp", step("neg", step("abs", arg)))          # exp(-|x|), in (0, 1]: never overflows
    if sop.name == "sigmoid":
        denominator = step("add", one, e)
        step("switch", step("ge", arg, zero, out_dtype="bool"),
             step("true_div", one, denominator), step("true_div", e, denominator))
    else:  # softplus: max(x, 0) + log1p(exp(-|x|))
        step("add", step("maximum", arg, zero), step("log1p", e))
    return steps

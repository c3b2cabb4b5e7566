"""Theano's ``theano.tensor.xlogx`` module: ``x log x`` and ``x log y`` that are 0 where x is 0
(the limit of the first; the convention of entropy terms for the second), elementwise, with C
code (scalar/c_table.py) and Theano's gradients (tensor/elemwise_grad.py)."""
from __future__ import annotations

from ffigraph.tensor.math import ELEMWISE

# the elementwise ops, under the names of Theano's scalar op classes' instances
XlogX = ELEMWISE["xlogx"]
XlogY0 = ELEMWISE["xlogy0"]


def xlogx(x):
    """``x * log(x)``, and 0 where ``x`` is 0; gradient ``1 + log(x)`` (Theano's)."""
    return XlogX(x)


def xlogy0(x, y):
    """``x * log(y)``, and 0 where ``x`` is 0 whatever ``y``; gradients ``log(y)`` and ``x / y``."""
    return XlogY0(x, y)


__all__ = ["xlogx", "xlogy0", "XlogX", "XlogY0"]

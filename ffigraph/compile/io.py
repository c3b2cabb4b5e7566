"""``In`` and ``Out``: how a function treats each of its inputs and outputs."""
from __future__ import annotations

from ffigraph.graph.basic import Constant, Variable

_NO_VALUE = object()


class In:
    """An input of ``function``.

    mutable: the function may overwrite the value passed (inplace rewrites); implies borrow.
    borrow: the caller lends the value: an output declared ``Out(..., borrow=True)`` may then
    be, or view, its memory. Without it (the default) no output ever aliases the value passed.
    strict: the value must already have exactly the right type (no cast).
    allow_downcast: cast even when precision is lost (None: Theano's default rule).
    value: a default, used when the caller omits this argument.
    """

    def __init__(self, variable, name=None, value=_NO_VALUE, mutable=False, borrow=False,
                 strict=False, allow_downcast=None):
        if not isinstance(variable, Variable):
            raise TypeError("In() needs a symbolic Variable, got %r" % (variable,))
        if isinstance(variable, Constant):
            raise TypeError("%s is a constant and cannot be a function input" % (variable,))
        self.variable = variable
        self.name = name if name is not None else variable.name
        self.value = value
        self.mutable = mutable
        self.borrow = borrow or mutable
        self.strict = strict
        self.allow_downcast = allow_downcast

    @property
    def has_default(self):
        return self.value is not _NO_VALUE

    def __repr__(self):
        return "In(%s)" % (self.variable,)


class Out:
    """An output of ``function``; ``borrow=True`` lets it alias the memory of inputs lent with
    ``In(..., borrow=True)`` and of shared variables, instead of being copied."""

    def __init__(self, variable, borrow=False):
        if not isinstance(variable, Variable):
            raise TypeError("Out() needs a symbolic Variable, got %r" % (variable,))
        self.variable = variable
        self.borrow = borrow

    def __repr__(self):
        return "Out(%s)" % (self.variable,)

"""``In`` and ``Out``: how a function treats each of its inputs and outputs."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Union

from ffigraph.graph.basic import Constant, Variable
from ffigraph.linkers.basic import Container

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

_NO_VALUE = object()


class In:
    """An input of ``function``.

    mutable: the function may overwrite the value passed (inplace rewrites); implies borrow.
    borrow: the caller lends the value: an output declared ``Out(..., borrow=True)`` may then
    be, or view, its memory. Without it (the default) no output ever aliases the value passed.
    strict: the value must already have exactly the right type (no cast).
    allow_downcast: cast even when precision is lost (None: Theano's default rule).
    value: a default, used when the caller omits this argument. A ``Container`` is storage the
    function reads and writes in place of a default of its own (two functions given the same
    container share the state; ``f.container[x]`` hands one out).
    update: as in PyTensor, an expression of the new value of an input that has a ``value``: after
    each call the function keeps it as the input's value (its state, like a shared variable's
    update, but held by the function: ``f[x]`` reads it, ``f[x] = v`` sets it). A value passed for
    the input is used for that call, then the update replaces it.
    mutable: defaults to True when there is an update (PyTensor's rule), else False.
    implicit: the caller may not pass this input (it has a value); None (the default) means True
    when ``value`` is a Container, else False, as in PyTensor. The input keeps its position.
    """

    def __init__(self, variable: Variable, name: Optional[str] = None, value: Any = _NO_VALUE,
                 update: Union[Variable, ArrayLike, None] = None,
                 mutable: Optional[bool] = None, borrow: bool = False, strict: bool = False,
                 allow_downcast: Optional[bool] = None, implicit: Optional[bool] = None) -> None:
        if not isinstance(variable, Variable):
            raise TypeError("In() needs a symbolic Variable, got %r" % (variable,))
        if isinstance(variable, Constant):
            raise TypeError("%s is a constant and cannot be a function input" % (variable,))
        self.variable = variable
        self.name = name if name is not None else variable.name
        self.value = value
        if update is not None:
            if value is _NO_VALUE:
                raise TypeError("In(%s, update=...) needs a value=: the update replaces the input's stored "
                                "value after each call" % (variable,))
            if isinstance(update, Variable) and variable.type.convert_variable(update) is None:
                raise TypeError("In(%s): the update %s has type %s, not the input's type %s (cast it)"
                                % (variable, update, update.type, variable.type))
        self.update = update
        if mutable is None:
            mutable = update is not None
        self.mutable = bool(mutable)
        self.borrow = borrow or self.mutable
        self.strict = strict
        self.allow_downcast = allow_downcast
        if implicit is None:
            implicit = isinstance(value, Container)
        if implicit and value is _NO_VALUE:
            raise TypeError("In(%s, implicit=True) needs a value=: the caller cannot pass it" % (variable,))
        self.implicit = bool(implicit)

    @property
    def has_default(self) -> bool:
        return self.value is not _NO_VALUE

    def __repr__(self) -> str:
        if self.update is not None:
            return "In(%s -> %s)" % (self.variable, self.update)
        return "In(%s)" % (self.variable,)


class Out:
    """An output of ``function``; ``borrow=True`` lets it alias the memory of inputs lent with
    ``In(..., borrow=True)`` and of shared variables, instead of being copied."""

    def __init__(self, variable: Variable, borrow: bool = False) -> None:
        if not isinstance(variable, Variable):
            raise TypeError("Out() needs a symbolic Variable, got %r" % (variable,))
        self.variable = variable
        self.borrow = borrow

    def __repr__(self) -> str:
        return "Out(%s)" % (self.variable,)

"""``In`` and ``Out``: how a function treats each of its inputs and outputs."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Union

from ffigraph.graph.basic import Constant, Variable
from ffigraph.linkers.basic import Container

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

_NO_VALUE = object()


def type_mismatch(expected: Any, value: Variable, target: str) -> str:
    """Why an update expression ``value`` cannot be the new value of ``target`` (of type
    ``expected``): what differs (number of dimensions, dtype, static shape or broadcastable
    pattern), each with a fix that fits it."""
    got = value.type
    head = "the new value %s has type %s, but %s has type %s" % (value, got, target, expected)
    ndim, got_ndim = getattr(expected, "ndim", None), getattr(got, "ndim", None)
    dtype, got_dtype = getattr(expected, "dtype", None), getattr(got, "dtype", None)
    if ndim is None or got_ndim is None or dtype is None or got_dtype is None:
        return head + " (a value of another kind of type: the update must compute a value of %s's type)" % target
    problems = []
    if ndim != got_ndim:
        problems.append("it has %d dimension%s where %s has %d: an update must keep the number of dimensions "
                        "(no cast changes it); reshape the expression (e.g. value.reshape(...), value.flatten(), "
                        "value.dimshuffle(...), or index it) so it has %d"
                        % (got_ndim, "" if got_ndim == 1 else "s", target, ndim, ndim))
    if dtype != got_dtype:
        problems.append("its dtype is %s where %s's is %s: cast it, e.g. ffigraph.tensor.cast(value, %r)"
                        % (got_dtype, target, dtype, dtype))
    if not problems:
        shape, got_shape = tuple(expected.shape), tuple(got.shape)
        for axis, (want, have) in enumerate(zip(shape, got_shape)):
            if want is None or want == have:
                continue
            if have is None and want == 1:
                problems.append("axis %d of %s is broadcastable (length 1) but the new value's is not known to "
                                "be: state it, e.g. ffigraph.tensor.specify_shape(value, %s)"
                                % (axis, target, _shape_text(shape)))
            elif have is None:
                problems.append("axis %d of %s has the static length %d, which the new value's type does not "
                                "promise: state it, e.g. ffigraph.tensor.specify_shape(value, %s)"
                                % (axis, target, want, _shape_text(shape)))
            else:
                problems.append("axis %d of %s has the static length %d but the new value's has %d: the update "
                                "must compute a value of length %d on that axis" % (axis, target, want, have, want))
    if not problems:
        return head
    return head + ": " + "; and ".join(problems)


def _shape_text(shape: Any) -> str:
    text = ", ".join("None" if s is None else str(s) for s in shape)
    return "(%s,)" % text if len(shape) == 1 else "(%s)" % text


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
                raise TypeError("In(%s, update=...): %s" % (variable, type_mismatch(variable.type, update,
                                                                                   "input %s" % (variable,))))
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

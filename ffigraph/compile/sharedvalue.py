"""Shared variables: symbolic inputs whose value lives between calls (model parameters)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple, Type

import numpy as np

from ffigraph.graph.basic import Variable
from ffigraph.linkers.basic import Container

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ffigraph.graph.type import Type as GraphType
    from ffigraph.tensor.variable import _TensorOperators


class SharedVariable(Variable):
    """A variable with a value held in a ``container`` that every function using it shares.

    Functions read it implicitly and may replace it through ``updates``.
    """

    def __init__(self, type: GraphType, value: Any, name: Optional[str] = None, strict: bool = False,
                 allow_downcast: Optional[bool] = None, container: Optional[Container] = None) -> None:
        super().__init__(type, None, None, name)
        if container is None:
            container = Container(type, name=name, strict=strict, allow_downcast=allow_downcast)
            try:
                container.storage[0] = type.filter(value, strict=strict, allow_downcast=allow_downcast)
            except (TypeError, ValueError) as err:
                raise type_error_class(err)("shared variable %s: the value does not fit its type %s: %s"
                                            % (_label(name), type, _explain_value(type, value, err))) from None
            note_user_value(container)
        self.container = container
        self._default_update: Optional[Variable] = None

    @property
    def default_update(self) -> Optional[Variable]:
        """An update expression applied by every function that reads this variable, as in PyTensor:
        ``s.default_update = s + 1`` makes each call of such a function advance ``s``, unless the
        function has an explicit update for ``s`` or skips it with ``no_default_updates``. None (the
        default) means none; the expression must have this variable's type."""
        return self._default_update

    @default_update.setter
    def default_update(self, value: Optional[Variable]) -> None:
        if value is None:
            self._default_update = None
            return
        try:
            self._default_update = self.type.filter_variable(value, allow_convert=True)
        except TypeError as err:
            raise TypeError("default_update of shared variable %s: %s" % (self, err)) from None

    def get_value(self, borrow: bool = False, return_internal_type: bool = False) -> Any:
        """The current value; a copy unless ``borrow=True``."""
        value = self.container.storage[0]
        return value if borrow else self.type.copy_value(value)

    def set_value(self, new_value: Any, borrow: bool = False) -> None:
        """Replace the value (filtered to the type); it is copied unless ``borrow=True``."""
        try:
            filtered = self.type.filter(new_value, strict=self.container.strict,
                                        allow_downcast=self.container.allow_downcast)
        except (TypeError, ValueError) as err:
            raise type_error_class(err)("set_value of shared variable %s (type %s): %s"
                                        % (_label(self.name), self.type,
                                           _explain_value(self.type, new_value, err))) from None
        if not borrow and _may_share(filtered, new_value):
            filtered = self.type.copy_value(filtered)
        self.container.storage[0] = filtered
        note_user_value(self.container)

    @property
    def value(self) -> Any:
        return self.get_value()

    def get_test_value(self) -> Any:
        """A shared variable's test value is its current value (for config.compute_test_value)."""
        return self.get_value(borrow=True, return_internal_type=True)

    def clone(self, name: Optional[str] = None) -> SharedVariable:
        cp = type(self)(self.type, None, name if name is not None else self.name, container=self.container)
        cp.tag.__dict__.update(self.tag.__dict__)
        return cp

    def __str__(self) -> str:
        return self.name if self.name is not None else "<shared %s>" % (self.type,)


def type_error_class(err: Exception) -> Type[Exception]:
    """The class a re-worded filter error keeps (TypeError or ValueError)."""
    return ValueError if isinstance(err, ValueError) else TypeError


def _label(name: Optional[str]) -> str:
    return repr(name) if name is not None else "(unnamed)"


def _explain_value(vtype: Any, value: Any, err: Exception) -> str:
    """Why ``value`` does not fit ``vtype``: for a static axis (a broadcastable one is of length 1),
    which axis and what length it needs; else the filter's own words."""
    shape = getattr(vtype, "shape", None)
    got = getattr(value, "shape", None)
    if got is None and isinstance(value, (list, tuple, int, float, complex, bool, np.generic)):
        got = np.shape(value)
    if shape is None or got is None or len(got) != len(shape):
        return str(err)
    for axis, (want, have) in enumerate(zip(shape, got)):
        if want is not None and want != have:
            if want == 1:
                return ("axis %d is broadcastable (broadcastable=%s), so it must have length 1, but the value "
                        "has shape %s" % (axis, tuple(s == 1 for s in shape), tuple(got)))
            return ("axis %d has the static length %d (shape=%s), but the value has shape %s"
                    % (axis, want, tuple(shape), tuple(got)))
    return str(err)


def note_user_value(container: Container) -> None:
    """Remember the shape of the value a user gave a shared variable (shared(), set_value): an error
    that a function's update changed it later says so (ffigraph.compile.function)."""
    setattr(container, "user_shape", getattr(container.storage[0], "shape", None))   # (a Container has no slot)


def _may_share(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return np.may_share_memory(a, b)
    return False


if TYPE_CHECKING:
    class TensorSharedVariable(_TensorOperators, SharedVariable):
        """A shared n-d array (the class ``tensor_shared_class`` makes on first use, as mypy sees it)."""

        def get_value(self, borrow: bool = False, return_internal_type: bool = False) -> np.ndarray: ...

        def set_value(self, new_value: ArrayLike, borrow: bool = False) -> None: ...


def _tensor_shared_class() -> Type[TensorSharedVariable]:
    from ffigraph.tensor.variable import _TensorOperators

    class TensorSharedVariable(_TensorOperators, SharedVariable):
        """A shared n-d array; behaves like a tensor variable in expressions."""

    # made on first use (the tensor layer is not imported before), yet found by pickle as a name of
    # this module: the module's __getattr__ makes it then
    TensorSharedVariable.__qualname__ = "TensorSharedVariable"
    TensorSharedVariable.__module__ = __name__
    return TensorSharedVariable  # type: ignore[return-value]  # (declared above for mypy)


def __getattr__(name: str) -> Any:
    if name == "TensorSharedVariable":
        return tensor_shared_class()
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


_TENSOR_SHARED: List[Type[TensorSharedVariable]] = []


def tensor_shared_class() -> Type[TensorSharedVariable]:
    if not _TENSOR_SHARED:
        _TENSOR_SHARED.append(_tensor_shared_class())
    return _TENSOR_SHARED[0]


def shared(value: ArrayLike, name: Optional[str] = None, strict: bool = False,
           allow_downcast: Optional[bool] = None, borrow: bool = False,
           shape: Optional[Sequence[Optional[int]]] = None,
           broadcastable: Optional[Sequence[bool]] = None) -> TensorSharedVariable:
    """A shared tensor initialised with ``value`` (copied unless ``borrow=True``).

    The type's static shape is unknown on every axis unless ``shape`` (PyTensor's keyword: an int
    or None per axis) or ``broadcastable`` (Theano's: a bool per axis, numpy bools too; True fixes
    the axis to length 1) says otherwise, so ``set_value`` may later change the shape of the axes
    left open (Theano's default for shared is ``broadcastable=(False,) * ndim``). The value, and
    every later ``set_value``, must fit: a broadcastable axis has length 1.
    """
    from ffigraph.tensor.type import TensorType

    if isinstance(value, Variable):
        raise TypeError("shared() needs a value, not the symbolic variable %s" % (value,))
    if isinstance(value, np.ndarray):
        arr = value
    elif isinstance(value, (bool, int, float, complex, np.generic, list, tuple)):
        arr = np.asarray(value)
    else:
        raise TypeError("shared(): no shared variable type for a value of type %s" % type(value).__name__)
    if arr.dtype.kind not in "biufc":
        raise TypeError("shared(): values of dtype %s are not supported" % arr.dtype)
    if broadcastable is not None:
        if shape is not None:
            raise TypeError("shared(%s): give shape= or broadcastable=, not both" % (_label(name),))
        shape = _broadcastable_shape(broadcastable, name)
    if shape is None:
        shape = (None,) * arr.ndim
    else:
        shape = tuple(shape)
        if len(shape) != arr.ndim:
            raise ValueError("shared(%s): %s=%r has %d entries, but the value has %d dimensions (shape %s)"
                             % (_label(name), "shape" if broadcastable is None else "broadcastable",
                                tuple(shape) if broadcastable is None else tuple(broadcastable),
                                len(shape), arr.ndim, arr.shape))
    ttype = TensorType(arr.dtype, shape)
    if not borrow or arr is not value:
        arr = np.array(arr, copy=True)
    cls = tensor_shared_class()
    return cls(ttype, arr, name=name, strict=strict, allow_downcast=allow_downcast)


def _broadcastable_shape(broadcastable: Any, name: Optional[str]) -> Tuple[Optional[int], ...]:
    """Theano's broadcastable pattern as a static shape: True (or np.True_, 1) -> 1, False -> None."""
    if isinstance(broadcastable, (str, bytes)) or not hasattr(broadcastable, "__iter__"):
        raise TypeError("shared(%s): broadcastable must be a tuple of bools, got %r" % (_label(name), broadcastable))
    shape: List[Optional[int]] = []
    for entry in broadcastable:
        if isinstance(entry, (bool, np.bool_)) or (isinstance(entry, (int, np.integer)) and entry in (0, 1)):
            shape.append(1 if entry else None)
        else:
            raise TypeError("shared(%s): broadcastable must be a tuple of bools (True: an axis of length 1), "
                            "got %r" % (_label(name), tuple(broadcastable)))
    return tuple(shape)

"""Identity from a declared ``__props__`` tuple, shared by Types and Ops."""
from __future__ import annotations


class PropsIdentity:
    """Equality, hash and printing follow the attributes named in ``__props__``.

    A class that declares no ``__props__`` keeps object identity, as PyTensor
    does, so an op with hidden state is never merged by mistake.
    """

    __props__: tuple = None  # type: ignore[assignment]

    def _props(self):
        return tuple(getattr(self, name) for name in self.__props__)

    def _props_dict(self):
        return {name: getattr(self, name) for name in self.__props__}

    def __eq__(self, other):
        if self.__props__ is None:
            return self is other
        return type(self) is type(other) and self._props() == other._props()

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        if self.__props__ is None:
            return object.__hash__(self)
        return hash((type(self), self._props()))

    def __str__(self):
        name = type(self).__name__
        if not self.__props__:
            return name
        return "%s{%s}" % (name, ", ".join("%s=%s" % (k, _short(v)) for k, v in self._props_dict().items()))

    def __repr__(self):
        return str(self)


def _short(value):
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."

"""``Type``: what values a Variable may hold, and how to make one acceptable."""
from __future__ import annotations

import copy
import sys

from ffigraph.config import config
from ffigraph.graph.basic import Constant, Variable, _op_call, user_trace
from ffigraph.graph.utils import PropsIdentity


class Type(PropsIdentity):
    """Base of every type. Subclasses implement ``filter`` and usually ``values_eq``.

    The C contract (``c_declare``, ``c_extract``, ...) is added by the C
    backend's ``CType`` mix-in; a plain Type runs under the Python linker only.
    """

    __props__: tuple = ()
    variable_type = Variable
    constant_type = Constant

    # ---- values

    def filter(self, data, strict=False, allow_downcast=None):
        """Return ``data`` as a valid value of this type, or raise TypeError/ValueError."""
        raise NotImplementedError("%s does not implement filter" % type(self).__name__)

    def is_valid_value(self, data):
        try:
            self.filter(data, strict=True)
            return True
        except (TypeError, ValueError):
            return False

    def values_eq(self, a, b):
        return a == b

    def values_eq_approx(self, a, b):
        return self.values_eq(a, b)

    def copy_value(self, data):
        """A copy that shares no mutable memory with ``data`` (used by DeepCopyOp)."""
        if hasattr(data, "copy"):
            return data.copy()
        return copy.deepcopy(data)

    def constant_key(self, data):
        """A hashable summary of a constant's value, used to compare constants."""
        return data

    # ---- variables

    def make_variable(self, name=None):
        return self.variable_type(self, None, None, name)

    def make_constant(self, value, name=None):
        return self.constant_type(self, value, name)

    def __call__(self, name=None):
        var = self.make_variable(name)
        # a variable the user makes (an input: x = T.dvector("x")) records where, as in PyTensor;
        # one made inside an op's make_node gets its node's trace instead
        limit = config.traceback__limit
        if limit and _op_call.made is None:
            trace = user_trace(limit, sys._getframe(1))
            if trace is not None:
                var.tag.trace = trace
        return var

    def convert_variable(self, var):
        """Return ``var`` viewed as this type when that is safe, else None."""
        return var if var.type == self else None

    def filter_variable(self, other, allow_convert=True):
        """Return ``other`` (a Variable or a value) as a Variable of this type."""
        if not isinstance(other, Variable):
            return self.make_constant(other)
        if other.type == self:
            return other
        converted = self.convert_variable(other) if allow_convert else None
        if converted is None:
            raise TypeError("cannot convert %s (of type %s) to type %s" % (other, other.type, self))
        return converted

    def in_same_class(self, other):
        return self == other

    def clone(self, **kwargs):
        props = self._props_dict()
        props.update(kwargs)
        return type(self)(**props)

"""``FunctionGraph``: a graph with fixed inputs and outputs that rewrites edit in place.

It tracks the clients of every variable and tells attached features about
each change (import, prune, change of an input), so that rewrites and checks
see one consistent graph.
"""
from __future__ import annotations

from ffigraph.graph.basic import Apply, Constant, Variable, clone_get_equiv, io_toposort


class InconsistencyError(Exception):
    """A feature refused a change (raised from ``validate`` or a callback)."""


class Feature:
    """Base of objects attached to a FunctionGraph to observe or veto its changes."""

    def on_attach(self, fgraph):
        pass

    def on_detach(self, fgraph):
        pass

    def on_import(self, fgraph, node, reason):
        pass

    def on_prune(self, fgraph, node, reason):
        pass

    def on_change_input(self, fgraph, node, i, old_var, new_var, reason):
        pass

    def validate(self, fgraph):
        pass


class FunctionGraph:
    """The subgraph from ``inputs`` to ``outputs``; ``clone=True`` works on a private copy.

    ``clients[var]`` lists ``(node, i)`` pairs, with ``("output", i)`` for the
    graph's i-th output.
    """

    def __init__(self, inputs, outputs, features=(), clone=True):
        inputs, outputs = list(inputs), list(outputs)
        if clone:
            equiv = clone_get_equiv(inputs, outputs, copy_inputs=True)
            inputs = [equiv[v] for v in inputs]
            outputs = [equiv[v] for v in outputs]
        self.inputs = []
        self.outputs = []
        self.apply_nodes = set()
        self.variables = set()
        self.clients = {}
        self._features = []
        for v in inputs:
            if v.owner is not None:
                raise ValueError("FunctionGraph input %s is computed by %s; inputs must be leaves"
                                 % (v, v.owner.op))
            if v in self.clients:
                raise ValueError("FunctionGraph input %s is listed twice" % (v,))
            self.add_input(v)
        for v in outputs:
            self.add_output(v)
        for f in features:
            self.attach_feature(f)

    # ---- building

    def add_input(self, var):
        self.inputs.append(var)
        self._setup_var(var)

    def add_output(self, var, reason=None):
        self.import_var(var, reason=reason)
        self.outputs.append(var)
        self.clients[var].append(("output", len(self.outputs) - 1))

    def _setup_var(self, var):
        self.variables.add(var)
        self.clients.setdefault(var, [])

    def import_var(self, var, reason=None):
        if var.owner is not None and var.owner not in self.apply_nodes:
            self.import_node(var.owner, reason=reason)
        elif var.owner is None and not isinstance(var, Constant) and var not in self.variables:
            raise MissingInputError("%s is needed to compute the outputs but is not an input of the "
                                    "graph (pass it in the inputs list, or give it a value)" % (var,))
        self._setup_var(var)

    def import_node(self, node, reason=None):
        for new_node in io_toposort(self.variables, node.outputs):
            if new_node in self.apply_nodes:
                continue
            for v in new_node.inputs:
                self.import_var(v, reason=reason)
            self.apply_nodes.add(new_node)
            for v in new_node.outputs:
                self._setup_var(v)
            for i, v in enumerate(new_node.inputs):
                self.clients[v].append((new_node, i))
            self.execute_callbacks("on_import", new_node, reason)

    # ---- editing

    def change_node_input(self, node, i, new_var, reason=None):
        """Make input ``i`` of ``node`` (or graph output ``i`` if node == "output") be ``new_var``."""
        if node == "output":
            old = self.outputs[i]
            if old.type.convert_variable(new_var) is None:
                raise TypeError("cannot replace output %s of type %s with %s of type %s"
                                % (old, old.type, new_var, new_var.type))
            self.outputs[i] = new_var
        else:
            old = node.inputs[i]
            if old.type.convert_variable(new_var) is None:
                raise TypeError("cannot replace input %d of %s (type %s) with %s of type %s"
                                % (i, node.op, old.type, new_var, new_var.type))
            node.inputs[i] = new_var
        if old is new_var:
            return
        self.import_var(new_var, reason=reason)
        self.clients[new_var].append((node, i))
        self.clients[old].remove((node, i))
        self.execute_callbacks("on_change_input", node, i, old, new_var, reason)
        self._prune_if_unused(old, reason)

    change_input = change_node_input  # Theano's name

    def replace(self, var, new_var, reason=None, verbose=None, import_missing=False):
        """Make every client of ``var`` use ``new_var`` instead."""
        if var not in self.variables:
            raise ValueError("cannot replace %s: it is not in this graph" % (var,))
        if var.type != new_var.type:
            converted = var.type.convert_variable(new_var)
            if converted is None:
                raise TypeError("cannot replace %s (type %s) with %s (type %s)"
                                % (var, var.type, new_var, new_var.type))
            new_var = converted
        for node, i in list(self.clients[var]):
            self.change_node_input(node, i, new_var, reason=reason)

    def replace_all(self, pairs, reason=None):
        for var, new_var in pairs:
            self.replace(var, new_var, reason=reason)

    def _prune_if_unused(self, var, reason):
        stack = [var]
        while stack:
            v = stack.pop()
            if self.clients.get(v) or v in self.inputs:
                continue
            node = v.owner
            if node is None:
                self.variables.discard(v)
                self.clients.pop(v, None)
                continue
            if node not in self.apply_nodes or any(self.clients.get(o) for o in node.outputs):
                continue
            self.apply_nodes.discard(node)
            for o in node.outputs:
                self.variables.discard(o)
                self.clients.pop(o, None)
            self.execute_callbacks("on_prune", node, reason)
            for i, inp in enumerate(node.inputs):
                self.clients[inp].remove((node, i))
                stack.append(inp)

    # ---- features

    def attach_feature(self, feature):
        if feature in self._features:
            return
        attach = getattr(feature, "on_attach", None)
        if attach is not None:
            attach(self)
        self._features.append(feature)

    def remove_feature(self, feature):
        self._features.remove(feature)
        detach = getattr(feature, "on_detach", None)
        if detach is not None:
            detach(self)

    def feature(self, cls):
        """The attached feature of class ``cls``, attaching a new one if there is none."""
        for f in self._features:
            if isinstance(f, cls):
                return f
        feature = cls()
        self.attach_feature(feature)
        return feature

    @property
    def features(self):
        return list(self._features)

    def execute_callbacks(self, name, *args):
        for feature in self._features:
            fn = getattr(feature, name, None)
            if fn is not None:
                fn(self, *args)

    def validate(self):
        for feature in self._features:
            fn = getattr(feature, "validate", None)
            if fn is not None:
                fn(self)
        return True

    # ---- reading

    def toposort(self):
        return io_toposort(self.inputs, self.outputs)

    def clone(self, check_integrity=True):
        fg, _ = self.clone_get_equiv(check_integrity)
        return fg

    def clone_get_equiv(self, check_integrity=True):
        equiv = clone_get_equiv(self.inputs, self.outputs, copy_inputs=True)
        fg = FunctionGraph([equiv[v] for v in self.inputs], [equiv[v] for v in self.outputs], clone=False)
        if check_integrity:
            fg.check_integrity()
        return fg, equiv

    def check_integrity(self):
        nodes = set(self.toposort())
        if nodes != self.apply_nodes:
            raise InconsistencyError("apply_nodes differs from the nodes between inputs and outputs")
        for node in nodes:
            for i, v in enumerate(node.inputs):
                if (node, i) not in self.clients.get(v, ()):
                    raise InconsistencyError("%s is missing client (%s, %d)" % (v, node.op, i))
        for i, v in enumerate(self.outputs):
            if ("output", i) not in self.clients.get(v, ()):
                raise InconsistencyError("output %d (%s) is missing its client entry" % (i, v))

    def __str__(self):
        return "FunctionGraph(%s)" % ", ".join(map(str, self.outputs))


class MissingInputError(ValueError):
    """An output depends on a variable that is neither an input nor a constant."""


__all__ = ["Apply", "Variable", "Feature", "FunctionGraph", "InconsistencyError", "MissingInputError"]

"""``FunctionGraph``: a graph with fixed inputs and outputs that rewrites edit in place.

It tracks the clients of every variable and tells attached features about
each change (import, prune, change of an input), so that rewrites and checks
see one consistent graph. It refuses a change that would make the graph
cyclic (``CycleError``): a cycle has no order to run in, and a toposort of it
quietly runs some node before the value it reads.
"""
from __future__ import annotations

from ffigraph.graph.basic import Apply, Constant, Variable, clone_get_equiv, io_toposort


class InconsistencyError(Exception):
    """A feature refused a change (raised from ``validate`` or a callback)."""


class CycleError(InconsistencyError):
    """A replacement would make a node read a value computed from its own output: the rewrite
    that asked for it (named in the message) is wrong, and the graph is left as it was."""


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

    Every node has a level, greater than the levels of the nodes it reads (not necessarily the
    least such). A node can only be reached from nodes of lower levels, so the cycle check of a
    replacement searches upwards from the new value through the nodes above the client's level
    only: the new nodes and the few old ones between, not the whole graph.
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
        self._level = {}
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
            self._level[new_node] = 1 + max([self._level.get(v.owner, 0) for v in new_node.inputs], default=0)
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
            if old is not new_var:
                self._refuse_cycle(node, i, new_var, reason)
            node.inputs[i] = new_var
        if old is new_var:
            return
        self.import_var(new_var, reason=reason)
        if new_var.owner is not None and node in self._level:
            self._raise_level(node, self._level[new_var.owner] + 1)
        self.clients[new_var].append((node, i))
        self.clients[old].remove((node, i))
        self.execute_callbacks("on_change_input", node, i, old, new_var, reason)
        self._prune_if_unused(old, reason)

    change_input = change_node_input  # Theano's name

    def _refuse_cycle(self, node, i, new_var, reason):
        """Raise CycleError when ``new_var`` is computed from ``node`` (in the graph or through the
        new nodes it brings): ``node`` would read its own output."""
        floor = self._level.get(node)
        if floor is None:
            return   # not a node of this graph (yet): nothing in the graph reads it
        seen, stack = set(), [new_var]
        while stack:
            owner = stack.pop().owner
            if owner is None or owner in seen:
                continue
            if owner is node:
                raise CycleError(
                    "%s: making input %d of %s read %s would make the graph cyclic (that value is "
                    "computed from the node's own output); the replacement is refused"
                    % (reason or "(unnamed rewrite)", i, _short(node), _short(new_var)))
            seen.add(owner)
            level = self._level.get(owner) if owner in self.apply_nodes else None
            if level is None or level > floor:   # new, or high enough to lie below node
                stack.extend(owner.inputs)

    def _raise_level(self, node, level):
        """Keep every node's level above its inputs' after ``node`` reads from a higher node."""
        stack = [(node, level)]
        while stack:
            node, level = stack.pop()
            if self._level[node] >= level:
                continue
            self._level[node] = level
            for out in node.outputs:
                stack.extend((client, level + 1) for client, _ in self.clients[out] if client != "output")

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
            self._level.pop(node, None)
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


def _short(item, limit=200):
    """A node's or variable's text for a message, cut to ``limit`` characters."""
    text = str(item)
    return text if len(text) <= limit else text[:limit - 3] + "..."


class MissingInputError(ValueError):
    """An output depends on a variable that is neither an input nor a constant."""


__all__ = ["Apply", "Variable", "CycleError", "Feature", "FunctionGraph", "InconsistencyError",
           "MissingInputError"]

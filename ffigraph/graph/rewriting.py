"""Graph rewrites: the database modes query, node rewriters, and the loop that applies them.

A *graph rewrite* is any callable taking a FunctionGraph and editing it in
place. The database keeps them under a unique name, tags and a position; a
mode asks with a query over tags (``include``, ``exclude``, ``require``) and
gets them ordered by position, then name, so the same query always runs the
same rewrites in the same order.

A *node rewriter* looks at one Apply node and proposes replacements for its
outputs (PyTensor's ``node_rewriter``). An ``EquilibriumRewriter`` applies a
set of them over the whole graph until none fires. Every change goes through
``FunctionGraph.replace``, so attached features see it; a replacement a
feature refuses (``validate`` raises) is undone.
"""
from __future__ import annotations

import logging

from ffigraph.graph.fg import Feature, InconsistencyError
from ffigraph.graph.utils import copy_stack_trace

_log = logging.getLogger("ffigraph.rewriting")


class RewriteDatabase:
    def __init__(self):
        self._entries = {}

    def register(self, name, rewrite, *tags, position=50.0):
        if name in self._entries:
            raise ValueError("a rewrite named %r is already registered" % name)
        if not callable(rewrite):
            raise TypeError("rewrite %r must be callable on a FunctionGraph" % name)
        self._entries[name] = (float(position), rewrite, frozenset(tags) | {name})

    def __contains__(self, name):
        return name in self._entries

    def names(self):
        return list(self._entries)

    def __getitem__(self, name):
        return self._entries[name][1]

    def tags_of(self, name):
        return self._entries[name][2]

    def position_of(self, name):
        return self._entries[name][0]

    def query(self, include=(), exclude=(), require=(), position_cutoff=None):
        """The (name, rewrite) pairs tagged with any of ``include`` and all of ``require``, minus ``exclude``;
        with ``position_cutoff``, only those at that position or before (PyTensor's query field)."""
        include, exclude, require = set(include), set(exclude), set(require)
        picked = [
            (pos, name, rw) for name, (pos, rw, tags) in self._entries.items()
            if tags & include and not tags & exclude and require <= tags
            and (position_cutoff is None or pos <= position_cutoff)
        ]
        return [(name, rw) for pos, name, rw in sorted(picked, key=lambda e: (e[0], e[1]))]


optdb = RewriteDatabase()


# ------------------------------------------------------------------ node rewriters


class NodeRewriter:
    """Proposes replacements for one node's outputs.

    ``tracks``: the Op classes (or Op instances) whose nodes it looks at; None
    for every node. ``transform`` returns None/False (no change), a list with
    one replacement per output, or a dict {old variable: new variable}.
    """

    def __init__(self, fn, tracks=None, name=None):
        self.fn = fn
        self.tracks = tuple(tracks) if tracks is not None else None
        self.name = name or fn.__name__

    def applies_to(self, op):
        if self.tracks is None:
            return True
        for t in self.tracks:
            if (isinstance(t, type) and isinstance(op, t)) or t == op:
                return True
        return False

    def transform(self, fgraph, node):
        return self.fn(fgraph, node)

    def __call__(self, fgraph, node):
        return self.transform(fgraph, node)

    def __repr__(self):
        return "NodeRewriter(%s)" % self.name


def node_rewriter(tracks=None, name=None):
    """Decorator: ``@node_rewriter([Elemwise])`` turns ``fn(fgraph, node)`` into a NodeRewriter."""
    def wrap(fn):
        return NodeRewriter(fn, tracks, name)
    return wrap


class History(Feature):
    """Records input changes so a refused replacement can be undone."""

    def __init__(self):
        self.log = None

    def on_change_input(self, fgraph, node, i, old_var, new_var, reason):
        if self.log is not None:
            self.log.append((node, i, old_var))

    def checkpoint(self):
        self.log = []

    def revert(self, fgraph):
        log, self.log = self.log, None
        for node, i, old_var in reversed(log):
            fgraph.change_node_input(node, i, old_var, reason="revert")

    def commit(self):
        self.log = None


def replace_all_validate(fgraph, pairs, reason=None, group=None):
    """Apply the (old, new) replacements; if a feature refuses the result, undo them and return False.

    Every rewrite goes through here, so this is where a change is logged (DEBUG on
    ``ffigraph.rewriting``): ``reason`` names the rewrite, ``group`` the rewriter running it.
    """
    history = fgraph.feature(History)
    history.checkpoint()
    # decided once: with DEBUG off nothing is collected or formatted (str(node) walks its inputs)
    done = [] if _log.isEnabledFor(logging.DEBUG) else None
    try:
        for old, new in pairs:
            if old is not new and old in fgraph.variables:
                # the nodes a rewrite made carry the trace of what they replace (PyTensor's
                # copy_stack_trace), so errors still name the user's line
                copy_stack_trace(old, new, stop=fgraph.variables)
                fgraph.replace(old, new, reason=reason)
                if done is not None:
                    done.append((old, new))
        fgraph.validate()
    except InconsistencyError as why:
        history.revert(fgraph)
        if done:
            _log.debug("%s: refused, undone (%s)", _label(reason, group), why)
        return False
    history.commit()
    if done:
        _log.debug("%s replaced %s with %s", _label(reason, group),
                   _describe(old for old, _ in done), _describe(new for _, new in done))
    return True


def _label(reason, group):
    reason = reason or "(unnamed rewrite)"
    return "%s: %s" % (group, reason) if group else reason


def _describe(variables):
    """The nodes computing ``variables`` (a constant or input as itself), each once, in order."""
    seen = []
    for var in variables:
        item = var.owner if var.owner is not None else var
        if not any(item is s for s in seen):
            seen.append(item)
    return str(seen[0]) if len(seen) == 1 else "[%s]" % ", ".join(str(s) for s in seen)


def _as_pairs(node, result):
    if isinstance(result, dict):
        return list(result.items())
    result = list(result)
    if len(result) != len(node.outputs):
        raise ValueError("a node rewriter returned %d replacements for %d outputs of %s"
                         % (len(result), len(node.outputs), node.op))
    return [(o, n) for o, n in zip(node.outputs, result) if n is not None]


def _checked(pairs, rewriter, node):
    """Replacements must keep each variable's type (dtype and ndim); a rewriter bug fails loudly."""
    out = []
    for old, new in pairs:
        converted = old.type.convert_variable(new)
        if converted is None:
            raise TypeError("rewrite %s proposed %s of type %s to replace %s of type %s (in %s)"
                            % (rewriter.name, new, new.type, old, old.type, node))
        out.append((old, converted))
    return out


class EquilibriumRewriter:
    """Applies node rewriters over the graph, in topological order, until nothing changes.

    ``max_passes`` bounds the loop so that two rewrites undoing each other
    cannot spin forever; reaching it is logged, and the graph stays valid.
    """

    def __init__(self, name, max_passes=50):
        self.name = name
        self.max_passes = max_passes
        self.rewriters = RewriteDatabase()

    def register(self, rewriter, *tags, position=50.0):
        self.rewriters.register(rewriter.name, rewriter, *tags, position=position)
        return rewriter

    def active(self, exclude=()):
        """The node rewriters in order, minus those named or tagged in ``exclude``."""
        return [rw for _, rw in self.rewriters.query(include=self.rewriters.names(), exclude=exclude)]

    def __call__(self, fgraph, exclude=()):
        rewriters = self.active(exclude)
        for _ in range(self.max_passes):
            if not self._one_pass(fgraph, rewriters):
                return fgraph
        _log.info("%s stopped after %d passes without reaching a fixed point", self.name, self.max_passes)
        return fgraph

    def _one_pass(self, fgraph, rewriters):
        changed = False
        for node in fgraph.toposort():
            if node not in fgraph.apply_nodes:
                continue  # an earlier rewrite in this pass removed it
            for rw in rewriters:
                if not rw.applies_to(node.op):
                    continue
                result = rw.transform(fgraph, node)
                if not result:
                    continue
                pairs = _checked(_as_pairs(node, result), rw, node)
                if replace_all_validate(fgraph, pairs, reason=rw.name, group=self.name):  # logs the change
                    changed = True
                    break
        return changed

    def __repr__(self):
        return "EquilibriumRewriter(%s)" % self.name

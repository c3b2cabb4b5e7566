"""The rewrite database: graph rewrites registered under a unique name, tags and a position.

A mode asks for rewrites with a query over tags (``include``, ``exclude``,
``require``); the result is ordered by position, then name, so the same query
always runs the same rewrites in the same order. A rewrite is any callable
taking a FunctionGraph and editing it in place.
"""
from __future__ import annotations


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

    def query(self, include=(), exclude=(), require=()):
        """The (name, rewrite) pairs tagged with any of ``include`` and all of ``require``, minus ``exclude``."""
        include, exclude, require = set(include), set(exclude), set(require)
        picked = [
            (pos, name, rw) for name, (pos, rw, tags) in self._entries.items()
            if tags & include and not tags & exclude and require <= tags
        ]
        return [(name, rw) for pos, name, rw in sorted(picked, key=lambda e: (e[0], e[1]))]


optdb = RewriteDatabase()

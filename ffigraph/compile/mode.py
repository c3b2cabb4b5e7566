"""``Mode``: which rewrites run (``optimizer``) and which linker builds the function.

Modes and linkers are looked up by name in two registries, as in Theano:
``Mode(linker='py', optimizer='fast_run')``, ``function(..., mode='FAST_RUN')``.
"""
from __future__ import annotations

import logging
import time

from ffigraph.config import config
from ffigraph.graph.rewriting import EquilibriumRewriter, optdb
from ffigraph.linkers.basic import Linker, PerformLinker
from ffigraph.linkers.c import CLinker, CVMLinker, OpWiseCLinker

_log = logging.getLogger("ffigraph.rewriting")  # the phases, beside the rewrites they run

predefined_linkers = {"py": PerformLinker, "c": CLinker, "c|py": OpWiseCLinker, "cvm": CVMLinker}
predefined_modes = {}


def _register(registry, what, name, factory):
    if name in registry:
        raise ValueError("a %s named %r is already registered" % (what, name))
    if not callable(factory):
        raise TypeError("register a class or zero-argument callable for %s %r" % (what, name))
    registry[name] = factory


def register_linker(name, linker_factory):
    """Make ``Mode(linker=name)`` use ``linker_factory()`` (a Linker class or zero-arg callable)."""
    _register(predefined_linkers, "linker", name, linker_factory)


def _make_linker(linker):
    if linker is None:
        linker = config.linker
    if isinstance(linker, Linker):
        return linker
    if isinstance(linker, str):
        if linker not in predefined_linkers:
            raise ValueError("unknown linker %r (known: %s)" % (linker, ", ".join(sorted(predefined_linkers))))
        return predefined_linkers[linker]()
    raise TypeError("linker must be a Linker or a registered name, got %r" % (linker,))


class Mode:
    """A linker plus a rewrite query.

    ``optimizer`` is a tag of the rewrite database (``'fast_run'``), None or
    ``'None'`` for no rewrites, or a callable applied to the FunctionGraph.
    """

    def __init__(self, linker=None, optimizer="default", include=(), exclude=(), require=(), device=None):
        self.linker_spec = linker
        self._linker = _make_linker(linker)
        if optimizer == "default":
            optimizer = config.optimizer
        self.optimizer = optimizer
        self.device = config.device if device is None else device
        if self.device not in ("cpu", "cuda"):
            raise ValueError("Mode(device=...) must be 'cpu' or 'cuda', got %r" % (self.device,))
        self.include, self.exclude, self.require = tuple(include), tuple(exclude), tuple(require)
        if self.device == "cuda" and "gpu" not in self.include:
            self.include += ("gpu",)   # the GPU rewrite moves supported nodes to the device

    @property
    def linker(self):
        return self._linker

    def new_linker(self):
        """A fresh linker of this mode's kind, for one function."""
        if isinstance(self.linker_spec, Linker):
            return self.linker_spec  # Linker.accept makes a copy when it is already bound
        return _make_linker(self.linker_spec)

    def _clone(self, **changes):
        kw = dict(linker=self.linker_spec if self.linker_spec is not None else self._linker,
                  optimizer=self.optimizer, include=self.include, exclude=self.exclude, require=self.require,
                  device=self.device)
        kw.update(changes)
        return Mode(**kw)

    def including(self, *tags):
        return self._clone(include=self.include + tags)

    def excluding(self, *tags):
        return self._clone(exclude=self.exclude + tags)

    def requiring(self, *tags):
        return self._clone(require=self.require + tags)

    def rewrites(self):
        """The (name, rewrite) pairs this mode applies, in order."""
        import ffigraph.rewriting  # noqa: F401  (registers the standard rewrites on first use)

        if self.optimizer is None or self.optimizer == "None":
            tags = set(self.include)
        elif callable(self.optimizer):
            return [("custom", self.optimizer)]
        else:
            tags = {self.optimizer} | set(self.include)
        return optdb.query(include=tags, exclude=self.exclude, require=self.require)

    def optimize(self, fgraph):
        """Apply this mode's rewrites in order; groups of node rewriters also honour ``excluding``."""
        debug = _log.isEnabledFor(logging.DEBUG)
        for name, rewrite in self.rewrites():
            if debug:
                start, before = time.perf_counter(), len(fgraph.apply_nodes)
            if isinstance(rewrite, EquilibriumRewriter):
                rewrite(fgraph, exclude=self.exclude)
            else:
                rewrite(fgraph)
            if debug:
                _log.debug("phase %s: %d -> %d nodes in %.3f s", name, before, len(fgraph.apply_nodes),
                           time.perf_counter() - start)
        return fgraph

    def __str__(self):
        device = ", device=cuda" if self.device == "cuda" else ""
        return "Mode(linker=%s, optimizer=%s%s)" % (getattr(self._linker, "name", self._linker), self.optimizer, device)

    __repr__ = __str__


def get_mode(mode):
    """A Mode from None (``config.mode``), a registered name, or a Mode."""
    if mode is None:
        mode = config.mode
    if isinstance(mode, Mode):
        return mode
    if isinstance(mode, str):
        if mode in predefined_modes:
            return predefined_modes[mode]()
        if mode in predefined_linkers:
            return Mode(linker=mode)
        raise ValueError("unknown mode %r (known: %s)" % (mode, ", ".join(sorted(predefined_modes))))
    raise TypeError("mode must be a Mode or a registered name, got %r" % (mode,))


def register_mode(name, mode_factory):
    """Make ``function(..., mode=name)`` use ``mode_factory()``."""
    _register(predefined_modes, "mode", name, mode_factory)


# Linkers default to config.linker at the time the mode is made, so FFIGRAPH_FLAGS=linker=... applies.
register_mode("FAST_RUN", lambda: Mode(linker=None, optimizer="fast_run"))
register_mode("FAST_COMPILE", lambda: Mode(linker="py", optimizer="fast_compile"))
register_mode("PERFORM", lambda: Mode(linker="py", optimizer="fast_run"))

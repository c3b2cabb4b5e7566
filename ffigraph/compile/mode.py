"""``Mode``: which rewrites run (``optimizer``) and which linker builds the function.

Modes, linkers and optimizers are looked up by name, as in Theano and PyTensor:
``Mode(linker='py', optimizer='fast_run')``, ``function(..., mode='FAST_RUN')``. Unknown names
raise ValueError listing the known ones; nothing falls back silently.
"""
from __future__ import annotations

import logging
import time
from collections import namedtuple
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Tuple, Union

from ffigraph.config import config, register_choice
from ffigraph.graph.rewriting import EquilibriumRewriter, optdb
from ffigraph.linkers import devices
from ffigraph.linkers.basic import Linker, PerformLinker
from ffigraph.linkers.c import CLinker, CVMLinker, OpWiseCLinker

if TYPE_CHECKING:
    from ffigraph.graph.fg import FunctionGraph

    # an optimizer: a name of predefined_optimizers, "default" (config.optimizer), None (no
    # rewrites) or a callable applied to the FunctionGraph
    OptimizerSpec = Union[str, Callable[[FunctionGraph], Any], None]

_log = logging.getLogger("ffigraph.rewriting")  # the phases, beside the rewrites they run

predefined_linkers: Dict[str, Callable[[], Linker]] = {
    "py": PerformLinker, "c": CLinker, "c|py": OpWiseCLinker, "cvm": CVMLinker,
    # Theano's and PyTensor's other names, as the nearest ffigraph linker (docs/tutorial/functions.rst, "Modes and linkers"):
    # vm is their VM with a Python loop over per-node C thunks, which c|py is here; ffigraph has no
    # allow_gc switch (a Python-sequenced linker keeps intermediates until the next call starts, the
    # whole-graph library frees them as the call ends), so a _nogc name is its linker's twin.
    "vm": OpWiseCLinker, "vm_nogc": OpWiseCLinker, "c|py_nogc": OpWiseCLinker, "cvm_nogc": CVMLinker,
}
predefined_modes: Dict[str, Callable[[], Mode]] = {}

# What an optimizer name selects from the rewrite database (PyTensor's RewriteDatabaseQuery):
# rewrites tagged with any of ``include`` and all of ``require``, none of ``exclude``, and, with
# ``cutoff``, none placed after the rewrite of that name.
OptimizerQuery = namedtuple("OptimizerQuery", "include exclude require cutoff")
_OPT_NONE = OptimizerQuery((), (), (), None)
_OPT_FAST_RUN = OptimizerQuery(("fast_run",), (), (), None)
_OPT_FAST_COMPILE = OptimizerQuery(("fast_compile",), (), (), None)
_OPT_O3 = OptimizerQuery(("fast_run",), ("inplace",), (), None)

# PyTensor's names and meanings (pytensor.compile.mode.predefined_optimizers), over ffigraph's
# rewrites; docs/tutorial/rewrites.rst lists what each runs here.
predefined_optimizers: Dict[Optional[str], OptimizerQuery] = {
    None: _OPT_NONE,
    "None": _OPT_NONE,
    "merge": OptimizerQuery(("merge",), (), (), None),
    "fast_run": _OPT_FAST_RUN,
    "o4": _OPT_FAST_RUN,                                                 # PyTensor's default
    "o3": _OPT_O3,                                                       # fast_run without inplace
    "unsafe": _OPT_O3._replace(include=("fast_run", "unsafe")),          # o3 plus rewrites tagged unsafe
    "o2": _OPT_FAST_COMPILE._replace(include=("fast_compile", "fusion")),  # fast_compile plus fusion
    "o1": _OPT_FAST_COMPILE,
    "fast_compile": _OPT_FAST_COMPILE,
    "stabilize": _OPT_FAST_RUN._replace(cutoff="stabilize"),             # fast_run up to stabilize
}


def _register(registry: Dict[str, Any], what: str, name: str, factory: Callable[[], Any]) -> None:
    if name in registry:
        raise ValueError("a %s named %r is already registered" % (what, name))
    if not callable(factory):
        raise TypeError("register a class or zero-argument callable for %s %r" % (what, name))
    registry[name] = factory
    register_choice(what, name)   # config.linker / config.mode accept it from now on


def register_linker(name: str, linker_factory: Callable[[], Linker]) -> None:
    """Make ``Mode(linker=name)`` use ``linker_factory()`` (a Linker class or zero-arg callable)."""
    _register(predefined_linkers, "linker", name, linker_factory)


def _make_linker(linker: Union[str, Linker, None]) -> Linker:
    if linker is None:
        linker = config.linker
    if isinstance(linker, Linker):
        return linker
    if isinstance(linker, str):
        if linker not in predefined_linkers:
            raise ValueError("unknown linker %r (known: %s)"
                             % (linker, ", ".join(map(repr, sorted(predefined_linkers)))))
        return predefined_linkers[linker]()
    raise TypeError("linker must be a Linker or a registered name, got %r" % (linker,))


def _optimizer_query(optimizer: OptimizerSpec,
                     from_config: bool = False) -> Union[OptimizerQuery, Callable[[FunctionGraph], Any]]:
    """The OptimizerQuery an optimizer name stands for, or the callable itself."""
    if optimizer is None or isinstance(optimizer, str):
        query = predefined_optimizers.get(optimizer)
        if query is not None:
            return query
        known = ", ".join(repr(k) for k in sorted(predefined_optimizers, key=lambda k: (k is not None, str(k))))
        message = "unknown optimizer %r (known: %s; or a callable taking the FunctionGraph)" % (optimizer, known)
        if from_config:
            message = "config.optimizer: " + message
        # (a str here: None is a name of predefined_optimizers)
        mode_names = [m for m in predefined_modes if m.upper() == optimizer.upper()]  # type: ignore[union-attr]
        if mode_names:
            message += "; %r is a mode name: pass mode=%r to function()" % (optimizer, mode_names[0])
            if optimizer.lower() in predefined_optimizers:  # type: ignore[union-attr]
                message += ", or optimizer=%r" % (optimizer.lower(),)  # type: ignore[union-attr]
        raise ValueError(message)
    if callable(optimizer):
        return optimizer
    raise TypeError("Mode(optimizer=...) must be an optimizer name, None or a callable taking the "
                    "FunctionGraph, got %r" % (optimizer,))


class Mode:
    """A linker plus a rewrite query.

    ``optimizer`` is one of PyTensor's optimizer names (``predefined_optimizers``:
    ``'fast_run'``, ``'fast_compile'``, ``'merge'``, ``'o1'``..``'o4'``, ``'unsafe'``,
    ``'stabilize'``; None or ``'None'`` for no rewrites), ``'default'`` for
    ``config.optimizer``, or a callable applied to the FunctionGraph. ``linker``
    is a Linker or a name of ``predefined_linkers`` (None: ``config.linker``).
    """

    def __init__(self, linker: Union[str, Linker, None] = None, optimizer: OptimizerSpec = "default",
                 include: Iterable[str] = (), exclude: Iterable[str] = (), require: Iterable[str] = (),
                 device: Optional[str] = None) -> None:
        self.linker_spec = linker
        self._linker = _make_linker(linker)
        from_config = isinstance(optimizer, str) and optimizer == "default"
        if from_config:
            optimizer = config.optimizer
        self._query = _optimizer_query(optimizer, from_config)
        self.optimizer = optimizer
        self.device = config.device if device is None else device
        if self.device not in ("cpu", "cuda"):
            raise ValueError("Mode(device=...) must be 'cpu' or 'cuda', got %r" % (self.device,))
        self.include, self.exclude, self.require = tuple(include), tuple(exclude), tuple(require)
        if self.device == "cuda":
            devices.require("cuda")   # loads the CUDA package, which registers the "gpu" rewrite
            if "gpu" not in self.include:
                self.include += ("gpu",)   # the GPU rewrite moves supported nodes to the device
            if "gemm" not in self.exclude:
                # Gemm and Ger (CPU ops) would keep a product and its update off the device: there the
                # product moves as a Dot and the update as an elementwise kernel
                self.exclude += ("gemm",)

    @property
    def linker(self) -> Linker:
        return self._linker

    def new_linker(self) -> Linker:
        """A fresh linker of this mode's kind, for one function."""
        if isinstance(self.linker_spec, Linker):
            return self.linker_spec  # Linker.accept makes a copy when it is already bound
        return _make_linker(self.linker_spec)

    def _clone(self, **changes: Any) -> Mode:
        kw: Dict[str, Any] = dict(linker=self.linker_spec if self.linker_spec is not None else self._linker,
                                  optimizer=self.optimizer, include=self.include, exclude=self.exclude,
                                  require=self.require, device=self.device)
        kw.update(changes)
        return Mode(**kw)

    def including(self, *tags: str) -> Mode:
        return self._clone(include=self.include + tags)

    def excluding(self, *tags: str) -> Mode:
        return self._clone(exclude=self.exclude + tags)

    def requiring(self, *tags: str) -> Mode:
        return self._clone(require=self.require + tags)

    def rewrites(self) -> List[Tuple[str, Callable[..., Any]]]:
        """The (name, rewrite) pairs this mode applies, in order."""
        import ffigraph.rewriting  # noqa: F401  (registers the standard rewrites on first use)

        query = self._query
        if not isinstance(query, OptimizerQuery):
            return [("custom", query)]
        cutoff = None if query.cutoff is None else optdb.position_of(query.cutoff)
        return optdb.query(include=set(query.include) | set(self.include), exclude=self._excluded(),
                           require=query.require + self.require, position_cutoff=cutoff)

    def _excluded(self) -> Tuple[str, ...]:
        query = self._query
        return (query.exclude if isinstance(query, OptimizerQuery) else ()) + self.exclude

    def optimize(self, fgraph: FunctionGraph) -> FunctionGraph:
        """Apply this mode's rewrites in order; groups of node rewriters also honour ``excluding``."""
        debug = _log.isEnabledFor(logging.DEBUG)
        excluded = self._excluded()
        for name, rewrite in self.rewrites():
            if debug:
                start, before = time.perf_counter(), len(fgraph.apply_nodes)
            if isinstance(rewrite, EquilibriumRewriter):
                rewrite(fgraph, exclude=excluded)
            else:
                rewrite(fgraph)
            if debug:
                _log.debug("phase %s: %d -> %d nodes in %.3f s", name, before, len(fgraph.apply_nodes),
                           time.perf_counter() - start)
        return fgraph

    def __str__(self) -> str:
        device = ", device=cuda" if self.device == "cuda" else ""
        return "Mode(linker=%s, optimizer=%s%s)" % (getattr(self._linker, "name", self._linker), self.optimizer, device)

    __repr__ = __str__


def get_mode(mode: Union[Mode, str, None]) -> Mode:
    """A Mode from None (``config.mode``), a registered name, or a Mode.

    Names are matched exactly, then as a linker name (``'py'``: that linker with
    ``config.optimizer``), then ignoring case, as PyTensor's ``get_mode`` does
    (``'fast_run'``, ``'debugmode'``, ``'mode'``).
    """
    if mode is None:
        mode = config.mode
    if isinstance(mode, Mode):
        return mode
    if isinstance(mode, str):
        if mode in predefined_modes:
            return predefined_modes[mode]()
        if mode in predefined_linkers:
            return Mode(linker=mode)
        same = [name for name in predefined_modes if name.upper() == mode.upper()]
        if len(same) == 1:
            return predefined_modes[same[0]]()
        raise ValueError("unknown mode %r (known, in any case: %s)"
                         % (mode, ", ".join(map(repr, sorted(predefined_modes)))))
    raise TypeError("mode must be a Mode or a registered name, got %r" % (mode,))


def register_mode(name: str, mode_factory: Callable[[], Mode]) -> None:
    """Make ``function(..., mode=name)`` use ``mode_factory()``."""
    _register(predefined_modes, "mode", name, mode_factory)


# Linkers default to config.linker at the time the mode is made, so FFIGRAPH_FLAGS=linker=... applies.
# "Mode" (config.mode's default, as in PyTensor) takes both config.linker and config.optimizer;
# FAST_RUN fixes the rewrites to fast_run and keeps config.linker, as PyTensor's get_mode does.
register_mode("Mode", lambda: Mode(linker=None, optimizer="default"))
register_mode("FAST_RUN", lambda: Mode(linker=None, optimizer="fast_run"))
register_mode("FAST_COMPILE", lambda: Mode(linker="py", optimizer="fast_compile"))
register_mode("C", lambda: Mode(linker="c", optimizer="fast_run"))
register_mode("CVM", lambda: Mode(linker="cvm", optimizer="fast_run"))
register_mode("PERFORM", lambda: Mode(linker="py", optimizer="fast_run"))

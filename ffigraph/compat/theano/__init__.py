"""One switch for ``import theano``: Theano's module paths, resolved to ffigraph's objects.

>>> import ffigraph.compat.theano
>>> ffigraph.compat.theano.install()
>>> import theano
>>> import theano.tensor as T
>>> T.dmatrix is ffigraph.tensor.dmatrix and theano.function is ffigraph.function
True
>>> ffigraph.compat.theano.uninstall()

``install()`` puts a finder first on ``sys.meta_path``. Each Theano module named in ``MODULES``
becomes a real module object in ``sys.modules`` (a ``TheanoModule``) whose attribute lookup
forwards, at each lookup, to the ffigraph modules of the same meaning, so a name ffigraph gains
later appears here too. A name none of them has is an ``AttributeError`` (``from theano.x import
name``: a ``ModuleNotFoundError``, an ``ImportError``) saying "theano.x.name is not implemented in
ffigraph"; so is a Theano module ffigraph has no counterpart of. Nothing stands in silently.

``python -m ffigraph.compat.theano script.py [args]`` runs a script with the switch on
(``__main__.py``). docs/tutorial/theano.rst ("Running Theano code") has the table of what maps
where, which ``tests/compat/test_theano.py`` keeps equal to ``MODULES``.

This package is opt-in: ``import ffigraph`` never imports it (.importlinter: the top layer, which
nothing imports).
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

# (importing an ffigraph module runs the package root first, which wires the layers together; the
# modules ``theano`` forwards to are imported by name when first looked up, see ``_load``)
import ffigraph.graph.basic  # noqa: F401

__all__ = ["install", "uninstall", "installed", "MODULES", "FALLBACKS", "Only", "TheanoModule",
           "RealTheanoImportedError"]


class Only:
    """A view of an ffigraph module limited to some names: a Theano module whose names ffigraph
    keeps in a bigger module (``theano.scan_module.scan_utils`` -> ``equal_computations`` of ``ffigraph.graph.compare``)."""

    def __init__(self, module: str, *names: str) -> None:
        self.module = module
        self.names = frozenset(names)

    def __repr__(self) -> str:
        return "%s (%s)" % (self.module, ", ".join(sorted(self.names)))


Target = Union[str, Only]

# Theano module -> the ffigraph modules its names are looked up in, first first. None: ffigraph has
# no module of that meaning (importing it is the "not implemented" ModuleNotFoundError). A Theano
# module not in this table is not implemented either; the entries with None list what a Theano
# program commonly imports and will not find.
MODULES: Dict[str, Optional[Tuple[Target, ...]]] = {
    "theano": ("ffigraph",),
    "theano.tensor": ("ffigraph.tensor",),
    # Theano's tensor.basic held most of theano.tensor (dot, sum, as_tensor_variable, TensorType...)
    "theano.tensor.basic": ("ffigraph.tensor",),
    "theano.tensor.nnet": ("ffigraph.tensor.nnet",),
    "theano.tensor.nnet.nnet": ("ffigraph.tensor.nnet",),
    "theano.tensor.nnet.sigm": ("ffigraph.tensor.nnet",),
    "theano.tensor.nnet.conv": ("ffigraph.tensor.nnet.conv",),
    "theano.tensor.nnet.abstract_conv": ("ffigraph.tensor.nnet.abstract_conv",),
    "theano.tensor.nnet.bn": ("ffigraph.tensor.nnet.bn",),
    "theano.tensor.nnet.neighbours": ("ffigraph.tensor.nnet.neighbours",),
    "theano.tensor.signal": ("ffigraph.tensor.signal",),
    "theano.tensor.signal.pool": ("ffigraph.tensor.signal.pool",),
    "theano.tensor.signal.conv": None,
    "theano.tensor.shared_randomstreams": ("ffigraph.tensor.shared_randomstreams",),
    "theano.tensor.extra_ops": ("ffigraph.tensor.extra_ops",),
    "theano.tensor.nlinalg": ("ffigraph.tensor.nlinalg",),
    "theano.tensor.slinalg": ("ffigraph.tensor.slinalg",),
    "theano.tensor.xlogx": ("ffigraph.tensor.xlogx",),
    "theano.tensor.elemwise": ("ffigraph.tensor.elemwise",),
    "theano.tensor.type": ("ffigraph.tensor.type",),
    "theano.tensor.var": ("ffigraph.tensor.variable",),
    "theano.tensor.sharedvar": ("ffigraph.compile.sharedvalue",),
    "theano.tensor.subtensor": ("ffigraph.tensor.subtensor", "ffigraph.tensor.advanced_subtensor"),
    "theano.tensor.sort": ("ffigraph.tensor.sort",),
    "theano.tensor.blas": ("ffigraph.tensor.blas",),
    "theano.tensor.opt": None,
    "theano.sandbox": ("ffigraph.sandbox",),
    "theano.sandbox.rng_mrg": ("ffigraph.sandbox.rng_mrg",),
    "theano.sandbox.cuda": None,
    "theano.gpuarray": None,
    "theano.sparse": None,
    "theano.scalar": ("ffigraph.scalar",),
    "theano.scalar.basic": ("ffigraph.scalar", "ffigraph.scalar.type", "ffigraph.scalar.composite"),
    "theano.scalar.basic_scipy": ("ffigraph.scalar.math",),
    "theano.gof": ("ffigraph.graph", Only("ffigraph.graph.c_interface", "COp", "MethodNotDefined")),
    "theano.gof.graph": ("ffigraph.graph.basic", Only("ffigraph.graph.compare", "is_same_graph", "equal_computations")),
    "theano.gof.fg": ("ffigraph.graph.fg",),
    "theano.gof.op": ("ffigraph.graph.op", Only("ffigraph.graph.c_interface", "COp")),
    "theano.gof.type": ("ffigraph.graph.type",),
    "theano.gof.utils": ("ffigraph.graph.utils", Only("ffigraph.graph.c_interface", "MethodNotDefined")),
    "theano.gof.opt": None,
    "theano.printing": ("ffigraph.printing",),
    "theano.gradient": ("ffigraph.gradient",),
    "theano.ifelse": ("ffigraph.ifelse",),
    "theano.scan_module": ("ffigraph.scan_module", "ffigraph.scan"),
    "theano.scan_module.scan": ("ffigraph.scan.basic",),
    "theano.scan_module.scan_op": ("ffigraph.scan.op",),
    "theano.scan_module.scan_utils": ("ffigraph.scan.utils", Only("ffigraph.graph.compare", "equal_computations")),
    # Theano-PyMC's path of the scan package (in Theano 1.0 ``theano.scan`` is only the function)
    "theano.scan": ("ffigraph.scan",),
    "theano.compile": ("ffigraph.compile",),
    "theano.compile.function": ("ffigraph.compile.function",),
    "theano.compile.function_module": ("ffigraph.compile.function",),
    "theano.compile.io": ("ffigraph.compile.io",),
    "theano.compile.mode": ("ffigraph.compile.mode",),
    "theano.compile.sharedvalue": ("ffigraph.compile.sharedvalue",),
    "theano.compile.debugmode": ("ffigraph.compile.debugmode",),
    "theano.compile.nanguardmode": ("ffigraph.compile.nanguardmode",),
    "theano.compile.monitormode": ("ffigraph.compile.monitormode",),
    "theano.compile.ops": ("ffigraph.compile.ops",),
    "theano.compile.builders": ("ffigraph.compile.builders",),
    "theano.typed_list": ("ffigraph.typed_list",),
    "theano.d3viz": ("ffigraph.d3viz",),
    "theano.misc": ("ffigraph.misc",),
    "theano.misc.pkl_utils": ("ffigraph.misc.pkl_utils",),
    "theano.compile.profiling": ("ffigraph.compile.profiling",),
}

# Names a Theano module has that ffigraph keeps under another module or name: used only when the
# module's targets (MODULES) lack the name, so ffigraph's own, once it has one, comes first.
# "module:name" is looked up at each use.
FALLBACKS: Dict[str, Dict[str, str]] = {
    "theano": {
        "map": "ffigraph.scan:map",
        "reduce": "ffigraph.scan:reduce",
        "dot": "ffigraph.tensor:dot",
        "ProfileStats": "ffigraph.compile.profiling:ProfileStats",
    },
    "theano.gof.graph": {
        "inputs": "ffigraph.graph.basic:graph_inputs",
    },
    "theano.compile": {
        "ProfileStats": "ffigraph.compile.profiling:ProfileStats",
    },
}


class RealTheanoImportedError(RuntimeError):
    """``install()`` found a real Theano already imported in this process."""


def _not_implemented(name: str, detail: str = "") -> str:
    return "%s is not implemented in ffigraph%s" % (name, detail)


def _missing_module(exc: ModuleNotFoundError, module: str) -> bool:
    """True when ``exc`` says ``module`` itself (or a package above it) does not exist, not that
    something it imports failed."""
    missing = exc.name or ""
    return missing == module or module.startswith(missing + ".")


_AVAILABLE: Dict[str, Optional[types.ModuleType]] = {}


def _load(module: str) -> Optional[types.ModuleType]:
    """The ffigraph module ``module``, or None when ffigraph has no such module (remembered: the
    modules of a running ffigraph do not come and go; their names may)."""
    if module not in _AVAILABLE:
        try:
            _AVAILABLE[module] = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if not _missing_module(exc, module):
                raise
            _AVAILABLE[module] = None
    return _AVAILABLE[module]


def _targets(theano_name: str) -> List[Tuple[types.ModuleType, Optional[frozenset]]]:
    """(ffigraph module, the names it is limited to or None) for each target that exists."""
    found: List[Tuple[types.ModuleType, Optional[frozenset]]] = []
    for target in MODULES.get(theano_name) or ():
        module = _load(target.module if isinstance(target, Only) else target)
        if module is None:
            continue
        if isinstance(target, Only):
            if not any(hasattr(module, name) for name in target.names):
                continue
            found.append((module, target.names))
        else:
            found.append((module, None))
    return found


def _target_text(theano_name: str) -> str:
    targets = MODULES.get(theano_name)
    return ", ".join(str(t) for t in targets) if targets else "none"


def _module_detail(theano_name: str) -> str:
    if MODULES.get(theano_name) is None:
        return " (ffigraph has no module of its meaning)"
    return " (ffigraph has none of %s)" % _target_text(theano_name)


def _resolve_fallback(where: str) -> Any:
    module_name, _, name = where.partition(":")
    if module_name == "compat":
        return globals()[name]
    module = _load(module_name)
    if module is None:
        raise AttributeError(where)
    return getattr(module, name)


def _is_theano(name: str) -> bool:
    return name == "theano" or name.startswith("theano.")


class TheanoModule(types.ModuleType):
    """A Theano module path (``theano.tensor``, ...) whose attributes are those of the ffigraph
    modules of the same meaning (``__ffigraph__`` names them), looked up at each access."""

    def __init__(self, name: str) -> None:
        super().__init__(name, "Theano's ``%s``, resolved by ffigraph.compat.theano to %s."
                         % (name, _target_text(name)))
        self.__dict__["__ffigraph__"] = tuple(str(t) for t in MODULES.get(name) or ())

    def __repr__(self) -> str:
        return "<module %r (ffigraph.compat.theano: %s)>" % (self.__name__, _target_text(self.__name__))

    def _lookup(self, name: str) -> Tuple[bool, Any]:
        """(found, value) of ``name`` in this module's ffigraph targets, then its fallbacks."""
        here = self.__name__
        submodule = here + "." + name
        for module, names in _targets(here):
            if names is not None and name not in names:
                continue
            try:
                value = getattr(module, name)
            except AttributeError:
                continue
            if isinstance(value, types.ModuleType) and submodule in MODULES:
                return True, importlib.import_module(submodule)
            return True, value
        if submodule in MODULES:
            if not _targets(submodule):
                return False, None   # a Theano module ffigraph has no counterpart of
            return True, importlib.import_module(submodule)
        where = FALLBACKS.get(here, {}).get(name)
        if where is not None:
            try:
                return True, _resolve_fallback(where)
            except AttributeError:
                pass
        return False, None

    def _shadows(self, name: str) -> bool:
        """True when ``name`` is an object, not a module, in a target: Theano's own layout, where
        ``theano.scan`` (the function) and ``theano.tensor.var`` (the variance) hide the modules of
        the same name (which stay importable from sys.modules)."""
        for module, names in _targets(self.__name__):
            if names is not None and name not in names:
                continue
            value = getattr(module, name, None)
            if value is not None:
                return not isinstance(value, types.ModuleType)
        return False

    def __getattr__(self, name: str) -> Any:
        if name == "__all__":
            return self._all()
        if name == "__version__":
            raise AttributeError(_not_implemented(self.__name__ + ".__version__",
                                                  " (ffigraph.__version__ is ffigraph's own, not a Theano version)"))
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError("module %r has no attribute %r" % (self.__name__, name))
        found, value = self._lookup(name)
        if found:
            return value
        submodule = "%s.%s" % (self.__name__, name)
        if submodule in MODULES:
            raise AttributeError(_not_implemented(submodule, _module_detail(submodule)))
        raise AttributeError(_not_implemented(submodule, " (looked up in %s)" % _target_text(self.__name__)))

    def __setattr__(self, name: str, value: Any) -> None:
        # The import system sets each imported submodule on its parent; where Theano's name is an
        # object (theano.scan the function), the object stays what the attribute gives.
        if isinstance(value, TheanoModule) and value.__name__ == self.__name__ + "." + name \
                and self._shadows(name):
            return
        super().__setattr__(name, value)

    def _all(self) -> List[str]:
        names: List[str] = []
        for module, limit in _targets(self.__name__):
            public = getattr(module, "__all__", None)
            if public is None:
                public = [n for n in dir(module) if not n.startswith("_")]
            names.extend(n for n in public if (limit is None or n in limit) and n not in names)
        return names

    def __dir__(self) -> List[str]:
        names = set(self.__dict__)
        for module, limit in _targets(self.__name__):
            names.update(n for n in dir(module) if limit is None or n in limit)
        prefix = self.__name__ + "."
        names.update(m[len(prefix):] for m in MODULES
                     if m.startswith(prefix) and "." not in m[len(prefix):] and _targets(m))
        names.update(FALLBACKS.get(self.__name__, ()))
        return sorted(names)


class _Loader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return TheanoModule(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        pass   # the module forwards every lookup; nothing to run


class _Finder(importlib.abc.MetaPathFinder):
    """Answers for ``theano`` and every ``theano.*`` while installed (first on sys.meta_path)."""

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None,
                  target: Optional[types.ModuleType] = None) -> Optional[importlib.machinery.ModuleSpec]:
        if not _is_theano(fullname):
            return None
        if fullname in MODULES:
            if not _targets(fullname):
                raise ModuleNotFoundError(_not_implemented(fullname, _module_detail(fullname)))
            return importlib.machinery.ModuleSpec(fullname, _LOADER, is_package=True)
        parent, _, leaf = fullname.rpartition(".")
        owner = sys.modules.get(parent)
        if isinstance(owner, TheanoModule) and owner._lookup(leaf)[0]:
            return None   # a name of the module, not a module: Python's own "No module named"
        # (no ``name=``: ``from theano.x import y`` then shows this message, not a generic one)
        raise ModuleNotFoundError(_not_implemented(
            fullname, " (neither a name of %s nor a module ffigraph.compat.theano maps)" % _target_text(parent)))


_LOADER = _Loader()
_FINDER = _Finder()


def _foreign_theano() -> List[str]:
    return sorted(name for name, module in list(sys.modules.items())
                  if _is_theano(name) and module is not None and not isinstance(module, TheanoModule))


def install() -> None:
    """Make ``import theano`` (and the submodules in ``MODULES``) resolve to ffigraph.

    Raises ``RealTheanoImportedError`` when a real Theano is already imported in this process
    (the two cannot share the name). Installing again is harmless.
    """
    foreign = _foreign_theano()
    if foreign:
        first = sys.modules[foreign[0]]
        raise RealTheanoImportedError(
            "ffigraph.compat.theano.install(): a real Theano is already imported (sys.modules[%r] is %r%s); "
            "ffigraph cannot answer for 'import theano' in this process. Install before anything imports "
            "theano, or run the script with 'python -m ffigraph.compat.theano script.py'."
            % (foreign[0], first, "" if len(foreign) == 1 else ", and %d more theano.* modules" % (len(foreign) - 1)))
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def uninstall() -> None:
    """Undo ``install()``: the finder leaves sys.meta_path and the ``theano`` modules it made leave
    sys.modules (objects already holding them keep working; a new ``import theano`` finds whatever
    else is there). Harmless when not installed."""
    while _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    for name, module in list(sys.modules.items()):
        if isinstance(module, TheanoModule):
            del sys.modules[name]


def installed() -> bool:
    """True while ``install()`` is in effect."""
    return _FINDER in sys.meta_path


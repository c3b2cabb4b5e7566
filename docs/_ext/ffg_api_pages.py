"""Sphinx extension: one API reference page per module of the package, written at build time.

Before Sphinx reads the sources, ``docs/reference/api/<module>.rst`` is written for every public
module of ffigraph (found by walking the package; a module whose name has a part starting with
``_`` is private), each holding ``.. automodule::`` with its members. docs/reference/api.rst lists
them with a glob toctree. (autosummary's recursion is not used: it takes a module for the
function of the same name that its package imports, ``ffigraph.compile.function`` say, and then
documents the function instead of the module.)

The packages users import names from, ``ffigraph`` and ``ffigraph.tensor`` (``PACKAGES``), get
more than their docstring: an entry for every name of their ``__all__``, so that
``ffigraph.tensor.dscalar`` or ``ffigraph.tensor.pi`` has a target as ``ffigraph.tensor.exp``
does (docs/reference/tensor_names.rst links every name to it). Functions and classes are
documented from their docstrings (classes without their members, which the defining module's
page holds, and not indexed, so that a class has one target: ffg_aliases sends
``ffigraph.tensor.TensorType`` to it); other objects (``TensorType`` instances, constants) as
data, by type and value. A name that is also a submodule's (``ffigraph.tensor.sort``) keeps its
module's target, and its entry is not indexed: ``entry_target`` gives the definition to link to.
"""
import importlib
import inspect
import os
import pkgutil

DOCS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(DOCS, "reference", "api")


def public_modules(package="ffigraph"):
    """Every public module of ``package``, the package itself first, in name order."""
    root = importlib.import_module(package)
    names = [package] + [info.name for info in pkgutil.walk_packages(root.__path__, package + ".")]
    return sorted(n for n in names if not any(part.startswith("_") for part in n.split(".")))


PACKAGES = ("ffigraph", "ffigraph.tensor")


def _submodules(package):
    root = importlib.import_module(package)
    return {info.name for info in pkgutil.iter_modules(root.__path__, package + ".")}


def entry_target(package, name):
    """The Python object name that ``package.name`` links to: its entry on the package's page, or,
    for a name that is also a submodule's, the object's own module and qualified name."""
    target = "%s.%s" % (package, name)
    if target not in _submodules(package):
        return target
    obj = getattr(importlib.import_module(package), name)
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if module and qualname and "<" not in qualname:
        return "%s.%s" % (module, qualname)
    return target   # (the submodule's page)


def _short_repr(obj, limit=70):
    text = repr(obj)
    return text if len(text) <= limit and "\n" not in text else text.splitlines()[0][:limit - 3] + "..."


def _entry(package, name, obj, shadowed):
    full = "%s.%s" % (package, name)
    no_index = ["   :no-index:"] if shadowed else []
    if inspect.isclass(obj):
        # not indexed: the class's own entry (where it is defined) stays the one target of a bare
        # :class:`TensorVariable` in a docstring; ffg_aliases resolves ffigraph.tensor.TensorType there
        return [".. autoclass:: %s" % full, "   :no-members:", "   :no-index:", ""]
    if inspect.isroutine(obj):
        return [".. autofunction:: %s" % full] + no_index + [""]
    kind = type(obj)
    ours = kind.__module__.startswith("ffigraph")
    what = ("An instance of :py:class:`~%s.%s`" % (kind.__module__, kind.__qualname__) if ours
            else "A ``%s``" % kind.__qualname__)
    shown = _short_repr(obj)
    # (an object whose repr is only its address is named by its type alone)
    text = "   %s." % what if " at 0x" in shown else "   %s: ``%s``." % (what, shown.replace("`", "'"))
    if ours and callable(obj):
        text += " Call it with a name to make a variable: ``%s(\"x\")``." % name
    return [".. py:data:: %s" % name, "   :module: %s" % package] + no_index + ["", text, ""]


def names_section(package):
    """The reStructuredText of the entries of ``package.__all__``, in its order."""
    root = importlib.import_module(package)
    names = [n for n in dict.fromkeys(getattr(root, "__all__", ())) if not n.startswith("__")]
    submodules = _submodules(package)
    out = ["Names", "-----", "",
           "The %d names of ``%s.__all__``, in its order. Functions and classes are documented from "
           "their docstrings (a class's members are on the page of the module that defines it); "
           "other names by their type and value." % (len(names), package), ""]
    for name in names:
        out += _entry(package, name, getattr(root, name), "%s.%s" % (package, name) in submodules)
    return "\n".join(out)


def page(module):
    title = "``%s``" % module
    text = "%s\n%s\n\n.. automodule:: %s\n" % (title, "=" * len(title), module)
    if module in PACKAGES:
        text += "\n" + names_section(module) + "\n"
    return text


def write_pages(app=None):
    os.makedirs(OUT, exist_ok=True)
    wanted = {m + ".rst": page(m) for m in public_modules()}
    for name in os.listdir(OUT):          # a module that is gone loses its page
        if name.endswith(".rst") and name not in wanted:
            os.remove(os.path.join(OUT, name))
    for name, text in wanted.items():
        path = os.path.join(OUT, name)
        old = None
        if os.path.exists(path):
            with open(path) as fh:
                old = fh.read()
        if old != text:                   # unchanged pages keep their time: no rebuild
            with open(path, "w") as fh:
                fh.write(text)


def setup(app):
    app.connect("builder-inited", write_pages)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}

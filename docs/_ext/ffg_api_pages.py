"""Sphinx extension: one API reference page per module of the package, written at build time.

Before Sphinx reads the sources, ``docs/reference/api/<module>.rst`` is written for every public
module of ffigraph (found by walking the package; a module whose name has a part starting with
``_`` is private), each holding ``.. automodule::`` with its members. docs/reference/api.rst lists
them with a glob toctree. (autosummary's recursion is not used: it takes a module for the
function of the same name that its package imports, ``ffigraph.compile.function`` say, and then
documents the function instead of the module.)
"""
import importlib
import os
import pkgutil

DOCS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(DOCS, "reference", "api")


def public_modules(package="ffigraph"):
    """Every public module of ``package``, the package itself first, in name order."""
    root = importlib.import_module(package)
    names = [package] + [info.name for info in pkgutil.walk_packages(root.__path__, package + ".")]
    return sorted(n for n in names if not any(part.startswith("_") for part in n.split(".")))


def page(module):
    title = "``%s``" % module
    return "%s\n%s\n\n.. automodule:: %s\n" % (title, "=" * len(title), module)


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

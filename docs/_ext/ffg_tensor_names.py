"""Sphinx extension: ``.. ffg-tensor-names::``, the table of every name of ``ffigraph.tensor``,
built from its ``__all__`` by tools/tensor_table.py when the documentation is built.

Every name links to its entry on the ``ffigraph.tensor`` API page (docs/_ext/ffg_api_pages.py
writes one for each name of ``__all__``). Once references are resolved, a name of the table that
did not get a link is a warning naming it, so ``sphinx-build -W`` fails on it.
"""
import importlib.util
import os

from docutils import nodes
from sphinx.util import logging

from ffg_api_pages import entry_target
from ffg_generated import GeneratedRst

TOOL = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                    "tools", "tensor_table.py")
CLASS = "ffg-tensor-names"
logger = logging.getLogger(__name__)


def _tool():
    spec = importlib.util.spec_from_file_location("tensor_table", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class TensorNames(GeneratedRst):
    def source(self):
        return TOOL

    def rst(self):
        return _tool().table_rst(target=lambda name: entry_target("ffigraph.tensor", name))

    def run(self):
        box = nodes.container(classes=[CLASS])
        box.extend(super().run())
        return [box]


def unlinked_names(doctree):
    """The names of the table (its cross-references) that resolved to no link."""
    missing = []
    for box in doctree.findall(nodes.container):
        if CLASS not in box["classes"]:
            continue
        for literal in box.findall(nodes.literal):
            if "xref" in literal["classes"] and not isinstance(literal.parent, nodes.reference):
                missing.append(literal.astext())
    return missing


def check_links(app, doctree, docname):
    missing = unlinked_names(doctree)
    if missing:
        logger.warning("%d name(s) of ffigraph.tensor have no link to the API reference: %s",
                       len(missing), ", ".join(missing), location=docname)


def setup(app):
    app.add_directive("ffg-tensor-names", TensorNames)
    app.connect("doctree-resolved", check_links)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}

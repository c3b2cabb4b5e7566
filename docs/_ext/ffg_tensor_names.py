"""Sphinx extension: ``.. ffg-tensor-names::``, the table of every name of ``ffigraph.tensor``,
built from its ``__all__`` by tools/tensor_table.py when the documentation is built."""
import importlib.util
import os

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

TOOL = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                    "tools", "tensor_table.py")


def _tool():
    spec = importlib.util.spec_from_file_location("tensor_table", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class TensorNames(SphinxDirective):
    has_content = False

    def run(self):
        container = nodes.container()
        self.state.nested_parse(StringList(_tool().table_rst().splitlines(), source=TOOL),
                                self.content_offset, container)
        return container.children


def setup(app):
    app.add_directive("ffg-tensor-names", TensorNames)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}

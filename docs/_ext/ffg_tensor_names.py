"""Sphinx extension: ``.. ffg-tensor-names::``, the table of every name of ``ffigraph.tensor``,
built from its ``__all__`` by tools/tensor_table.py when the documentation is built."""
import importlib.util
import os

from ffg_generated import GeneratedRst

TOOL = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                    "tools", "tensor_table.py")


def _tool():
    spec = importlib.util.spec_from_file_location("tensor_table", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class TensorNames(GeneratedRst):
    def source(self):
        return TOOL

    def rst(self):
        return _tool().table_rst()


def setup(app):
    app.add_directive("ffg-tensor-names", TensorNames)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}

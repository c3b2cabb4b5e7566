"""The documentation's table of ffigraph.tensor's names (tools/tensor_table.py, built into
docs/reference/tensor_names.rst) lists every public name once."""
import importlib.util
import os
import re

import ffigraph.tensor as T

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _tool():
    spec = importlib.util.spec_from_file_location("tensor_table", os.path.join(ROOT, "tools", "tensor_table.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_table_lists_every_public_tensor_name_once():
    rst = _tool().table_rst()
    listed = re.findall(r":py:obj:`(\w+) <[\w.]+>`|``(\w+)``", rst.split(".. list-table::")[1])
    listed = [a or b for a, b in listed]
    assert sorted(listed) == sorted(set(T.__all__)), set(T.__all__) ^ set(listed)
    assert len(T.__all__) == len(set(T.__all__)), "a name twice in ffigraph.tensor.__all__"
    for name in T.__all__:   # and every listed name is there
        assert hasattr(T, name), name
    with open(os.path.join(ROOT, "docs", "reference", "tensor_names.rst")) as fh:
        assert ".. ffg-tensor-names::" in fh.read()

"""The README's table of ffigraph.tensor's names is generated (tools/tensor_table.py) and current."""
import importlib.util
import os

import ffigraph.tensor as T

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _tool():
    spec = importlib.util.spec_from_file_location("tensor_table", os.path.join(ROOT, "tools", "tensor_table.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_lists_every_public_tensor_name():
    tool = _tool()
    assert tool.main(["--check"]) == 0, "run python tools/tensor_table.py"
    with open(os.path.join(ROOT, "README.md")) as fh:
        readme = fh.read()
    block = readme[readme.index(tool.BEGIN):readme.index(tool.END)]
    missing = [name for name in T.__all__ if "`%s`" % name not in block]
    assert not missing, missing
    assert len(T.__all__) == len(set(T.__all__)), "a name twice in ffigraph.tensor.__all__"
    for name in T.__all__:   # and every listed name is there
        assert hasattr(T, name), name

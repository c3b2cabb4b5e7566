"""Shared pytest set-up: which linkers the op tests run under, and import paths.

Every test that takes the ``mode`` fixture runs once per linker in LINKERS: ``py`` runs each op's
``perform`` (the reference semantics), ``c`` its C code. ``c|py`` is left out of the op matrices on
purpose: it builds each node as the library that ``c`` builds for that node alone (the very same
library, tests/linkers/test_c_backend.py checks), so running every op case under it again would
compile the same op C code once more; what ``c|py`` adds, sequencing nodes and Python fallbacks
from Python, is tested in tests/linkers and tests/compile.
"""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "tests"))
pytest_plugins = ["one_per_test"]   # --one-per-test: the sanitizer phase's subset (tests/one_per_test.py)

LINKERS = ["py", "c"]


@pytest.fixture(params=LINKERS)
def mode(request):
    from ffigraph.compile.mode import Mode

    return Mode(linker=request.param, optimizer=None)


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a working CUDA GPU (skipped elsewhere, with the reason)")


def pytest_collection_modifyitems(config, items):
    """Skip @pytest.mark.gpu tests unless a GPU can run work, saying why in CUDA's own words."""
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items:
        return
    try:
        from ffigraph.cuda.runtime import gpu_status

        ok, reason = gpu_status()
    except Exception as err:  # the toolkit is missing or broken: that is the reason
        ok, reason = False, "%s: %s" % (type(err).__name__, err)
    if ok:
        return
    skip = pytest.mark.skip(reason="GPU tier skipped, no usable GPU: %s" % reason)
    for item in gpu_items:
        item.add_marker(skip)

"""Shared pytest set-up: which linkers the op tests run under, and import paths.

Every test that takes the ``mode`` fixture runs once per linker in LINKERS;
the C backends join this list when they land, so each op test covers them.
"""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "tests"))

LINKERS = ["py", "c", "c|py"]


@pytest.fixture(params=LINKERS)
def mode(request):
    from ffigraph.compile.mode import Mode

    return Mode(linker=request.param, optimizer=None)

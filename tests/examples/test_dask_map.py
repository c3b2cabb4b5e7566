"""examples/dask_map.py on a LocalCluster of two worker processes whose C compiler always fails
and whose compile cache starts empty: the workers run the function from its pickle alone."""
from __future__ import annotations

import importlib.util
import json
import os

import numpy as np
import pytest

pytest.importorskip("distributed", reason="dask[distributed] is a CPython test extra (psutil does not build "
                                          "on Debian's PyPy)")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _example():
    spec = importlib.util.spec_from_file_location("dask_map", os.path.join(ROOT, "examples", "dask_map.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_dask_workers_run_the_pickled_library_without_compiling(tmp_path):
    cc = tmp_path / "failing-cc"
    cc.write_text("#!/bin/sh\necho 'workers may not compile' >&2\nexit 1\n")
    cc.chmod(0o755)
    worker_cache = tmp_path / "worker-cache"
    env = {"CC": str(cc), "FFIGRAPH_COMPILEDIR": str(worker_cache), "FFIGRAPH_FLAGS": ""}
    scores, expected = _example().run(n_workers=2, n_chunks=8, rows=50, worker_env=env)
    assert scores.shape == (400,)
    np.testing.assert_allclose(scores, expected, rtol=1e-12, atol=1e-15)
    # the workers' cache holds only what the pickles brought (adopted), nothing compiled there
    metas = [json.load(open(os.path.join(d, "meta.json"))) for d, _, files in os.walk(str(worker_cache))
             if "meta.json" in files]
    assert metas and all(m.get("adopted") for m in metas), metas

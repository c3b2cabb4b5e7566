"""A library built in parts: the node functions spread over translation units that the compiler
builds side by side (codegen.plan_parts, build.part_masks), linked into one library. It must
compute exactly what the same source built as one unit computes, share one thread pool, export
only the entry points, and leave no objects behind; a source built without FFG_PART_MASK is the
whole library."""
import os
import re
import subprocess

import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import Mode, config, function
from ffigraph.linkers.c import build, codegen, dl, load

MODE = Mode(linker="c")


def _graph():
    """Several distinct nodes (fused elementwise loops, a dot, reductions): enough code for parts."""
    x, W, y = T.dmatrix("x"), T.dmatrix("W"), T.dvector("y")
    h = T.tanh(T.dot(x, W) + y)
    outs = [h, T.exp(h).sum(axis=0), (h * x).max(axis=1), T.log1p(abs(x)).mean(), T.sqrt(abs(W)) * 2 - 1]
    return [x, W, y], outs


def _values():
    rng = np.random.default_rng(7)
    return [rng.standard_normal((300, 300)), rng.standard_normal((300, 300)), rng.standard_normal(300)]


def _reference(x, W, y):
    h = np.tanh(x @ W + y)
    return [h, np.exp(h).sum(axis=0), (h * x).max(axis=1), np.log1p(abs(x)).mean(), np.sqrt(abs(W)) * 2 - 1]


def _compile(tmp_path, monkeypatch, jobs, tag):
    """The graph in a cache of its own, built with ``jobs`` compilers side by side."""
    monkeypatch.setattr(config, "compiledir", os.path.join(str(tmp_path), tag))
    monkeypatch.setattr(build, "build_jobs", lambda: jobs)
    monkeypatch.setattr(load, "_memo", type(load._memo)())
    f = function(*_graph(), mode=MODE)
    assert not f.maker.linker.compiled.warm_hit
    return f


def _threads():
    try:
        return set(os.listdir("/proc/self/task"))
    except OSError:
        return None


def test_parts_compute_what_one_unit_computes(tmp_path, monkeypatch):
    with config.change_flags(threads=2, threads_min_size=1000):
        one = _compile(tmp_path, monkeypatch, 1, "one")
        parts = _compile(tmp_path, monkeypatch, 2, "parts")
    source = parts.c_source()
    assert source == one.c_source()   # one source; only the build differs
    n_parts = int(re.search(r"spread over (\d+) parts", source).group(1))
    assert n_parts >= 2 and "#if FFG_PART_HAS(1)" in source
    assert parts.maker.linker.compiled.source.requirements["parts"][0] > 0
    values = _values()
    got_one = one(*values)   # first: threads of the process's own (BLAS's pool) start now
    before = _threads()
    got_parts = parts(*values)
    after = _threads()
    for g1, gp, want in zip(got_one, got_parts, _reference(*values)):
        assert np.asarray(gp).tobytes() == np.asarray(g1).tobytes()   # the same bits
        np.testing.assert_allclose(gp, want, rtol=1e-12, atol=1e-12)
    if before is not None:
        # loops in different parts ran on one pool: threads - 1 = 1 worker (two pools would start 2)
        assert len(after - before) == 1, (before, after)
    # empty inputs through every part (and their error checks) as well
    empty = [np.zeros((0, 300)), values[1], values[2]]
    for g1, gp in zip(one(*empty), parts(*empty)):
        assert np.asarray(gp).shape == np.asarray(g1).shape
    with pytest.raises(ValueError, match="W|shape|align"):
        parts(values[0], np.zeros((5, 5)), values[2])
    assert np.allclose(parts(*values)[0], got_one[0])   # and it still works after a failure


def test_parts_export_only_the_entry_points_and_leave_no_objects(tmp_path, monkeypatch):
    f = _compile(tmp_path, monkeypatch, 2, "parts")
    library = f.maker.linker.compiled.library
    folder = os.path.dirname(library.path)
    assert not [name for name in os.listdir(folder) if name.endswith(".o")]
    handle = dl.open_library(library.path)
    try:
        dl.symbol(handle, library.prefix + "_run", "void *")   # the entry points are there
        for hidden in ("_node0", "_node1", "_fn0"):   # node functions are the library's own
            with pytest.raises(AttributeError):
                dl.symbol(handle, library.prefix + hidden, "void *")
        with pytest.raises(AttributeError):
            dl.symbol(handle, "ffg_the_pool", "void *")
    finally:
        dl.close_library(handle)


def test_the_source_alone_builds_the_whole_library(tmp_path, monkeypatch):
    """Without FFG_PART_MASK (a user building the C by hand, an export's Makefile) the file is one
    unit holding every part, its node functions static."""
    f = _compile(tmp_path, monkeypatch, 2, "parts")
    graph_source = f.maker.linker.compiled.source
    requirements = dict(graph_source.requirements)
    requirements.pop("parts")
    path = build.build_library(graph_source.source, "whole", requirements, directory=str(tmp_path))
    handle = dl.open_library(path)
    try:
        dl.symbol(handle, graph_source.prefix + "_run", "void *")
    finally:
        dl.close_library(handle)
    symbols = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True)
    assert symbols.returncode == 0, symbols.stderr
    assert graph_source.prefix + "_run" in symbols.stdout
    assert "_node0" not in symbols.stdout and "ffg_the_pool" not in symbols.stdout


def test_a_part_that_fails_to_compile_fails_the_build(tmp_path, monkeypatch):
    """A compiler error in one unit is the build's CompileError, after every unit has ended; no
    object is left."""
    f = _compile(tmp_path, monkeypatch, 2, "parts")
    graph_source = f.maker.linker.compiled.source
    broken = graph_source.source.replace("#if FFG_PART_HAS(1)   /* ---- part 1 ---- */",
                                         "#if FFG_PART_HAS(1)   /* ---- part 1 ---- */\nthis is not C;", 1)
    assert broken != graph_source.source
    with pytest.raises(build.CompileError, match="this|not"):
        build.build_library(broken, "broken", graph_source.requirements, directory=str(tmp_path))
    assert not [name for name in os.listdir(str(tmp_path)) if name.endswith(".o")]


class _Fn:
    def __init__(self, weight, first_part=False):
        self.weight, self.first_part = weight, first_part


def test_plan_parts_and_part_masks():
    assert codegen.plan_parts([_Fn(10)], 10) == (None, None)   # too little to cut
    fns = [_Fn(w) for w in (900, 100, 400, 300, 300, 50)] + [_Fn(5, first_part=True)]
    assign, weights = codegen.plan_parts(fns, 200)
    assert len(weights) >= 2 and sum(weights) == 200 + sum(fn.weight for fn in fns)
    assert assign[-1] == 0   # a node with inner graphs stays with create, in part 0
    assert max(weights) <= 900 + 50   # the heaviest alone, about; the rest spread
    for jobs in (1, 2, 3, 16):
        masks = build.part_masks(weights, jobs)
        if jobs == 1:
            assert masks is None
            continue
        assert len(masks) <= jobs and masks[0] & 1
        covered = 0
        for m in masks:
            assert m and not covered & m   # every part in exactly one unit
            covered |= m
        assert covered == (1 << len(weights)) - 1
    assert build.part_masks(None, 4) is None and build.part_masks([5], 4) is None

"""The program fuzzer (tools/fuzz/programs.py): a budgeted slice with a fixed seed.

Random programs over elementwise ops, broadcasting, indexing with symbolic bounds, reshape,
dimshuffle, dot/einsum, reductions, sort, scan and ifelse, and their gradients, compiled under
every linker; each output must equal the numpy evaluation of the same program (gradients: a
numpy reverse-mode derivative the generator builds). The slice is deterministic (seeded), so a
failure names a program that replays: ``python tools/fuzz/programs.py --replay SEED:INDEX``.
"""
from __future__ import annotations

import os
import platform
import sys

import numpy as np
import pytest

from helpers import REPO_ROOT

sys.path.insert(0, os.path.join(REPO_ROOT, "tools", "fuzz"))
import gen  # noqa: E402
import programs  # noqa: E402

SEED = 20261201
PYPY = platform.python_implementation() == "PyPy"
PY_BATCHES = range(4) if PYPY else range(24)     # about 500 programs on CPython, 80 on PyPy
# (batch, how many of its programs) into one function per C linker: batch 4 has clean inputs and
# gradients among its first programs, batch 2 wild inputs (NaN, inf, 1e300, empty rows)
C_BATCHES = [(4, 4)] if PYPY else [(4, 8), (2, 6)]

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")   # numpy on NaN, inf, empty: meant


def report(findings):
    return "\n\n".join(programs.describe(f) for f in findings)


@pytest.fixture(scope="module")
def py_slice():
    """[(batch, findings)] of the py linker over PY_BATCHES (the default rewrites, each op's perform)."""
    out = []
    for number in PY_BATCHES:
        batch = programs.Batch(SEED, number)
        out.append((batch, programs.run_linker(batch, "py")))
    return out


def test_py_linker_agrees_with_numpy(py_slice):
    findings = [f for _, found in py_slice for f in found]
    assert findings == [], report(findings)
    assert sum(len(b.programs) for b, _ in py_slice) >= (70 if PYPY else 450)


def test_the_slice_reaches_every_kind_of_op_and_input(py_slice):
    """The generator is seeded: this pins that the slice exercises what the fuzzer claims to."""
    ops, grads, wild, empty, strided = set(), 0, 0, 0, 0
    for batch, _ in py_slice:
        wild += batch.wild
        empty += any(v.size == 0 for v in batch.values)
        strided += any(any(s < 0 for s in v.strides) for v in batch.values)
        for program, _ in batch.programs:
            grads += bool(program.wrt)
            ops |= {program.nodes[i].op for i in gen.ancestors(program.nodes, program.out)}
    wanted = {"add", "mul", "true_div", "maximum", "switch", "cast", "index", "reshape", "dimshuffle",
              "dot", "einsum", "sum", "max", "mean", "prod", "argmax", "sort", "argsort", "scan", "ifelse"}
    if not PYPY:
        wanted |= set(gen.ops.UNARY) | {"gt", "eq", "min"}
    assert wanted - ops == set()
    assert grads >= 10 and wild >= 1 and empty >= 1 and strided >= 1


@pytest.mark.parametrize("linker", ["c"] if PYPY else ["c", "cvm", "c|py"])
def test_c_linkers_agree_with_numpy(linker):
    # one function of several programs (and their gradients) over shared inputs (cvm reuses c's
    # library); c|py builds a library per node, so it gets the first two programs of one batch only
    findings = []
    for number, count in C_BATCHES[:1] if linker == "c|py" else C_BATCHES:
        batch = programs.Batch(SEED, number)
        chosen = batch.programs[:2 if linker == "c|py" else count]
        assert any(p.wrt for p, _ in chosen) or batch.wild
        findings += programs.run_linker(batch, linker, chosen)
    assert findings == [], report(findings)


@pytest.mark.skipif(PYPY, reason="the oracle is the same numpy code on PyPy; one interpreter checks the probe")
def test_a_wrong_value_is_found(py_slice, monkeypatch):
    """The probe: an oracle off by 1e-6 (relative) in tanh, or in sin's derivative, is a finding."""
    batch = next(b for b, _ in py_slice if any(
        {"tanh", "sin"} & {p.nodes[i].op for i in gen.ancestors(p.nodes, p.out)} for p, _ in b.programs))
    unary = dict(gen.ops.UNARY)
    tanh, sin = unary["tanh"], unary["sin"]
    unary["tanh"] = (tanh[0], lambda x: np.tanh(x) * (1 + 1e-6), tanh[2], tanh[3])
    unary["sin"] = (sin[0], sin[1], lambda x, o: np.cos(x) * (1 + 1e-6), sin[3])
    monkeypatch.setattr(gen.ops, "UNARY", unary)
    found = programs.run_linker(programs.Batch(SEED, batch.number), "py")
    assert found and all(f["kind"] == "wrong" for f in found)


def test_the_oracle_computes_log1p_of_exp_as_the_rewrites_do():
    """log1p(exp(x)) is softplus(x) after the rewrites (as in Theano and PyTensor): finite where
    exp overflows. The oracle's naive inf became NaN downstream (inf / inf), which compare could
    not let through: seed 20261205, program 53355 (log1p(exp(t)) with t = 1e300, divided by
    itself) was a false finding. Its value and derivative by hand, then that program under py."""
    x_node = gen.Node(0, "input", [], 0, "float64")
    e_node = gen.Node(1, "exp", [0], None, "float64")
    s_node = gen.Node(2, "log1p", [1], None, "float64")
    x = np.array([1e300, 800.0, 3.0, -3.0, -800.0, np.inf, -np.inf, np.nan])
    values = gen.eval_np([x_node, e_node, s_node], [x])
    with np.errstate(over="ignore"):
        want = np.where(x > 30, x, np.log1p(np.exp(np.minimum(x, 30))))
    np.testing.assert_allclose(values[2], want, rtol=1e-15)
    grads = gen.vjp_program([x_node, e_node, s_node], values, {2: np.ones(8)})
    np.testing.assert_allclose(grads[0], [1, 1, 1 / (1 + np.exp(-3.0)), 1 / (1 + np.exp(3.0)), 0, 1, 0, np.nan],
                               rtol=1e-15, atol=1e-300)
    assert 1 not in grads   # the exp has no other use: nothing flows through it
    batch = programs.Batch(20261205, 2223, only={53355})
    assert [p.index for p, _ in batch.programs] == [53355]
    assert programs.run_linker(batch, "py") == []


def test_compare_nan_positions_and_dtypes():
    want = np.array([1.0, np.nan, np.inf])
    assert programs.compare(want.copy(), want, "float64", False)[0] is None
    assert programs.compare(np.array([1.0, 2.0, np.inf]), want, "float64", False)[0].startswith(
        "NaN at different positions")
    assert "differs" in programs.compare(np.array([1.0, np.nan, -np.inf]), want, "float64", False)[0]
    assert "dtype" in programs.compare(want.astype("float32"), want, "float64", False)[0]
    assert "shape" in programs.compare(want[:2], want, "float64", False)[0]
    # a finite result where numpy overflowed (a stabilizing rewrite) is let through, and counted
    assert programs.compare(np.array([1.0, np.nan, 1e300]), want, "float64", False) == (None, 1)
    assert programs.compare(np.array([1, 2, 3], "int32"), np.array([1, 2, 4], "int32"), "int32", False)[0]


@pytest.mark.skipif(PYPY, reason="the worker protocol is the same on PyPy; one interpreter checks it")
def test_a_worker_that_dies_is_a_crash_with_its_batch(tmp_path):
    """The campaign driver: a worker killed by a signal is a crash of the batch it had started."""
    env = programs.plain_env(str(tmp_path / "compiledir"))
    env[programs.ABORT_AT] = "1"
    done, crash = programs.run_worker(sys.executable, SEED, [0, 1, 2], ("py",), env, 300, None)
    assert sorted(done) == [0]
    number, linker, why, stderr = crash
    assert (number, linker, why) == (1, None, "exit status -6")   # SIGABRT, before any linker ran

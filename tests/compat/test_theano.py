"""ffigraph.compat.theano: ``import theano`` resolved to ffigraph (docs/tutorial/theano.rst).

The main test runs tests/compat/theano_program.py, a Theano program written as Theano users write
them, unchanged, and checks its losses, gradients and Adam steps against numpy.
"""
import os
import re
import runpy
import subprocess
import sys
import types

import numpy as np
import pytest

import ffigraph
import ffigraph.tensor
from ffigraph.compat import theano as compat
from ffigraph.graph.basic import graph_inputs

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DOC = os.path.join(REPO, "docs", "tutorial", "theano.rst")


@pytest.fixture
def theano():
    """``install()`` for one test; afterwards sys.modules and sys.meta_path are as before."""
    compat.uninstall()
    before = {name: module for name, module in sys.modules.items() if compat._is_theano(name)}
    assert before == {}, "a theano module is already imported: %r" % sorted(before)
    compat.install()
    import theano
    try:
        yield theano
    finally:
        compat.uninstall()
    assert not [name for name in sys.modules if compat._is_theano(name)]
    assert compat._FINDER not in sys.meta_path


def test_refuses_a_real_theano(monkeypatch):
    compat.uninstall()
    real = types.ModuleType("theano")
    real.__file__ = "/site-packages/theano/__init__.py"
    monkeypatch.setitem(sys.modules, "theano", real)
    with pytest.raises(compat.RealTheanoImportedError,
                       match=r"a real Theano is already imported \(sys.modules\['theano'\] is "
                             r"<module 'theano' from '/site-packages/theano/__init__.py'>"):
        compat.install()
    assert not compat.installed()
    assert sys.modules["theano"] is real
    # a real submodule alone (its package removed from sys.modules) is refused too
    monkeypatch.delitem(sys.modules, "theano")
    monkeypatch.setitem(sys.modules, "theano.tensor", types.ModuleType("theano.tensor"))
    with pytest.raises(compat.RealTheanoImportedError, match=r"sys.modules\['theano.tensor'\]"):
        compat.install()
    assert not compat.installed()


def test_install_twice_is_harmless_and_uninstall_removes_it(theano):
    compat.install()
    assert sum(finder is compat._FINDER for finder in sys.meta_path) == 1
    assert sys.meta_path[0] is compat._FINDER
    import theano as again
    import theano.tensor
    assert again is theano and isinstance(theano, types.ModuleType)
    compat.uninstall()
    assert not compat.installed() and "theano" not in sys.modules and "theano.tensor" not in sys.modules
    compat.uninstall()   # harmless when not installed
    compat.install()     # and the fixture's teardown uninstalls again


def test_names_resolve_to_ffigraphs_objects(theano):
    import theano.tensor as T
    import theano.tensor.nnet
    from theano.compile import In, Mode, Out, function, shared
    from theano.gof import graph
    from theano.ifelse import ifelse
    from theano.sandbox.rng_mrg import MRG_RandomStreams
    from theano.tensor.shared_randomstreams import RandomStreams

    assert isinstance(T, types.ModuleType) and sys.modules["theano.tensor"] is T and theano.tensor is T
    same = [(theano.function, ffigraph.function), (theano.shared, ffigraph.shared), (theano.grad, ffigraph.grad),
            (theano.config, ffigraph.config), (theano.In, ffigraph.In), (theano.Out, ffigraph.Out),
            (theano.Mode, ffigraph.Mode), (theano.scan, ffigraph.scan), (theano.gradient.grad, ffigraph.grad),
            (function, ffigraph.function), (shared, ffigraph.shared), (In, ffigraph.In), (Out, ffigraph.Out),
            (Mode, ffigraph.Mode), (T.dmatrix, ffigraph.tensor.dmatrix), (T.grad, ffigraph.tensor.grad),
            (T.nnet.softmax, ffigraph.tensor.nnet.softmax), (theano.tensor.nnet.relu, ffigraph.tensor.nnet.relu),
            (T.extra_ops.cumsum, ffigraph.tensor.extra_ops.cumsum), (ifelse, ffigraph.ifelse.ifelse),
            (theano.printing.debugprint, ffigraph.printing.debugprint), (graph.inputs, graph_inputs),
            (theano.gof.Variable, ffigraph.Variable), (theano.gof.Apply, ffigraph.Apply),
            (theano.gof.Op, ffigraph.Op), (theano.gof.Type, ffigraph.Type),
            (theano.gof.FunctionGraph, ffigraph.FunctionGraph), (RandomStreams, ffigraph.RandomStreams),
            (MRG_RandomStreams, ffigraph.MRG_RandomStreams), (theano.scan_module.until, ffigraph.scan.until),
            (theano.map, ffigraph.scan.map), (theano.dot, ffigraph.tensor.dot),
            (theano.compile.SharedVariable, ffigraph.compile.SharedVariable), (T.Rop, ffigraph.Rop),
            (theano.ProfileStats, ffigraph.compile.profiling.ProfileStats)]
    for got, want in same:
        assert got is want, (got, want)
    # Theano's layout: the function hides the module of the same name, which stays importable
    import theano.scan_module.scan
    from theano.tensor.var import TensorVariable
    assert theano.scan_module.scan is ffigraph.scan and T.var is ffigraph.tensor.var
    assert TensorVariable is ffigraph.tensor.variable.TensorVariable
    # every lookup goes to ffigraph: a name it gains later is there
    probe = object()
    ffigraph.tensor._compat_probe = probe
    try:
        assert T._compat_probe is probe
    finally:
        del ffigraph.tensor._compat_probe
    # ``from theano.tensor import *`` gives ffigraph.tensor's public names
    namespace = {}
    exec("from theano.tensor import *", namespace)
    assert namespace["dmatrix"] is ffigraph.tensor.dmatrix and namespace["exp"] is ffigraph.tensor.exp


def test_what_ffigraph_lacks_says_it_is_not_implemented(theano):
    import theano.tensor as T
    with pytest.raises(AttributeError, match=r"^theano\.tensor\.no_such_op is not implemented in ffigraph "
                                             r"\(looked up in ffigraph\.tensor\)$"):
        T.no_such_op
    with pytest.raises(AttributeError, match=r"^theano\.tensor\.nnet\.no_such_op is not implemented in ffigraph"):
        T.nnet.no_such_op
    with pytest.raises(ImportError, match=r"^theano\.tensor\.no_such_op is not implemented in ffigraph"):
        exec("from theano.tensor import no_such_op", {})
    with pytest.raises(ModuleNotFoundError, match=r"^theano\.tensor\.signal\.conv is not implemented in ffigraph "
                                                  r"\(ffigraph has no module of its meaning\)$"):
        exec("from theano.tensor.signal import conv", {})
    with pytest.raises(ModuleNotFoundError, match=r"^theano\.tensor\.opt is not implemented in ffigraph"):
        exec("import theano.tensor.opt", {})
    with pytest.raises(ModuleNotFoundError, match=r"^theano\.no_such_module is not implemented in ffigraph"):
        exec("import theano.no_such_module", {})
    # a Theano module ffigraph lacks, as an attribute: an AttributeError (so hasattr is False)
    with pytest.raises(AttributeError, match=r"^theano\.sparse is not implemented in ffigraph \(ffigraph has no "
                                             r"module of its meaning\)$"):
        theano.sparse
    # a name of a module is not a module: Python's own message
    with pytest.raises(ModuleNotFoundError, match=r"^No module named 'theano\.tensor\.dot'"):
        exec("import theano.tensor.dot", {})
    # dunder probes (copy, pickle, doctest) get a plain AttributeError; a Theano version there is none
    assert not hasattr(T, "__wrapped__")
    with pytest.raises(AttributeError, match=r"^theano\.__version__ is not implemented in ffigraph"):
        theano.__version__
    assert "nnet" in dir(T) and "no_such_op" not in dir(T) and "dmatrix" in dir(T)


def test_clone_has_theanos_signature(theano):
    """theano.clone is ffigraph.clone, with Theano's (output, replace=None, strict=True, share_inputs=True)."""
    import theano.tensor as T
    x, z = T.dvector("x"), T.dvector("z")
    w = theano.shared(np.arange(3.0), name="w")
    y = T.exp(x) * w
    assert theano.clone is ffigraph.clone
    for clone in (theano.clone,):
        copy = clone(y, replace={x: z})
        assert copy is not y and set(graph_inputs([copy])) == {z, w}
        assert clone(y) is not y and set(graph_inputs([clone(y)])) == {x, w}
        # share_inputs=False: copies of the inputs; a copied shared variable keeps the storage
        leaves = graph_inputs([clone(y, replace=None, strict=True, share_inputs=False)])
        assert x not in leaves and w not in leaves and sorted(v.name for v in leaves) == ["w", "x"]
        assert [v for v in leaves if v.name == "w"][0].container is w.container
        [both] = clone([y], replace=[(x, z)])
        assert set(graph_inputs([both])) == {z, w}
        with pytest.raises(TypeError):
            clone(y, replace={x: T.dmatrix("m")})     # strict: another type is refused


def _rows(block):
    return dict((name, target.strip()) for name, target in
                re.findall(r"^   \* - ``(theano[\w.]*)``\n     - (.*)$", block, re.M))


def test_the_tables_in_the_docs_are_the_map():
    """docs/tutorial/theano.rst's two tables list MODULES and FALLBACKS, each row as it is."""
    blocks = open(DOC).read().split(".. list-table::")
    assert len(blocks) == 3, "the page should hold two tables, modules then names"
    modules = {}
    for name, targets in compat.MODULES.items():
        modules[name] = "not implemented" if targets is None else ", ".join(
            "``%s`` (%s)" % (t.module, ", ".join("``%s``" % n for n in sorted(t.names)))
            if isinstance(t, compat.Only) else "``%s``" % t for t in targets)
    assert _rows(blocks[1]) == modules
    names = {}
    for module, table in compat.FALLBACKS.items():
        for name, where in table.items():
            names[module + "." + name] = "``%s``" % where.replace(":", ".")
    assert _rows(blocks[2]) == names


def test_import_ffigraph_never_imports_compat_and_dash_m_runs_a_script(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import json, sys\n"
        "import theano\n"
        "import theano.tensor as T\n"
        "print(json.dumps({'argv': sys.argv, 'name': __name__, 'path0': sys.path[0],\n"
        "                  'theano': repr(theano), 'dmatrix': T.dmatrix is __import__('ffigraph').tensor.dmatrix}))\n"
        "sys.exit(int(sys.argv[-1]))\n")
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    run = subprocess.run([sys.executable, "-m", "ffigraph.compat.theano", str(script), "--lr", "0.1", "3"],
                         capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=300)
    assert run.returncode == 3, run.stderr
    import json
    seen = json.loads(run.stdout.splitlines()[-1])
    assert seen == {"argv": [str(script), "--lr", "0.1", "3"], "name": "__main__",
                    "path0": os.path.realpath(str(tmp_path)),
                    "theano": "<module 'theano' (ffigraph.compat.theano: ffigraph)>", "dmatrix": True}
    plain = subprocess.run(
        [sys.executable, "-c", "import sys, ffigraph; print(sorted(m for m in sys.modules "
                               "if m.startswith('ffigraph.compat') or m.split('.')[0] == 'theano'))"],
        capture_output=True, text=True, env=env, timeout=300)
    assert plain.returncode == 0 and plain.stdout.strip() == "[]", plain.stdout + plain.stderr
    usage = subprocess.run([sys.executable, "-m", "ffigraph.compat.theano"], capture_output=True, text=True,
                           env=env, timeout=300)
    assert usage.returncode == 2 and "usage: python -m ffigraph.compat.theano script.py" in usage.stderr


# ---------------------------------------------------------------- the Theano program, against numpy


def _softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _numpy_step(x, y, params, state, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8):
    """One step of theano_program's training function, by hand: loss, error, gradients, Adam."""
    W1, b1, W2, b2, gain = params
    a1 = x @ W1 + b1
    h = np.maximum(a1, 0)
    z2 = h @ W2 + b2
    p = _softmax(z2 * gain)
    n = x.shape[0]
    loss = -np.mean(np.log(p[np.arange(n), y]))
    error = np.mean(p.argmax(axis=1) != y)
    onehot = np.zeros_like(p)
    onehot[np.arange(n), y] = 1
    dlogits = (p - onehot) / n
    dgain = np.sum(dlogits * z2)
    dz2 = dlogits * gain
    dW2, db2 = h.T @ dz2, dz2.sum(axis=0)
    da1 = (dz2 @ W2.T) * (a1 > 0)
    dW1, db1 = x.T @ da1, da1.sum(axis=0)
    grads = [dW1, db1, dW2, db2, np.asarray(dgain)]
    state["t"] += 1
    t = state["t"]
    step = lr * np.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
    new = []
    for i, (param, g) in enumerate(zip(params, grads)):
        state["m"][i] = beta1 * state["m"][i] + (1 - beta1) * g
        state["v"][i] = beta2 * state["v"][i] + (1 - beta2) * g ** 2
        new.append(param - step * state["m"][i] / (np.sqrt(state["v"][i]) + eps))
    return loss, error, grads, new


def test_a_lasagne_style_theano_program_runs_unchanged(theano):
    rng = np.random.RandomState(0)
    x = rng.normal(size=(6, 4))
    y = np.array([0, 1, 2, 1, 0, 2], dtype="int32")
    program = runpy.run_path(os.path.join(HERE, "theano_program.py"))
    history = program["run"](x, y, num_hidden=5, num_classes=3, steps=3)
    # theano.gof.graph.inputs: depth first from the output, each node's inputs first to last
    assert history["names"] == ["W", "b", "W", "b", "gain"]
    params = history["initial"]
    assert [p.shape for p in params] == [(4, 5), (5,), (5, 3), (3,), ()]
    assert np.all(params[1] == 0) and np.all(params[3] == 0) and params[4] == 1.5
    state = {"t": 0, "m": [np.zeros_like(p) for p in params], "v": [np.zeros_like(p) for p in params]}
    for seen in history["steps"]:
        loss, error, grads, params = _numpy_step(x, y, params, state)
        assert seen["loss"] == pytest.approx(loss, rel=1e-10)
        assert seen["error"] == error
        for got, want in zip(seen["grads"], grads):
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-13)
        for got, want in zip(seen["params"], params):
            assert got.dtype == np.float64
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-13)
    # training moved every parameter (the biases and the gain too)
    assert all(np.all(a != b) for a, b in zip(history["initial"], history["steps"][-1]["params"]))

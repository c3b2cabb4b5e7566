"""Sphinx extension: ``:ffg-figure:`group.name```, a figure measured when the documentation is built.

A page that quotes a size or a time of ffigraph writes the role instead of a number, so the figure
is what the code does now, on the machine that builds the page. Each group of figures is measured
once per build process, the first time a page asks for one of it:

``scaling``  the pickle of docs/tutorial/scaling.rst's model, with and without its library (KB),
             and the time of unpickling it where the compile cache has it (a warm lookup, ms);
``cache``    function()'s time for bench/bench_compile.py's MLP training step (16-unit tanh
             layers, mean-squared cost, SGD updates of every layer): 20 and 50 layers into an
             empty compile cache (s), then 20 layers in a new process on that cache (ms);
             ``cache.cores``, the CPUs the build may use;
``call``     the time of one call (µs, best of 5 rounds of 2000 calls) of ``x + y`` on 1-element
             vectors and of the sum of 50 1-element vectors, checked and with ``trust_input``.

A figure that cannot be measured is a build error naming it (``sphinx-build -W`` stops).
"""
import os
import pickle
import subprocess
import sys
import tempfile
import time

from docutils import nodes

_values = {}


def _cores():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _scaling():
    import numpy as np

    import ffigraph
    import ffigraph.tensor as pt

    x = pt.dmatrix("x")
    w = ffigraph.shared(np.linspace(-1.0, 1.0, 6).reshape(3, 2), name="w")
    f = ffigraph.function([x], pt.tanh(pt.dot(x, w)))
    data = pickle.dumps(f)
    with ffigraph.config.change_flags(pickle__library=False):
        small = pickle.dumps(f)
    pickle.loads(data)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        pickle.loads(data)
        best = min(best, time.perf_counter() - start)
    return {"pickle_kb": "%.0f" % (len(data) / 1000.0), "pickle_nolib_kb": "%.0f" % (len(small) / 1000.0),
            "unpickle_ms": "%.0f" % (best * 1000)}


_MLP = """
import sys, time
import numpy as np
import ffigraph, ffigraph.tensor as T
for layers in map(int, sys.argv[1:]):
    rng = np.random.default_rng(0)
    x, target = T.dmatrix("x"), T.dmatrix("target")
    params, h = [], x
    for i in range(layers):
        w = ffigraph.shared(rng.uniform(-0.4, 0.4, (16, 16)), name="w%d" % i)
        b = ffigraph.shared(np.zeros(16), name="b%d" % i)
        params += [w, b]
        h = T.tanh(T.dot(h, w) + b)
    cost = T.mean((h - target) ** 2)
    grads = T.grad(cost, params)
    start = time.perf_counter()
    ffigraph.function([x, target], cost, updates=[(p, p - 0.1 * g) for p, g in zip(params, grads)])
    print(time.perf_counter() - start)
"""


def _compile_seconds(cache, *layers):
    """function()'s times for the MLP steps of ``layers`` layers, in one new process on the
    compile cache ``cache``."""
    env = dict(os.environ, FFIGRAPH_COMPILEDIR=cache)
    env.pop("FFIGRAPH_FLAGS", None)
    done = subprocess.run([sys.executable, "-c", _MLP] + [str(n) for n in layers], env=env,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError("the MLP compile failed: %s" % done.stderr.strip()[-500:])
    return [float(t) for t in done.stdout.split()]


def _cache():
    with tempfile.TemporaryDirectory(prefix="ffg-docs-figures-") as cache:
        cold20, cold50 = _compile_seconds(cache, 20, 50)   # an empty cache: both generate and compile
        warm20, = _compile_seconds(cache, 20)              # a new process, the cache filled
    return {"mlp20_cold_s": "%.1f" % cold20, "mlp50_cold_s": "%.1f" % cold50,
            "mlp20_warm_ms": "%.0f" % (warm20 * 1000), "cores": str(_cores())}


def _per_call_us(f, args):
    for _ in range(200):
        f(*args)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(2000):
            f(*args)
        best = min(best, (time.perf_counter() - start) / 2000)
    return best * 1e6


def _call():
    import numpy as np

    import ffigraph
    import ffigraph.tensor as pt

    x, y = pt.dvector("x"), pt.dvector("y")
    add = ffigraph.function([x, y], x + y)
    vs = [pt.dvector("v%d" % i) for i in range(50)]
    total = ffigraph.function(vs, sum(vs[1:], vs[0]))
    one = np.ones(1)
    out = {"add_us": _per_call_us(add, (one, one)), "sum50_us": _per_call_us(total, [one] * 50)}
    add.trust_input = total.trust_input = True
    out.update(add_trusted_us=_per_call_us(add, (one, one)), sum50_trusted_us=_per_call_us(total, [one] * 50))
    return {k: "%.2g" % v if v < 10 else "%.0f" % v for k, v in out.items()}


GROUPS = {"scaling": _scaling, "cache": _cache, "call": _call}


def value(key):
    """The text of figure ``key`` ("group.name"), measuring its group on first use."""
    group, _, name = key.partition(".")
    if group not in GROUPS:
        raise KeyError("no figure group %r (known: %s)" % (group, ", ".join(sorted(GROUPS))))
    if group not in _values:
        _values[group] = GROUPS[group]()
    if name not in _values[group]:
        raise KeyError("no figure %r in group %r (known: %s)" % (name, group, ", ".join(sorted(_values[group]))))
    return _values[group][name]


def figure_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    try:
        return [nodes.Text(value(text.strip()))], []
    except Exception as err:   # a figure that cannot be measured fails the build, naming it
        msg = inliner.reporter.error("ffg-figure %s: %s: %s" % (text, type(err).__name__, err), line=lineno)
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]


def setup(app):
    app.add_role("ffg-figure", figure_role)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}

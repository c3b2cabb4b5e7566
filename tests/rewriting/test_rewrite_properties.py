"""Properties of the whole rewrite pipeline on random graphs.

Random elementwise graphs (with a reduction on top, sometimes) over two or
three inputs, with NaN and infinities among the values, must give the same
results with no rewrites and with FAST_RUN, under the Python and the C
linkers, and all must equal numpy. FAST_RUN applied twice changes nothing
the second time, and every rewrite pass ends.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ffigraph.tensor as T
from ffigraph import function
from ffigraph.compile.mode import Mode
from ffigraph.graph.fg import FunctionGraph
from ffigraph.printing import debugprint

UNARY = {
    "exp": (T.exp, np.exp), "tanh": (T.tanh, np.tanh), "neg": (T.neg, np.negative), "abs": (T.abs, np.abs),
    "sqrt": (T.sqrt, np.sqrt), "log": (T.log, np.log), "sin": (T.sin, np.sin), "sqr": (T.sqr, np.square),
    "expm1": (T.expm1, np.expm1),
}
BINARY = {
    "add": (T.add, np.add), "sub": (T.sub, np.subtract), "mul": (T.mul, np.multiply),
    "div": (T.true_div, np.true_divide), "max": (T.maximum, np.maximum), "min": (T.minimum, np.minimum),
    "switch": (lambda a, b: T.switch(T.gt(a, b), a, b * 0.5), lambda a, b: np.where(a > b, a, b * 0.5)),
}
CONSTANTS = (0.5, 2.0, -1.5)


def _expressions(n_inputs):
    leaves = st.one_of(st.integers(0, n_inputs - 1).map(lambda i: ("in", i)),
                       st.sampled_from(CONSTANTS).map(lambda c: ("const", c)))

    def extend(children):
        return st.one_of(
            st.tuples(st.just("u"), st.sampled_from(sorted(UNARY)), children),
            st.tuples(st.just("b"), st.sampled_from(sorted(BINARY)), children, children),
        )

    return st.recursive(leaves, extend, max_leaves=8)


def _build(expr, syms, dtype):
    """The symbolic graph of the expression tree."""
    kind = expr[0]
    if kind == "in":
        return syms[expr[1]]
    if kind == "const":
        return T.constant(np.asarray(expr[1], dtype))
    if kind == "u":
        return UNARY[expr[1]][0](_build(expr[2], syms, dtype))
    return BINARY[expr[1]][0](_build(expr[2], syms, dtype), _build(expr[3], syms, dtype))


def _evaluate(expr, vals, dtype):
    """numpy's value of the expression tree (every intermediate in ``dtype``)."""
    kind = expr[0]
    if kind == "in":
        return vals[expr[1]]
    if kind == "const":
        return np.asarray(expr[1], dtype)
    if kind == "u":
        return np.asarray(UNARY[expr[1]][1](_evaluate(expr[2], vals, dtype)), dtype)
    a, b = _evaluate(expr[2], vals, dtype), _evaluate(expr[3], vals, dtype)
    return np.asarray(BINARY[expr[1]][1](a, b), dtype)


def _uses_input(expr):
    return expr[0] == "in" or any(isinstance(e, tuple) and _uses_input(e) for e in expr[2:])


def _values(rng, dtype, shape):
    v = rng.uniform(-3, 3, size=shape).astype(dtype)
    flat = v.reshape(-1)
    if flat.size >= 4:
        flat[rng.integers(0, flat.size, 3)] = [np.nan, np.inf, -np.inf]
    return v


def _close(got, want, dtype):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    finite = np.abs(want[np.isfinite(want)])
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    rtol = 2e-4 if dtype == "float32" else 1e-9
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale, equal_nan=True)


_COMPILED = {}
SHAPES = [(5,), (3, 4), (2, 1, 3), (0, 3), ()]
GRAPHS_PER_EXAMPLE = 4


def _functions(graphs):
    """The three functions (no rewrites and FAST_RUN under Python, FAST_RUN under C) of several
    graphs at once: ``graphs`` is a tuple of (expr, reduce, n_inputs, dtype, ndim), each graph
    with inputs of its own, so no rewrite relates two of them."""
    key = tuple((repr(expr), reduce, n_inputs, dtype, ndim) for expr, reduce, n_inputs, dtype, ndim in graphs)
    if key not in _COMPILED:
        syms, outs = [], []
        for g, (expr, reduce, n_inputs, dtype, ndim) in enumerate(graphs):
            gsyms = [T.tensor(dtype, (None,) * ndim, "g%d_x%d" % (g, i)) for i in range(n_inputs)]
            out = _build(expr, gsyms, dtype)
            if reduce is not None:
                kind, axis = reduce
                out = getattr(T, kind)(out, axis=axis)
            syms += gsyms
            outs.append(out)
        modes = {
            "none-py": Mode(linker="py", optimizer=None),
            "fast-py": Mode(linker="py", optimizer="fast_run"),
            "fast-c": Mode(linker="c", optimizer="fast_run"),
        }
        _COMPILED[key] = {name: function(syms, outs, mode=m, on_unused_input="ignore") for name, m in modes.items()}
    return _COMPILED[key]


_GRAPH = st.tuples(
    _expressions(3), st.integers(1, 3), st.sampled_from(["float64", "float32"]), st.sampled_from(SHAPES),
    st.one_of(st.none(), st.tuples(st.sampled_from(["sum", "max"]), st.sampled_from([None, 0, -1]))),
    st.integers(0, 2 ** 16))


# Each example checks GRAPHS_PER_EXAMPLE random graphs compiled together (one C library per
# example): 10 examples check as many graphs as 40 examples of one graph each did.
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs=st.lists(_GRAPH, min_size=GRAPHS_PER_EXAMPLE, max_size=GRAPHS_PER_EXAMPLE))
def test_random_graphs_agree(graphs):
    prepared, values, wants = [], [], []
    for expr, n_inputs, dtype, shape, reduce, seed in graphs:
        expr = _clamp_inputs(expr, n_inputs)
        if not _uses_input(expr):
            expr = ("b", "add", expr, ("in", 0))
        ndim = len(shape)
        if reduce is not None and (ndim == 0 or (reduce[0] == "max" and 0 in shape)):
            reduce = None
        prepared.append((expr, reduce, n_inputs, dtype, ndim))
        rng = np.random.default_rng(seed)
        vals = [_values(rng, dtype, shape) for _ in range(n_inputs)]
        with np.errstate(all="ignore"):
            want = _evaluate(expr, vals, dtype)
            if reduce is not None:
                want = getattr(np, reduce[0])(want, axis=reduce[1])
        values += vals
        wants.append(want)
    fns = _functions(tuple(prepared))
    with np.errstate(all="ignore"):
        results = {name: f(*values) for name, f in fns.items()}
    for k, (want, (_, _, _, dtype, _)) in enumerate(zip(wants, prepared)):
        for name, got in results.items():
            _close(got[k], want, dtype)
        _close(results["fast-c"][k], results["fast-py"][k], dtype)
        _close(results["fast-py"][k], results["none-py"][k], dtype)


def _clamp_inputs(expr, n):
    if expr[0] == "in":
        return ("in", expr[1] % n)
    if expr[0] == "const":
        return expr
    return expr[:2] + tuple(_clamp_inputs(e, n) for e in expr[2:])


def _sample_graphs():
    x, y, z = T.dmatrix("x"), T.dmatrix("y"), T.dvector("z")
    return [
        [T.exp(x) * y + T.tanh(x) - 1.5 * y],
        [x + y, x - y, T.sum(T.exp(x) * y, axis=1)],
        [T.log(T.sigmoid(T.dot(x, z))) * 1 + 0, (x.T).T * -(-y)],
        [T.reshape(T.reshape(x, (-1,)), (3, -1)), (T.exp(x) * y).shape],
        [T.switch(T.gt(x, 0), x, 0.5 * x) + T.sum(y * y) + z],
    ]


@pytest.mark.parametrize("case", range(5))
def test_fast_run_is_idempotent_and_terminates(case):
    outs = _sample_graphs()[case]
    ins = [v for v in (T.dmatrix("x"), T.dmatrix("y"), T.dvector("z"))]
    from ffigraph.graph.basic import graph_inputs

    ins = [v for v in graph_inputs(outs) if v.owner is None and not hasattr(v, "data")]
    fg = FunctionGraph(ins, outs)
    fg.mutable_inputs = set()
    mode = Mode(linker="py", optimizer="fast_run")
    mode.optimize(fg)
    first = debugprint(fg, file="str")
    mode.optimize(fg)
    assert debugprint(fg, file="str") == first
    fg.check_integrity()

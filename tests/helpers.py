"""Test helpers: run a graph on several memory layouts and compare with a numpy oracle."""
import os

import numpy as np

import ffigraph.tensor as T
from ffigraph import function
from ffigraph.graph import Apply
from ffigraph.graph.op import Op

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
C_HOSTS = os.path.join(REPO_ROOT, "tests", "export", "c")   # C programs that use compiled graphs, no Python

LAYOUTS = ("contiguous", "strided", "reversed")
FLOAT_DTYPES = ("float64", "float32")
INT_DTYPES = ("int64", "int32")
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + ("bool",)


def relayout(arr, layout):
    """Same values as ``arr`` in another memory layout: contiguous, strided (every other
    element of a bigger buffer) or reversed (negative strides on every axis)."""
    arr = np.asarray(arr)
    if layout == "contiguous" or arr.ndim == 0:
        return np.array(arr, copy=True)  # (ascontiguousarray would make a 0-d array 1-d)
    if layout == "strided":
        buf = np.zeros(tuple(2 * s + 1 for s in arr.shape), dtype=arr.dtype)
        view = buf[tuple(slice(1, None, 2) for _ in arr.shape)]
        view[...] = arr
        assert arr.size < 2 or not view.flags.c_contiguous
        return view
    if layout == "reversed":
        rev = tuple(slice(None, None, -1) for _ in arr.shape)
        out = np.ascontiguousarray(arr[rev])[rev]
        assert all(s <= 0 for s in out.strides) or arr.size < 2
        return out
    raise ValueError(layout)


def tolerance(dtype):
    return {"float32": (2e-5, 1e-6), "float64": (1e-9, 1e-12)}.get(np.dtype(dtype).name, (0, 0))


# ``dtype=FROM_NUMPY``: the expected dtype is that of numpy's answer (the reference's own result, by
# numpy's promotion rules, which ffigraph follows). Otherwise ``dtype`` names it outright.
FROM_NUMPY = "the dtype of numpy's answer"


def expected_dtype(dtype, expected):
    """The dtype a result must have: ``dtype`` spelled out, or numpy's answer's with FROM_NUMPY."""
    return np.asarray(expected).dtype if dtype is FROM_NUMPY else np.dtype(dtype)


def assert_matches(got, expected, vtype, rtol=None, atol=None, *, dtype):
    """``got`` has the expected ``dtype`` (spelled out by the test, or FROM_NUMPY), which is also
    ``vtype``'s; ``vtype``'s ndim and static shape; ``expected``'s shape; and equal values (NaN == NaN).

    The dtype comes from the test, never from ffigraph's own node: a wrong output type would
    otherwise be taken as the truth and numpy's answer cast to it."""
    assert isinstance(got, np.ndarray), "expected an ndarray, got %r" % (got,)
    want_dtype = expected_dtype(dtype, expected)
    assert got.dtype == want_dtype, "dtype %s, expected %s" % (got.dtype, want_dtype)
    assert got.dtype == np.dtype(vtype.dtype), "dtype %s but the graph declares %s" % (got.dtype, vtype.dtype)
    expected = np.asarray(expected)
    assert got.shape == expected.shape, "shape %s != %s" % (got.shape, expected.shape)
    assert got.ndim == vtype.ndim, "ndim %d but the graph declares %d" % (got.ndim, vtype.ndim)
    for want, size in zip(vtype.shape, got.shape):
        assert want is None or want == size, "static shape %s violated by %s" % (vtype.shape, got.shape)
    r, a = tolerance(got.dtype)
    rtol = r if rtol is None else rtol
    atol = a if atol is None else atol
    if got.dtype.kind in "fc":
        np.testing.assert_allclose(got, expected.astype(got.dtype), rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected.astype(got.dtype))


def symbolic_like(values, prefix="in"):
    return [T.tensor(dtype=np.asarray(v).dtype, shape=(None,) * np.ndim(v), name="%s%d" % (prefix, i))
            for i, v in enumerate(values)]


class Case:
    """One case of a batched check: how to build its output from symbols like ``values``, numpy's
    answer ``ref(*values)``, the output's ``dtype`` (required, spelled out: a dtype name, or
    FROM_NUMPY for the dtype of numpy's answer), and a label that names it when it fails.

    Cases whose graphs are the same (the same ``build`` on inputs of the same dtypes and ndims, or
    the same ``key`` when one is given) share one node of the batched function, called once per case.
    """

    def __init__(self, label, build, ref, values, rtol=None, atol=None, key=None, *, dtype):
        self.label, self.build, self.ref, self.dtype = label, build, ref, dtype
        self.values = [np.asarray(v) for v in values]
        self.rtol, self.atol = rtol, atol
        self.key = (key if key is not None else build, tuple((v.dtype.str, v.ndim) for v in self.values))

    def __repr__(self):
        return "Case(%s)" % self.label


def check_cases(cases, mode, layouts=LAYOUTS, check_shape=True, _one_output=False):
    """Compile every distinct graph of ``cases`` into ONE function (each its own inputs and output), call
    it on every layout of every case's values and compare each output with its case's reference; check
    ``infer_shape`` of every output against the result's shape.

    One compile for many cases: each graph is its own node, whose C code is what it would be alone,
    so batching changes the cost, not what is checked. Returns the function."""
    groups = {}
    for case in cases:
        groups.setdefault(case.key, []).append(case)
    groups = list(groups.values())
    syms, outs = [], []
    for g, members in enumerate(groups):
        group_syms = symbolic_like(members[0].values, prefix="g%d_" % g)
        syms += group_syms
        outs.append(members[0].build(*group_syms))
    if _one_output:   # check's function returns its one output, not a list
        one = function(syms, outs[0], mode=mode, on_unused_input="ignore")

        def f(*args):
            return [one(*args)]
    else:
        one = f = function(syms, outs, mode=mode, on_unused_input="ignore")
    shapes = [list(T.inferred_shape(out)) for out in outs]
    flat = [s for shape in shapes for s in shape]
    # infer_shape is graph logic, the same whatever the linker: it is checked in Python
    shape_f = function(syms, flat, mode="FAST_COMPILE", on_unused_input="ignore") if check_shape and flat else None
    for r in range(max(len(members) for members in groups)):
        # round r: each graph takes its r-th case (or repeats its last, which is not checked again)
        chosen = [members[min(r, len(members) - 1)] for members in groups]
        fresh = [r < len(members) for members in groups]
        values = [v for case in chosen for v in case.values]
        with np.errstate(all="ignore"):
            expected = [case.ref(*case.values) if new else None for case, new in zip(chosen, fresh)]
        for layout in layouts:
            got = f(*[relayout(v, layout) for v in values])
            for case, new, g, e, out in zip(chosen, fresh, got, expected, outs):
                if not new:
                    continue
                try:
                    assert_matches(g, e, out.type, case.rtol, case.atol, dtype=case.dtype)
                except AssertionError as err:
                    raise AssertionError("case %s, layout %s: %s" % (case.label, layout, err)) from None
        if shape_f is not None:
            inferred = iter(shape_f(*values))
            for case, new, shape, e in zip(chosen, fresh, shapes, expected):
                got = tuple(int(next(inferred)) for _ in shape)
                if new and shape:
                    assert got == np.shape(e), "case %s: infer_shape says %s, result has %s" % (
                        case.label, got, np.shape(e))
    return one


def caller(f, cases):
    """Calls of ``f``, the function ``check_cases(cases, ...)`` compiled (each distinct graph its own
    inputs and output, in the order of their first case), with values of your choosing for some
    graphs and their first case's values for the others. So one compiled function also checks
    what ``check_cases`` cannot give it: bad values (errors), chosen layouts, empty inputs.

    ``call(case, *values)`` runs ``case``'s graph on ``values`` and returns its output;
    ``call.many({label: values})`` runs the graphs of those cases at once and returns
    {label: output} for every graph (a graph not named under the label of its first case);
    ``call.type(case)`` is the type of ``case``'s output."""
    firsts = {}
    for case in cases:
        firsts.setdefault(case.key, case)
    keys = list(firsts)
    by_label = {case.label: case for case in cases}
    assert len(by_label) == len(cases), "case labels must be unique"
    outputs = f.maker.fgraph.outputs
    assert len(keys) == len(outputs), "f is not check_cases(cases)'s function"

    def run(chosen):   # {graph index: (label, values)}
        args = [v for g, key in enumerate(keys) for v in (chosen[g][1] if g in chosen else firsts[key].values)]
        return f(*args)

    def call(case, *values):
        g = keys.index(case.key)
        return run({g: (case.label, values)})[g]

    def many(values_by_label=None):
        chosen = {}
        for label, values in (values_by_label or {}).items():
            g = keys.index(by_label[label].key)
            assert g not in chosen, "two cases of one graph: %s and %s" % (chosen[g][0], label)
            chosen[g] = (label, list(values))
        outs = run(chosen)
        return {chosen[g][0] if g in chosen else firsts[key].label: out for g, (key, out) in enumerate(zip(keys, outs))}

    call.type = lambda case: outputs[keys.index(case.key)].type
    call.many = many
    return call


def check(build, ref, values, mode, rtol=None, atol=None, layouts=LAYOUTS, check_shape=True, *, dtype):
    """Compile ``build(*symbols)`` for inputs like ``values`` and compare with ``ref(*values)``
    on every layout, the result's dtype with ``dtype`` (see Case); also check that the op's
    ``infer_shape`` agrees with the result."""
    return check_cases([Case("", build, ref, values, rtol, atol, dtype=dtype)], mode, layouts, check_shape,
                       _one_output=True)


def sample(dtype, shape, rng=None, low=-3, high=3, special=False):
    """Random values of ``dtype``; with ``special``, float arrays get NaN, +inf and -inf too."""
    rng = np.random.default_rng(0) if rng is None else rng
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) > 0.5
    if dtype.kind in "iu":
        return rng.integers(low, high + 1, size=shape).astype(dtype)
    arr = rng.uniform(low, high, size=shape).astype(dtype)
    if special and arr.size >= 3:
        flat = arr.reshape(-1)
        flat[:3] = [np.nan, np.inf, -np.inf]
    return arr


def assert_raises(exc, f, args, *fragments):
    """``f(*args)`` raises ``exc`` whose message holds every one of ``fragments``."""
    import pytest

    with pytest.raises(exc) as info:
        f(*args)
    for frag in fragments:
        assert frag in str(info.value), str(info.value)


def skip_without_c_code(mode, *dtypes):
    """Complex values have no C code yet (they run in Python under 'c|py' and 'cvm'); the
    whole-graph C linker, which needs C for every node, cannot run them."""
    import pytest

    if getattr(mode.linker, "name", "") == "c" and any(np.dtype(d).kind == "c" for d in dtypes):
        pytest.skip("no C code for complex dtypes yet: the strict whole-graph C linker cannot run this graph")


def _asan_in_process():
    from ffigraph.linkers.c.sanitize import asan_runtime_loaded

    return asan_runtime_loaded()


def rss_check_skip():
    """A skipif marker for tests that measure the resident size: under AddressSanitizer that says
    nothing, as its quarantine keeps freed blocks (the sanitizer phase leaves leaks to valgrind)."""
    import pytest

    return pytest.mark.skipif(_asan_in_process(), reason="resident size says nothing under AddressSanitizer "
                                                          "(its quarantine keeps freed blocks)")


class PythonOnly(Op):
    """An op with a ``perform`` and no C code: C linkers run it in Python."""
    __props__ = ()

    def make_node(self, x):
        x = T.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, out):
        out[0][0] = inputs[0] * 10


class TwoOut(Op):
    """Perform only (no C code), two outputs of the input's type: the input plus and minus one."""

    def make_node(self, a):
        a = T.as_tensor_variable(a)
        return Apply(self, [a], [a.type(), a.type()])

    def perform(self, node, inputs, out):
        out[0][0] = inputs[0] + 1
        out[1][0] = inputs[0] - 1


def rss_bytes():
    """This process's resident size in bytes (from /proc/self/statm)."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


# PyTensor's accumulation rule for sum, prod and mean, spelled out for the oracles below (not read
# from ffigraph): the default accumulator widens bools and ints to 64 bits and each float to the next
# width; the default result dtype widens bools and ints narrower than 64 bits only.
ACC_DTYPE = {"bool": "int64", "int8": "int64", "int16": "int64", "int32": "int64", "uint8": "uint64",
             "uint16": "uint64", "uint32": "uint64", "float16": "float32", "float32": "float64",
             "complex64": "complex128"}
SUM_DTYPE = {"bool": "int64", "int8": "int64", "int16": "int64", "int32": "int64", "uint8": "uint64",
             "uint16": "uint64", "uint32": "uint64"}


def np_accumulate(kind, a, axis=None, keepdims=False, dtype=None, acc_dtype=None):
    """numpy's ``kind`` (sum, prod or mean) of ``a`` under PyTensor's rule: ``a`` converted to the
    accumulator dtype (``acc_dtype``, by default ACC_DTYPE's: float32 sums in float64), reduced there,
    converted to ``dtype`` (by default SUM_DTYPE's); a mean then divides by the count in float32 (for a
    float32 or complex64 sum) or float64 (any other). So a float32 sum is
    ``np.sum(a.astype('float64')).astype('float32')``."""
    a = np.asarray(a)
    acc = np.dtype(acc_dtype or ACC_DTYPE.get(a.dtype.name, a.dtype.name))
    out = np.dtype(dtype or SUM_DTYPE.get(a.dtype.name, a.dtype.name))
    with np.errstate(all="ignore"):
        total = (np.prod if kind == "prod" else np.sum)(a.astype(acc), axis=axis, keepdims=keepdims)
        total = np.asarray(total).astype(out)
        if kind == "mean":
            axes = range(a.ndim) if axis is None else [axis] if np.ndim(axis) == 0 else axis
            count = int(np.prod([a.shape[d] for d in axes], dtype=np.int64))
            count_dtype = np.dtype("float32" if out.name in ("float32", "complex64") else "float64")
            quotient = np.result_type(out, count_dtype)
            total = np.asarray(total.astype(quotient) / count_dtype.type(count), dtype=quotient)
    return total


def op_names(nodes):
    """Elemwise nodes by scalar op name ('cast' for casts), other nodes by class name; DeepCopyOp
    (the copy an output may need) left out."""
    from ffigraph.compile.ops import DeepCopyOp
    from ffigraph.scalar.basic import Cast
    from ffigraph.tensor.elemwise import Elemwise

    out = []
    for op in (n.op for n in nodes):
        if isinstance(op, DeepCopyOp):
            continue
        if isinstance(op, Elemwise):
            out.append("cast" if isinstance(op.scalar_op, Cast) else op.scalar_op.name)
        else:
            out.append(type(op).__name__)
    return out

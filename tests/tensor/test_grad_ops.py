"""verify_grad for every differentiable op, on float64, under each linker (py, c, c|py).

Each case is (build, points): ``build`` takes symbolic tensors like the
points and returns one tensor. Points avoid the kinks of non-smooth ops
(|x| at 0, clip bounds, ties of max) so finite differences are meaningful;
the behaviour at those points is checked against numpy in test_grad.py.

The cases are checked a group at a time (parametrised by ``kind``) by ``verify_grads``:
verify_grad's check, with ONE function for a whole group (every case's cost, output and
gradients) instead of two functions per case.
"""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import function, grad, verify_grad
from ffigraph.compile.mode import Mode
from ffigraph.gradient import _DEFAULT_EPS, _DEFAULT_TOL, GradientError, _compare



@pytest.fixture(params=["py", "c"])
def mode(request):
    """PerformLinker and the C linker, with no rewrites (the conftest's c|py adds nothing here:
    every gradient op has C code, and test_verify_grad_after_rewrites covers the default cvm)."""
    return Mode(linker=request.param, optimizer=None)


RNG = np.random.default_rng(1)
A = RNG.uniform(0.5, 2.0, (3, 4))
B = RNG.uniform(0.5, 2.0, (3, 4))
V = RNG.uniform(0.5, 2.0, (4,))
C3 = RNG.uniform(0.5, 2.0, (3,))
SIGNED = RNG.uniform(-2.0, 2.0, (3, 4))
SIGNED[np.abs(SIGNED) < 0.1] = 0.5  # keep away from the kink of abs/sign at 0
WITH_ZEROS = np.array([[1.5, 0.0, 2.0], [0.0, 0.0, 3.0], [1.0, 2.0, 3.0], [0.0, 0.7, 1.3]])
CUBE = RNG.uniform(0.5, 2.0, (2, 3, 4))

UNARY = {
    "neg": (T.neg, A), "abs": (T.abs_, SIGNED), "exp": (T.exp, SIGNED), "expm1": (T.expm1, SIGNED),
    "log": (T.log, A), "log1p": (T.log1p, A), "log2": (T.log2, A), "log10": (T.log10, A),
    "sqrt": (T.sqrt, A), "sqr": (T.sqr, SIGNED), "sin": (T.sin, SIGNED), "cos": (T.cos, SIGNED),
    "tan": (T.tan, SIGNED * 0.6), "tanh": (T.tanh, SIGNED), "sigmoid": (T.sigmoid, SIGNED),
    "softplus": (T.softplus, SIGNED), "erf": (T.erf, SIGNED),
}

CASES = {
    # binary elementwise, with broadcasting (static and at run time)
    "add": (lambda a, b: a + b, [A, B]),
    "add_broadcast_vector": (lambda a, b: a + b, [A, V]),
    "add_broadcast_runtime_row": (lambda a, b: a + b, [A, V[None, :]]),
    "add_broadcast_runtime_col": (lambda a, b: a * 2.0 + b, [C3[:, None], B]),
    "sub": (lambda a, b: a - b, [A, B]),
    "mul": (lambda a, b: a * b, [A, B]),
    "mul_scalar": (lambda a, s: a * s, [A, np.array(1.7)]),
    "true_div": (lambda a, b: a / b, [A, B]),
    "pow": (lambda a, b: a ** b, [A, B]),
    "pow_const": (lambda a: a ** 3, [SIGNED]),
    "mod": (lambda a, b: a % b, [A * 3.1, B]),
    "maximum": (T.maximum, [A, B]),
    "minimum": (T.minimum, [A, B]),
    "switch": (lambda a, b: T.switch(T.gt(a, 1.2), a * 3.0, b), [A, B]),
    "clip_const": (lambda a: T.clip(a, 0.8, 1.5), [A]),
    "clip_tensors": (lambda a, lo, hi: T.clip(a, lo, hi), [A, B * 0.5, B * 1.5]),
    "cast_up": (lambda a: T.cast(a, "float64") * 1.0, [A.astype(np.float32).astype(np.float64)]),
    "floor_times": (lambda a: T.floor(a) * a, [A * 3.3]),
    # reductions
    "sum_axis0": (lambda a: a.sum(axis=0), [A]),
    "sum_all": (lambda a: a.sum(), [A]),
    "sum_axes_02": (lambda a: a.sum(axis=(0, 2)), [CUBE]),
    "sum_keepdims": (lambda a: a.sum(axis=1, keepdims=True) * a, [A]),
    "mean_axis1": (lambda a: a.mean(axis=1), [A]),
    "mean_all": (lambda a: a.mean(), [CUBE]),
    "prod_axis1": (lambda a: a.prod(axis=1), [A]),
    "prod_with_zeros": (lambda a: a.prod(axis=1), [WITH_ZEROS]),
    "prod_with_zeros_axis0": (lambda a: a.prod(axis=0), [WITH_ZEROS]),
    "max_axis1": (lambda a: a.max(axis=1), [A]),
    "min_axis0": (lambda a: a.min(axis=0), [A]),
    "max_all": (lambda a: a.max(), [A]),
    "max_axes_12": (lambda a: a.max(axis=(1, 2)), [CUBE]),
    # dot
    "dot_matrix_matrix": (T.dot, [A, B.T]),
    "dot_matrix_vector": (T.dot, [A, V]),
    "dot_vector_matrix": (T.dot, [C3, A]),
    "dot_vector_vector": (T.dot, [V, V * 2]),
    "dot_transposed": (lambda a, b: T.dot(a.T, b), [A, B]),
    # shapes and views
    "transpose": (lambda a: a.T * 1.0, [A]),
    "dimshuffle": (lambda a: a.dimshuffle("x", 1, 0) * 1.0, [A]),
    "dimshuffle_drop": (lambda a: a.dimshuffle(1) * 1.0, [A[:1]]),
    "reshape": (lambda a: a.reshape((4, 3)), [A]),
    "reshape_minus_one": (lambda a: a.reshape((2, -1)), [A]),
    "flatten": (lambda a: T.flatten(a), [CUBE]),
    "flatten_2": (lambda a: T.flatten(a, 2), [CUBE]),
    # indexing
    "subtensor_slices": (lambda a: a[1:, ::-2], [A]),
    "subtensor_int": (lambda a: a[1], [A]),
    "subtensor_negative": (lambda a: a[-1, -3:], [A]),
    "subtensor_newaxis": (lambda a: a[None, 1:] * 1.0, [A]),
    "inc_subtensor": (lambda a, b: T.inc_subtensor(a[1:, :2], b), [A, B[:2, :2]]),
    "set_subtensor": (lambda a, b: T.set_subtensor(a[1:, :2], b), [A, B[:2, :2]]),
    "inc_subtensor_broadcast": (lambda a, b: T.inc_subtensor(a[:, 1], b), [A, np.array(2.0)]),
    "set_subtensor_row": (lambda a, b: T.set_subtensor(a[0], b), [A, V]),
    # joining and building
    "concatenate_axis1": (lambda a, b: T.concatenate([a, b], axis=1), [A, B]),
    "concatenate_axis0": (lambda a, b: T.concatenate([a, b, a], axis=0), [A, B[:2]]),
    "stack": (lambda a, b: T.stack([a, b], axis=1), [A, B]),
    "stack_scalars": (lambda a, b: T.stack([a, b * 2.0]), [np.array(1.5), np.array(0.5)]),
    "alloc": (lambda a: T.alloc(a, 3, 4), [V]),
    "alloc_scalar": (lambda a: T.alloc(a, 2, 3), [np.array(1.5)]),
    "sum_to_shape": (lambda a: T.sum_to_shape(a, (1, 4)), [A]),
    "arange": (lambda start, step: T.arange(start, 5.0, step) ** 2, [np.array(0.3), np.array(0.9)]),
    # 0-d and compositions
    "scalar_chain": (lambda s: T.exp(s) * T.sin(s) + s ** 2, [np.array(0.7)]),
    "softmax_like": (lambda a: T.exp(a) / T.exp(a).sum(axis=1, keepdims=True), [SIGNED]),
    "logsumexp": (lambda a: T.log(T.exp(a - a.max(axis=1, keepdims=True)).sum(axis=1)), [SIGNED]),
}


def _as_list(points):
    return points if isinstance(points, list) else [points]


def verify_grads(cases, mode, n_tests=2):
    """``verify_grad(fun, points, mode=mode)`` for each ``(label, fun, points)`` of ``cases``, with
    ONE function for them all (each case's cost, output and gradients: the gradients share the
    forward nodes) instead of verify_grad's two functions per case. A mode with rewrites gets
    verify_grad's two functions (costs and outputs; gradients), for all cases at once: there the
    gradient graph is rewritten on its own, as verify_grad does (with the outputs beside it, shapes
    would be read from them rather than inferred).

    Each case has symbols of its own, its own cost ``sum(fun(*symbols) * projection)`` and its own
    ``grad``; verify_grad's steps, step sizes, tolerances, projections (each case draws from its
    own ``default_rng(0)``, as verify_grad does) and comparison (``ffigraph.gradient._compare``)
    are kept. As case k's cost depends on case k's inputs only, the central differences of all
    cases are taken together: each call of the cost function moves one element of every case.
    """
    from ffigraph.tensor.basic import tensor
    from ffigraph.tensor.math import sum as tsum

    syms, projections, costs_and_outs, grads, info = [], [], [], [], []
    for c, (label, fun, pt) in enumerate(cases):
        pt = [np.array(p, copy=True) for p in pt]
        for p in pt:
            assert p.dtype.kind == "f", (label, p.dtype)
        case_syms = [tensor(p.dtype, (None,) * p.ndim, name="c%d_input%d" % (c, i)) for i, p in enumerate(pt)]
        out = fun(*case_syms)
        projection = tensor(out.type.dtype, (None,) * out.type.ndim, name="c%d_projection" % c)
        cost = tsum(out * projection)
        syms += case_syms
        projections.append(projection)
        costs_and_outs += [cost, out]
        grads += grad(cost, case_syms, disconnected_inputs="ignore")
        dtype = str(out.type.dtype)
        info.append((label, pt, out.type, _DEFAULT_EPS.get(dtype, 1e-6), _DEFAULT_TOL.get(dtype, 1e-6)))
    if mode.optimizer in (None, "None") and not mode.include:
        # one function for the costs, the outputs and the gradients: its forward nodes serve both
        fn = function(syms + projections, costs_and_outs + grads, mode=mode, on_unused_input="ignore")
        cost_fn, n_costs = fn, len(costs_and_outs)

        def grad_fn(*a):
            return fn(*a)[n_costs:]
    else:
        cost_fn = function(syms + projections, costs_and_outs, mode=mode, on_unused_input="ignore")
        grad_fn = function(syms + projections, grads, mode=mode, on_unused_input="ignore")

    def args(points, projs):
        return [p for pt in points for p in pt] + list(projs)

    base = [pt for _, pt, _, _, _ in info]
    ones = [np.ones((1,) * t.ndim, dtype=t.dtype) for _, _, t, _, _ in info]
    first = cost_fn(*args(base, ones))
    out_shapes = [np.shape(first[2 * c + 1]) for c in range(len(cases))]
    rngs = [np.random.default_rng(0) for _ in cases]
    # the central differences of every case: (input, element, sign) in verify_grad's order
    moves = [[(k, j, sign) for k, p in enumerate(pt) for j in range(p.size) for sign in (1, -1)] for pt in base]
    for _ in range(n_tests):
        projs = [np.asarray(rng.uniform(0.5, 1.5, size=shape), dtype=t.dtype)
                 for rng, shape, (_, _, t, _, _) in zip(rngs, out_shapes, info)]
        analytic = grad_fn(*args(base, projs))
        values = [[] for _ in cases]
        for r in range(max([len(m) for m in moves] + [0])):
            points = []
            for c, pt in enumerate(base):
                if r < len(moves[c]):
                    k, j, sign = moves[c][r]
                    flat = pt[k].reshape(-1)
                    moved = flat.copy()
                    moved[j] = flat[j] + sign * info[c][3]
                    pt = list(pt)
                    pt[k] = moved.reshape(pt[k].shape)
                points.append(pt)
            costs = cost_fn(*args(points, projs))
            for c in range(len(cases)):
                if r < len(moves[c]):
                    values[c].append(float(costs[2 * c]))
        g = 0
        for c, (label, pt, _, eps, tol) in enumerate(info):
            it = iter(values[c])
            for k, p in enumerate(pt):
                flat = p.reshape(-1)
                numeric = np.empty(flat.size, dtype=np.float64)
                for j in range(flat.size):
                    plus, minus = next(it), next(it)
                    # the step actually taken, after rounding to the input's dtype
                    step = float(flat.dtype.type(flat[j] + eps)) - float(flat.dtype.type(flat[j] - eps))
                    numeric[j] = (plus - minus) / step
                try:
                    _compare(k, np.asarray(analytic[g], dtype=np.float64), numeric.reshape(p.shape), p.shape,
                             tol, tol)
                except GradientError as err:
                    raise AssertionError("case %s: %s" % (label, err)) from err
                g += 1


UNARY_GROUPS = {
    "exp_log": ["neg", "abs", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt"],
    "trig_sigmoid": ["sqr", "sin", "cos", "tan", "tanh", "sigmoid", "softplus", "erf"],
}
assert sorted(n for names in UNARY_GROUPS.values() for n in names) == sorted(UNARY)

GROUPS = {
    "add_sub": ["add", "add_broadcast_vector", "add_broadcast_runtime_row", "add_broadcast_runtime_col", "sub"],
    "mul_div_pow": ["mul", "mul_scalar", "true_div", "pow", "pow_const", "mod"],
    "piecewise": ["maximum", "minimum", "switch", "clip_const", "clip_tensors", "cast_up", "floor_times"],
    "sum_mean": ["sum_axis0", "sum_all", "sum_axes_02", "sum_keepdims", "mean_axis1", "mean_all"],
    "prod_max_min": ["prod_axis1", "prod_with_zeros", "prod_with_zeros_axis0", "max_axis1", "min_axis0", "max_all",
                     "max_axes_12"],
    "dot": ["dot_matrix_matrix", "dot_matrix_vector", "dot_vector_matrix", "dot_vector_vector", "dot_transposed"],
    "views": ["transpose", "dimshuffle", "dimshuffle_drop", "reshape", "reshape_minus_one", "flatten", "flatten_2"],
    "indexing": ["subtensor_slices", "subtensor_int", "subtensor_negative", "subtensor_newaxis", "inc_subtensor",
                 "set_subtensor", "inc_subtensor_broadcast", "set_subtensor_row"],
    "building": ["concatenate_axis1", "concatenate_axis0", "stack", "stack_scalars", "alloc", "alloc_scalar",
                 "sum_to_shape", "arange"],
    "compositions": ["scalar_chain", "softmax_like", "logsumexp"],
}
assert sorted(n for names in GROUPS.values() for n in names) == sorted(CASES)


@pytest.mark.parametrize("kind", sorted(UNARY_GROUPS))
def test_verify_grad_unary(kind, mode):
    verify_grads([(name, UNARY[name][0], [UNARY[name][1]]) for name in UNARY_GROUPS[kind]], mode)


@pytest.mark.parametrize("kind", sorted(GROUPS))
def test_verify_grad(kind, mode):
    verify_grads([(name, CASES[name][0], _as_list(CASES[name][1])) for name in GROUPS[kind]], mode)


def test_verify_grad_float32(mode):
    verify_grads([(name, UNARY[name][0], [UNARY[name][1].astype(np.float32)])
                  for name in ["exp", "tanh", "sigmoid", "log"]], mode)


def test_verify_grad_after_rewrites():
    """The default mode (FAST_RUN rewrites: fusion, inplace...) gives the same gradients."""
    names = ["add_broadcast_runtime_col", "softmax_like", "dot_matrix_vector", "prod_with_zeros", "max_axes_12",
             "concatenate_axis1", "inc_subtensor"]
    verify_grads([(name, CASES[name][0], _as_list(CASES[name][1])) for name in names], Mode(linker="cvm"))


@pytest.mark.parametrize("linker", ["py", "c"])
def test_verify_grad_catches_a_wrong_gradient(linker):
    """verify_grad itself can fail: an op whose gradient is off by a factor is caught (and so
    can verify_grads)."""
    from ffigraph.tensor.elemwise_grad import RULES

    saved = RULES["sin"]
    RULES["sin"] = lambda ins, z, gz: [gz * T.cos(ins[0]) * 1.01]
    try:
        with pytest.raises(GradientError, match="disagrees with finite differences"):
            verify_grad(T.sin, [A], mode=Mode(linker=linker, optimizer=None))
        with pytest.raises(AssertionError, match="case sin: .*disagrees with finite differences"):
            verify_grads([("exp", T.exp, [A]), ("sin", T.sin, [A])], Mode(linker=linker, optimizer=None))
    finally:
        RULES["sin"] = saved


def test_verify_grad_rejects_integer_points():
    with pytest.raises(TypeError, match="only float inputs"):
        verify_grad(T.exp, [np.arange(3)])

"""verify_grad for every differentiable op, on float64, under each linker (py, c, c|py).

Each case is (build, points): ``build`` takes symbolic tensors like the
points and returns one tensor. Points avoid the kinks of non-smooth ops
(|x| at 0, clip bounds, ties of max) so finite differences are meaningful;
the behaviour at those points is checked against numpy in test_grad.py.
"""
import numpy as np
import pytest

import ffigraph.tensor as T
from ffigraph import verify_grad
from ffigraph.compile.mode import Mode
from ffigraph.gradient import GradientError



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


@pytest.mark.parametrize("name", sorted(UNARY))
def test_verify_grad_unary(name, mode):
    fn, point = UNARY[name]
    verify_grad(fn, [point], mode=mode)


@pytest.mark.parametrize("name", sorted(CASES))
def test_verify_grad(name, mode):
    fn, points = CASES[name]
    verify_grad(fn, _as_list(points), mode=mode)


@pytest.mark.parametrize("name", ["exp", "tanh", "sigmoid", "log"])
def test_verify_grad_float32(name, mode):
    fn, point = UNARY[name]
    verify_grad(fn, [point.astype(np.float32)], mode=mode)


@pytest.mark.parametrize("name", ["add_broadcast_runtime_col", "softmax_like", "dot_matrix_vector",
                                  "prod_with_zeros", "max_axes_12", "concatenate_axis1", "inc_subtensor"])
def test_verify_grad_after_rewrites(name):
    """The default mode (FAST_RUN rewrites: fusion, inplace...) gives the same gradients."""
    fn, points = CASES[name]
    verify_grad(fn, _as_list(points), mode=Mode(linker="cvm"))


@pytest.mark.parametrize("linker", ["py", "c"])
def test_verify_grad_catches_a_wrong_gradient(linker):
    """verify_grad itself can fail: an op whose gradient is off by a factor is caught."""
    from ffigraph.tensor.elemwise_grad import RULES

    saved = RULES["sin"]
    RULES["sin"] = lambda ins, z, gz: [gz * T.cos(ins[0]) * 1.01]
    try:
        with pytest.raises(GradientError, match="disagrees with finite differences"):
            verify_grad(T.sin, [A], mode=Mode(linker=linker, optimizer=None))
    finally:
        RULES["sin"] = saved


def test_verify_grad_rejects_integer_points():
    with pytest.raises(TypeError, match="only float inputs"):
        verify_grad(T.exp, [np.arange(3)])
